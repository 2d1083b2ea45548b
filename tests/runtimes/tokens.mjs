// `context-compactor/tokens` (counting only, its own wasm module) in the runtime under test: the
// runner hands in `cc.loadTokens()`, which imports it (a dynamic import, after the main scenario
// has run on the main entry alone) or returns its named imports (a bundle). Runtime-agnostic like
// scenario.mjs. The main entry is loaded by then, so this also checks that the two entries'
// modules stay independent in one app. `data` (Workers and Edge): as in scenario.mjs, the data
// and the compiler the app imports, since those entries do not carry them.
import { notBundledCheck, thrownBy } from './not-bundled.mjs';

/** Checks through `check(name, ok, detail)`; `step(name, fn)` turns a throw into a failed check. */
export async function tokensScenario(cc, fixture, { check, step, timings, expectedEntry, now, short, data }) {
  const tc = await step("import 'context-compactor/tokens'", () => cc.loadTokens());
  if (!check("import 'context-compactor/tokens'", !!tc && typeof tc.countTokens === 'function', tc ? Object.keys(tc).join(',') : 'not handed in')) return;
  if (expectedEntry !== undefined) {
    check(`'context-compactor/tokens' resolves to the '${expectedEntry}' entry`, tc.runtimeEntry === expectedEntry, `runtimeEntry=${JSON.stringify(tc.runtimeEntry)}`);
  }
  let early;
  try { tc.countTokens('hi'); } catch (e) { early = e; }
  check('tokens: countTokens before its own init() is a typed not_initialized (the main entry\'s init does not load it)',
    early instanceof tc.CompactorError && early.code === 'not_initialized', early?.message);
  if (data) notBundledCheck(tc, check, data, "tokens: loadEncoding('cl100k_base')", await thrownBy(() => tc.loadEncoding('cl100k_base')), 'cl100k_base');
  const t0 = now();
  const ok = await step('tokens: init() resolves', async () => {
    if (data) {
      await tc.init({ compiler: data.compiler });
      await Promise.all([tc.loadEncoding('cl100k_base', data.ranks.cl100k_base), tc.loadEncoding('qwen3', data.ranks.qwen3)]);
    }
    await tc.init({ encodings: ['o200k_base', 'cl100k_base', 'qwen3'] });
    return tc.isEncodingLoaded('o200k_base') && tc.isEncodingLoaded('cl100k_base') && tc.isEncodingLoaded('qwen3');
  });
  timings.tokensInitMs = Math.round(now() - t0);
  if (!check(`tokens: init({ encodings }) loads the counting module, both encodings and prebuilt qwen3${data ? " (cl100k_base, qwen3 and the compiler from the app's imports)" : ''}`, ok === true, `${timings.tokensInitMs} ms`)) return;
  await step('tokens: counts', () => {
    const cases = fixture?.cases ?? [];
    const bad = cases.filter((c) => tc.countTokens(c.text) !== c.o200k_base || tc.countTokens(c.text, 'cl100k_base') !== c.cl100k_base).map((c) => c.name);
    const prebuilt = fixture?.prebuilt ?? [];
    const badQwen = prebuilt.filter((c) => tc.countTokens(c.text, 'qwen3') !== c.qwen3).map((c) => c.name);
    check('tokens: counts match tiktoken (o200k, cl100k) and Python tokenizers (qwen3)', cases.length > 0 && prebuilt.length > 0 && bad.length === 0 && badQwen.length === 0,
      bad.length || badQwen.length ? short({ bad, badQwen }) : `${cases.length} + ${prebuilt.length} cases`);
  });
  if (fixture?.hf) {
    const loaded = await step('tokens: loadTokenizer(gemma3) through the tokenizer compiler', () => tc.loadTokenizer('gemma3_tokens', fixture.hf.tokenizer));
    await step('tokens: gemma3 counts', () => {
      const badHf = loaded ? fixture.hf.cases.filter((c) => tc.countTokens(c.text, 'gemma3_tokens') !== c.count).map((c) => c.name) : ['not loaded'];
      check('tokens: a tokenizer.json (Gemma 3, Gemini\'s vocabulary) counts exactly', badHf.length === 0, short(badHf));
    });
  } else {
    check('tokens: a tokenizer.json (Gemma 3) counts exactly', false, 'fixture has no hf tokenizer (scripts/fetch-tokenizers.sh)');
  }
  await step('tokens: countModelTokens', () => {
    const text = 'Count me for a model: 日本語, naïve café.';
    const gpt = tc.countModelTokens(text, 'openai/gpt-4o');
    const qwen = tc.countModelTokens(text, 'qwen/qwen3-32b');
    const claude = tc.countModelTokens(text, 'claude-sonnet-4-5');
    check('tokens: countModelTokens is exact for gpt-4o and Qwen 3 (loaded), an estimate by the factor for Claude',
      gpt.exact && gpt.tokens === tc.countTokens(text) && qwen.exact && qwen.counter === 'qwen3' && qwen.tokens === tc.countTokens(text, 'qwen3') &&
        !claude.exact && claude.ratio === tc.modelInfo('claude-sonnet-4-5').tokenRatio && claude.tokens === Math.ceil(gpt.tokens * claude.ratio),
      short({ gpt, qwen, claude }));
  });
  const messages = [
    { role: 'user', content: 'Find the slow requests.' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'grep', input: { pattern: 'slow' } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'grep', output: { type: 'text', value: 'GET /api 912ms' } }] },
  ];
  const tools = { grep: { description: 'Search files.', inputSchema: { jsonSchema: { type: 'object', properties: { pattern: { type: 'string' } } } } } };
  await step('tokens: countBreakdown', () => {
    const ours = tc.countBreakdown(messages, { tools });
    const theirs = cc.countBreakdown(messages, { tools });
    check('tokens: countBreakdown adds up and equals the main entry\'s', ours.total === ours.replyPriming + ours.messages.reduce((n, m) => n + m.total, 0) + ours.tools.total &&
      JSON.stringify(theirs) === JSON.stringify(ours), short({ total: ours.total, main: theirs?.total }));
  });
  let bad2;
  try { tc.countBreakdown([{ role: 'robot', content: 'x' }]); } catch (e) { bad2 = e; }
  check('tokens: bad input is a typed error naming the message', bad2 instanceof tc.CompactorError && bad2.code === 'invalid_message' && bad2.index === 0, short({ code: bad2?.code, index: bad2?.index }));
}
