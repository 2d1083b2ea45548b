// Deno: read the rank and tokenizer .wasm files next to this file (needs --allow-read for them).
import { setRankLoader } from '../core.js';
import { ranks } from './deno-data.js';

setRankLoader(ranks);
export * from './deno-lite.js';
