// Browsers and bundlers: the core, then each encoding's ranks and each prebuilt tokenizer's data
// on first need.
import { setRankLoader } from '../core.js';
import { ranks } from './browser-data.js';

setRankLoader(ranks);
export * from './browser-lite.js';
