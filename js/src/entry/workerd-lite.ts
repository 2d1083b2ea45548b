// Cloudflare Workers (workerd): the .wasm is imported as a compiled module by wrangler/esbuild.
import wasmModule from '../wasm/context_compactor_bg.wasm';
import { setCompilerLoader, setLoader } from '../core.js';

setLoader(() => wasmModule);
// The tokenizer compiler, imported only when loadTokenizer / compileTokenizer first run.
setCompilerLoader(async () => (await import('../compiler/compiler_bg.wasm')).default);
export const runtimeEntry = 'workerd';
export * from '../index.js';
