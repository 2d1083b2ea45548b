// Browsers and bundlers: fetch and compile the core .wasm (and the tokenizer compiler's on first
// use). No rank URLs here: a bundler emits no rank files for the lite entry.
import { setCompilerLoader, setLoader } from '../core.js';
import { compileUrl } from './fetch-wasm.js';

setLoader(() => compileUrl(new URL('../wasm/context_compactor_bg.wasm', import.meta.url)));
setCompilerLoader(() => compileUrl(new URL('../compiler/compiler_bg.wasm', import.meta.url)));
export const runtimeEntry = 'browser';
export * from '../index.js';
