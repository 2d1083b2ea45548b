import { countTokens as coreCount, warmUp as coreWarmUp } from './wasm/context_compactor.js';
import { core } from './errors.js';
import { assertInitialized } from './init.js';
import type { EncodingName } from './types.js';

/**
 * Exact token count: an encoding (identical to the official tiktoken) or a tokenizer loaded with
 * `loadTokenizer` (identical to Hugging Face `tokenizers`). Synchronous once `init()` resolved.
 */
export function countTokens(text: string, encoding: EncodingName | (string & {}) = 'o200k_base'): number {
  assertInitialized('countTokens');
  if (typeof text !== 'string') throw new TypeError('countTokens: text must be a string');
  return core(() => coreCount(text, encoding));
}

/** Loads an encoding's tables now, so the first real count is fast. */
export function warmUp(encoding: EncodingName = 'o200k_base'): void {
  assertInitialized('warmUp');
  core(() => coreWarmUp(encoding));
}
