// Node and Bun: read the .wasm next to this file.
import { setCompilerLoader, setLoader } from '../core.js';
import { compiler } from './node-data.js';
import { readWasm } from './node-file.js';

setLoader(() => readWasm(new URL('../wasm/context_compactor_bg.wasm', import.meta.url), '../wasm/context_compactor_bg.wasm'));
setCompilerLoader(compiler);
export const runtimeEntry = 'node';
export * from '../index.js';
