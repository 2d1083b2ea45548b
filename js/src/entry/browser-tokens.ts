// Browsers and bundlers, counting only: the counting module, then the data on first need.
import { counter } from '../counter-runtime.js';
import { setCompilerLoader, setRankLoader } from '../init.js';
import { compiler, ranks } from './browser-data.js';
import { compileUrl } from './fetch-wasm.js';

counter.setLoader(() => compileUrl(new URL('../counter/counter_bg.wasm', import.meta.url)));
setRankLoader(ranks);
setCompilerLoader(compiler);
export const runtimeEntry = 'browser';
export * from '../counter.js';
