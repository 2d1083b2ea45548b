// The Strands Agents TypeScript SDK (`@strands-agents/sdk`) with its built-in context manager in
// its `'auto'` mode: tool results over 1,500 tokens truncated to a 750-token head + tail preview
// the moment they are added (the originals kept in its stash, a `[ref: …]` left in the preview,
// a `retrieve_context` tool to read them back), the history summarized in one call at 0.85 of the
// window keeping the last 4 messages, and an emergency drop of the oldest 20 % when still over.
// The model is a `Model` subclass — the SDK's supported way to plug a provider in — replaying the
// session's assistant steps; it learns the window from `contextWindowLimit` in its config (what
// the context manager divides by) and reports each call's usage as a provider does. Tools return
// the recorded outputs. History carries across user turns the Strands way: one `Agent`, whose
// `messages` persist from one `invoke` to the next.
import { Agent, ContextWindowOverflowError, FunctionTool, Model } from '@strands-agents/sdk';
import { countTokens } from 'context-compactor';
import { searchIn } from '../lib/metrics.mjs';
import { fromStrands, pieces } from '../lib/prompt.mjs';
import { Replay, scriptedSummary } from '../lib/script.mjs';

/** Strands' summarizer calls the agent's own model with this system prompt (its
 * `DEFAULT_SYSTEM_PROMPT` in `context-manager/methods/summarize.js`, not exported). */
const SUMMARY_SYSTEM_PROMPT = 'You are a summarization assistant.';

/** The stream events of one assistant message: text blocks and tool uses, then the stop reason
 * and the usage a provider reports (input: the arena's count of the prompt). */
function* messageEvents(content, stopReason, usage) {
  yield { type: 'modelMessageStartEvent', role: 'assistant' };
  for (const p of content) {
    if (p.type === 'tool-call') {
      yield { type: 'modelContentBlockStartEvent', start: { type: 'toolUseStart', name: p.toolName, toolUseId: p.toolCallId } };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input: JSON.stringify(p.input ?? {}) } };
    } else {
      yield { type: 'modelContentBlockStartEvent' };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text: p.text } };
    }
    yield { type: 'modelContentBlockStopEvent' };
  }
  yield { type: 'modelMessageStopEvent', stopReason };
  if (usage) yield { type: 'modelMetadataEvent', usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens } };
}

/** A Strands model that replays a session (`replay`) or, for the context manager's summary
 * prompts, writes the scripted summary. A prompt over the window is rejected with Strands'
 * `ContextWindowOverflowError`, as a provider would: the context manager has a code path for it
 * (reduce and retry, up to 3 times). */
class ScriptedStrandsModel extends Model {
  constructor({ replay, recorder, window }) {
    super();
    this.replay = replay;
    this.recorder = recorder;
    this.window = window;
    this.config = { modelId: 'arena-replay', contextWindowLimit: window };
    /** Every `[ref: …]` the model was shown: the stash entries it can read back. */
    this.refs = new Set();
  }

  updateConfig(config) {
    Object.assign(this.config, config);
  }

  getConfig() {
    return this.config;
  }

  async *stream(messages, options = {}) {
    const system = options.systemPrompt;
    const systemText = typeof system === 'string' ? system : '';
    if (systemText.startsWith(SUMMARY_SYSTEM_PROMPT)) {
      const prompt = fromStrands(messages, [], system);
      this.recorder.summary(prompt);
      const text = scriptedSummary(pieces(prompt).join('\n'));
      // No usage: the summarize method reads only the message's text.
      yield* messageEvents([{ type: 'text', text }], 'endTurn');
      return;
    }
    const tokens = this.recorder.call(() => {
      const prompt = fromStrands(messages, options.toolSpecs ?? [], system);
      for (const m of prompt.messages) for (const [, list] of m.text.matchAll(/\[refs?: ([^\]]+)\]/g)) for (const ref of list.split(', ')) this.refs.add(ref);
      return prompt;
    }, this.replay);
    if (tokens > this.window) throw new ContextWindowOverflowError(`prompt is ${tokens} tokens, over the ${this.window}-token window`);
    const step = this.replay.next();
    const content = step.content.filter((p) => p.type === 'tool-call' || (p.type === 'text' && p.text !== ''));
    const stopReason = content.some((p) => p.type === 'tool-call') ? 'toolUse' : 'endTurn';
    const output = content.map((p) => (p.type === 'text' ? p.text : JSON.stringify(p.input ?? {}))).join('');
    yield* messageEvents(content, stopReason, { inputTokens: tokens, outputTokens: countTokens(output) });
  }
}

/** The session's tools as Strands tools returning the recorded outputs. */
function sessionTools(session, replay, answered) {
  return Object.entries(session.tools).map(
    ([name, def]) =>
      new FunctionTool({
        name,
        description: def.description,
        inputSchema: def.inputSchema,
        callback: (_input, context) => {
          answered.add(context.toolUse.toolUseId);
          return replay.output(context.toolUse.toolUseId);
        },
      }),
  );
}

/** Every text a stash entry holds (a text block's text, or the entry as JSON). */
function stashText(data) {
  return typeof data?.text === 'string' ? data.text : JSON.stringify(data);
}

/**
 * Runs the session through one Strands `Agent` with `contextManager: 'auto'`. Feeds `recorder`;
 * returns `stored(value)`: whether a stash entry the model was given a reference to holds the
 * value (the stash keeps every message as it is added, but `retrieve_context` needs the
 * reference: what a summary replaced without one is out of the model's reach).
 */
export async function runStrands(session, { window, recorder }) {
  const replay = new Replay(session);
  const model = new ScriptedStrandsModel({ replay, recorder, window });
  const answered = new Set();
  const agent = new Agent({ model, tools: sessionTools(session, replay, answered), systemPrompt: session.system, contextManager: 'auto', printer: false });
  for (let t = 0; t < replay.turns.length; t++) {
    replay.begin(t);
    await agent.invoke(replay.turns[t].user);
    if (!replay.done) throw new Error(`turn ${t}: the agent stopped after ${replay.step} of ${replay.turns[t].steps.length} steps`);
    // Every recorded call must have reached its tool (a refused input would answer with an error).
    for (const step of replay.turns[t].steps)
      for (const p of step.content) if (p.type === 'tool-call' && !answered.has(p.toolCallId)) throw new Error(`turn ${t}: tool call ${p.toolCallId} (${p.toolName}) never reached its tool`);
  }
  const stash = agent.contextManager.stash;
  const texts = [];
  for (const key of await stash.list()) {
    const ref = key.split('/').at(-1);
    if (model.refs.has(ref)) texts.push(stashText((await stash.retrieve(key))?.data));
  }
  return { stored: searchIn(texts), refs: model.refs.size, stashed: (await stash.list()).length };
}
