// What a call does after losing its state save (issue 35, class 5), step by step on a
// MemoryStore: other requests' saves are slipped in right before this call's conditional writes.
// - Another branch saved first, twice: the call merged once, then answers from its own run,
//   unsaved, and the other branch's state stays (before: it ran again until state_conflict).
// - The same branch moved on five times (later turns of this conversation's prefix kept landing):
//   the call answers, unsaved (before: state_conflict after 5 rounds).
// - The state read at creation failed: the call plans without it, and its save finds the state
//   there and runs again on it, so nothing stored is overwritten and no error remains.
// A store that refuses saves over the very state it holds still throws state_conflict
// (state.test.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';

await init();
const PATH = '/state/compactor.json';
const big = (fill) => Array.from({ length: 3000 }, (_, i) => `line ${i}: ${fill.repeat(20)}`).join('\n');
const turn = (id, fill) => [
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'bash', input: { cmd: id } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'bash', output: { type: 'text', value: big(fill) } }] },
];
const start = [{ role: 'user', content: 'go' }, ...turn('c1', 'a')];

/** A store whose state saves first run the next of `before` (another request saving). */
function racedStore() {
  const store = new MemoryStore();
  const real = store.writeIf.bind(store);
  const plain = { read: (p) => store.read(p), write: (p, t) => store.write(p, t), list: (p) => store.list(p), delete: (p) => store.delete(p), writeIf: real };
  const before = [];
  let saves = 0;
  store.writeIf = async (path, expected, text) => {
    if (path === PATH) {
      saves += 1;
      const other = before.shift();
      if (other) await other();
    }
    return real(path, expected, text);
  };
  /** Another request, on a store without the race, saving `messages`. */
  const save = (messages) => async () => {
    const result = await (await createCompactor({ contextWindow: 32_000, store: plain, statePath: PATH })).manage(messages);
    assert.equal(result.stateError, undefined);
  };
  return { store, before, save, saves: () => saves };
}

const stored = async (store) => JSON.parse(await store.read(PATH));
const offloadedIds = (state) => state.record.edits.map((e) => e.toolCallId).sort();

test('another branch saved first, twice: the call merges once, then answers unsaved and leaves the other branch its state', async () => {
  const { store, before, save, saves } = racedStore();
  await save(start)();
  before.push(save([...start, ...turn('c2', 'b')]), save([...start, ...turn('c4', 'd')]));
  const told = [];
  const options = { contextWindow: 32_000, store, statePath: PATH };
  const mine = [...start, ...turn('c3', 'c')];
  const result = await (await createCompactor({ ...options, onEvent: (e) => told.push(e) })).manage(mine);
  assert.equal(result.stateError, undefined);
  assert.equal(saves(), 2, 'saved once on its own state, once merged');
  // Two rounds ran; onEvent heard the answered round's events, once each.
  assert.deepEqual(told, result.events);
  const part = result.messages[4].content[0];
  assert.match(part.output.value, /\/tool_outputs\//, 'its own output is offloaded');
  assert.equal(await store.read(result.events.find((e) => e.toolCallId === 'c3').path), big('c'));
  const state = await stored(store);
  assert.equal(state.revision, 3);
  assert.deepEqual(offloadedIds(state), ['c1', 'c2', 'c4'], 'the other branches\' state, not overwritten');
  // The same call with one branch ahead of it: it merges and lands, both branches recorded.
  before.push(save([...start, ...turn('c5', 'e')]));
  const again = await (await createCompactor(options)).manage([...start, ...turn('c6', 'f')]);
  assert.equal(again.stateError, undefined);
  assert.deepEqual(offloadedIds(await stored(store)), ['c1', 'c2', 'c4', 'c5', 'c6']);
});

test('the same branch moved on five times under the call: it answers, unsaved', async () => {
  const { store, before, save } = racedStore();
  await save(start)();
  const ids = ['c2', 'c3', 'c4', 'c5', 'c6', 'c7'];
  const turns = ids.map((id, i) => turn(id, 'bcdefg'[i]));
  const prefix = (n) => [...start, ...turns.slice(0, n).flat()];
  for (let n = 1; n <= 5; n++) before.push(save(prefix(n)));
  const result = await (await createCompactor({ contextWindow: 32_000, store, statePath: PATH })).manage(prefix(6));
  assert.equal(result.stateError, undefined);
  assert.ok(result.events.some((e) => e.toolCallId === 'c7' && e.status === 'applied'), 'its own edit applied');
  const state = await stored(store);
  assert.equal(state.revision, 6, 'the five saves that landed stand');
  // The next request of the branch plans the unsaved edit again, to the same prompt.
  const next = await (await createCompactor({ contextWindow: 32_000, store, statePath: PATH })).manage(prefix(6));
  assert.deepEqual(next.messages, result.messages);
  assert.equal((await stored(store)).revision, 7);
});

test('a state read that failed at creation: planned without it, then found by the save and run again on it', async () => {
  const { store, save } = racedStore();
  await save(start)();
  const reference = await (await createCompactor({ contextWindow: 32_000, store: new MemoryStore(), statePath: PATH })).manage([...start, ...turn('c2', 'b')]);
  const read = store.read.bind(store);
  let failing = 1;
  store.read = async (path) => {
    if (path === PATH && failing-- > 0) throw new Error('connection reset');
    return read(path);
  };
  const compactor = await createCompactor({ contextWindow: 32_000, store, statePath: PATH });
  const result = await compactor.manage([...start, ...turn('c2', 'b')]);
  assert.equal(result.stateError, undefined, 'the save read the state back and the call ran on it');
  assert.deepEqual(result.messages, reference.messages);
  const state = await stored(store);
  assert.equal(state.revision, 2, 'saved over the state it found, not over nothing');
  assert.deepEqual(offloadedIds(state), ['c1', 'c2']);
  // With nothing to save, a call that could not read the state says so.
  failing = 1;
  const blind = await createCompactor({ contextWindow: 32_000, store, statePath: PATH });
  const quiet = await blind.manage([{ role: 'user', content: 'hello' }]);
  assert.match(quiet.stateError, /state not read from \/state\/compactor\.json: connection reset; planned from the messages alone/);
});
