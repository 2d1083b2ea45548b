// The public API, shared by every runtime entry (entry/*.ts add only how the .wasm is loaded).
export { createCompactor, Compactor, loadState, DEFAULT_STATE_PATH } from './compactor.js';
export type { CompactorOptions, OffloadOptions, CompactionOptions, CacheOptions, HistoryOptions, Summarizer, PrepareStepInput, OverflowOptions, RecoverResult } from './compactor.js';
export { parseOverflow, isOverflowError } from './overflow.js';
export type { OverflowInfo } from './overflow.js';
export { loopContext, recoverySegment, memorySegment, withMemory } from './loop.js';
export type { LoopConfig, Iteration, LoopState, LoopSummaryRequest, LoopStep } from './loop.js';
export { countTokens, countBreakdown, warmUp, modelInfo, countModelTokens } from './core.js';
export type { TokenBreakdown, PartTokens, ToolDefinition, ToolSetLike, ModelCount } from './tokens.js';
export { MemoryStore, checkPath, checkPrefix, MAX_PATH_LENGTH, MAX_SEGMENT_BYTES } from './store.js';
export { KvStore } from './stores/kv.js';
export type { KeyValueBackend, CloudflareKvNamespace, R2BucketLike, KvStoreOptions } from './stores/kv.js';
export { CompositeStore, loadAgentsMd, AGENTS_MD_PATH, MEMORIES_PREFIX } from './stores/composite.js';
export { recoveryTools, summarizer, anthropicCacheControl, ANTHROPIC_MAX_BREAKPOINTS } from './ai.js';
export type {
  AiSdkSchema,
  CompactorMiddleware,
  ExecutableTool,
  LanguageModelLike,
  MiddlewareOptions,
  RecoveryTool,
  RecoveryToolOptions,
  RecoveryToolSet,
  SummarizerOptions,
  GenerateTextCall,
} from './ai.js';
export type { FileStore } from './store.js';
export { CompactorError } from './errors.js';
export type { CompactorErrorCode } from './errors.js';
export { init, isInitialized, loadEncoding, loadTokenizer, compileTokenizer, isEncodingLoaded } from './core.js';
export type { WasmSource, RankSource, InitOptions, TokenizerInfo } from './init.js';
export type * from './types.js';
/** Which runtime entry was loaded (set by each entry module). */
export declare const runtimeEntry: 'node' | 'deno' | 'browser' | 'workerd' | 'edge';
export * from './report.js';
