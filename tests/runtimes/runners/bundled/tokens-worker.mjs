// A Worker that only counts: `context-compactor/tokens` alone (bundled by runners/workerd.mjs).
// Its bundle must carry the counting module and the data, never the compactor's core.
import { init, countTokens, countBreakdown } from 'context-compactor/tokens';
import fixtureInfo from 'virtual:fixture';

export default {
  async fetch() {
    await init({ encodings: ['o200k_base', 'cl100k_base'] });
    const cases = fixtureInfo.fixture.cases;
    const bad = cases.filter((c) => countTokens(c.text) !== c.o200k_base || countTokens(c.text, 'cl100k_base') !== c.cl100k_base).map((c) => c.name);
    const total = countBreakdown([{ role: 'user', content: 'How many tokens is this?' }]).total;
    return Response.json({ cases: cases.length, bad, total });
  },
};
