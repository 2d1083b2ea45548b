// AI SDK 7: generateText + MockLanguageModelV4 + prepareStep: compactor.prepareStep. A tool returns
// ~30k-token outputs over five steps; the model must never receive a prompt over the 16k window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens, init } from 'context-compactor';
import { runAgent, runLongAgent, searchResult } from '../../examples/ai-sdk-agent/agent.mjs';

const WINDOW = 16_000;
await init();

/** Sum of exact o200k counts of every string in a prompt: independent of message framing. */
function stringTokens(value) {
  if (typeof value === 'string') return countTokens(value, 'o200k_base');
  if (Array.isArray(value)) return value.reduce((n, v) => n + stringTokens(v), 0);
  if (value && typeof value === 'object') return Object.values(value).reduce((n, v) => n + stringTokens(v), 0);
  return 0;
}

function assertPairsIntact(prompt) {
  const calls = new Set();
  for (const message of prompt) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) {
      if (part.type === 'tool-call') calls.add(part.toolCallId);
      if (part.type === 'tool-result') assert.ok(calls.has(part.toolCallId), `result ${part.toolCallId} has no earlier call`);
    }
  }
}

test('control: without the compactor the prompts overflow the window', async () => {
  const { prompts } = await runAgent({ compactor: false });
  assert.ok(searchResult('topic0').length > 0);
  const largest = Math.max(...prompts.map(stringTokens));
  assert.ok(largest > 5 * WINDOW, `unmanaged prompt only ${largest} tokens: the test would prove nothing`);
});

test('prepareStep keeps every prompt the model receives inside the window', async () => {
  const events = [];
  const { prompts, store, compactor, text } = await runAgent({ onEvent: (e) => events.push(e) });
  assert.equal(text, 'All topics researched.');
  assert.equal(prompts.length, 6, 'five tool steps and a final answer');
  for (const [i, prompt] of prompts.entries()) {
    const tokens = stringTokens(prompt);
    assert.ok(tokens <= WINDOW, `call ${i}: ${tokens} tokens of text > ${WINDOW}`);
    assert.ok(compactor.usage(prompt).tokens <= WINDOW, `call ${i}: usage over window`);
    assert.equal(prompt[0].role, 'system', 'instructions stay first');
    assertPairsIntact(prompt);
  }
  // Every tool result was offloaded once, stored byte for byte, and the last prompt points at it.
  assert.equal(events.filter((e) => e.status === 'applied').length, 5);
  const last = JSON.stringify(prompts.at(-1));
  for (let step = 0; step < 5; step++) {
    const event = events[step];
    assert.equal(await store.read(event.path), searchResult(`topic${step}`));
    assert.ok(last.includes(event.path), `final prompt lacks ${event.path}`);
  }
  assert.equal(compactor.stats().byStrategy.offload.filesWritten, 5);
});

test('the long agent example: 30 steps in 8k, offloads at return, summaries by the model, recovery reads', async () => {
  const events = [];
  const { prompts, store, compactor, summaryRequests, text, steps } = await runLongAgent({ onEvent: (e) => events.push(e) });
  assert.equal(text, 'Refactor plan ready.');
  assert.equal(prompts.length, 30);
  for (const [i, prompt] of prompts.entries()) {
    assert.ok(compactor.usage(prompt).tokens <= compactor.model.contextWindow, `call ${i} over the window`);
    assertPairsIntact(prompt);
    assert.equal(prompt[0].role, 'system');
  }
  const summaries = events.filter((e) => e.strategy === 'summarize');
  assert.ok(summaries.length >= 2 && summaries.every((e) => e.status === 'applied'), 'summaries written by the summarizer model');
  // Each applied summary was written once; one more when a summary asked ahead of need (in the
  // background) was not needed yet when the agent stopped.
  await compactor.settled();
  assert.ok(summaryRequests.length >= summaries.length && summaryRequests.length <= summaries.length + 1, `${summaryRequests.length} requests, ${summaries.length} summaries`);
  // Each summary is in the history that followed, and names its transcript.
  const last = JSON.stringify(prompts.at(-1));
  assert.ok(last.includes('Refactor the request pipeline.') && last.includes(summaries.at(-1).path));
  // Every search output was offloaded at return time, stored byte for byte.
  const searches = steps.flatMap((s) => s.toolCalls).filter((c) => c.toolName === 'search');
  // (In 8k the threshold is 2,000 tokens: the file reads go too.)
  const offloads = events.filter((e) => e.strategy === 'offload');
  assert.ok(offloads.length >= searches.length);
  const stored = new Set(await Promise.all(offloads.map((e) => store.read(e.path))));
  for (const c of searches) assert.ok(stored.has(searchResult(c.input.query)), `search "${c.input.query}" not stored byte for byte`);
  // The recovery reads returned the stored lines 101-120.
  const reads = steps.flatMap((s) => s.toolResults).filter((r) => r.toolName === 'read_file');
  assert.ok(reads.length >= 3);
  for (const r of reads) assert.match(r.output, /^101\t.+\n102\t/);
});
