// Browsers and bundlers: each encoding's ranks are fetched on first need (static URLs, so
// bundlers emit them as assets).
import { setRankLoader } from '../init.js';
import { compileUrl } from './fetch-wasm.js';

setRankLoader((name) =>
  compileUrl(name === 'cl100k_base' ? new URL('../ranks/cl100k_base.wasm', import.meta.url) : new URL('../ranks/o200k_base.wasm', import.meta.url)),
);
export * from './browser-lite.js';
