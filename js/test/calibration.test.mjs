// Calibration from the provider's reported usage: whichever way the compactor is wired
// (`prepareStep`, `middleware()` around `generateText` or `streamText`), once the provider has
// said how many input tokens a prompt was, the compactor counts that prompt as that many. The
// middleware learns it when it plans the next call, as `prepareStep` does at the next step (a
// tool running in between sees the same calibration either way). A middleware that only
// recovers (`compact: false`) leaves calibration to `prepareStep`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { MemoryStore, createCompactor } from '../dist/entry/node.js';

// The provider counts 0.9 of what an uncalibrated compactor estimates (a Claude model: o200k
// times its factor), whatever the prompt: `probe` is never calibrated.
const probe = await createCompactor({ model: 'claude-sonnet-4-5', store: new MemoryStore() });
const provider = (prompt) => Math.round(0.9 * probe.usage(prompt).tokens);
const usage = (input) => ({ inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 5, text: 5, reasoning: undefined } });
const messages = [
  { role: 'user', content: 'Describe the cache layout of the parser in three paragraphs, with examples. '.repeat(20) },
  { role: 'assistant', content: [{ type: 'text', text: 'The parser keeps a ring of shards. '.repeat(30) }] },
  { role: 'user', content: 'And the ledger?' },
];

/** A model that reports the provider's count of every prompt, and keeps the prompts. */
function model(prompts) {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      return { content: [{ type: 'text', text: 'ok' }], finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(provider(prompt)), warnings: [] };
    },
    doStream: async ({ prompt }) => {
      prompts.push(prompt);
      const parts = [
        { type: 'stream-start', warnings: [] },
        { type: 'text-start', id: 't' },
        { type: 'text-delta', id: 't', delta: 'ok' },
        { type: 'text-end', id: 't' },
        { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(provider(prompt)) },
      ];
      return { stream: new ReadableStream({ start: (c) => { for (const p of parts) c.enqueue(p); c.close(); } }) };
    },
  });
}

const fresh = () => createCompactor({ model: 'claude-sonnet-4-5', store: new MemoryStore() });

test('middleware around generateText: the reported count becomes the compactor count of that prompt', async () => {
  const compactor = await fresh();
  const prompts = [];
  const before = compactor.usage(messages).tokens;
  const wrapped = wrapLanguageModel({ model: model(prompts), middleware: compactor.middleware() });
  await generateText({ model: wrapped, messages });
  assert.equal(compactor.state().calibration, null, 'not before the next call is planned');
  await generateText({ model: wrapped, messages: [...messages, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'Go on.' }] });
  assert.equal(prompts.length, 2);
  assert.equal(compactor.state().calibration?.samples, 1);
  const reported = provider(prompts[0]);
  assert.ok(Math.abs(compactor.usage(prompts[0]).tokens - reported) <= 1, `${compactor.usage(prompts[0]).tokens} vs ${reported}`);
  assert.notEqual(before, compactor.usage(messages).tokens);
  compactor.dispose();
});

test('middleware around streamText: the finish part usage calibrates, and the stream arrives whole', async () => {
  const compactor = await fresh();
  const prompts = [];
  const wrapped = wrapLanguageModel({ model: model(prompts), middleware: compactor.middleware() });
  assert.equal(await streamText({ model: wrapped, messages }).text, 'ok');
  assert.equal(await streamText({ model: wrapped, messages: [...messages, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'Go on.' }] }).text, 'ok');
  assert.equal(compactor.state().calibration?.samples, 1);
  assert.ok(Math.abs(compactor.usage(prompts[0]).tokens - provider(prompts[0])) <= 1);
  compactor.dispose();
});

test('a middleware that only recovers leaves calibration to prepareStep: one sample per observed step', async () => {
  const compactor = await fresh();
  const prompts = [];
  await generateText({ model: wrapLanguageModel({ model: model(prompts), middleware: compactor.middleware({ compact: false }) }), messages });
  assert.equal(compactor.state().calibration, null);
  compactor.dispose();
});

test('manage returns the prompt that observeUsage calibrates against', async () => {
  const compactor = await fresh();
  const { messages: sent } = await compactor.manage(messages);
  const reported = provider(sent);
  compactor.observeUsage({ inputTokens: reported });
  assert.ok(Math.abs(compactor.usage(sent).tokens - reported) <= 1);
  // One sample per prompt sent: a second report of the same prompt is ignored.
  compactor.observeUsage({ inputTokens: { total: reported } });
  assert.equal(compactor.state().calibration?.samples, 1);
  // A provider-level usage object is read too.
  const { messages: next } = await compactor.manage([...messages, { role: 'assistant', content: 'ok' }, { role: 'user', content: 'More.' }]);
  compactor.observeUsage({ inputTokens: { total: provider(next) } });
  assert.equal(compactor.state().calibration?.samples, 2);
  compactor.dispose();
});

test('prepareStep sees every step but the last; onStepFinish adds the last, each step counted once', async () => {
  const loop = async (withFinish) => {
    const compactor = await fresh();
    let calls = 0;
    const agent = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) => {
        calls++;
        const content = calls === 1 ? [{ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: '{"q":"ledger"}' }] : [{ type: 'text', text: 'done' }];
        return { content, finishReason: { unified: calls === 1 ? 'tool-calls' : 'stop', raw: 'x' }, usage: usage(provider(prompt)), warnings: [] };
      },
    });
    await generateText({
      model: agent,
      messages,
      tools: { lookup: tool({ inputSchema: jsonSchema({ type: 'object', properties: { q: { type: 'string' } } }), execute: async () => 'the ledger is sharded' }) },
      stopWhen: stepCountIs(3),
      prepareStep: compactor.prepareStep,
      ...(withFinish ? { onStepFinish: compactor.onStepFinish } : {}),
    });
    const samples = compactor.state().calibration?.samples;
    compactor.dispose();
    return samples;
  };
  assert.equal(await loop(false), 1);
  assert.equal(await loop(true), 2);
});

test('a stateless recover calibrates against the prompt that was sent, not the raw history it is given', async () => {
  const { chat } = await import('../test-helpers/conversations.mjs');
  const store = new MemoryStore();
  const options = { model: 'gpt-4o', contextWindow: 8_000, store, statePath: '/state.json' };
  const history = chat(24).slice(0, 40);
  const sent = (await (await createCompactor(options)).manage(history)).messages;
  // The next request: a new compactor on the stored state, given the raw history; the provider
  // refused the compacted prompt it had sent, counting 30 % more than we do.
  const next = await createCompactor(options);
  const ours = next.usage(sent).tokens;
  const { countTokens } = await import('../dist/entry/node.js');
  assert.ok(countTokens(JSON.stringify(history), 'o200k_base') > 3 * ours, 'the raw history is far longer than what was sent');
  const reported = Math.round(ours * 1.3);
  const error = Object.assign(new Error(`This model's maximum context length is 8000 tokens. However, your messages resulted in ${reported} tokens.`), { statusCode: 400 });
  await next.recover(history, error).catch((e) => assert.equal(e.code, 'context_overflow'));
  const { calibration } = next.state();
  assert.equal(calibration.samples, 1);
  assert.ok(Math.abs(calibration.ratio - 1.3) < 0.01, `ratio ${calibration.ratio}`);
});
