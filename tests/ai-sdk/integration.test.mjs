// The AI SDK integration, run against AI SDK 7 (`ai`), 6 (`ai6` = npm:ai@6) and 5 (`ai5`) with each
// version's own mock model: an agent whose tool output is offloaded at return time and read
// back through the recovery tools, the middleware on single calls, the summarizer helper (with
// its timeout), and Anthropic cache breakpoints reaching the model.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ai7 from 'ai';
import * as ai7test from 'ai/test';
import * as ai6 from 'ai6';
import * as ai6test from 'ai6/test';
import * as ai5 from 'ai5';
import * as ai5test from 'ai5/test';
import { z } from 'zod';
import { MemoryStore, anthropicCacheControl, countTokens, createCompactor, init, summarizer } from 'context-compactor';

await init();

/** A reply in the V3 / V4 shapes (AI SDK 6 and 7): a finish reason and usage with their details. */
const structuredReply = (content, finish) => ({
  content,
  finishReason: { unified: finish, raw: finish },
  usage: { inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 10, text: 10, reasoning: undefined } },
  warnings: [],
});

const VERSIONS = [
  {
    name: 'AI SDK 7',
    ai: ai7,
    Mock: ai7test.MockLanguageModelV4,
    system: (text) => ({ instructions: text }),
    reply: structuredReply,
  },
  {
    name: 'AI SDK 6',
    ai: ai6,
    Mock: ai6test.MockLanguageModelV3,
    system: (text) => ({ system: text }),
    reply: structuredReply,
  },
  {
    name: 'AI SDK 5',
    ai: ai5,
    Mock: ai5test.MockLanguageModelV2,
    system: (text) => ({ system: text }),
    reply: (content, finish) => ({ content, finishReason: finish, usage: { inputTokens: 100, outputTokens: 10, totalTokens: 110 }, warnings: [] }),
  },
];

const NEEDLE = 'NEEDLE-7f3a: the flaky test is test_cache_eviction';
/** ~30k tokens; the needle sits deep in the middle, far from any preview. */
function searchOutput(query) {
  const lines = Array.from({ length: 3_000 }, (_, i) => `${query} result ${i}: doc-${(i * 7919) % 100_003} score ${(i * 37) % 1000}`);
  lines[1_500] = NEEDLE;
  return lines.join('\n');
}

const textOf = (prompt) => JSON.stringify(prompt);
const tokensOf = (prompt) => countTokens(textOf(prompt), 'o200k_base');

for (const v of VERSIONS) {
  const { generateText, stepCountIs, tool, wrapLanguageModel } = v.ai;

  test(`${v.name}: wrapTools offloads at return time; the agent reads the needle back with read_file`, async () => {
    const prompts = [];
    const store = new MemoryStore();
    const events = [];
    const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000, store, onEvent: (e) => events.push(e) });
    const model = new v.Mock({
      doGenerate: async ({ prompt }) => {
        prompts.push(structuredClone(prompt));
        const step = prompts.length - 1;
        if (step === 0) return v.reply([{ type: 'tool-call', toolCallId: 'c0', toolName: 'search', input: JSON.stringify({ query: 'flaky' }) }], 'tool-calls');
        if (step === 1) {
          // The model only sees the preview: it finds the stored path there and pages to the middle.
          const path = textOf(prompt).match(/\/tool_outputs\/[\w.-]+/)?.[0];
          assert.ok(path, 'the preview names the stored path');
          return v.reply([{ type: 'tool-call', toolCallId: 'c1', toolName: 'read_file', input: JSON.stringify({ path, offset: 1_495, limit: 10 }) }], 'tool-calls');
        }
        const found = textOf(prompt).includes(NEEDLE);
        return v.reply([{ type: 'text', text: found ? 'Found it.' : 'Lost it.' }], 'stop');
      },
    });
    const result = await generateText({
      model,
      ...v.system(await compactor.systemPrompt('You are a debugging agent.')),
      messages: [{ role: 'user', content: 'Which test is flaky?' }],
      tools: {
        ...compactor.wrapTools({ search: tool({ description: 'Search', inputSchema: z.object({ query: z.string() }), execute: async ({ query }) => searchOutput(query) }) }),
        ...compactor.tools(),
      },
      stopWhen: stepCountIs(4),
      prepareStep: compactor.prepareStep,
    });
    assert.equal(result.text, 'Found it.');
    assert.equal(prompts.length, 3);
    assert.ok(!textOf(prompts[1]).includes(NEEDLE), 'the full output never entered the history');
    for (const p of prompts) assert.ok(tokensOf(p) < 16_000, `prompt of ${tokensOf(p)} tokens`);
    assert.ok(textOf(prompts[0]).includes('read_file'), 'the recovery segment is in the system prompt');
    const offload = events.find((e) => e.strategy === 'offload');
    assert.equal(await store.read(offload.path), searchOutput('flaky'), 'stored byte for byte');
    assert.equal(result.steps[0].toolResults[0].toolName, 'search');
  });

  test(`${v.name}: wrapTools leaves a streaming tool streaming (preliminary results, then its last value as the output)`, async () => {
    // Found by a docs review: the wrapper awaited execute, so an async generator's generator
    // object became the tool's output ({}), and no preliminary result was sent.
    const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000 });
    let step = 0;
    const model = new v.Mock({
      doGenerate: async () =>
        step++ === 0
          ? v.reply([{ type: 'tool-call', toolCallId: 'c0', toolName: 'progress', input: '{}' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'ticker', input: '{}' }], 'tool-calls')
          : v.reply([{ type: 'text', text: 'ok' }], 'stop'),
    });
    const tools = {
      progress: tool({ description: 'streams', inputSchema: z.object({}), async *execute() { yield 'step 1'; yield 'done'; } }),
      // Not a generator function, but returning an async iterable: streaming too.
      ticker: tool({ description: 'streams', inputSchema: z.object({}), execute: () => (async function* () { yield 'tick'; yield 'tock'; })() }),
    };
    const wrapped = compactor.wrapTools(tools);
    assert.equal(wrapped.progress, tools.progress, 'left as it is');
    const result = await generateText({ model, messages: [{ role: 'user', content: 'go' }], tools: wrapped, stopWhen: stepCountIs(2) });
    const outputs = Object.fromEntries(result.steps[0].toolResults.map((r) => [r.toolName, r.output]));
    assert.deepEqual(outputs, { progress: 'done', ticker: 'tock' });
  });

  test(`${v.name}: middleware() compacts a single call's prompt`, async () => {
    const store = new MemoryStore();
    const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000, store });
    let received;
    const model = wrapLanguageModel({
      model: new v.Mock({ doGenerate: async ({ prompt }) => ((received = prompt), v.reply([{ type: 'text', text: 'ok' }], 'stop')) }),
      middleware: compactor.middleware(),
    });
    const huge = searchOutput('history');
    const messages = [
      { role: 'user', content: 'search' },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'h1', toolName: 'search', input: { query: 'history' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'h1', toolName: 'search', output: { type: 'text', value: huge } }] },
      { role: 'user', content: 'now summarize what you found' },
    ];
    const result = await generateText({ model, ...v.system('You are terse.'), messages });
    assert.equal(result.text, 'ok');
    assert.ok(tokensOf(received) < 4_000, `the model received ${tokensOf(received)} tokens`);
    assert.equal(received[0].role, 'system');
    const path = textOf(received).match(/\/tool_outputs\/[\w.-]+/)[0];
    assert.equal(await store.read(path), huge);
    assert.equal(messages[2].content[0].output.value, huge, "the caller's messages are not mutated");
  });

  test(`${v.name}: summarizer(model) writes the summary with the template, the cap and the signal`, async () => {
    let call;
    const summaryModel = new v.Mock({
      doGenerate: async (options) => {
        call = options;
        return v.reply([{ type: 'text', text: '## Session Intent\nRefactor the cache. ## Next Steps\nRun tests.' }], 'stop');
      },
    });
    const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 8_000, summarize: summarizer(summaryModel, { settings: { temperature: 0 } }) });
    const { events, messages } = await compactor.manage(chat(30));
    const event = events.find((e) => e.strategy === 'summarize');
    assert.equal(event.status, 'applied');
    assert.equal(call.prompt[0].role, 'system');
    assert.match(call.prompt[0].content, /summarize/);
    assert.equal(call.prompt[1].role, 'user');
    assert.match(call.prompt[1].content[0].text, /Session Intent/, 'the structured template');
    assert.equal(call.prompt[1].content[0].type, 'text');
    assert.ok(call.maxOutputTokens > 0 && call.maxOutputTokens <= 800, `cap ${call.maxOutputTokens} (10 % of the window)`);
    assert.ok(call.abortSignal instanceof AbortSignal);
    assert.equal(call.temperature, 0);
    assert.ok(JSON.stringify(messages).includes('Refactor the cache.'));

    // The same model, slow: the compactor's timeout aborts it and the heuristic applies.
    const slow = new v.Mock({
      doGenerate: ({ abortSignal }) => new Promise((_, reject) => abortSignal.addEventListener('abort', () => reject(abortSignal.reason))),
    });
    const timed = await createCompactor({ model: 'gpt-4o', contextWindow: 8_000, summarize: summarizer(slow), summarizeTimeoutMs: 100 });
    const fallback = (await timed.manage(chat(30))).events.find((e) => e.strategy === 'summarize');
    assert.equal(fallback.status, 'fallback');
  });

  test(`${v.name}: anthropicCacheControl in prepareStep reaches the model, at most 4 breakpoints`, async () => {
    const prompts = [];
    const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: 50_000 });
    const model = new v.Mock({
      doGenerate: async ({ prompt }) => {
        prompts.push(prompt);
        const step = prompts.length;
        return step < 8
          ? v.reply([{ type: 'tool-call', toolCallId: `k${step}`, toolName: 'note', input: JSON.stringify({ n: step }) }], 'tool-calls')
          : v.reply([{ type: 'text', text: 'done' }], 'stop');
      },
    });
    await generateText({
      model,
      messages: [{ role: 'system', content: 'Stable instructions.' }, { role: 'user', content: 'take notes' }],
      ...(v.name === 'AI SDK 7' ? { allowSystemInMessages: true } : {}),
      tools: { note: tool({ inputSchema: z.object({ n: z.number() }), execute: async ({ n }) => `note ${n}` }) },
      stopWhen: stepCountIs(9),
      prepareStep: async (input) => {
        const { messages } = await compactor.prepareStep(input);
        return { messages: anthropicCacheControl(messages) };
      },
    });
    assert.equal(prompts.length, 8);
    for (const prompt of prompts) {
      const marked = prompt.map((m, i) => (m.providerOptions?.anthropic?.cacheControl ? i : -1)).filter((i) => i >= 0);
      assert.ok(marked.length >= 2 && marked.length <= 4, `breakpoints at ${marked}`);
      assert.ok(marked.includes(0), 'the system prompt is a breakpoint');
      assert.ok(marked.includes(prompt.length - 1), 'the newest message is a breakpoint');
    }
  });
}

function chat(turns) {
  const words = ['alpha', 'budget', 'cache', 'delta', 'error', 'fixture'];
  const prose = (seed) => Array.from({ length: 120 }, (_, i) => `${words[(i * 7 + seed) % 6]} ${seed}-${i}`).join(' ');
  const messages = [{ role: 'system', content: 'You are a helpful agent.' }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: `Turn ${t}: ${prose(t)}` });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Answer ${t}: ${prose(t + 3)}` }] });
  }
  return messages;
}
