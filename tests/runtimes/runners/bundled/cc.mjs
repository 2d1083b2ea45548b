// The package as a bundled app sees it (workerd, Edge and the Chromium bundle): named imports of
// both entries, gathered into the `cc` object the scenario takes. Named imports, as users write
// them: with the package's `sideEffects` setting a bundler may tree-shake an entry module whose
// own exports are unused, so a namespace import here would hide bugs that users hit. That is why
// `runtimeEntry` is not among them and is checked by a separate bundle (probe.mjs).
import { init, loadEncoding, loadTokenizer, isEncodingLoaded, countTokens, MemoryStore, createCompactor, loopContext, recoverySegment, memorySegment, KvStore, CompositeStore, summarizer, anthropicCacheControl, CompactorError, countBreakdown } from 'context-compactor';
import { init as tokensInit, loadEncoding as tokensLoadEncoding, loadTokenizer as tokensLoadTokenizer, isEncodingLoaded as tokensIsEncodingLoaded, countTokens as tokensCountTokens, countBreakdown as tokensCountBreakdown, modelInfo as tokensModelInfo, countModelTokens as tokensCountModelTokens, CompactorError as TokensError } from 'context-compactor/tokens';

export const cc = {
  init, loadEncoding, loadTokenizer, isEncodingLoaded, countTokens, MemoryStore, createCompactor, loopContext, recoverySegment, memorySegment, KvStore, CompositeStore, summarizer, anthropicCacheControl, CompactorError, countBreakdown,
  loadTokens: async () => ({ init: tokensInit, loadEncoding: tokensLoadEncoding, loadTokenizer: tokensLoadTokenizer, isEncodingLoaded: tokensIsEncodingLoaded, countTokens: tokensCountTokens, countBreakdown: tokensCountBreakdown, modelInfo: tokensModelInfo, countModelTokens: tokensCountModelTokens, CompactorError: TokensError }),
};
