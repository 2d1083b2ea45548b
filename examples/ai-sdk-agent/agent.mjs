// An AI SDK 7 agent whose tools return huge outputs, kept inside a 16k-token window by
// context-compactor's prepareStep. The model is a mock (no API key): it calls `search` on every
// step until the last, and records every prompt it receives.
import { generateText, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';
import { createCompactor, MemoryStore } from 'context-compactor';

/** A deterministic search result of roughly `tokens` o200k tokens, unique per query. */
export function searchResult(query, tokens = 30_000) {
  const lines = [];
  for (let i = 0; lines.length * 25 < tokens; i++) {
    lines.push(`${query} hit ${i}: doc-${(i * 7919) % 100_003} score=${((i * 37) % 1000) / 1000} snippet "${query} appears in section ${i % 17}"`);
  }
  return lines.join('\n');
}

const usage = { inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 10, text: 10, reasoning: undefined } };

/**
 * Runs the agent. With `compactor: false` it runs unmanaged (the control: prompts overflow).
 * Returns the prompts the model received, the store, the compactor and the final text.
 */
export async function runAgent({ steps = 5, window = 16_000, compactor: managed = true, onEvent } = {}) {
  const prompts = [];
  const model = new MockLanguageModelV4({
    modelId: 'gpt-4o',
    doGenerate: async ({ prompt }) => {
      prompts.push(structuredClone(prompt));
      const step = prompts.length - 1;
      if (step < steps) {
        return {
          content: [{ type: 'tool-call', toolCallId: `call-${step}`, toolName: 'search', input: JSON.stringify({ query: `topic${step}` }) }],
          finishReason: { unified: 'tool-calls', raw: 'tool_use' },
          usage,
          warnings: [],
        };
      }
      return { content: [{ type: 'text', text: 'All topics researched.' }], finishReason: { unified: 'stop', raw: 'end_turn' }, usage, warnings: [] };
    },
  });
  const store = new MemoryStore();
  const compactor = managed ? await createCompactor({ model: 'gpt-4o', contextWindow: window, store, onEvent }) : undefined;
  const result = await generateText({
    model,
    instructions: 'You are a research agent. Use search, then answer.',
    messages: [{ role: 'user', content: 'Research topics 0 to 4.' }],
    tools: {
      search: tool({
        description: 'Full-text search',
        inputSchema: z.object({ query: z.string() }),
        execute: async ({ query }) => searchResult(query),
      }),
    },
    stopWhen: stepCountIs(steps + 1),
    ...(compactor ? { prepareStep: compactor.prepareStep } : {}),
  });
  return { prompts, store, compactor, text: result.text };
}

/** A source file of about `tokens` o200k tokens, deterministic per path. */
export function sourceFile(path, tokens = 1_500) {
  const lines = [];
  for (let i = 0; lines.length * 12 < tokens; i++) lines.push(`    let v${i} = ${path.replace(/\W/g, '_')}::step(${(i * 131) % 977}).await?; // ${i}`);
  return lines.join('\n');
}

/**
 * A longer agent: `steps` model calls with a scripted plan — read source files, search (huge
 * outputs, offloaded at return time by `wrapTools`), re-read an offloaded result with the
 * recovery tool `read_file`, and keep going until the history must be summarized. The
 * summarizer is `summarizer(model)` over a second mock model. Returns the prompts, events,
 * summary requests and the compactor.
 */
// 8k: in 16k the reversible tiers alone keep this agent under the window (masks and offloads;
// no summary is needed), and this example is also meant to show the summarizer model at work.
export async function runLongAgent({ steps = 30, window = 8_000, onEvent } = {}) {
  const { summarizer } = await import('context-compactor');
  const prompts = [];
  const summaryRequests = [];
  const summaryModel = new MockLanguageModelV4({
    modelId: 'mock-summarizer',
    doGenerate: async ({ prompt }) => {
      summaryRequests.push(prompt);
      const text = JSON.stringify(prompt);
      const files = [...new Set(text.match(/\/src\/m\d+\.rs/g) ?? [])];
      return { content: [{ type: 'text', text: `## Session Intent\nRefactor the request pipeline.\n## Progress\nRead ${files.length} files: ${files.join(', ')}.\n## Next Steps\nKeep reading modules.` }], finishReason: { unified: 'stop', raw: 'end_turn' }, usage, warnings: [] };
    },
  });
  const store = new MemoryStore();
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: window, store, onEvent, summarize: summarizer(summaryModel) });
  let lastOffloaded;
  const model = new MockLanguageModelV4({
    modelId: 'gpt-4o',
    doGenerate: async ({ prompt }) => {
      prompts.push(structuredClone(prompt));
      const step = prompts.length - 1;
      const call = (toolName, input) => ({
        content: [{ type: 'tool-call', toolCallId: `call-${step}`, toolName, input: JSON.stringify(input) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage,
        warnings: [],
      });
      lastOffloaded = JSON.stringify(prompt).match(/\/tool_outputs\/[\w.-]+/g)?.at(-1) ?? lastOffloaded;
      if (step >= steps - 1) return { content: [{ type: 'text', text: 'Refactor plan ready.' }], finishReason: { unified: 'stop', raw: 'end_turn' }, usage, warnings: [] };
      if (step % 5 === 2) return call('search', { query: `pattern${step}` });
      if (step % 5 === 4 && lastOffloaded) return call('read_file', { path: lastOffloaded, offset: 100, limit: 20 });
      return call('read_source', { path: `/src/m${step}.rs` });
    },
  });
  const result = await generateText({
    model,
    instructions: await compactor.systemPrompt('You are a refactoring agent.'),
    messages: [{ role: 'user', content: 'Plan the refactor of the request pipeline.' }],
    tools: {
      ...compactor.wrapTools({
        search: tool({ description: 'Code search', inputSchema: z.object({ query: z.string() }), execute: async ({ query }) => searchResult(query) }),
        read_source: tool({ description: 'Read a source file', inputSchema: z.object({ path: z.string() }), execute: async ({ path }) => sourceFile(path) }),
      }),
      ...compactor.tools(),
    },
    stopWhen: stepCountIs(steps),
    prepareStep: compactor.prepareStep,
  });
  return { prompts, store, compactor, summaryRequests, text: result.text, steps: result.steps };
}
