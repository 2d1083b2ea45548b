// Summaries made ahead of need, off the critical path (issue 32): no `manage` waits for a
// summary unless the hard limit comes first, the summary is applied over the span it was asked
// for, and a stateless route keeps it alive with `waitUntil` for the next request to apply.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as cc from '../dist/entry/node.js';
import { prose, reply } from '../../tests/runtimes/stateless.mjs';

const WINDOW = 8_000;
const SUMMARY = '## Session Intent\nMade in the background';

/** A summarizer whose answers the test releases: each call is recorded with its flag. */
function heldSummarizer() {
  const calls = [];
  const summarize = (request, { background }) =>
    new Promise((resolve) => calls.push({ background: background === true, prompt: request.prompt, resolve: () => resolve(`${SUMMARY} (${calls.length})`) }));
  return { calls, summarize };
}

/** Whether `promise` settles before the macrotask queue runs (no summary awaited inside). */
async function settlesAtOnce(promise) {
  const marker = Symbol('pending');
  const timer = new Promise((resolve) => setTimeout(() => resolve(marker), 0));
  return (await Promise.race([promise.then(() => true), timer])) !== marker;
}

test('a long-lived compactor asks the summary ahead, never waits for it, and applies it at the trigger', async () => {
  const summarizer = heldSummarizer();
  const compactor = await cc.createCompactor({ contextWindow: WINDOW, summarize: summarizer.summarize });
  const raw = [{ role: 'system', content: 'You are a helpful research agent.' }];
  let asked;
  let pending = 0;
  let applied;
  for (let t = 0; t < 80 && !applied; t++) {
    raw.push({ role: 'user', content: `Turn ${t}: ${prose(t, 30)}` });
    // The dry run shows what the call will ask ahead (it asks nothing itself).
    const dry = asked ? undefined : compactor.plan(raw);
    const call = compactor.manage(raw);
    assert.ok(await settlesAtOnce(call), `turn ${t}: manage waited`);
    const result = await call;
    if (dry) assert.equal(dry.ahead?.aheadKey, result.plan.ahead?.aheadKey, `turn ${t}: plan() shows the call's ahead`);
    if (!asked && result.plan.ahead) {
      asked = { turn: t, ahead: result.plan.ahead };
      assert.equal(summarizer.calls.length, 1, 'the summary is asked once, in the background');
      assert.equal(summarizer.calls[0].background, true);
      assert.equal(summarizer.calls[0].prompt, result.plan.ahead.request.prompt);
      assert.ok(result.plan.ahead.aheadKey, 'the span has a key');
    }
    if (result.plan.notes.some((n) => n.type === 'summary-pending')) {
      pending += 1;
      assert.ok(!result.events.some((e) => e.strategy === 'summarize'), 'nothing summarized while pending');
      // Released after the trigger was reached once: the next call applies it.
      summarizer.calls[0].resolve();
      await compactor.settled();
    }
    const summary = result.events.find((e) => e.strategy === 'summarize');
    if (summary) applied = { turn: t, summary, messages: result.messages, plan: result.plan };
    raw.push(...reply(t));
  }
  assert.ok(asked, 'a summary was asked ahead');
  assert.ok(pending >= 1, 'a call went on unsummarized while the summary was out');
  assert.ok(applied, 'the summary was applied');
  assert.equal(applied.summary.status, 'applied');
  assert.equal(applied.summary.blocking, undefined, 'no call waited');
  assert.equal(summarizer.calls.length, 1, 'the summarizer was not asked again for the span');
  const action = applied.plan.actions.find((a) => a.type === 'summarize');
  assert.equal(action.end, asked.ahead.end, 'the span asked for');
  assert.equal(action.aheadKey, asked.ahead.aheadKey);
  const message = applied.messages.find((m) => typeof m.content === 'string' && m.content.startsWith('[Conversation summary]'));
  assert.ok(message.content.includes(`${SUMMARY} (1)`), 'the summary made in the background is in the prompt');
  // The messages after the span stay: the latest is the user's, as given.
  assert.deepEqual(applied.messages.at(-1), raw.at(-4));
});

test('at the hard limit a call summarizes itself when the background summary is not back', async () => {
  const summarizer = heldSummarizer();
  // The background summary never answers: abandoned after 2 s (not the default 120 s, which
  // would keep the test process alive that long).
  const compactor = await cc.createCompactor({ contextWindow: WINDOW, summarize: summarizer.summarize, summarizeTimeoutMs: 2_000 });
  const raw = [{ role: 'system', content: 'You are a helpful research agent.' }];
  let blocking;
  for (let t = 0; t < 80 && !blocking; t++) {
    raw.push({ role: 'user', content: `Turn ${t}: ${prose(t, 30)}` });
    const call = compactor.manage(raw);
    // Only a summary asked in the call (not in the background) holds it: answered at once.
    const inCall = () => summarizer.calls.filter((c) => !c.background);
    const before = inCall().length;
    await new Promise((resolve) => setTimeout(resolve, 0));
    for (const c of inCall().slice(before)) c.resolve();
    const result = await call;
    if (result.events.some((e) => e.strategy === 'summarize')) blocking = { result, tokens: result.plan.tokensBefore, hardLimit: result.plan.trigger.hardLimit };
    raw.push(...reply(t));
  }
  assert.ok(blocking, 'the conversation was summarized');
  assert.ok(blocking.tokens > blocking.hardLimit, `summarized in the call only past the hard limit (${blocking.tokens} tokens, limit ${blocking.hardLimit})`);
  assert.equal(summarizer.calls.filter((c) => c.background).length, 1, 'one background summary, never answered');
  assert.equal(summarizer.calls.filter((c) => !c.background).length, 1, 'one summary in the call');
  assert.equal(blocking.result.events.find((e) => e.strategy === 'summarize').blocking, true, 'the event says the call waited');
  assert.ok(blocking.result.plan.tokensAfter < blocking.tokens, `${blocking.result.plan.tokensAfter} tokens after, ${blocking.tokens} before`);
});

test('a stateless route: waitUntil keeps the background summary alive after the response, the next request applies it', async () => {
  const store = new cc.MemoryStore();
  const statePath = '/state/chat.json';
  const calls = [];
  const summarize = async (request, { background }) => {
    calls.push({ background: background === true, prompt: request.prompt });
    await new Promise((resolve) => setTimeout(resolve, 20)); // finishes after the response
    return `${SUMMARY} ${calls.length}`;
  };
  const raw = [{ role: 'system', content: 'You are a helpful research agent.' }];
  let kept = [];
  let asked;
  let applied;
  for (let t = 0; t < 80 && !applied; t++) {
    raw.push({ role: 'user', content: `Turn ${t}: ${prose(t, 30)}` });
    // One request: a new compactor, the raw history, the platform's waitUntil.
    const handed = [];
    const compactor = await cc.createCompactor({ contextWindow: WINDOW, store, statePath, summarize, waitUntil: (p) => handed.push(p) });
    const result = await compactor.manage(structuredClone(raw));
    compactor.dispose(); // the response is sent; only waitUntil keeps the summary going
    if (result.plan.ahead) {
      asked = { turn: t, key: result.plan.ahead.aheadKey };
      assert.equal(handed.length, 1, 'the background summary was handed to waitUntil');
    }
    // The platform runs what waitUntil got to the end, after the response.
    kept = handed;
    await Promise.all(kept);
    const summary = result.events.find((e) => e.strategy === 'summarize');
    if (summary) applied = { turn: t, summary, action: result.plan.actions.find((a) => a.type === 'summarize') };
    raw.push(...reply(t));
  }
  assert.ok(asked, 'a summary was asked ahead');
  assert.ok(applied, 'a later request applied it');
  assert.ok(applied.turn > asked.turn);
  assert.equal(applied.summary.status, 'applied');
  assert.equal(applied.action.aheadKey, asked.key);
  assert.deepEqual(calls.map((c) => c.background), [true], 'one summarizer call, in the background');
  const lease = JSON.parse(await store.read(`${statePath}.summaries/ahead-${asked.key}.json`));
  assert.equal(lease.summary, `${SUMMARY} 1`, 'the summary waited beside the state');
});

test('background: false summarizes in the call, as before', async () => {
  const calls = [];
  const compactor = await cc.createCompactor({ contextWindow: WINDOW, background: false, summarize: (request, { background }) => (calls.push(background), SUMMARY) });
  const raw = [{ role: 'system', content: 'You are a helpful research agent.' }];
  let summarized = false;
  for (let t = 0; t < 60 && !summarized; t++) {
    raw.push({ role: 'user', content: `Turn ${t}: ${prose(t, 30)}` });
    const result = await compactor.manage(raw);
    assert.equal(result.plan.ahead, undefined);
    summarized = result.events.some((e) => e.strategy === 'summarize' && e.status === 'applied');
    raw.push(...reply(t));
  }
  assert.ok(summarized);
  assert.deepEqual(calls, [undefined]);
});

test('waitUntil must be a function', async () => {
  await assert.rejects(cc.createCompactor({ waitUntil: 'later' }), (error) => error.code === 'invalid_config' && error.field === 'waitUntil');
});
