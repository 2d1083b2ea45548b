// Cloudflare Workers (workerd): the .wasm is imported as a compiled module. `?module` is the
// suffix both wrangler's default rules (CompiledWasm for `*.wasm` and `*.wasm?module`) and Nitro's
// Cloudflare presets (unwasm, which would instantiate a plain `.wasm` import itself) read so.
// The tokenizer compiler is not bundled (bundled-data.ts): `init({ compiler })`.
import wasmModule from '../wasm/context_compactor_bg.wasm?module';
import { setCompilerLoader, setLoader } from '../core.js';
import { notBundled } from './bundled-data.js';

setLoader(() => wasmModule);
setCompilerLoader(() => notBundled('workerd', 'compiler'));
export const runtimeEntry = 'workerd';
export * from '../index.js';
