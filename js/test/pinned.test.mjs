// Pinned context through the host (issue 19, build item 2): an early write_todos survives a
// summary (scripted summarizer, heuristic fallback, manage() and compact()) verbatim; pins by
// providerOptions and by tool name survive; pins over the target get a typed note.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';

await init();

const todos = (v) => ({
  todos: [
    { content: `Refactor the parser (v${v})`, status: 'completed' },
    { content: `Write the cache tests (v${v})`, status: 'in_progress' },
    { content: 'Ship the release notes "draft" ✓', status: 'pending' },
  ],
});

const prose = (seed, words) =>
  Array.from({ length: words }, (_, i) => `${['window', 'budget', 'cache', 'parser'][(i + seed) % 4]} ${seed}.${i}`).join(' ');

/** An agent session: a write_todos call at each turn of `plans`, then tool steps. */
function session(turns, { plans = [0], pin = false } = {}) {
  const out = [{ role: 'system', content: 'You are a coding agent.' }];
  for (let t = 0; t < turns; t++) {
    const user = { role: 'user', content: `Step ${t}: ${prose(t, 40)}` };
    if (pin && t === 1) user.content = 'Never touch the migrations directory.';
    if (pin && t === 1) user.providerOptions = { contextCompactor: { pin: true } };
    out.push(user);
    if (plans.includes(t)) {
      out.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `plan_${t}`, toolName: 'write_todos', input: todos(t) }] });
      out.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `plan_${t}`, toolName: 'write_todos', output: { type: 'text', value: 'Updated todo list' } }] });
    }
    const tool = pin && t === 2 ? 'search' : 'read_file';
    out.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${t}`, toolName: tool, input: { path: `/src/m${t}.ts` } }] });
    out.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${t}`, toolName: tool, output: { type: 'text', value: prose(t + 1, 200) } }] });
    out.push({ role: 'assistant', content: prose(t + 2, 60) });
  }
  return out;
}

const section = (v) => `[Current plan, kept verbatim] the latest write_todos input:\n${JSON.stringify(todos(v))}`;

function assertPaired(messages) {
  const calls = new Set();
  for (const m of messages) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type === 'tool-call') calls.add(p.toolCallId);
      if (p.type === 'tool-result') assert.ok(calls.has(p.toolCallId), `result ${p.toolCallId} without its call`);
    }
  }
}

for (const [name, summarize] of [
  ['a scripted summarizer', async () => '## Session Intent\nRefactor.\n\n## Plan / Todo\nParser done.'],
  ['the heuristic fallback', undefined],
]) {
  test(`compact(): an early write_todos is carried verbatim after the summary (${name})`, async () => {
    const compactor = await createCompactor({ contextWindow: 16_000, store: new MemoryStore(), summarize });
    const messages = session(12);
    const { messages: out, plan } = await compactor.compact(messages);
    const action = plan.actions.find((a) => a.type === 'summarize');
    assert.ok(action, 'a summary');
    assert.equal(action.plan, section(0));
    assert.match(action.request.prompt, /## Plan \/ Todo/);
    const summary = out[1];
    assert.equal(summary.role, 'user');
    assert.ok(summary.content.startsWith('[Conversation summary]'));
    assert.ok(summary.content.endsWith(`\n\n${section(0)}`), summary.content);
    if (!summarize) assert.match(summary.content, /## Plan \/ Todo\nThe latest plan is kept verbatim/);
    assert.ok(!JSON.stringify(out.slice(2)).includes('plan_0'), 'the call itself was summarized');
    assertPaired(out);
  });
}

test('manage(): only the latest plan is carried, and a stateless host gets the same prompt', async () => {
  const messages = session(30, { plans: [0, 4] });
  const store = new MemoryStore();
  const a = await createCompactor({ contextWindow: 16_000, store, statePath: '/state/a.json' });
  const first = await a.manage(messages);
  const text = JSON.stringify(first.messages);
  assert.ok(first.events.some((e) => e.strategy === 'summarize'), 'a summary');
  assert.ok(text.includes(JSON.stringify(section(4)).slice(1, -1)), 'v4 carried');
  assert.ok(!text.includes('(v0)'), 'v0 not carried');
  // A new compactor from the saved state, with the raw history: the same prompt.
  const b = await createCompactor({ contextWindow: 16_000, store, statePath: '/state/a.json' });
  const again = await b.manage(messages);
  assert.equal(JSON.stringify(again.messages), text);
});

test('pins by providerOptions and by tool name survive a summary and truncation', async () => {
  for (const strategy of ['summarize', 'truncate', 'importance']) {
    const compactor = await createCompactor({
      contextWindow: 12_000,
      store: new MemoryStore(),
      history: { strategy, pinnedTools: ['search'] },
    });
    const messages = session(24, { plans: [], pin: true });
    const { messages: out, plan } = await compactor.compact(messages);
    assert.ok(out.length < messages.length, strategy);
    assert.ok(plan.actions.some((a) => a.type === 'summarize' || a.type === 'drop'), strategy);
    const text = JSON.stringify(out);
    const pinned = messages.find((m) => m.providerOptions);
    assert.ok(text.includes(JSON.stringify(pinned)), `${strategy}: the pinned message verbatim`);
    const call = messages.find((m) => Array.isArray(m.content) && m.content[0].toolName === 'search' && m.role === 'assistant');
    const result = messages.find((m) => Array.isArray(m.content) && m.content[0].toolName === 'search' && m.role === 'tool');
    assert.ok(text.indexOf(JSON.stringify(call)) >= 0 && text.indexOf(JSON.stringify(call)) < text.indexOf(JSON.stringify(result)), `${strategy}: the search pair`);
    assertPaired(out);
  }
});

test('pins over the target: a pinned-over-budget note', async () => {
  const compactor = await createCompactor({ contextWindow: 8_000, store: new MemoryStore() });
  const messages = session(4, { plans: [] });
  messages.splice(2, 0, { role: 'user', content: prose(9, 4_000), providerOptions: { contextCompactor: { pin: true } } });
  const plan = compactor.plan(messages);
  const note = plan.notes.find((n) => n.type === 'pinned-over-budget');
  assert.ok(note, JSON.stringify(plan.notes));
  assert.ok(note.pinnedTokens > note.target && note.target === plan.trigger.target);
});
