// Node and Bun: the data files and the tokenizer compiler, .wasm files next to this package.
import { readFile } from 'node:fs/promises';
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';

export const ranks = (name: EncodingName | PrebuiltTokenizerName) => readFile(new URL(`../ranks/${name}.wasm`, import.meta.url));
export const compiler = () => readFile(new URL('../compiler/compiler_bg.wasm', import.meta.url));
