// A provider's "prompt too long" error: the table that recognizes it, and reads the true count
// and the limit from it where the text gives them, is the core's (`src/overflow.rs`, one table
// for every host, each row citing where its text comes from). This file only gathers the texts
// a JavaScript error carries.
import { overflowVerdict as coreOverflowVerdict, parseOverflow as coreParseOverflow } from './wasm/context_compactor.js';
import { assertInitialized } from './core.js';
import { CompactorError, core } from './errors.js';

/** What an overflow error said. */
export interface OverflowInfo {
  /** Which row of the table matched (`openai`, `anthropic`, `google`, `mistral`, `xai`,
   * `bedrock`, `vllm`, `tgi`, `llama.cpp`, `ollama`, `anthropic-stop-reason`, `generic`). */
  provider: string;
  /** The provider's count of the refused prompt, when the error gives it. */
  reportedTokens?: number;
  /** The provider's input limit, when the error gives it (for a limit on prompt plus output,
   * less the output requested). */
  limit?: number;
  /** The text that matched (the error message, or the response body). */
  message: string;
}

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
 * other error (rate limits, server errors, bad requests of other kinds). Needs the core loaded
 * (`init()`, or any compactor created): it is the core's table.
 */
export function parseOverflow(error: unknown): OverflowInfo | undefined {
  assertInitialized('parseOverflow');
  const code = status(error);
  const found = JSON.parse(coreParseOverflow(texts(error), code !== undefined && Number.isInteger(code) && code >= 0 && code < 65_536 ? code : undefined)) as OverflowInfo | null;
  return found ?? undefined;
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

/** Where a model call stands when a retry loop asks what to do (`overflowVerdict`). */
export type OverflowMoment = 'refused' | 'cut' | 'refused-after-content' | 'cut-after-content' | 'nothing-left';

/** What a retry loop does next: let the error or answer through `as-is`, `retry` compacted
 * harder (`compactor.recover` with `attempt`), or `fail` with the typed `context_overflow`
 * error (its `cause` the provider's error). */
export type OverflowVerdict = { verdict: 'as-is' } | { verdict: 'retry'; attempt: number } | { verdict: 'fail'; error: CompactorError };

/**
 * The core's rules for a retry loop (`src/overflow.rs` `overflow_verdict`, the same for every
 * host and middleware): `info` is what the call's error or cut answer said (`parseOverflow`;
 * undefined: not an overflow), `attempt` the compactions made for this model call so far,
 * `retries` how many it may make.
 */
export function overflowVerdict(moment: OverflowMoment, info: OverflowInfo | undefined, attempt: number, retries: number, cause: unknown): OverflowVerdict {
  const said = JSON.parse(core(() => coreOverflowVerdict(JSON.stringify({ moment, overflow: info ?? null, attempt, retries })))) as
    | { verdict: 'as-is' }
    | { verdict: 'retry'; attempt: number }
    | { verdict: 'fail'; message: string; details: Record<string, unknown> };
  if (said.verdict !== 'fail') return said;
  return { verdict: 'fail', error: overflowError(said, cause) };
}

/** The typed `context_overflow` of the core's verdict (`message`, `details`), its `cause` the
 * provider's error. */
export function overflowError(failure: { message: string; details: Record<string, unknown> }, cause: unknown): CompactorError {
  const error = new CompactorError('context_overflow', failure.message, failure.details);
  Object.defineProperty(error, 'cause', { value: cause, enumerable: false, configurable: true, writable: true });
  return error;
}
