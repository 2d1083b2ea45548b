// The demo: compacts a bundled long agent session with no API key, and shows the plan, the
// tokens before and after, and where the content went.  Run: bash scripts/demo.sh
import { MemoryStore, countTokens, createCompactor, init } from 'context-compactor';
import { session } from './session.mjs';

const t0 = performance.now();
await init();
countTokens('warm up', 'o200k_base');
const initMs = performance.now() - t0; // cold start: instantiate + load the o200k tables + one count
const messages = session();
const store = new MemoryStore();
// gpt-4o with a 28k-token budget (apps often budget below the model's window to bound cost).
const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 28_000, store });
const fmt = (n) => n.toLocaleString('en-US');

const before = compactor.usage(messages);
console.log(`Session: ${messages.length} messages, ${fmt(before.tokens)} tokens (o200k_base, exact) — ` +
  `${(before.fraction * 100).toFixed(0)}% of a ${fmt(before.window)}-token budget for gpt-4o.\n`);

const t1 = performance.now();
const plan = compactor.plan(messages);
const planMs = performance.now() - t1;
console.log(`Plan (${plan.actions.length} actions, computed in ${planMs.toFixed(1)} ms, predicted ${fmt(plan.tokensBefore)} → ${fmt(plan.tokensAfter)} tokens):`);
for (const a of plan.actions) {
  const what = a.replace.kind === 'input-field' ? `${a.toolName} input \`${a.replace.field}\`` : `${a.toolName} result`;
  console.log(`  ${a.type.padEnd(11)} ${what} in message ${a.messageIndex}: ${fmt(a.tokensBefore)} → ${fmt(a.tokensAfter)} tokens → ${a.path}`);
}
for (const note of plan.notes) console.log(`  note: ${JSON.stringify(note)}`);
console.log(`  tier 2 ${plan.trigger.tier2 ? 'ran' : 'not needed'} (fires above ${fmt(plan.trigger.compactAt)}, compacts to ${fmt(plan.trigger.target)}); ` +
  `prompt cache: ${plan.cache.prefixChangingEdits} edits to earlier messages, first at message ${plan.cache.firstChangedMessage}`);

const { messages: compacted, events } = await compactor.manage(messages);
const after = compactor.usage(compacted);
console.log(`\nApplied: ${events.filter((e) => e.status === 'applied').length} of ${events.length} actions. ` +
  `Tokens ${fmt(before.tokens)} → ${fmt(after.tokens)} (${(after.fraction * 100).toFixed(1)}% of the budget, −${(100 - (after.tokens / before.tokens) * 100).toFixed(1)}%).`);

console.log('\nWhere the content went (the demo\'s MemoryStore, which lives as long as this process: an app gives a NodeFsStore, Redis, KV or S3 store; a file is counted as the text it holds, where the plan counted the part in its message: a JSON output compact, a written file as an escaped string):');
for (const path of await store.list('/')) {
  const text = await store.read(path);
  console.log(`  ${path}  ${fmt(text.length)} chars, ${fmt(countTokens(text))} tokens`);
}
for (const type of ['offload', 'evict-input', 'dedupe', 'mask']) {
  const action = plan.actions.find((a) => a.type === type);
  if (!action) continue;
  const part = compacted[action.messageIndex].content[action.partIndex];
  const shown = action.replace.kind === 'input-field' ? part.input[action.replace.field] : part.output.value;
  const lines = shown.split('\n');
  console.log(`\nWhat the model now sees for ${action.id}:\n${lines.slice(0, 6).map((l) => '  │ ' + l).join('\n')}${lines.length > 6 ? `\n  │ … (${lines.length - 6} more preview lines)` : ''}`);
}

const again = compactor.plan(compacted);
console.log(`\nRe-planning the compacted session: ${again.actions.length} actions (idempotent). Cold start (init to first o200k count): ${initMs.toFixed(0)} ms.`);
console.log(`Stats: ${JSON.stringify(compactor.stats().byStrategy)}`);
