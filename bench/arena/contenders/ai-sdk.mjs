// Contenders on the Vercel AI SDK (7): no management, `pruneMessages` in `prepareStep`, and
// context-compactor with each preset, in three host shapes: one long-lived compactor through
// `prepareStep`; a stateless route handler (a new compactor per user turn, its state in a shared
// store); one long-lived compactor through `wrapLanguageModel` middleware. The model is the AI
// SDK's own mock (`MockLanguageModelV4`) replaying the session's assistant steps; tools return
// the recorded outputs. History carries across user turns as the AI SDK documents it:
// `messages.push(...result.responseMessages)` — the app keeps only the raw messages.
import { generateText, jsonSchema, pruneMessages, stepCountIs, tool, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createCompactor, MemoryStore } from 'context-compactor';
import { searchIn } from '../lib/metrics.mjs';
import { fromAiSdk, pieces } from '../lib/prompt.mjs';
import { Replay, scriptedSummary } from '../lib/script.mjs';

/** The usage a provider reports: input, the arena's count of the prompt (its yardstick stands
 * for the provider's tokenizer), as Strands' model reports it too. */
const usage = (tokens) => ({
  inputTokens: { total: tokens, noCache: tokens, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 10, text: 10, reasoning: undefined },
});

/** The mock model: records each prompt (`onPrompt`), answers with the next recorded step (the
 * Mastra contender's model too: Mastra takes AI SDK models). */
export function scriptedModel(replay, onPrompt) {
  return new MockLanguageModelV4({
    modelId: 'arena-replay',
    doGenerate: async ({ prompt, tools }) => {
      const tokens = onPrompt(prompt, tools ?? []);
      const message = replay.next();
      const content = message.content.map((p) =>
        p.type === 'tool-call' ? { type: 'tool-call', toolCallId: p.toolCallId, toolName: p.toolName, input: JSON.stringify(p.input) } : { type: 'text', text: p.text },
      );
      const calls = content.some((p) => p.type === 'tool-call');
      return { content, finishReason: calls ? { unified: 'tool-calls', raw: 'tool_use' } : { unified: 'stop', raw: 'end_turn' }, usage: usage(tokens), warnings: [] };
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

/** Where the stateless host keeps the compactor's state in its (shared) store. */
export const STATE_PATH = '/state/compactor.json';

/**
 * `kind`: `none`, `prune`, or `compactor` with `preset` (and more `createCompactor` `options`)
 * and `host`: `long-lived` (one compactor, `prepareStep`), `stateless` (a new compactor per user
 * turn with `statePath` in one shared store, `prepareStep`) or `middleware` (one compactor,
 * `wrapLanguageModel({ model, middleware: compactor.middleware() })`, no `prepareStep`).
 * Feeds `recorder`; returns `stored(value)`, a search of the contender's store at the end, and
 * the store's `files`.
 */
/**
 * The summarizer and event hook every context-compactor contender gets: the agent's model,
 * reading the cache through the continuation when the core offers one (what `summarizer(model)`
 * does), else the plain request; answered by `scriptedSummary`. A summary made ahead of need
 * (`background`) answers when the arena's clock says it is ready (lib/metrics.mjs); the call
 * that applies it marks the compaction. `tools()`: the agent's tools of its last call.
 */
export function arenaSummarizer(recorder, tools = () => []) {
  return {
    // The arena's clock (think time, time away): a call after the cache lifetime takes the
    // edits a warm cache defers. `--compactor-options '{"clock":false}'` runs without it.
    ...(recorder.libraryClock === false ? {} : { now: () => recorder.now() }),
    summarize: (request, { background } = {}) => {
      const continuation = request.continuation;
      const prompt = continuation
        ? fromAiSdk(continuation.messages, continuation.tools ?? tools())
        : fromAiSdk([{ role: 'system', content: request.system }, ...request.messages]);
      const ready = recorder.summary(prompt, { continuation: Boolean(continuation), background });
      const text = scriptedSummary(pieces(prompt).join('\n'));
      return background ? ready.then(() => text) : text;
    },
    onEvent: (event) => {
      if (event.strategy === 'summarize' && event.status === 'applied') recorder.applied();
    },
  };
}

export async function runAiSdk(session, { window, kind, preset, host = 'long-lived', options = {}, recorder }) {
  const replay = new Replay(session);
  // The tools of the last call: a summary continuation sends them unchanged, as
  // `summarizer(model, { tools })` does.
  let lastTools = [];
  const scripted = scriptedModel(replay, (prompt, tools) => {
    lastTools = tools;
    return recorder.call(() => fromAiSdk(prompt, tools), replay);
  });
  const recorded = sessionTools(session, replay);
  const store = new MemoryStore();
  const compactorFor = () =>
    createCompactor({
      model: 'claude-sonnet-4-5',
      contextWindow: window,
      preset,
      ...options,
      store,
      ...(host === 'stateless' ? { statePath: STATE_PATH } : {}),
      // The summarizer is the agent's model: it reads the cache through the continuation when
      // the core offers one (what `summarizer(model)` does), else sends the plain request.
      ...arenaSummarizer(recorder, () => lastTools),
    });
  // What one request of the app sees: the model, tools, instructions and prepareStep.
  const setup = async (compactor) => {
    if (!compactor) {
      const prepareStep = kind === 'prune' ? async ({ messages }) => ({ messages: pruneMessages({ messages, ...PRUNE }) }) : undefined;
      return { model: scripted, tools: recorded, instructions: session.system, prepareStep };
    }
    return {
      model: host === 'middleware' ? wrapLanguageModel({ model: scripted, middleware: compactor.middleware() }) : scripted,
      tools: { ...compactor.wrapTools(recorded), ...compactor.tools() },
      instructions: await compactor.systemPrompt(session.system),
      prepareStep: host === 'middleware' ? undefined : compactor.prepareStep,
      onStepFinish: host === 'middleware' ? undefined : compactor.onStepFinish,
    };
  };
  const longLived = kind === 'compactor' && host !== 'stateless' ? await compactorFor() : undefined;
  const shared = kind !== 'compactor' || longLived ? await setup(longLived) : undefined;
  const history = [];
  for (let t = 0; t < replay.turns.length; t++) {
    replay.begin(t);
    history.push({ role: 'user', content: replay.turns[t].user });
    const perTurn = kind === 'compactor' && host === 'stateless' ? await compactorFor() : undefined;
    const { model, tools, instructions, prepareStep, onStepFinish } = shared ?? (await setup(perTurn));
    const result = await generateText({
      model,
      instructions,
      messages: history,
      tools,
      stopWhen: stepCountIs(replay.turns[t].steps.length + 1),
      ...(prepareStep ? { prepareStep } : {}),
      ...(onStepFinish ? { onStepFinish } : {}),
    });
    // The state keeps the last step's usage (what `onStepFinish` observed after the last plan).
    if (perTurn) await perTurn.saveState();
    perTurn?.dispose();
    if (!replay.done) throw new Error(`turn ${t}: the agent stopped after ${replay.step} of ${replay.turns[t].steps.length} steps`);
    history.push(...result.responseMessages);
  }
  if (kind !== 'compactor') return { stored: () => false };
  longLived?.dispose();
  const texts = [];
  const files = await store.list('/');
  for (const path of files) texts.push(await store.read(path));
  return { stored: searchIn(texts), files };
}
