// Session reports from JS (js/src/report.ts): the recorder's numbers are the compactor's, calls
// are recorded through manage, prepareStep and compact, and the page is the core's renderer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, createReportRecorder, init, renderReport, renderReportChart } from '../dist/entry/node.js';
import { session } from '../../examples/demo/session.mjs';

await init();

/** Model calls of a recorded session: before every assistant message, and at the end when the
 * last message awaits a reply (what `context-compactor report` replays). */
function points(messages) {
  const at = messages.flatMap((m, i) => (i > 0 && m.role === 'assistant' ? [i] : []));
  if (messages.at(-1).role !== 'assistant') at.push(messages.length);
  return at;
}

/** Replays `messages` as AI SDK 7 does with prepareStep: the managed prompt carries forward. */
async function replay(report, compactor, messages) {
  let held = [];
  let next = 0;
  const results = [];
  for (const point of points(messages)) {
    held = [...held, ...messages.slice(next, point)];
    next = point;
    const result = await report.manage(compactor, held);
    results.push({ input: held, result });
    held = result.messages;
  }
  return results;
}

// The thresholds smart had before issue 34 (offload above 20,000, tier 2 at 80 % → 45 %): with
// them the demo session meets every reversible edit (offload, evict-input, dedupe, mask); with
// today's defaults it only offloads.
const demo = (options = {}) =>
  createCompactor({ model: 'gpt-4o', contextWindow: 28_000, store: new MemoryStore(), offload: { thresholdTokens: 20_000 }, compaction: { triggerFraction: 0.8, targetFraction: 0.45 }, ...options });

/** Attributes of every element whose start tag begins with `prefix`. */
function elements(html, prefix) {
  return [...html.matchAll(new RegExp(`${prefix}[^>]*>`, 'g'))].map((m) => Object.fromEntries([...m[0].matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1], a[2]])));
}

test('each manage call is one call, with the compactor\'s own numbers', async () => {
  const messages = session();
  const compactor = await demo();
  const report = createReportRecorder({ title: 'demo' });
  const results = await replay(report, compactor, messages);
  const check = await demo(); // counts the same conversations independently
  assert.equal(report.calls.length, points(messages).length);
  results.forEach(({ input, result }, i) => {
    const call = report.calls[i];
    assert.equal(call.call, i + 1);
    assert.equal(call.messages, input.length);
    assert.equal(call.tokensBefore, check.usage(input).tokens, `call ${i + 1} before`);
    assert.equal(call.tokensAfter, check.usage(result.messages).tokens, `call ${i + 1} after`);
    assert.deepEqual(call.events.map((e) => [e.strategy, e.status, e.path]), result.events.map((e) => [e.strategy, e.status, e.path]));
    assert.ok(call.tokensAfter <= 28_000);
  });
  const kinds = new Set(report.calls.flatMap((c) => c.events.map((e) => e.strategy)));
  assert.deepEqual([...kinds].sort(), ['dedupe', 'evict-input', 'mask', 'offload']);
  // The one prefix break is the call whose edits reached back into messages already sent.
  const breaks = report.calls.filter((c) => c.prefixBreak).map((c) => c.call);
  assert.equal(breaks.length, 1);
  const broke = report.calls[breaks[0] - 1];
  assert.ok(broke.events.some((e) => e.strategy === 'dedupe' || e.strategy === 'evict-input'));
});

test('data() reads every stored file back; html() is renderReport(data())', async () => {
  const report = createReportRecorder({ title: 'demo' });
  const compactor = await demo({ onEvent: report.onEvent }); // manage's events arrive both ways: counted once
  await replay(report, compactor, session());
  const data = await report.data();
  assert.equal(data.window, 28_000);
  assert.equal(data.model, 'gpt-4o');
  assert.equal(data.encoding, 'o200k_base');
  // Tier 2 at 80 % down to 45 % (as set above), the lossy tier at 85 % of 28,000 (the default).
  assert.deepEqual(data.thresholds, { compactAt: 22_400, target: 12_600, summarizeAt: 23_800 });
  const paths = await compactor.store.list('/');
  assert.deepEqual(data.store.map((f) => f.path).sort(), paths);
  for (const file of data.store) assert.ok(file.tokens > 0 && file.chars === (await compactor.store.read(file.path)).length);

  const html = await report.html();
  assert.equal(html, renderReport(data));
  assert.ok(html.startsWith('<!doctype html>') && !html.includes('<script'));
  const after = elements(html, '<circle class="point after"');
  assert.deepEqual(after.map((p) => Number(p['data-tokens'])), data.calls.map((c) => c.tokensAfter));
  const before = elements(html, '<circle class="point before"');
  assert.deepEqual(before.map((p) => Number(p['data-tokens'])), data.calls.map((c) => c.tokensBefore));
  for (const file of data.store) assert.ok(html.includes(file.path));
  const chart = renderReportChart(data);
  assert.ok(chart.startsWith('<figure><svg id="chart"') && html.includes(chart));
});

test('prepareStep and compact are recorded, with onEvent wired', async () => {
  const report = createReportRecorder();
  const compactor = await demo({ onEvent: report.onEvent });
  const prepareStep = report.prepareStep(compactor);
  const messages = session().slice(1); // AI SDK 7: the system prompt goes in `instructions`
  let persisted = messages.slice(0, 2);
  const { messages: step1 } = await prepareStep({ instructions: 'be brief', messages: persisted, steps: [] });
  persisted = [...step1, ...messages.slice(2, 8)];
  const { messages: step2 } = await prepareStep({ instructions: 'be brief', messages: persisted, steps: [] });
  assert.equal(report.calls.length, 2);
  const system = { role: 'system', content: 'be brief' };
  // Counted before the step (afterwards the compactor would count it compacted: it remembers
  // its edits and replays them onto any history it is given).
  assert.equal(report.calls[1].tokensBefore, (await demo()).usage([system, ...persisted]).tokens);
  assert.ok(report.calls[1].events.some((e) => e.strategy === 'offload'));
  assert.equal(report.calls[1].tokensAfter, compactor.usage([system, ...step2]).tokens);
  assert.ok(report.calls[1].tokensAfter < report.calls[1].tokensBefore);
  assert.equal(report.calls[1].prefixBreak, false, 'offloading the newest result keeps the prefix');
  await report.compact(compactor, [system, ...step2]);
  assert.equal(report.calls.length, 3);
  assert.ok(report.calls[2].events.some((e) => e.strategy === 'summarize'));
  const data = await report.data();
  assert.ok(data.store.some((f) => f.strategy === 'transcript' && f.path.endsWith('.md')));
});

test('events made outside manage count toward the next call; calls resume from a saved list', async () => {
  const report = createReportRecorder();
  const compactor = await demo({ onEvent: report.onEvent });
  const huge = 'x '.repeat(60_000);
  const preview = await compactor.offloadToolOutput('fetch', 'c1', huge);
  assert.notEqual(preview, huge);
  await report.manage(compactor, [{ role: 'user', content: 'hi' }]);
  assert.deepEqual(report.calls[0].events.map((e) => e.strategy), ['offload']);
  const again = createReportRecorder({ calls: structuredClone(report.calls) });
  await again.manage(compactor, [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }, { role: 'user', content: 'more' }]);
  assert.deepEqual(again.calls.map((c) => c.call), [1, 2]);
  assert.equal((await again.data()).store.length, 1);
});

test('a report with no calls renders; data() needs a compactor', async () => {
  const report = createReportRecorder();
  await assert.rejects(report.data(), { code: 'invalid_config' });
  const html = await report.html(await demo());
  assert.ok(html.includes('no model calls'));
});

test('renderReport takes what it is given: missing or mistyped fields render as empty, text is escaped', () => {
  const html = renderReport({ title: '<img src=x onerror=alert(1)>', window: 'big', calls: [{ call: 1, tokensBefore: 10, tokensAfter: 5, events: [{ strategy: 'no-such-kind' }, { strategy: 'mask', status: 'applied', path: '/x/<b>.txt' }] }], store: null });
  assert.ok(html.includes('&lt;img src=x onerror=alert(1)&gt;') && !html.includes('<img'));
  assert.ok(html.includes('/x/&lt;b&gt;.txt'));
  assert.equal(elements(html, '<g class="event"').length, 1, 'the unknown kind is left out');
  assert.equal(elements(html, '<circle class="point after"')[0]['data-tokens'], '5');
});
