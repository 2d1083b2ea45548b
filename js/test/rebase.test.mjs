// An app that keeps the raw history (AI SDK: messages.push(...result.responseMessages)) sends
// the last compaction's input again every turn: the compactor continues from that compaction's
// output (compactor.ts #rebase) instead of compacting the same span again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';

await init();

const words = (i, n) => Array.from({ length: n }, (_, k) => `turn ${i} word ${(k * 31 + i) % 97}`).join(' ');

function chat(from, to) {
  const messages = [];
  for (let i = from; i < to; i++) {
    messages.push({ role: 'user', content: words(i, 60) });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: words(i + 1000, 80) }] });
  }
  return messages;
}

async function compactor() {
  const requests = [];
  const c = await createCompactor({
    model: 'gpt-4o',
    contextWindow: 8_000,
    store: new MemoryStore(),
    summarize: (request) => {
      requests.push(request);
      return `Summary ${requests.length} of the chat so far.`;
    },
  });
  return { c, requests };
}

test('the raw history grown by a turn continues from the last compaction: no second summary, same prefix', async () => {
  const { c, requests } = await compactor();
  const history = chat(0, 40);
  const first = await c.manage(history);
  assert.equal(requests.length, 1, 'the first call summarizes');
  assert.ok(first.messages.length < history.length);
  history.push(...chat(40, 41));
  const second = await c.manage(history);
  assert.equal(requests.length, 1, 'the same span is not summarized again');
  assert.deepEqual(second.messages.slice(0, first.messages.length), first.messages, 'the compacted prefix is unchanged');
  assert.deepEqual(second.messages.slice(first.messages.length), history.slice(40 * 2));
  // Growing until the window fills again compacts again — from the compacted prefix.
  for (let t = 41; requests.length === 1 && t < 200; t++) {
    history.push(...chat(t, t + 1));
    await c.manage(history);
  }
  assert.equal(requests.length, 2, 'a later overflow summarizes once more');
  assert.ok(JSON.stringify(requests[1]).includes('Summary 1 of the chat'), 'the second summary builds on the first');
});

test('a history that no longer starts with the last input is compacted afresh', async () => {
  const { c, requests } = await compactor();
  const history = chat(0, 40);
  await c.manage(history);
  assert.equal(requests.length, 1);
  // An edited early message (a new object, as immutable updates make) breaks the match.
  const edited = [{ role: 'user', content: 'a different opening' }, ...history.slice(1), ...chat(40, 41)];
  const result = await c.manage(edited);
  assert.equal(requests.length, 2, 'summarized again: the input changed');
  assert.ok(!JSON.stringify(result.messages).includes('Summary 1 of the chat'));
});

test('the same history sent twice gives the same messages, with nothing new stored', async () => {
  const { c } = await compactor();
  const history = chat(0, 40);
  const first = await c.manage(history);
  const files = await c.store.list('/');
  const again = await c.manage(history);
  assert.deepEqual(again.messages, first.messages);
  assert.deepEqual(await c.store.list('/'), files);
  assert.equal(again.events.length, 0);
});
