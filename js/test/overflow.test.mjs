// Overflow recovery (issue 19): a provider refuses the prompt as too long; the middleware
// compacts harder and retries once. A mock AI SDK 7 model fails its first call with each
// provider's real error (an `APICallError`, status 400, the provider's response body) and
// succeeds on the retry: one compaction, one retry, calibration learned from the error's count.
// A non-overflow 400 is not retried; two overflows in a row end with `context_overflow`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { APICallError, generateText, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { CompactorError, MemoryStore, createCompactor, isOverflowError, parseOverflow } from '../dist/entry/node.js';

const WINDOW = 16_000;
const INSTRUCTIONS = 'You are a research agent.';

function words(seed, n) {
  const w = ['window', 'budget', 'cache', 'parser', 'summary', 'tool', 'result', 'plan', 'shard', 'ledger'];
  return Array.from({ length: n }, (_, i) => `${w[(i * 7 + seed) % w.length]}${(i * 31 + seed) % 97}`).join(' ');
}

/** A chat under every trigger by our count: ~10k tokens in a 16k window. */
function conversation() {
  const messages = [];
  for (let t = 0; t < 10; t++) {
    messages.push({ role: 'user', content: `Question ${t}: ${words(t, 200)}` });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Answer ${t}: ${words(t + 50, 200)}` }] });
  }
  messages.push({ role: 'user', content: 'And now the final question: what did we decide?' });
  return messages;
}

const usage = { inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 5, text: 5, reasoning: undefined } };
const reply = (text, raw = 'stop') => ({
  content: [{ type: 'text', text }],
  finishReason: { unified: raw === 'stop' ? 'stop' : 'length', raw },
  usage,
  warnings: [],
});

const apiError = (statusCode, message, responseBody) =>
  new APICallError({ message, url: 'https://api.example.com/v1/chat', requestBodyValues: {}, statusCode, responseBody, isRetryable: false });

/** Each provider's overflow, as its API sends it. `r` is the provider's count, `l` its limit. */
const PROVIDERS = {
  openai: (r, l) => {
    const message = `This model's maximum context length is ${l} tokens. However, your messages resulted in ${r} tokens. Please reduce the length of the messages.`;
    return { error: apiError(400, message, JSON.stringify({ error: { message, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } })), counted: true };
  },
  'openai responses': () => {
    const message = 'Your input exceeds the context window of this model. Please adjust your input and try again.';
    return { error: apiError(400, message, JSON.stringify({ error: { message, type: 'invalid_request_error', param: 'input', code: 'context_length_exceeded' } })), counted: false };
  },
  anthropic: (r, l) => {
    const message = `prompt is too long: ${r} tokens > ${l} maximum`;
    return { error: apiError(400, message, JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message }, request_id: 'req_011CVjxiYzEFcAQC4Fk87zw2' })), counted: true };
  },
  google: (r, l) => {
    const message = `The input token count (${r}) exceeds the maximum number of tokens allowed (${l}).`;
    return { error: apiError(400, message, JSON.stringify({ error: { code: 400, message, status: 'INVALID_ARGUMENT' } })), counted: true };
  },
  mistral: (r, l) => {
    const message = `Prompt contains ${r} tokens, too large for model with ${l} maximum context length`;
    return { error: apiError(400, message, JSON.stringify({ object: 'error', message, type: 'invalid_request_message_error', param: null })), counted: true };
  },
  vllm: (r, l) => {
    const message = `This model's maximum context length is ${l} tokens. However, you requested ${r} tokens in the messages, Please reduce the length of the messages.`;
    return { error: apiError(400, message, JSON.stringify({ object: 'error', message, type: 'BadRequestError', param: null, code: 400 })), counted: true };
  },
  'llama.cpp': (r, l) => {
    const message = 'the request exceeds the available context size, try increasing it';
    return { error: apiError(400, message, JSON.stringify({ error: { code: 400, message, type: 'exceed_context_size_error', n_prompt_tokens: r, n_ctx: l } })), counted: true };
  },
  ollama: (r, l) => {
    const message = `prompt too long; exceeded max context length by ${r - l} tokens`;
    return { error: apiError(400, message, JSON.stringify({ error: message })), counted: false };
  },
};

/** A mock model whose calls follow `script`: an Error is thrown, anything else returned. */
function scripted(script) {
  const prompts = [];
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      prompts.push(structuredClone(prompt));
      const next = script[Math.min(prompts.length - 1, script.length - 1)];
      if (next instanceof Error) throw next;
      return next;
    },
  });
  return { model, prompts };
}

async function setup(options = {}) {
  const events = [];
  const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: WINDOW, store: new MemoryStore(), onEvent: (e) => events.push(e), ...options });
  return { compactor, events };
}

for (const [name, make] of Object.entries(PROVIDERS)) {
  test(`${name}: the overflow is compacted once and retried once; calibration learns the provider's count`, async () => {
    const { compactor, events } = await setup();
    const messages = conversation();
    const raw = compactor.usage([{ role: 'system', content: INSTRUCTIONS }, ...messages]);
    assert.ok(raw.fraction < 0.85, `fixture under the trigger: ${raw.tokens}`);
    const reported = Math.round(raw.tokens * 1.7); // over the window by the provider's count
    const { error, counted } = make(reported, WINDOW);
    assert.ok(isOverflowError(error), name);
    const { model, prompts } = scripted([error, reply('Recovered.')]);

    const result = await generateText({ model: wrapLanguageModel({ model, middleware: compactor.middleware() }), instructions: INSTRUCTIONS, messages, maxRetries: 0 });

    assert.equal(result.text, 'Recovered.');
    assert.equal(prompts.length, 2, 'one retry');
    const overflowEvents = events.filter((e) => e.overflow);
    assert.ok(overflowEvents.length > 0, 'the compaction says it answers an overflow');
    assert.deepEqual([...new Set(overflowEvents.map((e) => e.call))].length, 1, 'one compaction');
    for (const e of overflowEvents) {
      assert.equal(e.overflow.attempt, 1);
      assert.equal(e.overflow.provider, parseOverflow(error).provider);
    }
    assert.ok(overflowEvents.some((e) => e.strategy === 'summarize' || e.strategy === 'truncate'));
    assert.equal(events.filter((e) => !e.overflow).length, 0, 'nothing compacted before the overflow');
    // The retry is smaller, and fits the provider's limit by the provider's count.
    assert.ok(JSON.stringify(prompts[1]).length < JSON.stringify(prompts[0]).length * 0.8);
    const calibration = compactor.state().calibration;
    if (counted) {
      assert.equal(calibration?.samples, 1);
      // The provider counted 1.7× what the family's factor predicts: the learned ratio says so.
      const learned = calibration.ratio / compactor.model.tokenRatio;
      assert.ok(learned > 1.6 && learned < 1.8, `learned ${learned}`);
      assert.ok(compactor.usage(prompts[1]).tokens < WINDOW, `retry ${compactor.usage(prompts[1]).tokens} tokens by the provider's count`);
    } else {
      assert.equal(calibration ?? null, null, 'no count in the text: calibration untouched');
    }
  });
}

test('a non-overflow 400 is rethrown unchanged, never retried', async () => {
  const { compactor, events } = await setup();
  const error = apiError(400, "Invalid value for 'tool_choice': no tools were provided.", '{"error":{"type":"invalid_request_error"}}');
  const { model, prompts } = scripted([error, reply('never')]);
  await assert.rejects(
    generateText({ model: wrapLanguageModel({ model, middleware: compactor.middleware() }), messages: conversation(), maxRetries: 0 }),
    (thrown) => thrown === error,
  );
  assert.equal(prompts.length, 1);
  assert.equal(events.length, 0);
  // A rate limit that mentions tokens is not an overflow either.
  assert.equal(parseOverflow(apiError(429, 'Rate limit reached: token limit exceeded for this minute')), undefined);
  assert.equal(parseOverflow(new Error('Throttling error: Too many tokens, please wait before trying again.')), undefined);
  assert.equal(parseOverflow(apiError(500, 'prompt is too long: 1 tokens > 0 maximum')), undefined);
  await assert.rejects(compactor.recover(conversation(), error), (thrown) => thrown === error);
});

test('two overflows in a row end with a typed context_overflow error, after one retry', async () => {
  const { compactor, events } = await setup();
  const first = PROVIDERS.anthropic(20_000, WINDOW).error;
  const { model, prompts } = scripted([first]);
  await assert.rejects(
    generateText({ model: wrapLanguageModel({ model, middleware: compactor.middleware() }), messages: conversation(), maxRetries: 0 }),
    (thrown) => {
      assert.ok(thrown instanceof CompactorError, String(thrown));
      assert.equal(thrown.code, 'context_overflow');
      assert.equal(thrown.details.provider, 'anthropic');
      assert.equal(thrown.details.attempts, 1);
      assert.ok(APICallError.isInstance(thrown.cause));
      return true;
    },
  );
  assert.equal(prompts.length, 2, 'never loops');
  assert.equal(new Set(events.filter((e) => e.overflow).map((e) => e.call)).size, 1);
});

test('overflow.retries: 0 lets the provider error through; 2 allows two rounds', async () => {
  const off = await setup({ overflow: { retries: 0 } });
  const error = PROVIDERS.google(30_000, WINDOW).error;
  const a = scripted([error, reply('never')]);
  await assert.rejects(generateText({ model: wrapLanguageModel({ model: a.model, middleware: off.compactor.middleware() }), messages: conversation(), maxRetries: 0 }), (t) => t === error);
  assert.equal(a.prompts.length, 1);

  const two = await setup({ overflow: { retries: 2 } });
  const b = scripted([error, PROVIDERS.google(18_000, WINDOW).error, reply('Third time.')]);
  const result = await generateText({ model: wrapLanguageModel({ model: b.model, middleware: two.compactor.middleware() }), messages: conversation(), maxRetries: 0 });
  assert.equal(result.text, 'Third time.');
  assert.equal(b.prompts.length, 3);
  assert.deepEqual([...new Set(two.events.filter((e) => e.overflow).map((e) => e.overflow.attempt))], [1, 2]);
  await assert.rejects(createCompactor({ overflow: { retries: -1 } }), (e) => e instanceof CompactorError && e.code === 'invalid_config');
});

test('streamText: a refused stream is compacted and retried the same way', async () => {
  const { compactor, events } = await setup();
  let calls = 0;
  const model = new MockLanguageModelV4({
    doStream: async () => {
      calls++;
      if (calls === 1) throw PROVIDERS.anthropic(21_000, WINDOW).error;
      return {
        stream: new ReadableStream({
          start(c) {
            for (const chunk of [
              { type: 'stream-start', warnings: [] },
              { type: 'text-start', id: 't' },
              { type: 'text-delta', id: 't', delta: 'Streamed after recovery.' },
              { type: 'text-end', id: 't' },
              { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
            ]) c.enqueue(chunk);
            c.close();
          },
        }),
      };
    },
  });
  const result = streamText({ model: wrapLanguageModel({ model, middleware: compactor.middleware() }), messages: conversation(), maxRetries: 0 });
  assert.equal(await result.text, 'Streamed after recovery.');
  assert.equal(calls, 2);
  assert.ok(events.some((e) => e.overflow?.provider === 'anthropic'));
});

test("Anthropic's stop_reason model_context_window_exceeded is retried once after compaction", async () => {
  const { compactor, events } = await setup();
  const { model, prompts } = scripted([reply('cut', 'model_context_window_exceeded'), reply('Whole answer.')]);
  const result = await generateText({ model: wrapLanguageModel({ model, middleware: compactor.middleware() }), messages: conversation(), maxRetries: 0 });
  assert.equal(result.text, 'Whole answer.');
  assert.equal(prompts.length, 2);
  assert.ok(events.some((e) => e.overflow?.provider === 'anthropic-stop-reason'));
});

test('prepareStep agents: middleware({ compact: false }) recovers without compacting each call twice', async () => {
  const { compactor, events } = await setup();
  const { model, prompts } = scripted([PROVIDERS.openai(25_000, WINDOW).error, reply('Done.')]);
  const result = await generateText({
    model: wrapLanguageModel({ model, middleware: compactor.middleware({ compact: false }) }),
    instructions: INSTRUCTIONS,
    messages: conversation(),
    prepareStep: compactor.prepareStep,
    maxRetries: 0,
  });
  assert.equal(result.text, 'Done.');
  assert.equal(prompts.length, 2);
  assert.ok(events.filter((e) => e.overflow).length > 0);
  // Or by hand, in the app's catch: recover() returns the compacted messages to retry with.
  const other = await setup();
  const recovered = await other.compactor.recover(conversation(), PROVIDERS.mistral(24_000, WINDOW).error);
  assert.equal(recovered.overflow.provider, 'mistral');
  assert.equal(recovered.overflow.reportedTokens, 24_000);
  assert.ok(recovered.messages.length < conversation().length);
  assert.ok(recovered.plan.notes.some((n) => n.type === 'overflow'));
});

test('parseOverflow reads the counts and limits of every table row', () => {
  const cases = [
    ["This model's maximum context length is 128000 tokens. However, your messages resulted in 130123 tokens. Please reduce the length of the messages.", 'openai', 130123, 128000],
    ["This model's maximum context length is 4096 tokens. However, you requested 5000 tokens", 'vllm', 5000, 4096],
    ["This model's maximum context length is 4097 tokens. However, you requested 4268 tokens (4012 in the messages, 256 in the completion). Please reduce the length of the messages or completion.", 'vllm', 4012, 3841],
    ['prompt is too long: 212345 tokens > 200000 maximum', 'anthropic', 212345, 200000],
    ['The input token count (1234567) exceeds the maximum number of tokens allowed (1048576).', 'google', 1234567, 1048576],
    ['Prompt contains 300000 tokens, too large for model with 131072 maximum context length', 'mistral', 300000, 131072],
    ['request (4476 tokens) exceeds the available context size (4096 tokens)', 'llama.cpp', 4476, 4096],
    ['the request exceeds the available context size, try increasing it', 'llama.cpp', undefined, undefined],
    ['prompt too long; exceeded max context length by 4096 tokens', 'ollama', undefined, undefined],
    ['model_context_window_exceeded', 'anthropic-stop-reason', undefined, undefined],
  ];
  for (const [text, provider, reportedTokens, limit] of cases) {
    const info = parseOverflow(new Error(text));
    assert.equal(info?.provider, provider, text);
    assert.equal(info.reportedTokens, reportedTokens, text);
    assert.equal(info.limit, limit, text);
  }
  // Wrapped as the AI SDK wraps retried errors.
  assert.equal(parseOverflow({ name: 'AI_RetryError', message: 'Failed after 3 attempts', lastError: new Error('prompt is too long: 5 tokens > 4 maximum') })?.reportedTokens, 5);
  assert.equal(parseOverflow(undefined), undefined);
  assert.equal(parseOverflow({ statusCode: 400 }), undefined);
});

test('recover: an attempt that is not a whole number >= 1 is a TypeError naming recover', async () => {
  const compactor = await createCompactor({ model: 'gpt-4o' });
  const error = new Error('prompt is too long: 250000 tokens > 200000 maximum');
  for (const attempt of [0, 1.5, 'x']) {
    await assert.rejects(compactor.recover([{ role: 'user', content: 'hi' }], error, { attempt }), (e) => e instanceof TypeError && e.message.startsWith('recover: attempt must be a whole number >= 1'));
  }
});
