// The lossy tier through the host: transcripts stored before anything leaves, the summarizer
// called with a valid request, heuristic fallback, onPreCompact (cancel, no deadlock at the
// hard limit, custom instructions, custom summary), manual compaction, truncation, loop context.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MemoryStore,
  createCompactor,
  init,
  loopContext,
  memorySegment,
  recoverySegment,
  withMemory,
} from '../dist/entry/node.js';
import { chat } from '../test-helpers/conversations.mjs';

await init();

/** No tool result is left without its call, no call without its result. */
function assertPaired(messages) {
  const calls = new Set();
  const results = new Set();
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type === 'tool-call') calls.add(p.toolCallId);
      if (p.type === 'tool-result') {
        assert.ok(calls.has(p.toolCallId), `result ${p.toolCallId} without its call`);
        results.add(p.toolCallId);
      }
    }
  }
  for (const id of calls) assert.ok(results.has(id), `call ${id} without its result`);
}

test('summarize: transcript stored first, request is one user message, summary names the transcript', async () => {
  const store = new MemoryStore();
  const requests = [];
  const compactor = await createCompactor({
    contextWindow: 8_000,
    store,
    summarize: async (request) => {
      requests.push(request);
      // The transcript is already in the store when the LLM is called.
      const files = await store.list('/conversation_history/');
      assert.equal(files.length, 2, 'transcript JSON and Markdown written before summarizing');
      return '## Session Intent\nChat about many things.\n\n## Next Steps\nKeep going.';
    },
  });
  const messages = chat(30);
  const before = compactor.usage(messages).tokens;
  assert.ok(before > 8_000, `fixture must overflow: ${before}`);
  const { messages: out, events, plan } = await compactor.manage(messages);

  assert.equal(requests.length, 1);
  const [request] = requests;
  assert.deepEqual(request.messages.map((m) => m.role), ['user']);
  assert.equal(request.messages[0].content, request.prompt);
  assert.match(request.prompt, /## Session Intent/);
  assert.ok(request.maxTokens > 0 && request.maxTokens <= 800, `maxTokens ${request.maxTokens}`);

  const transcript = plan.actions.find((a) => a.type === 'save-transcript');
  assert.equal(transcript.lossyStrategy, 'summarize', 'the transcript names the lossy step it is saved before');
  assert.deepEqual(JSON.parse(await store.read(transcript.path)), messages, 'nothing lost: the transcript is the input');
  assert.match(await store.read(transcript.readablePath), /# Conversation transcript/);

  assert.equal(out[0].content, 'You are a helpful agent.', 'system prompt stays first');
  assert.equal(out[1].role, 'user');
  assert.ok(out[1].content.startsWith('[Conversation summary]') && out[1].content.includes(transcript.path));
  assert.ok(out[1].content.includes('Chat about many things.'));
  assert.deepEqual(out.at(-1), messages.at(-1), 'the newest message is kept verbatim');
  assertPaired(out);
  const summarize = events.find((e) => e.strategy === 'summarize');
  assert.equal(summarize.status, 'applied');
  const after = compactor.usage(out).tokens;
  assert.ok(after <= plan.trigger.target, `after ${after} <= target ${plan.trigger.target}`);
  assert.ok(after <= plan.tokensAfter, 'no more than predicted');
  assert.deepEqual((await compactor.manage(out)).events, [], 'idempotent');
  assert.equal(compactor.stats().byStrategy.summarize.events, 1);
});

test('rolling: a second summary receives the first as the previous summary', async () => {
  const prompts = [];
  const compactor = await createCompactor({
    contextWindow: 8_000,
    summarize: (request) => { prompts.push(request.prompt); return `Summary number ${prompts.length}.`; },
  });
  const first = await compactor.manage(chat(30));
  // New turns (not the same ones again: the record would recognise them as the span already
  // summarized and put the summary in their place).
  const grown = [...first.messages, ...chat(30, 119).slice(1)];
  const second = await compactor.manage(grown);
  assert.equal(prompts.length, 2);
  assert.match(prompts[1], /# Previous summary\n\nSummary number 1\./);
  assert.ok(second.messages[1].content.includes('Summary number 2.'));
  assert.equal(second.messages.filter((m) => typeof m.content === 'string' && m.content.startsWith('[Conversation summary]')).length, 1);
});

test('no summarizer, or a failing one: the heuristic summary is applied and the event says so', async () => {
  for (const summarize of [undefined, async () => { throw new Error('rate limited'); }]) {
    const compactor = await createCompactor({ contextWindow: 8_000, summarize });
    const { messages: out, events } = await compactor.manage(chat(30));
    const event = events.find((e) => e.strategy === 'summarize');
    assert.equal(event.status, 'fallback');
    assert.match(event.error, summarize ? /rate limited/ : /no summarizer/);
    assert.match(out[1].content, /## Session Intent\nTurn 0:/);
    assert.match(out[1].content, /read_file ×1/);
    assert.match(out[1].content, /\/src\/f15\.rs/);
  }
});

test('a failed transcript write blocks the summary: nothing is removed, no LLM call', async () => {
  const store = new MemoryStore();
  let calls = 0;
  const failing = { read: (p) => store.read(p), list: (p) => store.list(p), delete: (p) => store.delete(p),
    write: async (path, text) => { if (path.startsWith('/conversation_history/')) throw new Error('quota'); return store.write(path, text); } };
  const compactor = await createCompactor({ contextWindow: 8_000, store: failing, summarize: () => { calls++; return 'x'; } });
  const messages = chat(30);
  const { messages: out, events } = await compactor.manage(messages);
  assert.equal(calls, 0);
  assert.deepEqual(out, messages);
  const summarize = events.find((e) => e.strategy === 'summarize');
  assert.equal(summarize.status, 'failed');
  assert.match(summarize.error, /transcript was not saved \(quota\)/);
});

test('onPreCompact: cancel below the hard limit, overridden above it; instructions and custom summary', async () => {
  const seen = [];
  const cancel = await createCompactor({
    contextWindow: 8_000,
    history: { triggerFraction: 0.9, hardLimitFraction: 0.99 },
    compaction: { triggerFraction: 0.5, targetFraction: 0.4 },
    onPreCompact: (ctx) => { seen.push(ctx); return { cancel: true }; },
  });
  const small = chat(7, 80);
  const tokens = cancel.usage(small).tokens;
  assert.ok(tokens > 4_000 && tokens < 7_920, `fixture between trigger and hard limit: ${tokens}`);
  const cancelled = await cancel.manage(small);
  assert.equal(cancelled.cancelled, true);
  assert.deepEqual(cancelled.messages, small);
  assert.equal(seen[0].trigger, 'auto');
  assert.equal(seen[0].currentTokens, tokens);
  assert.equal(seen[0].messageCount, small.length);
  assert.equal(seen[0].targetTokens, 3_200);

  const big = chat(30);
  const overridden = await cancel.manage(big);
  assert.equal(overridden.cancelOverridden, true, 'no deadlock past the hard limit');
  assert.ok(cancel.usage(overridden.messages).tokens < 8_000);

  let request;
  const steer = await createCompactor({
    contextWindow: 8_000,
    summarize: (r) => { request = r; return 'steered'; },
    onPreCompact: () => ({ customInstructions: 'Focus on the spreadsheet formulas.' }),
  });
  await steer.manage(big);
  assert.match(request.prompt, /Additional instructions: Focus on the spreadsheet formulas\./);

  let called = false;
  const custom = await createCompactor({
    contextWindow: 8_000,
    summarize: () => { called = true; return 'llm'; },
    onPreCompact: () => ({ customSummary: 'Hand-written summary.' }),
  });
  const { messages: out } = await custom.manage(big);
  assert.equal(called, false);
  assert.ok(out[1].content.endsWith('Hand-written summary.'));
});

test('compact() runs on demand below every trigger, with instructions', async () => {
  let request;
  const compactor = await createCompactor({ model: 'gpt-4o', summarize: (r) => { request = r; return 'on demand'; } });
  const messages = chat(20);
  assert.equal(compactor.plan(messages).actions.length, 0, 'nothing to do automatically');
  const planned = compactor.plan(messages, { trigger: 'manual', instructions: 'Keep names.' });
  assert.equal(planned.trigger.manual, true);
  const { messages: out, events } = await compactor.compact(messages, { instructions: 'Keep names.' });
  assert.match(request.prompt, /Additional instructions: Keep names\./);
  assert.ok(out.length < messages.length);
  assert.ok(events.some((e) => e.strategy === 'summarize' && e.status === 'applied'));
});

test('truncate and the simple preset drop whole groups and leave a notice naming the transcript', async () => {
  for (const options of [{ history: { strategy: 'truncate' } }, { preset: 'simple' }, { history: { strategy: 'importance' } }]) {
    const store = new MemoryStore();
    const compactor = await createCompactor({ contextWindow: 8_000, store, ...options });
    const messages = chat(30);
    const { messages: out, events, plan } = await compactor.manage(messages);
    const drop = plan.actions.find((a) => a.type === 'drop');
    assert.ok(drop, `a drop action for ${JSON.stringify(options)}`);
    assert.equal(plan.actions.find((a) => a.id === drop.transcript).lossyStrategy, drop.strategy);
    assert.ok(out[1].content.startsWith('[Earlier messages removed]') && out[1].content.includes(drop.transcriptPath));
    assert.deepEqual(JSON.parse(await store.read(drop.transcriptPath)), messages);
    assert.ok(events.every((e) => e.status === 'applied'));
    assertPaired(out);
    const missed = plan.notes.find((n) => n.type === 'target-not-met');
    assert.ok(compactor.usage(out).tokens <= plan.trigger.target || missed, 'at the target, or the plan says why');
    if (options.preset === 'simple') {
      assert.equal(out.length, 12, 'simple keeps the system prompt, a notice and the last 10 messages');
      assert.deepEqual(out.slice(2), messages.slice(-10));
      assert.match(missed.reason, /last 10 messages/);
    }
  }
});

test('bad options are typed errors naming the field', async () => {
  await assert.rejects(createCompactor({ history: { strategy: 'forget' } }), (e) => e.code === 'invalid_config' && /history.strategy/.test(e.field));
  await assert.rejects(createCompactor({ preset: 'turbo' }), (e) => e.code === 'invalid_config' && e.field === 'preset');
  await assert.rejects(createCompactor({ history: { keepRecentFraction: 0.9 } }), (e) => e.field === 'history.keepRecentFraction');
});

test('loop context: rolling window, summary request, failure keeps iterations, prompt', () => {
  let state = loopContext.create('Build the login endpoint', 0);
  let request = null;
  for (let i = 1; i <= 10; i++) {
    const step = loopContext.addIteration(state, { unixMs: i * 1000, cli: 'codex', model: 'gpt-5', output: i === 3 ? '' : `<progress>step ${i}</progress>` });
    state = step.state;
    request = step.request ?? request;
  }
  assert.equal(state.iterations.length, 5);
  assert.ok(request, 'a summary is due at iteration 10');
  assert.deepEqual(request.messages.map((m) => m.role), ['user']);
  const failed = loopContext.applySummary(state, request.id, { error: 'timeout' });
  assert.equal(failed.summary, '');
  assert.equal(failed.pending.length, 5, 'nothing lost on failure');
  const done = loopContext.applySummary(state, request.id, 'Steps 1-5 done.');
  assert.equal(done.summary, 'Steps 1-5 done.');
  const prompt = loopContext.buildPrompt(done);
  assert.match(prompt, /# Goal\nBuild the login endpoint/);
  assert.match(prompt, /Steps 1-5 done\./);
  assert.throws(() => loopContext.applySummary(done, 'stale-id', 'x'), (e) => e.code === 'plan_mismatch');
  // A misspelled iteration field is invalid input, named as such.
  assert.throws(() => loopContext.addIteration(done, { unixMs: 1, ouput: 'typo' }),
    (e) => e.code === 'invalid_config' && e.field === 'iteration' && /ouput/.test(e.message));
});

test('prompt segments name the recovery paths and the memory file', () => {
  assert.match(recoverySegment(), /\/tool_outputs\//);
  assert.match(recoverySegment('/out/', '/hist/'), /\/hist\//);
  assert.match(memorySegment(), /\/memories\/AGENTS\.md/);
  assert.equal(withMemory('sys', ''), 'sys');
  assert.match(withMemory('sys', 'Prefers tabs.'), /Prefers tabs\./);
});

test('tool definitions count against the window, as JSON or as an AI SDK tool set', async () => {
  const messages = chat(2);
  const plain = (await createCompactor({ model: 'gpt-4o' })).usage(messages).tokens;
  const schema = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
  const json = (await createCompactor({ model: 'gpt-4o', tools: [{ name: 'read_file', description: 'Read a file.', inputSchema: schema }] })).usage(messages).tokens;
  const toolSet = (await createCompactor({ model: 'gpt-4o', tools: { read_file: { description: 'Read a file.', inputSchema: { jsonSchema: schema } } } })).usage(messages).tokens;
  assert.ok(json > plain + 20, `${json} vs ${plain}`);
  assert.equal(toolSet, json, 'an AI SDK Schema wrapper counts like its JSON schema');
});
