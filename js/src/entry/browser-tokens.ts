// Browsers and bundlers, counting only: the counting module, then the data on first need.
import { counter } from '../counter-runtime.js';
import { compiler, ranks } from './browser-data.js';
import { compileUrl } from './fetch-wasm.js';

counter.setLoader(() => compileUrl(new URL('../counter/counter_bg.wasm', import.meta.url)));
counter.setRankLoader(ranks);
counter.setCompilerLoader(compiler);
export const runtimeEntry = 'browser';
export * from '../counter.js';
