// Runs contenders on sessions: the harness behind run.mjs.
import { runAiSdk } from '../contenders/ai-sdk.mjs';
import { runCloudflare } from '../contenders/cloudflare.mjs';
import { runLangChain } from '../contenders/langchain.mjs';
import { runMastra } from '../contenders/mastra.mjs';
import { runOpenAIAgents } from '../contenders/openai-agents.mjs';
import { runStrands } from '../contenders/strands.mjs';
import { continuity, kept } from './continuity.mjs';
import { Scorer } from './metrics.mjs';
import { detectUses } from './reread.mjs';

/** Each session's uses of earlier outputs (`reread.mjs`), found once per session object. */
const usesOf = new WeakMap();
function sessionUses(session) {
  if (!usesOf.has(session)) usesOf.set(session, detectUses(session));
  return usesOf.get(session);
}

/** Every contender: its name in the tables, the package and code path it runs. */
export const CONTENDERS = [
  { name: 'none', via: 'AI SDK 7 `generateText`, no context management', run: (s, o) => runAiSdk(s, { ...o, kind: 'none' }) },
  { name: 'ai-sdk pruneMessages', via: 'AI SDK 7 `pruneMessages` in `prepareStep` (the documented settings)', run: (s, o) => runAiSdk(s, { ...o, kind: 'prune' }) },
  { name: 'langchain summarization', via: 'LangChain v1 `createAgent` + `summarizationMiddleware` (trigger 0.85 of the window, keep 0.2)', run: (s, o) => runLangChain(s, { ...o, kind: 'summarization' }) },
  { name: 'langchain context-editing', via: 'LangChain v1 `createAgent` + `contextEditingMiddleware` (`ClearToolUsesEdit`, trigger 0.85 of the window, keeps 3)', run: (s, o) => runLangChain(s, { ...o, kind: 'context-editing' }) },
  { name: 'deepagents', via: 'DeepAgents JS `createDeepAgent`, default middleware', run: (s, o) => runLangChain(s, { ...o, kind: 'deepagents' }) },
  { name: 'strands auto', via: "Strands Agents TS SDK `Agent({ contextManager: 'auto' })`, the model's `contextWindowLimit` the window", run: (s, o) => runStrands(s, o) },
  { name: 'context-compactor simple', via: 'context-compactor `prepareStep` + `wrapTools`, preset simple', run: (s, o) => runAiSdk(s, { ...o, kind: 'compactor', preset: 'simple' }) },
  { name: 'context-compactor smart', via: 'context-compactor `prepareStep` + `wrapTools`, preset smart', run: (s, o) => runAiSdk(s, { ...o, kind: 'compactor', preset: 'smart' }) },
  { name: 'context-compactor smart (stateless)', via: 'context-compactor, preset smart, as a stateless route handler: a new compactor per user turn with `statePath` in one shared store, the raw history re-sent, `prepareStep` + `wrapTools`', run: (s, o) => runAiSdk(s, { ...o, kind: 'compactor', preset: 'smart', host: 'stateless' }) },
  { name: 'context-compactor smart (middleware)', via: 'context-compactor, preset smart, one compactor through `wrapLanguageModel({ model, middleware: compactor.middleware() })` (no `prepareStep`) + `wrapTools`', run: (s, o) => runAiSdk(s, { ...o, kind: 'compactor', preset: 'smart', host: 'middleware' }) },
  { name: 'langchain + context-compactor smart', via: 'LangChain v1 `createAgent` + `compactorMiddleware` (`context-compactor/langchain`, preset smart) + its recovery tools', run: (s, o) => runLangChain(s, { ...o, kind: 'compactor' }) },
  { name: 'mastra token-limiter', via: 'Mastra `Agent` + `ToolCallFilter` + `TokenLimiterProcessor` (limit 0.85 of the window), the thread in memory', run: (s, o) => runMastra(s, { ...o, kind: 'builtin' }) },
  { name: 'mastra + context-compactor smart', via: 'Mastra `Agent` + `compactorProcessor` (`context-compactor/mastra`, preset smart) + its recovery tools, the thread in memory', run: (s, o) => runMastra(s, { ...o, kind: 'compactor' }) },
  { name: 'openai-agents none', via: 'OpenAI Agents SDK `run()`, no context management (its own is server-side Responses compaction, which cannot run offline)', run: (s, o) => runOpenAIAgents(s, { ...o, kind: 'none' }) },
  { name: 'openai-agents + context-compactor smart', via: 'OpenAI Agents SDK `run()` + `compactorInputFilter` + `compactorModel` (`context-compactor/openai-agents`, preset smart) + `compactorTools` + its recovery tools', run: (s, o) => runOpenAIAgents(s, { ...o, kind: 'compactor' }) },
  { name: 'cloudflare sessions compactAfter', via: "Cloudflare Agents: an `AIChatAgent`'s turn (one `streamText` per user message over `convertToModelMessages` of the `Sessions` history with its overlays; the user message and the turn's assistant UI message persisted) with `agents/sessions` `onCompaction(createCompactFunction({ summarize })).compactAfter(0.85 of the window)` (keepRecentTokens 20k, the default), `node:sqlite` as the Durable Object's SQLite", run: (s, o) => runCloudflare(s, { ...o, kind: 'builtin' }) },
  { name: 'cloudflare + context-compactor smart', via: "Cloudflare Agents: the same `AIChatAgent` turn, no Sessions compaction, `chatCompactor(ctx)` per turn + `streamTextOptions` (`context-compactor/cloudflare`, preset smart; store and state in the Durable Object's key-value storage over `node:sqlite`); in Node a resolve hook maps dist/cloudflare.js's `./entry/workerd.js` to `./entry/node.js`", run: (s, o) => runCloudflare(s, { ...o, kind: 'compactor' }) },
  { name: 'context-compactor aggressive', via: 'context-compactor `prepareStep` + `wrapTools`, preset aggressive', run: (s, o) => runAiSdk(s, { ...o, kind: 'compactor', preset: 'aggressive' }) },
];

/** Feeds the scorer from a contender's models and keeps the harness's own time apart. Keeps the
 * arena's clock in step with the replay: the user's think time before each turn passes when the
 * replay begins the turn (`Replay.begin` → `#enter`), the same for every contender, since every
 * contender's calls come through `call` with its replay and every contender begins each turn. */
export class Recorder {
  /** The last user turn whose think time the clock has passed. */
  #turn = -1;
  /** Whether context-compactor's contenders get the arena's clock as their `now` (`runOne`). */
  libraryClock = true;

  constructor(session, window) {
    this.scorer = new Scorer(window);
    this.ms = 0;
    this.before = continuity(session);
    this.compacted = false;
    this.uses = sessionUses(session);
    this.needles = new Map();
    for (const needle of session.needles) {
      const list = this.needles.get(needle.neededAt) ?? [];
      list.push(needle);
      this.needles.set(needle.neededAt, list);
    }
  }

  /** The arena's clock as epoch milliseconds (`Scorer.now`): session start 2026-01-05 09:00 UTC
   * plus the model calls, the waits on summaries and the users' think time so far. A contender may
   * hand it to a library as its clock. */
  now() {
    return this.scorer.now();
  }

  /** The clock passes the think time of every turn up to the replay's current one, once each. */
  #enter(replay) {
    for (let t = this.#turn + 1; t <= replay.turn; t++) this.scorer.idle(replay.turns[t].thinkSeconds ?? 0);
    this.#turn = Math.max(this.#turn, replay.turn);
  }

  /** A main model call: `build()` makes the prompt; `replay` says which turn and step it is.
   * Returns the prompt's tokens. The first call attaches the recorder to the replay: from then
   * on `replay.begin(t)` passes turn t's think time on the clock before the contender plans its
   * first call (turn 0 has none); a call of a turn not yet entered enters it here too. */
  call(build, replay) {
    const t0 = performance.now();
    if (!replay.onBegin) replay.onBegin = () => this.#enter(replay);
    this.#enter(replay);
    const prompt = build();
    // The session message this call answers with, and the earlier outputs that step used.
    const step = replay.turns[replay.turn].stepIndices[replay.step];
    const tokens = this.scorer.call(prompt, { step, uses: this.uses.get(step) });
    // The turn's last step: background summaries that will be ready by the next user message
    // are ready now (the contender has the rest of the turn to take them in).
    const next = replay.turns[replay.turn + 1];
    if (next && replay.step === replay.turns[replay.turn].steps.length - 1) this.scorer.settleWithin(next.thinkSeconds ?? 0);
    // The first prompt after a compaction (a summary, or a prompt that does not extend the one
    // before): is the latest plan there verbatim, and the working file's latest content?
    if (this.compacted || this.scorer.lastBroke) {
      const { plan, working } = this.before(step);
      if (this.compacted && plan) this.scorer.continuity('plan', kept(prompt, plan));
      if (working) this.scorer.continuity('working', working.pieces.every((piece) => kept(prompt, piece)));
    }
    this.compacted = false;
    // A needle is checked in the prompt of the call that answers its message: the first call of
    // the turn it asks in (a user message), or the call that wrote the step needing it.
    const turn = replay.turns[replay.turn];
    if (replay.step === 0) for (const needle of this.needles.get(turn.index) ?? []) this.scorer.needle(needle, prompt);
    for (const needle of this.needles.get(turn.stepIndices[replay.step]) ?? []) this.scorer.needle(needle, prompt);
    this.ms += performance.now() - t0;
    return tokens;
  }

  /** A summarizer call; one made in the background (`options.background`) returns a promise
   * that resolves when it is ready on the arena's clock (`Scorer.summary`), and marks no
   * compaction yet (`applied()` does, when the contender applies it). */
  summary(prompt, options) {
    const t0 = performance.now();
    const ready = this.scorer.summary(prompt, options);
    if (!options?.background) this.compacted = true;
    this.ms += performance.now() - t0;
    return ready;
  }

  /** A summary made in the background was applied: the next prompt is checked for continuity. */
  applied() {
    this.compacted = true;
  }
}

/** Runs one contender on one session at one window. */
export async function runOne(contender, session, window, { compactorOptions } = {}) {
  const recorder = new Recorder(session, window);
  // `{"clock": false}` in the options: context-compactor runs without the arena's clock (no
  // `now`: every call looks warm to it), the before of issue 32's idle-aware breaks.
  if (compactorOptions?.clock === false) {
    recorder.libraryClock = false;
    const { clock, ...rest } = compactorOptions;
    compactorOptions = Object.keys(rest).length ? rest : undefined;
  }
  const t0 = performance.now();
  try {
    // `compactorOptions` (run.mjs --compactor-options, a sweep) reach every context-compactor
    // contender's createCompactor; the peers take no options.
    const { stored } = await contender.run(session, { window, recorder, ...(compactorOptions ? { options: compactorOptions } : {}) });
    const wallMs = performance.now() - t0 - recorder.ms;
    return { contender: contender.name, session: session.name, window, ...recorder.scorer.result(stored), wallMs: Math.round(wallMs) };
  } catch (error) {
    return { contender: contender.name, session: session.name, window, error: String(error?.stack ?? error).split('\n').slice(0, 4).join(' | ') };
  }
}

