// Cloudflare Workers (workerd), counting only: the counting module and the data as compiled modules.
import wasmModule from '../counter/counter_bg.wasm';
import { counter } from '../counter-runtime.js';
import { setCompilerLoader, setRankLoader } from '../init.js';
import { compiler, ranks } from './workerd-data.js';

counter.setLoader(() => wasmModule);
setRankLoader(ranks);
setCompilerLoader(compiler);
export const runtimeEntry = 'workerd';
export * from '../counter.js';
