// Cloudflare Workers (workerd): the core, the encodings' ranks and the prebuilt tokenizers' data
// as compiled modules (workerd-data.ts).
import { setRankLoader } from '../core.js';
import { ranks } from './workerd-data.js';

setRankLoader(ranks);
export * from './workerd-lite.js';
