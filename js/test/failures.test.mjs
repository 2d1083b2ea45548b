// Fault injection in the host: a summarizer that hangs (timeout, abort signal, heuristic
// fallback), a store that fails at tool-return time (wrapTools keeps the output), a store that
// fails for the transcript (nothing summarized, nothing removed), racing calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactorError, MemoryStore, createCompactor, init, loadState, recoveryTools } from '../dist/entry/node.js';
import { chat as conversation } from '../test-helpers/conversations.mjs';

await init();

const chat = (turns) => conversation(turns, 120, { toolCall: false });
const big = (seed) => Array.from({ length: 4_000 }, (_, i) => `${seed} line ${i}: ${(i * 7919) % 10_007}`).join('\n');

test('a summarizer that never answers times out: its signal aborts and the heuristic summary applies', async () => {
  let signal;
  const started = Date.now();
  const compactor = await createCompactor({
    contextWindow: 8_000,
    summarizeTimeoutMs: 150,
    summarize: (_request, options) => {
      signal = options.signal;
      return new Promise(() => {}); // hangs forever
    },
  });
  const messages = chat(30);
  const { messages: out, events } = await compactor.manage(messages);
  assert.ok(Date.now() - started < 5_000, 'manage returned after the timeout, not never');
  assert.ok(signal?.aborted, 'the summarizer was told to stop');
  const summary = events.find((e) => e.strategy === 'summarize');
  assert.equal(summary.status, 'fallback');
  assert.match(summary.error, /no summary within 150 ms/);
  assert.ok(out.length < messages.length);
  assert.ok(compactor.usage(out).tokens <= 8_000);
  assert.ok(String(out[1].content).includes('/conversation_history/'), 'the fallback summary names the transcript');
});

test('a summarizer answering in time is used, and the timer does not keep the process alive', async () => {
  const compactor = await createCompactor({ contextWindow: 8_000, summarizeTimeoutMs: 60_000, summarize: async () => 'Summary: turns 0-20 discussed caches.' });
  const { events } = await compactor.manage(chat(30));
  assert.equal(events.find((e) => e.strategy === 'summarize').status, 'applied');
  // node --test would report the test as hanging if a 60 s timer were left running.
});

test('summarizeTimeoutMs must be positive', async () => {
  await assert.rejects(() => createCompactor({ summarizeTimeoutMs: 0 }), (e) => e instanceof CompactorError && e.field === 'summarizeTimeoutMs');
});

test('wrapTools: a store failure at tool-return time hands the model the full output (nothing lost)', async () => {
  const store = new MemoryStore();
  let fail = true;
  const flaky = { read: (p) => store.read(p), list: (p) => store.list(p), delete: (p) => store.delete(p),
    write: async (p, t) => { if (fail) throw new Error('EIO'); return store.write(p, t); } };
  const events = [];
  const compactor = await createCompactor({ contextWindow: 16_000, store: flaky, onEvent: (e) => events.push(e) });
  const tools = compactor.wrapTools({ search: { description: 's', execute: async ({ q }) => big(q) }, small: { execute: async () => 'tiny' } });
  assert.equal(await tools.search.execute({ q: 'a' }, { toolCallId: 't1' }), big('a'), 'failed write: the original output');
  assert.equal(events.at(-1).status, 'failed');
  assert.equal(events.at(-1).error, 'EIO');
  fail = false;
  const preview = await tools.search.execute({ q: 'b' }, { toolCallId: 't2' });
  assert.ok(typeof preview === 'string' && preview.length < big('b').length / 10, 'offloaded: a preview');
  const path = events.at(-1).path;
  assert.ok(preview.includes(path), 'the preview names the stored path');
  assert.equal(await store.read(path), big('b'), 'stored byte for byte before the preview was returned');
  assert.equal(await tools.small.execute({}, { toolCallId: 't3' }), 'tiny', 'small outputs pass through');
  assert.equal(compactor.stats().filesWritten, 1);
  assert.equal(compactor.stats().actionsFailed, 1);
});

test('a transcript that cannot be written: no summarizer call, nothing removed', async () => {
  const store = new MemoryStore();
  let called = 0;
  const failing = { read: (p) => store.read(p), list: (p) => store.list(p), delete: (p) => store.delete(p),
    write: async (p, t) => { if (p.startsWith('/conversation_history/')) throw new Error('read-only'); return store.write(p, t); } };
  const compactor = await createCompactor({ contextWindow: 8_000, store: failing, summarize: async () => (called++, 'never used') });
  const messages = chat(30);
  const { messages: out, events } = await compactor.manage(messages);
  assert.equal(called, 0);
  assert.equal(out.length, messages.length, 'nothing removed');
  assert.deepEqual(out, messages);
  assert.ok(events.some((e) => e.status === 'failed' && e.error === 'read-only'));
});

test('racing manage() and compact() on one compactor: serialized, each sees a consistent plan', async () => {
  const order = [];
  const compactor = await createCompactor({
    contextWindow: 8_000,
    summarize: async (request) => {
      order.push('summarize-start');
      await new Promise((r) => setTimeout(r, 50));
      order.push('summarize-end');
      return `Summary of ${request.messages.length} message(s).`;
    },
  });
  // The second conversation goes on past the first's summary, so it has a span of its own.
  const [a, b] = await Promise.all([compactor.manage(chat(30)), compactor.compact(chat(45), { instructions: 'Keep numbers.' })]);
  assert.deepEqual(order, ['summarize-start', 'summarize-end', 'summarize-start', 'summarize-end'], 'the second ran after the first');
  for (const r of [a, b]) assert.ok(r.events.some((e) => e.strategy === 'summarize' && e.status === 'applied'));
});

test('a store whose read or list answers something other than text is a store_failed naming the call, never a value handed to the core', async () => {
  // A hand-written store over a JSON-parsing backend (unstorage getItem) answers objects; a
  // wrong value passed to the core as text corrupted its memory ("memory access out of bounds").
  const memory = new MemoryStore();
  await memory.write('/tool_outputs/a.txt', 'hello');
  for (const value of [42, { a: 1 }, new Uint8Array([104, 105]), true, ['x']]) {
    const store = { read: async () => value, write: (p, t) => memory.write(p, t), list: async () => value, delete: (p) => memory.delete(p) };
    const compactor = await createCompactor({ model: 'gpt-4o', store });
    const got = Array.isArray(value) ? 'an array' : value instanceof Uint8Array ? 'Uint8Array' : typeof value;
    assert.equal(await compactor.tools().read_file.execute({ path: '/tool_outputs/a.txt' }), `Error: store read of "/tool_outputs/a.txt" returned ${got}: expected a string, or null when nothing is stored there`);
    if (!Array.isArray(value)) assert.match(await recoveryTools(store).ls.execute({}), new RegExp(`^Error: store list of "/" returned ${got}: expected an array of paths`));
    await assert.rejects(compactor.systemPrompt('base'), (e) => e.code === 'store_failed' && e.details.path === '/memories/AGENTS.md' && e.details.op === 'read');
    await assert.rejects(loadState(store, '/s.json'), (e) => e.code === 'store_failed' && /returned/.test(e.message));
    const kept = await createCompactor({ model: 'gpt-4o', store, statePath: '/s.json' });
    const result = await kept.manage([{ role: 'user', content: 'hi' }]);
    assert.match(result.stateError, /store read of "\/s.json" returned/);
  }
  // The core is whole afterwards.
  assert.equal(await recoveryTools(memory).read_file.execute({ path: '/tool_outputs/a.txt' }), '1\thello');
});

test('saveState to a path of its own whose write throws is a store_failed naming saveState and the path', async () => {
  const store = { read: async () => null, write: async () => { throw new Error('EACCES'); }, list: async () => [], delete: async () => {} };
  const compactor = await createCompactor({ model: 'gpt-4o', store });
  await assert.rejects(compactor.saveState('/elsewhere.json'), (e) => e instanceof CompactorError && e.code === 'store_failed' && e.message === 'saveState: writing /elsewhere.json failed: EACCES' && e.details.path === '/elsewhere.json');
});

test('an onEvent that throws is logged, every event is still told, and the call returns its result', async () => {
  const told = [];
  const logged = [];
  const error = console.error;
  console.error = (...args) => logged.push(args);
  try {
    const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000, onEvent: (e) => { told.push(e.strategy); throw new Error('UI bug'); } });
    const messages = [{ role: 'user', content: 'go' }, { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'q', input: {} }] }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'q', output: { type: 'text', value: big('x') } }] }];
    const result = await compactor.manage(messages);
    assert.ok(result.events.length > 0);
    assert.deepEqual(told, result.events.map((e) => e.strategy));
    assert.equal(logged.length, told.length);
    assert.match(logged[0][0], /onEvent threw \(event: offload;/);
    assert.equal(logged[0][1].message, 'UI bug');
    assert.notEqual(result.messages[2], messages[2], 'offloaded');
  } finally {
    console.error = error;
  }
});
