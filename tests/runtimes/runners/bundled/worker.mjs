// Cloudflare module worker (bundled by runners/workerd.mjs with the workerd conditions).
// Named imports, as users write them: with the package's `sideEffects` setting a bundler may
// tree-shake an entry module whose own exports are unused, so a namespace import here would hide
// bugs that users hit. `runtimeEntry` is checked by a separate bundle (probe.mjs) for that reason.
// `virtual:fixture` is the token-count fixture, embedded at bundle time.
import { init, loadEncoding, loadTokenizer, isEncodingLoaded, countTokens, MemoryStore, createCompactor, loopContext, recoverySegment, memorySegment, KvStore, CompositeStore, summarizer, anthropicCacheControl, CompactorError, countBreakdown } from 'context-compactor';
import { init as tokensInit, loadEncoding as tokensLoadEncoding, loadTokenizer as tokensLoadTokenizer, isEncodingLoaded as tokensIsEncodingLoaded, countTokens as tokensCountTokens, countBreakdown as tokensCountBreakdown, modelInfo as tokensModelInfo, countModelTokens as tokensCountModelTokens, CompactorError as TokensError } from 'context-compactor/tokens';
import fixtureInfo from 'virtual:fixture';
import { runScenario } from '../../scenario.mjs';
import { runReport } from '../common.mjs';

export default {
  async fetch() {
    const cc = { init, loadEncoding, loadTokenizer, isEncodingLoaded, countTokens, MemoryStore, createCompactor, loopContext, recoverySegment, memorySegment, KvStore, CompositeStore, summarizer, anthropicCacheControl, CompactorError, countBreakdown, loadTokens: async () => ({ init: tokensInit, loadEncoding: tokensLoadEncoding, loadTokenizer: tokensLoadTokenizer, isEncodingLoaded: tokensIsEncodingLoaded, countTokens: tokensCountTokens, countBreakdown: tokensCountBreakdown, modelInfo: tokensModelInfo, countModelTokens: tokensCountModelTokens, CompactorError: TokensError }) };
    const report = await runReport('workerd', undefined, async () => cc, fixtureInfo, runScenario);
    return Response.json(report);
  },
};
