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
