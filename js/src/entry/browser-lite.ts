// Browsers and bundlers: fetch and compile the core .wasm.
import { setLoader } from '../core.js';
import { setCompilerLoader } from '../init.js';
import { compiler } from './browser-data.js';
import { compileUrl } from './fetch-wasm.js';

setLoader(() => compileUrl(new URL('../wasm/context_compactor_bg.wasm', import.meta.url)));
setCompilerLoader(compiler);
export const runtimeEntry = 'browser';
export * from '../index.js';
