// Node and Bun: read the .wasm next to this file.
import { readFile } from 'node:fs/promises';
import { setCompilerLoader, setLoader } from '../init.js';

setLoader(() => readFile(new URL('../wasm/context_compactor_bg.wasm', import.meta.url)));
setCompilerLoader(() => readFile(new URL('../compiler/compiler_bg.wasm', import.meta.url)));
export const runtimeEntry = 'node';
export * from '../index.js';
