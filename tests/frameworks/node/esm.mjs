// Plain ESM: `node esm.mjs` (also `deno run -A esm.mjs`, `bun esm.mjs`).
import { quickstart } from './quickstart.js';

console.log(JSON.stringify(await quickstart()));
