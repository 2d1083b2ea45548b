// Browsers and bundlers: fetch and compile the core .wasm.
// The lite core: the same code as the full entries' core, built for size (scripts/build.sh).
import { setLoader } from '../init.js';
import { compileUrl } from './fetch-wasm.js';

setLoader(() => compileUrl(new URL('../wasm/context_compactor_lite_bg.wasm', import.meta.url)));
export const runtimeEntry = 'browser';
export * from '../index.js';
