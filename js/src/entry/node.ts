// Node and Bun: the core and each encoding's ranks are .wasm files next to this package.
import { readFile } from 'node:fs/promises';
import { setRankLoader } from '../init.js';

setRankLoader((name) =>
  readFile(name === 'cl100k_base' ? new URL('../ranks/cl100k_base.wasm', import.meta.url) : new URL('../ranks/o200k_base.wasm', import.meta.url)),
);
export * from './node-lite.js';
