// The OpenAI Agents SDK (`context-compactor/openai-agents`, issue 33): a real `run()` of
// `@openai/agents-core` (0.20, pinned in js/package.json) with `compactorInputFilter`,
// `compactorTools` and the recovery tools, driven by a scripted `Model` through a 30-step tool
// loop in a 12,000-token window. Checked on every model request: inside the window, every
// function call with its result; and that large outputs are stored byte for byte as they
// return, an older span is summarized, a pinned unknown item stays, and `read_file` reads a
// stored output back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, Usage, run, tool } from '@openai/agents-core';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';
import { STEPS, WINDOW, checkLoop, loopCompactor, output, stepOf } from '../test-helpers/framework-loop.mjs';
import { compactorInputFilter, compactorTools, fromModelMessages, recoveryAgentTools, toModelMessages } from '../dist/openai-agents.js';

await init();

/** Plays the agent: request k calls `run_query({i: k})`; request 21 reads the first stored
 * output back; then it answers. Records every request. */
class ScriptedModel {
  constructor(state) {
    this.state = state;
  }
  async getResponse(request) {
    const s = this.state;
    s.requests.push(request);
    const n = s.requests.length;
    const call = (callId, name, args) => ({ type: 'function_call', callId, name, arguments: JSON.stringify(args), status: 'completed' });
    const step = stepOf(n, s.loop.firstPath);
    const output = step.read
      ? [call('read_back', 'read_file', { path: step.read, offset: 0, limit: 3 })]
      : step.query
        ? [call(`q${step.query}`, 'run_query', { i: step.query })]
        : [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'All queries done.' }] }];
    return { usage: new Usage({ inputTokens: 0, outputTokens: 5, totalTokens: 5, requests: 1 }), output };
  }
  async *getStreamedResponse() {
    throw new Error('not streamed');
  }
}

test('run() with compactorInputFilter: 30 tool steps in a 12k window, offloaded at return, summarized, read back', async () => {
  const { compactor, store, loop } = await loopCompactor();
  const state = { requests: [], loop };
  const runQuery = tool({
    name: 'run_query',
    description: 'Runs query i and returns its rows.',
    parameters: { type: 'object', properties: { i: { type: 'number' } }, required: ['i'], additionalProperties: true },
    strict: false,
    execute: async ({ i }) => output(i),
  });
  const agent = new Agent({
    name: 'data-agent',
    instructions: 'You are a data agent.',
    model: new ScriptedModel(state),
    tools: [...compactorTools(compactor, [runQuery]), ...recoveryAgentTools(compactor)],
  });
  // A provider's compaction item from an earlier turn: pinned, kept byte for byte.
  const compaction = { type: 'compaction', encrypted_content: 'gAAAAABoq0zX', id: 'cmp_1' };
  const input = [{ role: 'user', content: 'Earlier work.' }, compaction, { role: 'user', content: 'Run queries 1 to 30, then report.' }];
  const result = await run(agent, input, { maxTurns: 100, callModelInputFilter: compactorInputFilter(compactor, { onResult: (r) => loop.results.push(r) }) });
  assert.equal(result.finalOutput, 'All queries done.');
  assert.equal(state.requests.length, STEPS + 2);

  await checkLoop(assert, { store, loop });

  for (const [n, request] of state.requests.entries()) {
    const items = request.input;
    const counted = compactor.usage([{ role: 'system', content: request.systemInstructions ?? '' }, ...toModelMessages(items)]).tokens;
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
});

test('input items cross to the core and back: unchanged ones are the same objects', async () => {
  const items = [
    { role: 'user', content: [{ type: 'input_text', text: 'What is in this picture?' }, { type: 'input_image', image: 'https://example.com/a.png' }] },
    { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Let me look.' }] },
    { type: 'function_call', callId: 'c1', name: 'describe', arguments: '{"detail":"high"}', status: 'completed' },
    { type: 'function_call_result', callId: 'c1', name: 'describe', status: 'completed', output: { type: 'text', text: 'A cat.' } },
    { type: 'reasoning', content: [{ type: 'input_text', text: 'Thinking.' }] },
  ];
  const converted = toModelMessages(items);
  assert.deepEqual(converted[0].content[1], { type: 'image', image: 'https://example.com/a.png' });
  assert.deepEqual(converted[2].content, [{ type: 'tool-call', toolCallId: 'c1', toolName: 'describe', input: { detail: 'high' } }]);
  assert.deepEqual(converted[3].content[0].output, { type: 'text', value: 'A cat.' });
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 128_000, store: new MemoryStore() });
  const { messages } = await compactor.manage(converted);
  fromModelMessages(messages, items, converted).forEach((item, i) => assert.equal(item, items[i], `item ${i}`));
  const changed = structuredClone(converted);
  changed[3].content[0].output = { type: 'text', value: '[offloaded]' };
  const rebuilt = fromModelMessages(changed, items, converted)[3];
  assert.deepEqual(rebuilt, { ...items[3], output: { type: 'text', text: '[offloaded]' } });
  assert.throws(() => compactorInputFilter({}), /must be a compactor/);
});
