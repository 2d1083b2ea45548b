// Mastra (`context-compactor/mastra`, issue 33): a real `Agent` of `@mastra/core` (1.71, pinned in
// js/package.json) with `compactorProcessor` and the recovery tools, driven by a scripted AI SDK
// model (`MockLanguageModelV3`) through a 30-step tool loop in a 12,000-token window, with
// `generate` and with `stream`. Checked on every prompt the model receives: inside the window,
// every tool call with its result, and equal to what `compactor.manage` gives a second compactor
// for the same session (Mastra's own prompt before the processor, the same usage reports); and
// that large outputs are stored byte for byte as they return (Mastra's history keeps the
// preview), an older span is summarized, the reported usage calibrates, and `read_file` reads a
// stored output back. Then a provider's "prompt too long" rejection is recovered from, and the
// prompt crosses unchanged where nothing is compacted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { APICallError } from 'ai';
import { MockLanguageModelV3, convertArrayToReadableStream } from 'ai/test';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';
import { STEPS, WINDOW, checkLoop, loopCompactor, output, stepOf } from '../test-helpers/framework-loop.mjs';
import { compactorProcessor, recoveryMastraTools } from '../dist/mastra.js';

await init();

const usage = (input) => ({ inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } });

/** A scripted model: request k calls `run_query({i: k})`; request 21 reads the first stored
 * output back; then it answers. Records every prompt it receives, and reports as its input
 * tokens `report(prompt)` (or throws what `fail(n)` returns). Answers `generate` and `stream`. */
function scriptedModel(state, { report = () => 0, fail = () => undefined } = {}) {
  const answer = ({ prompt }) => {
    state.prompts.push(prompt);
    const n = state.prompts.length;
    const error = fail(n, prompt);
    if (error) throw error;
    const step = stepOf(n - state.failures, state.loop.firstPath);
    const call = (toolCallId, toolName, input) => ({ type: 'tool-call', toolCallId, toolName, input: JSON.stringify(input) });
    const content = step.read ? [call('read_back', 'read_file', { path: step.read, offset: 0, limit: 3 })] : step.query ? [call(`q${step.query}`, 'run_query', { i: step.query })] : [{ type: 'text', text: 'All queries done.' }];
    const input = report(prompt);
    state.reported.push(input);
    return { content, finishReason: { unified: step.done ? 'stop' : 'tool-calls', raw: undefined }, usage: usage(input), warnings: [] };
  };
  return new MockLanguageModelV3({
    doGenerate: async (options) => answer(options),
    doStream: async (options) => {
      const { content, finishReason, usage: used } = answer(options);
      const parts = content.flatMap((p) => (p.type === 'text' ? [{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: p.text }, { type: 'text-end', id: 't' }] : [p]));
      return { stream: convertArrayToReadableStream([{ type: 'stream-start', warnings: [] }, ...parts, { type: 'finish', finishReason, usage: used }]) };
    },
  });
}

const runQuery = createTool({
  id: 'run_query',
  description: 'Runs query i and returns its rows.',
  inputSchema: { type: 'object', properties: { i: { type: 'number' } }, required: ['i'] },
  execute: async ({ i }) => output(i),
});

/** Mastra's own prompt, as it reaches `processLLMRequest` (before ours). */
const spy = (raw) => ({ id: 'spy', processLLMRequest: ({ prompt }) => void raw.push(structuredClone(prompt)) });

/** Every tool call with its result, in order, in a provider prompt. */
function checkPairs(prompt, n) {
  const open = new Set();
  for (const m of prompt) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type === 'tool-call') open.add(p.toolCallId);
      if (p.type === 'tool-result') assert.ok(open.delete(p.toolCallId), `prompt ${n}: result ${p.toolCallId} without its call`);
    }
  }
  assert.equal(open.size, 0, `prompt ${n}: calls without results ${[...open]}`);
}

const text = (m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content));

for (const method of ['generate', 'stream'])
test(`Agent.${method} with compactorProcessor: 30 tool steps in a 12k window, offloaded at return, summarized, calibrated, read back, the prompts manage gives`, async (t) => {
  const { compactor, store, loop } = await loopCompactor();
  const state = { prompts: [], reported: [], failures: 0, loop };
  // The provider counts 10 % more than an uncalibrated compactor: calibration has something to learn.
  const counter = await createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, store: new MemoryStore() });
  const report = (prompt) => Math.round(counter.usage(prompt).tokens * 1.1);
  const observed = [];
  const observe = compactor.observeUsage.bind(compactor);
  compactor.observeUsage = (u) => (observed.push(u.inputTokens), observe(u));
  const raw = [];
  const processor = compactorProcessor(compactor, { onResult: (r) => loop.results.push(r) });
  const agent = new Agent({
    id: 'data-agent',
    name: 'data-agent',
    instructions: 'You are a data agent.',
    model: scriptedModel(state, { report }),
    tools: { run_query: runQuery, ...recoveryMastraTools(compactor) },
    inputProcessors: [spy(raw), processor],
    outputProcessors: [processor],
  });

  const result = await agent[method]('Run queries 1 to 30, then report.', { maxSteps: 100 });
  assert.equal(await result.text, 'All queries done.');
  assert.equal(state.prompts.length, STEPS + 2, 'every step reached the model');
  assert.equal(raw.length, STEPS + 2);

  await checkLoop(assert, { store, loop });
  // Mastra's history keeps the preview, not the output: its own prompt carries no full output.
  for (const [n, prompt] of raw.entries()) assert.ok(!prompt.some((m) => text(m).includes('row 1.20: ')), `Mastra's prompt ${n + 1} has a whole output`);

  // Calibration: every reported count but the last (no call follows it) was observed, in order.
  assert.deepEqual(observed, state.reported.slice(0, -1));

  const summarized = state.prompts.findIndex((p) => p.some((m) => m.role === 'user' && text(m).includes('Run the queries.')));
  assert.ok(summarized > 0, 'a summary reached the model');
  for (const [n, prompt] of state.prompts.entries()) {
    assert.ok(compactor.usage(prompt).tokens <= WINDOW, `prompt ${n + 1}: ${compactor.usage(prompt).tokens} tokens`);
    checkPairs(prompt, n + 1);
    assert.deepEqual(prompt[0], { role: 'system', content: 'You are a data agent.' }, `prompt ${n + 1}: the instructions first`);
  }
  assert.ok(state.prompts.at(-1).length < raw.at(-1).length, `the last prompt is compacted: ${state.prompts.at(-1).length} of ${raw.at(-1).length} messages`);
  const tokens = state.prompts.map((p) => counter.usage(p).tokens);
  t.diagnostic(`${method}: ${state.prompts.length} prompts, ${loop.offloads.length} offloads at return, ${loop.summaries} summaries (first in prompt ${summarized + 1}), ${observed.length} usage reports observed; largest prompt ${Math.max(...tokens)} tokens (uncalibrated count), last ${state.prompts.at(-1).length} of ${raw.at(-1).length} messages`);

  // read_file read the first output back: its first 3 lines, byte for byte.
  const readBack = state.prompts[21].flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((p) => p.type === 'tool-result' && p.toolCallId === 'read_back');
  assert.ok(readBack, 'the read_file result is in the prompt after it');
  const lines = String(readBack.output.value).split('\n').filter((l) => /^\d+\t/.test(l)).map((l) => l.replace(/^\d+\t/, ''));
  assert.deepEqual(lines, output(1).split('\n').slice(0, 3), String(readBack.output.value));

  // The same session through `manage` on a second compactor (Mastra's prompts, the same usage
  // reports observed at the same points): the same prompts, byte for byte (as JSON: Mastra's
  // tool results share their `input` object with the call).
  const twin = await loopCompactor();
  for (const [n, prompt] of raw.entries()) {
    if (n > 0) twin.compactor.observeUsage({ inputTokens: state.reported[n - 1] });
    const { messages } = await twin.compactor.manage(prompt);
    const sent = messages.map((m) => (m.role !== 'system' && typeof m.content === 'string' ? { ...m, content: [{ type: 'text', text: m.content }] } : m));
    assert.equal(JSON.stringify(state.prompts[n]), JSON.stringify(sent), `prompt ${n + 1} differs from manage's`);
  }
});

test('a provider that refuses the prompt as too long: compacted harder and retried once, then the loop goes on', async (t) => {
  const { compactor, store, loop } = await loopCompactor();
  const state = { prompts: [], reported: [], failures: 0, loop };
  const refusal = (tokens) =>
    new APICallError({
      message: `This model's maximum context length is 10000 tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
      url: 'https://api.openai.com/v1/chat/completions',
      requestBodyValues: {},
      statusCode: 400,
      responseBody: JSON.stringify({ error: { code: 'context_length_exceeded' } }),
      isRetryable: false,
    });
  // Request 12 is refused: the provider counted 10,500 tokens in it.
  const fail = (n) => (n === 12 ? (state.failures++, refusal(10_500)) : undefined);
  const processor = compactorProcessor(compactor, { onResult: (r) => loop.results.push(r) });
  const agent = new Agent({
    id: 'data-agent',
    name: 'data-agent',
    instructions: 'You are a data agent.',
    model: scriptedModel(state, { fail }),
    tools: { run_query: runQuery, ...recoveryMastraTools(compactor) },
    inputProcessors: [processor],
    outputProcessors: [processor],
    errorProcessors: [processor],
    maxProcessorRetries: 1,
  });
  const result = await agent.generate('Run queries 1 to 30, then report.', { maxSteps: 100 });
  assert.equal(result.text, 'All queries done.');
  assert.equal(state.failures, 1);
  assert.equal(state.prompts.length, STEPS + 3, 'the refused request was retried');
  const refused = state.prompts[11];
  const retried = state.prompts[12];
  assert.ok(compactor.usage(retried).tokens < compactor.usage(refused).tokens, `the retry is smaller: ${compactor.usage(retried).tokens} vs ${compactor.usage(refused).tokens}`);
  const events = loop.results.flatMap((r) => r.events);
  assert.ok(events.some((e) => e.overflow?.reportedTokens === 10_500), 'an event carries the provider overflow');
  t.diagnostic(`refused prompt ${compactor.usage(refused).tokens} tokens (${refused.length} messages), retried with ${compactor.usage(retried).tokens} (${retried.length} messages)`);
  for (const [n, prompt] of state.prompts.entries()) checkPairs(prompt, n + 1);
  assert.equal(loop.offloads.length, STEPS);
  for (const { path, out } of loop.offloads) assert.equal(await store.read(path), out, path);

  // Another error is not the processor's: it surfaces unchanged, without a retry.
  const other = { prompts: [], reported: [], failures: 0, loop: { firstPath: undefined } };
  const teapot = new APICallError({ message: 'I am a teapot', url: 'https://example.com', requestBodyValues: {}, statusCode: 418, isRetryable: false });
  const failing = new Agent({
    id: 'teapot',
    name: 'teapot',
    instructions: 'x',
    model: scriptedModel(other, { fail: () => teapot }),
    errorProcessors: [compactorProcessor(await createCompactor({ model: 'gpt-4o', contextWindow: WINDOW, store: new MemoryStore() }))],
    maxProcessorRetries: 1,
  });
  await assert.rejects(failing.generate('hi', { maxSteps: 3 }), /teapot/);
  assert.equal(other.prompts.length, 1, 'not retried');
});

test('a prompt the compactor leaves alone crosses unchanged: the same objects, images, files and reasoning as they are', async () => {
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 128_000, store: new MemoryStore() });
  const processor = compactorProcessor(compactor);
  const image = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  const prompt = [
    { role: 'system', content: 'You are a helpful agent.' },
    { role: 'user', content: [{ type: 'text', text: 'What is in these?', providerOptions: { mastra: { createdAt: 1 } } }, { type: 'file', mediaType: 'image/png', data: image }, { type: 'file', mediaType: 'application/pdf', data: 'JVBERi0xLjQK', filename: 'a.pdf' }] },
    { role: 'assistant', content: [{ type: 'reasoning', text: 'Look first.', providerOptions: { anthropic: { signature: 'sig' } } }, { type: 'tool-call', toolCallId: 'c1', toolName: 'describe', input: { detail: 'high' } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'describe', output: { type: 'text', value: 'A single pixel.' } }] },
  ];
  const copy = structuredClone(prompt);
  const results = [];
  const p2 = compactorProcessor(compactor, { onResult: (r) => results.push(r) });
  assert.equal(await processor.processLLMRequest({ prompt, stepNumber: 0, steps: [], state: {} }), undefined, 'nothing changed: the prompt goes as it is');
  assert.deepEqual(prompt, copy);
  await p2.processLLMRequest({ prompt, stepNumber: 0, steps: [], state: {} });
  results[0].messages.forEach((m, i) => assert.equal(m, prompt[i], `message ${i} is the original object`));
  assert.ok(compactor.usage(prompt).tokens < 4_000, `the image and the file count as such, not as text: ${compactor.usage(prompt).tokens}`);

  // A summary the core inserts (string content) crosses as a text part; the system prompt stays.
  const small = await createCompactor({ model: 'gpt-4o', contextWindow: 4_000, store: new MemoryStore(), summarize: async () => '## Session Intent\nDescribe.' });
  const long = [prompt[0], ...Array.from({ length: 12 }, (_, i) => [{ role: 'user', content: [{ type: 'text', text: `question ${i} ${'word '.repeat(200)}` }] }, { role: 'assistant', content: [{ type: 'text', text: `answer ${i} ${'word '.repeat(200)}` }] }]).flat()];
  const out = await compactorProcessor(small).processLLMRequest({ prompt: long, stepNumber: 0, steps: [], state: {} });
  assert.ok(out?.prompt, 'the long prompt was compacted');
  assert.equal(out.prompt[0], long[0]);
  for (const m of out.prompt.slice(1)) assert.ok(Array.isArray(m.content), `every non-system message has parts: ${JSON.stringify(m).slice(0, 120)}`);
  assert.ok(out.prompt.some((m) => JSON.stringify(m.content).includes('Session Intent')), 'the summary is there');

  // Offload at return: a large output is replaced in Mastra's message list by its preview; a
  // small one is left alone.
  const updates = [];
  const messageList = { updateToolInvocation: (u) => updates.push(u) };
  const big = 'x'.repeat(8) + '\n' + output(3);
  assert.equal(await small.offloadToolOutput('t', 'probe', 'small'), 'small');
  await compactorProcessor(small).processToolResult({ toolName: 'run_query', toolCallId: 'c9', args: { i: 3 }, result: 'small', messageList });
  assert.equal(updates.length, 0);
  await compactorProcessor(small).processToolResult({ toolName: 'run_query', toolCallId: 'c9', args: { i: 3 }, result: big, messageList });
  assert.equal(updates.length, 1);
  assert.deepEqual({ ...updates[0].toolInvocation, result: undefined }, { state: 'result', toolCallId: 'c9', toolName: 'run_query', args: { i: 3 }, result: undefined });
  const path = /Full content: (\S+?)\]/.exec(updates[0].toolInvocation.result)?.[1];
  assert.equal(await small.tools().read_file.execute({ path, offset: 0, limit: 1 }).then((r) => r.split('\n')[0]), '1\txxxxxxxx');
  await compactorProcessor(small, { offloadAtReturn: false }).processToolResult({ toolName: 'run_query', toolCallId: 'c10', args: {}, result: big, messageList });
  assert.equal(updates.length, 1, 'offloadAtReturn: false leaves outputs alone');

  // The recovery tools are Mastra tools.
  const tools = recoveryMastraTools(small);
  assert.deepEqual(Object.keys(tools), ['read_file', 'grep', 'ls']);
  assert.equal(tools.read_file.id, 'read_file');
  assert.match(String(await tools.ls.execute({ path: '/' }, {})), /tool_outputs/);
  assert.throws(() => compactorProcessor({}), /must be a compactor/);
});
