// Vercel Edge function body (bundled by runners/edge.mjs with the edge-light conditions into a
// classic script the EdgeRuntime evaluates; it answers fetch events like a Vercel edge function).
// Named imports, as users write them (see worker.mjs); `runtimeEntry` is checked by probe.mjs.
import { init, loadEncoding, loadTokenizer, isEncodingLoaded, countTokens, MemoryStore, createCompactor, loopContext, recoverySegment, memorySegment, KvStore, CompositeStore, summarizer, anthropicCacheControl, CompactorError, countBreakdown } from 'context-compactor';
import { init as tokensInit, loadEncoding as tokensLoadEncoding, loadTokenizer as tokensLoadTokenizer, isEncodingLoaded as tokensIsEncodingLoaded, countTokens as tokensCountTokens, countBreakdown as tokensCountBreakdown, modelInfo as tokensModelInfo, countModelTokens as tokensCountModelTokens, CompactorError as TokensError } from 'context-compactor/tokens';
import fixtureInfo from 'virtual:fixture';
import { runScenario } from '../../scenario.mjs';
import { runReport } from '../common.mjs';

addEventListener('fetch', (event) => {
  const cc = { init, loadEncoding, loadTokenizer, isEncodingLoaded, countTokens, MemoryStore, createCompactor, loopContext, recoverySegment, memorySegment, KvStore, CompositeStore, summarizer, anthropicCacheControl, CompactorError, countBreakdown, loadTokens: async () => ({ init: tokensInit, loadEncoding: tokensLoadEncoding, loadTokenizer: tokensLoadTokenizer, isEncodingLoaded: tokensIsEncodingLoaded, countTokens: tokensCountTokens, countBreakdown: tokensCountBreakdown, modelInfo: tokensModelInfo, countModelTokens: tokensCountModelTokens, CompactorError: TokensError }) };
  event.respondWith(
    runReport('edge', undefined, async () => cc, fixtureInfo, runScenario).then((report) => Response.json(report)),
  );
});
