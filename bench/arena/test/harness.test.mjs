// The arena's own measuring: canonical prompts, counting, cache cost, orphans, the replay.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { countTokens, init } from 'context-compactor';
import { CACHE_READ, CACHE_WRITE, measure, Scorer } from '../lib/metrics.mjs';
import { fromAiSdk, fromLangChain, orphans, pieces } from '../lib/prompt.mjs';
import { Replay, scriptedSummary } from '../lib/script.mjs';

await init();

const aiPrompt = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'List the files.' }] },
  { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'ls', input: { path: '/' } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'ls', output: { type: 'text', value: 'a.txt\nb.txt' } }] },
  { role: 'assistant', content: [{ type: 'text', text: 'Two files.' }] },
];
const lcMessages = [
  new SystemMessage('You are terse.'),
  new HumanMessage('List the files.'),
  new AIMessage({ content: 'Looking.', tool_calls: [{ id: 'c1', name: 'ls', args: { path: '/' }, type: 'tool_call' }] }),
  new ToolMessage({ tool_call_id: 'c1', content: 'a.txt\nb.txt' }),
  new AIMessage('Two files.'),
];
const definition = { name: 'ls', description: 'List', parameters: { type: 'object', properties: { path: { type: 'string' } } } };

test('the same conversation gives the same prompt from the AI SDK and from LangChain', () => {
  const a = fromAiSdk(aiPrompt, [{ type: 'function', name: 'ls', description: 'List', inputSchema: definition.parameters }]);
  const l = fromLangChain(lcMessages, [definition]);
  assert.deepEqual(pieces(a), pieces(l));
  assert.deepEqual(a.messages.map((m) => m.calls), [[], ['c1'], [], []]);
  assert.deepEqual(a.messages.map((m) => m.results), [[], [], ['c1'], []]);
});

test('orphans: a call without its result and a result without its call are both counted', () => {
  const p = fromAiSdk(aiPrompt);
  assert.equal(orphans(p), 0);
  assert.equal(orphans({ ...p, messages: p.messages.filter((m) => m.role !== 'tool') }), 1);
  assert.equal(orphans({ ...p, messages: p.messages.filter((m) => m.calls.length === 0) }), 1);
});

test('a prompt that extends the previous one reads it all from the cache; an edit breaks the prefix', () => {
  const first = fromAiSdk(aiPrompt.slice(0, 3));
  const second = fromAiSdk(aiPrompt);
  const m1 = measure(first);
  const m2 = measure(second, m1);
  assert.equal(m2.cached, m1.tokens);
  assert.equal(m2.extendsPrevious, true);
  assert.equal(m2.tokens, pieces(second).reduce((n, p) => n + countTokens(p), 0));
  const edited = fromAiSdk([aiPrompt[0], { role: 'user', content: [{ type: 'text', text: 'List the folders.' }] }, ...aiPrompt.slice(2)]);
  const m3 = measure(edited, m2);
  assert.equal(m3.extendsPrevious, false);
  assert.ok(m3.cached < m2.tokens / 2, `only the system prompt and the start of the edited message are cached (${m3.cached})`);
  assert.ok(m3.cached >= countTokens(pieces(edited)[1]));
});

test('the scorer: cache cost, windows, orphans, needles in the prompt or the store', () => {
  const first = fromAiSdk(aiPrompt.slice(0, 3));
  const second = fromAiSdk(aiPrompt.slice(0, 4));
  const t1 = measure(first).tokens;
  const t2 = measure(second).tokens;
  const scorer = new Scorer(t2 - 1);
  scorer.call(first);
  scorer.call(second);
  scorer.needle({ id: 'in', value: 'b.txt' }, second);
  scorer.needle({ id: 'stored', value: 'c.txt' }, second);
  scorer.needle({ id: 'lost', value: 'd.txt' }, second);
  const r = scorer.result((v) => v === 'c.txt');
  assert.equal(r.inputTokens, t1 + t2);
  assert.equal(r.cost, Math.round(CACHE_WRITE * t1 + CACHE_READ * t1 + CACHE_WRITE * (t2 - t1)));
  assert.equal(r.overWindow, 1);
  assert.equal(r.orphanedCalls, 1, 'the first prompt ends with an unanswered call');
  assert.equal(r.prefixBreaks, 0);
  assert.deepEqual([r.needlesInPrompt, r.needlesRecoverable, r.needlesLost], [1, 1, ['lost']]);
});

test('the replay splits turns at user messages and refuses a step the session does not have', () => {
  const session = { name: 't', messages: [{ role: 'user', content: 'hi' }, ...aiPrompt.slice(2), { role: 'user', content: 'again' }, { role: 'assistant', content: [{ type: 'text', text: 'ok' }] }] };
  const replay = new Replay(session);
  assert.deepEqual(replay.turns.map((t) => [t.index, t.steps.length]), [[0, 2], [4, 1]]);
  assert.equal(replay.output('c1'), 'a.txt\nb.txt');
  replay.begin(1);
  replay.next();
  assert.equal(replay.done, true);
  assert.throws(() => replay.next(), /turn 1 has 1 steps/);
  assert.throws(() => replay.output('nope'), /no recorded output/);
});

test('the scripted summary depends on its input only, and keeps none of it', () => {
  assert.equal(scriptedSummary('alpha NEEDLE-1'), scriptedSummary('alpha NEEDLE-1'));
  assert.notEqual(scriptedSummary('alpha NEEDLE-1'), scriptedSummary('alpha NEEDLE-2'));
  assert.ok(!scriptedSummary('alpha NEEDLE-1').includes('NEEDLE'));
});

test('the CI check flags the regressions it is for, and passes a healthy run', async () => {
  const { check } = await import('../lib/check.mjs');
  const base = { session: 's', window: 32_000, calls: 100, needles: 3, needlesLost: [] };
  const none = { ...base, contender: 'none', prefixBreaks: 0, needlesInPrompt: 3, needlesRecoverable: 0, overWindow: 80, cost: 1000 };
  const ours = { ...base, contender: 'context-compactor smart', prefixBreaks: 8, summarizerCalls: 8, needlesInPrompt: 1, needlesRecoverable: 2, overWindow: 0, orphanedCalls: 0, cost: 300 };
  assert.deepEqual(check([none, ours]), []);
  const resummarizing = { ...ours, summarizerCalls: 90, prefixBreaks: 90 };
  assert.equal(check([none, resummarizing]).length, 2);
  assert.match(check([none, { ...ours, needlesRecoverable: 1, needlesLost: ['n2'] }])[0], /needles lost: n2/);
  assert.match(check([none, { ...ours, cost: 900 }])[0], /over 80 %/);
  assert.match(check([{ ...none, overWindow: 0 }, ours])[0], /never overflows/);
  assert.match(check([none, { ...ours, error: 'boom' }])[0], /boom/);
});
