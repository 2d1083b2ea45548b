// `context-compactor/tokens`: exact counting only, on its own wasm module (src/bindings/counting.rs,
// feature `counter`) with no planner, stores or AI SDK kit, for apps that count and do not
// compact. The functions are the main entry's (core.ts documents each); this module has its own
// runtime (init.ts), so an app that imports both entries has two independent modules.
import { counter } from './counter-runtime.js';

/** Loads the counting module and o200k_base (or `{ encodings }`): see `init` in `context-compactor`. */
export const init = counter.init;
/** Whether `init()` has loaded the counting module. */
export const isInitialized = counter.isInitialized;
/** Makes an encoding or a prebuilt tokenizer available: see `loadEncoding` in `context-compactor`. */
export const loadEncoding = counter.loadEncoding;
/** An exact counter from a `tokenizer.json` or tekken file: see `loadTokenizer` in `context-compactor`. */
export const loadTokenizer = counter.loadTokenizer;
/** A tokenizer's prebuilt data: see `compileTokenizer` in `context-compactor`. */
export const compileTokenizer = counter.compileTokenizer;
/** Whether `name` can count now (synchronously). */
export const isEncodingLoaded = counter.isEncodingLoaded;
/** Exact token count of a text: see `countTokens` in `context-compactor`. */
export const countTokens = counter.countTokens;
/** The model registry's entry for a model: see `modelInfo` in `context-compactor`. */
export const modelInfo = counter.modelInfo;
/** A text's tokens for a model, exact or by its family's factor: see `countModelTokens` in `context-compactor`. */
export const countModelTokens = counter.countModelTokens;
/** An AI SDK request's tokens per message, part and tool: see `countBreakdown` in `context-compactor`. */
export const countBreakdown = counter.countBreakdown;
/** Loads an encoding's tables now, so the first real count is fast. */
export const warmUp = counter.warmUp;

export type { TokenBreakdown, PartTokens, ToolDefinition, ToolSetLike, ModelCount } from './tokens.js';
export type { WasmSource, RankSource, InitOptions, TokenizerInfo } from './init.js';
export { CompactorError } from './errors.js';
export type { CompactorErrorCode } from './errors.js';
export type { EncodingName, PrebuiltTokenizerName, MessageLike, ModelInfo, ModelFamily } from './types.js';
/** Which runtime entry was loaded (set by each entry module). */
export declare const runtimeEntry: 'node' | 'deno' | 'browser' | 'workerd' | 'edge';
