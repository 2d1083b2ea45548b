// Every contender driven through its own package on a small hand-made session (6 turns, 24 tool
// calls of ~15k tokens each, one needle deep in an early result) in a 32k window.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { init } from 'context-compactor';
import { CONTENDERS, runOne } from '../lib/arena.mjs';

const lines = (tag, n) => Array.from({ length: n }, (_, i) => `${tag} line ${i} value=${(i * 7919) % 10007} status ok`).join('\n');

function miniSession() {
  const messages = [];
  const needles = [];
  let id = 0;
  for (let t = 0; t < 6; t++) {
    messages.push({ role: 'user', content: t === 4 ? 'What was the secret code in the first search?' : `Task ${t}: look things up.` });
    if (t === 4) needles[0].neededAt = messages.length - 1;
    for (let s = 0; s < 4; s++) {
      const toolCallId = `call_${id++}`;
      messages.push({ role: 'assistant', content: [{ type: 'text', text: `step ${s}` }, { type: 'tool-call', toolCallId, toolName: 'web_search', input: { query: `q${t}-${s}` } }] });
      let value = lines(`t${t}s${s}`, 1500);
      if (t === 0 && s === 1) {
        value = value.replace('line 700 ', 'line 700 SECRET-CODE-ZEBRA-991 ');
        needles.push({ id: 'n1', value: 'SECRET-CODE-ZEBRA-991', messageIndex: messages.length, kind: 'tool' });
      }
      messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: 'web_search', output: { type: 'text', value } }] });
    }
    messages.push({ role: 'assistant', content: [{ type: 'text', text: t === 4 ? 'It was SECRET-CODE-ZEBRA-991.' : `Done with task ${t}.` }] });
  }
  const tools = { web_search: { description: 'Search the web', inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } } };
  return { name: 'mini', description: 'mini', system: 'You are a research agent.', tools, messages, needles };
}

const results = new Map();
before(async () => {
  await init();
  const session = miniSession();
  for (const c of CONTENDERS) results.set(c.name, await runOne(c, session, 32_000));
});

test('every contender runs the whole session through its own package', () => {
  for (const [name, r] of results) {
    if (!sqlite && CLOUDFLARE.includes(name)) continue; // the test below
    assert.equal(r.error, undefined, `${name}: ${r.error}`);
    assert.ok(r.calls >= 30, `${name}: ${r.calls} calls`);
  }
});

test('unmanaged: prompts only grow (no prefix breaks), overflow the window, keep the needle', () => {
  const r = results.get('none');
  assert.equal(r.calls, 30);
  assert.equal(r.prefixBreaks, 0);
  assert.ok(r.overWindow > 20, `${r.overWindow}`);
  assert.equal(r.needlesInPrompt, 1);
});

test('pruneMessages rewrites the history every step, and the needle is gone', () => {
  const r = results.get('ai-sdk pruneMessages');
  assert.ok(r.prefixBreaks > 15, `${r.prefixBreaks}`);
  assert.equal(r.needlesInPrompt + r.needlesRecoverable, 0);
});

test('the LangChain summarizers call the scripted summarizer', () => {
  assert.ok(results.get('langchain summarization').summarizerCalls > 0);
  assert.ok(results.get('deepagents').summarizerCalls > 0);
  assert.ok(results.get('langchain context-editing').inputTokens < results.get('none').inputTokens);
});

test('context-compactor: inside the window, pairs intact, the needle recoverable from the store, cheapest', () => {
  for (const preset of ['simple', 'smart', 'aggressive']) {
    const r = results.get(`context-compactor ${preset}`);
    assert.equal(r.overWindow, 0, preset);
    assert.equal(r.orphanedCalls, 0, preset);
    assert.equal(r.needlesInPrompt + r.needlesRecoverable, 1, preset);
    for (const [name, other] of results) if (!name.includes('context-compactor')) assert.ok(r.cost < other.cost, `${preset} ${r.cost} vs ${name} ${other.cost}`);
  }
});

test('LangChain createAgent with the context-compactor middleware: inside the window, pairs intact, the needle recoverable, cheaper than the LangChain peers', () => {
  const r = results.get('langchain + context-compactor smart');
  assert.equal(r.error, undefined, r.error);
  assert.equal(r.overWindow, 0);
  assert.equal(r.orphanedCalls, 0);
  assert.equal(r.needlesInPrompt + r.needlesRecoverable, 1);
  for (const peer of ['langchain summarization', 'langchain context-editing', 'deepagents']) assert.ok(r.cost < results.get(peer).cost, `${r.cost} vs ${peer} ${results.get(peer).cost}`);
});

test('a Mastra Agent with the context-compactor processor: inside the window, pairs intact, the needle recoverable, cheaper than Mastra\'s own processors', () => {
  const r = results.get('mastra + context-compactor smart');
  const peer = results.get('mastra token-limiter');
  assert.equal(r.error, undefined, r.error);
  assert.equal(peer.error, undefined, peer.error);
  assert.equal(r.overWindow, 0);
  assert.equal(r.orphanedCalls, 0);
  assert.equal(r.needlesInPrompt + r.needlesRecoverable, 1);
  assert.ok(r.cost < peer.cost, `${r.cost} vs mastra token-limiter ${peer.cost}`);
});

test('the OpenAI Agents SDK: unmanaged, the AI SDK\'s prompts; with the context-compactor adapter, prepareStep\'s prompts, byte for byte', () => {
  for (const [name, base] of [['openai-agents none', 'none'], ['openai-agents + context-compactor smart', 'context-compactor smart']]) {
    const r = results.get(name);
    assert.equal(r.error, undefined, `${name}: ${r.error}`);
    assert.deepEqual(r.promptDigests, results.get(base).promptDigests, `${name} against ${base}`);
    for (const key of ['cost', 'summarizerCalls', 'prefixBreaks', 'overWindow', 'orphanedCalls', 'needlesInPrompt', 'needlesRecoverable']) assert.equal(r[key], results.get(base)[key], `${name}: ${key}`);
  }
  assert.equal(results.get('openai-agents + context-compactor smart').overWindow, 0);
});

test('context-compactor as a stateless route handler and as middleware: inside the window, pairs intact, the needle recoverable', () => {
  for (const name of ['context-compactor smart (stateless)', 'context-compactor smart (middleware)']) {
    const r = results.get(name);
    assert.equal(r.error, undefined, `${name}: ${r.error}`);
    assert.equal(r.calls, results.get('none').calls, name);
    assert.equal(r.overWindow, 0, name);
    assert.equal(r.orphanedCalls, 0, name);
    assert.equal(r.needlesInPrompt + r.needlesRecoverable, 1, name);
    assert.ok(r.inputTokens < results.get('none').inputTokens / 2, `${name}: ${r.inputTokens} input tokens`);
  }
});

test('the stateless host keeps the compactor state in the shared store; the long-lived one does not', async () => {
  const { runAiSdk, STATE_PATH } = await import('../contenders/ai-sdk.mjs');
  const { Recorder } = await import('../lib/arena.mjs');
  const session = miniSession();
  const run = (host) => runAiSdk(session, { window: 32_000, kind: 'compactor', preset: 'smart', host, recorder: new Recorder(session, 32_000) });
  assert.ok((await run('stateless')).files.includes(STATE_PATH));
  assert.ok(!(await run('long-lived')).files.includes(STATE_PATH));
});

// Cloudflare Agents (contenders/cloudflare.mjs): Node 22.5+ (`node:sqlite` backs the Durable
// Object); on an older Node both rows fail with an error naming it.
const sqlite = await import('node:sqlite').then(
  () => true,
  () => false,
);
const CLOUDFLARE = ['cloudflare sessions compactAfter', 'cloudflare + context-compactor smart'];

test('the Cloudflare contenders on a Node without node:sqlite fail naming Node 22.5+', { skip: sqlite && 'node:sqlite is here' }, () => {
  for (const name of CLOUDFLARE) assert.match(results.get(name).error ?? '', /Node >= 22\.5/, name);
});

/** One Cloudflare run with every main-model prompt kept. */
async function cloudflareRun(kind) {
  const { runCloudflare } = await import('../contenders/cloudflare.mjs');
  const { Recorder } = await import('../lib/arena.mjs');
  const session = miniSession();
  const recorder = new Recorder(session, 32_000);
  const prompts = [];
  const call = recorder.call.bind(recorder);
  recorder.call = (build, replay) =>
    call(() => {
      const prompt = build();
      prompts.push(prompt);
      return prompt;
    }, replay);
  const run = await runCloudflare(session, { window: 32_000, kind, recorder });
  return { ...run, prompts, result: recorder.scorer.result(run.stored) };
}

test("Cloudflare Sessions' compactAfter: compacts at turn ends only, and the next prompts carry its summary overlay", { skip: !sqlite && 'needs node:sqlite (Node 22.5+)' }, async () => {
  const { result, compactions, history, prompts } = await cloudflareRun('builtin');
  assert.equal(result.calls, 30);
  assert.ok(result.summarizerCalls >= 1, `${result.summarizerCalls} summarizer calls`);
  assert.ok(compactions.length >= 1, `${compactions.length} compactions`);
  // The overlay: an assistant message `compaction_<id>` holding the scripted summary, in place
  // of the span it covers; the first three messages (head) stay verbatim.
  const overlay = history.find((m) => m.id.startsWith('compaction_'));
  assert.ok(overlay, 'no compaction overlay in the history');
  assert.equal(history[0].id, 'user-0');
  assert.match(overlay.parts[0].text, /^Summary [0-9a-f]{8} of \d+ characters\./);
  // The summaries reach the model as that assistant message (a turn end and the next user
  // message can each compact, the second updating the first's summary), up to the last prompt.
  const summaries = new Set(compactions.map((c) => c.summary));
  const carries = (p) => p.messages.some((m) => m.role === 'assistant' && summaries.has(m.text));
  assert.ok(prompts.filter(carries).length >= 5, `${prompts.filter(carries).length} prompts carry a summary`);
  assert.ok(carries(prompts.at(-1)), 'the last prompt carries no summary');
  // The Session is written only when a turn ends: inside a turn of four 15k-token outputs the
  // AI SDK's loop grows the prompt past the 32k window.
  assert.ok(result.overWindow > 0, `${result.overWindow} calls over the window`);
  assert.equal(result.orphanedCalls, 0);
  assert.equal(results.get('cloudflare sessions compactAfter').error, undefined);
});

test('Cloudflare with context-compactor/cloudflare: inside the window, the needle recoverable, outputs and state in the Durable Object storage, previews in the chat', { skip: !sqlite && 'needs node:sqlite (Node 22.5+)' }, async () => {
  const { result, files, history } = await cloudflareRun('compactor');
  assert.equal(result.calls, 30);
  assert.equal(result.overWindow, 0);
  assert.equal(result.orphanedCalls, 0);
  assert.equal(result.needlesInPrompt + result.needlesRecoverable, 1);
  assert.ok(files.includes('/state/compactor.json'), files.join(', '));
  assert.ok(files.filter((f) => f.startsWith('/tool_outputs/')).length >= 20, files.join(', '));
  // The chat the Session persists keeps the previews, not the outputs.
  const chat = JSON.stringify(history);
  assert.ok(!chat.includes('SECRET-CODE-ZEBRA-991 '), 'the full output is in the persisted chat');
  assert.ok(chat.includes('/tool_outputs/'), 'no preview naming a stored path in the persisted chat');
  assert.ok(result.cost < results.get('cloudflare sessions compactAfter').cost, `${result.cost} vs ${results.get('cloudflare sessions compactAfter').cost}`);
});
