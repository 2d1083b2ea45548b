// Vercel Edge: compiling from bytes is forbidden, so the bundler provides a compiled module
// through the `?module` import suffix. The tokenizer compiler is not bundled (bundled-data.ts):
// `init({ compiler })`.
import wasmModule from '../wasm/context_compactor_bg.wasm?module';
import { setCompilerLoader, setLoader } from '../core.js';
import { notBundled } from './bundled-data.js';

setLoader(() => wasmModule);
setCompilerLoader(() => notBundled('edge', 'compiler'));
export const runtimeEntry = 'edge';
export * from '../index.js';
