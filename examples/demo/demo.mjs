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
const compactor = await createCompactor({ model: 'gpt-4o', store });
const fmt = (n) => n.toLocaleString('en-US');

const before = compactor.usage(messages);
console.log(`Session: ${messages.length} messages, ${fmt(before.tokens)} tokens (o200k_base, exact) — ` +
  `${(before.fraction * 100).toFixed(0)}% of gpt-4o's ${fmt(before.window)}-token window.\n`);

const t1 = performance.now();
const plan = compactor.plan(messages);
const planMs = performance.now() - t1;
console.log(`Plan (${plan.actions.length} actions, computed in ${planMs.toFixed(1)} ms, predicted ${fmt(plan.tokensBefore)} → ${fmt(plan.tokensAfter)} tokens):`);
for (const a of plan.actions) {
  console.log(`  ${a.id.padEnd(14)} ${a.type} ${a.toolName} result in message ${a.messageIndex}: ${fmt(a.tokensBefore)} → ${fmt(a.tokensAfter)} tokens → ${a.path}`);
}
for (const note of plan.notes) console.log(`  note: ${JSON.stringify(note)}`);

const { messages: compacted, events } = await compactor.manage(messages);
const after = compactor.usage(compacted);
console.log(`\nApplied: ${events.filter((e) => e.status === 'applied').length} of ${events.length} actions. ` +
  `Tokens ${fmt(before.tokens)} → ${fmt(after.tokens)} (${(after.fraction * 100).toFixed(1)}% of the window, −${(100 - (after.tokens / before.tokens) * 100).toFixed(1)}%).`);

console.log('\nWhere the content went (store):');
for (const path of await store.list('/')) {
  const text = await store.read(path);
  console.log(`  ${path}  ${fmt(text.length)} chars, ${fmt(countTokens(text))} tokens`);
}
const example = compacted[plan.actions[0].messageIndex].content[0].output.value;
console.log(`\nWhat the model now sees in message ${plan.actions[0].messageIndex}:\n${example.split('\n').map((l) => '  │ ' + l).join('\n')}`);

const again = compactor.plan(compacted);
console.log(`\nRe-planning the compacted session: ${again.actions.length} actions (idempotent). Cold start (init to first o200k count): ${initMs.toFixed(0)} ms.`);
console.log(`Stats: ${JSON.stringify(compactor.stats().byStrategy)}`);
