// The versioned, conditional state at statePath on stores without a server: MemoryStore's and
// CompositeStore's writeIf, the read-compare-write fallback (KvStore), a call that keeps losing
// (state_conflict), a lost save that does not ask the summarizer twice, a stale turn that saves
// nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactorError, CompositeStore, KvStore, MemoryStore, createCompactor, init } from '../dist/entry/node.js';
import { chat } from '../test-helpers/conversations.mjs';

await init();
const PATH = '/state/compactor.json';
const big = (fill) => Array.from({ length: 3000 }, (_, i) => `line ${i}: ${fill.repeat(20)}`).join('\n');
const turn = (id, fill) => [
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'bash', input: { cmd: id } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'bash', output: { type: 'text', value: big(fill) } }] },
];
const start = [{ role: 'user', content: 'go' }];

test('MemoryStore and CompositeStore: writeIf writes only over what was expected', async () => {
  const memory = new MemoryStore();
  assert.equal(await memory.writeIf('/a', null, 'one'), true);
  assert.equal(await memory.writeIf('/a', null, 'two'), false);
  assert.equal(await memory.writeIf('/a', 'one', 'two'), true);
  assert.equal(await memory.read('/a'), 'two');
  await assert.rejects(() => memory.writeIf('/../a', null, 'x'), (e) => e.code === 'invalid_path');
  const state = new MemoryStore();
  const composite = new CompositeStore(new MemoryStore(), { '/state/': state });
  assert.equal(await composite.writeIf(PATH, null, 's'), true);
  assert.equal(await state.read(PATH), 's', 'routed to the owning store');
  assert.equal(await composite.writeIf(PATH, 'x', 't'), false);
});

test('a store without writeIf (KvStore): read-compare-write still keeps both racing turns', async () => {
  const data = new Map();
  const store = new KvStore({ get: (k) => data.get(k) ?? null, put: (k, v) => void data.set(k, v), delete: (k) => void data.delete(k), keys: (p) => [...data.keys()].filter((k) => k.startsWith(p)) });
  assert.equal(store.writeIf, undefined);
  const options = { contextWindow: 32_000, store, statePath: PATH };
  await (await createCompactor(options)).manage([...start, ...turn('c1', 'x')]);
  const a = await createCompactor(options);
  const b = await createCompactor(options);
  await a.manage([...start, ...turn('c1', 'x'), ...turn('c2', 'y')]);
  const rb = await b.manage([...start, ...turn('c1', 'x'), ...turn('c3', 'z')]);
  assert.equal(rb.stateError, undefined);
  const saved = JSON.parse(await store.read(PATH));
  assert.equal(saved.revision, 3);
  assert.equal(saved.record.edits.length, 3);
});

test('a call that keeps losing the race throws state_conflict after 5 rounds', async () => {
  const store = new MemoryStore();
  let attempts = 0;
  store.writeIf = async () => (attempts++, false);
  const compactor = await createCompactor({ contextWindow: 32_000, store, statePath: PATH });
  await assert.rejects(() => compactor.manage([...start, ...turn('c1', 'x')]), (e) => e instanceof CompactorError && e.code === 'state_conflict' && e.details.attempts === 5 && e.details.path === PATH);
  assert.equal(attempts, 5);
  assert.ok((await store.list('/tool_outputs/')).length === 1, 'the offload itself was stored');
});

test('a lost save runs the call again without asking the summarizer twice; a stale turn saves nothing', async () => {
  const store = new MemoryStore();
  const real = store.writeIf.bind(store);
  let lose = 1;
  store.writeIf = async (...args) => (lose-- > 0 ? false : real(...args));
  let summaries = 0;
  const summarize = (request) => (summaries++, `## Session Intent\nSummary ${request.prompt.length}.`);
  const options = { contextWindow: 8_000, store, statePath: PATH, summarize };
  const raw = chat(30);
  const result = await (await createCompactor(options)).manage(raw);
  assert.ok(result.events.some((e) => e.strategy === 'summarize' && e.status === 'applied'));
  assert.equal(summaries, 1, 'the rerun reused the summary');
  const saved = JSON.parse(await store.read(PATH));
  assert.equal(saved.revision, 1);
  assert.equal(saved.conversation.length, raw.length * 8);
  // An earlier turn of the same conversation (a late retry): answers, saves nothing.
  const stale = await createCompactor(options);
  await stale.manage(raw.slice(0, 40));
  assert.equal(await store.read(PATH), JSON.stringify(saved), 'the newer state stays');
  // A different conversation of the same length is not stale: it saves.
  const other = await createCompactor(options);
  const changed = structuredClone(raw.slice(0, 40));
  changed[1].content += ' (edited)';
  await other.manage(changed);
  assert.equal(JSON.parse(await store.read(PATH)).revision, 2);
});

test('a conditional write applied but reported lost (a re-sent command refused by its own write, a dropped reply) counts as written: no state_conflict, no wait on its own lease', { timeout: 30_000 }, async () => {
  for (const lost of ['refused', 'thrown']) {
    const store = new MemoryStore();
    const real = store.writeIf.bind(store);
    let lies = 0;
    store.writeIf = async (...args) => {
      if (!(await real(...args))) return false;
      lies += 1;
      if (lost === 'thrown') throw new Error('connection reset');
      return false;
    };
    let summaries = 0;
    const summarize = (request) => (summaries++, `## Session Intent\nSummary ${request.prompt.length}.`);
    // Waiting on its own lease would take summarizeTimeoutMs: past this test's timeout.
    const options = { contextWindow: 8_000, store, statePath: PATH, summarize, summarizeTimeoutMs: 120_000 };
    const raw = chat(30);
    const result = await (await createCompactor(options)).manage(raw);
    assert.equal(result.stateError, undefined, lost);
    assert.ok(result.events.some((e) => e.strategy === 'summarize' && e.status === 'applied'), lost);
    assert.equal(summaries, 1, lost);
    assert.ok(lies >= 3, `${lost}: the lease, its summary and the state went through writeIf (${lies})`);
    assert.equal(JSON.parse(await store.read(PATH)).revision, 1, lost);
    const again = await (await createCompactor(options)).manage(raw);
    assert.deepEqual(again.messages, result.messages, lost);
    assert.equal(summaries, 1, `${lost}: the saved state replays the summary`);
  }
});

test('a conditional write that fails without writing still fails', async () => {
  const store = new MemoryStore();
  store.writeIf = async () => {
    throw new Error('connection refused');
  };
  const compactor = await createCompactor({ contextWindow: 32_000, store, statePath: PATH });
  const result = await compactor.manage([...start, ...turn('c1', 'x')]).catch((error) => ({ thrown: error }));
  const error = result.thrown ?? result.stateError;
  assert.ok(error, 'the failed save is reported');
  assert.match(String(error.message ?? error), /connection refused/);
  assert.equal(await store.read(PATH), null);
});

test('the core says when a save is due: a call that changed the state saves once, one that changed nothing saves nothing, a state of the app’s own is saved over what is stored', async () => {
  const store = new MemoryStore();
  const writes = [];
  const writeIf = store.writeIf.bind(store);
  store.writeIf = async (path, expected, text) => (writes.push(path), writeIf(path, expected, text));
  let now = Date.UTC(2026, 0, 1, 12, 0, 0);
  const options = { model: 'gpt-4o', contextWindow: 32_000, store, statePath: PATH, now: () => now };
  const compactor = await createCompactor(options);
  const history = [...start, ...turn('c1', 'x')];
  const first = await compactor.manage(history);
  assert.equal(first.events.length, 1);
  assert.deepEqual(writes, [PATH], 'the offload and the call time: one save');
  // The same conversation again, within the minute: the state is as saved, so nothing is written.
  await compactor.manage(first.messages);
  assert.equal(writes.length, 1);
  // A minute later the call time changed (kept to the minute): one save, the next revision.
  now += 60_000;
  await compactor.manage(first.messages);
  assert.equal(writes.length, 2);
  assert.equal(JSON.parse(await store.read(PATH)).revision, 2);
  // A compactor started from a state of the app's (`state`) saves over what is stored, even
  // when its calls change nothing of it; a refused save of it is judged like any other.
  const own = await createCompactor({ ...options, state: compactor.state() });
  await own.manage(first.messages);
  assert.equal(writes.length, 3);
  assert.equal(JSON.parse(await store.read(PATH)).revision, 3);
  // saveState() at statePath writes even when nothing changed; when another compactor saved
  // since (a double submit's onFinish), it takes that state, which its next save is conditional
  // on, and does not throw.
  await own.saveState();
  assert.equal(JSON.parse(await store.read(PATH)).revision, 4);
  const theirs = JSON.parse(await store.read(PATH));
  await compactor.saveState();
  assert.equal(JSON.parse(await store.read(PATH)).revision, 4, 'nothing written over the newer state');
  const { revision: _, conversation: __, ...core } = theirs;
  assert.deepEqual(compactor.state(), core, 'the compactor holds the stored state');
  await compactor.saveState();
  assert.equal(JSON.parse(await store.read(PATH)).revision, 5, 'its next save lands over it');
  const after = await compactor.manage([...first.messages, ...turn('c9', 'q')]);
  assert.equal(after.stateError, undefined);
  assert.equal(JSON.parse(await store.read(PATH)).revision, 6);
  // A state deleted (or expired) since: the explicit save writes this one's again, nothing lost.
  const mine = compactor.state();
  await store.delete(PATH);
  await compactor.saveState();
  const { revision: ___, conversation: ____, ...again } = JSON.parse(await store.read(PATH));
  assert.deepEqual(again, mine);
  assert.deepEqual(compactor.state(), mine);
});

test('saveState() is a call of the core: a compactor given its state reads the path first, saves over it, and a failing store is a typed store_failed naming the path', async () => {
  const store = new MemoryStore();
  const first = await createCompactor({ contextWindow: 32_000, store, statePath: PATH });
  const history = [...start, ...turn('c1', 'x')];
  await first.manage(history);
  const stored = JSON.parse(await store.read(PATH));
  // Given the state, not read from the path: its first act, an explicit save, reads the path
  // (what a save is conditional on) and, for no conversation yet (an earlier turn of the
  // stored one), saves nothing.
  const reads = [];
  const read = store.read.bind(store);
  store.read = async (path) => (reads.push(path), read(path));
  const own = await createCompactor({ contextWindow: 32_000, store, statePath: PATH, state: first.state() });
  assert.deepEqual(reads, [], 'nothing read before the first call');
  await own.saveState();
  assert.deepEqual(reads, [PATH], 'the state was read by the save');
  assert.equal(JSON.parse(await store.read(PATH)).revision, stored.revision);
  // A later turn saves over it; an explicit save then saves again, though nothing changed.
  await own.manage([...history, ...turn('c2', 'y')]);
  assert.equal(JSON.parse(await store.read(PATH)).revision, stored.revision + 1);
  await own.saveState();
  assert.equal(JSON.parse(await store.read(PATH)).revision, stored.revision + 2);
  assert.equal(reads.filter((path) => path === PATH).length, 4, 'read once by the compactor, then only by the checks above');
  store.writeIf = async () => {
    throw new Error('the disk is full');
  };
  await assert.rejects(
    () => own.saveState(),
    (e) => e instanceof CompactorError && e.code === 'store_failed' && e.details.path === PATH && /the disk is full/.test(e.message) && e.message.includes(PATH),
  );
});

test('an app file at statePath that is not a state is refused, never saved over; nor is a state handed in without a version', async () => {
  for (const text of ['{}', '{"not":"a state"}', '{"version":0}']) {
    const store = new MemoryStore();
    await store.write('/chat/data.json', text);
    await assert.rejects(() => createCompactor({ store, statePath: '/chat/data.json' }), (e) => e instanceof CompactorError && e.code === 'invalid_config' && /not a saved compactor state/.test(e.message), text);
    assert.equal(await store.read('/chat/data.json'), text, 'the file is as it was');
  }
  await assert.rejects(() => createCompactor({ state: { foo: 1 } }), (e) => e.code === 'invalid_config' && e.details.field === 'state');
  const saved = (await createCompactor({})).state();
  assert.ok((await createCompactor({ state: saved })).state().version >= 1, 'a saved state is taken');
});
