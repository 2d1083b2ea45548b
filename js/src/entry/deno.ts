// Deno: read the core, rank and tokenizer .wasm files next to this file (needs --allow-read for
// them). (The lite entry loads a core built for size, without the ranks.)
import { setLoader, setRankLoader } from '../init.js';

declare const Deno: { readFile(path: URL): Promise<Uint8Array> };
setLoader(() => Deno.readFile(new URL('../wasm/context_compactor_bg.wasm', import.meta.url)));
setRankLoader((name) => Deno.readFile(new URL(`../ranks/${name}.wasm`, import.meta.url)));
export const runtimeEntry = 'deno';
export * from '../index.js';
