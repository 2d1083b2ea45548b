// Vercel Edge: o200k_base's data precompiled through `?module`, like the core. The rest is not
// bundled (bundled-data.ts).
import o200k from '../ranks/o200k_base.wasm?module';
import { bundledRanks } from './bundled-data.js';

export const ranks = bundledRanks('edge', o200k);
