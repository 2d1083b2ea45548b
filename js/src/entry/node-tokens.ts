// Node and Bun, counting only: the counting module and the data files next to this package.
import { readFile } from 'node:fs/promises';
import { counter } from '../counter-runtime.js';
import { compiler, ranks } from './node-data.js';

counter.setLoader(() => readFile(new URL('../counter/counter_bg.wasm', import.meta.url)));
counter.setRankLoader(ranks);
counter.setCompilerLoader(compiler);
export const runtimeEntry = 'node';
export * from '../counter.js';
