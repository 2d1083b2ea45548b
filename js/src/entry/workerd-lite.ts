// Cloudflare Workers (workerd): the .wasm is imported as a compiled module by wrangler/esbuild.
// The lite core: the same code as the full entries' core, built for size (scripts/build.sh).
import wasmModule from '../wasm/context_compactor_lite_bg.wasm';
import { setLoader } from '../init.js';

setLoader(() => wasmModule);
export const runtimeEntry = 'workerd';
export * from '../index.js';
