// Vercel Edge: compiling from bytes is forbidden, so the bundler provides a compiled module
// through the `?module` import suffix.
import wasmModule from '../wasm/context_compactor_bg.wasm?module';
import { setCompilerLoader, setLoader } from '../core.js';

setLoader(() => wasmModule);
// The tokenizer compiler, imported only when loadTokenizer / compileTokenizer first run.
setCompilerLoader(async () => (await import('../compiler/compiler_bg.wasm?module')).default);
export const runtimeEntry = 'edge';
export * from '../index.js';
