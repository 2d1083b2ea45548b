// Cloudflare Workers (workerd): o200k_base's data imported as a compiled module, like the core
// (instantiating it runs no code). The rest is not bundled (bundled-data.ts).
import o200k from '../ranks/o200k_base.wasm?module';
import { bundledRanks } from './bundled-data.js';

export const ranks = bundledRanks('workerd', o200k);
