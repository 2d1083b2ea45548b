// Node and Bun: read the .wasm next to this file.
// The lite core: the same code as the full entries' core, built for size (scripts/build.sh).
import { readFile } from 'node:fs/promises';
import { setLoader } from '../init.js';

setLoader(() => readFile(new URL('../wasm/context_compactor_lite_bg.wasm', import.meta.url)));
export const runtimeEntry = 'node';
export * from '../index.js';
