// node examples/ai-sdk-agent/index.mjs — prints each compaction event and the prompt sizes.
import { countTokens } from 'context-compactor';
import { runAgent } from './agent.mjs';

const { prompts, store, compactor, text } = await runAgent({
  onEvent: (e) => console.log(`  event: ${e.status} ${e.strategy} message ${e.messageIndex} → ${e.path} (−${e.tokensSaved} tokens)`),
});
console.log(`\n${prompts.length} model calls, window ${compactor.model.contextWindow}:`);
for (const [i, prompt] of prompts.entries()) {
  console.log(`  call ${i}: ${compactor.usage(prompt).tokens} tokens in ${prompt.length} messages`);
}
console.log(`\nstore: ${(await store.list('/')).length} files; final answer: ${text}`);
console.log(`stats: ${JSON.stringify(compactor.stats().byStrategy)}`);
console.log(`(one raw search result alone is ${countTokens((await store.read((await store.list('/'))[0])) ?? '')} tokens)`);
