// Vercel Edge, counting only: the counting module and the data precompiled through `?module`.
import wasmModule from '../counter/counter_bg.wasm?module';
import { counter } from '../counter-runtime.js';
import { setCompilerLoader, setRankLoader } from '../init.js';
import { compiler, ranks } from './edge-data.js';

counter.setLoader(() => wasmModule);
setRankLoader(ranks);
setCompilerLoader(compiler);
export const runtimeEntry = 'edge';
export * from '../counter.js';
