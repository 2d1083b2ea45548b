// Checks the loop example's real behaviour: node --test examples/loop/
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { countTokens, init, loopContext } from 'context-compactor';
import { CONFIG, GOAL, mockSummarizer, parseSummaryRequest, runLoop } from './loop.mjs';

await init();
const run = await runLoop({ log: null }); // 25 iterations, summary request #2 fails
const { records, summaries, state, config } = run;

/** Iterations at which a summary must be requested: every `summarizeEvery`-th, once something
 * has left the raw window (before that nothing is pending, so there is nothing to summarize). */
const expectedRequests = (n, c) =>
  Array.from({ length: n }, (_, i) => i + 1).filter((i) => i % c.summarizeEvery === 0 && i > c.rawWindowSize);

test('the loop runs all 25 iterations and the agent completes at the last one', () => {
  assert.equal(records.length, 25);
  assert.equal(state.totalIterations, 25);
  assert.equal(records.at(-1).complete, true);
  assert.ok(records.slice(0, -1).every((r) => !r.complete));
});

test('the raw window never exceeds its size and holds the latest iterations', () => {
  for (const r of records) {
    assert.ok(r.raw <= config.rawWindowSize, `iteration ${r.iteration}: raw window ${r.raw}`);
    const first = Math.max(1, r.iteration - config.rawWindowSize + 1);
    const expected = Array.from({ length: r.iteration - first + 1 }, (_, i) => first + i);
    assert.deepEqual(r.rawNumbers, expected, `iteration ${r.iteration}`);
    // Nothing is lost: every iteration is raw, pending or covered by the summary.
    const covered = new Set([...r.rawNumbers, ...r.pending]);
    for (let i = r.summarizedThrough + 1; i <= r.iteration; i++) assert.ok(covered.has(i), `iteration ${i} lost at ${r.iteration}`);
  }
});

test('a summary is requested at the configured cadence, covering exactly what is pending', () => {
  assert.deepEqual(summaries.map((s) => s.iteration), expectedRequests(25, config)); // 10, 15, 20, 25
  for (const s of summaries) {
    assert.equal(s.from, s.pendingBefore[0]);
    assert.equal(s.through, s.pendingBefore.at(-1));
    assert.equal(s.request.maxTokens, config.maxSummaryTokens);
    assert.equal(s.request.messages.length, 1);
    assert.equal(s.request.messages[0].role, 'user');
  }
  // Another cadence: a 3-iteration window, a summary every 4th iteration.
  return runLoop({ log: null, iterations: 13, failSummaries: [], config: { rawWindowSize: 3, summarizeEvery: 4, recentInPrompt: 3 } }).then((other) => {
    assert.deepEqual(other.summaries.map((s) => s.iteration), [4, 8, 12]);
    assert.deepEqual(other.summaries.map((s) => [s.from, s.through]), [[1, 1], [2, 5], [6, 9]]);
    assert.ok(other.records.every((r) => r.raw <= 3));
  });
});

test('the failed summary keeps its iterations pending, and the next one succeeds with them', () => {
  const failed = summaries[1];
  assert.equal(failed.status, 'failed');
  assert.match(failed.error, /429/);
  assert.deepEqual([failed.from, failed.through], [6, 10]);
  assert.deepEqual(failed.pendingAfter, failed.pendingBefore); // nothing dropped
  assert.equal(failed.summarizedThrough, 5); // the old summary still stands
  assert.equal(failed.summaryFailures, 1);
  assert.match(failed.lastSummaryError, /429/);
  // The iterations in between still show the failed span as pending.
  for (const r of records.filter((r) => r.iteration > failed.iteration && r.iteration < summaries[2].iteration)) {
    assert.equal(r.pending[0], 6, `iteration ${r.iteration}`);
    assert.equal(r.summarizedThrough, 5);
  }
  const retry = summaries[2];
  assert.equal(retry.status, 'ok');
  assert.equal(retry.from, failed.from); // the retry re-covers the failed span
  assert.equal(retry.through, 15);
  assert.equal(retry.summarizedThrough, 15);
  assert.deepEqual(retry.pendingAfter, []);
  assert.equal(retry.summaryFailures, 0);
  assert.equal(retry.lastSummaryError, null);
  // The other summaries succeeded.
  assert.deepEqual(summaries.map((s) => s.status), ['ok', 'failed', 'ok', 'ok']);
});

test('every prompt contains the goal and stays within the token budget', () => {
  const budget = config.totalBudgetTokens;
  for (const r of records) {
    assert.ok(r.prompt.startsWith(`# Goal\n${GOAL}\n`), `iteration ${r.iteration}: goal missing`);
    assert.equal(r.promptTokens, countTokens(r.prompt, 'o200k_base'));
    assert.ok(r.promptTokens <= budget, `iteration ${r.iteration}: ${r.promptTokens} > ${budget}`);
    assert.match(r.prompt, /# Current State\n- Total iterations: \d+/);
    assert.match(r.prompt, /<promise>COMPLETE<\/promise>/);
  }
  assert.ok(countTokens(run.finalPrompt, 'o200k_base') <= budget);
  assert.ok(run.finalPrompt.includes(GOAL));
  // The budget really binds: some prompt shows fewer recent iterations than it could.
  const shown = (p) => (p.match(/^## Iteration \d+/gm) ?? []).length;
  const cut = records.filter((r) => shown(r.prompt) < Math.min(r.iteration - 1, config.recentInPrompt));
  assert.ok(cut.length > 0, 'the budget never forced a cut: the check above proves nothing');
  // Once a summary is applied, the prompt carries it.
  for (const r of records.filter((r) => r.iteration > summaries[0].iteration)) {
    assert.match(r.prompt, /# Progress Summary \(iterations 1-\d+\)\n- it 1: /);
  }
});

test('after the run the summary still holds the facts of the early iterations', () => {
  assert.equal(state.summarizedThrough, 20);
  // The mock writes one line per iteration it was asked about, from the request's text: every
  // covered iteration must be there, including 6-10 from the failed request.
  for (let i = 1; i <= state.summarizedThrough; i++) assert.match(state.summary, new RegExp(`^- it ${i}: `, 'm'));
  assert.doesNotMatch(state.summary, /^- it 2[1-5]: /m); // not summarized yet: still raw
  assert.match(state.summary, /argon2id/); // iteration 2
  assert.match(state.summary, /Redis session cache: flaky tests in CI, reverted/); // iteration 4
  assert.match(state.summary, /access TTL 15 minutes/); // iteration 5
  assert.match(state.summary, /POST \/logout deletes the session row/); // iteration 9 (failed, then retried)
  assert.ok(countTokens(state.summary, 'o200k_base') <= config.maxSummaryTokens);
});

test('the mock summarizer reads the request, not hidden state', async () => {
  let s = loopContext.create('Goal G', 0);
  const cfg = { rawWindowSize: 1, summarizeEvery: 2, recentInPrompt: 1 };
  s = loopContext.addIteration(s, { unixMs: 1, output: '<progress>alpha</progress>', fileChanges: ['a.py'] }, cfg).state;
  const step = loopContext.addIteration(s, { unixMs: 2, output: '<progress>beta</progress>' }, cfg);
  assert.ok(step.request);
  assert.deepEqual(parseSummaryRequest(step.request), { existing: [], iterations: [{ n: 1, progress: 'alpha', files: 'a.py' }] });
  assert.equal(await mockSummarizer(step.request), '- it 1: alpha [a.py]');
  await assert.rejects(mockSummarizer(step.request, { fail: true }), /429/);
});

test('runs as a script', () => {
  const script = fileURLToPath(new URL('./loop.mjs', import.meta.url));
  const out = execFileSync(process.execPath, [script, '12'], { encoding: 'utf8' });
  assert.match(out, /^it 10 \| .*summary 1-5 ok/m);
  assert.match(out, /^Final: 12 iterations; summary covers 1-5/m);
  assert.equal(CONFIG.totalBudgetTokens, config.totalBudgetTokens);
});
