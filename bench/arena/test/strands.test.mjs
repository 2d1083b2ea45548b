// The Strands Agents contender (`contenders/strands.mjs`): its prompts in the arena's form, and
// its `'auto'` context manager driven through the SDK on hand-made sessions — truncation with a
// stash reference, summaries at the window the model reports, needles reachable only by reference,
// and the reject-and-retry path on a prompt over the window.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { Message, TextBlock, ToolResultBlock, ToolUseBlock } from '@strands-agents/sdk';
import { init } from 'context-compactor';
import { Recorder } from '../lib/arena.mjs';
import { fromAiSdk, fromStrands, pieces } from '../lib/prompt.mjs';
import { runStrands } from '../contenders/strands.mjs';

before(() => init());

const schema = { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] };

test('the same conversation gives the same prompt from Strands and from the AI SDK', () => {
  const ai = fromAiSdk(
    [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: [{ type: 'text', text: 'Find it.' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'web_search', input: { query: 'it' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'web_search', output: { type: 'text', value: 'found' } }] },
      { role: 'assistant', content: [{ type: 'text', text: 'Here.' }] },
    ],
    [{ type: 'function', name: 'web_search', description: 'Search', inputSchema: schema }],
  );
  const messages = [
    new Message({ role: 'user', content: [new TextBlock('Find it.')] }),
    new Message({ role: 'assistant', content: [new TextBlock('Looking.'), new ToolUseBlock({ name: 'web_search', toolUseId: 'c1', input: { query: 'it' } })] }),
    new Message({ role: 'user', content: [new ToolResultBlock({ toolUseId: 'c1', status: 'success', content: [new TextBlock('found')] })] }),
    new Message({ role: 'assistant', content: [new TextBlock('Here.')] }),
  ];
  const strands = fromStrands(messages, [{ name: 'web_search', description: 'Search', inputSchema: schema }], 'You are terse.');
  assert.deepEqual(pieces(strands), pieces(ai));
  assert.deepEqual(strands.messages.map((m) => m.role), ['user', 'assistant', 'tool', 'assistant']);
  assert.deepEqual(strands.messages.map((m) => m.results), [[], [], ['c1'], []]);
  // A system prompt given as content blocks reads as its text.
  assert.equal(fromStrands(messages, [], [new TextBlock('You are terse.')]).system, 'You are terse.');
});

const lines = (tag, n) => Array.from({ length: n }, (_, i) => `${tag} line ${i} value=${(i * 7919) % 10007} status ok`).join('\n');

/** 6 turns of 4 searches (~5k tokens each, one hiding a needle mid-way), a needle in the second
 * user message (Strands never removes the first message), both asked about in turn 5. */
function searchSession() {
  const messages = [];
  const needles = [];
  let id = 0;
  for (let t = 0; t < 6; t++) {
    const user = t === 1 ? 'Task 1: look things up. My badge number is USER-NEEDLE-4471.' : t === 5 ? 'What were my badge number and the secret code?' : `Task ${t}: look things up.`;
    messages.push({ role: 'user', content: user });
    if (t === 1) needles.push({ id: 'user', value: 'USER-NEEDLE-4471', messageIndex: messages.length - 1, kind: 'user' });
    if (t === 5) for (const n of needles) n.neededAt = messages.length - 1;
    for (let s = 0; s < 4; s++) {
      const toolCallId = `call_${id++}`;
      messages.push({ role: 'assistant', content: [{ type: 'text', text: `Step ${s}. ${lines(`plan${t}${s}`, 20)}` }, { type: 'tool-call', toolCallId, toolName: 'web_search', input: { query: `q${t}-${s}` } }] });
      let value = lines(`t${t}s${s}`, 500);
      if (t === 0 && s === 1) {
        value = value.replace('line 250 ', 'line 250 TOOL-NEEDLE-8812 ');
        needles.push({ id: 'tool', value: 'TOOL-NEEDLE-8812', messageIndex: messages.length, kind: 'tool' });
      }
      messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: 'web_search', output: { type: 'text', value } }] });
    }
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Done with task ${t}.` }] });
  }
  const tools = { web_search: { description: 'Search the web', inputSchema: schema } };
  return { name: 'search', description: 'search', system: 'You are a research agent.', tools, messages, needles };
}

/** Runs the contender, keeping every main and summarizer prompt. */
async function run(session, window) {
  const recorder = new Recorder(session, window);
  const prompts = [];
  const summaries = [];
  const call = recorder.call.bind(recorder);
  recorder.call = (build, replay) => call(() => prompts[prompts.push(build()) - 1], replay);
  const summary = recorder.summary.bind(recorder);
  recorder.summary = (prompt, options) => {
    summaries.push({ at: prompts.length, prompt });
    return summary(prompt, options);
  };
  const { stored } = await runStrands(session, { window, recorder });
  return { result: recorder.scorer.result(stored), prompts, summaries };
}

test("'auto' truncates a large result as it arrives, leaving a preview and a stash reference", async () => {
  const { result, prompts } = await run(searchSession(), 32_000);
  assert.equal(result.calls, 30);
  assert.equal(result.overWindow, 0);
  assert.equal(result.orphanedCalls, 0);
  // The first prompt that carries call_0's result already has the preview, never the full output.
  const first = prompts[1].messages.find((m) => m.results.includes('call_0'));
  assert.match(first.text, /^<tool_result id="call_0">\[Truncated: 1 block, ~[\d,]+ tokens\]/);
  assert.match(first.text, /\[ref: call_0_0\]/);
  assert.ok(!first.text.includes('t0s0 line 250 '), 'the middle of the output is elided');
  // The context manager's retrieval tool is offered beside the session's.
  assert.deepEqual(JSON.parse(prompts[0].tools).map((t) => t.name), ['web_search', 'retrieve_context']);
});

test("'auto' summarizes at 0.85 of the window the model reports, through the agent's model", async () => {
  const { result, prompts, summaries } = await run(searchSession(), 32_000);
  assert.ok(result.summarizerCalls >= 1, `${result.summarizerCalls} summaries`);
  for (const { prompt } of summaries) {
    assert.ok(prompt.system.startsWith('You are a summarization assistant.'), prompt.system);
    assert.ok(prompt.messages[0].text.startsWith('<content>'));
  }
  const after = prompts[summaries[0].at];
  assert.ok(after.messages.some((m) => m.text.includes('[Summarized: ')), 'the summary replaces the history');
  // The same session in a 1M window (`contextWindowLimit`) never reaches 0.85: no summary.
  const wide = await run(searchSession(), 1_000_000);
  assert.equal(wide.result.summarizerCalls, 0);
  assert.equal(wide.result.prefixBreaks, 0);
});

test('a needle counts as stored only where the prompt kept a reference to its stash entry', async () => {
  const { result } = await run(searchSession(), 32_000);
  // The tool needle sits in a truncated result whose preview carries `[ref: call_1_0]`.
  assert.equal(result.needlesRecoverable, 1);
  // The user's badge number was summarized away: the stash holds that message too, but nothing in
  // any prompt names its key, so `retrieve_context` cannot reach it.
  assert.deepEqual(result.needlesLost, ['user']);
});

/** Chat turns in CJK text, which Strands' estimate (characters / 4) counts ~7× under o200k: five
 * of ~2.8k tokens, then one of ~21k. Each call's usage corrects the estimate of the history, but
 * the new message is estimated, so the last prompt goes over the window unforeseen. */
function cjkSession() {
  const cjk = (n, seed) => Array.from({ length: n }, (_, i) => String.fromCharCode(0x4e00 + ((i * 7919 + seed * 104729) % 20000))).join('');
  const messages = [];
  for (let t = 0; t < 6; t++) {
    messages.push({ role: 'user', content: `Turn ${t}: ${cjk(t === 5 ? 11_000 : 1_500, t)}` });
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Answer ${t}.` }] });
  }
  return { name: 'cjk', description: 'cjk', system: 'You are a translator.', tools: {}, messages, needles: [] };
}

test('a prompt over the window is rejected as a provider would, and the context manager reduces and retries', async () => {
  const { result, prompts, summaries } = await run(cjkSession(), 32_000);
  // The rejected call is counted, then the same step is retried after the overflow path
  // summarized the older turns (its utilization gate bypassed).
  assert.equal(result.overWindow, 1);
  assert.equal(result.calls, 6 + 1);
  assert.equal(summaries.length, 1);
  assert.equal(summaries[0].at, 6, 'the summary comes after the rejected sixth call');
  assert.ok(result.largestPrompt > 32_000);
  assert.ok(prompts.at(-1).messages.some((m) => m.text.includes('[Summarized: ')));
  assert.ok(prompts.at(-1).messages.at(-1).text.startsWith('Turn 5: '));
});
