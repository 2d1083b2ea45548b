// Found by fuzzing the public API with generated conversations across host shapes (a long-lived
// compactor, fresh message objects each call, a new compactor per call with the saved state):
// each test failed before its fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';

await init();
const words = (n, seed) => Array.from({ length: n }, (_, i) => `w${(i * 7 + seed) % 101}`).join(' ');
const copy = (messages) =>
  messages.map((m) => ({ ...m, content: Array.isArray(m.content) ? m.content.map((p) => (p.type === 'image' ? { ...p, image: p.image instanceof URL ? new URL(p.image.href) : new Uint8Array(p.image) } : { ...p })) : m.content }));

for (const kind of ['bytes', 'url']) {
  test(`an image (${kind}) in a dropped span is in its transcript, and every host shape names that transcript alike`, async () => {
    const image = () => (kind === 'url' ? new URL('https://example.com/cat.png') : new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 1, 2, 3]));
    const config = { contextWindow: 4_000, history: { strategy: 'truncate' } };
    const longLived = await createCompactor(config);
    const fresh = await createCompactor(config); // fresh objects each call
    const shared = new MemoryStore();
    const raw = [{ role: 'system', content: 'You are an agent.' }];
    let checked = 0;
    let shown = 0;
    for (let t = 0; t < 30; t++) {
      raw.push({ role: 'user', content: t % 8 === 0 ? [{ type: 'text', text: `look ${t}` }, { type: 'image', image: image(), mediaType: 'image/png' }] : `Q ${t}: ${words(120, t)}` });
      const a = await longLived.manage(raw);
      const b = await fresh.manage(copy(raw));
      const perCall = await createCompactor({ ...config, store: shared, statePath: '/state.json' });
      const c = await perCall.manage(copy(raw));
      perCall.dispose();
      assert.equal(JSON.stringify(b.messages), JSON.stringify(a.messages), `turn ${t}: fresh objects`);
      assert.equal(JSON.stringify(c.messages), JSON.stringify(a.messages), `turn ${t}: a new compactor with the state`);
      // The images still in the prompt come back as the app's values (not placeholders or strings).
      for (const part of a.messages.flatMap((m) => (Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image') : []))) {
        assert.ok(kind === 'url' ? part.image instanceof URL : part.image instanceof Uint8Array, `turn ${t}`);
        shown += 1;
      }
      const saved = a.plan.actions.find((x) => x.type === 'save-transcript');
      if (saved) {
        const text = await longLived.store.read(saved.path);
        assert.ok(!text.includes('$ccRef'), `turn ${t}: the transcript holds a placeholder`);
        const images = JSON.parse(text).flatMap((m) => (Array.isArray(m.content) ? m.content.filter((p) => p.type === 'image') : []));
        for (const part of images) assert.equal(part.image, kind === 'url' ? 'https://example.com/cat.png' : Buffer.from(image()).toString('base64'));
        checked += images.length;
        assert.equal(await shared.read(saved.path), text, `turn ${t}: the same transcript`);
      }
      raw.push({ role: 'assistant', content: `Answer ${t}: ${words(120, t + 5)}` });
    }
    assert.ok(checked >= 2, `images checked in transcripts: ${checked}`);
    assert.ok(shown > 0, 'images stayed in some prompts');
  });
}

for (const strategy of ['summarize', 'truncate']) {
  test(`a ${strategy}d span whose first message was a user paste offloaded in the same plan is recognised on replay`, async () => {
    const calls = { longLived: 0, fresh: 0, stateless: 0 };
    const with_ = (who) => (strategy === 'summarize' ? { summarize: async (r) => (calls[who]++, `Summary of ${r.prompt.length} chars.`) } : {});
    const config = { contextWindow: 3_000, history: { strategy } };
    const longLived = await createCompactor({ ...config, ...with_('longLived') });
    const fresh = await createCompactor({ ...config, ...with_('fresh') });
    const store = new MemoryStore();
    const raw = [{ role: 'system', content: 'You are an agent.' }];
    let spans = 0;
    for (let t = 0; t < 12; t++) {
      // Turn 0 pastes a log over the user-text offload threshold (25 % of the window).
      raw.push({ role: 'user', content: t === 0 ? Array.from({ length: 400 }, (_, i) => `log line ${i} ${words(6, i)}`).join('\n') : `Question ${t}: ${words(60, t)}` });
      const a = await longLived.manage(raw);
      const b = await fresh.manage(structuredClone(raw));
      const perCall = await createCompactor({ ...config, ...with_('stateless'), store, statePath: '/s.json' });
      const c = await perCall.manage(structuredClone(raw));
      perCall.dispose();
      spans = Math.max(spans, b.plan.replayed.spans);
      assert.equal(JSON.stringify(b.messages), JSON.stringify(a.messages), `turn ${t}: fresh objects`);
      assert.equal(JSON.stringify(c.messages), JSON.stringify(a.messages), `turn ${t}: a new compactor with the state`);
      raw.push({ role: 'assistant', content: `Answer ${t}: ${words(60, t + 3)}` });
    }
    assert.ok(spans >= 1, 'the span was replayed');
    if (strategy === 'summarize') assert.deepEqual(calls, { longLived: 1, fresh: 1, stateless: 1 });
  });
}

test('a user text offloaded for a preview longer in bytes (but fewer tokens) replays from the raw history: every host shape names the same transcript', async () => {
  // 232 bytes, 120 tokens: over a 100-token threshold; its preview has fewer tokens but 329 bytes.
  const dense = Array.from({ length: 60 }, (_, i) => `${(i * 7919) % 1000}.`).join('');
  const config = { model: 'gpt-4o', contextWindow: 4_000, offload: { userThresholdTokens: 100 }, summarize: async (r) => `Summary of ${r.prompt.length} chars.` };
  const longLived = await createCompactor(config);
  const fresh = await createCompactor(config);
  const store = new MemoryStore();
  const raw = [{ role: 'system', content: 'You are an agent.' }];
  let offloaded = false;
  let transcripts = 0;
  for (let t = 0; t < 14; t++) {
    raw.push({ role: 'user', content: t === 0 ? dense : `Question ${t}: ${words(30, t)}` });
    const a = await longLived.manage(raw);
    const b = await fresh.manage(structuredClone(raw));
    const perCall = await createCompactor({ ...config, store, statePath: '/s.json' });
    const c = await perCall.manage(structuredClone(raw));
    perCall.dispose();
    if (t === 0) {
      const replace = a.plan.actions.find((x) => x.type === 'offload')?.replace;
      offloaded = replace !== undefined && Buffer.byteLength(replace.value) > Buffer.byteLength(dense);
    }
    assert.equal(JSON.stringify(b.messages), JSON.stringify(a.messages), `turn ${t}: fresh objects`);
    assert.equal(JSON.stringify(c.messages), JSON.stringify(a.messages), `turn ${t}: a new compactor with the state`);
    transcripts += a.plan.actions.filter((x) => x.type === 'save-transcript').length;
    raw.push({ role: 'assistant', content: `Answer ${t}: ${words(200, t + 3)}` });
  }
  assert.ok(offloaded, 'the premise: the text is offloaded for a preview longer in bytes');
  assert.ok(transcripts >= 1, 'a span was summarized');
});

test('a pinned call whose result is offloaded in the same plan counts at its size after the offload (one call does all, a re-plan does nothing)', async () => {
  const messages = [{ role: 'system', content: 'You are an agent.' }];
  for (let t = 0; t < 7; t++) messages.push({ role: 'user', content: `Q ${t}: ${words(500, t)}` }, { role: 'assistant', content: `A ${t}: ${words(500, t + 1)}` });
  messages.push(
    { role: 'user', content: 'read the file' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'read_logs', input: { path: '/var/log/x' }, providerOptions: { contextCompactor: { pin: true } } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_logs', output: { type: 'text', value: Array.from({ length: 4_000 }, (_, i) => `log ${i} ${words(4, i)}`).join('\n') } }] },
  );
  const compactor = await createCompactor({ contextWindow: 16_000, summarize: async () => 'Summary.', background: false });
  const first = await compactor.manage(messages);
  assert.ok(!first.plan.notes.some((n) => n.type === 'fixed-over-trigger'), JSON.stringify(first.plan.notes.map((n) => n.type)));
  assert.ok(compactor.usage(first.messages).tokens <= first.plan.trigger.summarizeAt);
  assert.deepEqual(compactor.plan(first.messages).actions, []);
});

test('a summary over the maxTokens it was asked for is cut there, with a note: the prompt fits as planned', async () => {
  const messages = [{ role: 'system', content: 'You are an agent.' }];
  for (let t = 0; t < 20; t++) messages.push({ role: 'user', content: `Q ${t}: ${words(80, t)}` }, { role: 'assistant', content: `A ${t}: ${words(80, t + 1)}` });
  let asked;
  const compactor = await createCompactor({ contextWindow: 2_000, summarize: async (r) => ((asked = r.maxTokens), 'detail '.repeat(r.maxTokens * 10)) });
  const result = await compactor.manage(messages);
  assert.ok(asked > 0);
  assert.ok(compactor.usage(result.messages).tokens <= result.plan.tokensAfter, `${compactor.usage(result.messages).tokens} > predicted ${result.plan.tokensAfter}`);
  assert.match(JSON.stringify(result.messages), new RegExp(`summary cut at ${asked} tokens`));
});

// The automatic (no-LLM) summary's cuts keep store paths whole: `a_cut_never_splits_a_store_path`
// in src/tiers/lossy.rs.

// Found by fuzzing the AI SDK paths (prepareStep, middleware, overflow, bad input).

test('AI SDK 7 file data (tagged { type: data | text }) counts as its text and is offloaded; a file item in a tool result counts as a file', async () => {
  const { countTokens } = await import('../dist/entry/node.js');
  const log = Array.from({ length: 6_000 }, (_, i) => `line ${i}: request ${i * 7} ok`).join('\n');
  const b64 = Buffer.from(log).toString('base64');
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000 });
  const usage = (part) => compactor.usage([{ role: 'user', content: [part] }]).tokens;
  const bare = usage({ type: 'file', mediaType: 'text/plain', data: b64 });
  assert.ok(bare > countTokens(log), `${bare}`);
  assert.equal(usage({ type: 'file', mediaType: 'text/plain', data: { type: 'data', data: b64 } }), bare);
  assert.equal(usage({ type: 'file', mediaType: 'text/plain', data: { type: 'text', text: log } }), bare);
  assert.equal(usage({ type: 'file', mediaType: 'text', data: { type: 'text', text: log } }), bare, 'a top-level media type');
  const image = 'iVBORw0KGgo'.repeat(50);
  const inTool = (item) =>
    compactor.usage([
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'a', toolName: 'shot', input: {} }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'a', toolName: 'shot', output: { type: 'content', value: [item] } }] },
    ]).tokens;
  const imageData = inTool({ type: 'image-data', data: image, mediaType: 'image/png' });
  assert.equal(inTool({ type: 'file', mediaType: 'image/png', data: { type: 'data', data: image } }), imageData);
  assert.equal(inTool({ type: 'file-data', mediaType: 'image/png', data: image }), imageData);
  const managed = await compactor.manage([{ role: 'user', content: [{ type: 'text', text: 'What failed?' }, { type: 'file', mediaType: 'text/plain', data: { type: 'data', data: b64 } }] }]);
  assert.deepEqual(managed.events.map((e) => [e.strategy, e.status]), [['offload', 'applied']]);
  assert.ok(compactor.usage(managed.messages).tokens < 16_000);
  assert.equal(await compactor.store.read(managed.events[0].path), log);
});

test('options JSON cannot carry are typed errors naming the field', async () => {
  for (const [options, field] of [
    [{ contextWindow: Number.NaN }, 'contextWindow'],
    [{ maxOutputTokens: Infinity }, 'maxOutputTokens'],
    [{ compaction: { triggerFraction: Number.NaN } }, 'compaction.triggerFraction'],
    [{ overflow: { retry: 2 } }, 'overflow.retry'],
    [{ tools: 'x' }, 'tools'],
    [{ onEvent: 5 }, 'onEvent'],
    [null, 'options'],
  ]) {
    await assert.rejects(createCompactor(options), (e) => e.code === 'invalid_config' && e.field === field, JSON.stringify(options));
  }
  const compactor = await createCompactor();
  assert.throws(() => compactor.wrapTools(null), /wrapTools: tools must be a tool set/);
  assert.throws(() => compactor.wrapTools({ a: null }), /tools\.a must be a tool/);
  assert.throws(() => compactor.observeUsage(null), /observeUsage: usage must be an object/);
  await assert.rejects(compactor.prepareStep({ messages: null }), (e) => e.code === 'invalid_messages');
  const { anthropicCacheControl, summarizer } = await import('../dist/entry/node.js');
  await assert.rejects(compactor.middleware().transformParams({}), /transformParams: expected the AI SDK call options/);
  assert.throws(() => summarizer(null), /summarizer: model must be a language model/);
  assert.throws(() => anthropicCacheControl(null), /anthropicCacheControl: messages must be an array/);
});

test("compactor.tools(): one read_file page is at most 10 % of the window; the rest pages on", async () => {
  const compactor = await createCompactor({ contextWindow: 8_000 });
  await compactor.store.write('/tool_outputs/big.txt', Array.from({ length: 3_000 }, (_, i) => `row ${i} ${'x'.repeat(120)}`).join('\n'));
  const { read_file } = compactor.tools();
  const page = await read_file.execute({ path: '/tool_outputs/big.txt' }, { toolCallId: 'r', messages: [] });
  assert.ok(page.length <= 3_300, `${page.length} characters`);
  const next = Number(/offset=(\d+)/.exec(page)?.[1]);
  assert.ok(next > 0 && next < 500, `next page at ${next}`);
  const second = await read_file.execute({ path: '/tool_outputs/big.txt', offset: next }, { toolCallId: 'r2', messages: [] });
  assert.match(second, new RegExp(`^\\s*${next + 1}\\trow ${next} `));
});

// Not a regression test: the reader now reads the first 16 kB of each text (it took seconds on a
// body like this one, quadratic in it); this holds what it still finds.
test('an overflow error with a huge echoed body is still read from its message', async () => {
  const { parseOverflow } = await import('../dist/entry/node.js');
  const error = Object.assign(new Error("This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens."), {
    statusCode: 400,
    responseBody: 'prompt contains 1 tokens; '.repeat(40_000),
  });
  const info = parseOverflow(error);
  assert.equal(info?.limit, 128_000);
  assert.equal(info?.reportedTokens, 130_512);
});
