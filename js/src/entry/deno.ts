// Deno: read the rank and tokenizer .wasm files next to this file (needs --allow-read for them).
import { setRankLoader } from '../init.js';

declare const Deno: { readFile(path: URL): Promise<Uint8Array> };
setRankLoader((name) => Deno.readFile(new URL(`../ranks/${name}.wasm`, import.meta.url)));
export * from './deno-lite.js';
