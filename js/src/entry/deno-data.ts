// Deno: the data files and the tokenizer compiler, read next to this package (--allow-read).
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';

declare const Deno: { readFile(path: URL): Promise<Uint8Array> };
export const read = (path: string) => Deno.readFile(new URL(path, import.meta.url));
export const ranks = (name: EncodingName | PrebuiltTokenizerName) => read(`../ranks/${name}.wasm`);
export const compiler = () => read('../compiler/compiler_bg.wasm');
