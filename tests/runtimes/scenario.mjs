// The one scenario every runtime runs. Runtime-agnostic: no node:/Deno/Bun APIs, no I/O except
// through the package under test. Each runner loads `context-compactor` its own way and passes
// the module namespace in as `cc`.
//
// runScenario(cc, fixture, { expectedEntry, data }) -> [{ name, ok, detail }]
//
// `data` (Workers and Edge only; not-bundled.mjs): what their entries do not carry, imported by
// the app's bundle — cl100k_base, qwen3 and deepseek_v3's data and the tokenizer compiler. With
// it the scenario first checks that the package asks for it (a typed error giving the import
// line), then hands it over (loadEncoding(name, data), init({ compiler })). Without it (Node,
// Deno, Bun, Chromium) the entry finds all of it by itself.

import { makeBigText } from './big-text.mjs';
import { statelessRouteHandler } from './stateless.mjs';
import { tokensScenario } from './tokens.mjs';
import { notBundledCheck, thrownBy } from './not-bundled.mjs';

export { makeBigText };
export const CONTEXT_WINDOW = 16000;
export const BIG_TEXT_MIN_TOKENS = 100000;
const CALL_ID = 'call_search_1';
const TOOL_NAME = 'search';


export function makeConversation(bigText) {
  return [
    { role: 'system', content: 'You are a careful research assistant. Use tools when needed.' },
    { role: 'user', content: 'Search the logs for every slow request and tell me what stands out.' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me search the logs.' },
        { type: 'tool-call', toolCallId: CALL_ID, toolName: TOOL_NAME, input: { q: 'slow requests', limit: 5000 } },
      ],
    },
    {
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: CALL_ID, toolName: TOOL_NAME, output: { type: 'text', value: bigText } },
      ],
    },
    { role: 'assistant', content: [{ type: 'text', text: 'The search returned a large log; the ERROR lines cluster in src/router.' }] },
  ];
}

const isOffload = (x) => !!x && [x.type, x.strategy, x.kind, x.action].some((v) => typeof v === 'string' && /offload/i.test(v));
const short = (v, n = 300) => {
  let s;
  try { s = typeof v === 'string' ? v : JSON.stringify(v); } catch { s = String(v); }
  return s && s.length > n ? s.slice(0, n) + `... (${s.length} chars)` : s;
};
const errText = (e) => (e && (e.stack || e.message)) ? String(e.stack || e.message).split('\n').slice(0, 4).join(' | ') : String(e);

/** Index of the message containing a part of `type` with our toolCallId, and all such indexes. */
function partIndexes(messages, type) {
  const idx = [];
  messages.forEach((m, i) => {
    if (Array.isArray(m?.content) && m.content.some((p) => p?.type === type && p.toolCallId === CALL_ID)) idx.push(i);
  });
  return idx;
}

function toolResultPart(messages) {
  for (const m of messages) {
    if (m?.role !== 'tool' || !Array.isArray(m.content)) continue;
    const p = m.content.find((q) => q?.type === 'tool-result' && q.toolCallId === CALL_ID);
    if (p) return p;
  }
  return undefined;
}

export async function runScenario(cc, fixture, { expectedEntry, data } = {}) {
  const results = [];
  const check = (name, ok, detail = '') => { results.push({ name, ok: !!ok, detail: ok ? detail : (detail || 'failed') }); return !!ok; };
  // Runs fn; a throw becomes a failed check instead of aborting the whole scenario.
  const step = async (name, fn) => {
    try { return await fn(); } catch (e) { check(name, false, 'threw: ' + errText(e)); return undefined; }
  };
  const timings = {};
  const now = () => (globalThis.performance?.now ? performance.now() : Date.now());

  // (0) which entry did the runtime's module resolution pick?
  if (expectedEntry !== undefined) {
    check(`export condition resolves to the '${expectedEntry}' entry`, cc.runtimeEntry === expectedEntry,
      `runtimeEntry=${JSON.stringify(cc.runtimeEntry)}`);
  }

  // (a) init, idempotent
  let t0 = now();
  const initOk = await step('init() resolves', async () => {
    await cc.init();
    await cc.init();
    return true;
  });
  timings.initMs = Math.round(now() - t0);
  if (initOk) check('init() resolves (twice, idempotent)', true, `${timings.initMs} ms`);
  if (!initOk) return results; // nothing else can work

  // (a2) o200k_base comes with init; cl100k_base loads on demand, the way this runtime loads
  // wasm (a file, a fetch, a CompiledWasm or ?module import)
  check('init() loaded o200k_base, not cl100k_base', cc.isEncodingLoaded('o200k_base') && !cc.isEncodingLoaded('cl100k_base'));
  let notLoaded;
  try { cc.countTokens('hi', 'cl100k_base'); } catch (e) { notLoaded = e; }
  check('countTokens(cl100k_base) before loading is a typed encoding_not_loaded', notLoaded?.code === 'encoding_not_loaded', notLoaded?.message);
  // Where the entry bundles o200k_base only, the count's error gives the import line at once
  // (not a loadEncoding that cannot work there).
  if (data) notBundledCheck(cc, check, data, "countTokens('hi', 'cl100k_base')", notLoaded, 'cl100k_base');
  if (data) notBundledCheck(cc, check, data, "loadEncoding('cl100k_base')", await thrownBy(() => cc.loadEncoding('cl100k_base')), 'cl100k_base');
  t0 = now();
  const cl100kOk = await step('loadEncoding(cl100k_base) resolves', async () => {
    const source = data?.ranks.cl100k_base; // none: the entry's own loading
    await Promise.all([cc.loadEncoding('cl100k_base', source), cc.loadEncoding('cl100k_base', source)]);
    return cc.isEncodingLoaded('cl100k_base');
  });
  check(`loadEncoding(cl100k_base${data ? ", the app's import" : ''}) loads it (concurrent calls share one load)`, cl100kOk === true, `${Math.round(now() - t0)} ms`);

  // (b) exact token counts from the fixture
  const cases = Array.isArray(fixture?.cases) ? fixture.cases : [];
  check('token-count fixture has cases', cases.length > 0, `${cases.length} cases`);
  t0 = now();
  for (const enc of ['o200k_base', 'cl100k_base']) {
    const bad = [];
    let n = 0;
    for (const c of cases) {
      if (typeof c[enc] !== 'number') continue;
      n++;
      let got;
      try { got = cc.countTokens(c.text, enc); } catch (e) { got = 'threw ' + (e?.message ?? e); }
      if (got !== c[enc]) bad.push(`${c.name}: got ${got}, want ${c[enc]}`);
    }
    check(`countTokens(${enc}) matches fixture`, n > 0 && bad.length === 0,
      bad.length ? `${bad.length}/${n} mismatched: ${short(bad.slice(0, 8).join('; '), 800)}` : `${n} cases`);
  }
  timings.fixtureCountMs = Math.round(now() - t0);

  // (b2) a non-OpenAI family loaded on demand from its tokenizer.json: Gemma 3, the vocabulary
  // of Gemini 2.x / 3, counted as Hugging Face `tokenizers` counts it
  const hf = fixture?.hf;
  if (check('fixture carries a tokenizer.json (scripts/fetch-tokenizers.sh)', typeof hf?.tokenizer === 'string')) {
    if (data) {
      notBundledCheck(cc, check, data, `loadTokenizer('${hf.name}')`, await thrownBy(() => cc.loadTokenizer(hf.name, hf.tokenizer)), 'compiler');
      await step('init({ compiler })', () => cc.init({ compiler: data.compiler }));
    }
    t0 = now();
    const info = await step(`loadTokenizer(${hf.name}) resolves`, () => cc.loadTokenizer(hf.name, hf.tokenizer));
    timings.loadTokenizerMs = Math.round(now() - t0);
    if (info) {
      const bad = hf.cases.filter((c) => cc.countTokens(c.text, hf.name) !== c.count)
        .map((c) => `${c.name}: got ${cc.countTokens(c.text, hf.name)}, want ${c.count}`);
      check(`countTokens(${hf.name}) matches Python tokenizers (Gemini's vocabulary)`, info.tokens === 262144 && bad.length === 0,
        bad.length ? short(bad.slice(0, 8).join('; '), 800) : `${hf.cases.length} cases, loaded in ${timings.loadTokenizerMs} ms`);
    }
  }

  // (b3) the open-weight tokenizers the package ships prebuilt, loaded on demand as its own
  // data-only .wasm: Qwen 3 by init({ encodings }), DeepSeek V3 by createCompactor for its model
  const prebuilt = Array.isArray(fixture?.prebuilt) ? fixture.prebuilt : [];
  if (check('fixture carries the prebuilt tokenizers\' counts', prebuilt.length >= 70, `${prebuilt.length} cases`)) {
    if (data) notBundledCheck(cc, check, data, "init({ encodings: ['qwen3'] })", await thrownBy(() => cc.init({ encodings: ['qwen3'] })), 'qwen3');
    t0 = now();
    const qwenOk = await step(`${data ? "loadEncoding('qwen3', the app's import), then " : ''}init({ encodings: ['qwen3'] }) resolves`, async () => {
      if (data) await cc.loadEncoding('qwen3', data.ranks.qwen3);
      await cc.init({ encodings: ['qwen3'] });
      return cc.isEncodingLoaded('qwen3');
    });
    timings.loadQwen3Ms = Math.round(now() - t0);
    if (qwenOk) {
      const bad = prebuilt.filter((c) => cc.countTokens(c.text, 'qwen3') !== c.qwen3)
        .map((c) => `${c.name}: got ${cc.countTokens(c.text, 'qwen3')}, want ${c.qwen3}`);
      check('countTokens(qwen3), prebuilt data, matches Python tokenizers', bad.length === 0,
        bad.length ? short(bad.slice(0, 8).join('; '), 800) : `${prebuilt.length} cases, loaded in ${timings.loadQwen3Ms} ms`);
    }
    if (data) {
      const error = await thrownBy(() => cc.createCompactor({ model: 'deepseek-chat', store: new cc.MemoryStore() }));
      notBundledCheck(cc, check, data, "createCompactor({ model: 'deepseek-chat' })", error, 'deepseek_v3');
    }
    t0 = now();
    const deepseek = await step(`${data ? "loadEncoding('deepseek_v3', the app's import), then " : ''}createCompactor({ model: 'deepseek-chat' }) loads deepseek_v3`, async () => {
      if (data) await cc.loadEncoding('deepseek_v3', data.ranks.deepseek_v3);
      return cc.createCompactor({ model: 'deepseek-chat', store: new cc.MemoryStore() });
    });
    timings.loadDeepseekMs = Math.round(now() - t0);
    if (deepseek) {
      const bad = prebuilt.filter((c) => cc.countTokens(c.text, 'deepseek_v3') !== c.deepseek_v3)
        .map((c) => `${c.name}: got ${cc.countTokens(c.text, 'deepseek_v3')}, want ${c.deepseek_v3}`);
      check('createCompactor(deepseek-chat) counts with deepseek_v3 exactly (no factor), matching Python tokenizers',
        deepseek.model.tokenizer === 'deepseek_v3' && deepseek.model.tokenRatio === 1 && bad.length === 0,
        bad.length ? short(bad.slice(0, 8).join('; '), 800) : `${prebuilt.length} cases, loaded in ${timings.loadDeepseekMs} ms`);
    }
  }

  // (c) a conversation with one huge tool result
  const bigText = makeBigText();
  const messages = makeConversation(bigText);
  const snapshot = JSON.stringify(messages);
  t0 = now();
  const bigTokens = await step('countTokens(bigText)', () => cc.countTokens(bigText, 'o200k_base'));
  timings.bigCountMs = Math.round(now() - t0);
  if (bigTokens !== undefined) {
    check(`big tool output is >= ${BIG_TEXT_MIN_TOKENS} o200k tokens`, bigTokens >= BIG_TEXT_MIN_TOKENS,
      `${bigTokens} tokens, ${bigText.length} chars, counted in ${timings.bigCountMs} ms`);
  }

  // (d) compaction
  const store = new cc.MemoryStore();
  const compactor = await step('createCompactor()', () =>
    cc.createCompactor({ contextWindow: CONTEXT_WINDOW, model: 'gpt-4o', store }));
  if (!compactor) return finish();

  const before = await step('usage() before', () => compactor.usage(messages));
  if (before) {
    check('usage() before manage is over the window', before.tokens > CONTEXT_WINDOW && before.window === CONTEXT_WINDOW,
      short(before));
  }

  const dry = await step('plan() dry run', () => compactor.plan(messages));
  if (dry) {
    const offloads = (dry.actions || []).filter(isOffload);
    const listed = await step('store.list() after plan()', () => store.list(''));
    check('plan() is a dry run with one offload action, and plain data',
      offloads.length === 1 && typeof offloads[0].path === 'string' && Array.isArray(listed) && listed.length === 0 &&
        JSON.stringify(JSON.parse(JSON.stringify(dry))) === JSON.stringify(dry),
      `offload actions=${offloads.length} path=${offloads[0]?.path} store entries=${short(listed)}`);
  }

  t0 = now();
  const res = await step('manage()', () => compactor.manage(messages));
  timings.manageMs = Math.round(now() - t0);
  if (!res) return finish();
  check('manage() returns { messages, events, plan }',
    Array.isArray(res.messages) && Array.isArray(res.events) && res.plan && Array.isArray(res.plan.actions),
    `keys=${Object.keys(res)} in ${timings.manageMs} ms`);
  check('manage() does not mutate its input', JSON.stringify(messages) === snapshot);

  const actions = (res.plan?.actions || []).filter(isOffload);
  const events = (res.events || []).filter(isOffload);
  const path = actions[0]?.path;
  const ev = events[0];
  check('exactly one offload action and one applied offload event for its path',
    actions.length === 1 && events.length === 1 && typeof path === 'string' && path.length > 0 &&
      (ev.status === undefined || ev.status === 'applied') && (ev.path == null || ev.path === path),
    `actions=${short(res.plan?.actions)} events=${short(res.events)}`);

  const out = res.messages || [];
  const part = toolResultPart(out);
  const partJson = part ? JSON.stringify(part.output) : '';
  check('the tool result now references the offload path',
    !!path && partJson.includes(path) && !partJson.includes(bigText),
    `output=${short(part?.output, 400)}`);

  if (path) {
    const stored = await step('store.read(path)', () => store.read(path));
    check('store.read(path) returns the original text exactly',
      typeof stored === 'string' && stored.length === bigText.length && stored === bigText,
      `stored length=${stored?.length}, original length=${bigText.length}`);
  }

  const after = await step('usage() after', () => compactor.usage(out));
  if (after) check(`usage() after manage is <= ${CONTEXT_WINDOW}`, after.tokens <= CONTEXT_WINDOW, short(after));

  const calls = partIndexes(out, 'tool-call');
  const results_ = partIndexes(out, 'tool-result');
  const callPart = calls.length ? out[calls[0]].content.find((p) => p.type === 'tool-call') : undefined;
  check('tool-call/tool-result pair intact (same id, result after call)',
    calls.length === 1 && results_.length === 1 && results_[0] > calls[0] && out[calls[0]].role === 'assistant' &&
      out[results_[0]].role === 'tool' && callPart?.toolName === TOOL_NAME && part?.toolName === TOOL_NAME,
    `call at ${calls}, result at ${results_}`);
  check('message count and roles unchanged',
    out.length === messages.length && out.every((m, i) => m.role === messages[i].role),
    `${messages.length} -> ${out.length}: ${out.map((m) => m.role)}`);

  // idempotence
  const listBefore = await step('store.list()', () => store.list(''));
  const res2 = await step('second manage()', () => compactor.manage(out));
  if (res2) {
    const again = [...(res2.plan?.actions || []).filter(isOffload), ...(res2.events || []).filter(isOffload)];
    const listAfter = await step('store.list() after second manage()', () => store.list(''));
    check('second manage() is idempotent (no new offload, same messages, same store)',
      again.length === 0 && JSON.stringify(res2.messages) === JSON.stringify(out) &&
        JSON.stringify(listAfter) === JSON.stringify(listBefore),
      `new offloads=${again.length}, store=${short(listAfter)}`);
  }

  // Tier 3: a long chat over a small window is summarized after its transcript is stored; a
  // failing summarizer falls back to the heuristic summary.
  const chat = [{ role: 'system', content: 'You are a helpful agent.' }];
  for (let t = 0; t < 40; t++) {
    chat.push({ role: 'user', content: `Question ${t}: ` + 'budget window cache parser '.repeat(40) + t });
    chat.push({ role: 'assistant', content: [{ type: 'text', text: `Answer ${t}: ` + 'plan summary tool result '.repeat(60) + t }] });
  }
  for (const [label, summarize] of [['summarizer', async (r) => `Summary of ${r.messages.length} request message.`], ['failing summarizer', async () => { throw new Error('offline'); }]]) {
    const tier3Store = new cc.MemoryStore();
    const c3 = await step(`createCompactor (tier 3, ${label})`, () => cc.createCompactor({ contextWindow: 8000, store: tier3Store, summarize }));
    if (!c3) continue;
    const r3 = await step(`manage() with tier 3 (${label})`, () => c3.manage(chat));
    if (!r3) continue;
    const transcript = r3.plan.actions.find((a) => a.type === 'save-transcript');
    const stored = transcript && await step('read transcript', () => tier3Store.read(transcript.path));
    const event = r3.events.find((e) => e.strategy === 'summarize');
    check(`tier 3 (${label}): transcript stored byte for byte, summary applied or fallback, under the target`,
      stored === JSON.stringify(chat, null, 2) && event?.status === (label === 'summarizer' ? 'applied' : 'fallback') &&
        r3.messages[0].content === chat[0].content && String(r3.messages[1].content).includes(transcript.path) &&
        c3.usage(r3.messages).tokens <= r3.plan.trigger.target,
      short({ event, after: c3.usage(r3.messages), messages: r3.messages.length }));
  }
  // Loop context and prompt segments go through the same binding on every runtime.
  await step('loop context and prompt segments', () => {
    let state = cc.loopContext.create('Ship the feature', 0);
    let request = null;
    for (let i = 1; i <= 10; i++) {
      const next = cc.loopContext.addIteration(state, { unixMs: i, output: `<progress>step ${i}</progress>` });
      state = next.state;
      request = next.request ?? request;
    }
    const done = request && cc.loopContext.applySummary(state, request.id, 'Steps 1-5 done.');
    const prompt = done && cc.loopContext.buildPrompt(done);
    check('loop context: window of 5, a summary due at 10, prompt with goal and summary',
      state.iterations.length === 5 && !!request && /# Goal\nShip the feature/.test(prompt) && prompt.includes('Steps 1-5 done.'),
      short({ iterations: state.iterations.length, request: request?.id }));
    check('prompt segments name the recovery paths and the memory file',
      cc.recoverySegment().includes('/conversation_history/') && cc.memorySegment().includes('/memories/AGENTS.md'));
  });
  // The host's stores and AI SDK helpers are plain JS over the core: the same in every runtime.
  await step('host features', async () => {
    const kvData = new Map();
    const kv = {
      get: async (k) => kvData.get(k) ?? null,
      put: async (k, v) => void kvData.set(k, v),
      delete: async (k) => void kvData.delete(k),
      list: async ({ prefix }) => ({ keys: [...kvData.keys()].filter((k) => k.startsWith(prefix)).map((name) => ({ name })), list_complete: true }),
    };
    const memories = new cc.MemoryStore();
    await memories.write('/memories/AGENTS.md', 'Always run the linter.');
    const store = new cc.CompositeStore(cc.KvStore.cloudflareKv(kv, { prefix: 'sessions/s1' }), { '/memories/': memories });
    const summaryModel = { specificationVersion: 'v2', modelId: 'fake', doGenerate: async ({ prompt, maxOutputTokens }) => ({ content: [{ type: 'text', text: `Summary (${prompt.length} messages, cap ${maxOutputTokens}).` }] }) };
    const c = await cc.createCompactor({ contextWindow: CONTEXT_WINDOW, store, summarize: cc.summarizer(summaryModel), statePath: '/state/compactor.json' });
    const tools = c.wrapTools({ search: { execute: async () => makeBigText() } });
    const preview = await tools.search.execute({}, { toolCallId: 'w1' });
    const path = String(preview).match(/\/tool_outputs\/[\w.-]+/)?.[0];
    const page = path && await c.tools().read_file.execute({ path, offset: 0, limit: 2 });
    const hits = await c.tools().grep.execute({ pattern: 'linter' });
    const system = await c.systemPrompt('Base.');
    check('wrapTools offloads at return into a KV store; read_file and grep read back through a composite store',
      !!path && kvData.get(`sessions/s1${path}`) === makeBigText() && /^1\t/.test(page) && hits.startsWith('/memories/AGENTS.md:1:') &&
        system.includes('Always run the linter.') && !kvData.has('sessions/s1/state/compactor.json'),
      short({ preview: String(preview).slice(0, 80), keys: [...kvData.keys()] }));
    const r = await c.manage(chat);
    const summary = r.events.find((e) => e.strategy === 'summarize');
    check('summarizer(model) writes the summary through a model object; the state is saved once, after manage()',
      summary?.status === 'applied' && String(r.messages[1].content).includes('Summary (2 messages, cap') &&
        JSON.parse(kvData.get('sessions/s1/state/compactor.json') ?? '{}').stats?.compactions === c.stats().compactions, short(summary));
    const marked = cc.anthropicCacheControl(r.messages).filter((m) => m.providerOptions?.anthropic?.cacheControl);
    check('anthropicCacheControl marks the system prompt and the newest message', marked.length === 2 && marked[0].role === 'system');
  });
  await hostileInput(cc, check, step, timings);
  await step('stateless route handler', async () => {
    const r = await statelessRouteHandler(cc, { turns: 24, images: true });
    check('a stateless route handler (new compactor per request, state in a store, raw history) sends what a long-lived compactor and fresh objects send',
      r.identical && r.summaries[0] >= 2 && r.summaries.every((n) => n === r.summaries[0]) && r.breaks.every((n) => n === r.breaks[0]) && r.stateBytes > 0,
      short(r));
    check('screenshots (bytes) of summarized turns are in their transcripts as base64, and name them alike in every shape',
      r.identical && r.transcriptImages >= 1 && r.placeholders === 0,
      JSON.stringify({ transcriptImages: r.transcriptImages, placeholders: r.placeholders }));
  });
  await step('stateless route handler after idle time', async () => {
    const r = await statelessRouteHandler(cc, { turns: 24, idle: true });
    check('after half an hour away (past the cache lifetime) every shape takes the same deferred edits at the same call',
      r.identical && r.expired === 3 && r.coldBreaks >= 1 && r.breaks.every((n) => n === r.breaks[0]),
      short(r));
  });
  await step('overflow recovery', async () => {
    // The middleware as the AI SDK drives it (transformParams, then wrapGenerate), with a fake
    // LanguageModelV3-shaped model whose first doGenerate throws Anthropic's overflow error.
    const events = [];
    const compactor = await cc.createCompactor({ model: 'claude-sonnet-4-5', contextWindow: CONTEXT_WINDOW, store: new cc.MemoryStore(), onEvent: (e) => events.push(e) });
    const text = (seed) => Array.from({ length: 200 }, (_, i) => `word${(i * 7 + seed) % 97}`).join(' ');
    const prompt = [{ role: 'system', content: 'You are a research agent.' }];
    for (let t = 0; t < 10; t++) {
      prompt.push({ role: 'user', content: [{ type: 'text', text: `Question ${t}: ${text(t)}` }] });
      prompt.push({ role: 'assistant', content: [{ type: 'text', text: `Answer ${t}: ${text(t + 50)}` }] });
    }
    prompt.push({ role: 'user', content: [{ type: 'text', text: 'What did we decide?' }] });
    const sent = [];
    const overflow = new Error('prompt is too long: 21345 tokens > 16000 maximum');
    overflow.statusCode = 400;
    overflow.responseBody = JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: overflow.message } });
    const model = {
      specificationVersion: 'v3', provider: 'fake', modelId: 'fake-claude', supportedUrls: {},
      async doGenerate(options) {
        sent.push(options.prompt);
        if (sent.length === 1) throw overflow;
        return { content: [{ type: 'text', text: 'Recovered.' }], finishReason: { unified: 'stop', raw: 'end_turn' }, usage: {}, warnings: [] };
      },
      async doStream() { throw new Error('not used'); },
    };
    const mw = compactor.middleware();
    const params = await mw.transformParams({ params: { prompt }, type: 'generate' });
    const result = await mw.wrapGenerate({ doGenerate: () => model.doGenerate(params), doStream: () => model.doStream(params), params, model });
    const marked = events.filter((e) => e.overflow);
    check('overflow recovery: Anthropic\'s "prompt is too long" is compacted once and retried once; calibration learns the count',
      result.content[0].text === 'Recovered.' && sent.length === 2 && marked.length > 0 && new Set(marked.map((e) => e.call)).size === 1 &&
        marked.every((e) => e.overflow.provider === 'anthropic' && e.overflow.reportedTokens === 21345 && e.overflow.attempt === 1) &&
        JSON.stringify(sent[1]).length < JSON.stringify(sent[0]).length && compactor.state().calibration?.samples === 1,
      short({ calls: sent.length, events: marked.map((e) => e.strategy), calibration: compactor.state().calibration }));
    let second;
    const again = { ...model, async doGenerate() { throw overflow; } };
    try {
      await mw.wrapGenerate({ doGenerate: () => again.doGenerate(), doStream: () => again.doStream(), params, model: again });
    } catch (e) {
      second = e;
    }
    const other = new Error('Invalid value for tool_choice');
    other.statusCode = 400;
    let passed;
    try {
      await mw.wrapGenerate({ doGenerate: async () => { throw other; }, params, model });
    } catch (e) {
      passed = e;
    }
    check('two overflows in a row end with a typed context_overflow; a non-overflow 400 passes through unchanged',
      second instanceof cc.CompactorError && second.code === 'context_overflow' && second.cause === overflow && passed === other,
      short({ code: second?.code, message: second?.message, passed: passed?.message }));
  });
  await tokensScenario(cc, fixture, { check, step, timings, expectedEntry, now, short, data });
  return finish();

  function finish() {
    results.timings = timings;
    return results;
  }
}

/** Text of about `mb` megabytes, like a pasted log (deterministic). */
export function makePastedLog(mb) {
  const lines = [];
  let size = 0;
  let s = 12345;
  for (let i = 0; size < mb * 1e6; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    const line = `2026-11-25T09:${String(i % 60).padStart(2, '0')}:00Z worker-${s % 97} GET /api/v1/items/${s % 100000} ${200 + (s % 5)} ${s % 997}ms`;
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join('\n');
}

// Issue 17: lone UTF-16 surrogates (strings cut mid-emoji) are counted as the official tiktoken
// counts them and come back unchanged, in messages and in the store; nesting past 127 levels is a
// typed error; a huge pasted user message (5 MB here, 52 MB in js/test/hostile.test.mjs) neither
// hangs nor throws. The same checks in every runtime: string encoding across the wasm boundary
// (TextEncoder/TextDecoder) and the engine's JSON.stringify stack depth differ between engines.
async function hostileInput(cc, check, step, timings) {
  const now = () => (globalThis.performance?.now ? performance.now() : Date.now());
  const cut = '😀'.slice(0, 1);
  const tail = '😀'.slice(1);
  // Official tiktoken 0.14.0 (scripts/oracle): 7 tokens in both encodings (each lone surrogate
  // encoded as U+FFFD).
  const cutText = `cut ${cut} here\nand ${tail} there`;
  check('lone surrogates count as tiktoken counts them (7 in o200k_base and cl100k_base)',
    cc.countTokens(cutText, 'o200k_base') === 7 && cc.countTokens(cutText, 'cl100k_base') === 7,
    `${cc.countTokens(cutText, 'o200k_base')} / ${cc.countTokens(cutText, 'cl100k_base')}`);

  await step('lone surrogates round-trip', async () => {
    const big = makeBigText().split('\n').map((line, i) => (i % 100 === 0 ? line + ' ' + cut : i % 101 === 0 ? tail + line : line)).join('\n') + cut;
    const messages = [
      { role: 'system', content: `agent ${tail}` },
      { role: 'user', content: [{ type: 'text', text: `part ends mid-emoji ${cut}` }, { type: 'text', text: `${tail} next part` }] },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: `id_${cut}`, toolName: `search${tail}`, input: { [`q${cut}`]: [tail, { x: cut }] } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: `id_${cut}`, toolName: `search${tail}`, output: { type: 'text', value: big } }] },
      { role: 'user', content: `thanks ${cut}` },
    ];
    const store = new cc.MemoryStore();
    const compactor = await cc.createCompactor({ contextWindow: CONTEXT_WINDOW, store });
    const before = compactor.usage(messages);
    const result = await compactor.manage(messages);
    const offload = result.plan.actions.find((a) => a.type === 'offload');
    const stored = offload && await store.read(offload.path);
    const unchanged = [0, 1, 2, 4].every((i) => JSON.stringify(result.messages[i]) === JSON.stringify(messages[i]) &&
      result.messages[i].content !== undefined);
    const again = await compactor.manage(result.messages);
    check('lone surrogates: usage/plan/manage work, the offloaded output is stored as the original string, unchanged messages come back identical',
      before.tokens > CONTEXT_WINDOW && stored === big && unchanged && result.messages[2].content[0].toolCallId === `id_${cut}` &&
        result.messages[4].content === `thanks ${cut}` && again.events.length === 0,
      short({ before, stored: stored?.length, original: big.length, unchanged, events: result.events }));
  });

  await step('deep nesting', async () => {
    const compactor = await cc.createCompactor({ contextWindow: CONTEXT_WINDOW });
    const deep = {};
    let node = deep;
    for (let i = 0; i < 10_000; i++) node = node.a = {};
    let error;
    try {
      compactor.usage([{ role: 'user', content: 'hi' }, { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c', toolName: 't', input: deep }] }]);
    } catch (e) {
      error = e;
    }
    check('a tool input nested 10,000 levels is a typed invalid_message naming the message and field',
      error instanceof cc.CompactorError && error.code === 'invalid_message' && error.index === 1 &&
        error.field === 'content[0].input' + '.a'.repeat(123) && /nested deeper than 127 levels/.test(error.message),
      short({ name: error?.name, code: error?.code, index: error?.index, field: error?.field?.slice(0, 40), message: error?.message?.slice(0, 120) }));
    check('the compactor still works after the error', compactor.usage([{ role: 'user', content: 'hi' }]).tokens > 0);
  });

  await step('huge user message', async () => {
    const log = makePastedLog(5);
    const messages = [{ role: 'system', content: 'agent' }, { role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }, { role: 'user', content: log }];
    const store = new cc.MemoryStore();
    const compactor = await cc.createCompactor({ model: 'gpt-4o', store });
    let t0 = now();
    const count = cc.countTokens(log, 'o200k_base');
    const usage = compactor.usage(messages);
    timings.hugeUsageMs = Math.round(now() - t0);
    t0 = now();
    const result = await compactor.manage(messages);
    timings.hugeManageMs = Math.round(now() - t0);
    const offload = result.events.find((e) => e.strategy === 'offload');
    const stored = offload && await store.read(offload.path);
    check('a 5 MB pasted user message: usage counts it; manage offloads it byte for byte, its preview and path stay',
      usage.tokens > count && usage.tokens < count + 100 && result.messages.length === 4 &&
        result.messages.map((m) => m.role).join() === 'system,user,assistant,user' && typeof result.messages[3].content === 'string' &&
        stored === log && result.messages[3].content.includes(offload.path) && result.messages[3].content.length < 5_000 &&
        offload.toolCallId === null,
      `${(log.length / 1e6).toFixed(1)} M chars, ${count} tokens; count + usage ${timings.hugeUsageMs} ms, manage ${timings.hugeManageMs} ms; notes ${short(result.plan.notes.map((n) => n.type))}`);
  });
}
