// Contenders on LangChain v1: `createAgent` with `summarizationMiddleware`, `createAgent` with
// `contextEditingMiddleware` (ClearToolUsesEdit), and DeepAgents' `createDeepAgent` with its
// default middleware (filesystem eviction of large tool results, summarization with history
// offloaded to its backend). The model is a scripted chat model replaying the session's assistant
// steps; tools return the recorded outputs. Conversations carry across user turns the LangGraph
// way: a checkpointer (MemorySaver) and one thread.
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { ContextOverflowError } from '@langchain/core/errors';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { MemorySaver } from '@langchain/langgraph';
import { createDeepAgent } from 'deepagents';
import { ClearToolUsesEdit, contextEditingMiddleware, createAgent, summarizationMiddleware } from 'langchain';
import { MemoryStore, createCompactor } from 'context-compactor';
import { compactorMiddleware, recoveryLangChainTools } from 'context-compactor/langchain';
import { searchIn } from '../lib/metrics.mjs';
import { arenaSummarizer } from './ai-sdk.mjs';
import { fromAiSdk, fromLangChain, pieces } from '../lib/prompt.mjs';
import { Replay, scriptedSummary } from '../lib/script.mjs';

/** DeepAgents summarizes with the agent's own model; its prompt starts with this sentence. */
const DEEPAGENTS_SUMMARY_PROMPT = 'You are a conversation summarizer.';

/** A chat model that replays a session (`replay`) or, for summary prompts, writes the scripted
 * summary. `profile.maxInputTokens` is the window: the peers' fraction triggers read it. */
class ScriptedChatModel extends BaseChatModel {
  constructor({ replay, recorder, window, role, rejectOverWindow = false, reportUsage = false }) {
    super({});
    this.reportUsage = reportUsage;
    this.replay = replay;
    this.recorder = recorder;
    this.role = role;
    this.rejectOverWindow = rejectOverWindow;
    this.window = window;
    this.definitions = [];
  }

  get profile() {
    return { maxInputTokens: this.window };
  }

  _llmType() {
    return 'arena-replay';
  }

  bindTools(tools) {
    const bound = Object.create(this);
    bound.definitions = tools.map((t) => {
      const f = convertToOpenAITool(t).function;
      return { name: f.name, description: f.description, parameters: f.parameters };
    });
    return bound;
  }

  async _generate(messages) {
    const first = messages[0];
    const isSummary = this.role === 'summarizer' || (messages.length === 1 && String(first.content).startsWith(DEEPAGENTS_SUMMARY_PROMPT));
    if (isSummary) {
      const prompt = fromLangChain(messages);
      this.recorder.summary(prompt);
      const text = scriptedSummary(pieces(prompt).join('\n'));
      return { generations: [{ text, message: new AIMessage(text) }] };
    }
    const tokens = this.recorder.call(() => fromLangChain(messages, this.definitions), this.replay);
    // A provider rejects a prompt over the window. Only DeepAgents has a code path for that (it
    // summarizes and retries), so only its model rejects; the others' over-window calls are
    // counted and answered.
    if (this.rejectOverWindow && tokens > this.window) throw new ContextOverflowError(`prompt is ${tokens} tokens, over the ${this.window}-token window`);
    const step = this.replay.next();
    const text = step.content.filter((p) => p.type === 'text').map((p) => p.text).join('');
    const toolCalls = step.content.filter((p) => p.type === 'tool-call').map((p) => ({ id: p.toolCallId, name: p.toolName, args: p.input, type: 'tool_call' }));
    const message = new AIMessage({ content: text, tool_calls: toolCalls });
    // As a provider reports it (input: the arena's count), for the middleware that calibrates
    // from it (context-compactor's); the peers' models report none, as before.
    if (this.reportUsage) message.usage_metadata = { input_tokens: tokens, output_tokens: 0, total_tokens: tokens };
    return { generations: [{ text, message }] };
  }
}

function sessionTools(session, replay) {
  return Object.entries(session.tools).map(([name, def]) =>
    tool(async (_input, config) => replay.output(config.toolCall.id), { name, description: def.description, schema: def.inputSchema }),
  );
}

/**
 * `kind`: `summarization`, `context-editing` or `deepagents`. The peers' triggers are set to the
 * same fraction of the window as context-compactor's (0.85) where they have no window-relative
 * default; everything else is the peer's default. `compactor`: the same agent with
 * context-compactor's LangChain middleware (`context-compactor/langchain`, preset smart) and its
 * recovery tools, the model reporting usage as a provider does.
 */
export async function runLangChain(session, { window, kind, recorder, options = {} }) {
  const replay = new Replay(session);
  const model = new ScriptedChatModel({ replay, recorder, window, role: 'agent', rejectOverWindow: kind === 'deepagents', reportUsage: kind === 'compactor' });
  const tools = sessionTools(session, replay);
  let agent;
  let store;
  if (kind === 'compactor') {
    store = new MemoryStore();
    const compactor = await createCompactor({
      model: 'claude-sonnet-4-5',
      contextWindow: window,
      preset: 'smart',
      ...options,
      store,
      // The scripted summarizer, scored as the AI SDK contenders' plain requests are.
      ...arenaSummarizer(recorder),
    });
    agent = createAgent({ model, tools: [...tools, ...recoveryLangChainTools(compactor)], systemPrompt: await compactor.systemPrompt(session.system), middleware: [compactorMiddleware(compactor)], checkpointer: new MemorySaver() });
  } else if (kind === 'summarization') {
    const summarizer = new ScriptedChatModel({ replay, recorder, window, role: 'summarizer' });
    const middleware = summarizationMiddleware({ model: summarizer, trigger: { fraction: 0.85 }, keep: { fraction: 0.2 } });
    agent = createAgent({ model, tools, systemPrompt: session.system, middleware: [middleware], checkpointer: new MemorySaver() });
  } else if (kind === 'context-editing') {
    const middleware = contextEditingMiddleware({ edits: [new ClearToolUsesEdit({ trigger: { fraction: 0.85 } })] });
    agent = createAgent({ model, tools, systemPrompt: session.system, middleware: [middleware], checkpointer: new MemorySaver() });
  } else if (kind === 'deepagents') {
    agent = createDeepAgent({ model, tools, systemPrompt: session.system, checkpointer: new MemorySaver() });
  } else throw new Error(`unknown LangChain contender ${kind}`);
  const config = { configurable: { thread_id: 'arena' }, recursionLimit: 10_000 };
  let state;
  for (let t = 0; t < replay.turns.length; t++) {
    replay.begin(t);
    state = await agent.invoke({ messages: [{ role: 'user', content: replay.turns[t].user }] }, config);
    if (!replay.done) throw new Error(`turn ${t}: the agent stopped after ${replay.step} of ${replay.turns[t].steps.length} steps`);
  }
  if (kind === 'compactor') {
    const texts = [];
    for (const path of await store.list('/')) texts.push(await store.read(path));
    return { stored: searchIn(texts) };
  }
  if (kind !== 'deepagents') return { stored: () => false };
  return { stored: searchIn(Object.values(state.files ?? {}).map((f) => (Array.isArray(f.content) ? f.content.join('\n') : String(f.content ?? '')))) };
}
