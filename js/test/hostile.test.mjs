// Hostile input against the built package (js/dist), issue 17: lone UTF-16 surrogates counted as
// the official tiktoken counts them and given back unchanged (messages and store writes), nesting
// past MAX_NESTING and everything JSON.stringify refuses as typed errors, a 52 MB pasted log.
// Already covered elsewhere, not repeated here: wrong roles, missing ids, non-array messages,
// wrong content types (host.test.mjs), store and summarizer failures (failures.test.mjs), hostile
// store paths (stores.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactorError, MemoryStore, countTokens, createCompactor, init, loadEncoding } from '../dist/entry/node.js';
// The same deterministic log as the cross-runtime scenario (5 MB there).
import { makePastedLog } from '../../tests/runtimes/scenario.mjs';

await init();
await loadEncoding('cl100k_base');

/** Every throw must be a CompactorError with a code (and, for a message, its index and field). */
function typed(fn, check) {
  let thrown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown instanceof CompactorError, `expected a CompactorError, got ${thrown?.name}: ${thrown?.message}`);
  check(thrown);
  return thrown;
}

// Official tiktoken 0.14.0 (scripts/oracle): it encodes `text.encode("utf-16", "surrogatepass")
// .decode("utf-16", "replace")`, each lone surrogate one U+FFFD. Same table as tests/hostile.rs.
const TIKTOKEN = [
  ['lead_at_end', 'Tool output cut mid-emoji: party \ud83c', 9, 9],
  ['trail_at_start', '\udf89 and the rest of the line', 7, 7],
  ['two_leads', 'a\ud83d\ud83db', 3, 3],
  ['trail_then_lead', 'x\ude00\ud83dy', 3, 3],
  ['in_words', 'cut \ud83d here\nand \ude00 there', 7, 7],
  ['cjk_mix', '日本語\ud83dテキスト', 6, 8],
  ['digits', '12345\udc0067890', 5, 5],
  ['alone', '\ud800', 1, 1],
];

test('lone surrogates count as tiktoken counts them (countTokens and usage)', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  const base = compactor.usage([{ role: 'user', content: '' }]).tokens;
  for (const [name, text, o200k, cl100k] of TIKTOKEN) {
    assert.equal(text.isWellFormed?.() ?? false, false, name);
    assert.equal(countTokens(text, 'o200k_base'), o200k, `${name} o200k`);
    assert.equal(countTokens(text, 'cl100k_base'), cl100k, `${name} cl100k`);
    assert.equal(compactor.usage([{ role: 'user', content: text }]).tokens - base, o200k, `${name} usage`);
  }
});

// Lead and trail surrogates alone, at part boundaries, in tool-call inputs (values and keys),
// tool names and ids, user text, JSON outputs, unknown fields.
const EMOJI = '😀🎉';
const cut = EMOJI.slice(0, 1); // '\ud83d'
const tail = EMOJI.slice(1, 2); // '\ude00'
function surrogateChat(bigOutput) {
  return [
    { role: 'system', content: `You are an agent ${tail}` },
    { role: 'user', content: [{ type: 'text', text: `first part ends mid-emoji ${cut}` }, { type: 'text', text: `${tail} second part starts with the rest` }] },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'calling' },
        { type: 'tool-call', toolCallId: `call_${cut}1`, toolName: `search${tail}`, input: { [`q${cut}`]: [`${tail}`, { nested: `deep ${cut}${cut}` }], n: 3 } },
      ],
      providerOptions: { custom: { note: `x${tail}y` } },
    },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: `call_${cut}1`, toolName: `search${tail}`, output: { type: 'json', value: { hits: [`a ${cut}`, { [`k${tail}`]: `b ${tail}` }] } } }] },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'call_2', toolName: 'fetch', input: { url: 'x' } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'call_2', toolName: 'fetch', output: { type: 'text', value: bigOutput } }] },
    { role: 'user', content: `thanks ${cut}` },
  ];
}
const bigWithSurrogates = Array.from({ length: 4_000 }, (_, i) => `line ${i}: value ${(i * 7919) % 10_007} ${i % 97 === 0 ? cut : i % 89 === 0 ? tail : 'ok'}`).join('\n') + cut;

test('usage, plan and manage accept lone surrogates; unchanged messages come back identical', async () => {
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 16_000, store });
  const messages = surrogateChat(bigWithSurrogates);
  const snapshot = structuredClone(messages);
  assert.ok(compactor.usage(messages).tokens > 16_000);
  const plan = compactor.plan(messages);
  assert.equal(plan.actions.filter((a) => a.type === 'offload').length, 1);
  const result = await compactor.manage(messages);
  assert.deepEqual(messages, snapshot, 'input not mutated');
  assert.equal(result.messages.length, messages.length);
  for (const i of [0, 1, 2, 3, 4, 6]) assert.deepEqual(result.messages[i], messages[i], `message ${i} comes back identical, lone surrogates and all`);
  // Those holding lone surrogates are the app's own objects: even '\ud83d' and '\ude00' alone,
  // which share one U+FFFD form, cannot be mixed up.
  for (const i of [0, 1, 2, 3, 6]) assert.equal(result.messages[i], messages[i], `message ${i} is the same object`);
  assert.equal(result.messages[2].content[1].toolCallId, `call_${cut}1`);
  assert.equal(result.messages[5].content[0].toolCallId, 'call_2');
  assert.ok(compactor.usage(result.messages).tokens <= 16_000);
  // Every later call keeps working (the issue: one bad string rejected every later call).
  const again = await compactor.manage(result.messages);
  assert.equal(again.events.length, 0);
  assert.deepEqual(again.messages, result.messages);
});

test('a real U+FFFD is never taken for a lone surrogate, nor two lone surrogates for each other', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  const messages = surrogateChat(bigWithSurrogates);
  // Three user messages whose strings share one U+FFFD form: a real U+FFFD, '\ud83d', '\ude00'.
  messages.splice(1, 0, { role: 'user', content: 'same \ufffd' }, { role: 'assistant', content: 'ok' }, { role: 'user', content: `same ${cut}` }, { role: 'assistant', content: 'ok' }, { role: 'user', content: `same ${tail}` }, { role: 'assistant', content: 'ok' });
  const result = await compactor.manage(messages);
  assert.ok(result.events.some((e) => e.strategy === 'offload' && e.status === 'applied'));
  assert.equal(result.messages[1].content, 'same \ufffd');
  assert.equal(result.messages[3].content, `same ${cut}`);
  assert.equal(result.messages[5].content, `same ${tail}`);
});

test('the codec: restoring never throws on text that is not the JSON it expects', async () => {
  const { encode, restoreStored } = await import('../dist/codec.js');
  const { refs } = encode([{ role: 'user', content: `x ${cut}` }]);
  for (const text of ['not json \ufffd "', '"x \ufffd', '\ufffd', '{"a": "x \ufffd"} "x \ufffd" trailing', '"\\"x \ufffd"']) {
    assert.equal(typeof restoreStored('/a.json', text, refs), 'string', text);
    assert.equal(typeof restoreStored('/a.txt', text, refs), 'string', text);
  }
  assert.equal(restoreStored('/a.json', '["x \ufffd"]', refs), `["x \\ud83d"]`);
  assert.ok(restoreStored('/a.txt', 'x \ufffd', refs) === `x ${cut}`);
});

test('an offloaded output with lone surrogates is written to the store exactly as the original string', async () => {
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 16_000, store });
  const dry = compactor.plan(surrogateChat(bigWithSurrogates)).actions.find((a) => a.type === 'offload');
  assert.ok(dry.content === bigWithSurrogates, 'the dry run shows what will be stored');
  const { plan } = await compactor.manage(surrogateChat(bigWithSurrogates));
  const path = plan.actions.find((a) => a.type === 'offload').path;
  const stored = await store.read(path);
  assert.equal(stored.length, bigWithSurrogates.length);
  assert.ok(stored === bigWithSurrogates, 'byte for byte the original JS string');
  assert.equal(stored.isWellFormed?.(), false);

  // A JSON output: the stored JSON parses back to the original value, lone surrogates included.
  const value = { rows: Array.from({ length: 3_000 }, (_, i) => ({ id: i, name: `row ${i} ${i % 50 === 0 ? cut : 'ok'}`, [`k${tail}`]: i })) };
  const jsonStore = new MemoryStore();
  const c2 = await createCompactor({ contextWindow: 16_000, store: jsonStore });
  const chat = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'j1', toolName: 'query', input: {} }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'j1', toolName: 'query', output: { type: 'json', value } }] },
  ];
  const r2 = await c2.manage(chat);
  const jsonPath = r2.plan.actions.find((a) => a.type === 'offload').path;
  assert.match(jsonPath, /\.json$/);
  const storedJson = await jsonStore.read(jsonPath);
  assert.deepEqual(JSON.parse(storedJson), value);
  assert.equal(storedJson, JSON.stringify(value, null, 2));

  // A `content` output (text items joined for the store): each item's original in place.
  const items = [{ type: 'text', text: bigWithSurrogates }, { type: 'text', text: `second item ${tail}` }];
  const contentStore = new MemoryStore();
  const c4 = await createCompactor({ contextWindow: 16_000, store: contentStore });
  const r4 = await c4.manage([chat[0], chat[1], { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'j1', toolName: 'query', output: { type: 'content', value: items } }] }]);
  const contentPath = r4.plan.actions.find((a) => a.type === 'offload').path;
  assert.ok((await contentStore.read(contentPath)) === `${items[0].text}\n${items[1].text}`);

  // At tool-return time (wrapTools / offloadToolOutput): the same.
  const c3 = await createCompactor({ contextWindow: 16_000, store: new MemoryStore() });
  const preview = await c3.offloadToolOutput('fetch', 'w1', bigWithSurrogates);
  const offloaded = String(preview).match(/\/tool_outputs\/[\w.-]+/)[0];
  assert.ok((await c3.store.read(offloaded)) === bigWithSurrogates);
});

test('a transcript of a conversation with lone surrogates is stored as the original JSON', async () => {
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 8_000, store, summarize: async () => 'Summary.' });
  const chat = [{ role: 'system', content: 'agent' }];
  for (let t = 0; t < 40; t++) {
    chat.push({ role: 'user', content: `Question ${t} ${t % 3 ? cut : tail}: ` + 'budget window cache parser '.repeat(40) });
    chat.push({ role: 'assistant', content: [{ type: 'text', text: `Answer ${t}: ` + 'plan summary tool result '.repeat(60) + cut }] });
  }
  const result = await compactor.manage(chat);
  const transcript = result.plan.actions.find((a) => a.type === 'save-transcript');
  assert.equal(await store.read(transcript.path), JSON.stringify(chat, null, 2));
  assert.equal(transcript.json, JSON.stringify(chat, null, 2));
  assert.ok((await store.read(transcript.readablePath)).includes(`Question 1 ${cut}:`), 'the Markdown transcript too');
  assert.deepEqual(result.messages.at(-1), chat.at(-1));
});

test('random cuts of emoji-rich text, anywhere in a conversation: counted as their well-formed form, given back unchanged', async () => {
  const source = 'Résumé 😀 naïve 🎉 日本語 👩‍💻 emoji ✅ 𝕳𝖊𝖑𝖑𝖔 "quoted" \\ backslash \n newline ';
  let seed = 0x2545f491;
  const rand = (n) => {
    seed ^= seed << 13; seed >>>= 0; seed ^= seed >>> 17; seed ^= seed << 5; seed >>>= 0;
    return seed % n;
  };
  const piece = () => {
    const from = rand(source.length);
    return source.slice(from, from + 1 + rand(12)).repeat(1 + rand(3));
  };
  const wellFormed = (value) => JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === 'string' ? v.toWellFormed() : v)));
  for (let round = 0; round < 40; round++) {
    const store = new MemoryStore();
    const compactor = await createCompactor({ contextWindow: 16_000, store });
    const id = `id${piece()}`;
    const big = Array.from({ length: 3_000 }, (_, i) => `${i} ${piece()}`).join('\n');
    const messages = [
      { role: 'system', content: piece() },
      { role: 'user', content: [{ type: 'text', text: piece() }, { type: 'text', text: piece() }] },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: `t${piece()}`, input: { [piece()]: [piece(), { k: piece() }] } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'fetch', output: { type: 'text', value: big } }] },
      { role: 'user', content: piece() },
    ];
    // Keys of the input may repeat: compare against the same object as JSON would see it.
    const fixed = wellFormed(messages);
    assert.equal(compactor.usage(messages).tokens, (await createCompactor({ contextWindow: 16_000 })).usage(fixed).tokens, `round ${round}`);
    const result = await compactor.manage(messages);
    const path = result.plan.actions.find((a) => a.type === 'offload')?.path;
    assert.ok(path, `round ${round}`);
    assert.ok((await store.read(path)) === big, `round ${round}: stored exactly`);
    for (const i of [0, 1, 2, 4]) assert.deepEqual(result.messages[i], messages[i], `round ${round}, message ${i}`);
  }
});

test('lone surrogates in the other inputs (summaries, instructions, tool definitions, model, loop state) are U+FFFD, never malformed_json', async () => {
  const chat = [{ role: 'system', content: 'agent' }];
  for (let t = 0; t < 40; t++) {
    chat.push({ role: 'user', content: `Q ${t} ` + 'budget window cache parser '.repeat(40) });
    chat.push({ role: 'assistant', content: 'A ' + 'plan summary tool result '.repeat(60) });
  }
  const summarized = await (await createCompactor({ contextWindow: 8_000, summarize: async () => `Summary cut ${cut}` })).manage(chat);
  assert.ok(summarized.events.some((e) => e.strategy === 'summarize' && e.status === 'applied'));
  assert.ok(summarized.messages[1].content.includes('Summary cut \ufffd'));
  const custom = await (await createCompactor({ contextWindow: 8_000, onPreCompact: () => ({ customSummary: `Custom ${tail}` }) })).manage(chat);
  assert.ok(custom.messages[1].content.includes('Custom \ufffd'));
  const manual = await (await createCompactor({ contextWindow: 8_000 })).compact(chat, { instructions: `keep the ${cut} names` });
  assert.ok(manual.plan.actions.find((a) => a.type === 'summarize').request.prompt.includes('keep the \ufffd names'));
  const withTools = await createCompactor({ contextWindow: 8_000, tools: [{ name: `lookup${tail}`, description: `finds ${cut}` }] });
  assert.ok(withTools.usage(chat).tokens > 0);
  assert.equal((await createCompactor({ model: `gpt-4o${cut}` })).model.name, `gpt-4o\ufffd`);
  const { loopContext } = await import('../dist/entry/node.js');
  let state = loopContext.create(`ship it ${cut}`, 0);
  for (let i = 1; i <= 3; i++) state = loopContext.addIteration(state, { unixMs: i, output: `step ${i} ${tail}` }).state;
  assert.match(loopContext.buildPrompt(state), /ship it \ufffd/);
});

/** An object nested `depth` levels deep: {a: {a: ... 1}}. */
function nestedObject(depth) {
  const root = {};
  let node = root;
  for (let i = 1; i < depth; i++) node = node.a = {};
  node.a = 1;
  return root;
}
const callWith = (input) => ({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'n1', toolName: 't', input }] });

test('nesting past 127 levels is a typed invalid_message naming the message and field, never a RangeError', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  // The messages array is level 1, the message 2, content 3, the part 4, the input object 5.
  compactor.usage([callWith(nestedObject(127 - 4))]);
  const field = 'content[0].input' + '.a'.repeat(127 - 4);
  for (const depth of [127 - 3, 200, 10_000, 100_000]) {
    typed(() => compactor.usage([callWith(nestedObject(depth))]), (e) => {
      assert.equal(e.code, 'invalid_message');
      assert.equal(e.index, 0);
      assert.equal(e.field, field, `${depth}: the same field whether the host or the core caught it`);
      assert.match(e.message, /nested deeper than 127 levels/);
    });
  }
  // In a later message synced on its own, and in deep arrays: the index is the conversation's.
  const chat = [{ role: 'user', content: 'a' }, { role: 'assistant', content: 'b' }, { role: 'user', content: 'c' }];
  compactor.usage(chat);
  let deepArray = 'x';
  for (let i = 0; i < 10_000; i++) deepArray = [deepArray];
  typed(() => compactor.usage([...chat, callWith({ list: deepArray })]), (e) => {
    assert.equal(e.index, 3);
    assert.ok(e.field.startsWith('content[0].input.list[0][0]'), e.field);
  });
  await assert.rejects(compactor.manage([...chat, callWith(nestedObject(10_000))]), (e) => e instanceof CompactorError && e.index === 3);
  // The compactor is still usable.
  assert.ok(compactor.usage(chat).tokens > 0);
});

test('NaN, Infinity, undefined, BigInt, Symbol, functions, cycles, throwing getters: typed errors or JSON semantics, never a crash', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  // What JSON.stringify turns into null or leaves out is what the provider receives too: counted so.
  const lenient = compactor.usage([callWith({ a: NaN, b: Infinity, c: -Infinity, d: undefined, e: Symbol('s'), f: () => 1, g: [undefined, Symbol('t'), () => 2] })]);
  assert.equal(lenient.tokens, compactor.usage([callWith({ a: null, b: null, c: null, g: [null, null, null] })]).tokens);
  const invalid = (messages, index, field, pattern) =>
    typed(() => compactor.usage(messages), (e) => {
      assert.equal(e.code, 'invalid_message', e.message);
      assert.equal(e.index, index, e.message);
      assert.equal(e.field, field, e.message);
      if (pattern) assert.match(e.message, pattern);
    });
  invalid([{ role: 'user', content: undefined }], 0, 'content');
  invalid([{ role: 'user', content: () => 'x' }], 0, 'content');
  invalid([{ role: 'user', content: Symbol('x') }], 0, 'content');
  invalid([{ role: Symbol('user'), content: 'x' }], 0, 'role');
  invalid([{ role: 'user', content: NaN }], 0, 'content');
  invalid([{ role: 'user', content: 'ok' }, callWith({ n: 10n ** 30n })], 1, 'content[0].input.n', /BigInt/);
  invalid([{ role: 'user', content: [{ type: 'text', text: 1n }] }], 0, 'content[0].text', /BigInt/);
  const cyclic = { name: 'loop' };
  cyclic.self = { back: cyclic };
  invalid([callWith(cyclic)], 0, 'content[0].input.self.back', /cyclic/);
  const cyclicArray = [];
  cyclicArray.push(cyclicArray);
  invalid([callWith({ items: cyclicArray })], 0, 'content[0].input.items[0]', /cyclic/);
  invalid([callWith({ get secret() { throw new Error('no access'); } })], 0, 'content[0].input.secret', /no access/);
  invalid([callWith({ when: { toJSON() { throw new Error('bad date'); } } })], 0, 'content[0].input.when', /bad date/);
  invalid([{ role: 'user', get content() { throw new Error('gone'); } }], 0, 'content', /gone/);
  invalid([{ role: 'user', content: [{ type: 'text', get text() { throw new Error('gone too'); } }] }], 0, 'content[0].text', /gone too/);
  const revocable = Proxy.revocable({ role: 'user', content: 'x' }, {});
  revocable.revoke();
  invalid([{ role: 'user', content: 'ok' }, revocable.proxy], 1, '', /revoked/);
  for (const messages of [undefined, null, 42, 'text', Symbol('m'), () => []]) {
    typed(() => compactor.usage(messages), (e) => assert.equal(e.code, 'invalid_messages'));
  }
  typed(() => compactor.usage([null]), (e) => assert.equal(e.index, 0));
  typed(() => compactor.usage([{ role: 'user', content: 'x' }, 7]), (e) => assert.equal(e.index, 1));
  // A shared (not cyclic) object is fine; so are Map and Set (JSON gives {}), and a frozen object.
  const shared = { x: 1 };
  compactor.usage([callWith({ a: shared, b: shared, m: new Map([[1, 2]]), s: new Set([1]), f: Object.freeze({ y: 2 }) })]);
  await assert.rejects(compactor.manage([callWith({ n: 1n })]), (e) => e instanceof CompactorError && e.field === 'content[0].input.n');
  assert.ok(compactor.usage([{ role: 'user', content: 'still fine' }]).tokens > 0);
});

test('a 52 MB pasted user message: usage counts it, manage offloads it byte for byte and leaves its preview and path', { timeout: 120_000 }, async () => {
  const log = makePastedLog(52);
  const store = new MemoryStore();
  const compactor = await createCompactor({ model: 'gpt-4o', store });
  const messages = [
    { role: 'system', content: 'agent' },
    { role: 'user', content: 'hi' },
    { role: 'assistant', content: 'hello' },
    { role: 'user', content: `Here is the log:\n${log}` },
  ];
  let t = performance.now();
  const count = countTokens(log, 'o200k_base');
  const countMs = performance.now() - t;
  t = performance.now();
  const usage = compactor.usage(messages);
  const usageMs = performance.now() - t;
  assert.ok(usage.tokens > count && usage.tokens < count + 100, `${usage.tokens} vs ${count}`);
  assert.equal(usage.window, 128_000);
  t = performance.now();
  const result = await compactor.manage(messages);
  const manageMs = performance.now() - t;
  // The newest user message keeps its meaning: a preview (its first and last lines) and the
  // path of the whole text, which the store holds byte for byte.
  assert.equal(result.messages.length, messages.length);
  const offload = result.events.find((e) => e.strategy === 'offload');
  assert.equal(offload.status, 'applied');
  assert.match(offload.path, /^\/user_messages\/user_message_[0-9a-f]{16}\.txt$/);
  assert.equal(await store.read(offload.path), messages[3].content);
  const preview = result.messages.at(-1).content;
  assert.ok(preview.includes(offload.path) && preview.includes('Here is the log:') && preview.length < 5_000, preview.slice(0, 300));
  assert.ok(compactor.usage(result.messages).tokens < 2_000);
  assert.deepEqual(result.messages.map((m) => m.role), ['system', 'user', 'assistant', 'user']);
  console.log(`52 MB log (${(log.length / 1e6).toFixed(1)} M chars, ${count} tokens): countTokens ${countMs.toFixed(0)} ms, usage ${usageMs.toFixed(0)} ms, manage ${manageMs.toFixed(0)} ms`);
});

test('mutated conversations (fields dropped, values swapped for any JSON value): plan, usage and manage succeed or throw typed errors', async () => {
  // A deterministic PRNG (mulberry32), so a failure reproduces.
  let seed = 0x2545f491;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = (xs) => xs[Math.floor(random() * xs.length)];
  const values = [null, true, 0, -1, 1e308, 'x', '', [], {}, [1], { type: 'text' }, { type: 'tool-call' }, 'user', 'tool', '\ud800', 2 ** 53];
  const base = () => [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: `Fix the parser ${'please '.repeat(Math.floor(random() * 40))}` },
    { role: 'assistant', content: [{ type: 'text', text: 'Reading it.' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: { path: 'src/parser.ts' } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'read_file', output: { type: 'text', value: 'export const x = 1;\n'.repeat(Math.floor(random() * 300)) } }] },
    { role: 'user', content: [{ type: 'text', text: 'Keep this.', providerOptions: { contextCompactor: { pin: true } } }] },
  ];
  const mutate = (v) => {
    if (Array.isArray(v)) {
      const a = v.map(mutate);
      if (random() < 0.02) a.splice(Math.floor(random() * (a.length + 1)), 0, pick(values));
      if (random() < 0.02 && a.length) a.splice(Math.floor(random() * a.length), 1);
      return a;
    }
    if (v && typeof v === 'object') {
      const o = {};
      for (const [k, x] of Object.entries(v)) {
        if (random() < 0.01) continue;
        o[k] = random() < 0.02 ? pick(values) : mutate(x);
      }
      if (random() < 0.01) o[pick(['role', 'content', 'type', 'toolCallId', 'output'])] = pick(values);
      return o;
    }
    return random() < 0.01 ? pick(values) : v;
  };
  const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: 2_000, store: new MemoryStore(), summarize: async () => 'Summary.' });
  let planned = 0;
  let refused = 0;
  for (let i = 0; i < 600; i++) {
    const messages = mutate(base());
    try {
      compactor.plan(messages);
      compactor.usage(messages);
      await compactor.manage(messages);
      planned++;
    } catch (error) {
      assert.ok(error instanceof CompactorError && error.code, `case ${i}: ${error?.name}: ${String(error?.message).slice(0, 200)}`);
      refused++;
    }
  }
  // Both paths ran many times: valid mutations plan (and compact: the window is small), the rest are refused.
  assert.ok(planned > 100 && refused > 100, `planned ${planned}, refused ${refused}`);
  compactor.dispose();
});

test('offloadToolOutput: names that are not strings and outputs that are not JSON are typed errors naming the call, and the compactor goes on', async () => {
  const compactor = await createCompactor({ model: 'gpt-4o', store: new MemoryStore() });
  const big = 'line of a long output\n'.repeat(20_000);
  for (const [name, id, field] of [[null, 'c1', 'toolName'], [42, 'c1', 'toolName'], ['t', undefined, 'toolCallId'], ['t', {}, 'toolCallId']]) {
    await assert.rejects(compactor.offloadToolOutput(name, id, big), (e) => e instanceof CompactorError && e.code === 'invalid_message' && e.field === field && e.message.startsWith('offloadToolOutput:'));
  }
  const cyclic = { a: 1 };
  cyclic.self = cyclic;
  for (const [output, field, reason] of [[{ a: 1n }, 'a', 'BigInt'], [cyclic, 'self', 'cyclic'], [5n, '', 'BigInt']]) {
    await assert.rejects(compactor.offloadToolOutput('search', 'c2', output), (e) => {
      assert.ok(e instanceof CompactorError && e.code === 'invalid_message', String(e));
      assert.match(e.message, /^offloadToolOutput: the output of tool search \(call c2\): /);
      assert.ok(e.message.includes(reason) && e.field === field && e.details.toolCallId === 'c2', e.message);
      return true;
    });
  }
  // The core was never handed a bad value: the next output offloads as ever.
  const preview = await compactor.offloadToolOutput('search', 'c3', big);
  assert.ok(typeof preview === 'string' && preview.startsWith('[Tool output offloaded:'), preview.slice(0, 80));
  compactor.dispose();
});

test('offloadToolOutput: a value whose JSON is a string is a JSON output (as it always was), and a compactor disposed mid-write fails typed', async () => {
  const store = new MemoryStore();
  const compactor = await createCompactor({ model: 'gpt-4o', store });
  const big = 'line of a long output\n'.repeat(20_000);
  class Result { toJSON() { return big; } }
  for (const [id, output] of [['s1', new String(big)], ['s2', new Result()]]) {
    const preview = await compactor.offloadToolOutput('search', id, output);
    assert.ok(typeof preview === 'string' && preview.startsWith('[Tool output offloaded:'));
  }
  const paths = await store.list('/tool_outputs/');
  assert.equal(paths.length, 1, 'the same JSON value, stored once');
  assert.ok(paths[0].endsWith('.json') && (await store.read(paths[0])) === JSON.stringify(big, null, 2), paths[0]);
  // A store that answers after the compactor was disposed: a typed `disposed`.
  let release;
  const slow = { ...store, read: (p) => store.read(p), list: (p) => store.list(p), delete: (p) => store.delete(p), write: () => new Promise((resolve) => { release = resolve; }) };
  const doomed = await createCompactor({ model: 'gpt-4o', store: slow });
  const pending = doomed.offloadToolOutput('search', 's3', big);
  while (!release) await new Promise((r) => setTimeout(r, 1));
  doomed.dispose();
  release();
  await assert.rejects(pending, (e) => e instanceof CompactorError && e.code === 'disposed');
  compactor.dispose();
});
