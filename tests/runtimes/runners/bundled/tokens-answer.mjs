// An app that only counts: `context-compactor/tokens` alone, bundled by runners/workerd.mjs
// (tokens-worker.mjs) and runners/edge.mjs (tokens-edge-worker.mjs). Its bundle must carry the
// counting module and o200k_base's data, never the compactor's core; cl100k_base's data is the
// app's own import (the Workers and Edge entries do not bundle it), handed in as `cl100k`.
import { init, loadEncoding, countTokens, countBreakdown, runtimeEntry } from 'context-compactor/tokens';
import fixtureInfo from 'virtual:fixture';

export async function answer(cl100k) {
  try {
    await init({ encodings: ['o200k_base'] });
    await loadEncoding('cl100k_base', cl100k);
    const cases = fixtureInfo.fixture.cases;
    const bad = cases.filter((c) => countTokens(c.text) !== c.o200k_base || countTokens(c.text, 'cl100k_base') !== c.cl100k_base).map((c) => c.name);
    const total = countBreakdown([{ role: 'user', content: 'How many tokens is this?' }]).total;
    return Response.json({ runtimeEntry, cases: cases.length, bad, total });
  } catch (e) {
    return Response.json({ runtimeEntry, error: String(e?.stack ?? e) });
  }
}
