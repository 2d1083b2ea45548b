// The report recorder's `prepareStep` (js/src/report.ts) measures a call's tokens before and
// after on one scale: `compactor.prepareStep` calibrates from the previous step's usage before it
// counts, so the recorder feeds that usage first. Measured before calibration, a step whose only
// event was an offload at tool return showed the prompt growing (a user test: 352 → 451).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, createReportRecorder } from '../dist/entry/node.js';

// A provider that counts 30 % more than an uncalibrated compactor estimates (a Claude model:
// o200k times its factor); `probe` is never calibrated.
const probe = await createCompactor({ model: 'claude-sonnet-4-5', store: new MemoryStore() });
const provider = (prompt) => Math.round(1.3 * probe.usage(prompt).tokens);
const bigLog = (lines) => Array.from({ length: lines }, (_, i) => `line ${i}: status ok, value=${(i * 7919) % 1000}`).join('\n');

test('prepareStep: before and after are on the calibrated scale; an offload never grows the prompt', async () => {
  const report = createReportRecorder();
  const compactor = await createCompactor({ model: 'claude-sonnet-4-5', store: new MemoryStore(), onEvent: report.onEvent });
  const prepareStep = report.prepareStep(compactor);
  const system = { role: 'system', content: 'sys' };
  const first = [{ role: 'user', content: 'go' }];
  const { messages: step1 } = await prepareStep({ instructions: 'sys', messages: first, steps: [], stepNumber: 0 });
  const sent1 = [system, ...step1];

  // The tool's output offloaded the moment it returned (wrapTools does this): an event for step 2.
  const preview = await compactor.offloadToolOutput('search', 'c1', bigLog(1000));
  assert.ok(typeof preview === 'string' && preview.length < 5000, 'offloaded at return');
  const second = [
    ...step1,
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'search', input: { q: 'x' } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'search', output: { type: 'text', value: preview } }] },
  ];
  const steps = [{ usage: { inputTokens: provider(sent1) } }];
  const { messages: step2 } = await prepareStep({ instructions: 'sys', messages: second, steps, stepNumber: 1 });

  const call = report.calls[1];
  assert.deepEqual(call.events.map((e) => [e.strategy, e.status]), [['offload', 'applied']]);
  // Both figures are the calibrated compactor's (it has no further sample now).
  assert.equal(call.tokensBefore, compactor.usage([system, ...second]).tokens);
  assert.equal(call.tokensAfter, compactor.usage([system, ...step2]).tokens);
  assert.ok(call.tokensBefore > probe.usage([system, ...second]).tokens, 'calibrated above the raw estimate');
  assert.ok(call.tokensAfter <= call.tokensBefore, `before ${call.tokensBefore}, after ${call.tokensAfter}`);

  // The compactor's own prepareStep saw the same usage again and ignored it: calibration as it
  // was, one sample per prompt.
  const calibrated = compactor.usage([system, ...second]).tokens;
  await compactor.prepareStep({ instructions: 'sys', messages: second, steps, stepNumber: 1 });
  assert.equal(compactor.usage([system, ...second]).tokens, calibrated);
});
