// Vercel Edge: compiling from bytes is forbidden, so the bundler provides a compiled module
// through the `?module` import suffix.
import wasmModule from '../wasm/context_compactor_bg.wasm?module';
import { setLoader } from '../init.js';

setLoader(() => wasmModule);
export const runtimeEntry = 'edge';
export * from '../index.js';
