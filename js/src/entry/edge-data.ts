// Vercel Edge: o200k_base's data precompiled through `?module`, like the core. The rest is not
// bundled (bundled-data.ts).
import o200k from '../ranks/o200k_base.wasm?module';
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';
import { notBundled } from './bundled-data.js';

export const ranks = (name: EncodingName | PrebuiltTokenizerName) => (name === 'o200k_base' ? o200k : notBundled('edge', name));
