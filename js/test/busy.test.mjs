// A call of a compactor made from inside one of its own calls (its onPreCompact hook or
// summarizer) would wait for the call that waits for it: a compactor runs one call at a time.
// Made as the callback starts, it is the typed `busy` error, not a hang; the compactor stays
// whole. A copy of the state to another path is a plain write, fine anywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createCompactor, MemoryStore } from '../dist/entry/node.js';
import { chat } from '../test-helpers/conversations.mjs';

/** Rejects after `ms`: a hang fails the test instead of stalling it. */
const within = (promise, ms = 20_000) =>
  Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref())]);

test('an onPreCompact hook that awaits its own compactor\'s saveState at statePath is busy, not a hang', async () => {
  let compactor;
  const store = new MemoryStore();
  compactor = await createCompactor({ contextWindow: 8_000, store, statePath: '/state.json', onPreCompact: async () => { await compactor.saveState(); } });
  await assert.rejects(within(compactor.manage(chat(24).slice(0, 40))), (error) => {
    assert.equal(error.code, 'busy');
    assert.deepEqual(error.details, { call: 'saveState' });
    assert.match(error.message, /onPreCompact hook or summarizer/);
    return true;
  });
});

test('a hook or summarizer that calls manage is busy; the compactor stays whole', async () => {
  let compactor;
  const calls = [];
  compactor = await createCompactor({
    contextWindow: 8_000,
    summarize: (request) => {
      calls.push(compactor.manage(chat(3)).catch((error) => error.code));
      return '## Session Intent\nsummarized';
    },
  });
  const result = await within(compactor.manage(chat(24).slice(0, 40)));
  // The summarizer's own call was refused; the call it served went on.
  assert.deepEqual(await Promise.all(calls), ['busy']);
  assert.ok(result.events.some((e) => e.strategy === 'summarize' && e.status === 'applied'), result.events);
  // A copy of the state to another path from the hook: a plain write.
  const store = new MemoryStore();
  let other;
  other = await createCompactor({ contextWindow: 8_000, store, onPreCompact: async () => { await other.saveState('/copy.json'); } });
  const copied = await within(other.manage(chat(24).slice(0, 40)));
  assert.ok(copied.events.length > 0 && (await store.read('/copy.json')) !== null);
  // The compactor whose summarizer was refused serves the next call as ever.
  const next = await within(compactor.manage([...result.messages, { role: 'user', content: 'and?' }]));
  assert.equal(next.messages.at(-1).content, 'and?');
});

test('onEvent may save the state: its call is queued after the one that told it', async () => {
  const store = new MemoryStore();
  let compactor;
  const saves = [];
  compactor = await createCompactor({ contextWindow: 8_000, store, statePath: '/state.json', onEvent: () => { saves.push(compactor.saveState()); } });
  const result = await within(compactor.manage(chat(24).slice(0, 40)));
  await within(Promise.all(saves));
  assert.ok(result.events.length > 0 && saves.length === result.events.length);
  assert.ok(JSON.parse(await store.read('/state.json')).revision > 1);
});
