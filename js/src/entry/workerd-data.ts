// Cloudflare Workers (workerd): the rank .wasm files are imported as compiled modules, like the
// core; instantiating one runs no code. The prebuilt tokenizers' data and the tokenizer compiler
// are imported only when loaded (dynamic imports, so a Worker that never counts Qwen does not
// wait for its data).
import o200k from '../ranks/o200k_base.wasm';
import cl100k from '../ranks/cl100k_base.wasm';
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';

const tokenizers = {
  qwen3: () => import('../ranks/qwen3.wasm'),
  qwen2_5: () => import('../ranks/qwen2_5.wasm'),
  deepseek_v3: () => import('../ranks/deepseek_v3.wasm'),
  mistral_tekken_240718: () => import('../ranks/mistral_tekken_240718.wasm'),
  mistral_tekken_240911: () => import('../ranks/mistral_tekken_240911.wasm'),
};
export const ranks = async (name: EncodingName | PrebuiltTokenizerName) =>
  name === 'o200k_base' ? o200k : name === 'cl100k_base' ? cl100k : (await tokenizers[name]()).default;
export const compiler = async () => (await import('../compiler/compiler_bg.wasm')).default;
