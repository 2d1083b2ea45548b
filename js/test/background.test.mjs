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

for (const [name, options] of [
  ['background: false summarizes in the call, as before', { background: false }],
  // A compactor made per request from a state the app keeps: a summary back after the
  // response would reach only that compactor, so it summarizes in the call.
  ['a state given without statePath summarizes in the call', { state: { version: 2 } }],
]) test(name, async () => {
  const calls = [];
  const compactor = await cc.createCompactor({ contextWindow: WINDOW, ...options, summarize: (request, { background }) => (calls.push(background), SUMMARY) });
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

const WORDS = ('function return const let import export from await async class interface type error warning src lib test build config module package index utils handler request response status value result data item list map filter reduce promise callback string number boolean null undefined object array length push pop slice splice join split trim parse stringify alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega the a of to in is for on with').split(' ');
/** About `n` tokens of code-like words (one word a token), a line break every twelve. */
const words = (random, n) => Array.from({ length: n }, (_, i) => WORDS[Math.floor(random() * WORDS.length)] + (i % 12 === 11 ? '\n' : ' ')).join('');

/** A deterministic agent step: a tool call with its text, and the call's output of about
 * `tokens` tokens. */
function agentStep(random, id, tokens) {
  const tool = ['read_file', 'grep', 'bash', 'list_dir', 'run_tests'][Math.floor(random() * 5)];
  const input = tool === 'read_file' || tool === 'grep' ? { path: `src/file${Math.floor(random() * 400)}.ts`, pattern: `x${id}` } : { command: `cmd ${id}` };
  const say = 40 + Math.floor(random() * 80);
  return [
    { role: 'assistant', content: [{ type: 'text', text: words(random, say) }, { type: 'tool-call', toolCallId: `call_${id}`, toolName: tool, input }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: `call_${id}`, toolName: tool, output: { type: 'text', value: words(random, tokens) } }] },
  ];
}

test('an agent that keeps the managed history never waits below the hard limit, summaries slower than its steps', async () => {
  // The loop of a user test (a fast agent, summaries back 3 to 10 steps after they are asked),
  // where a summary back whose span no longer freed enough (offloaded and masked since, in the
  // history the app keeps) made a call summarize in the call below the hard limit (the core's
  // case: tests/ahead.rs, an_app_that_keeps_the_managed_history_never_waits_below_the_hard_limit).
  for (const [seed, DELAY] of [[1, 3], [4, 10], [6, 10]]) {
    let s = seed;
    const random = () => ((s = (s * 1664525 + 1013904223) >>> 0), s / 2 ** 32);
    const summarizer = heldSummarizer();
    const compactor = await cc.createCompactor({ model: 'gpt-4o', contextWindow: 32_000, maxOutputTokens: 4_000, store: new cc.MemoryStore(), summarize: summarizer.summarize });
    let messages = [{ role: 'system', content: 'You are a coding agent.' }];
    messages.push({ role: 'user', content: `Fix the failing build in this repo. ${words(random, 200)}` });
    const waited = [];
    for (let i = 0; i < 70; i++) {
      const big = random() < 0.1;
      messages.push(...agentStep(random, i + 1, big ? 6_000 + Math.floor(random() * 6_000) : 1_000 + Math.floor(random() * 3_000)));
      // A summary comes back DELAY steps after it was asked.
      for (const call of summarizer.calls.filter((c) => !c.done && c.at <= i - DELAY)) (call.done = true), call.resolve();
      await new Promise((resolve) => setTimeout(resolve, 0));
      const result = await compactor.manage(messages);
      for (const call of summarizer.calls) call.at ??= i;
      if (result.events.some((e) => e.blocking) && result.tokensBefore <= result.plan.trigger.hardLimit) waited.push(`step ${i} at ${result.tokensBefore}`);
      messages = result.messages;
    }
    assert.deepEqual(waited, [], `seed ${seed}: calls that waited below the hard limit`);
    assert.ok(summarizer.calls.every((c) => c.background), `seed ${seed}: every summary made in the background`);
    for (const call of summarizer.calls) call.resolve();
    await compactor.settled();
    compactor.dispose();
  }
});
