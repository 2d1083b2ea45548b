// Cloudflare Workers (workerd): the rank .wasm files are imported as compiled modules, like the
// core; instantiating one runs no code.
import o200k from '../ranks/o200k_base.wasm';
import cl100k from '../ranks/cl100k_base.wasm';
import { setRankLoader } from '../init.js';

setRankLoader((name) => (name === 'cl100k_base' ? cl100k : o200k));
export * from './workerd-lite.js';
