// LangChain.js v1 (`context-compactor/langchain`, issue 33): a real `createAgent` (langchain
// 1.5, pinned in js/package.json) with `compactorMiddleware` and the recovery tools, driven by
// a scripted chat model through a 30-step tool loop in a 12,000-token window. Checked on every
// prompt the model receives: inside the window, every tool call with its result; and that large
// outputs are offloaded as they return and stored byte for byte, an older span is summarized,
// and `read_file` reads a stored output back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, ChatMessage, FunctionMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { createAgent, tool } from 'langchain';
import { CompactorError, MemoryStore, createCompactor, init } from '../dist/entry/node.js';
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

test('file and audio blocks (each LangChain form) count as files, and come back as the very block, also in a rebuilt message', async () => {
  // ~300 kB of base64: as JSON text it is ~100k tokens and gets offloaded; as a file, a file.
  const base64 = Buffer.from(Array.from({ length: 225_000 }, (_, i) => (i * 7919) % 251)).toString('base64');
  const forms = {
    'v1 file (data)': { type: 'file', data: base64, mimeType: 'application/pdf', metadata: { filename: 'r.pdf' } },
    'v1 file (bytes)': { type: 'file', data: Buffer.from(base64, 'base64'), mimeType: 'application/pdf' },
    'v1 file (Python base64)': { type: 'file', base64, mime_type: 'application/pdf', extras: { filename: 'r.pdf' } },
    'v0 source_type': { type: 'file', source_type: 'base64', data: base64, mime_type: 'application/pdf' },
    'v1 file url': { type: 'file', url: 'https://example.com/report.pdf', mimeType: 'application/pdf' },
    'v1 audio': { type: 'audio', data: base64, mimeType: 'audio/wav' },
    'openai input_audio': { type: 'input_audio', input_audio: { data: base64, format: 'wav' } },
    'v1 image fileId': { type: 'image', fileId: 'file-abc123' },
    'anthropic document (base64)': { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: base64 }, title: 'r.pdf', citations: { enabled: true } },
    'anthropic document (url)': { type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } },
    'anthropic document (text)': { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'The report says: all good.' }, context: 'a status report' },
  };
  const log = Array.from({ length: 3_000 }, (_, i) => `log line ${i}: status ok, latency ${i % 97} ms`).join('\n');
  for (const [name, block] of Object.entries(forms)) {
    const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000, store: new MemoryStore() });
    let messages = [new HumanMessage({ content: [{ type: 'text', text: 'What does this say?' }, block] })];
    let converted = toModelMessages(messages);
    assert.ok(['image', 'file'].includes(converted[0].content[1].type), `${name}: ${converted[0].content[1].type}`);
    assert.ok(compactor.usage(converted).tokens < 5_000, `${name}: ${compactor.usage(converted).tokens} tokens`);
    let result = await compactor.manage(converted);
    assert.deepEqual(result.events, [], name);
    assert.equal(fromModelMessages(result.messages, messages, converted)[0], messages[0], name);
    // A pasted log beside it is offloaded: the message is rebuilt, the block is itself again.
    messages = [new HumanMessage({ id: 'h1', content: [{ type: 'text', text: log }, block] })];
    converted = toModelMessages(messages);
    result = await compactor.manage(converted);
    assert.deepEqual(result.events.map((e) => e.strategy), ['offload'], name);
    const [rebuilt] = fromModelMessages(result.messages, messages, converted);
    assert.equal(rebuilt.id, 'h1', name);
    assert.deepEqual(rebuilt.content[1], block, name);
    assert.deepEqual(Object.keys(rebuilt.content[1]), Object.keys(block), name);
    assert.match(rebuilt.content[0].text, /^\[Long message text stored: /, name);
  }
  assert.deepEqual(toModelMessages([new HumanMessage({ content: [forms['v1 file (Python base64)']] })])[0].content[0], { type: 'file', data: base64, mediaType: 'application/pdf', filename: 'r.pdf' });
  assert.deepEqual(toModelMessages([new HumanMessage({ content: [forms['openai input_audio']] })])[0].content[0], { type: 'file', data: base64, mediaType: 'audio/wav' });
  assert.deepEqual(toModelMessages([new HumanMessage({ content: [forms['anthropic document (base64)']] })])[0].content[0], { type: 'file', data: base64, mediaType: 'application/pdf', filename: 'r.pdf' });
  assert.deepEqual(toModelMessages([new HumanMessage({ content: [forms['anthropic document (text)']] })])[0].content[0], { type: 'file', data: { type: 'text', text: 'The report says: all good.' }, mediaType: 'text/plain' });

  // In a tool result: a `file-data` item of a `content` output; a changed text beside it leaves
  // the block as it was.
  const pdf = forms['v1 file (data)'];
  const tool = new ToolMessage({ id: 't1', content: [{ type: 'text', text: 'The report:' }, pdf], tool_call_id: 'c1', name: 'fetch' });
  const converted = toModelMessages([tool]);
  assert.deepEqual(converted[0].content[0].output, { type: 'content', value: [{ type: 'text', text: 'The report:' }, { type: 'file-data', data: base64, mediaType: 'application/pdf', filename: 'r.pdf' }] });
  const changed = structuredClone(converted);
  changed[0].content[0].output.value[0].text = 'The report (abridged):';
  const [back] = fromModelMessages(changed, [tool], converted);
  assert.deepEqual(back.content, [{ type: 'text', text: 'The report (abridged):' }, pdf]);
  assert.equal(back.id, 't1');
});

test('a message of another class (ChatMessage, FunctionMessage) crosses as the user\'s, and comes back as itself', async () => {
  const messages = [new ChatMessage({ role: 'assistant', content: 'Noted.' }), new FunctionMessage({ name: 'lookup', content: [{ type: 'text', text: 'found' }] })];
  const converted = toModelMessages(messages);
  assert.deepEqual(converted, [
    { role: 'user', content: [{ type: 'text', text: 'Noted.' }] },
    { role: 'user', content: [{ type: 'text', text: 'found' }] },
  ]);
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 128_000, store: new MemoryStore() });
  const { messages: managed } = await compactor.manage(converted);
  fromModelMessages(managed, messages, converted).forEach((m, i) => assert.equal(m, messages[i]));
});

test("an OpenAI function_call block repeating a tool call (matched by call_id) crosses once, as the call", () => {
  const message = new AIMessage({
    content: [
      { type: 'text', text: 'Looking it up.' },
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'lookup', arguments: '{"q":"x"}' },
    ],
    tool_calls: [{ id: 'call_1', name: 'lookup', args: { q: 'x' }, type: 'tool_call' }],
  });
  assert.deepEqual(toModelMessages([message])[0].content, [
    { type: 'text', text: 'Looking it up.' },
    { type: 'tool-call', toolCallId: 'call_1', toolName: 'lookup', input: { q: 'x' } },
  ]);
});

const OVERFLOW_LIMIT = 8_000;
const page = (n) => Array.from({ length: 60 }, (_, i) => `page ${n} line ${i}: the quarterly figure for region ${i % 13} was ${(n * 7919 + i * 31) % 10_007}`).join('\n');

/** Refuses its first `refusals` calls as too long: with the provider's error (Anthropic's text,
 * its count of the prompt and a limit of 8k), or, with `stop`, by answering with Anthropic's
 * `stop_reason: model_context_window_exceeded`. Then answers. Records each prompt's size. */
class RefusingModel extends BaseChatModel {
  constructor({ refusals = 1, stop = false, stopKey = 'stop_reason', error } = {}) {
    super({});
    Object.assign(this, { refusals, stop, stopKey, error, sizes: [] });
  }
  _llmType() {
    return 'refusing';
  }
  bindTools() {
    return this;
  }
  async _generate(messages) {
    const counter = await createCompactor({ model: 'gpt-4o', contextWindow: 64_000, store: new MemoryStore() });
    const tokens = counter.usage(toModelMessages(messages)).tokens;
    this.sizes.push(tokens);
    let message = new AIMessage('done');
    if (this.sizes.length <= this.refusals) {
      if (this.error) throw this.error;
      if (!this.stop) throw new Error(`prompt is too long: ${tokens} tokens > ${OVERFLOW_LIMIT} maximum`);
      message = new AIMessage({ content: 'The pages s', response_metadata: { [this.stopKey]: 'model_context_window_exceeded' } });
    }
    return { generations: [{ text: String(message.content), message }] };
  }
}

/** What an agent run threw from inside the middleware: LangChain wraps every error a
 * `wrapModelCall` throws in its `MiddlewareError`, the error itself as `cause`. */
const failureOf = (run) =>
  run.then(
    () => assert.fail('no error'),
    (error) => {
      assert.equal(error['~brand'], 'MiddlewareError', String(error));
      return error.cause;
    },
  );

/** An agent over ~14k tokens of history (under the 64k window, so `beforeModel` leaves it):
 * twelve pages a tool fetched (a first recovery masks the older ones, a second summarizes). */
async function overflowRun(model, options = {}) {
  const history = [new HumanMessage('Read the report, then sum it up.')];
  for (let n = 0; n < 12; n++) {
    history.push(new AIMessage({ content: '', tool_calls: [{ id: `c${n}`, name: 'fetch_page', args: { n }, type: 'tool_call' }] }));
    history.push(new ToolMessage({ content: page(n), tool_call_id: `c${n}`, name: 'fetch_page' }));
  }
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 64_000, store: new MemoryStore(), summarize: async () => '## Session Intent\nRead the report.' });
  const results = [];
  const agent = createAgent({ model, tools: [], middleware: [compactorMiddleware(compactor, { onResult: (r) => results.push(r), ...options })] });
  return { final: await agent.invoke({ messages: history }), results };
}

test('a model call the provider refuses as too long is retried on a harder compaction; after the last retry it is a typed error', async () => {
  let model = new RefusingModel();
  const { final, results } = await overflowRun(model);
  assert.equal(model.sizes.length, 2);
  assert.ok(model.sizes[1] < model.sizes[0], `${model.sizes}`);
  assert.equal(final.messages.at(-1).content, 'done');
  assert.ok(results.at(-1).overflow, 'onResult gets the recover result');

  // As the AI SDK middleware: once the retries are spent, `CompactorError('context_overflow')`.
  model = new RefusingModel({ refusals: 2 });
  const error = await failureOf(overflowRun(model));
  assert.ok(error instanceof CompactorError, String(error));
  assert.equal(error.code, 'context_overflow');
  assert.equal(error.message, `the provider still refused the prompt as too long after 1 compaction and retry (prompt is too long: ${model.sizes[1]} tokens > ${OVERFLOW_LIMIT} maximum)`);
  assert.deepEqual(error.details, { provider: 'anthropic', reportedTokens: model.sizes[1], limit: OVERFLOW_LIMIT, attempts: 1 });
  assert.match(error.cause.message, /^prompt is too long/);
  model = new RefusingModel({ refusals: 3 });
  const twice = await failureOf(overflowRun(model, { overflowRetries: 2 }));
  assert.match(twice.message, /^the provider still refused the prompt as too long after 2 compactions and retries \(/);
  assert.equal(twice.details.attempts, 2);
  assert.equal(model.sizes.length, 3);

  // No retries: the provider's error as it was; any other error is never retried.
  model = new RefusingModel();
  const plain = await failureOf(overflowRun(model, { overflowRetries: 0 }));
  assert.match(plain.message, /^prompt is too long/);
  model = new RefusingModel({ error: Object.assign(new Error('Rate limit reached'), { statusCode: 429 }) });
  const other = await failureOf(overflowRun(model));
  assert.equal(other, model.error);
  assert.equal(model.sizes.length, 1);
  assert.throws(() => compactorMiddleware({ manage() {}, overflowRetries: 1 }, { overflowRetries: -1 }), /overflowRetries must be a whole number/);
  assert.throws(() => compactorMiddleware({ manage() {}, overflowRetries: 1 }, { offloadAtReturn: 'no' }), (e) => e.code === 'invalid_config' && /offloadAtReturn must be true or false, got "no"/.test(e.message));
  assert.throws(() => recoveryLangChainTools({}), /recoveryLangChainTools: the first argument must be a compactor/);
});

test('a reply cut at the context window (stop_reason model_context_window_exceeded) is retried; after the last retry it is the answer as it is', async () => {
  let model = new RefusingModel({ stop: true });
  let { final } = await overflowRun(model);
  assert.equal(model.sizes.length, 2);
  assert.ok(model.sizes[1] < model.sizes[0], `${model.sizes}`);
  assert.equal(final.messages.at(-1).content, 'done');
  model = new RefusingModel({ refusals: 2, stop: true });
  ({ final } = await overflowRun(model));
  assert.equal(model.sizes.length, 2);
  assert.equal(final.messages.at(-1).response_metadata.stop_reason, 'model_context_window_exceeded');
  // Bedrock's Converse API (ChatBedrockConverse) says it as `stopReason`.
  model = new RefusingModel({ stop: true, stopKey: 'stopReason' });
  ({ final } = await overflowRun(model));
  assert.equal(model.sizes.length, 2);
  assert.equal(final.messages.at(-1).content, 'done');
});

test("the agent's first model call counts its system prompt: a resumed history with a large system prompt fits the window", async () => {
  const prompts = [];
  class Recorder extends BaseChatModel {
    constructor() { super({}); }
    _llmType() { return 'recorder'; }
    bindTools() { return this; }
    async _generate(messages) {
      prompts.push(messages);
      const message = new AIMessage('ok');
      return { generations: [{ text: 'ok', message }] };
    }
  }
  const { countTokens } = await import('../dist/entry/node.js');
  const systemPrompt = Array.from({ length: 400 }, (_, i) => `Rule ${i}: answer precisely and cite the source ${i}.`).join('\n');
  const history = [];
  for (let i = 0; i < 14; i++) {
    history.push(new HumanMessage(`Question ${i}: ` + 'tell me about the data. '.repeat(40)));
    history.push(new AIMessage(`Answer ${i}: ` + 'the data shows a steady trend. '.repeat(40)));
  }
  history.push(new HumanMessage('And now?'));
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 12_000 });
  const agent = createAgent({ model: new Recorder(), tools: [], systemPrompt, middleware: [compactorMiddleware(compactor)] });
  await agent.invoke({ messages: history });
  assert.equal(prompts.length, 1);
  const counter = await createCompactor({ model: 'gpt-4o', contextWindow: 12_000 });
  assert.ok(countTokens(systemPrompt) > 3_000, 'the system prompt is large');
  assert.ok(counter.usage(toModelMessages(history)).tokens + countTokens(systemPrompt) > 12_000, 'the raw prompt would not fit');
  const tokens = counter.usage(toModelMessages(prompts[0])).tokens;
  assert.ok(tokens < 12_000, `the first call's prompt fits the window: ${tokens}`);
});
