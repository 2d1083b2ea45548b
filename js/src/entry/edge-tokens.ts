// Vercel Edge, counting only: the counting module and the data precompiled through `?module`.
import wasmModule from '../counter/counter_bg.wasm?module';
import { counter } from '../counter-runtime.js';
import { ranks } from './edge-data.js';
import { notBundled } from './bundled-data.js';

counter.setLoader(() => wasmModule);
counter.setRankLoader(ranks);
counter.setCompilerLoader(() => notBundled('edge', 'compiler'));
export const runtimeEntry = 'edge';
export * from '../counter.js';
