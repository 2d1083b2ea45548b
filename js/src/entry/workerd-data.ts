// Cloudflare Workers (workerd): o200k_base's data imported as a compiled module, like the core
// (instantiating it runs no code). The rest is not bundled (bundled-data.ts).
import o200k from '../ranks/o200k_base.wasm?module';
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';
import { notBundled } from './bundled-data.js';

export const ranks = (name: EncodingName | PrebuiltTokenizerName) => (name === 'o200k_base' ? o200k : notBundled('workerd', name));
