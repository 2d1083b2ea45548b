// Planning a 2,000-message, ~200k-token conversation (the corpus conversation with long texts
// cut, deterministically) for a 128k window: the first plan (in this process and in 10 fresh
// ones), a re-plan after one appended message over and under the trigger, usage(); and LangChain
// trimMessages fitting the same messages into the same budget with gpt-tokenizer (per-message
// memo, as a careful user writes it). Prints JSON.
//
//   node bench/tokenizers/plan.mjs [--dist DIR]   the package build to measure (default js/dist;
//                                                 a copy of an older build compares before/after)
//   (--first-only: one fresh process's first plan, what the 10 fresh processes run)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { planConversation } from './plan-conversation.mjs';

const median = (a) => { const b = [...a].sort((x, y) => x - y); return b[Math.floor(b.length / 2)]; };
const arg = (name) => { const i = process.argv.indexOf(name); return i < 0 ? undefined : process.argv[i + 1]; };
const dist = arg('--dist') ?? fileURLToPath(new URL('../../js/dist', import.meta.url));
// CPU time of this thread in ms (Linux), beside the wall time: the engine compiles hot wasm
// functions again on other threads, which a loaded machine makes the main thread wait for.
const threadCpuMs = () => {
  try {
    return Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
  } catch {
    return NaN;
  }
};
const baseRssMB = process.memoryUsage().rss / 2 ** 20;
const messages = planConversation();
const cc = await import(pathToFileURL(`${dist}/entry/node.js`).href);
await cc.init();
const compactor = await cc.createCompactor({ model: 'gpt-4o' });

let t0 = performance.now();
let cpu0 = threadCpuMs();
const first = compactor.plan(messages);
const firstPlanMs = performance.now() - t0;
const firstPlanCpuMs = threadCpuMs() - cpu0;
if (process.argv.includes('--first-only')) {
  console.log(JSON.stringify({ firstPlanMs, firstPlanCpuMs }));
  process.exit(0);
}
// The first plan in fresh processes (the engine compiles the core anew in each).
const fresh10 = Array.from({ length: 10 }, () => JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--first-only', '--dist', dist], { encoding: 'utf8' })));
const spread = (values) => { const v = [...values].sort((x, y) => x - y); return { min: v[0], median: median(v), max: v.at(-1) }; };
// The same conversation with every text changed (nothing cached), planned by a new compactor
// in this warmed-up process: the first-plan cost without the engine's one-time compilation.
const other = messages.map((m) => (typeof m.content === 'string' ? { ...m, content: `~${m.content}` }
  : { ...m, content: m.content.map((p) => (p.type === 'text' ? { ...p, text: `~${p.text}` } : p)) }));
const fresh = await cc.createCompactor({ model: 'gpt-4o' });
t0 = performance.now();
fresh.plan(other);
const firstPlanWarmMs = performance.now() - t0;
// The core's share of each re-plan: the wasm binding's own plan call, timed around it.
const { WasmCompactor } = await import(pathToFileURL(`${dist}/wasm/context_compactor.js`).href);
const corePlan = WasmCompactor.prototype.plan;
let coreMs = 0;
WasmCompactor.prototype.plan = function (...args) {
  const start = performance.now();
  try { return corePlan.apply(this, args); } finally { coreMs += performance.now() - start; }
};
// Below the trigger (a 1M window, gpt-4.1): the call an agent makes before every step.
const roomy = await cc.createCompactor({ model: 'gpt-4.1' });
roomy.plan(messages);
const replanUnder = [], replanUnderCore = [];
for (let i = 0; i < 15; i++) {
  const grown = [...messages, { role: 'user', content: `Follow-up ${i}: anything else?` }];
  coreMs = 0;
  t0 = performance.now();
  roomy.plan(grown);
  replanUnder.push(performance.now() - t0);
  replanUnderCore.push(coreMs);
}
const replan = [], replanCore = [], usage = [];
for (let i = 0; i < 7; i++) {
  const grown = [...messages, { role: 'user', content: `Follow-up ${i}: what changed in the build since the last run?` }];
  coreMs = 0;
  t0 = performance.now();
  compactor.plan(grown);
  replan.push(performance.now() - t0);
  replanCore.push(coreMs);
  t0 = performance.now();
  compactor.usage(grown);
  usage.push(performance.now() - t0);
}

// With the compaction record in place: the conversation was compacted once (manage), and the
// next call brings one more message, either on the compacted output (a long-lived host) or on
// the raw history (a stateless host, or fresh objects): the record is replayed every time.
const kept = await cc.createCompactor({ model: 'gpt-4o' });
const compacted = (await kept.manage(messages)).messages;
// Each host shape on its own (alternating them would re-send the whole conversation each time).
const recordCompacted = [], recordRaw = [];
for (let i = 0; i < 15; i++) {
  const onCompacted = [...compacted, { role: 'user', content: `Follow-up ${i}: and the tests?` }];
  t0 = performance.now();
  kept.plan(onCompacted);
  recordCompacted.push(performance.now() - t0);
}
for (let i = 0; i < 15; i++) {
  const onRaw = [...messages, { role: 'user', content: `Follow-up ${i}: and the tests?` }];
  t0 = performance.now();
  kept.plan(onRaw);
  recordRaw.push(performance.now() - t0);
}
const stateBytes = JSON.stringify(kept.state()).length;

// LangChain trimMessages on the same messages and budget.
const { AIMessage, HumanMessage, SystemMessage, ToolMessage, trimMessages } = await import('@langchain/core/messages');
const { countTokens: gptCount } = await import('gpt-tokenizer/encoding/o200k_base');
function toLangChain(msgs) {
  const out = [];
  for (const m of msgs) {
    if (m.role === 'system') out.push(new SystemMessage(m.content));
    else if (m.role === 'user') out.push(new HumanMessage({ content: typeof m.content === 'string' ? m.content : m.content.map((p) => ({ type: 'text', text: p.text })) }));
    else if (m.role === 'assistant') {
      if (typeof m.content === 'string') { out.push(new AIMessage(m.content)); continue; }
      const text = m.content.filter((p) => p.type === 'text').map((p) => p.text).join('\n');
      const tool_calls = m.content.filter((p) => p.type === 'tool-call').map((p) => ({ id: p.toolCallId, name: p.toolName, args: p.input, type: 'tool_call' }));
      out.push(new AIMessage({ content: text, tool_calls }));
    } else for (const p of m.content) out.push(new ToolMessage({ content: p.output.type === 'text' ? p.output.value : JSON.stringify(p.output.value), tool_call_id: p.toolCallId, name: p.toolName }));
  }
  return out;
}
const msgText = (m) => (typeof m.content === 'string' ? m.content : m.content.map((b) => (b.type === 'text' ? b.text : JSON.stringify(b))).join('\n'))
  + (m.tool_calls?.length ? '\n' + m.tool_calls.map((c) => `${c.name}(${JSON.stringify(c.args)})`).join('\n') : '');
const lc = toLangChain(messages);
const trim = [];
for (const [label, memo] of [['gpt-tokenizer o200k, per-message memo', true]]) {
  const ms = [];
  for (let r = 0; r < 3; r++) {
    const cache = new WeakMap();
    const one = (m) => { let n = memo ? cache.get(m) : undefined; if (n === undefined) { n = gptCount(msgText(m)) + 3; if (memo) cache.set(m, n); } return n; };
    const counter = (msgs) => msgs.reduce((a, m) => a + one(m), 0);
    t0 = performance.now();
    await trimMessages(lc, { maxTokens: first.trigger?.window ?? 128_000, tokenCounter: counter, strategy: 'last', includeSystem: true, startOn: 'human' });
    ms.push(performance.now() - t0);
  }
  trim.push({ counter: label, ms: median(ms) });
}

console.log(JSON.stringify({
  messages: messages.length,
  tokens: first.tokensBefore,
  window: compactor.model.contextWindow,
  actions: first.actions.length,
  firstPlanMs,
  firstPlanCpuMs,
  firstPlanFresh: { runs: fresh10.length, ms: spread(fresh10.map((r) => r.firstPlanMs)), cpuMs: spread(fresh10.map((r) => r.firstPlanCpuMs)) },
  firstPlanWarmMs,
  replanMs: median(replan),
  replanCoreMs: median(replanCore),
  replanUnderMs: median(replanUnder),
  replanUnderCoreMs: median(replanUnderCore),
  underWindow: roomy.model.contextWindow,
  usageMs: median(usage),
  replanRecordCompactedMs: median(recordCompacted),
  replanRecordRawMs: median(recordRaw),
  recordedEdits: kept.state().record?.edits.length ?? 0,
  stateBytes,
  trim,
  maxRssMB: process.resourceUsage().maxRSS / 1024,
  baseRssMB,
}));
