// Cloudflare Workers (workerd): the .wasm is imported as a compiled module by wrangler/esbuild.
// The tokenizer compiler is not bundled (bundled-data.ts): `init({ compiler })`.
import wasmModule from '../wasm/context_compactor_bg.wasm';
import { setCompilerLoader, setLoader } from '../core.js';
import { notBundled } from './bundled-data.js';

setLoader(() => wasmModule);
setCompilerLoader(() => notBundled('workerd', 'compiler'));
export const runtimeEntry = 'workerd';
export * from '../index.js';
