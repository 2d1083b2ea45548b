// The compaction record from the host's side: every host shape sends the same prompt, a
// stateless route handler summarizes each span once, events name their tool calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as cc from '../dist/entry/node.js';
import { statelessRouteHandler } from '../../tests/runtimes/stateless.mjs';
import { chat } from '../test-helpers/conversations.mjs';

test('a stateless route handler, a long-lived compactor and fresh objects send the same prompts', async () => {
  const result = await statelessRouteHandler(cc, { turns: 40 });
  assert.equal(result.identical, true, `first difference at turn ${result.firstDifference}`);
  const [longLived, stateless, fresh] = result.summaries;
  assert.ok(longLived >= 2, `the chat should summarize more than once (summaries: ${longLived})`);
  // Without the record the handler re-summarized the raw history on every turn past the first
  // summary (32 of 60 calls in the measurement).
  assert.equal(stateless, longLived);
  assert.equal(fresh, longLived);
  assert.deepEqual(result.breaks, [result.breaks[0], result.breaks[0], result.breaks[0]]);
  assert.ok(result.breaks[0] * 3 <= result.calls, `prefix breaks ${result.breaks[0]} of ${result.calls} calls`);
  assert.ok(result.stateBytes > 0 && result.stateBytes < 64_000, `state of ${result.stateBytes} bytes`);
});

test('with the provider reporting usage (calibration) the three host shapes still send the same prompts', async () => {
  const result = await statelessRouteHandler(cc, { turns: 40, calibrate: true });
  assert.equal(result.identical, true, `first difference at turn ${result.firstDifference}`);
  assert.ok(result.summaries[0] >= 2, `summaries: ${result.summaries}`);
  assert.deepEqual(result.summaries, [result.summaries[0], result.summaries[0], result.summaries[0]]);
  assert.equal(result.calibrated, 40, 'every call calibrated the long-lived compactor');
});

test('a new compactor with the saved state replays a raw history: no action, the same prompt', async () => {
  const store = new cc.MemoryStore();
  const first = await cc.createCompactor({ contextWindow: 8_000, store, statePath: '/s.json' });
  const raw = chat(30);
  const compacted = await first.manage(raw);
  assert.ok(compacted.events.some((e) => e.strategy === 'summarize'));
  const second = await cc.createCompactor({ contextWindow: 8_000, store, statePath: '/s.json' });
  const plan = second.plan(raw);
  assert.equal(plan.actions.length, 0, 'nothing new to plan');
  assert.ok(plan.replayed.spans === 1, `replayed ${JSON.stringify(plan.replayed)}`);
  assert.equal(second.usage(raw).tokens, first.usage(compacted.messages).tokens);
  const again = await second.manage(structuredClone(raw));
  assert.deepEqual(again.messages, compacted.messages);
  assert.equal(again.events.length, 0, 'replaying is not a new compaction');
});

test('events name the tool call, the tool and the call that fired them', async () => {
  const seen = [];
  const compactor = await cc.createCompactor({ contextWindow: 8_000, onEvent: (e) => seen.push(e) });
  const result = (id, value) => ({ role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'bash', output: { type: 'text', value } }] });
  const call = (id) => ({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'bash', input: { cmd: 'ls' } }] });
  const big = 'line of output\n'.repeat(3_000);
  await compactor.manage([{ role: 'user', content: 'hello' }]);
  const { events } = await compactor.manage([{ role: 'user', content: 'go' }, call('c-7'), result('c-7', big)]);
  const offload = events.find((e) => e.strategy === 'offload');
  assert.equal(offload.toolCallId, 'c-7');
  assert.equal(offload.toolName, 'bash');
  assert.equal(offload.call, 2);
  assert.equal(offload.stepNumber, undefined);
  await compactor.prepareStep({ messages: [{ role: 'user', content: 'go' }, call('c-8'), result('c-8', big + 'x')], stepNumber: 4 });
  const stepped = seen.at(-1);
  assert.deepEqual([stepped.toolCallId, stepped.call, stepped.stepNumber], ['c-8', 3, 4]);
});

test('middleware: the inserted summary reaches the model as text parts', async () => {
  const compactor = await cc.createCompactor({ contextWindow: 8_000 });
  const prompt = chat(30).map((m) => (typeof m.content === 'string' && m.role !== 'system' ? { ...m, content: [{ type: 'text', text: m.content }] } : m));
  const params = await compactor.middleware().transformParams({ params: { prompt }, type: 'generate' });
  assert.ok(params.prompt.length < prompt.length);
  for (const message of params.prompt) {
    if (message.role !== 'system') assert.ok(Array.isArray(message.content), `${message.role} content is a string`);
  }
});

test('a large text file a user attached (base64) counts as its text and is offloaded as text', async () => {
  const store = new cc.MemoryStore();
  const compactor = await cc.createCompactor({ model: 'gpt-4o', store });
  const log = Array.from({ length: 30_000 }, (_, i) => `line ${i}: request ${i * 7} ok ✓`).join('\n');
  const data = Buffer.from(log, 'utf8').toString('base64');
  const messages = [{ role: 'user', content: [{ type: 'text', text: 'What failed?' }, { type: 'file', mediaType: 'text/plain', filename: 'server.log', data }] }];
  assert.ok(compactor.usage(messages).tokens > cc.countTokens(log, 'o200k_base'));
  const { messages: out, events } = await compactor.manage(messages);
  const offload = events.find((e) => e.strategy === 'offload');
  assert.equal(await store.read(offload.path), log);
  assert.equal(out[0].content[1].type, 'text');
  assert.ok(out[0].content[1].text.includes(offload.path) && out[0].content[1].text.includes('line 0: request 0 ok ✓'));
  assert.ok(compactor.usage(out).tokens < 2_000);
});
