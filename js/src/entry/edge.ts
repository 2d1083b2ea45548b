// Vercel Edge: the rank .wasm files come precompiled through `?module`, like the core.
import o200k from '../ranks/o200k_base.wasm?module';
import cl100k from '../ranks/cl100k_base.wasm?module';
import { setRankLoader } from '../init.js';

setRankLoader((name) => (name === 'cl100k_base' ? cl100k : o200k));
export * from './edge-lite.js';
