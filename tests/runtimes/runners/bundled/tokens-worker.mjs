// An app that only counts: `context-compactor/tokens` alone, bundled by runners/workerd.mjs and
// runners/edge.mjs. Its bundle must carry the counting module and the data, never the
// compactor's core. Works as a module worker (workerd) and as a fetch-event script (Edge).
import { init, countTokens, countBreakdown, runtimeEntry } from 'context-compactor/tokens';
import fixtureInfo from 'virtual:fixture';

async function answer() {
  try {
    await init({ encodings: ['o200k_base', 'cl100k_base'] });
    const cases = fixtureInfo.fixture.cases;
    const bad = cases.filter((c) => countTokens(c.text) !== c.o200k_base || countTokens(c.text, 'cl100k_base') !== c.cl100k_base).map((c) => c.name);
    const total = countBreakdown([{ role: 'user', content: 'How many tokens is this?' }]).total;
    return Response.json({ runtimeEntry, cases: cases.length, bad, total });
  } catch (e) {
    return Response.json({ runtimeEntry, error: String(e?.stack ?? e) });
  }
}
if (typeof addEventListener === 'function' && typeof globalThis.EdgeRuntime === 'string') {
  addEventListener('fetch', (event) => event.respondWith(answer()));
}
export default { fetch: answer };
