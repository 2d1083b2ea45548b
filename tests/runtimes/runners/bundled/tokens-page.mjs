// An app that only counts, bundled by esbuild for the browser: `context-compactor/tokens` alone
// (runners/browser.mjs serves it from the package's entry directory and watches which .wasm
// files the page fetches: the counting module and the data, never the compactor's core).
import { init, countTokens, countBreakdown, runtimeEntry } from 'context-compactor/tokens';

try {
  const { fixture } = await (await fetch('/fixture-info.json')).json();
  await init({ encodings: ['o200k_base', 'cl100k_base'] });
  const bad = fixture.cases.filter((c) => countTokens(c.text) !== c.o200k_base || countTokens(c.text, 'cl100k_base') !== c.cl100k_base).map((c) => c.name);
  const total = countBreakdown([{ role: 'user', content: 'How many tokens is this?' }]).total;
  window.__ccTokens = { runtimeEntry, cases: fixture.cases.length, bad, total };
} catch (e) {
  window.__ccTokens = { runtimeEntry, error: String(e?.stack ?? e) };
}
