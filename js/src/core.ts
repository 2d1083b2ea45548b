// The core's runtime (init.ts): the wasm module behind `context-compactor` and
// `context-compactor/lite`, its data and its counting, as the package exports them.
import * as glue from './wasm/context_compactor.js';
import { createRuntime, type InitOptions, type RankSource, type TokenizerInfo, type WasmSource } from './init.js';
import type { ModelCount, TokenBreakdown, ToolSetLike } from './tokens.js';
import type { EncodingName, MessageLike, ModelInfo, PrebuiltTokenizerName } from './types.js';

type DataName = EncodingName | PrebuiltTokenizerName;

const core = createRuntime(glue, 'wasm/context_compactor_bg.wasm');

/** Called once by each runtime entry: how it loads the core's `.wasm`. */
export const setLoader = core.setLoader;
/** Called by the full entries: how they fetch an encoding's ranks. */
export const setRankLoader = core.setRankLoader;
/** Called by each runtime entry: how it loads the tokenizer compiler's `.wasm`. */
export const setCompilerLoader = core.setCompilerLoader;

/** Whether `init()` has loaded the core. */
export function isInitialized(): boolean {
  return core.isInitialized();
}

/** Throws `not_initialized` naming `what` until the core is loaded. */
export function assertInitialized(what: string): void {
  core.assertInitialized(what);
}

/**
 * Loads and instantiates the core, then o200k_base (full entries) or the `encodings` given. Safe
 * to call many times and concurrently; the core loads once, and each later call loads only the
 * encodings it names that are not loaded yet. Pass a `WebAssembly.Module` or bytes (or
 * `{ wasm }`) to bypass the runtime's default loading.
 */
export function init(options?: WasmSource | InitOptions): Promise<void> {
  return core.init(options);
}

/**
 * Makes an encoding, or a tokenizer the package ships prebuilt data for (`'qwen3'`,
 * `'deepseek_v3'`, ...), available for counting. The full entries find the data themselves; with
 * `context-compactor/lite`, pass it: the package's `ranks/<name>.wasm` (as a compiled module or
 * bytes) or the raw data. Any other name needs its data: what `compileTokenizer` made. Idempotent
 * and safe to call concurrently.
 */
export function loadEncoding(name: DataName | (string & {}) = 'o200k_base', source?: RankSource): Promise<void> {
  return core.loadEncoding(name, source);
}

/**
 * Builds an exact counter from a Hugging Face `tokenizer.json` (the file beside a model's
 * weights): Llama 3.x, Qwen 2.5 / 3, DeepSeek V3, Gemma 3 (and so Gemini 2.x / 3 text); or
 * from Mistral's `tekken_*.json` (mistral-common). Afterwards
 * `countTokens(text, name)` counts as the `tokenizers` library's `encode(text,
 * add_special_tokens=False)`. `json` is the file's text, its bytes or the parsed object. A file
 * this package cannot count exactly (another pre-tokenizer, WordPiece, Unigram, ...) is
 * `CompactorError('invalid_rank_data')` saying what. Loading a loaded name keeps the first.
 */
export function loadTokenizer(name: string, json: string | BufferSource | object): Promise<TokenizerInfo> {
  return core.loadTokenizer(name, json);
}

/**
 * The compact data the package ships for Qwen, DeepSeek and Mistral (`CCH1`), made from any
 * `tokenizer.json` or tekken file `loadTokenizer` accepts: for a vocabulary you may redistribute
 * (Llama 3.x, Gemma 3 under their licences), make it once, host it, and load it with
 * `loadEncoding(name, data)` — 3–6× smaller gzipped than the file and 3–6× faster to load. Like
 * the shipped data it refers to o200k_base's tokens: load o200k_base first (`init()` does in the
 * full entries). Errors as `loadTokenizer`.
 */
export function compileTokenizer(name: string, json: string | BufferSource | object): Promise<Uint8Array> {
  return core.compileTokenizer(name, json);
}

/** Whether `name` (an encoding or a loaded tokenizer) can count now (synchronously). */
export function isEncodingLoaded(name: EncodingName | (string & {})): boolean {
  return core.isEncodingLoaded(name);
}

/**
 * Loads the prebuilt data of the tokenizer `tokenizer` (a model's `model.tokenizer`) when the
 * package ships it, this entry can find it, and it is not loaded yet; says whether it did.
 */
export function loadModelTokenizer(tokenizer: string | null): Promise<boolean> {
  return core.loadModelTokenizer(tokenizer);
}

/**
 * Exact token count: an encoding (identical to the official tiktoken) or a tokenizer loaded with
 * `loadTokenizer` (identical to Hugging Face `tokenizers`). Synchronous once `init()` resolved.
 */
export function countTokens(text: string, encoding: EncodingName | (string & {}) = 'o200k_base'): number {
  return core.countTokens(text, encoding);
}

/**
 * Counts an AI SDK `ModelMessage[]` and a tool set (or tool definitions), broken down per
 * message, part and tool definition, so a UI can show where the tokens are. Counts are the ones
 * the compactor plans with: exact text in `encoding` (an encoding or a loaded tokenizer's name),
 * the documented framing, image and file estimates. Synchronous once `init()` resolved.
 */
export function countBreakdown(messages: MessageLike[], options: { tools?: ToolSetLike; encoding?: EncodingName | (string & {}) } = {}): TokenBreakdown {
  return core.countBreakdown(messages, options);
}

/** Loads an encoding's tables now, so the first real count is fast. */
export function warmUp(encoding: EncodingName = 'o200k_base'): void {
  core.warmUp(encoding);
}

/**
 * The model registry's entry for `model` (the name the app gives its provider: `gpt-4o`,
 * `claude-sonnet-4-5`, `qwen/qwen3-32b`, `meta-llama/Llama-3.1-8B-Instruct`, `qwen2.5-coder:7b`):
 * context window, encoding, the Hugging Face tokenizer that counts it exactly (`tokenizer`: load
 * it with `loadEncoding` when the package ships it, `loadTokenizer` otherwise), family and
 * `tokenRatio` (1 once its tokenizer is loaded). An unknown model gets the defaults (8,192 tokens)
 * with `matched: null`.
 * Synchronous once `init()` resolved.
 */
export function modelInfo(model: string): ModelInfo {
  return core.modelInfo(model);
}

/**
 * `text`'s tokens for `model`, as a compactor for that model counts them before calibration:
 * exact with the model's own tokenizer (an OpenAI model's encoding, or its Hugging Face tokenizer
 * once loaded), else its encoding's count times the family's factor (`exact: false`, `ratio`).
 * (A compactor for an unknown model given only `contextWindow` counts with o200k exactly; here an
 * unknown model gets the default factor.) Synchronous once `init()` resolved;
 * `encoding_not_loaded` for a cl100k model (`gpt-4`) before `loadEncoding('cl100k_base')`.
 */
export function countModelTokens(text: string, model: string): ModelCount {
  return core.countModelTokens(text, model);
}
