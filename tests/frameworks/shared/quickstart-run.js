// The README's AI SDK quick start, as each framework app runs it on a request: `generateText`
// with `prepareStep: compactor.prepareStep` and the recovery tools, against a scripted model
// (no API key). Copied into every app of tests/frameworks (the runner puts it beside the app's
// route, with quickstart.js / quickstart-lite.js, which import the package's main or lite
// entry by name), so that each framework's own bundler resolves `context-compactor` and `ai` as
// a user's app does. Plain JavaScript with no imports of its own runtime: it runs in Node, Edge,
// workerd and a browser alike.
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
// The runtimes suite's log (tests/runtimes/big-text.mjs, copied beside this file by run.mjs).
import { makeBigText as bigLog } from './big-text.mjs';

/** o200k_base's count of the log by the official tiktoken (the runtimes suite's fixture). */
export const BIG_LOG_TOKENS = 109158;

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const toolCall = (id, name, input) => ({ content: [{ type: 'tool-call', toolCallId: id, toolName: name, input: JSON.stringify(input) }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] });
const answer = (text) => ({ content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] });

/**
 * Runs the quick start once and returns plain data the test runner checks: what was offloaded
 * and where, the exact counts, what `read_file` gave back, and the largest prompt the model got.
 */
export async function runQuickstart({ countTokens, createCompactor, MemoryStore }) {
  const started = Date.now();
  const log = bigLog();
  const store = new MemoryStore();
  const compactor = await createCompactor({ model: 'gpt-4o', store });
  const tokens = countTokens(log);
  const prompts = [];
  let offloadedPath = null;
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      prompts.push(prompt);
      if (prompts.length === 1) return toolCall('call_1', 'search', { q: 'slow requests' });
      if (prompts.length === 2) {
        // The search output was offloaded: its preview names the stored copy.
        offloadedPath = /\/tool_outputs\/[\w.-]+\.txt/.exec(JSON.stringify(prompt))?.[0] ?? null;
        return toolCall('call_2', 'read_file', { path: offloadedPath ?? '/missing', offset: 101, limit: 3 });
      }
      return answer('The ERROR lines cluster in src/router.');
    },
  });
  const result = await generateText({
    model,
    instructions: 'You are a research agent.',
    messages: [{ role: 'user', content: 'Find the slow requests in the logs.' }],
    tools: {
      search: tool({ description: 'Searches the logs.', inputSchema: jsonSchema({ type: 'object', properties: { q: { type: 'string' } } }), execute: async () => log }),
      ...compactor.tools(),
    },
    stopWhen: stepCountIs(5),
    prepareStep: compactor.prepareStep,
    onStepFinish: compactor.onStepFinish,
  });
  const readBack = result.steps.flatMap((s) => s.toolResults).find((r) => r.toolName === 'read_file')?.output;
  const promptChars = prompts.map((p) => JSON.stringify(p).length);
  return {
    text: result.text,
    steps: result.steps.length,
    tokens,
    expectedTokens: BIG_LOG_TOKENS,
    logChars: log.length,
    offloadedPath,
    stored: offloadedPath ? (await store.read(offloadedPath)) === log : false,
    readBack: typeof readBack === 'string' ? readBack.slice(0, 400) : readBack ?? null,
    expectedLine: log.split("\n")[101],
    largestPromptChars: Math.max(...promptChars),
    ms: Date.now() - started,
  };
}
