// `context-compactor/tokens`: counting only, on its own wasm module (no planner). It counts what
// the main entry counts, loads encodings, prebuilt tokenizers and tokenizer.json files the same
// way, says what is missing with the same typed errors, and lives beside the main entry in one
// process without either one's state leaking into the other. (Its own process: node --test
// isolates files, so "before init" is true here.)
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import * as tokens from '../dist/entry/node-tokens.js';
import * as main from '../dist/entry/node.js';

const root = new URL('../../', import.meta.url);
const fixture = JSON.parse(await readFile(new URL('tests/fixtures/token-counts.json', root), 'utf8'));
const hf = JSON.parse(await readFile(new URL('tests/fixtures/hf-token-counts.json', root), 'utf8'));

const messages = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'Find the slow requests in /var/log/app.log.' }] },
  { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'grep', input: { pattern: 'slow', path: '/var/log' } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'grep', output: { type: 'text', value: 'GET /api 912ms\nGET /login 1450ms' } }] },
];
const tools = { grep: { description: 'Search files.', inputSchema: { jsonSchema: { type: 'object', properties: { pattern: { type: 'string' } } } } } };

test('tokens: nothing counts before init, with a typed error naming the call', () => {
  assert.equal(tokens.runtimeEntry, 'node');
  assert.equal(tokens.isInitialized(), false);
  assert.throws(() => tokens.countTokens('hello'), (e) => e instanceof tokens.CompactorError && e.code === 'not_initialized' && /countTokens/.test(e.message));
  assert.throws(() => tokens.countBreakdown(messages), (e) => e.code === 'not_initialized');
  assert.equal(tokens.isEncodingLoaded('o200k_base'), false);
});

test('tokens: bytes that are not the counting module, or a loader that fails, are typed errors; init can be retried', async () => {
  await assert.rejects(tokens.init(new Uint8Array([0, 97, 115, 109, 9, 9])), (e) => e.code === 'not_initialized' && /counter\/counter_bg\.wasm could not be instantiated/.test(e.message));
  assert.equal(tokens.isInitialized(), false);
  // A runtime of its own for the loader (the entry's loader reads the real file).
  const { createRuntime } = await import('../dist/init.js');
  const runtime = createRuntime(await import('../dist/counter/counter.js'), 'counter/counter_bg.wasm');
  runtime.setLoader(() => { throw new Error('ENOENT: no such file'); });
  await assert.rejects(runtime.init(), (e) => e.code === 'not_initialized' && /counter_bg\.wasm could not be loaded: ENOENT/.test(e.message));
  assert.equal(runtime.isInitialized(), false);
});

test('tokens: exposes counting only (no compactor, stores or AI SDK kit)', () => {
  for (const name of ['createCompactor', 'MemoryStore', 'loopContext', 'summarizer', 'recoveryTools', 'setLoader']) {
    assert.equal(name in tokens, false, name);
  }
  for (const name of ['init', 'loadEncoding', 'loadTokenizer', 'compileTokenizer', 'isEncodingLoaded', 'countTokens', 'countBreakdown', 'warmUp', 'CompactorError']) {
    assert.equal(name in tokens, true, name);
  }
});

test('tokens: init loads o200k_base; counts are exact for both encodings', async () => {
  await tokens.init();
  assert.equal(tokens.isInitialized(), true);
  assert.equal(tokens.isEncodingLoaded('o200k_base'), true);
  assert.throws(() => tokens.countTokens('x', 'cl100k_base'), (e) => e.code === 'encoding_not_loaded' && /loadEncoding/.test(e.message));
  await tokens.loadEncoding('cl100k_base');
  for (const c of fixture.cases) {
    assert.equal(tokens.countTokens(c.text), c.o200k_base, c.name);
    assert.equal(tokens.countTokens(c.text, 'cl100k_base'), c.cl100k_base, c.name);
  }
  assert.throws(() => tokens.countTokens(42), TypeError);
  await assert.rejects(tokens.loadEncoding('p50k_base'), (e) => e.code === 'unknown_encoding');
});

test('tokens: a prebuilt tokenizer on demand, and a tokenizer.json through the compiler, both exact', async () => {
  await tokens.init({ encodings: ['qwen3'] });
  const llama = await readFile(new URL('.tools/tokenizers/llama3_1/tokenizer.json', root), 'utf8');
  const info = await tokens.loadTokenizer('llama3_1', llama);
  assert.equal(info.name, 'llama3_1');
  for (const c of hf.cases) {
    assert.equal(tokens.countTokens(c.text, 'qwen3'), c.qwen3, `qwen3 ${c.name}`);
    assert.equal(tokens.countTokens(c.text, 'llama3_1'), c.llama3_1, `llama3_1 ${c.name}`);
  }
  await assert.rejects(tokens.loadTokenizer('broken', '{"model": {"type": "WordPiece"}}'), (e) => e.code === 'invalid_rank_data');
});

test('tokens: beside the main entry, two independent modules that count alike', async () => {
  // The main entry's core is not loaded by the tokens entry's init, and the other way round.
  assert.equal(main.isInitialized(), false);
  assert.throws(() => main.countTokens('hello'), (e) => e.code === 'not_initialized');
  await main.init();
  assert.equal(main.isEncodingLoaded('qwen3'), false, 'qwen3 was loaded into the tokens module only');
  const ours = tokens.countBreakdown(messages, { tools });
  assert.deepEqual(ours, main.countBreakdown(messages, { tools }));
  assert.equal(ours.total, ours.replyPriming + ours.messages.reduce((n, m) => n + m.total, 0) + ours.tools.total);
  const compactor = await main.createCompactor({ model: 'gpt-4o', tools });
  assert.equal(compactor.usage(messages).tokens, ours.total);
  // An error from either module is the same typed error.
  assert.throws(() => tokens.countBreakdown([{ role: 'robot', content: 'x' }]), (e) => e instanceof tokens.CompactorError && e.code === 'invalid_message');
  assert.throws(() => tokens.countBreakdown(messages, { encoding: 'nope' }), (e) => e.code === 'unknown_encoding');
});


test('tokens and main: modelInfo and countModelTokens, exact with the model tokenizer once loaded, else by the family factor', async () => {
  await main.init();
  const text = 'fn main() { println!("héllo, wörld"); } // 日本語 and some prose to count.';
  for (const entry of [tokens, main]) {
    const gpt = entry.countModelTokens(text, 'openai/gpt-4o');
    assert.deepEqual(gpt, { tokens: entry.countTokens(text), exact: true, counter: 'o200k_base', ratio: 1 });
    const claude = entry.modelInfo('claude-sonnet-4-5');
    assert.equal(claude.tokenizer, null);
    assert.ok(claude.tokenRatio > 1);
    const estimate = entry.countModelTokens(text, 'claude-sonnet-4-5');
    assert.deepEqual(estimate, { tokens: Math.ceil(entry.countTokens(text) * claude.tokenRatio), exact: false, counter: 'o200k_base', ratio: claude.tokenRatio });
    assert.equal(entry.modelInfo('totally-unknown-model').matched, null);
    assert.equal(entry.countModelTokens(text, 'totally-unknown-model').exact, false);
    assert.throws(() => entry.countModelTokens(42, 'gpt-4o'), TypeError);
  }
  // qwen3: loaded into the tokens module (an earlier test), not into the main one; its factor
  // is 1 where it is loaded.
  const qwen = tokens.modelInfo('qwen/qwen3-32b');
  assert.equal(qwen.tokenizer, 'qwen3');
  assert.equal(qwen.tokenRatio, 1);
  assert.ok(main.modelInfo('qwen/qwen3-32b').tokenRatio > 1);
  assert.deepEqual(tokens.countModelTokens(text, 'qwen/qwen3-32b'), { tokens: tokens.countTokens(text, 'qwen3'), exact: true, counter: 'qwen3', ratio: 1 });
  assert.equal(main.countModelTokens(text, 'qwen/qwen3-32b').exact, false);
  await main.loadEncoding(qwen.tokenizer);
  assert.deepEqual(main.countModelTokens(text, 'qwen/qwen3-32b'), tokens.countModelTokens(text, 'qwen/qwen3-32b'));
  assert.equal(main.modelInfo('qwen/qwen3-32b').tokenRatio, 1);
  // A cl100k model (gpt-4) needs cl100k_base; GPT-4.5 counts with o200k.
  assert.equal(main.isEncodingLoaded('cl100k_base'), false);
  assert.throws(() => main.countModelTokens(text, 'gpt-4'), (e) => e.code === 'encoding_not_loaded');
  await main.loadEncoding('cl100k_base');
  assert.deepEqual(main.countModelTokens(text, 'gpt-4'), { tokens: main.countTokens(text, 'cl100k_base'), exact: true, counter: 'cl100k_base', ratio: 1 });
  assert.equal(main.countModelTokens(text, 'gpt-4.5-preview').counter, 'o200k_base');
  // The compactor for that model starts from the same count.
  const compactor = await main.createCompactor({ model: 'qwen/qwen3-32b' });
  assert.equal(compactor.model.tokenizer, 'qwen3');
  assert.equal(compactor.model.tokenRatio, 1);
});
