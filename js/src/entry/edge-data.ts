// Vercel Edge: the rank .wasm files come precompiled through `?module`, like the core; the
// prebuilt tokenizers' data and the tokenizer compiler too, imported only when loaded.
import o200k from '../ranks/o200k_base.wasm?module';
import cl100k from '../ranks/cl100k_base.wasm?module';
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';

const tokenizers = {
  qwen3: () => import('../ranks/qwen3.wasm?module'),
  qwen2_5: () => import('../ranks/qwen2_5.wasm?module'),
  deepseek_v3: () => import('../ranks/deepseek_v3.wasm?module'),
  mistral_tekken_240718: () => import('../ranks/mistral_tekken_240718.wasm?module'),
  mistral_tekken_240911: () => import('../ranks/mistral_tekken_240911.wasm?module'),
};
export const ranks = async (name: EncodingName | PrebuiltTokenizerName) =>
  name === 'o200k_base' ? o200k : name === 'cl100k_base' ? cl100k : (await tokenizers[name]()).default;
export const compiler = async () => (await import('../compiler/compiler_bg.wasm?module')).default;
