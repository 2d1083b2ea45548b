// Deno: read the .wasm next to this file (needs --allow-read for it).
import { setCompilerLoader, setLoader } from '../init.js';

declare const Deno: { readFile(path: URL): Promise<Uint8Array> };
setLoader(() => Deno.readFile(new URL('../wasm/context_compactor_bg.wasm', import.meta.url)));
setCompilerLoader(() => Deno.readFile(new URL('../compiler/compiler_bg.wasm', import.meta.url)));
export const runtimeEntry = 'deno';
export * from '../index.js';
