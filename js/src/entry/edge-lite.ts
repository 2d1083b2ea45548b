// Vercel Edge: compiling from bytes is forbidden, so the bundler provides a compiled module
// The lite core: the same code as the full entries' core, built for size (scripts/build.sh).
// through the `?module` import suffix.
import wasmModule from '../wasm/context_compactor_lite_bg.wasm?module';
import { setLoader } from '../init.js';

setLoader(() => wasmModule);
export const runtimeEntry = 'edge';
export * from '../index.js';
