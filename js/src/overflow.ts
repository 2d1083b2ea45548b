// Recognizes a provider's "prompt too long" error, and reads the true count and the limit from
// it where the text gives them. One table; each row cites where its text comes from.

/** What an overflow error said. */
export interface OverflowInfo {
  /** Which row of the table matched (`openai`, `anthropic`, `google`, `mistral`, `vllm`,
   * `llama.cpp`, `ollama`, `anthropic-stop-reason`, `generic`). */
  provider: string;
  /** The provider's count of the refused prompt, when the error gives it. */
  reportedTokens?: number;
  /** The provider's input limit, when the error gives it (for a limit on prompt plus output,
   * less the output requested). */
  limit?: number;
  /** The text that matched (the error message, or the response body). */
  message: string;
}

interface Row {
  provider: string;
  pattern: RegExp;
  /** Reads `reportedTokens` and `limit` from the match. */
  read?: (m: RegExpMatchArray, text: string) => { reportedTokens?: number; limit?: number };
}

const int = (s: string | undefined): number | undefined => {
  if (s === undefined) return undefined;
  const n = Number(s.replace(/[,_]/g, ''));
  return Number.isFinite(n) && n > 0 ? n : undefined;
};

/**
 * The table, most specific first. Texts are the providers' own, as their APIs return them:
 *
 * - OpenAI Chat Completions, 400 with `code: "context_length_exceeded"`:
 *   "This model's maximum context length is 128000 tokens. However, your messages resulted in
 *   204308 tokens. Please reduce the length of the messages." (bytedance/deer-flow#310,
 *   webtimemachine/wtm2#579, chathub-dev/chathub#126 show the body); the older form with a
 *   completion: "However, you requested 4268 tokens (4012 in the messages, 256 in the
 *   completion)" (conghaonet/hao_chatgpt#4). Responses API: "Your input exceeds the context
 *   window of this model".
 * - vLLM's OpenAI server (vllm/entrypoints/openai/serving_engine.py `_validate_input`):
 *   "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in
 *   the messages, Please reduce the length of the messages." / "… you requested {n} tokens
 *   ({prompt} in the messages, {max} in the completion)" / "However, your prompt contains at
 *   least {n} input tokens".
 * - Anthropic, 400 `invalid_request_error`: "prompt is too long: 219898 tokens > 200000
 *   maximum" (earendil-works/pi#102, stackblitz-labs/bolt.diy#401 as `AI_APICallError`);
 *   413 `request_too_large` "Request exceeds the maximum size"; and the stop reason
 *   `model_context_window_exceeded` (@ai-sdk/anthropic `mapAnthropicStopReason` maps it to
 *   `length`, raw reason kept).
 * - Google Gemini, 400 INVALID_ARGUMENT: "The input token count (1200293) exceeds the maximum
 *   number of tokens allowed (1048576)." (google-gemini/gemini-cli#6678, #4231).
 * - Mistral: "Prompt contains 300000 tokens, too large for model with 131072 maximum context
 *   length" (as listed in earendil-works/pi packages/ai/src/utils/overflow.ts and its tests).
 * - llama.cpp server, 400 `exceed_context_size_error` with `n_prompt_tokens` and `n_ctx`:
 *   "the request exceeds the available context size, try increasing it"; older builds:
 *   "request (4476 tokens) exceeds the available context size (4096 tokens)".
 * - Ollama: "prompt too long; exceeded max context length by 4096 tokens"; its embed endpoint
 *   "the input length exceeds the context length" (nano-step/nano-brain#208).
 */
const TABLE: Row[] = [
  {
    provider: 'openai',
    pattern: /maximum context length is ([\d,]+) tokens\. However, your messages resulted in ([\d,]+) tokens/i,
    read: (m) => ({ limit: int(m[1]), reportedTokens: int(m[2]) }),
  },
  {
    provider: 'vllm',
    pattern: /maximum context length is ([\d,]+) tokens\. However, you requested ([\d,]+) tokens \(([\d,]+) in the messages, ([\d,]+) in the completion\)/i,
    read: (m) => {
      const limit = int(m[1]);
      const completion = int(m[4]) ?? 0;
      return { reportedTokens: int(m[3]), limit: limit === undefined ? undefined : Math.max(1, limit - completion) };
    },
  },
  {
    provider: 'vllm',
    pattern: /maximum context length is ([\d,]+) tokens\. However, (?:you requested|your prompt contains at least) ([\d,]+) (?:input )?tokens/i,
    read: (m) => ({ limit: int(m[1]), reportedTokens: int(m[2]) }),
  },
  {
    provider: 'anthropic',
    pattern: /prompt is too long: ([\d,]+) tokens > ([\d,]+) maximum/i,
    read: (m) => ({ reportedTokens: int(m[1]), limit: int(m[2]) }),
  },
  {
    provider: 'google',
    pattern: /input token count \(([\d,]+)\) exceeds the maximum number of tokens allowed \(([\d,]+)\)/i,
    read: (m) => ({ reportedTokens: int(m[1]), limit: int(m[2]) }),
  },
  {
    provider: 'mistral',
    pattern: /prompt contains ([\d,]+) tokens.{0,200}?too large for model with ([\d,]+) maximum context length/i,
    read: (m) => ({ reportedTokens: int(m[1]), limit: int(m[2]) }),
  },
  {
    provider: 'llama.cpp',
    pattern: /exceeds the available context size/i,
    read: (_m, text) => ({
      reportedTokens: int(/"n_prompt_tokens"\s*:\s*(\d+)/.exec(text)?.[1] ?? /request \((\d+) tokens\) exceeds/i.exec(text)?.[1]),
      limit: int(/"n_ctx"\s*:\s*(\d+)/.exec(text)?.[1] ?? /available context size \((\d+) tokens\)/i.exec(text)?.[1]),
    }),
  },
  { provider: 'ollama', pattern: /prompt too long; exceeded (?:max )?context length|input length exceeds the context length/i },
  { provider: 'openai', pattern: /context_length_exceeded|exceeds the context window of this model/i },
  { provider: 'anthropic', pattern: /request_too_large|prompt is too long/i },
  { provider: 'anthropic-stop-reason', pattern: /model_context_window_exceeded/i },
  { provider: 'generic', pattern: /maximum context length is [\d,]+ tokens/i },
];

/** Never an overflow, whatever else the text says (a throttle that mentions tokens). */
const NOT_OVERFLOW = /rate limit|too many requests|throttl|quota/i;

/** The texts an error carries: its message and code, an `APICallError`'s response body and
 * data, and the same for its `cause`, `lastError` (AI SDK `RetryError`), `errors` and `error` (a
 * stream's error part carries the provider's event, e.g. `{ error: { type, message } }`). */
/** How much of each text an error carries is read: a provider's overflow message is short, and
 * a huge response body (an echoed prompt) must not make every failed call slow. */
const TEXT_LIMIT = 16_384;

function texts(error: unknown, depth = 0, out: string[] = []): string[] {
  if (error === null || error === undefined || depth > 4) return out;
  const push = (text: string) => out.push(text.length > TEXT_LIMIT ? text.slice(0, TEXT_LIMIT) : text);
  if (typeof error === 'string') {
    push(error);
    return out;
  }
  if (typeof error !== 'object') return out;
  const e = error as Record<string, unknown>;
  if (typeof e.message === 'string') push(e.message);
  if (typeof e.code === 'string') push(e.code);
  if (typeof e.responseBody === 'string') push(e.responseBody);
  if (e.data !== undefined && typeof e.data === 'object') {
    try {
      push(JSON.stringify(e.data));
    } catch {
      // unserializable data: the message is enough
    }
  }
  texts(e.cause, depth + 1, out);
  texts(e.lastError, depth + 1, out);
  texts(e.error, depth + 1, out);
  if (Array.isArray(e.errors)) for (const inner of e.errors.slice(-2)) texts(inner, depth + 1, out);
  return out;
}

/** An HTTP status that is never an overflow: rate limits and server errors. */
function status(error: unknown): number | undefined {
  const code = (error as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/**
 * Whether `error` is a provider's "prompt too long" error, and what it says: the provider, its
 * count of the refused prompt and its limit where the text gives them. `undefined` for every
 * other error (rate limits, server errors, bad requests of other kinds).
 */
export function parseOverflow(error: unknown): OverflowInfo | undefined {
  const code = status(error);
  if (code !== undefined && (code === 429 || code >= 500)) return undefined;
  const all = texts(error);
  for (const row of TABLE) {
    for (const text of all) {
      if (NOT_OVERFLOW.test(text)) continue;
      const m = row.pattern.exec(text);
      if (!m) continue;
      const counts = row.read?.(m, all.join('\n')) ?? {};
      const info: OverflowInfo = { provider: row.provider, message: text };
      if (counts.reportedTokens !== undefined) info.reportedTokens = counts.reportedTokens;
      if (counts.limit !== undefined) info.limit = counts.limit;
      return info;
    }
  }
  return undefined;
}

/** Whether `error` is a provider's "prompt too long" error (see `parseOverflow`). */
export function isOverflowError(error: unknown): boolean {
  return parseOverflow(error) !== undefined;
}

/** A generate result that stopped because the context window filled up (Anthropic's
 * `stop_reason: model_context_window_exceeded`, as the AI SDK carries it: the raw finish
 * reason, or the provider metadata's stop reason). */
export function isOverflowResult(result: unknown): boolean {
  const r = result as { finishReason?: unknown; providerMetadata?: { anthropic?: { stopReason?: unknown } } } | null;
  const finish = r?.finishReason;
  const raw = typeof finish === 'object' && finish !== null ? (finish as { raw?: unknown }).raw : undefined;
  return raw === 'model_context_window_exceeded' || r?.providerMetadata?.anthropic?.stopReason === 'model_context_window_exceeded';
}
