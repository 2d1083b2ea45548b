// What an agent must not lose, through the host (issue 19, build items 3, 4 and 6): the working
// file survives tier 2 and a summary; an AI SDK provider's compaction item (Anthropic's block,
// OpenAI's Responses item, as @ai-sdk/anthropic 4 and @ai-sdk/openai 4 carry them) is kept byte
// for byte with nothing before it counted or touched; a system prompt over the lossy trigger
// gets a typed note and no summarizer call per turn.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';

await init();

const prose = (seed, words) =>
  Array.from({ length: words }, (_, i) => `${['window', 'budget', 'cache', 'parser'][(i + seed) % 4]} ${seed}.${i}`).join(' ');
const FILE = 'src/auth/session.ts';
const body = (lines) => Array.from({ length: lines }, (_, i) => `export const session${i} = createSession({ ttl: ${i} });`).join('\n');

function step(out, id, toolName, input, value) {
  out.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName, input }] });
  out.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName, output: { type: 'text', value } }] });
}

/** read_file session.ts → write_file of it → 12 more tool calls. */
function workingSession() {
  const out = [{ role: 'system', content: 'You are a coding agent.' }, { role: 'user', content: 'Fix the session TTL.' }];
  step(out, 'read_s', 'read_file', { path: FILE }, body(40));
  step(out, 'write_s', 'write_file', { path: FILE, content: body(45) }, 'Wrote 45 lines');
  for (let t = 0; t < 12; t++) {
    out.push({ role: 'user', content: `Step ${t}: ${prose(t, 30)}` });
    step(out, `c${t}`, 'read_file', { path: `/src/m${t}.ts` }, prose(t + 1, 700));
  }
  return out;
}

test('the working file is neither evicted nor masked at 88 %, and follows a summary verbatim', async () => {
  const messages = workingSession();
  const probe = await createCompactor({ model: 'gpt-4o', contextWindow: 1_000_000 });
  const window = Math.floor(probe.usage(messages).tokens / 0.88);
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: window, store: new MemoryStore() });
  const managed = await compactor.manage(messages);
  const touched = managed.plan.actions.filter((a) => a.toolCallId).map((a) => a.toolCallId);
  assert.ok(touched.some((id) => id.startsWith('c')), `others masked: ${touched}`);
  assert.ok(!touched.includes('read_s') && !touched.includes('write_s'), `${touched}`);
  const text = JSON.stringify(managed.messages);
  assert.ok(text.includes(JSON.stringify(body(40))) && text.includes(JSON.stringify(body(45))));

  const compacted = await compactor.compact(messages);
  const summaryAt = compacted.messages.findIndex((m) => typeof m.content === 'string' && m.content.startsWith('[Conversation summary]'));
  assert.equal(summaryAt, 1);
  const after = JSON.stringify(compacted.messages.slice(2, 6));
  assert.ok(after.includes('read_s') && after.includes('write_s') && after.includes(JSON.stringify(body(40))));

  // Off: the write is evicted.
  const off = await createCompactor({ model: 'gpt-4o', contextWindow: window, compaction: { workingFiles: { maxFiles: 0 } } });
  const offTouched = off.plan(messages).actions.filter((a) => a.toolCallId).map((a) => a.toolCallId);
  assert.ok(offTouched.includes('write_s'), `${offTouched}`);
});

const items = {
  anthropic: { type: 'text', text: 'Summary of the work so far.', providerOptions: { anthropic: { type: 'compaction', signature: 'EqQBCkYIBxgCKkA' } } },
  openai: { type: 'custom', kind: 'openai.compaction', providerOptions: { openai: { type: 'compaction', itemId: 'cmp_68a1', encryptedContent: 'gAAAAABoq0zX' } } },
};

for (const [provider, item] of Object.entries(items)) {
  test(`a ${provider} compaction item: nothing before it counted or touched, kept byte for byte`, async () => {
    const messages = [{ role: 'system', content: 'You are a coding agent.' }];
    for (let t = 0; t < 3; t++) {
      messages.push({ role: 'user', content: `old step ${t}` });
      step(messages, `old_${t}`, 'search', { q: t }, prose(t, 9_000));
    }
    const at = messages.length;
    messages.push({ role: 'assistant', content: [item, { type: 'text', text: 'Continuing.' }] });
    // Seven steps after the item: about 10k tokens, under tier 2's 70 % of 16,000.
    for (let t = 0; t < 7; t++) {
      messages.push({ role: 'user', content: `Step ${t}: ${prose(t, 30)}` });
      step(messages, `c${t}`, 'read_file', { path: `/src/m${t}.ts` }, prose(t + 1, 250));
    }
    const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000, store: new MemoryStore() });
    const read = [messages[0], ...messages.slice(at)];
    assert.equal(compactor.usage(messages).tokens, compactor.usage(read).tokens);
    const plain = await createCompactor({ model: 'gpt-4o', contextWindow: 16_000 });
    assert.ok(plain.usage(messages.slice(0, at)).tokens > 3 * compactor.usage(messages).tokens);

    const auto = await compactor.manage(messages);
    assert.deepEqual(auto.plan.actions, [], 'nothing to do: what the provider dropped costs nothing');
    const { messages: out, plan } = await compactor.compact(messages);
    for (const a of plan.actions) if (typeof a.messageIndex === 'number') assert.ok(a.messageIndex > at, `${a.id}`);
    const summary = plan.actions.find((a) => a.type === 'summarize');
    assert.ok(summary && summary.start > at, `span starts after the item: ${summary?.start}`);
    assert.equal(JSON.stringify(out.slice(0, at + 1)), JSON.stringify(messages.slice(0, at + 1)));
  });
}

test('a system prompt over the lossy trigger: a typed note, no summarizer call per turn', async () => {
  let calls = 0;
  const compactor = await createCompactor({
    model: 'gpt-4o',
    contextWindow: 16_000,
    store: new MemoryStore(),
    summarize: async () => {
      calls++;
      return 'summary';
    },
  });
  let messages = [{ role: 'system', content: prose(1, 7_900) }];
  for (let t = 0; t < 6; t++) {
    messages.push({ role: 'user', content: `Step ${t}` });
    step(messages, `c${t}`, 'read_file', { path: `/m${t}` }, prose(t, 20));
    const { plan, messages: out } = await compactor.manage(messages);
    messages = out;
    const notes = plan.notes.filter((n) => n.type === 'fixed-over-trigger');
    assert.equal(notes.length, 1, JSON.stringify(plan.notes));
    assert.ok(notes[0].fixedTokens > notes[0].trigger && /system prompt/.test(notes[0].reason));
  }
  assert.equal(calls, 0, 'the request still fits: no summary');
});
