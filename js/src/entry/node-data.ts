// Node and Bun: the data files and the tokenizer compiler, .wasm files next to this package, each
// named by a literal URL (node-file.ts says why).
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';
import { readWasm } from './node-file.js';

const urls = {
  o200k_base: () => new URL('../ranks/o200k_base.wasm', import.meta.url),
  cl100k_base: () => new URL('../ranks/cl100k_base.wasm', import.meta.url),
  qwen3: () => new URL('../ranks/qwen3.wasm', import.meta.url),
  qwen2_5: () => new URL('../ranks/qwen2_5.wasm', import.meta.url),
  deepseek_v3: () => new URL('../ranks/deepseek_v3.wasm', import.meta.url),
  mistral_tekken_240718: () => new URL('../ranks/mistral_tekken_240718.wasm', import.meta.url),
  mistral_tekken_240911: () => new URL('../ranks/mistral_tekken_240911.wasm', import.meta.url),
};
export const ranks = (name: EncodingName | PrebuiltTokenizerName) => readWasm(urls[name](), `../ranks/${name}.wasm`);
export const compiler = () => readWasm(new URL('../compiler/compiler_bg.wasm', import.meta.url), '../compiler/compiler_bg.wasm');
