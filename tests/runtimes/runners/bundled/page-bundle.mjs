// The same page test, but bundled by esbuild for the browser (conditions: browser) with named
// imports, as an app bundler would build it — this is where tree-shaking of the entry module
// (package.json "sideEffects") would bite. The bundle is served from the package's entry
// directory, so the entry's `new URL('../wasm/…', import.meta.url)` still finds the .wasm.
import { init, loadEncoding, loadTokenizer, isEncodingLoaded, countTokens, MemoryStore, createCompactor, loopContext, recoverySegment, memorySegment, KvStore, CompositeStore, summarizer, anthropicCacheControl, CompactorError, countBreakdown } from 'context-compactor';
import { init as tokensInit, loadEncoding as tokensLoadEncoding, loadTokenizer as tokensLoadTokenizer, isEncodingLoaded as tokensIsEncodingLoaded, countTokens as tokensCountTokens, countBreakdown as tokensCountBreakdown, modelInfo as tokensModelInfo, countModelTokens as tokensCountModelTokens, CompactorError as TokensError } from 'context-compactor/tokens';
import { runScenario } from '../../scenario.mjs';
import { runReport, errString } from '../common.mjs';

try {
  const fixtureInfo = await (await fetch('/fixture-info.json')).json();
  const cc = { init, loadEncoding, loadTokenizer, isEncodingLoaded, countTokens, MemoryStore, createCompactor, loopContext, recoverySegment, memorySegment, KvStore, CompositeStore, summarizer, anthropicCacheControl, CompactorError, countBreakdown, loadTokens: async () => ({ init: tokensInit, loadEncoding: tokensLoadEncoding, loadTokenizer: tokensLoadTokenizer, isEncodingLoaded: tokensIsEncodingLoaded, countTokens: tokensCountTokens, countBreakdown: tokensCountBreakdown, modelInfo: tokensModelInfo, countModelTokens: tokensCountModelTokens, CompactorError: TokensError }) };
  window.__ccReport = await runReport('chromium (esbuild bundle)', undefined, async () => cc, fixtureInfo, runScenario);
} catch (e) {
  window.__ccReport = { runtime: 'chromium (esbuild bundle)', checks: [{ name: 'bundled page ran', ok: false, detail: errString(e) }], timings: {} };
}
