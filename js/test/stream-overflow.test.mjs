// Overflow reported after a stream has started (issue 35, class 6). Some providers accept the
// request, open the stream and only then report the prompt as too long: an `error` part with the
// provider's overflow text, or a finish whose stop reason says the context window was exceeded.
// While nothing has reached the caller (only `stream-start`, `response-metadata`), the middleware
// compacts harder and calls again, as for an overflow refused up front; once a text or tool part
// has been delivered it cannot, and the stream ends with the typed `context_overflow` error, its
// `cause` the provider's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { APICallError, simulateReadableStream, streamText, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { CompactorError, MemoryStore, createCompactor, parseOverflow } from '../dist/entry/node.js';
import { chat } from '../test-helpers/conversations.mjs';

const WINDOW = 16_000;

/** ~10k tokens in a 16k window: under every trigger by our count, over the provider's limit. */
const conversation = () => [...chat(8, 100, { toolCall: false }).slice(1), { role: 'user', content: 'And now the final question: what did we decide?' }];

const usage = { inputTokens: { total: 9_000, noCache: 9_000, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 3, text: 3, reasoning: undefined } };
const start = [
  { type: 'stream-start', warnings: [] },
  { type: 'response-metadata', id: 'resp_1', modelId: 'mock-model', timestamp: new Date(0) },
];
const text = (id, delta) => [
  { type: 'text-start', id },
  { type: 'text-delta', id, delta },
  { type: 'text-end', id },
];
const finish = (raw = 'stop') => ({ type: 'finish', finishReason: { unified: raw === 'stop' ? 'stop' : raw === 'error' ? 'error' : 'length', raw }, usage });

/** Anthropic's overflow as its stream's `error` event carries it (@ai-sdk/anthropic enqueues
 * `{ type: 'error', error: value.error }`), and as an APICallError. */
const anthropicEvent = (r, l) => ({ type: 'invalid_request_error', message: `prompt is too long: ${r} tokens > ${l} maximum` });
const openaiError = (r, l) => {
  const message = `This model's maximum context length is ${l} tokens. However, your messages resulted in ${r} tokens. Please reduce the length of the messages.`;
  return new APICallError({ message, url: 'https://api.example.com/v1/chat', requestBodyValues: {}, statusCode: 400, responseBody: JSON.stringify({ error: { message, code: 'context_length_exceeded' } }), isRetryable: false });
};

/** A mock model whose n-th stream is `streams[n]` (the last one repeats). */
function streaming(streams) {
  const prompts = [];
  const model = new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      prompts.push(structuredClone(prompt));
      const chunks = streams[Math.min(prompts.length - 1, streams.length - 1)];
      return { stream: simulateReadableStream({ chunks }) };
    },
  });
  return { model, prompts };
}

async function setup(options = {}) {
  const events = [];
  const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow: WINDOW, store: new MemoryStore(), onEvent: (e) => events.push(e), ...options });
  return { compactor, events };
}

/** Every part the caller's `doStream` gets through the middleware. */
async function parts(model, middleware, prompt) {
  const wrapped = wrapLanguageModel({ model, middleware });
  const { stream } = await wrapped.doStream({ prompt });
  const out = [];
  for await (const part of stream) out.push(part);
  return out;
}

const asPrompt = (messages) => messages.map((m) => ({ ...m, content: typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content }));

test('an overflow error part before any content is retried: the caller gets the second call, on a smaller prompt', async () => {
  const { compactor, events } = await setup();
  const { model, prompts } = streaming([
    [...start, { type: 'error', error: anthropicEvent(21_000, WINDOW) }, finish('error')],
    [...start, ...text('t', 'Streamed after recovery.'), finish()],
  ]);
  const result = streamText({ model: wrapLanguageModel({ model, middleware: compactor.middleware() }), messages: conversation(), maxRetries: 0 });
  assert.equal(await result.text, 'Streamed after recovery.');
  assert.equal(prompts.length, 2, 'one retry');
  assert.ok(JSON.stringify(prompts[1]).length < JSON.stringify(prompts[0]).length * 0.8, 'the retry is smaller');
  assert.ok(events.some((e) => e.overflow?.provider === 'anthropic' && e.overflow.attempt === 1));
  assert.equal((await result.finishReason), 'stop');

  // At the model level: one stream-start, no error part, nothing of the refused stream.
  const again = streaming([
    [...start, { type: 'error', error: openaiError(25_000, WINDOW) }, finish('error')],
    [...start, ...text('t', 'Second.'), finish()],
  ]);
  const { compactor: other } = await setup();
  const got = await parts(again.model, other.middleware(), asPrompt(conversation()));
  assert.deepEqual(got.map((p) => p.type), ['stream-start', 'response-metadata', 'text-start', 'text-delta', 'text-end', 'finish']);
  assert.equal(again.prompts.length, 2);
  // With `compact: false` (agents compacting in prepareStep) the recovery is the same.
  const third = streaming([[...start, { type: 'error', error: anthropicEvent(21_000, WINDOW) }], [...start, ...text('t', 'Third.'), finish()]]);
  const { compactor: only } = await setup();
  const recovered = await parts(third.model, only.middleware({ compact: false }), asPrompt(conversation()));
  assert.equal(recovered.find((p) => p.type === 'text-delta').delta, 'Third.');
  assert.equal(third.prompts.length, 2);
});

test("a finish that says the context window was exceeded, before any content, is retried", async () => {
  const { compactor, events } = await setup();
  const { model, prompts } = streaming([
    [...start, finish('model_context_window_exceeded')],
    [...start, ...text('t', 'Whole answer.'), finish()],
  ]);
  const result = streamText({ model: wrapLanguageModel({ model, middleware: compactor.middleware() }), messages: conversation(), maxRetries: 0 });
  assert.equal(await result.text, 'Whole answer.');
  assert.equal(prompts.length, 2);
  assert.ok(events.some((e) => e.overflow?.provider === 'anthropic-stop-reason'));
});

test('an overflow after a text delta reached the caller is not retried: the stream ends with a typed context_overflow error', async () => {
  const { compactor, events } = await setup();
  const cause = anthropicEvent(21_000, WINDOW);
  const { model, prompts } = streaming([
    [...start, { type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'Partial' }, { type: 'error', error: cause }, finish('error')],
    [...start, ...text('t', 'never'), finish()],
  ]);
  const got = await parts(model, compactor.middleware(), asPrompt(conversation()));
  assert.equal(prompts.length, 1, 'no retry once content was delivered');
  assert.equal(events.length, 0, 'nothing compacted');
  const errors = got.filter((p) => p.type === 'error');
  assert.equal(errors.length, 1);
  const error = errors[0].error;
  assert.ok(error instanceof CompactorError, String(error));
  assert.equal(error.code, 'context_overflow');
  assert.equal(error.details.provider, 'anthropic');
  assert.equal(error.details.reportedTokens, 21_000);
  assert.equal(error.cause, cause, "the provider's error is the cause");
  assert.deepEqual(got.map((p) => p.type).slice(0, 4), ['stream-start', 'response-metadata', 'text-start', 'text-delta']);
  assert.equal(got.find((p) => p.type === 'text-delta').delta, 'Partial');

  // Through streamText: the text delivered stays, the error reaches onError typed.
  const again = streaming([[...start, { type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'Partial' }, { type: 'error', error: openaiError(25_000, WINDOW) }, finish('error')]]);
  const { compactor: other } = await setup();
  const seen = [];
  const result = streamText({ model: wrapLanguageModel({ model: again.model, middleware: other.middleware() }), messages: conversation(), maxRetries: 0, onError: ({ error }) => seen.push(error) });
  const full = [];
  for await (const part of result.fullStream) full.push(part);
  assert.equal(again.prompts.length, 1);
  assert.ok(full.some((p) => p.type === 'text-delta' && p.text === 'Partial'));
  assert.equal(seen.length, 1);
  assert.ok(seen[0] instanceof CompactorError && seen[0].code === 'context_overflow');
  assert.ok(APICallError.isInstance(seen[0].cause));

  // A context-window stop after content: the answer was cut; the stream says so, typed.
  const cut = streaming([[...start, ...text('t', 'Cut'), finish('model_context_window_exceeded')]]);
  const { compactor: third } = await setup();
  const ended = await parts(cut.model, third.middleware(), asPrompt(conversation()));
  assert.equal(cut.prompts.length, 1);
  const typed = ended.find((p) => p.type === 'error')?.error;
  assert.ok(typed instanceof CompactorError && typed.code === 'context_overflow', String(typed));
  assert.equal(typed.details.provider, 'anthropic-stop-reason');
  assert.equal(ended.at(-1).type, 'finish', 'the finish (and its usage) still comes');
});

test('mid-stream overflows past the retries end with the typed error; retries 0 passes the stream through', async () => {
  const { compactor } = await setup();
  const cause = anthropicEvent(21_000, WINDOW);
  const { model, prompts } = streaming([[...start, { type: 'error', error: cause }, finish('error')]]);
  const got = await parts(model, compactor.middleware(), asPrompt(conversation()));
  assert.equal(prompts.length, 2, 'one retry, never a loop');
  const error = got.find((p) => p.type === 'error')?.error;
  assert.ok(error instanceof CompactorError && error.code === 'context_overflow', String(error));
  assert.equal(error.details.attempts, 1);
  assert.equal(error.cause, cause);
  assert.equal(got.filter((p) => p.type === 'stream-start').length, 1, 'the refused streams do not leak');

  const { compactor: off } = await setup({ overflow: { retries: 0 } });
  const raw = streaming([[...start, { type: 'error', error: cause }, finish('error')]]);
  const through = await parts(raw.model, off.middleware(), asPrompt(conversation()));
  assert.equal(raw.prompts.length, 1);
  assert.equal(through.find((p) => p.type === 'error').error, cause, 'the provider error, unchanged');
});

test('a non-overflow error part is passed through, never retried', async () => {
  const { compactor, events } = await setup();
  const cause = { type: 'overloaded_error', message: 'Overloaded' };
  const { model, prompts } = streaming([[...start, { type: 'error', error: cause }, finish('error')], [...start, ...text('t', 'never'), finish()]]);
  const got = await parts(model, compactor.middleware(), asPrompt(conversation()));
  assert.equal(prompts.length, 1);
  assert.equal(events.length, 0);
  assert.equal(got.find((p) => p.type === 'error').error, cause);
  assert.deepEqual(got.map((p) => p.type), ['stream-start', 'response-metadata', 'error', 'finish']);
});

test("a stream's error event is read where providers put the overflow", () => {
  // OpenAI Responses: the error chunk itself, its code the only overflow sign.
  assert.equal(parseOverflow({ type: 'error', code: 'context_length_exceeded', message: 'Request too large.', param: 'input' })?.provider, 'openai');
  // An event wrapping the provider's error body.
  const nested = parseOverflow({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } });
  assert.deepEqual([nested?.provider, nested?.reportedTokens, nested?.limit], ['anthropic', 210_000, 200_000]);
  // A plain string (providers that enqueue `value.error.message`).
  assert.equal(parseOverflow('prompt is too long: 9 tokens > 8 maximum')?.reportedTokens, 9);
  assert.equal(parseOverflow({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), undefined);
  assert.equal(parseOverflow({ code: 'rate_limit_exceeded', message: 'Rate limit reached for tokens' }), undefined);
});
