// Node and Bun, counting only: the counting module and the data files next to this package.
import { counter } from '../counter-runtime.js';
import { compiler, ranks } from './node-data.js';
import { readWasm } from './node-file.js';

counter.setLoader(() => readWasm(new URL('../counter/counter_bg.wasm', import.meta.url), '../counter/counter_bg.wasm'));
counter.setRankLoader(ranks);
counter.setCompilerLoader(compiler);
export const runtimeEntry = 'node';
export * from '../counter.js';
