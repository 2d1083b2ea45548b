// The framework adapters' tests (langchain.test.mjs, openai-agents.test.mjs) run the same agent:
// 30 `run_query` steps whose outputs (~3,000 tokens) are over the offload threshold, a
// `read_file` of the first stored output at request 21, in a 12,000-token window.
import { MemoryStore, createCompactor } from '../dist/entry/node.js';

export const WINDOW = 12_000;
export const STEPS = 30;

/** The output of query `i`: numbered rows, ~3,000 tokens. */
export const output = (i) => Array.from({ length: 150 }, (_, r) => `row ${i}.${r}: metric=${(i * 7919 + r * 104729) % 100003} status=ok region=eu-${r % 5}`).join('\n');

/** What the scripted agent does at model request `n` (1-based): `{read: path}`, `{query: i}` or
 * `{done: true}`. */
export function stepOf(n, firstPath) {
  if (n === 21 && firstPath) return { read: firstPath };
  if (n <= STEPS + 1) return { query: n > 21 ? n - 1 : n };
  return { done: true };
}

/** A compactor for the loop, with a scripted summarizer, and `loop`: what it offloaded (`{id,
 * path, out}`, spied on `offloadToolOutput`), the first offload's path and the summaries made. */
export async function loopCompactor() {
  const store = new MemoryStore();
  const loop = { offloads: [], firstPath: undefined, summaries: 0, results: [] };
  const compactor = await createCompactor({
    model: 'gpt-4o',
    contextWindow: WINDOW,
    store,
    summarize: async ({ prompt }) => (loop.summaries++, `## Session Intent\nRun the queries.\n\n## Progress\nSummarized ${prompt.length} characters.`),
  });
  const original = compactor.offloadToolOutput.bind(compactor);
  compactor.offloadToolOutput = async (name, id, out) => {
    const preview = await original(name, id, out);
    if (preview !== out) {
      const path = /Full content: (\S+?)\]/.exec(preview)?.[1];
      loop.offloads.push({ id, path, out });
      loop.firstPath ??= path;
    }
    return preview;
  };
  return { compactor, store, loop };
}

/** The checks both tests make after the run. */
export async function checkLoop(assert, { store, loop }) {
  assert.equal(loop.offloads.length, STEPS, 'every query offloaded as it returned');
  for (const { path, out } of loop.offloads) assert.equal(await store.read(path), out, path);
  const events = loop.results.flatMap((r) => r.events);
  assert.ok(events.some((e) => e.strategy === 'summarize' && e.status === 'applied'), `strategies: ${[...new Set(events.map((e) => e.strategy))]}`);
  assert.ok(loop.summaries >= 1);
  assert.ok((await store.list('/conversation_history/')).length >= 2);
}
