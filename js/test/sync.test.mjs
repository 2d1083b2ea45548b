// The incremental boundary: the core holds the conversation and only what changed crosses
// (compactor.ts #sync). Every figure a synced compactor gives must equal a fresh compactor's
// figure for the same messages, whatever was synced before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactorError, MemoryStore, createCompactor, init } from '../dist/entry/node.js';

await init();

const text = (i, n = 40) => Array.from({ length: n }, (_, k) => `turn ${i} word ${(k * 31 + i) % 97}`).join(' ');

function session(turns) {
  const messages = [{ role: 'system', content: 'You are an agent.' }];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: 'user', content: text(i) });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `calling ${i}` }, { type: 'tool-call', toolCallId: `c${i}`, toolName: 'read_file', input: { path: `/src/f${i}.rs` } }] });
    messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${i}`, toolName: 'read_file', output: { type: 'text', value: text(i, 400) } }] });
  }
  return messages;
}

const fresh = async (messages, options) => (await createCompactor(options)).usage(messages).tokens;

test('a conversation grown, cut and rewritten counts as a fresh compactor counts it', async () => {
  const options = { model: 'gpt-4o' };
  const compactor = await createCompactor(options);
  const all = session(30);
  // Grow one message at a time, then jump, then shrink, then branch off an earlier point.
  const steps = [3, 4, 5, 6, 40, 91, 60, 61, 10, all.length];
  for (const n of steps) {
    const messages = all.slice(0, n);
    assert.equal(compactor.usage(messages).tokens, await fresh(messages, options), `after syncing ${n} messages`);
  }
  const branch = [...all.slice(0, 31), { role: 'user', content: 'a different follow-up' }];
  assert.equal(compactor.usage(branch).tokens, await fresh(branch, options));
  assert.deepEqual(compactor.plan(all).tokensBefore, (await createCompactor(options)).plan(all).tokensBefore);
});

test('an edit in place that changes a size is seen', async () => {
  const compactor = await createCompactor({ model: 'gpt-4o' });
  const messages = session(5);
  const before = compactor.usage(messages).tokens;
  messages[1].content += ' and a much longer question than before, with more words in it';
  const grown = compactor.usage(messages).tokens;
  assert.ok(grown > before, `${grown} > ${before}`);
  assert.equal(grown, await fresh(messages, { model: 'gpt-4o' }));
  messages[3].content[0].output.value = 'short';
  assert.equal(compactor.usage(messages).tokens, await fresh(messages, { model: 'gpt-4o' }));
  messages[2].content.pop();
  messages.splice(3, 1);
  assert.equal(compactor.usage(messages).tokens, await fresh(messages, { model: 'gpt-4o' }));
});

test('an invalid appended message is a typed error naming its index in the whole conversation, and the next call recovers', async () => {
  const compactor = await createCompactor({ model: 'gpt-4o' });
  const messages = session(4);
  compactor.usage(messages);
  const bad = [...messages, { role: 'robot', content: 'x' }];
  assert.throws(() => compactor.usage(bad), (e) => e instanceof CompactorError && e.code === 'invalid_message' && e.index === messages.length && e.field === 'role');
  // A tool result whose call is in the part already held is valid; one whose call is nowhere is not.
  const answered = [...messages, { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'late', toolName: 't', input: {} }] }];
  compactor.usage(answered);
  const withResult = [...answered, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'late', toolName: 't', output: { type: 'text', value: 'ok' } }] }];
  assert.equal(compactor.usage(withResult).tokens, await fresh(withResult, { model: 'gpt-4o' }));
  const orphan = [...messages, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'nowhere', toolName: 't', output: { type: 'text', value: 'ok' } }] }];
  assert.throws(() => compactor.usage(orphan), (e) => e.code === 'orphan_tool_result' && e.index === messages.length);
  assert.equal(compactor.usage(messages).tokens, await fresh(messages, { model: 'gpt-4o' }));
});

test('binary parts keep their bytes through syncs in pieces and through apply', async () => {
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 16_000, store });
  const image = new Uint8Array([1, 2, 3, 250]);
  const messages = [{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: 'look' }] }];
  compactor.usage(messages);
  const second = new Uint8Array([9, 8, 7]);
  const grown = [...messages, ...session(12).slice(1), { role: 'user', content: [{ type: 'file', data: second, mediaType: 'application/pdf' }] }];
  compactor.usage(grown);
  const { messages: out } = await compactor.compact(grown);
  const parts = out.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
  const last = parts.find((p) => p.type === 'file');
  assert.ok(last.data instanceof Uint8Array && [...last.data].join() === '9,8,7');
});

test('a plan carries its transcript on demand: the JSON is the conversation, exactly', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  const messages = session(20);
  const plan = compactor.plan(messages, { trigger: 'manual' });
  const transcript = plan.actions.find((a) => a.type === 'save-transcript');
  assert.ok(transcript, 'a manual plan saves a transcript');
  assert.deepEqual(JSON.parse(transcript.json), messages);
  assert.match(transcript.markdown, /^# Conversation transcript/);
  const summarize = plan.actions.find((a) => a.type === 'summarize');
  assert.deepEqual(summarize.request.messages, [{ role: 'user', content: summarize.request.prompt }]);
  // The plan as JSON (what a host logs or stores) has everything.
  assert.deepEqual(JSON.parse(JSON.stringify(plan)).actions.find((a) => a.type === 'save-transcript').json, transcript.json);
  // Syncing another conversation in between does not change what this plan's transcript says.
  const other = await createCompactor({ contextWindow: 16_000 });
  const again = other.plan(messages, { trigger: 'manual' }).actions.find((a) => a.type === 'save-transcript');
  compactor.usage(session(3));
  assert.equal(again.json, transcript.json);
  // Mutated so that its transcript would differ: reading the payload is a typed plan_mismatch.
  const late = compactor.plan(messages, { trigger: 'manual' }).actions.find((a) => a.type === 'save-transcript');
  messages.push({ role: 'user', content: 'appended after planning' });
  assert.throws(() => late.json, (e) => e instanceof CompactorError && e.code === 'plan_mismatch');
});

test('manage on a synced conversation writes the full transcript and the result is held', async () => {
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 16_000, store });
  const messages = session(25);
  compactor.usage(messages.slice(0, 40));
  const { messages: out, events } = await compactor.compact(messages);
  const saved = events.find((e) => e.strategy === 'transcript');
  assert.equal(saved.status, 'applied');
  assert.deepEqual(JSON.parse(await store.read(saved.path)), messages);
  // The result is what the core holds now: counting it agrees with a fresh compactor.
  assert.equal(compactor.usage(out).tokens, await fresh(out, { contextWindow: 16_000 }));
  const next = [...out, { role: 'user', content: 'and now?' }];
  assert.equal(compactor.usage(next).tokens, await fresh(next, { contextWindow: 16_000 }));
});

// Plans learn about the held messages (their counts, fingerprints and renderings, src/memo.rs)
// and keep it while those messages stay: every plan must still be the plan a fresh compactor
// makes for the same messages, over the trigger (tier 2 and a summary request) included.
test('plans over the trigger after growing, cutting, rewriting and applying equal a fresh compactor\'s plans', async () => {
  // Thresholds at which these sizes plan both tiers (masks and a summary request).
  const options = { model: 'gpt-4o', contextWindow: 16_000, compaction: { triggerFraction: 0.85, targetFraction: 0.6 }, history: { triggerFraction: 0.95, keepRecentFraction: 0.2 } };
  const compactor = await createCompactor(options);
  const all = session(30);
  const plain = (plan) => JSON.stringify(plan, (key, value) => (key === 'json' || key === 'markdown' ? undefined : value));
  const seen = new Set();
  const same = async (messages, what) => {
    const planned = compactor.plan(messages);
    assert.ok(planned.actions.length > 0, `${what}: over the trigger`);
    for (const a of planned.actions) seen.add(a.type);
    assert.equal(plain(planned), plain((await createCompactor(options)).plan(messages)), what);
  };
  for (const n of [61, 62, 63, 64, 80, 70, 71, all.length]) await same(all.slice(0, n), `after syncing ${n} messages`);
  // The same positions with other content: a rewritten tail, then a rewritten middle.
  const tail = all.map((m, i) => (i >= all.length - 3 && m.role === 'user' ? { ...m, content: `${m.content} (edited)` } : m));
  await same(tail, 'a rewritten tail');
  const middle = all.map((m, i) => (i === 40 ? { role: 'user', content: text(99) } : m));
  await same(middle, 'a rewritten middle');
  // Fresh objects with the same content (a stateless host's shape).
  await same(structuredClone(all), 'fresh objects');
  // After a compaction is applied, the held conversation is the compacted one.
  const managed = await createCompactor({ ...options, store: new MemoryStore(), summarize: async () => 'A summary of the work so far.' });
  const { messages: compacted } = await managed.manage(all);
  const grown = [...compacted, ...session(3).slice(1)];
  const replanned = managed.plan(grown);
  const reference = await createCompactor({ ...options, state: managed.state() });
  assert.equal(plain(replanned), plain(reference.plan(grown)), 'after manage, the compacted conversation grown');
  assert.ok(seen.has('mask') && seen.has('summarize'), `tier 2 and the lossy tier both planned: ${[...seen]}`);
});

// The summary request's prompt crosses apart from the plan's JSON, as bytes decoded when first
// read: each plan keeps its own, whatever was planned after it.
test('a plan\'s summary prompt is its own span, read late, set, and in its JSON', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  const first = session(20);
  const other = session(24).map((m) => (m.role === 'user' ? { ...m, content: `${m.content} (other)` } : m));
  const a = compactor.plan(first, { trigger: 'manual' }).actions.find((x) => x.type === 'summarize');
  const b = compactor.plan(other, { trigger: 'manual' }).actions.find((x) => x.type === 'summarize');
  compactor.usage(session(2));
  // Read only now, after another plan and another sync.
  assert.match(a.request.prompt, /# Conversation \(messages 2–\d+ of 61\)/);
  assert.ok(a.request.prompt.includes(text(0)) && !a.request.prompt.includes('(other)'), 'the first plan\'s span');
  assert.match(b.request.prompt, /of 73\)/);
  assert.ok(b.request.prompt.includes(`${text(0)} (other)`), 'the second plan\'s span');
  assert.deepEqual(a.request.messages, [{ role: 'user', content: a.request.prompt }]);
  assert.equal(JSON.parse(JSON.stringify(a)).request.prompt, a.request.prompt);
  // A fresh compactor's plan of the same messages asks the same.
  const fresh = (await createCompactor({ contextWindow: 16_000 })).plan(first, { trigger: 'manual' });
  assert.equal(fresh.actions.find((x) => x.type === 'summarize').request.prompt, a.request.prompt);
  a.request.prompt = 'changed';
  assert.equal(a.request.prompt, 'changed');
  assert.deepEqual({ ...b.request }.prompt, b.request.prompt);
});

// Messages are stringified without a replacer unless a value may need a placeholder (codec.ts
// mayNeedRefs): bytes behind a toJSON method still cross as placeholders and come back.
test('bytes behind a toJSON method keep their placeholder', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  const bytes = new Uint8Array([7, 0, 255]);
  const custom = { toJSON: () => ({ kind: 'blob', bytes }) };
  const messages = [...session(3), { role: 'user', content: [{ type: 'text', text: 'see attached', providerOptions: { app: custom } }] }];
  const fresh = async () => (await createCompactor({ contextWindow: 16_000 })).usage(messages).tokens;
  assert.equal(compactor.usage(messages).tokens, await fresh());
  const { messages: out } = await compactor.compact(messages);
  // Left as it was, the message comes back as the app's own object (src/bindings/json.rs
  // `as_given`), its toJSON and bytes untouched.
  assert.equal(out.at(-1), messages.at(-1));
  assert.equal(out.at(-1).content[0].providerOptions.app, custom);
});

test('apply takes back only a plan this compactor made (its last 16), without parsing it again', async () => {
  // The raw core, as the host drives it: the host hands back the plan JSON it was given.
  const { WasmCompactor } = await import('../dist/wasm/context_compactor.js');
  const core = new WasmCompactor(JSON.stringify({ model: 'gpt-4o', contextWindow: 4_000 }), undefined);
  const messages = session(6);
  core.sync(0, JSON.stringify(messages));
  const first = core.plan(undefined, undefined);
  assert.ok(JSON.parse(first).actions.length > 0, 'over the window: a plan with actions');
  const code = (f) => {
    try {
      f();
    } catch (e) {
      return JSON.parse(typeof e === 'string' ? e : e.message).code;
    }
    return 'no error';
  };
  // The same plan, re-serialized (what a host that rebuilt it would send): not one it made.
  const rebuilt = JSON.stringify(JSON.parse(first), null, 1);
  assert.equal(code(() => core.apply(undefined, rebuilt, '[]')), 'plan_mismatch');
  // Fifteen other plans later the first still applies; the sixteenth pushes it out.
  const other = (i) => {
    core.sync(messages.length, JSON.stringify([{ role: 'user', content: `question ${i}` }]));
    assert.notEqual(core.plan(undefined, undefined), first);
  };
  for (let i = 0; i < 15; i++) other(i);
  assert.equal(code(() => core.apply(JSON.stringify(messages), first, '[]')), 'no error');
  other(15);
  assert.equal(code(() => core.apply(JSON.stringify(messages), first, '[]')), 'plan_mismatch');
  core.free();
});

// A call's result crosses as indices for the messages it left as they were (src/bindings/json.rs
// `as_given`): those are the app's own objects, the ones it changed or made are new, and the
// input is never touched.
test("a compaction's result holds the app's own object for each message it left as it was", async () => {
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000 });
  const messages = session(12);
  const before = JSON.stringify(messages);
  const { messages: out, events } = await compactor.manage(messages);
  assert.ok(events.some((e) => e.status === 'applied'), 'something was compacted');
  const given = new Set(messages);
  let own = 0;
  for (const message of out) {
    const equal = messages.find((m) => JSON.stringify(m) === JSON.stringify(message));
    if (equal) {
      assert.ok(given.has(message), `left as it was, yet a copy: ${JSON.stringify(message).slice(0, 80)}`);
      own++;
    } else {
      assert.ok(!given.has(message), 'a changed message is not the input object');
    }
  }
  assert.ok(own > 0 && own < out.length, `${own} of ${out.length} as given`);
  assert.equal(new Set(out).size, out.length, 'no object twice');
  assert.equal(JSON.stringify(messages), before, 'the input is untouched');
});
