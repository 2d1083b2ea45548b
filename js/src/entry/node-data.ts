// Node and Bun: the data files and the tokenizer compiler, .wasm files next to this package, each
// named by a literal URL in a call of its own (node-file.ts says why; Nitro's file tracer, nft,
// missed the files named inside an object literal and left them out of `.output`).
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';
import { readWasm } from './node-file.js';

export function ranks(name: EncodingName | PrebuiltTokenizerName): Promise<Uint8Array> {
  switch (name) {
    case 'o200k_base':
      return readWasm(new URL('../ranks/o200k_base.wasm', import.meta.url), '../ranks/o200k_base.wasm');
    case 'cl100k_base':
      return readWasm(new URL('../ranks/cl100k_base.wasm', import.meta.url), '../ranks/cl100k_base.wasm');
    case 'qwen3':
      return readWasm(new URL('../ranks/qwen3.wasm', import.meta.url), '../ranks/qwen3.wasm');
    case 'qwen2_5':
      return readWasm(new URL('../ranks/qwen2_5.wasm', import.meta.url), '../ranks/qwen2_5.wasm');
    case 'deepseek_v3':
      return readWasm(new URL('../ranks/deepseek_v3.wasm', import.meta.url), '../ranks/deepseek_v3.wasm');
    case 'mistral_tekken_240718':
      return readWasm(new URL('../ranks/mistral_tekken_240718.wasm', import.meta.url), '../ranks/mistral_tekken_240718.wasm');
    case 'mistral_tekken_240911':
      return readWasm(new URL('../ranks/mistral_tekken_240911.wasm', import.meta.url), '../ranks/mistral_tekken_240911.wasm');
  }
}
export const compiler = () => readWasm(new URL('../compiler/compiler_bg.wasm', import.meta.url), '../compiler/compiler_bg.wasm');
