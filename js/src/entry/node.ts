// Node and Bun: the core, each encoding's ranks and each prebuilt tokenizer's data are .wasm
// files next to this package.
import { readFile } from 'node:fs/promises';
import { setRankLoader } from '../init.js';

setRankLoader((name) => readFile(new URL(`../ranks/${name}.wasm`, import.meta.url)));
export * from './node-lite.js';
