// Node and Bun: read the .wasm next to this file.
import { readFile } from 'node:fs/promises';
import { setCompilerLoader, setLoader } from '../core.js';
import { compiler } from './node-data.js';

setLoader(() => readFile(new URL('../wasm/context_compactor_bg.wasm', import.meta.url)));
setCompilerLoader(compiler);
export const runtimeEntry = 'node';
export * from '../index.js';
