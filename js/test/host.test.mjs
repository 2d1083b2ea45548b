// Host behaviour against the built package (js/dist): fault injection, boundary codec,
// serialization of concurrent calls, typed errors, state round trip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { CompactorError, MemoryStore, countTokens, createCompactor, init } from '../dist/entry/node.js';

await init();

const big = (seed, lines = 4_000) =>
  Array.from({ length: lines }, (_, i) => `${seed} line ${i}: ${(i * 7919 + seed.length) % 10_007} ok`).join('\n');

function conversation(outputs) {
  const messages = [{ role: 'system', content: 'agent' }, { role: 'user', content: 'go' }];
  outputs.forEach((value, i) => {
    messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'search', input: { i } }] });
    messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${i}`, toolName: 'search', output: { type: 'text', value } }] });
  });
  return messages;
}

test('a failed store write removes nothing and the event records it', async () => {
  const store = new MemoryStore();
  const failing = { ...store, read: (p) => store.read(p), list: (p) => store.list(p), delete: (p) => store.delete(p),
    write: async (path, text) => { if (text.startsWith('bad')) throw new Error('disk full'); return store.write(path, text); } };
  const compactor = await createCompactor({ contextWindow: 16_000, store: failing });
  const messages = conversation([big('bad'), big('good')]);
  const { messages: out, events } = await compactor.manage(messages);
  const byStatus = Object.fromEntries(events.map((e) => [e.status, e]));
  assert.equal(byStatus.failed.error, 'disk full');
  assert.equal(out[3].content[0].output.value, big('bad'), 'failed offload leaves the output intact');
  assert.notEqual(out[5].content[0].output.value, big('good'));
  assert.equal(await store.read(byStatus.applied.path), big('good'));
  assert.equal(compactor.stats().actionsFailed, 1);
  // The next manage retries the failed one.
  failing.write = (path, text) => store.write(path, text);
  const retry = await compactor.manage(out);
  assert.deepEqual(retry.events.map((e) => e.status), ['applied']);
});

test("the recovery tools' ls and grep leave the compactor's state and its summary leases out", async () => {
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 16_000, store, statePath: '/chats/c1/state.json' });
  const { events } = await compactor.manage(conversation([big('alpha')]));
  const offloaded = events.find((e) => e.status === 'applied').path;
  await store.write('/chats/c1/state.json.summaries/ahead-ab.json', '{"summary":"alpha line 7"}');
  assert.ok((await store.read('/chats/c1/state.json')).includes('alpha line'), 'the state holds the preview');
  const tools = compactor.tools();
  assert.equal(await tools.ls.execute({}), `/${offloaded.split('/')[1]}/`);
  assert.match(await tools.ls.execute({ path: '/chats/' }), /^Nothing stored/);
  const found = await tools.grep.execute({ pattern: 'alpha line 7:' });
  assert.equal(found, `${offloaded}:8: ${big('alpha').split('\n')[7]}`);
  // Asked by its path, the state still reads.
  assert.match(await tools.read_file.execute({ path: '/chats/c1/state.json' }), /^1\t\{/);
});

test('binary and URL values survive the wasm boundary untouched', async () => {
  const bytes = new Uint8Array([0, 1, 2, 255]);
  const url = new URL('https://example.com/a.png');
  const messages = conversation([big('x')]);
  messages[1] = { role: 'user', content: [{ type: 'image', image: bytes }, { type: 'file', data: url, mediaType: 'image/png' }] };
  const compactor = await createCompactor({ contextWindow: 16_000 });
  const { messages: out, events } = await compactor.manage(messages);
  assert.equal(events.length, 1);
  assert.equal(out[1].content[0].image, bytes);
  assert.equal(out[1].content[1].data, url);
});

test('concurrent manage calls on one compactor run one after another', async () => {
  const log = [];
  const store = new MemoryStore();
  const slow = { read: (p) => store.read(p), list: (p) => store.list(p), delete: (p) => store.delete(p),
    write: async (p, t) => { log.push(`start ${p}`); await new Promise((r) => setTimeout(r, 30)); log.push(`end ${p}`); return store.write(p, t); } };
  const compactor = await createCompactor({ contextWindow: 16_000, store: slow });
  const [a, b] = await Promise.all([compactor.manage(conversation([big('a')])), compactor.manage(conversation([big('b')]))]);
  assert.equal(a.events.length + b.events.length, 2);
  assert.match(log[0], /^start/); assert.match(log[1], /^end/); assert.match(log[2], /^start/);
});

test('bad input gets typed errors naming message index and field', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  const orphan = [{ role: 'user', content: 'hi' }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'ghost', toolName: 't', output: { type: 'text', value: 'x' } }] }];
  assert.throws(() => compactor.plan(orphan), (e) => e instanceof CompactorError && e.code === 'orphan_tool_result' && e.index === 1);
  assert.throws(() => compactor.plan([{ role: 'robot', content: 'x' }]), (e) => e.code === 'invalid_message' && e.index === 0 && e.field === 'role');
  assert.throws(() => compactor.plan([{ role: 'assistant', content: [{ type: 'tool-call', toolName: 't', input: {} }] }]),
    (e) => e.code === 'invalid_message' && e.field === 'content[0].toolCallId');
  assert.throws(() => compactor.plan({ not: 'an array' }), (e) => e.code === 'invalid_messages');
  await assert.rejects(createCompactor({ contextWindw: 5 }), (e) => e.code === 'invalid_config' && /contextWindw/.test(e.message));
  await assert.rejects(createCompactor({ offload: { thresholdTokens: -1 } }), (e) => e.code === 'invalid_config' && e.field === 'offload.thresholdTokens');
  assert.throws(() => countTokens('x', 'p50k_base'), (e) => e.code === 'unknown_encoding');
  await assert.rejects(createCompactor({ store: { read() {}, write() {} } }), (e) => e.code === 'invalid_config' && e.field === 'store' && /list, delete/.test(e.message));
  await assert.rejects(compactor.manage([{ role: 'user', content: 7 }]), (e) => e.code === 'invalid_message' && e.field === 'content');
});

test('hostile store paths are refused', async () => {
  const store = new MemoryStore();
  for (const path of ['relative.txt', '/a/../../etc/passwd', '/a\0b', '/' + 'x'.repeat(2000), '/a\\b']) {
    await assert.rejects(store.write(path, 'x'), (e) => e.code === 'invalid_path', path);
  }
});

test('state round-trips into a new compactor; plans are deterministic', async () => {
  const first = await createCompactor({ model: 'gpt-4o' });
  await first.manage(conversation([big('s', 9_000)]));
  const saved = JSON.parse(JSON.stringify(first.state()));
  const second = await createCompactor({ model: 'gpt-4o', state: saved });
  assert.deepEqual(second.stats(), first.stats());
  assert.equal(second.stats().filesWritten, 1);
  const messages = conversation([big('d', 9_000)]);
  assert.deepEqual(first.plan(messages), second.plan(messages));
});

test('an unknown model is said on the console once per name; a given window or a known model says nothing', async () => {
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => warnings.push(args.join(' '));
  try {
    await createCompactor({ model: 'my-warned-local-model' });
    await createCompactor({ model: 'my-warned-local-model' });
    await createCompactor({ model: 'my-other-local-model', contextWindow: 32_000 });
    await createCompactor({ model: 'gpt-4o' });
    await createCompactor({ model: 'gpt4o' });
  } finally {
    console.warn = warn;
  }
  assert.deepEqual(warnings, [
    'context-compactor: unknown model "my-warned-local-model": planned against a 8,192-token window. Give its contextWindow (and maxOutputTokens), or a name the registry knows (modelInfo).',
    // A misspelling: the names it likely meant.
    'context-compactor: unknown model "gpt4o": planned against a 8,192-token window. Did you mean "gpt-4o"? Give its contextWindow (and maxOutputTokens), or a name the registry knows (modelInfo).',
  ]);
});

test('unknown models get a conservative window and a note; registry models resolve', async () => {
  const unknown = await createCompactor({ model: 'my-local-model' });
  const plan = unknown.plan([{ role: 'user', content: 'hi' }]);
  assert.equal(plan.window, 8192);
  assert.deepEqual(plan.notes[0], { type: 'unknown-model', name: 'my-local-model', assumedWindow: 8192 });
  const claude = await createCompactor({ model: 'anthropic/claude-sonnet-4-5' });
  assert.equal(claude.model.contextWindow, 200_000);
  assert.equal(claude.model.family, 'anthropic');
});

test('prepareStep counts instructions and never returns them inside messages', async () => {
  const compactor = await createCompactor({ contextWindow: 16_000 });
  const messages = conversation([big('p')]).slice(1);
  const out = await compactor.prepareStep({ messages, instructions: [{ role: 'system', content: 'sys' }], steps: [] });
  assert.equal(out.messages.length, messages.length);
  assert.ok(out.messages.every((m) => m.role !== 'system'));
  assert.match(out.messages[2].content[0].output.value, /^\[Tool output offloaded/);
});

test('countTokens before init is a typed error, not a crash', () => {
  const script = `import('${new URL('../dist/entry/node.js', import.meta.url).href}').then((m) => { try { m.countTokens('x'); } catch (e) { console.log(e.code); } })`;
  assert.equal(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim(), 'not_initialized');
});
