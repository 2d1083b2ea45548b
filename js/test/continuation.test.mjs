// A summary request that reads the cache (issue 19, build item 5): with a prompt cache, the core
// offers each summary request also as a continuation of the agent's own prompt; summarizer(model)
// sends it when the summarizer is the agent's model, refuses a tool call and falls back to the
// plain request, and the middleware hands the agent's tools over unchanged.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, init, summarizer } from '../dist/entry/node.js';

await init();

const prose = (seed, words) =>
  Array.from({ length: words }, (_, i) => `${['window', 'budget', 'cache', 'parser'][(i + seed) % 4]} ${seed}.${i}`).join(' ');

/** About 14k tokens in a 16k window: a prompt the agent could have sent. */
function session(turns = 7) {
  const out = [{ role: 'system', content: 'You are a coding agent.' }];
  for (let t = 0; t < turns; t++) {
    out.push({ role: 'user', content: `Step ${t}: ${prose(t, 50)}` });
    out.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${t}`, toolName: 'read_file', input: { path: `/src/m${t}.ts` } }] });
    out.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${t}`, toolName: 'read_file', output: { type: 'text', value: prose(t + 1, 300) } }] });
    out.push({ role: 'assistant', content: prose(t + 2, 60) });
  }
  return out;
}

/** A mock language model: answers each doGenerate call with the next of `replies`. */
function mockModel(modelId, replies) {
  const calls = [];
  return {
    calls,
    specificationVersion: 'v3',
    provider: 'mock',
    modelId,
    supportedUrls: {},
    async doGenerate(options) {
      calls.push(options);
      const reply = replies[Math.min(calls.length - 1, replies.length - 1)];
      return { content: reply, finishReason: 'stop', usage: { inputTokens: 0, outputTokens: 0 }, warnings: [] };
    },
  };
}

const text = (t) => [{ type: 'text', text: t }];

test('the agent\'s own model summarizes from the cached prefix plus one instruction', async () => {
  const messages = session();
  const model = mockModel('claude-sonnet-4-5-20250929', [text('## Session Intent\nRefactor the modules.')]);
  const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: 16_000, store: new MemoryStore(), summarize: summarizer(model) });
  const { plan, messages: out } = await compactor.compact(messages);
  const action = plan.actions.find((a) => a.type === 'summarize');
  const continuation = action.request.continuation;
  assert.ok(continuation, 'offered: Anthropic reads cost 0.1');
  assert.ok(continuation.cost < continuation.plainCost, `${continuation.cost} vs ${continuation.plainCost}`);
  assert.equal(model.calls.length, 1);
  const prompt = model.calls[0].prompt;
  // The conversation as sent (system first), up to the span's end, then the instruction.
  assert.equal(prompt.length, continuation.end + 1);
  assert.deepEqual(prompt[0], { role: 'system', content: 'You are a coding agent.' });
  assert.deepEqual(prompt.slice(1, continuation.end).map((m) => m.role), messages.slice(1, continuation.end).map((m) => m.role));
  assert.deepEqual(prompt[2].content, messages[2].content, 'tool calls go as they were sent');
  const last = prompt.at(-1);
  assert.equal(last.role, 'user');
  assert.match(last.content[0].text, /Summarize messages 2–\d+ of it/);
  assert.ok(out[1].content.includes('Refactor the modules.'));
});

test('a tool call instead of a summary is refused: the plain request follows', async () => {
  const model = mockModel('claude-sonnet-4-5', [
    [{ type: 'tool-call', toolCallId: 'x', toolName: 'read_file', input: '{}' }],
    text('## Session Intent\nPlain summary.'),
  ]);
  const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: 16_000, store: new MemoryStore(), summarize: summarizer(model) });
  const { messages: out } = await compactor.compact(session());
  assert.equal(model.calls.length, 2);
  assert.equal(model.calls[1].prompt[0].role, 'system');
  assert.match(model.calls[1].prompt[0].content, /You summarize the earlier part of a conversation/);
  assert.ok(out[1].content.includes('Plain summary.'));
});

test('another model, or continuation: false, sends the plain request', async () => {
  for (const [model, options] of [
    [mockModel('claude-haiku-4-5', [text('haiku summary')]), {}],
    [mockModel('claude-sonnet-4-5', [text('plain by choice')]), { continuation: false }],
  ]) {
    const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: 16_000, store: new MemoryStore(), summarize: summarizer(model, options) });
    await compactor.compact(session());
    assert.equal(model.calls.length, 1);
    assert.equal(model.calls[0].prompt.length, 2, 'system + the rendered span');
  }
});

test('through the middleware, the agent\'s tools go with the continuation unchanged', async () => {
  const tools = [{ type: 'function', name: 'read_file', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } } } }];
  const model = mockModel('claude-sonnet-4-5', [text('## Session Intent\nWith tools.')]);
  const probe = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: 1_000_000 });
  const window = Math.floor(probe.usage(session()).tokens / 0.9);
  // Tier 2 off: at 90 % of the window the lossy tier runs.
  const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: window, compaction: { enabled: false }, store: new MemoryStore(), summarize: summarizer(model), background: false });
  const prompt = session().map((m) => ({ ...m, content: typeof m.content === 'string' && m.role !== 'system' ? [{ type: 'text', text: m.content }] : m.content }));
  const params = await compactor.middleware().transformParams({ params: { prompt, tools } });
  assert.equal(model.calls.length, 1, 'the middleware summarized');
  assert.equal(model.calls[0].tools, tools);
  assert.ok(JSON.stringify(params.prompt).includes('With tools.'));
});
