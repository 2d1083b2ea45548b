// node examples/ai-sdk-agent/index.mjs — an AI SDK 7 agent (mock model, scripted tools) over 30
// steps in an 8k window: prints each compaction event as it happens and every prompt's size.
import { countTokens } from 'context-compactor';
import { runLongAgent } from './agent.mjs';

const { prompts, store, compactor, summaryRequests, text } = await runLongAgent({
  onEvent: (e) =>
    console.log(`  event: ${e.status.padEnd(8)} ${e.strategy.padEnd(10)} −${String(e.tokensSaved).padStart(6)} tokens${e.path ? ` → ${e.path}` : ''}`),
});
const window = compactor.model.contextWindow;
console.log(`\n${prompts.length} model calls, window ${window}:`);
console.log('  ' + prompts.map((p, i) => `${i}:${compactor.usage(p).tokens}`).join('  '));
const largest = Math.max(...prompts.map((p) => compactor.usage(p).tokens));
console.log(`largest prompt: ${largest} tokens (${((100 * largest) / window).toFixed(0)} % of the window)`);
const files = await store.list('/');
console.log(`store: ${files.length} files; summaries written by the summarizer model: ${summaryRequests.length}`);
console.log(`stats: ${compactor.stats().compactions} compactions, ${compactor.stats().tokensSaved} tokens saved`);
console.log(`(one raw search result alone is ${countTokens((await store.read(files.find((f) => f.includes('search'))))) ?? ''} tokens)`);
console.log(`final answer: ${text}`);
