// LangChain.js v1 (`context-compactor/langchain`, issue 33): a real `createAgent` (langchain
// 1.5, pinned in js/package.json) with `compactorMiddleware` and the recovery tools, driven by
// a scripted chat model through a 30-step tool loop in a 12,000-token window. Checked on every
// prompt the model receives: inside the window, every tool call with its result; and that large
// outputs are offloaded as they return and stored byte for byte, an older span is summarized,
// and `read_file` reads a stored output back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { createAgent, tool } from 'langchain';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';
import { STEPS, WINDOW, checkLoop, loopCompactor, output, stepOf } from '../test-helpers/framework-loop.mjs';
import { compactorMiddleware, fromModelMessages, recoveryLangChainTools, toModelMessages } from '../dist/langchain.js';

await init();

/** A chat model that plays the agent: step k calls `run_query({i: k})`; at step 20 it reads the
 * first query's stored copy back with `read_file`; then it answers. It records every prompt. */
class ScriptedAgent extends BaseChatModel {
  constructor(state) {
    super({});
    this.state = state;
  }
  _llmType() {
    return 'scripted-agent';
  }
  bindTools() {
    return this;
  }
  async _generate(messages) {
    const s = this.state;
    s.prompts.push(messages);
    const step = stepOf(s.prompts.length, s.loop.firstPath);
    let message;
    if (step.read) message = new AIMessage({ content: 'Reading the first result back.', tool_calls: [{ id: 'read_back', name: 'read_file', args: { path: step.read, offset: 0, limit: 3 }, type: 'tool_call' }] });
    else if (step.query) message = new AIMessage({ content: `Step ${step.query}: querying.`, tool_calls: [{ id: `q${step.query}`, name: 'run_query', args: { i: step.query }, type: 'tool_call' }] });
    else message = new AIMessage('All queries done.');
    message.usage_metadata = { input_tokens: 0, output_tokens: 5, total_tokens: 5 };
    return { generations: [{ text: String(message.content), message }] };
  }
}

test('createAgent with compactorMiddleware: 30 tool steps in a 12k window, offloaded at return, summarized, read back', async () => {
  const { compactor, store, loop } = await loopCompactor();
  const state = { prompts: [], loop };
  const runQuery = tool(async ({ i }) => output(i), {
    name: 'run_query',
    description: 'Runs query i and returns its rows.',
    schema: { type: 'object', properties: { i: { type: 'number' } }, required: ['i'] },
  });
  const agent = createAgent({
    model: new ScriptedAgent(state),
    tools: [runQuery, ...recoveryLangChainTools(compactor)],
    systemPrompt: 'You are a data agent.',
    middleware: [compactorMiddleware(compactor, { onResult: (r) => loop.results.push(r) })],
  });

  const final = await agent.invoke({ messages: [new HumanMessage('Run queries 1 to 30, then report.')] }, { recursionLimit: 200 });
  assert.equal(state.prompts.length, STEPS + 2, 'every step reached the model');
  assert.equal(String(final.messages.at(-1).content), 'All queries done.');

  await checkLoop(assert, { store, loop });

  // Every prompt: inside the window (the compactor's count of it), every call with its result.
  for (const [n, prompt] of state.prompts.entries()) {
    const converted = toModelMessages(prompt);
    assert.ok(compactor.usage(converted).tokens <= WINDOW, `prompt ${n + 1}: ${compactor.usage(converted).tokens} tokens`);
    const open = new Set();
    for (const m of prompt) {
      if (AIMessage.isInstance(m)) for (const c of m.tool_calls ?? []) open.add(c.id);
      if (ToolMessage.isInstance(m)) assert.ok(open.delete(m.tool_call_id), `prompt ${n + 1}: result ${m.tool_call_id} without its call`);
    }
    assert.equal(open.size, 0, `prompt ${n + 1}: calls without results ${[...open]}`);
  }

  const latest = state.prompts.at(-1);
  assert.ok(latest.some((m) => HumanMessage.isInstance(m) && String(m.content).includes('Run the queries.')), 'the summary is in the last prompt');
  assert.ok(SystemMessage.isInstance(latest[0]) && JSON.stringify(latest[0].content).includes('You are a data agent.'));

  // read_file read the first output back (its first 3 lines).
  const readBack = final.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === 'read_back');
  assert.ok(readBack, 'the read_file result is in the history');
  for (const line of output(1).split('\n').slice(0, 3)) assert.ok(String(readBack.content).includes(line), `read back: ${readBack.content}`);
});

test('messages cross to the core and back: unchanged ones are the same objects, images count as images', async () => {
  const image = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  const messages = [
    new SystemMessage('You are a helpful agent.'),
    new HumanMessage({ id: 'h1', content: [{ type: 'text', text: 'What is in this picture?' }, { type: 'image', data: image, mimeType: 'image/png' }] }),
    new AIMessage({ id: 'a1', content: 'Let me look.', tool_calls: [{ id: 'c1', name: 'describe', args: { detail: 'high' }, type: 'tool_call' }] }),
    new ToolMessage({ id: 't1', content: 'A single pixel.', tool_call_id: 'c1', name: 'describe' }),
    new ToolMessage({ content: 'not found', tool_call_id: 'c2', name: 'lookup', status: 'error' }),
  ];
  messages.splice(4, 0, new AIMessage({ content: '', tool_calls: [{ id: 'c2', name: 'lookup', args: {}, type: 'tool_call' }] }));
  const converted = toModelMessages(messages);
  assert.deepEqual(converted[1].content[1], { type: 'image', image, mediaType: 'image/png' });
  assert.deepEqual(converted[2].content, [{ type: 'text', text: 'Let me look.' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'describe', input: { detail: 'high' } }]);
  assert.deepEqual(converted[3].content[0].output, { type: 'text', value: 'A single pixel.' });
  assert.equal(converted[5].content[0].output.type, 'error-text');

  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 128_000, store: new MemoryStore() });
  const breakdown = compactor.usage(converted).tokens;
  assert.ok(breakdown < 2_000, `the image counts as an image, not as ${image.length} characters of text: ${breakdown}`);
  const { messages: managed } = await compactor.manage(converted);
  const back = fromModelMessages(managed, messages, converted);
  assert.equal(back.length, messages.length);
  back.forEach((m, i) => assert.equal(m, messages[i], `message ${i} is the original object`));

  // A changed tool result is rebuilt with the original's id, name and call id.
  const changed = structuredClone(converted);
  changed[3].content[0].output = { type: 'text', value: '[Tool output offloaded …]' };
  const rebuilt = fromModelMessages(changed, messages, converted);
  assert.ok(ToolMessage.isInstance(rebuilt[3]) && rebuilt[3] !== messages[3]);
  assert.equal(rebuilt[3].id, 't1');
  assert.equal(rebuilt[3].tool_call_id, 'c1');
  assert.equal(rebuilt[3].content, '[Tool output offloaded …]');
  assert.throws(() => compactorMiddleware({}), /must be a compactor/);
});
