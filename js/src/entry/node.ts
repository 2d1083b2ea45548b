// Node and Bun: the core, each encoding's ranks and each prebuilt tokenizer's data are .wasm
// files next to this package.
import { setRankLoader } from '../core.js';
import { ranks } from './node-data.js';

setRankLoader(ranks);
export * from './node-lite.js';
