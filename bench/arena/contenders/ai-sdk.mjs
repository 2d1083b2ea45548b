// Contenders on the Vercel AI SDK (7): no management, `pruneMessages` in `prepareStep`, and
// context-compactor's `prepareStep` with each preset. The model is the AI SDK's own mock
// (`MockLanguageModelV4`) replaying the session's assistant steps; tools return the recorded
// outputs. History carries across user turns as the AI SDK documents it:
// `messages.push(...result.responseMessages)`.
import { generateText, jsonSchema, pruneMessages, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createCompactor, MemoryStore } from 'context-compactor';
import { searchIn } from '../lib/metrics.mjs';
import { fromAiSdk, pieces } from '../lib/prompt.mjs';
import { Replay, scriptedSummary } from '../lib/script.mjs';

const USAGE = {
  inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
};

/** The mock model: records each prompt (`onPrompt`), answers with the next recorded step. */
function scriptedModel(replay, onPrompt) {
  return new MockLanguageModelV4({
    modelId: 'arena-replay',
    doGenerate: async ({ prompt, tools }) => {
      onPrompt(prompt, tools ?? []);
      const message = replay.next();
      const content = message.content.map((p) =>
        p.type === 'tool-call' ? { type: 'tool-call', toolCallId: p.toolCallId, toolName: p.toolName, input: JSON.stringify(p.input) } : { type: 'text', text: p.text },
      );
      const calls = content.some((p) => p.type === 'tool-call');
      return { content, finishReason: calls ? { unified: 'tool-calls', raw: 'tool_use' } : { unified: 'stop', raw: 'end_turn' }, usage: USAGE, warnings: [] };
    },
  });
}

/** The session's tools as AI SDK tools returning the recorded outputs. */
function sessionTools(session, replay) {
  return Object.fromEntries(
    Object.entries(session.tools).map(([name, def]) => [
      name,
      tool({ description: def.description, inputSchema: jsonSchema(def.inputSchema), execute: async (_input, { toolCallId }) => replay.output(toolCallId) }),
    ]),
  );
}

const PRUNE = { reasoning: 'before-last-message', toolCalls: 'before-last-2-messages', emptyMessages: 'remove' };

/**
 * `kind`: `none`, `prune`, or `compactor` with `preset` (and more `createCompactor` `options`).
 * Feeds `recorder`; returns `stored(value)`, a search of the contender's store at the end.
 */
export async function runAiSdk(session, { window, kind, preset, options = {}, recorder }) {
  const replay = new Replay(session);
  const model = scriptedModel(replay, (prompt, tools) => recorder.call(() => fromAiSdk(prompt, tools), replay));
  let tools = sessionTools(session, replay);
  let instructions = session.system;
  let prepareStep;
  let compactor;
  if (kind === 'prune') {
    prepareStep = async ({ messages }) => ({ messages: pruneMessages({ messages, ...PRUNE }) });
  } else if (kind === 'compactor') {
    compactor = await createCompactor({
      model: 'claude-sonnet-4-5',
      contextWindow: window,
      preset,
      ...options,
      store: new MemoryStore(),
      summarize: (request) => {
        const prompt = fromAiSdk([{ role: 'system', content: request.system }, ...request.messages]);
        recorder.summary(prompt);
        return scriptedSummary(pieces(prompt).join('\n'));
      },
    });
    tools = { ...compactor.wrapTools(tools), ...compactor.tools() };
    instructions = await compactor.systemPrompt(session.system);
    prepareStep = compactor.prepareStep;
  }
  const history = [];
  for (let t = 0; t < replay.turns.length; t++) {
    replay.begin(t);
    history.push({ role: 'user', content: replay.turns[t].user });
    const result = await generateText({
      model,
      instructions,
      messages: history,
      tools,
      stopWhen: stepCountIs(replay.turns[t].steps.length + 1),
      ...(prepareStep ? { prepareStep } : {}),
    });
    if (!replay.done) throw new Error(`turn ${t}: the agent stopped after ${replay.step} of ${replay.turns[t].steps.length} steps`);
    history.push(...result.responseMessages);
  }
  if (!compactor) return { stored: () => false };
  const texts = [];
  for (const path of await compactor.store.list('/')) texts.push(await compactor.store.read(path));
  compactor.dispose();
  return { stored: searchIn(texts) };
}
