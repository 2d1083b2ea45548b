// Deno: read the .wasm next to this file (needs --allow-read for it).
import { setCompilerLoader, setLoader } from '../core.js';
import { compiler, read } from './deno-data.js';

setLoader(() => read('../wasm/context_compactor_bg.wasm'));
setCompilerLoader(compiler);
export const runtimeEntry = 'deno';
export * from '../index.js';
