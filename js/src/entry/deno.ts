// Deno: read the rank .wasm files next to this file (needs --allow-read for them).
import { setRankLoader } from '../init.js';

declare const Deno: { readFile(path: URL): Promise<Uint8Array> };
setRankLoader((name) =>
  Deno.readFile(name === 'cl100k_base' ? new URL('../ranks/cl100k_base.wasm', import.meta.url) : new URL('../ranks/o200k_base.wasm', import.meta.url)),
);
export * from './deno-lite.js';
