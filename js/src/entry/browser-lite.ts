// Browsers and bundlers: fetch and compile the core .wasm.
import { setCompilerLoader, setLoader } from '../init.js';
import { compileUrl } from './fetch-wasm.js';

setLoader(() => compileUrl(new URL('../wasm/context_compactor_bg.wasm', import.meta.url)));
setCompilerLoader(() => compileUrl(new URL('../compiler/compiler_bg.wasm', import.meta.url)));
export const runtimeEntry = 'browser';
export * from '../index.js';
