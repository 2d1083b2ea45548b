// Vercel Edge: the core, the encodings' ranks and the prebuilt tokenizers' data precompiled
// through `?module` (edge-data.ts).
import { setRankLoader } from '../core.js';
import { ranks } from './edge-data.js';

setRankLoader(ranks);
export * from './edge-lite.js';
