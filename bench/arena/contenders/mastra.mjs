// Contenders on Mastra (`@mastra/core`): an `Agent` whose conversation carries across user turns
// the Mastra way (a memory thread, here core's in-memory `MockMemory` holding the whole thread),
// managed by Mastra's own input processors (`ToolCallFilter` then `TokenLimiterProcessor`, the
// pairing its docs give) or by context-compactor's processor (`context-compactor/mastra`). The
// model is the AI SDK's mock (`MockLanguageModelV4`, which Mastra accepts) replaying the session's
// assistant steps; tools (`createTool`) return the recorded outputs.
import { Agent } from '@mastra/core/agent';
import { MockMemory } from '@mastra/core/memory';
import { TokenLimiterProcessor, ToolCallFilter } from '@mastra/core/processors';
import { createTool } from '@mastra/core/tools';
import { MemoryStore, createCompactor } from 'context-compactor';
import { compactorProcessor, recoveryMastraTools } from 'context-compactor/mastra';
import { arenaSummarizer, scriptedModel } from './ai-sdk.mjs';
import { searchIn } from '../lib/metrics.mjs';
import { fromAiSdk, pieces } from '../lib/prompt.mjs';
import { Replay, scriptedSummary } from '../lib/script.mjs';

/** The share of the window Mastra's `TokenLimiterProcessor` may fill (context-compactor's
 * trigger, as the other peers get). */
const LIMIT = 0.85;

function sessionTools(session, replay) {
  return Object.fromEntries(
    Object.entries(session.tools).map(([name, def]) => [
      name,
      createTool({ id: name, description: def.description ?? name, inputSchema: def.inputSchema, execute: async (_input, context) => replay.output(context.agent.toolCallId) }),
    ]),
  );
}

/**
 * `kind`: `builtin` (Mastra's `ToolCallFilter` + `TokenLimiterProcessor` at 0.85 of the window)
 * or `compactor` (context-compactor's processor, preset smart, in the input, output and error
 * processor lists, with its recovery tools and system prompt segment).
 */
export async function runMastra(session, { window, kind, recorder, options = {} }) {
  const replay = new Replay(session);
  const tools = sessionTools(session, replay);
  // The whole thread is recalled: context management is the processors' (Mastra's default
  // `lastMessages: 10` would drop history on its own).
  const memory = new MockMemory({ options: { lastMessages: 1_000_000 } });
  let agent;
  let store;
  const common = { id: 'arena', name: 'arena', model: scriptedModel(replay, (prompt, tools) => recorder.call(() => fromAiSdk(prompt, tools), replay)), memory };
  if (kind === 'builtin') {
    agent = new Agent({ ...common, instructions: session.system, tools, inputProcessors: [new ToolCallFilter(), new TokenLimiterProcessor({ limit: Math.floor(window * LIMIT) })] });
  } else if (kind === 'compactor') {
    store = new MemoryStore();
    const compactor = await createCompactor({
      model: 'claude-sonnet-4-5',
      contextWindow: window,
      preset: 'smart',
      ...options,
      store,
      ...arenaSummarizer(recorder),
    });
    const processor = compactorProcessor(compactor);
    agent = new Agent({
      ...common,
      instructions: await compactor.systemPrompt(session.system),
      tools: { ...tools, ...recoveryMastraTools(compactor) },
      inputProcessors: [processor],
      outputProcessors: [processor],
      errorProcessors: [processor],
      maxProcessorRetries: 1,
    });
  } else throw new Error(`unknown Mastra contender ${kind}`);
  for (let t = 0; t < replay.turns.length; t++) {
    replay.begin(t);
    await agent.generate(replay.turns[t].user, { memory: { thread: 'arena', resource: 'arena' }, maxSteps: replay.turns[t].steps.length + 1 });
    if (!replay.done) throw new Error(`turn ${t}: the agent stopped after ${replay.step} of ${replay.turns[t].steps.length} steps`);
  }
  if (kind !== 'compactor') return { stored: () => false };
  const texts = [];
  for (const path of await store.list('/')) texts.push(await store.read(path));
  return { stored: searchIn(texts) };
}
