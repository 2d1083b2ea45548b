// Contenders on the OpenAI Agents SDK for JavaScript (`@openai/agents-core`): an `Agent` run with
// `run()`, its conversation carried across user turns the SDK's way (`result.history` plus the
// next user message as the next run's input), with no context management or with
// context-compactor's adapter (`context-compactor/openai-agents`: the input filter, the model
// wrapper that calibrates and recovers, offload at tool return, the recovery tools). The SDK has
// no client-side context management of its own to set against it: its only one is the
// Responses API's server-side compaction (`modelSettings.contextManagement`, `responses.compact`),
// which runs on OpenAI's servers and cannot run offline. The model is a scripted `Model`
// replaying the session's assistant steps; tools return the recorded outputs.
//
// `@openai/agents-core` is imported as the package's adapter resolves it (from js/: a dev
// dependency there), not installed here: it needs `openai` ^7 where `@strands-agents/sdk` wants
// ^6, a peer conflict npm refuses. Loading the ES module file the package's own `exports` name
// gives the adapter and this harness one instance of the SDK.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { MemoryStore, createCompactor } from 'context-compactor';
import { searchIn } from '../lib/metrics.mjs';
import { arenaSummarizer } from './ai-sdk.mjs';
import { fromAiSdk, fromOpenAIAgents, pieces } from '../lib/prompt.mjs';
import { Replay, scriptedSummary } from '../lib/script.mjs';

let sdk;
/** `@openai/agents-core` (its ES module entry) and the adapter, resolved from the js/ package. */
async function agentsSdk() {
  if (sdk) return sdk;
  const require = createRequire(import.meta.resolve('context-compactor/package.json'));
  let dir = dirname(require.resolve('@openai/agents-core'));
  const nameOf = (d) => existsSync(join(d, 'package.json')) && JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')).name;
  while (nameOf(dir) !== '@openai/agents-core') {
    if (dirname(dir) === dir) throw new Error('@openai/agents-core not found from context-compactor (npm ci in js/)');
    dir = dirname(dir);
  }
  const entry = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).exports['.'].import;
  const core = await import(pathToFileURL(join(dir, entry)).href);
  const adapter = await import('context-compactor/openai-agents');
  return (sdk = { ...core, adapter });
}

/** A model that records each request (the arena's count is reported as its input usage) and
 * answers with the next recorded step: its text as a message item, its tool calls as
 * `function_call` items, in order. */
class ReplayModel {
  constructor(Usage, replay, recorder) {
    this.Usage = Usage;
    this.replay = replay;
    this.recorder = recorder;
    this.lastTools = [];
  }

  async getResponse(request) {
    this.lastTools = request.tools;
    const tokens = this.recorder.call(() => fromOpenAIAgents(request.input, request.tools, request.systemInstructions), this.replay);
    const message = this.replay.next();
    const output = [];
    for (const p of message.content) {
      if (p.type === 'tool-call') output.push({ type: 'function_call', callId: p.toolCallId, name: p.toolName, arguments: JSON.stringify(p.input ?? {}), status: 'completed' });
      else if (output.at(-1)?.type === 'message') output.at(-1).content[0].text += p.text ?? '';
      else output.push({ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: p.text ?? '' }] });
    }
    return { usage: new this.Usage({ inputTokens: tokens, outputTokens: 10, totalTokens: tokens + 10, requests: 1 }), output };
  }

  async *getStreamedResponse() {
    throw new Error('the arena runs without streaming');
  }
}

/** A user turn's content as a user message item. */
function userItem(content) {
  if (typeof content === 'string') return { role: 'user', content };
  return { role: 'user', content: content.map((p) => (p.type === 'text' ? { type: 'input_text', text: p.text } : { type: 'input_text', text: `[${p.type}]` })) };
}

/**
 * `kind`: `none` (no context management) or `compactor` (context-compactor's adapter, preset
 * smart, with its recovery tools and system prompt segment; `options` reach `createCompactor`).
 */
export async function runOpenAIAgents(session, { window, kind, recorder, options = {} }) {
  const { Agent, Runner, Usage, tool, adapter } = await agentsSdk();
  // No traces: the default exporter prints each span, and the arena measures prompts only.
  const runner = new Runner({ tracingDisabled: true });
  const replay = new Replay(session);
  const model = new ReplayModel(Usage, replay, recorder);
  const tools = Object.entries(session.tools).map(([name, def]) =>
    tool({ name, description: def.description ?? name, parameters: def.inputSchema, strict: false, execute: async (_input, _context, details) => replay.output(details.toolCall.callId) }),
  );
  let agent;
  let store;
  let callModelInputFilter;
  if (kind === 'none') {
    agent = new Agent({ name: 'arena', instructions: session.system, model, tools });
  } else if (kind === 'compactor') {
    store = new MemoryStore();
    const compactor = await createCompactor({
      model: 'claude-sonnet-4-5',
      contextWindow: window,
      preset: 'smart',
      ...options,
      store,
      // The summarizer is the agent's model, as the AI SDK contenders' (`summarizer(model)`):
      // the continuation of the agent's prompt when the core offers one, else the plain request.
      ...arenaSummarizer(recorder, () => model.lastTools),
    });
    agent = new Agent({
      name: 'arena',
      instructions: await compactor.systemPrompt(session.system),
      model: adapter.compactorModel(compactor, model),
      tools: [...adapter.compactorTools(compactor, tools), ...adapter.recoveryAgentTools(compactor)],
    });
    callModelInputFilter = adapter.compactorInputFilter(compactor);
  } else throw new Error(`unknown OpenAI Agents contender ${kind}`);
  let history = [];
  for (let t = 0; t < replay.turns.length; t++) {
    replay.begin(t);
    const result = await runner.run(agent, [...history, userItem(replay.turns[t].user)], { maxTurns: replay.turns[t].steps.length, ...(callModelInputFilter ? { callModelInputFilter } : {}) });
    if (!replay.done) throw new Error(`turn ${t}: the agent stopped after ${replay.step} of ${replay.turns[t].steps.length} steps`);
    history = result.history;
  }
  if (kind !== 'compactor') return { stored: () => false };
  const texts = [];
  for (const path of await store.list('/')) texts.push(await store.read(path));
  return { stored: searchIn(texts) };
}
