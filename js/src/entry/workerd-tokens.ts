// Cloudflare Workers (workerd), counting only: the counting module and the data as compiled modules.
import wasmModule from '../counter/counter_bg.wasm?module';
import { counter } from '../counter-runtime.js';
import { ranks } from './workerd-data.js';
import { notBundled } from './bundled-data.js';

counter.setLoader(() => wasmModule);
counter.setRankLoader(ranks);
counter.setCompilerLoader(() => notBundled('workerd', 'compiler'));
export const runtimeEntry = 'workerd';
export * from '../counter.js';
