// Node and Bun: the core, each encoding's ranks and each prebuilt tokenizer's data are .wasm
// files next to this package. (The lite entry loads a core built for size, without the ranks.)
import { readFile } from 'node:fs/promises';
import { setLoader, setRankLoader } from '../init.js';

setLoader(() => readFile(new URL('../wasm/context_compactor_bg.wasm', import.meta.url)));
setRankLoader((name) => readFile(new URL(`../ranks/${name}.wasm`, import.meta.url)));
export const runtimeEntry = 'node';
export * from '../index.js';
