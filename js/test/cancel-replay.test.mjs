// A cancelled compaction sends the conversation with the earlier compactions replayed (issue 35,
// class 4). A chat in an 8,000-token window is summarized; later turns are cancelled by
// `onPreCompact`. Three host shapes get the app's raw history: a long-lived compactor (the same
// objects every turn), a new compactor per call with `statePath` on a shared store (a stateless
// route), and one compactor handed fresh objects every call (what the middleware sees). Before
// the fix the two fresh-object shapes returned the raw input on a cancel: 12k tokens in an 8k
// window, the summary gone, though the cancel was judged on the replayed count.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as cc from '../dist/entry/node.js';
import { prose, reply } from '../../tests/runtimes/stateless.mjs';

const WINDOW = 8_000;
const SUMMARY = '## Session Intent\nScripted summary';

test('a cancelled compaction returns the replayed conversation, the same for every host shape and under the hard limit', async () => {
  let cancelling = false;
  const asked = [0, 0, 0];
  const options = (shape) => ({
    contextWindow: WINDOW,
    summarize: (request) => `${SUMMARY} of ${request.prompt.length} characters.`,
    onPreCompact: () => {
      asked[shape] += 1;
      return cancelling ? { cancel: true } : undefined;
    },
  });
  const longLived = await cc.createCompactor(options(0));
  // Counts a prompt as sent: a compactor with no record replays nothing onto it.
  const probe = await cc.createCompactor({ contextWindow: WINDOW });
  const sent = (messages) => probe.usage(messages).tokens;
  const fresh = await cc.createCompactor(options(2));
  const store = new cc.MemoryStore();
  const statePath = '/state/chat.json';
  const raw = [{ role: 'system', content: 'You are a helpful research agent.' }];
  let summarized = 0;
  let cancels = 0;
  let overridden = 0;
  for (let t = 0; t < 60 && overridden === 0; t++) {
    raw.push({ role: 'user', content: `Turn ${t}: ${prose(t, 30)}` });
    // Background summaries are back before the next request (a route's `waitUntil`).
    const a = await longLived.manage(raw);
    await longLived.settled();
    const handler = await cc.createCompactor({ ...options(1), store, statePath });
    const b = await handler.manage(structuredClone(raw));
    await handler.settled();
    handler.dispose();
    const c = await fresh.manage(structuredClone(raw));
    await fresh.settled();
    const results = [a, b, c];
    const texts = results.map((r) => JSON.stringify(r.messages));
    const sizes = () => results.map((r) => `${sent(r.messages)} tokens${r.cancelled ? ' (cancelled)' : ''}`).join(', ');
    assert.ok(texts[1] === texts[0], `turn ${t}: the stateless route sends what the long-lived compactor sends: ${sizes()}`);
    assert.ok(texts[2] === texts[0], `turn ${t}: fresh objects send what the long-lived compactor sends: ${sizes()}`);
    assert.deepEqual(results.map((r) => r.cancelled ?? false), [a.cancelled ?? false, a.cancelled ?? false, a.cancelled ?? false], `turn ${t}: cancelled in every shape or none`);
    assert.deepEqual(results.map((r) => r.cancelOverridden ?? false), [a.cancelOverridden ?? false, a.cancelOverridden ?? false, a.cancelOverridden ?? false]);
    if (a.events.some((e) => e.strategy === 'summarize' && e.status === 'applied')) summarized += 1;
    // Cancelling starts once the chat has been summarized: the summary must survive the cancel.
    if (summarized > 0) cancelling = true;
    if (a.cancelled) {
      cancels += 1;
      const plan = a.plan;
      for (const [shape, r] of results.entries()) {
        const tokens = sent(r.messages);
        assert.ok(tokens <= plan.trigger.hardLimit, `turn ${t}, shape ${shape}: ${tokens} tokens returned, over the hard limit ${plan.trigger.hardLimit}`);
        assert.equal(tokens, r.plan.tokensBefore, `turn ${t}, shape ${shape}: the cancel was judged on what is returned`);
        assert.ok(r.messages.some((m) => typeof m.content === 'string' && m.content.includes(SUMMARY)), `turn ${t}, shape ${shape}: the earlier summary is kept`);
        assert.equal(r.events.length, 0, 'a cancel applies nothing new');
      }
      // The raw history is over the window: returning it (the bug) would overflow.
      assert.ok(sent(raw) > WINDOW, `the raw history is ${sent(raw)} tokens`);
    }
    if (a.cancelOverridden) overridden += 1;
    raw.push(...reply(t));
  }
  assert.ok(summarized > 0, 'the chat was summarized before the cancels');
  assert.ok(cancels >= 1, `at least one cancelled turn (${cancels})`);
  assert.ok(overridden >= 1, 'the cancels ended with an override at the hard limit');
  assert.equal(asked[1], asked[0], 'the stateless route was asked as often as the long-lived compactor');
  assert.equal(asked[2], asked[0]);
  // A cancel changes no state: the long-lived compactor's stats and the route's saved state agree.
  assert.equal(longLived.stats().compactions, fresh.stats().compactions);
});
