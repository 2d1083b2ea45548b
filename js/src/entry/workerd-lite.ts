// Cloudflare Workers (workerd): the .wasm is imported as a compiled module by wrangler/esbuild.
import wasmModule from '../wasm/context_compactor_bg.wasm';
import { setLoader } from '../init.js';

setLoader(() => wasmModule);
export const runtimeEntry = 'workerd';
export * from '../index.js';
