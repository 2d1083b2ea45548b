// Deno, counting only: the counting module and the data files next to this package.
import { counter } from '../counter-runtime.js';
import { compiler, ranks, read } from './deno-data.js';

counter.setLoader(() => read('../counter/counter_bg.wasm'));
counter.setRankLoader(ranks);
counter.setCompilerLoader(compiler);
export const runtimeEntry = 'deno';
export * from '../counter.js';
