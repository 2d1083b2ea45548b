// Idle-aware prefix breaks (issue 32, item 2) from the host's side: the compactor's clock
// (`now`) goes to the core with every call, the state records when the last call went out, and
// a call after the provider's cache lifetime takes the edits a warm cache defers: in a
// long-lived compactor and in a stateless route (a new compactor per request, the state in the
// store) alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as cc from '../dist/entry/node.js';
import { prose } from '../test-helpers/conversations.mjs';

const T0 = Date.UTC(2026, 0, 5, 9);
const MINUTE = 60_000;
const WINDOW = 16_000;

/** An agent session of `turns` read_file steps (results tier 2 can mask). */
function agent(turns) {
  const messages = [{ role: 'system', content: 'You are a coding agent.' }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: `Step ${t}: ${prose(t, 30)}` });
    messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${t}`, toolName: 'read_file', input: { path: `/src/m${t}.rs` } }] });
    messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${t}`, toolName: 'read_file', output: { type: 'text', value: prose(t + 1, 120) } }] });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: prose(t + 2, 60) }] });
  }
  return messages;
}

/** The shortest session between tier 2's target (35 %) and its trigger (70 %) past 50 %. */
async function between() {
  const probe = await cc.createCompactor({ model: 'gpt-4o', contextWindow: WINDOW });
  for (let turns = 1; turns < 200; turns++) {
    const messages = agent(turns);
    if (probe.usage(messages).tokens > WINDOW * 0.5) return messages;
  }
  throw new Error('no session long enough');
}

test('a long-lived compactor: a warm call changes nothing, a call after the lifetime takes the deferred edits', async () => {
  const messages = await between();
  let clock = T0;
  const compactor = await cc.createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, now: () => clock });
  const first = await compactor.manage(messages);
  assert.equal(first.events.length, 0);
  assert.equal(compactor.state().lastCallAt, T0, 'the call recorded its time');
  clock += 9 * MINUTE;
  const warm = await compactor.manage(messages);
  assert.equal(warm.events.length, 0, 'warm: nothing');
  assert.ok(!warm.plan.notes.some((n) => n.type === 'cache-expired'));
  // Kept to the minute: eleven minutes may be ten and a bit since the call; twelve are not.
  clock += 11 * MINUTE;
  assert.equal(compactor.plan(messages).actions.length, 0);
  clock += MINUTE;
  const cold = await compactor.manage(messages);
  const note = cold.plan.notes.find((n) => n.type === 'cache-expired');
  assert.deepEqual(note, { type: 'cache-expired', idleSeconds: 720, lifetimeSeconds: 600 });
  assert.ok(cold.events.length > 0 && cold.events.every((e) => e.strategy === 'mask'), JSON.stringify(cold.events.map((e) => e.strategy)));
  assert.ok(cold.plan.tokensAfter < warm.plan.tokensAfter);
  assert.equal(cold.plan.cache.breakCost, 0);
  assert.equal(compactor.state().lastCallAt, clock);
});

test('a stateless route with the state in the store takes the same edits at the same call', async () => {
  const messages = await between();
  const store = new cc.MemoryStore();
  let clock = T0;
  const request = async (history) => {
    const compactor = await cc.createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, store, statePath: '/state.json', now: () => clock });
    try {
      return await compactor.manage(history);
    } finally {
      compactor.dispose();
    }
  };
  const longLived = await cc.createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, now: () => clock });
  const prompts = [];
  for (const [i, gap] of [0, 2 * MINUTE, 30 * MINUTE, MINUTE].entries()) {
    clock += gap;
    const history = [...messages, ...(i > 0 ? [{ role: 'user', content: `Follow-up ${i}` }] : [])];
    const a = await longLived.manage(history);
    const b = await request(history);
    assert.deepEqual(b.messages, a.messages, `call ${i}: the same prompt`);
    prompts.push(a);
  }
  // Only the call after 30 minutes broke the prefix.
  assert.deepEqual(prompts.map((p) => p.events.length > 0), [false, false, true, false]);
  const saved = JSON.parse(await store.read('/state.json'));
  assert.equal(saved.lastCallAt, clock);
});

test('a bad clock is a typed error naming the option', async () => {
  await assert.rejects(cc.createCompactor({ now: 5 }), (e) => e.code === 'invalid_config' && e.field === 'now');
  const compactor = await cc.createCompactor({ now: () => Number.NaN });
  await assert.rejects(compactor.manage([{ role: 'user', content: 'hi' }]), (e) => e.code === 'invalid_config' && e.field === 'now');
});
