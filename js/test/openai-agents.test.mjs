// The OpenAI Agents SDK (`context-compactor/openai-agents`, issue 33): a real `run()` of
// `@openai/agents-core` (0.20, pinned in js/package.json) with `compactorInputFilter`,
// `compactorModel`, `compactorTools` and the recovery tools, driven by a scripted `Model` through
// a 30-step tool loop in a 12,000-token window, plain and streamed. Checked on every model
// request: inside the window, every function call with its result; and that large outputs are
// stored byte for byte as they return, an older span is summarized, a pinned unknown item stays,
// the reported usage calibrates the compactor, each request is what `manage` gives a second
// compactor for the same session, and `read_file` reads a stored output back. Then a
// provider's "prompt too long" rejection (the `openai` SDK's own `BadRequestError`) is recovered
// from, and a request that stays too long fails with a typed error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, Usage, run, tool } from '@openai/agents-core';
import { APIError } from 'openai';
import { CompactorError, MemoryStore, createCompactor, init } from '../dist/entry/node.js';
import { STEPS, WINDOW, checkLoop, loopCompactor, output, stepOf } from '../test-helpers/framework-loop.mjs';
import { compactorInputFilter, compactorModel, compactorModelProvider, compactorTools, fromModelMessages, recoveryAgentTools, toModelMessages } from '../dist/openai-agents.js';

await init();

/** Plays the agent: request k calls `run_query({i: k})`; request 21 reads the first stored
 * output back; then it answers. Records every request, reports `report(request)` as its input
 * tokens, or throws what `fail(n, request)` returns. Answers plain and streamed calls. */
class ScriptedModel {
  constructor(state, { report = () => 0, fail = () => undefined } = {}) {
    this.state = state;
    this.report = report;
    this.fail = fail;
  }
  async getResponse(request) {
    const s = this.state;
    s.requests.push(request);
    const n = s.requests.length;
    const error = this.fail(n, request);
    if (error) {
      s.failures++;
      throw error;
    }
    const call = (callId, name, args) => ({ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' });
    const step = stepOf(n - s.failures, s.loop.firstPath);
    const output = step.read
      ? [call('read_back', 'read_file', { path: step.read, offset: 0, limit: 3 })]
      : step.query
        ? [call(`q${step.query}`, 'run_query', { i: step.query })]
        : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'All queries done.' }] }];
    const inputTokens = this.report(request);
    s.reported.push(inputTokens);
    return { usage: new Usage({ inputTokens, outputTokens: 5, totalTokens: inputTokens + 5, requests: 1 }), output };
  }
  async *getStreamedResponse(request) {
    const { usage, output } = await this.getResponse(request);
    yield { type: 'response_started' };
    yield { type: 'response_done', response: { id: `resp_${this.state.requests.length}`, usage: { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, totalTokens: usage.totalTokens, requests: 1 }, output } };
  }
}

const runQuery = tool({
  name: 'run_query',
  description: 'Runs query i and returns its rows.',
  parameters: { type: 'object', properties: { i: { type: 'number' } }, required: ['i'], additionalProperties: true },
  strict: false,
  execute: async ({ i }) => output(i),
});

/** The request as the core's messages: the instructions as the system prompt, as the filter
 * counts them. */
const asMessages = (request) => [{ role: 'system', content: request.systemInstructions ?? '' }, ...toModelMessages(request.input)];

/** The OpenAI API's refusal as the `openai` SDK throws it (what the Agents SDK's OpenAI models
 * raise): the Responses API's text, or Chat Completions' with the counts. */
const refusal = (tokens, limit = 10_000) =>
  APIError.generate(
    400,
    {
      error: {
        message: tokens === undefined ? 'Your input exceeds the context window of this model. Please adjust your input and try again.' : `This model's maximum context length is ${limit} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
        type: 'invalid_request_error',
        param: 'input',
        code: 'context_length_exceeded',
      },
    },
    undefined,
    new Headers(),
  );

for (const stream of [false, true])
test(`run(${stream ? '{ stream: true }' : ''}) with compactorInputFilter and compactorModel: 30 tool steps in a 12k window, offloaded at return, summarized, calibrated, read back`, async (t) => {
  const { compactor, store, loop } = await loopCompactor();
  const state = { requests: [], reported: [], failures: 0, loop };
  // The provider counts 10 % more than an uncalibrated compactor: calibration has something to learn.
  const counter = await createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, store: new MemoryStore() });
  const report = (request) => Math.round(counter.usage(asMessages(request)).tokens * 1.1);
  const observed = [];
  const observe = compactor.observeUsage.bind(compactor);
  compactor.observeUsage = (u) => (observed.push(u.inputTokens), observe(u));
  const agent = new Agent({
    name: 'data-agent',
    instructions: 'You are a data agent.',
    model: compactorModel(compactor, new ScriptedModel(state, { report })),
    tools: [...compactorTools(compactor, [runQuery]), ...recoveryAgentTools(compactor)],
  });
  // A provider's compaction item from an earlier turn: pinned, kept byte for byte.
  const compaction = { type: 'compaction', encrypted_content: 'gAAAAABoq0zX', id: 'cmp_1' };
  const input = [{ role: 'user', content: 'Earlier work.' }, compaction, { role: 'user', content: 'Run queries 1 to 30, then report.' }];
  // The SDK's own input to each call (before the filter), for the comparison with `manage`.
  const raw = [];
  const filter = compactorInputFilter(compactor, { onResult: (r) => loop.results.push(r) });
  const options = { maxTurns: 100, callModelInputFilter: (args) => (raw.push(structuredClone(args.modelData)), filter(args)) };
  const result = stream ? await run(agent, input, { ...options, stream: true }) : await run(agent, input, options);
  if (stream) {
    for await (const _ of result.toStream());
    await result.completed;
  }
  assert.equal(result.finalOutput, 'All queries done.');
  assert.equal(state.requests.length, STEPS + 2);

  await checkLoop(assert, { store, loop });

  // Calibration: every reported count but the last (no call follows it) was observed, in order,
  // once each, and the compactor learned the provider's 10 %.
  assert.deepEqual(observed, state.reported.slice(0, -1));
  const calibration = compactor.state().calibration;
  assert.equal(calibration?.samples, STEPS + 1, JSON.stringify(calibration));
  assert.ok(calibration.ratio > 1.05 && calibration.ratio < 1.15, `ratio ${calibration.ratio}`);

  for (const [n, request] of state.requests.entries()) {
    const items = request.input;
    const counted = compactor.usage(asMessages(request)).tokens;
    assert.ok(counted <= WINDOW, `request ${n + 1}: ${counted} tokens`);
    const open = new Set();
    for (const item of items) {
      if (item.type === 'function_call') open.add(item.callId);
      if (item.type === 'function_call_result') assert.ok(open.delete(item.callId), `request ${n + 1}: result ${item.callId} without its call`);
    }
    assert.equal(open.size, 0, `request ${n + 1}: calls without results`);
    assert.ok(items.some((item) => JSON.stringify(item) === JSON.stringify(compaction)), `request ${n + 1}: the compaction item is there, unchanged`);
  }
  const last = state.requests.at(-1).input;
  assert.ok(last.some((item) => item.role === 'user' && JSON.stringify(item.content).includes('Run the queries.')), 'the summary is in the last request');
  assert.equal(state.requests.at(-1).systemInstructions, 'You are a data agent.');

  const readBack = result.history.find((item) => item.type === 'function_call_result' && item.callId === 'read_back');
  assert.ok(readBack, 'the read_file result is in the history');
  for (const line of output(1).split('\n').slice(0, 3)) assert.ok(JSON.stringify(readBack.output).includes(line), JSON.stringify(readBack.output).slice(0, 300));

  // The same session through `manage` on a second compactor (the SDK's input as the core's
  // messages, the same usage reports observed at the same points): the same requests.
  const twin = await loopCompactor();
  for (const [n, data] of raw.entries()) {
    if (n > 0) twin.compactor.observeUsage({ inputTokens: state.reported[n - 1] });
    const { messages } = await twin.compactor.manage([{ role: 'system', content: data.instructions }, ...toModelMessages(data.input)]);
    assert.equal(JSON.stringify(toModelMessages(state.requests[n].input)), JSON.stringify(messages.slice(1)), `request ${n + 1} differs from manage's`);
  }
  const largest = Math.max(...state.reported);
  t.diagnostic(`${stream ? 'streamed' : 'plain'}: ${state.requests.length} requests, ${loop.offloads.length} offloads at return, ${loop.summaries} summaries, ${observed.length} usage reports observed (calibration ratio ${calibration.ratio.toFixed(3)}, ${calibration.samples} samples); largest request ${largest} tokens as the provider counts, last ${last.length} of ${result.history.length} items`);
});

for (const stream of [false, true])
test(`a provider that refuses the request as too long${stream ? ' (streamed)' : ''}: compacted harder and retried, then the loop goes on`, async (t) => {
  const { compactor, store, loop } = await loopCompactor();
  const state = { requests: [], reported: [], failures: 0, loop };
  // The provider's window is smaller than the compactor was told (6,000 tokens, not 12,000):
  // each request over it is refused with its count, as Chat Completions does; the first with the
  // Responses API's text, which gives none.
  const LIMIT = 6_000;
  const counter = await createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, store: new MemoryStore() });
  const refused = [];
  const fail = (n, request) => {
    const tokens = counter.usage(asMessages(request)).tokens;
    if (tokens <= LIMIT) return undefined;
    refused.push(n);
    return refusal(refused.length === 1 ? undefined : tokens, LIMIT);
  };
  const recovered = [];
  const agent = new Agent({
    name: 'data-agent',
    instructions: 'You are a data agent.',
    model: compactorModel(compactor, new ScriptedModel(state, { fail }), { onResult: (r) => (recovered.push(r), loop.results.push(r)) }),
    tools: [...compactorTools(compactor, [runQuery]), ...recoveryAgentTools(compactor)],
  });
  const options = { maxTurns: 100, callModelInputFilter: compactorInputFilter(compactor, { onResult: (r) => loop.results.push(r) }) };
  const result = stream ? await run(agent, 'Run queries 1 to 30, then report.', { ...options, stream: true }) : await run(agent, 'Run queries 1 to 30, then report.', options);
  if (stream) {
    for await (const _ of result.toStream());
    await result.completed;
  }
  assert.equal(result.finalOutput, 'All queries done.');
  assert.ok(state.failures >= 1, 'a request was refused');
  assert.equal(state.requests.length, STEPS + 2 + state.failures, 'each refused request was retried once');
  assert.equal(recovered.length, state.failures);
  for (const n of refused) {
    const [before, after] = [state.requests[n - 1], state.requests[n]];
    const [a, b] = [counter.usage(asMessages(before)).tokens, counter.usage(asMessages(after)).tokens];
    assert.ok(b <= LIMIT && b < a, `request ${n}: the retry is smaller, inside the provider's window: ${b} vs ${a}`);
    assert.ok(!refused.includes(n + 1), `request ${n}: the retry was accepted`);
    assert.equal(after.systemInstructions, before.systemInstructions);
    t.diagnostic(`request ${n} refused at ${a} tokens (${before.input.length} items), retried with ${b} (${after.input.length} items)`);
  }
  assert.equal(recovered[0].overflow.reportedTokens, undefined);
  assert.ok(recovered.every((r) => r.overflow.provider === 'openai'));
  if (recovered.length > 1) assert.ok(loop.results.flatMap((r) => r.events).some((e) => e.overflow?.limit === LIMIT), 'an event carries the provider overflow');
  t.diagnostic(`${state.failures} refusals in ${state.requests.length} requests; largest accepted request ${Math.max(...state.requests.filter((_, i) => !refused.includes(i + 1)).map((r) => counter.usage(asMessages(r)).tokens))} tokens`);
  for (const [n, request] of state.requests.entries()) {
    const open = new Set();
    for (const item of request.input) {
      if (item.type === 'function_call') open.add(item.callId);
      if (item.type === 'function_call_result') assert.ok(open.delete(item.callId), `request ${n + 1}: result ${item.callId} without its call`);
    }
    assert.equal(open.size, 0, `request ${n + 1}: calls without results`);
  }
  assert.equal(loop.offloads.length, STEPS);
  for (const { path, out } of loop.offloads) assert.equal(await store.read(path), out, path);
});

test('compactorModel: other errors go through; still refused after the retries is a typed context_overflow; server-side conversations pass through', async () => {
  const small = () => createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, store: new MemoryStore() });
  const loop = { firstPath: undefined };
  const request = (input, extra = {}) => ({ systemInstructions: 'x', input, modelSettings: {}, tools: [], outputType: 'text', handoffs: [], tracing: false, ...extra });
  const long = Array.from({ length: 8 }, (_, i) => [
    { type: 'function_call', callId: `c${i}`, name: 'run_query', arguments: JSON.stringify({ i }), status: 'completed' },
    { type: 'function_call_result', callId: `c${i}`, name: 'run_query', status: 'completed', output: { type: 'text', text: output(i) } },
  ]).flat();
  const input = [{ role: 'user', content: 'Run them.' }, ...long];

  // Another error is not the adapter's: unchanged, not retried.
  const teapot = Object.assign(new Error('I am a teapot'), { status: 418 });
  const other = { requests: [], reported: [], failures: 0, loop };
  const c1 = await small();
  await assert.rejects(compactorModel(c1, new ScriptedModel(other, { fail: () => teapot })).getResponse(request(input)), (e) => e === teapot);
  assert.equal(other.requests.length, 1);

  // Always refused: one compaction and retry (overflow.retries 1), then the typed error.
  const always = { requests: [], reported: [], failures: 0, loop };
  const c2 = await small();
  const error = await compactorModel(c2, new ScriptedModel(always, { fail: () => refusal(10_500) })).getResponse(request(input)).catch((e) => e);
  assert.ok(error instanceof CompactorError, String(error));
  assert.equal(error.code, 'context_overflow');
  assert.equal(error.cause?.code, 'context_length_exceeded');
  assert.equal(always.requests.length, 2);
  // Streamed, the same.
  const streamed = { requests: [], reported: [], failures: 0, loop };
  const c3 = await small();
  const events = [];
  const streamError = await (async () => {
    for await (const e of compactorModel(c3, new ScriptedModel(streamed, { fail: () => refusal(10_500) })).getStreamedResponse(request(input))) events.push(e);
  })().catch((e) => e);
  assert.equal(streamError?.code, 'context_overflow');
  assert.equal(events.length, 0);
  assert.equal(streamed.requests.length, 2);

  // With overflow.retries 0, and for a request continuing a server-side conversation, the
  // provider's error goes through as it is.
  const off = await createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, store: new MemoryStore(), overflow: { retries: 0 } });
  const none = { requests: [], reported: [], failures: 0, loop };
  const e0 = await compactorModel(off, new ScriptedModel(none, { fail: () => refusal(10_500) })).getResponse(request(input)).catch((e) => e);
  assert.equal(e0.code, 'context_length_exceeded');
  const server = { requests: [], reported: [], failures: 0, loop };
  const e1 = await compactorModel(await small(), new ScriptedModel(server, { fail: () => refusal(10_500) })).getResponse(request(input, { previousResponseId: 'resp_1' })).catch((e) => e);
  assert.equal(e1.code, 'context_length_exceeded');
  assert.equal(server.requests.length, 1);

  // A provider's models come wrapped.
  const inner = new ScriptedModel({ requests: [], reported: [], failures: 0, loop }, { report: () => 42 });
  const provider = compactorModelProvider(c1, { getModel: async (name) => (assert.equal(name, 'gpt-5.1'), inner) });
  const wrapped = await provider.getModel('gpt-5.1');
  assert.equal((await wrapped.getResponse(request([{ role: 'user', content: 'hi' }]))).usage.inputTokens, 42);
  assert.throws(() => compactorModel(c1, {}), /must be an Agents SDK Model/);
  assert.throws(() => compactorModel({}, inner), /must be a compactor/);
});

test('input items cross to the core and back: a model response is one message, unchanged items are the same objects', async () => {
  const items = [
    { role: 'user', content: [{ type: 'input_text', text: 'What is in this picture?' }, { type: 'input_image', image: 'https://example.com/a.png' }] },
    { type: 'reasoning', content: [{ type: 'input_text', text: 'Thinking.' }] },
    { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Let me look.' }] },
    { type: 'function_call', callId: 'c1', name: 'describe', arguments: '{"detail":"high"}', status: 'completed' },
    { type: 'function_call', callId: 'c2', name: 'describe', arguments: '{"detail":"low"}', status: 'completed' },
    { type: 'function_call_result', callId: 'c1', name: 'describe', status: 'completed', output: { type: 'text', text: 'A cat.' } },
    { type: 'function_call_result', callId: 'c2', name: 'describe', status: 'completed', output: 'A small cat.' },
    { type: 'compaction', encrypted_content: 'gAAAA', id: 'cmp_1' },
    { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'A cat.' }] },
  ];
  const converted = toModelMessages(items);
  assert.deepEqual(converted.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant', 'assistant']);
  assert.deepEqual(converted[0].content[1], { type: 'image', image: 'https://example.com/a.png' });
  // One model response, one message, as the AI SDK holds it.
  assert.deepEqual(converted[1].content, [
    { type: 'reasoning', text: 'Thinking.' },
    { type: 'text', text: 'Let me look.' },
    { type: 'tool-call', toolCallId: 'c1', toolName: 'describe', input: { detail: 'high' } },
    { type: 'tool-call', toolCallId: 'c2', toolName: 'describe', input: { detail: 'low' } },
  ]);
  assert.deepEqual(converted[2].content.map((p) => p.output), [{ type: 'text', value: 'A cat.' }, { type: 'text', value: 'A small cat.' }]);
  assert.deepEqual(converted[3].providerOptions, { contextCompactor: { pin: true } }, 'the compaction item is pinned, on its own');
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 128_000, store: new MemoryStore() });
  const { messages } = await compactor.manage(converted);
  fromModelMessages(messages, items, converted).forEach((item, i) => assert.equal(item, items[i], `item ${i}`));
  // One result of the step changed: its item rebuilt, every other item the original object.
  const changed = structuredClone(converted);
  changed[2].content[1].output = { type: 'text', value: '[offloaded]' };
  changed[1].content[3].input = { detail: 'none' };
  const back = fromModelMessages(changed, items, converted);
  assert.equal(back.length, items.length);
  for (const i of [0, 1, 2, 3, 5, 7, 8]) assert.equal(back[i], items[i], `item ${i}`);
  assert.deepEqual(back[4], { ...items[4], arguments: '{"detail":"none"}' });
  assert.deepEqual(back[6], { ...items[6], output: { type: 'text', text: '[offloaded]' } });
  assert.throws(() => compactorInputFilter({}), /must be a compactor/);
});
