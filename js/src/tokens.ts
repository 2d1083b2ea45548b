import { countTokens as coreCount, countBreakdown as coreBreakdown, warmUp as coreWarmUp } from './wasm/context_compactor.js';
import { encode } from './codec.js';
import { toolDefinitions, type CompactorOptions } from './compactor.js';
import { core } from './errors.js';
import { assertInitialized } from './init.js';
import type { EncodingName, MessageLike } from './types.js';

/**
 * Exact token count: an encoding (identical to the official tiktoken) or a tokenizer loaded with
 * `loadTokenizer` (identical to Hugging Face `tokenizers`). Synchronous once `init()` resolved.
 */
export function countTokens(text: string, encoding: EncodingName | (string & {}) = 'o200k_base'): number {
  assertInitialized('countTokens');
  if (typeof text !== 'string') throw new TypeError('countTokens: text must be a string');
  return core(() => coreCount(text, encoding));
}

/** One part's tokens in a `TokenBreakdown`. */
export interface PartTokens {
  /** The part's `type`: `text`, `reasoning`, `image`, `file`, `tool-call`, `tool-result`, ... */
  type: string;
  total: number;
  /** A tool call's input. */
  input?: number;
  /** A tool result's output. */
  output?: number;
}

/** Where a request's tokens are (what `ai-tokenizer/sdk`'s `count` returns, in our counts). */
export interface TokenBreakdown {
  /** Everything below: the number the compactor plans with (before a family factor). */
  total: number;
  /** Tokens that prime the reply, once per request. */
  replyPriming: number;
  messages: { role: MessageLike['role']; total: number; overhead: number; parts: PartTokens[] }[];
  tools: {
    total: number;
    definitions: Record<string, { total: number; overhead: number; name: number; description: number; inputSchema: number }>;
  };
}

/**
 * Counts an AI SDK `ModelMessage[]` and a tool set (or tool definitions), broken down per
 * message, part and tool definition, so a UI can show where the tokens are. Counts are the ones
 * the compactor plans with: exact text in `encoding` (an encoding or a loaded tokenizer's name),
 * the documented framing, image and file estimates. Synchronous once `init()` resolved.
 */
export function countBreakdown(
  messages: MessageLike[],
  options: { tools?: CompactorOptions['tools']; encoding?: EncodingName | (string & {}) } = {},
): TokenBreakdown {
  assertInitialized('countBreakdown');
  if (!Array.isArray(messages)) throw new TypeError('countBreakdown: messages must be an array');
  const tools = options.tools === undefined ? [] : toolDefinitions(options.tools);
  const { json } = encode(messages);
  return JSON.parse(core(() => coreBreakdown(json, JSON.stringify(tools), options.encoding ?? 'o200k_base'))) as TokenBreakdown;
}

/** Loads an encoding's tables now, so the first real count is fast. */
export function warmUp(encoding: EncodingName = 'o200k_base'): void {
  assertInitialized('warmUp');
  core(() => coreWarmUp(encoding));
}
