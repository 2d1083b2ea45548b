// Found by trying the package as a new user would (a fresh app from the packed tarball): each
// test failed before its fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompactorError, MemoryStore, createCompactor, init } from '../dist/entry/node.js';
import { chat } from '../test-helpers/conversations.mjs';

await init();

test('an onPreCompact hook that never settles is no decision after summarizeTimeoutMs: the call goes on, never a hang', async () => {
  let asked = 0;
  const compactor = await createCompactor({ contextWindow: 8_000, summarizeTimeoutMs: 200, onPreCompact: () => { asked++; return new Promise(() => {}); } });
  const started = Date.now();
  const result = await compactor.manage(chat(30));
  assert.equal(asked, 1);
  assert.ok(result.events.some((e) => e.strategy === 'summarize'), 'compacted as with no hook');
  assert.ok(Date.now() - started < 5_000);
  // The compactor is free for the next call.
  await compactor.manage([{ role: 'user', content: 'hi' }]);
});

test('systemPrompt: a base that is not a string is a TypeError naming it; a memory read that throws is a typed store_failed naming the file', async () => {
  const compactor = await createCompactor({});
  for (const base of [42, {}, undefined, null, ['a']]) {
    await assert.rejects(() => compactor.systemPrompt(base), (e) => e instanceof TypeError && /systemPrompt: base must be a string/.test(e.message), String(base));
  }
  class Failing extends MemoryStore {
    async read(path) { if (path.startsWith('/memories/')) throw new Error('ECONNRESET'); return super.read(path); }
  }
  const failing = await createCompactor({ store: new Failing() });
  await assert.rejects(() => failing.systemPrompt('You are an agent.'), (e) => e instanceof CompactorError && e.code === 'store_failed' && e.details.path === '/memories/AGENTS.md' && e.details.op === 'read' && /ECONNRESET/.test(e.message));
  assert.match(await failing.systemPrompt('You are an agent.', { memory: false }), /^You are an agent\./);
});

test('options of the wrong type are invalid_config naming them (summarizeTimeoutMs, background, compaction.triggerFraction)', async () => {
  for (const [options, field] of [
    [{ summarizeTimeoutMs: '5000' }, 'summarizeTimeoutMs'],
    [{ background: 'yes' }, 'background'],
    [{ compaction: { triggerFraction: 1.5 } }, 'compaction.triggerFraction'],
    [{ compaction: { targetFraction: 0.9, triggerFraction: 0.8 } }, 'compaction.targetFraction'],
  ]) {
    await assert.rejects(() => createCompactor(options), (e) => e instanceof CompactorError && e.code === 'invalid_config' && e.details.field === field, JSON.stringify(options));
  }
});

test('dispose() twice is nothing; a call after it is a typed disposed error', async () => {
  const compactor = await createCompactor({});
  compactor.dispose();
  compactor.dispose();
  for (const call of [() => compactor.stats(), () => compactor.model, () => compactor.usage([{ role: 'user', content: 'hi' }])]) {
    assert.throws(call, (e) => e instanceof CompactorError && e.code === 'disposed');
  }
  await assert.rejects(() => compactor.manage([{ role: 'user', content: 'hi' }]), (e) => e instanceof CompactorError && e.code === 'disposed');
});

test('statePath that is not a path is invalid_path naming the option', async () => {
  await assert.rejects(() => createCompactor({ store: new MemoryStore(), statePath: 'state.json' }), (e) => e instanceof CompactorError && e.code === 'invalid_path' && e.details.field === 'statePath');
});

test('a result says the tokens it started from and the tokens it sends, failed writes included', async () => {
  const big = Array.from({ length: 4000 }, (_, i) => `row ${i}: ${'data '.repeat(8)}`).join('\n');
  const messages = [
    { role: 'user', content: 'go' },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 't1', toolName: 'dump', input: {} }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: 't1', toolName: 'dump', output: { type: 'text', value: big } }] },
  ];
  const ok = await createCompactor({ contextWindow: 16_000 });
  const done = await ok.manage(messages);
  assert.ok(done.events.some((e) => e.strategy === 'offload' && e.status === 'applied'));
  assert.equal(done.tokensBefore, done.plan.tokensBefore);
  assert.equal(done.tokensAfter, ok.usage(done.messages).tokens);
  assert.ok(done.tokensAfter < 16_000 && done.tokensBefore > 16_000);
  class Refusing extends MemoryStore { async write() { throw new Error('disk full'); } }
  const failing = await createCompactor({ contextWindow: 16_000, store: new Refusing() });
  const kept = await failing.manage(messages);
  assert.ok(kept.events.every((e) => e.status !== 'applied'));
  assert.equal(kept.tokensAfter, kept.tokensBefore, 'the content stayed: the prompt is as large as it was');
  assert.ok(kept.tokensAfter > kept.plan.tokensAfter, 'above the plan\'s prediction');
});

test('compact: instructions that are not a string are a TypeError naming them', async () => {
  const compactor = await createCompactor({});
  await assert.rejects(() => compactor.compact([{ role: 'user', content: 'hi' }], { instructions: 5 }), (e) => e instanceof TypeError && /compact: instructions must be a string/.test(e.message));
});

test("an onPreCompact hook's own error is the call's, and a state whose field does not fit names it as the state's", async () => {
  const compactor = await createCompactor({ contextWindow: 8_000, onPreCompact: async () => { throw new Error('approval timed out'); } });
  await assert.rejects(() => compactor.manage(chat(30)), /approval timed out/);
  await assert.rejects(() => createCompactor({ state: { version: 2, stats: 'nope' } }), (e) => e.code === 'invalid_config' && e.details.field === 'state.stats');
});
