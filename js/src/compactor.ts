import { decode, decodeResult, encode, keepOriginals, keepsSurrogates, restoreStored, stringify, type Refs } from './codec.js';
import { middleware, recoveryTools, wrapTools, type CompactorMiddleware, type MiddlewareOptions, type ExecutableTool, type RecoveryToolOptions, type RecoveryToolSet } from './ai.js';
import { CompactorError, core, errorMessage } from './errors.js';
import { init, loadEncoding, loadModelTokenizer } from './core.js';
import { toolDefinitions, type ToolSetLike } from './tokens.js';
import { MemoryStore, checkPath, checked, timerMs, withTimeout, type FileStore } from './store.js';
import { overflowError, parseOverflow, type OverflowInfo } from './overflow.js';
import { DEFAULT_STATE_PATH, conversationHashes, readState, storeRequest, unreadState, type StoreReply, type StoreRequest, type StoredState } from './state.js';
import { AGENTS_MD_PATH } from './stores/composite.js';
import {
  AheadRun,
  WasmCompactor,
  hostSettings,
} from './wasm/context_compactor.js';
import type {
  Action,
  CompactionEvent,
  CompactorState,
  EncodingName,
  ManageResult,
  MessageLike,
  ModelInfo,
  Plan,
  PreCompactContext,
  PreCompactDecision,
  Stats,
  SummarizeAction,
  SummaryRequest,
  Usage,
} from './types.js';

/** Tier-1 options (defaults from the seeds; see src/config.rs). */
export interface OffloadOptions {
  /** Offload tool results above this many tokens. Default 2,000 (`aggressive`: 1,000). */
  thresholdTokens?: number;
  /** …or above this fraction of the window, whichever is smaller. Default 0.25. */
  maxWindowFraction?: number;
  /** Preview lines from the start. Default 10. */
  previewHeadLines?: number;
  /** Preview lines from the end. Default 3. */
  previewTailLines?: number;
  /** Preview lines are cut at this many characters. Default 200. */
  previewLineChars?: number;
  /** Tools not offloaded at `thresholdTokens`. Default: write_todos, list_skills, read_file,
   * grep, ls, glob. Their results are still offloaded over `maxWindowFraction` of the window (an
   * app's `read_file` of a huge file cannot fill it), except a recovery tool's read of the store
   * (a call of `read_file`, `grep` or `ls` whose path is `/` or under the compactor's
   * directories, or a `read_file` naming none), never offloaded. */
  excludedTools?: string[];
  /** Store directory for offloaded results. Default `/tool_outputs/`. */
  pathPrefix?: string;
  /** A user message text (string content, text part, or a text file part: `text/*`, JSON, XML,
   * YAML, CSV as base64 or a `data:` URL) above this many tokens is offloaded the same way, its
   * preview and path left in place (a pasted log or file). Default 50,000
   * (DeepAgents' figure), or `maxWindowFraction` of the window if smaller; 0 turns it off. */
  userThresholdTokens?: number;
  /** Store directory for offloaded user texts. Default `/user_messages/`. */
  userPathPrefix?: string;
}

/** Tier-2 options (see src/config.rs `CompactionConfig`). */
export interface CompactionOptions {
  /** Whether tier 2 runs at all. Default true (false in the `simple` preset). */
  enabled?: boolean;
  /** Tier 2 fires above this fraction of the window. Default 0.70 (`aggressive`: 0.50;
   * `simple`, without tier 2: 0.85, where its truncation starts). */
  triggerFraction?: number;
  /** …and compacts down to this fraction. Default 0.35 (`aggressive`: 0.25; `simple`: 0.60). */
  targetFraction?: number;
  /** Edits to earlier messages saving fewer tokens are skipped (prompt cache). Default 500
   * (`aggressive`: 100). */
  minSavingTokens?: number;
  /** The last K tool results stay verbatim. Default 10 (`aggressive`: 5). */
  keepToolResults?: number;
  /** …while those kept fit in this share of the window, newest first (the newest always
   * stays). Default 0.25; 1 keeps the last K whatever their size. */
  keepToolResultsFraction?: number;
  evictInputTools?: string[];
  evictInputFields?: string[];
  /** Characters of evicted file content kept as a preview. Default 100. */
  inputPreviewChars?: number;
  readTools?: string[];
  pathFields?: string[];
  pathPrefix?: string;
  /** The files being worked on: the latest content (latest read, and the writes and edits
   * after it) of the files written or edited most recently is never evicted, deduped or
   * masked, and its tool-call/result pairs are kept right after a summary, so the agent does
   * not re-read them. */
  workingFiles?: {
    /** Default 1: the file being edited; 0 turns it off. */
    maxFiles?: number;
    /** Default 20,000, and at most 10 % of the window; newest files first. */
    maxTokens?: number;
  };
}

/** The prompt-cache cost model (see src/cache.rs). Prices are multiples of the uncached input
 * price; every default comes from the model's family. */
export interface CacheOptions {
  /** Default: Claude → `anthropic` (read 0.1, write 1.25), GPT / o-series → `openai` (read 0.5,
   * 0.25 for GPT-4.1, 0.1 for GPT-5), Gemini → `gemini` (read 0.25), others → `none`. */
  provider?: 'anthropic' | 'openai' | 'gemini' | 'none';
  /** Anthropic's cache lifetime: `'1h'` writes cost 2×. Default `'5m'` (1.25×). */
  ttl?: '5m' | '1h';
  readMultiplier?: number;
  writeMultiplier?: number;
  /** When tier 2 must change an earlier message, also take every tier-2 edit at or after it
   * (no further cache cost). Default: true with a cache, false without. */
  batch?: boolean;
  /** Skip a tier-2 break saving fewer tokens than this while under the lossy trigger. Default
   * with a cache 2,000 or 5 % of the window, whichever is smaller; 0 without. */
  minBreakSavingTokens?: number;
  /** How long the provider keeps a prompt cache without a call, in seconds. Default: Anthropic
   * 300 (3,600 with `ttl: '1h'`), OpenAI and Gemini 600, none 0. A call later than this after
   * the last one (by the compactor's `now` clock) takes the edits a warm cache defers. Set it for
   * a longer retention you asked for (OpenAI's `prompt_cache_retention: '24h'`: 86,400). */
  lifetimeSeconds?: number;
}

/** Tier-3 options (see src/config.rs `HistoryConfig`). */
export interface HistoryOptions {
  /** Default `summarize` (`simple`: `truncate`). */
  strategy?: 'summarize' | 'truncate' | 'importance' | 'off';
  /** Fires above this fraction of the window (or when tier 2 falls short). Default 0.85
   * (`aggressive`: 0.80). */
  triggerFraction?: number;
  /** Past this fraction an `onPreCompact` cancel is overridden. Default 0.95. */
  hardLimitFraction?: number;
  /** Summaries made ahead of need: above this fraction of the window, when tier 2 alone would
   * not reach its target once the conversation grows to the compaction trigger, the summary the
   * lossy tier will need is asked in the background
   * (`CompactorOptions.background`). Default 0.6 (`aggressive`: 0.4); `null` turns it off. */
  aheadFraction?: number | null;
  /** Recent messages kept verbatim, as a share of the window. Default 0.15 (`aggressive`:
   * 0.10). */
  keepRecentFraction?: number;
  /** Keep this many recent messages instead (`simple`: 10). */
  keepRecentMessages?: number | null;
  /** Summary size cap (also ≤ 10 % of the window). Default 2,000 (`aggressive`: 1,000). */
  summaryMaxTokens?: number;
  /** Cap of the span sent to the summarizer. Default: a quarter of the window. */
  requestMaxTokens?: number | null;
  /** Each part is cut to this many characters in the summarizer's copy. Default 2,000. */
  requestPartChars?: number;
  /** Added to every summary prompt. */
  instructions?: string | null;
  /** Where transcripts go. Default `/conversation_history/`. */
  pathPrefix?: string;
  importance?: {
    userScore?: number;
    assistantScore?: number;
    toolUseScore?: number;
    minScoreThreshold?: number;
    shortAssistantChars?: number;
  };
  /** Plan and todo tools: the latest input of any of them (the agent's live plan) is carried
   * verbatim through every summary, truncation and importance drop, as a section
   * `[Current plan, kept verbatim] the latest <tool> input:\n<JSON>` at the end of the summary
   * or notice. Default `write_todos`, `TodoWrite`, `update_plan`, `TaskCreate`, `TaskUpdate`;
   * `[]` turns it off. */
  planTools?: string[];
  /** Tools whose calls and results are pinned: never offloaded, evicted, deduped, masked,
   * summarized or dropped (kept, with their call/result group, right after the summary or
   * notice). Default none. Pin one message or part with
   * `providerOptions: { contextCompactor: { pin: true } }`. Pins count against the window; a
   * `pinned-over-budget` note says when they alone exceed the target. */
  pinnedTools?: string[];
}

/** Writes a summary: send `request.system` and `request.messages` to an LLM, at most
 * `request.maxTokens` out, and return the text. A throw, or no answer before
 * `summarizeTimeoutMs` (then `signal` aborts), makes the core use its heuristic summary (the
 * event says so). `summarizer(model)` builds one from an AI SDK model. */
/** `options.model`: the agent's model name (the compactor's `model`), so a summarizer can tell
 * whether it may send `request.continuation`. `options.background`: the summary is made ahead of
 * need (`Plan.ahead`), off the critical path: no model call waits for it. */
export type Summarizer = (request: SummaryRequest, options: { signal: AbortSignal; model?: string; background?: boolean }) => Promise<string> | string;

export interface CompactorOptions {
  /** Model name for the registry (`gpt-4o`, `claude-sonnet-4-5`, `openai/gpt-4.1`, ...). */
  model?: string;
  /** Context window in tokens; overrides the registry. */
  contextWindow?: number;
  /** Room kept for the reply: the hard limit (`history.hardLimitFraction`) is at most the window
   * less this, so a call with a summary pending never goes on past it. Default: none kept. */
  maxOutputTokens?: number;
  encoding?: EncodingName;
  /** Where offloaded content goes. Default: a new MemoryStore. */
  store?: FileStore;
  /** A state saved from `compactor.state()` (stats, calibration). */
  state?: CompactorState;
  offload?: OffloadOptions;
  /** Estimated tokens per image part. Default 1,600. */
  imageTokens?: number;
  /** Estimated tokens per file part. Default 1,600. */
  fileTokens?: number;
  /** Tool definitions sent with every request: they count against the window. JSON
   * definitions (`{name, description, inputSchema}`), or an AI SDK tool set (`{name: tool({...})}`),
   * whose schemas are read from `inputSchema.jsonSchema` (AI SDK `jsonSchema()`/`zodSchema()`) or
   * taken as plain JSON schemas. */
  tools?: ToolSetLike;
  /** Starting point for every threshold: `simple`, `smart` (the defaults) or `aggressive`. */
  preset?: 'simple' | 'smart' | 'aggressive';
  compaction?: CompactionOptions;
  /** The prompt-cache cost model (see docs/API.md, "The compaction record and the prompt cache"). */
  cache?: CacheOptions;
  history?: HistoryOptions;
  /** Writes summaries (tier 3). Without it, the heuristic summary is used. */
  summarize?: Summarizer;
  /** A summary not written within this many milliseconds is abandoned (its signal aborts) and
   * the heuristic summary used. Default 120,000. */
  summarizeTimeoutMs?: number;
  /** Every store call the compactor makes (offloads, transcripts, the state at `statePath`, the
   * summary leases, `systemPrompt`, the recovery tools) that has not answered within this many
   * milliseconds counts as failed: an offload or transcript is not applied (its content stays in
   * the conversation, the event says `failed`), a state that cannot be read is planned without,
   * a save that does not land is a `stateError`. Default 10,000; `null`: the store's calls are
   * made directly (a store that bounds its own). */
  storeTimeoutMs?: number | null;
  /** Keeps the compactor's state (stats, calibration) in `store` at this path: loaded by
   * `createCompactor`, saved at the end of a `manage`/`compact` call that changed it (one write
   * per call: Cloudflare KV allows one write per second per key). Offloads at tool-return time
   * are saved with the next call, or by `saveState()`. For stateless hosts (edge workers). */
  statePath?: string;
  /** Called before a compaction (tier 2 or 3, or manual) runs; may cancel it, add instructions
   * or supply the summary. */
  onPreCompact?: (context: PreCompactContext) => Promise<PreCompactDecision | void> | PreCompactDecision | void;
  /** Called for every compaction event, in order (for UIs and logs), once the call's work is
   * done. One that throws is logged with `console.error` and the call still returns. */
  onEvent?: (event: CompactionEvent) => void;
  /** Recovery from a provider's "prompt too long" error (`middleware()`, `recover`). */
  overflow?: OverflowOptions;
  /** Make summaries ahead of need, off the critical path (default: on when `summarize` is set,
   * unless `state` is given without `statePath`: a compactor made per request, which a summary
   * back after the response would not reach).
   * Above `history.aheadFraction` a call asks the summary the lossy tier will need and returns
   * without waiting for it; the summary runs as a promise (kept alive by `waitUntil` when
   * given) and the call that reaches the trigger applies it. While it is not back, calls go on
   * unsummarized until the hard limit; only there does a call wait for a summary. With
   * `statePath`, the summary is kept beside the state (`<statePath>.summaries/ahead-<key>.json`)
   * so that the next request, on any instance, applies it. `settled()` waits for it. */
  background?: boolean;
  /** Keeps a background summary alive after the response in a serverless route: Vercel's
   * `waitUntil` (`@vercel/functions`), Next.js `after`, a Worker's `ctx.waitUntil`
   * (`(p) => ctx.waitUntil(p)`). Each background summary's promise is handed to it. */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** The clock, in milliseconds since the Unix epoch. Default `Date.now`. Each `manage` hands
   * its time to the core, and the state records when the last call went out: a call made after
   * the provider's prompt cache expired (`cache.lifetimeSeconds`; Anthropic 5 minutes, OpenAI
   * 10) writes the whole prompt again anyway, so it takes the edits a warm cache defers (a
   * `cache-expired` note says so). Give a fixed clock for replays and tests. */
  now?: () => number;
}

/** Overflow recovery: how many harder compactions and retries one model call may take. */
export interface OverflowOptions {
  /** Compact-and-retry rounds per model call after a "prompt too long" error. Default 1; 0
   * turns recovery off (the error goes through unchanged). */
  retries?: number;
}

/** What `recover` returns: `manage`'s result and what the provider's error said. */
export interface RecoverResult<M extends MessageLike = MessageLike> extends ManageResult<M> {
  overflow: OverflowInfo;
}

/** Options the core does not see: they stay in the host. */
const HOST_ONLY = new Set(['store', 'state', 'statePath', 'onEvent', 'summarize', 'summarizeTimeoutMs', 'storeTimeoutMs', 'onPreCompact', 'overflow', 'background', 'waitUntil', 'now']);

export { DEFAULT_STATE_PATH };

/** What this host does with its own options: the core settles them from what the app gave
 * (`src/config.rs` `host_settings`: the defaults, the checks, when summaries go to the
 * background). */
function settle(options: CompactorOptions): { summarizeTimeoutMs: number; storeTimeoutMs: number | null; overflowRetries: number; background: boolean } {
  const { summarizeTimeoutMs, storeTimeoutMs, overflow, background } = options;
  const gave = { store: options.store != null, state: options.state !== undefined, statePath: options.statePath !== undefined, summarize: options.summarize !== undefined };
  return JSON.parse(core(() => hostSettings(stringify({ summarizeTimeoutMs, storeTimeoutMs, overflow, background, ...gave }))));
}
/** The state read by `createCompactor` (a symbol key: the core never sees it). */
const STORED = Symbol('stored state');

interface RunOptions {
  trigger: 'auto' | 'manual';
  instructions?: string | undefined;
  /** `prepareStep`'s step, stamped on the events. */
  stepNumber?: number | undefined;
  /** Recovering from a provider's overflow error: what it said, the attempt, the error. */
  overflow?: { info: OverflowInfo; attempt: number; cause: unknown } | undefined;
}

/** AI SDK `prepareStep` argument, structurally (v5–v7). */
export interface PrepareStepInput<M extends MessageLike = MessageLike> {
  messages: M[];
  steps?: ReadonlyArray<{ usage?: { inputTokens?: number | undefined } | undefined }>;
  instructions?: unknown;
  stepNumber?: number;
}

/** Model names already warned about in this process. */
const warned = new Set<string>();

/** An unknown model (the plan's `unknown-model` note: no registry entry, no `contextWindow`)
 * is planned against a small default window; said on the console once per name per process, as
 * the plans' notes are seldom read (`prepareStep` and the middlewares never show them). */
function warnOnce(plan: Plan): void {
  for (const note of plan.notes) {
    if (note.type !== 'unknown-model' || warned.has(note.name)) continue;
    warned.add(note.name);
    const meant = note.didYouMean?.length ? ` Did you mean ${note.didYouMean.map((name) => `"${name}"`).join(' or ')}?` : '';
    console.warn(`context-compactor: unknown model "${note.name}": planned against a ${note.assumedWindow.toLocaleString('en-US')}-token window.${meant} Give its contextWindow (and maxOutputTokens), or a name the registry knows (modelInfo).`);
  }
}

/** Creates a compactor; loads the core first if needed. */
export async function createCompactor(options: CompactorOptions = {}): Promise<Compactor> {
  // The core first: options may hold recovery tools made before it loaded, which it describes.
  await init();
  checkOptions(options);
  if (options.statePath !== undefined && options.state === undefined && options.store) {
    // A read that fails or does not answer in time: plan from the history alone, save only over
    // nothing (a state that is there after all is found by the save: see `#run`).
    const path = checkPath(options.statePath, 'statePath');
    const stored = await readState(bounded(options.store, settle(options).storeTimeoutMs), path).catch((error: unknown) => {
      if (error instanceof CompactorError && error.code === 'invalid_config') throw error; // not a state
      return unreadState(error);
    });
    options = { ...options, ...(stored.state ? { state: stored.state } : {}), [STORED]: stored } as CompactorOptions;
  }
  let compactor: Compactor;
  try {
    compactor = new Compactor(options);
  } catch (error) {
    // A model on cl100k_base (gpt-4, gpt-3.5): load it, once, and try again.
    if (!(error instanceof CompactorError && error.code === 'encoding_not_loaded')) throw error;
    await loadEncoding(error.details.name as EncodingName);
    compactor = new Compactor(options);
  }
  // A model whose tokenizer the package ships (qwen3, deepseek_v3, ...): load it, then count
  // exactly with it (the first compactor, which estimated, is freed).
  if (!(await loadModelTokenizer(compactor.model.tokenizer))) return compactor;
  compactor.dispose();
  return new Compactor(options);
}

/** What JSON cannot say about the options, checked before they cross as JSON: an options value
 * that is not an object, a callback that is not a function, a tool set that is neither an object
 * nor a list, and a number that is not finite (JSON writes NaN and Infinity as null, which would
 * read as "unset"). */
function checkOptions(options: unknown): asserts options is CompactorOptions {
  const invalid = (field: string, message: string) => new CompactorError('invalid_config', `${field}: ${message}`, { field });
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw invalid('options', `expected an object of options, got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`);
  const o = options as Record<string, unknown>;
  for (const field of ['onEvent', 'summarize', 'onPreCompact', 'waitUntil', 'now']) {
    if (o[field] !== undefined && typeof o[field] !== 'function') throw invalid(field, `expected a function, got ${typeof o[field]}`);
  }
  if (o.tools !== undefined && (o.tools === null || typeof o.tools !== 'object')) throw invalid('tools', 'expected a tool set (an object of tools) or a list of tool definitions');
  const walk = (value: unknown, path: string, depth: number): void => {
    if (typeof value === 'number' && !Number.isFinite(value)) throw invalid(path, `expected a finite number, got ${value}`);
    if (depth > 8 || value === null || typeof value !== 'object' || ArrayBuffer.isView(value)) return;
    if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${path}[${i}]`, depth + 1));
    else if (Object.getPrototypeOf(value) === Object.prototype) for (const [key, item] of Object.entries(value)) walk(item, `${path}.${key}`, depth + 1);
  };
  for (const [key, value] of Object.entries(o)) if (!HOST_ONLY.has(key) || key === 'overflow' || key === 'summarizeTimeoutMs' || key === 'storeTimeoutMs') walk(value, key, 0);
}

/** `store` as a compactor calls it: each call bounded by the settled `storeTimeoutMs`. */
function bounded(store: FileStore, ms: number | null): FileStore {
  return ms === null ? checked(store) : withTimeout(store, ms);
}

/** A state saved by `compactor.saveState()` (or `statePath`), or undefined when there is none.
 * A file that is not a state is a typed error, not silently ignored. */
export async function loadState(store: FileStore, path: string = DEFAULT_STATE_PATH): Promise<CompactorState | undefined> {
  await init(); // the core reads the state (it may be the first call of a process)
  return (await readState(checked(store), path)).state;
}

/**
 * Keeps a conversation inside its model's context window. Create it with `createCompactor`.
 * `manage` plans, stores what leaves the conversation, and applies — in that order, so nothing
 * is removed before it is stored.
 */
export class Compactor {
  readonly store: FileStore;
  /** `store` as the compactor calls it: every call bounded by `storeTimeoutMs`. */
  readonly #io: FileStore;
  #core: WasmCompactor;
  /** The core's config, to build it again on a reloaded state. */
  readonly #config: string;
  /** Messages handed to the running call (their hashes are saved with the state: state.ts). */
  #input: readonly MessageLike[] = [];
  readonly #onEvent: ((event: CompactionEvent) => void) | undefined;
  readonly #summarize: Summarizer | undefined;
  readonly #onPreCompact: CompactorOptions['onPreCompact'];
  readonly #summarizeTimeoutMs: number;
  readonly #statePath: string | undefined;
  readonly #overflowRetries: number;
  /** Summaries are made ahead of need (`options.background`), and what keeps them alive. */
  readonly #background: boolean;
  readonly #waitUntil: ((promise: Promise<unknown>) => void) | undefined;
  /** The clock (`options.now`). */
  readonly #now: () => number;
  /** Background summaries under way, by key. */
  readonly #aheadRuns = new Map<string, Promise<void>>();
  /** Serializes manage() calls: two racing calls would plan against stale messages. */
  #queue: Promise<unknown> = Promise.resolve();
  /** A call's callback (`onPreCompact`, the summarizer) is being invoked: a call of this
   * compactor made now is made from inside it (see `#enqueue`). */
  #inCallback = 0;
  /** The conversation the core holds: the message objects last synced, a mark of each (see
   * `mark`), and the binary values their JSON refers to. */
  #held: { messages: unknown[]; marks: number[]; refs: Refs } = { messages: [], marks: [], refs: new Map() };
  /** The last compaction's input and output: a later conversation that still starts with that
   * input continues from the output (see `#rebase`). */
  #last: { input: unknown[]; marks: number[]; output: unknown[] } | undefined;
  /** Calls of `manage`/`compact` so far: each event names the call that fired it. */
  #calls = 0;
  /** @internal The tools of the agent's last call as the provider got them (set by
   * `middleware()`), for a summary continuation. */
  agentTools: readonly unknown[] | undefined;
  /** `prepareStep`'s system messages, the same objects while the instructions stay the same. */
  #system: { instructions: unknown; messages: MessageLike[] } | undefined;

  constructor(options: CompactorOptions = {}) {
    checkOptions(options);
    const config = Object.fromEntries(Object.entries(options).filter(([key]) => !HOST_ONLY.has(key)));
    if (options.tools !== undefined) config.tools = toolDefinitions(options.tools);
    this.store = options.store ?? new MemoryStore();
    const missing = (['read', 'write', 'list', 'delete'] as const).filter((m) => typeof this.store[m] !== 'function');
    if (missing.length > 0) {
      throw new CompactorError('invalid_config', `store must implement read, write, list and delete; missing: ${missing.join(', ')}`, { field: 'store' });
    }
    this.#onEvent = options.onEvent;
    this.#summarize = options.summarize;
    this.#onPreCompact = options.onPreCompact;
    const settled = settle(options);
    this.#summarizeTimeoutMs = settled.summarizeTimeoutMs;
    this.#background = settled.background;
    this.#overflowRetries = settled.overflowRetries;
    this.#io = bounded(this.store, settled.storeTimeoutMs);
    this.#waitUntil = options.waitUntil;
    this.#now = options.now ?? Date.now;
    this.#statePath = options.statePath === undefined ? undefined : checkPath(options.statePath, 'statePath');
    const state = options.state === undefined ? undefined : stringify(options.state);
    this.#config = stringify(config);
    this.#core = core(() => new WasmCompactor(this.#config, state));
    // The state `createCompactor` read at `statePath`: the core keeps what the next save is
    // conditional on, and whether its state changed since (src/stored.rs `Persist`).
    const stored = (options as { [STORED]?: StoredState })[STORED];
    // Otherwise the first call reads what is stored there (`persistLater`).
    if (stored && this.#statePath !== undefined) core(() => this.#core.persistAt(this.#statePath!, stored.text ?? undefined, true, stored.unread));
    else if (this.#statePath !== undefined) this.#core.persistLater(this.#statePath, false);
    // The core's notes on the configuration alone (an empty conversation's plan), told once.
    warnOnce(JSON.parse(this.#planCore('[]', undefined).json) as Plan);
  }

  /** The model as resolved by the registry and overrides. */
  get model(): ModelInfo {
    return JSON.parse(this.#core.model()) as ModelInfo;
  }

  /** Dry run: what `manage` (or, with `trigger: 'manual'`, `compact`) would do, the summary it
   * would ask ahead of need (`plan.ahead`) included. Plain data, no IO. */
  plan(messages: readonly MessageLike[], options?: { trigger?: 'auto' | 'manual'; instructions?: string }): Plan {
    this.#sync(messages);
    return this.#hydrate(this.#planCore(undefined, planOptions(options, this.#background, this.#time())), messages);
  }

  /** The clock's time, a whole number of milliseconds (a bad clock is a typed error). */
  #time(): number {
    const now = this.#now();
    if (typeof now !== 'number' || !Number.isFinite(now) || now < 0) {
      throw new CompactorError('invalid_config', `now() must return milliseconds since the Unix epoch, got ${String(now)}`, { field: 'now' });
    }
    return Math.floor(now);
  }

  /** Tokens used by `messages` against the window. */
  usage(messages: readonly MessageLike[]): Usage {
    this.#sync(messages);
    return JSON.parse(core(() => this.#core.usage(undefined))) as Usage;
  }

  /**
   * Makes the core hold `messages`. Messages are compared with the ones last synced by
   * identity and by a mark of their sizes: the unchanged prefix stays in the core and only the
   * rest crosses the boundary (a conversation that grew by one message sends one message).
   * `fresh` sends everything. Compaction (`manage`, `compact`) always plans on a fresh sync, so
   * an in-place edit that keeps every size is at worst miscounted by `plan`/`usage`, never
   * applied stale. Returns whether every message crossed (then the held conversation is as
   * fresh as a `fresh` sync would make it).
   */
  #sync(messages: readonly MessageLike[], fresh = false): boolean {
    if (!Array.isArray(messages)) {
      this.#held = { messages: [], marks: [], refs: new Map() };
      core(() => this.#core.sync(0, encode(messages).json));
      return true;
    }
    const held = this.#held;
    const marks = messages.map(mark);
    let keep = 0;
    if (!fresh) {
      const max = Math.min(messages.length, held.messages.length);
      while (keep < max && messages[keep] === held.messages[keep] && marks[keep] === held.marks[keep]) keep++;
      if (keep === messages.length && keep === held.messages.length) return false;
    }
    let refs: Refs = keep === 0 ? new Map() : held.refs;
    const kept = keepsSurrogates(refs);
    const appended = keep === 0 ? messages : messages.slice(keep);
    const { json } = encode(appended, refs, keep, false);
    this.#held = { messages: [], marks: [], refs: new Map() };
    core(() => this.#core.sync(keep, json));
    // Lone surrogates as the core's parse saw them (or, when it could not say, as a search of
    // the JSON finds them): what the JSON lost of them is kept (codec.ts). The first of a
    // conversation synced in pieces: synced whole again, so that the real U+FFFDs of the
    // pieces before are told apart from it.
    if (keepOriginals(appended, json, refs, this.#core.surrogateEscapes()) && keep > 0 && !kept) {
      keep = 0;
      const whole = encode(messages, (refs = new Map()));
      core(() => this.#core.sync(0, whole.json));
    }
    this.#held = { messages: [...messages], marks, refs };
    return keep === 0;
  }

  /** The core's plan of the held conversation (or of `messagesJson`): its JSON, and apart from
   * it the summary request's prompt as UTF-8 (most of a summarizing plan, decoded when read). */
  #planCore(messagesJson: string | undefined, options: string | undefined): CorePlan {
    const json = core(() => this.#core.plan(messagesJson, options));
    return { json, prompt: this.#core.takePrompt() };
  }

  /** A plan as the core sends it, with its bulk restored on demand: a summary request's
   * `prompt` (and `messages`) decode when first read, a transcript's `json` and `markdown`
   * render from `messages` when first read (the host reads them to write them). */
  #hydrate(planned: CorePlan, messages: readonly MessageLike[], refs: Refs = this.#held.refs): Plan {
    return this.#hydrated(JSON.parse(planned.json) as Plan, planned.prompt, messages, refs);
  }

  /** `#hydrate` of a parsed plan. `prompt`: its summary request's prompt as UTF-8, when the core
   * sent it apart. `written`: files a session wrote, path → text, which a transcript's are. In
   * `session`, the core's session holds `messages` (nothing is synced). */
  #hydrated(plan: Plan, prompt: Uint8Array | undefined, messages: readonly MessageLike[], refs: Refs, written?: ReadonlyMap<string, string>, session = false): Plan {
    for (const action of plan.actions) this.#hydrateAction(action, prompt, messages, refs, written, session);
    return plan;
  }

  /** A continuation's messages: the conversation the core holds, as planned, up to the span's
   * end, then the instruction. */
  #continued(continuation: { end: number; instruction: string }, refs: Refs): MessageLike[] {
    const prefix = decode<MessageLike[]>(this.#core.plannedPrefix(continuation.end), refs);
    return [...prefix, { role: 'user', content: continuation.instruction }];
  }

  #hydrateAction(action: Action, prompt: Uint8Array | undefined, messages: readonly MessageLike[], refs: Refs, written: ReadonlyMap<string, string> | undefined, session: boolean): void {
    if (action.type === 'summarize') {
      lazyPrompt(action.request, prompt);
      const continuation = action.request.continuation;
      if (continuation) {
        let built: MessageLike[] | undefined;
        const tools = this.agentTools;
        Object.defineProperties(continuation, {
          messages: {
            get: () => {
              if (built) return built;
              if (!session) this.#sync(messages);
              return (built = this.#continued(continuation, refs));
            },
            enumerable: false,
            configurable: true,
          },
          ...(tools ? { tools: { value: tools, enumerable: false, configurable: true } } : {}),
        });
      }
    }
    // What the store gets is the app's original text (lone surrogates: see codec.ts), not the
    // core's U+FFFD copy.
    const edit = action as { path?: unknown; content?: unknown; replace?: { kind?: unknown } };
    if (typeof edit.content === 'string' && typeof edit.path === 'string') edit.content = restoreStored(edit.path, edit.content, refs, edit.replace?.kind === 'file-text');
    if (action.type !== 'save-transcript') return;
    const strategy = action.lossyStrategy;
    type Files = { path: string; json: string; markdown: string };
    let rendered: Files | undefined;
    const json = written?.get(action.path);
    const markdown = written?.get(action.readablePath);
    if (json !== undefined && markdown !== undefined) rendered = { path: action.path, json, markdown };
    const render = (): Files => {
      if (rendered) return rendered;
      if (!session) this.#sync(messages);
      const files = JSON.parse(core(() => this.#core.transcript(undefined, strategy))) as Files;
      if (files.path !== action.path) {
        throw new CompactorError('plan_mismatch', `the conversation differs from the one planned (transcript ${action.path}): was it changed in place?`, { actionId: action.id });
      }
      return (rendered = { ...files, json: restoreStored(action.path, files.json, refs), markdown: restoreStored(action.readablePath, files.markdown, refs) });
    };
    Object.defineProperties(action, {
      json: { get: () => render().json, enumerable: true, configurable: true },
      markdown: { get: () => render().markdown, enumerable: true, configurable: true },
    });
  }

  /** Plans, executes against the store (and the summarizer), applies. Concurrent calls on one
   * compactor run one after another. */
  manage<M extends MessageLike>(messages: readonly M[]): Promise<ManageResult<M>> {
    return this.#enqueue(() => this.#run(messages, { trigger: 'auto' }), 'manage');
  }

  /** Compacts now, whatever the usage: every tier runs and older messages are summarized (or
   * truncated, per `history.strategy`). `instructions` steer the summary. */
  compact<M extends MessageLike>(messages: readonly M[], options: { instructions?: string } = {}): Promise<ManageResult<M>> {
    if (options?.instructions !== undefined && typeof options.instructions !== 'string') return Promise.reject(new TypeError(`compact: instructions must be a string, got ${options.instructions === null ? 'null' : typeof options.instructions}`));
    return this.#enqueue(() => this.#run(messages, { trigger: 'manual', instructions: options.instructions }), 'compact');
  }

  #enqueue<T>(job: () => Promise<T>, what: string): Promise<T> {
    // Made from inside a call's own callback, it would wait for the call that waits for the
    // callback. Seen when made as the callback starts (before its first await); one made after
    // that waits for the call to end (docs/API.md).
    if (this.#inCallback > 0) return Promise.reject(busy(what));
    const run = this.#queue.then(job);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * A shortcut, not what makes the result right: the core's compaction record replays every
   * earlier edit onto any history (raw or compacted, old objects or new, this process or another
   * with the saved state), so the same prompt comes out either way. An app that keeps the raw
   * history in this process sends the last compaction's input again, grown by the new turn;
   * continuing from that compaction's output spares sending the whole raw history across the
   * wasm boundary and replaying it (measured in `npm run bench`, "re-plan, raw history"). A
   * message counts as the same when it is the same object with the same sizes (as in `#sync`).
   */
  #rebase<M extends MessageLike>(messages: readonly M[]): readonly M[] {
    const last = this.#last;
    if (!last || messages.length < last.input.length) return messages;
    for (let i = 0; i < last.input.length; i++) {
      if (messages[i] !== last.input[i] || mark(messages[i]) !== last.marks[i]) return messages;
    }
    return [...(last.output as M[]), ...messages.slice(last.input.length)];
  }

  /**
   * One call: the core's loop (`Session` and what the binding adds around it: docs/LOOP.md) on
   * the conversation as it is now. The host only carries out the loop's requests: store writes
   * (in parallel), the summarizer, the `onPreCompact` hook, sending every message again
   * (`resync`), the conversation's hashes and, with `statePath`, the state's conditional save.
   * A save lost to another request is the core's to judge: it builds itself again on the stored
   * state and runs the call again, answers unsaved, or says `conflict` (a store that keeps
   * refusing: a `state_conflict`). Events reach `onEvent` once, from the round the call answers.
   */
  async #run<M extends MessageLike>(input: readonly M[], options: RunOptions): Promise<ManageResult<M>> {
    const call = ++this.#calls;
    this.#input = input;
    const io = { messages: this.#rebase(input) as readonly M[], refs: new Map() as Refs, input };
    const whole = this.#sync(io.messages);
    const now = this.#time();
    // With `statePath` and a summarizer, the call's summaries are made under a lease beside the
    // state (the core's, src/lease.rs): racing requests of one span ask the summarizer once.
    const lease = this.#statePath !== undefined && this.#summarize ? this.#lease() : undefined;
    let held = this.#held;
    this.#held = { messages: [], marks: [], refs: new Map() };
    io.refs = held.refs;
    const written = new Map<string, string>();
    const done = await this.#call(planOptions(options, this.#background, now, !whole, lease), io, written, options, () => {
      // Every message crossed again (`resync`): the session holds them now.
      if (this.#held.messages.length > 0) {
        held = this.#held;
        this.#held = { messages: [], marks: [], refs: new Map() };
        io.refs = held.refs;
      }
    });
    const { messages, refs } = io;
    const plan = this.#hydrated(done.plan, this.#core.takePrompt(), messages, refs, written);
    // The result: the messages as given, or as the core changed them (applied, or a cancel
    // that put recorded edits back); once applied, what the core holds (and `#rebase` continues).
    const changed = done.changed ? decodeResult<M>(this.#core.takeResult(), messages, refs) : [...messages];
    const events = done.applied ? done.events : [];
    for (const event of events) {
      event.call = call;
      if (options.stepNumber !== undefined) event.stepNumber = options.stepNumber;
    }
    const result: ManageResult<M> = { messages: changed, events, plan, tokensBefore: done.tokensBefore, tokensAfter: done.tokensAfter };
    this.#held = done.applied ? { messages: [...changed], marks: changed.map(mark), refs } : held;
    if (done.applied) this.#last = { input: [...io.input], marks: io.input.map(mark), output: changed };
    if (done.cancelled) result.cancelled = true;
    if (done.cancelOverridden) result.cancelOverridden = true;
    if (done.stateError !== undefined) result.stateError = done.stateError;
    this.#tell(events);
    // A recovery that had nothing left to compact: the core's verdict, after the call's end.
    if (done.overflow) throw overflowError(done.overflow, options.overflow?.cause);
    return result;
  }

  /** One call of the core's loop (`options`: a `manage`, `compact` or `recover`, or `{ save:
   * true }`), its requests carried out until it is done. A store that keeps refusing the
   * state's saves: a `state_conflict`. */
  async #call(options: string, call: CallIo, written: Map<string, string>, run: RunOptions, between?: () => void): Promise<SessionDone> {
    core(() => this.#core.sessionStart(options));
    const done = await drive<SessionIo['request'], SessionDone>(
      () => JSON.parse(core(() => this.#core.sessionPoll())) as Step<SessionIo['request'], SessionDone>,
      (id, reply) => this.#core.sessionHandle(id, reply),
      (request, id, plan) => this.#carryOut(request, id, plan, call, written, run),
      'session',
      between,
    );
    if (!done.conflict) return done;
    this.#held = { messages: [], marks: [], refs: new Map() };
    throw new CompactorError('state_conflict', done.conflict.message, { path: this.#statePath, attempts: done.conflict.attempts, revision: done.conflict.revision });
  }

  /** Carries out one request of the core's loop and says how it went. */
  async #carryOut(request: SessionIo['request'], id: number, plan: Plan | undefined, call: CallIo, written: Map<string, string>, options: RunOptions): Promise<SessionReply> {
    const { messages, refs } = call;
    switch (request.type) {
      case 'resync': {
        // After a lost save the core was built again: the call's own messages, not the last
        // result's continuation (`#rebase`), cross.
        if (request.rerun) {
          this.#last = undefined;
          call.messages = call.input;
        }
        this.#sync(call.messages, true);
        return { type: 'done' };
      }
      case 'conversation':
        return { type: 'conversation', conversation: conversationHashes(call.input) };
      case 'background':
        this.#startAhead(request.ahead, refs);
        return { type: 'done' };
      case 'read':
      case 'save':
      case 'put':
      case 'sleep':
        return storeRequest(this.#io, request);
      case 'write': {
        // The content crosses apart, as UTF-8; what the store gets is the app's original text
        // (lone surrogates: see codec.ts).
        const content = restoreStored(request.path, utf8.decode(this.#core.takeContent(id)), refs, request.whole === true);
        written.set(request.path, content);
        return this.#write(content, request.path);
      }
      case 'summarize': {
        // The action as the plan holds it (the request carries the action's fields).
        const action: SummarizeAction = { ...request.summary, type: 'summarize' };
        this.#hydrateAction(action, this.#core.takeContent(id), messages, refs, written, true);
        return this.#summary(action);
      }
      case 'ask': {
        if (!this.#onPreCompact) return { type: 'decision' };
        const context = request.preCompact;
        const hook = this.#onPreCompact;
        const shown = { trigger: options.trigger, currentTokens: context.currentTokens, targetTokens: context.targetTokens, messageCount: context.messageCount, plan: this.#hydrated(plan!, undefined, messages, refs, written, true) };
        // Within `summarizeTimeoutMs`, as the summarizer: a hook that does not settle is no
        // decision (the call goes on), never a hang.
        const answer: unknown = this.#inside(() => hook(shown));
        const decision: unknown = (await settledWithin(answer, this.#summarizeTimeoutMs)) ?? {};
        // Handed on as given: the core reads it (a cancel that is not true or false is a typed
        // error there, in every host).
        if (typeof decision !== 'object' || decision === null || Array.isArray(decision)) {
          throw new CompactorError('invalid_config', `onPreCompact returned ${Array.isArray(decision) ? 'an array' : typeof decision}: expected an object (cancel, customInstructions, customSummary) or nothing`, { field: 'onPreCompact' });
        }
        const { cancel, customInstructions, customSummary } = decision as PreCompactDecision;
        return { type: 'decision', cancel, customInstructions, customSummary };
      }
    }
  }

  /** `events` told to `onEvent`, each of them: one that throws is logged (`console.error`), not
   * thrown, since the call's work is done and saved by then and its result must reach the app. */
  #tell(events: readonly CompactionEvent[]): void {
    for (const event of events) {
      try {
        this.#onEvent?.(event);
      } catch (error) {
        console.error(`context-compactor: onEvent threw (event: ${event.strategy}; the call's result is kept, the other events told):`, error);
      }
    }
  }

  /** `callback()`, a call's own callback, invoked (a call of this compactor it makes as it
   * starts is `busy`). */
  #inside<T>(callback: () => T): T {
    this.#inCallback++;
    try {
      return callback();
    } finally {
      this.#inCallback--;
    }
  }

  /** A store write the core asked for, and how it went. */
  async #write(content: string, path: string): Promise<SessionReply> {
    try {
      await this.#io.write(path, content);
      return { type: 'done' };
    } catch (error) {
      return { type: 'failed', error: errorMessage(error) };
    }
  }

  /** The summarizer's answer within `summarizeTimeoutMs`; a failure in its words (the core
   * says `summarizer failed: ...` in the event). */
  async #summary(action: SummarizeAction, background = false, model?: string): Promise<{ type: 'text'; text: string } | { type: 'failed'; error: string }> {
    if (!this.#summarize) return { type: 'failed', error: 'no summarizer configured (options.summarize)' };
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new Error(`no summary within ${this.#summarizeTimeoutMs} ms`);
        controller.abort(error);
        reject(error);
      }, timerMs(this.#summarizeTimeoutMs));
    });
    try {
      const summarize = this.#summarize;
      const options = { signal: controller.signal, model: model ?? this.model.name, ...(background ? { background } : {}) };
      const text = await Promise.race([background ? summarize(action.request, options) : this.#inside(() => summarize(action.request, options)), timeout]);
      if (typeof text !== 'string') throw new TypeError(`summarize returned ${typeof text}, not a string`);
      return { type: 'text', text };
    } catch (error) {
      return { type: 'failed', error: errorMessage(error) };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Starts the summary the core asked ahead of need (a plan's `ahead`, the `background`
   * request at the call's end; the core recorded the ask, saved with the state) in the
   * background, once per key: the summarizer runs off the critical path, and its text goes
   * back to the core (and beside the state, with `statePath`). `refs`: the binary values of
   * the conversation the core holds. */
  #startAhead(ahead: NonNullable<Plan['ahead']>, refs: Refs): void {
    const key = ahead.aheadKey;
    if (key === undefined || this.#aheadRuns.has(key)) return;
    // A continuation's prefix is the conversation as planned now (the core holds it now, not
    // when the summary runs): built at once.
    const request: SummaryRequest = { system: ahead.request.system, prompt: ahead.request.prompt, messages: [{ role: 'user', content: ahead.request.prompt }], maxTokens: ahead.request.maxTokens };
    const continuation = ahead.request.continuation;
    if (continuation) request.continuation = { ...continuation, messages: this.#continued(continuation, refs), ...(this.agentTools ? { tools: this.agentTools } : {}) };
    const action: SummarizeAction = { ...ahead, type: 'summarize', request };
    const model = this.model.name; // read now: the compactor may be disposed when it runs
    // With `statePath`, under the lease beside the state (the core's `AheadRun`, src/lease.rs):
    // instances that ask the same span at once make it once, and the next request, on any
    // instance, reads it there.
    const run = (async () => {
      let text: string | null = null;
      try {
        const summaryRun = core(() => new AheadRun(stringify({ statePath: this.#statePath, key, ...this.#lease() })));
        try {
          type Asked = StoreRequest | { type: 'summarize' };
          const asked = (request: Asked) => (request.type === 'summarize' ? this.#summary(action, true, model) : storeRequest(this.#io, request));
          text = (await drive<Asked, { type: 'done'; text: string | null }>(() => JSON.parse(summaryRun.poll()) as Step<Asked, { type: 'done'; text: string | null }>, (id, reply) => summaryRun.handle(id, reply), asked, 'background summary')).text;
        } finally {
          summaryRun.free();
        }
      } finally {
        // Whatever happened, the core hears how it ended (no text: forgotten, and the lossy
        // tier summarizes in the call), so that it stops waiting for this compactor's own run.
        try {
          if (text !== null) this.#core.offerSummary(key, text);
          else this.#core.forgetAhead(key);
        } catch {
          // The compactor was disposed meanwhile (`dispose()`): with `statePath` the store has it.
        }
      }
    })()
      .catch(() => undefined)
      .finally(() => this.#aheadRuns.delete(key));
    this.#aheadRuns.set(key, run);
    this.#waitUntil?.(run);
  }

  /** This request's summary leases: its random id, the summarizer's time and the wall clock. */
  #lease(): { owner: string; summarizeTimeoutMs: number; wall: number } {
    return { owner: Math.random().toString(36).slice(2) + Date.now().toString(36), summarizeTimeoutMs: this.#summarizeTimeoutMs, wall: Date.now() };
  }

  /** Resolves once every summary made ahead of need (`background`) has come back and reached
   * the core (and, with `statePath`, the store). A long-lived app need not call it; a test, a
   * script about to exit or a route without `waitUntil` may. */
  async settled(): Promise<void> {
    while (this.#aheadRuns.size > 0) await Promise.allSettled([...this.#aheadRuns.values()]);
  }

  /**
   * Feeds the provider's reported input tokens for the prompt `manage` (or `compact`) last
   * returned back, for calibration: our count scaled to the provider's, for every family (an
   * estimate for Claude or Gemini; for an exact encoding, the provider's framing of messages and
   * tools); a second report for the same prompt is ignored. `prepareStep` does this by itself from the previous step's usage,
   * `onStepFinish` from every step's (the last step of a turn included), and `middleware()` from
   * each call's result. Takes a step's usage (`inputTokens` a number) or a provider's (AI SDK 6+:
   * `inputTokens.total`).
   */
  observeUsage(usage: { inputTokens?: number | { total?: number | undefined } | undefined }): void {
    if (usage === null || typeof usage !== 'object') throw new TypeError('observeUsage: usage must be an object ({ inputTokens })');
    const input = usage.inputTokens;
    const actual = typeof input === 'object' && input !== null ? input.total : input;
    // One sample per prompt sent (the core's): `onStepFinish` and the next `prepareStep` report
    // the same step.
    if (typeof actual === 'number' && Number.isFinite(actual) && actual >= 0) this.#core.observeUsage(Math.round(actual), undefined);
  }

  /**
   * AI SDK `onStepFinish`: `generateText({ ..., prepareStep: compactor.prepareStep, onStepFinish:
   * compactor.onStepFinish })`. Calibrates from every step's reported usage, the last step of a
   * turn included, which `prepareStep` never sees; a host that keeps its state in a store saves
   * it after the turn (`saveState()`) to keep that sample.
   */
  readonly onStepFinish = (step: { usage?: { inputTokens?: number | undefined } | undefined }): void => {
    if (step?.usage) this.observeUsage(step.usage);
  };

  /** Compact-and-retry rounds per model call after an overflow (`overflow.retries`). */
  get overflowRetries(): number {
    return this.#overflowRetries;
  }

  /**
   * Recovers from a provider's "prompt too long" error: `messages` is the prompt the provider
   * refused, `error` what it threw. The provider's count (when the error gives one) goes to
   * calibration, then the conversation is compacted harder than `manage` would — as if it were
   * at the provider's count, against the provider's limit, always below the target — and
   * returned for the retry. The events say so (`event.overflow`). An error that is not an
   * overflow is rethrown unchanged; an overflow with nothing left to compact is a
   * `CompactorError('context_overflow')`. `middleware()` calls this for you; retrying is the
   * caller's, once (`overflow.retries`).
   */
  recover<M extends MessageLike>(messages: readonly M[], error: unknown, options: { attempt?: number } = {}): Promise<RecoverResult<M>> {
    const attempt = options?.attempt ?? 1;
    if (!Number.isInteger(attempt) || attempt < 1) return Promise.reject(new TypeError(`recover: attempt must be a whole number >= 1, got ${String(attempt)}`));
    const info = parseOverflow(error);
    if (!info) return Promise.reject(error);
    // The core's call: the provider's count calibrates first, the events carry `overflow`, and
    // nothing left to compact is its `context_overflow`.
    const overflow = { info, attempt, cause: error };
    return this.#enqueue(async () => ({ ...(await this.#run(messages, { trigger: 'auto', overflow })), overflow: info }), 'recover');
  }

  /**
   * AI SDK `prepareStep`: `generateText({ ..., prepareStep: compactor.prepareStep })`. Counts the
   * instructions with the messages, offloads what must go, and returns the messages for this step
   * (in AI SDK 7 they persist into later steps).
   */
  readonly prepareStep = async <M extends MessageLike>(input: PrepareStepInput<M>): Promise<{ messages: M[] }> => {
    if (input === null || typeof input !== 'object' || !Array.isArray(input.messages)) {
      throw new CompactorError('invalid_messages', 'prepareStep: expected the AI SDK step options, with messages an array');
    }
    const lastUsage = input.steps?.at(-1)?.usage;
    if (lastUsage) this.observeUsage(lastUsage);
    let cached = this.#system;
    if (!cached || cached.instructions !== input.instructions) {
      cached = { instructions: input.instructions, messages: systemMessages(input.instructions) };
      this.#system = cached;
    }
    const system = cached.messages as M[];
    const { messages } = await this.#enqueue(() => this.#run([...system, ...input.messages], { trigger: 'auto', stepNumber: input.stepNumber }), 'prepareStep');
    return { messages: messages.slice(system.length) };
  };

  /**
   * Tier 1 at the moment a tool returns: when `output` is over the offload threshold, stores it
   * and returns the preview the model should see instead (a string naming the stored path);
   * otherwise returns `output` unchanged. A failed store write returns `output` unchanged, so
   * nothing is lost (the event says `failed`). `wrapTools` calls this for every tool.
   */
  async offloadToolOutput<T>(toolName: string, toolCallId: string, output: T): Promise<T | string> {
    if (output === undefined || isAsyncIterable(output)) return output;
    // The output crosses as JSON (its binary values by placeholder); whether it goes, where,
    // and what the model sees instead are the core's (src/offload.rs): this only writes.
    for (const [field, value] of [['toolName', toolName], ['toolCallId', toolCallId]] as const) {
      if (typeof value !== 'string') throw new CompactorError('invalid_message', `offloadToolOutput: ${field} must be a string, got ${value === null ? 'null' : typeof value}`, { field });
    }
    let encoded: ReturnType<typeof encode>;
    try {
      encoded = encode([output]);
    } catch (error) {
      // Named as this call's: the output is no message of the app's.
      if (!(error instanceof CompactorError)) throw error;
      const { index: _, ...details } = error.details;
      const reason = error.message.replace(/^messages: /, '').replace(/^message 0: invalid `([^`]*)`: /, (_, field: string) => (field ? `invalid \`${field}\`: ` : ''));
      throw new CompactorError(error.code, `offloadToolOutput: the output of tool ${toolName} (call ${toolCallId}): ${reason}`, { ...details, toolName, toolCallId });
    }
    const { json, refs } = encoded;
    const run = core(() => this.#core.offloadStart(toolName, toolCallId, json.slice(1, -1), typeof output === 'string'));
    let done = false;
    try {
      const write = (request: OffloadWrite) => this.#write(restoreStored(request.path, request.content, refs, request.whole === true), request.path);
      const step = await drive<OffloadWrite, OffloadDone>(() => decode<Step<OffloadWrite, OffloadDone>>(core(() => this.#core.offloadPoll(run)), refs), (id, reply) => this.#core.offloadHandle(run, id, reply), write, 'offloadToolOutput');
      done = true;
      this.#tell(step.events);
      return step.preview ?? output;
    } finally {
      try {
        if (!done) this.#core.offloadDrop(run);
      } catch {
        // A disposed or failed core: the error thrown above is the one to see.
      }
    }
  }

  /**
   * `base` with what the agent must know about context management: where offloaded content
   * and transcripts are and how to read them back (the recovery tools), and, when the store has
   * one, the long-term memory file `/memories/AGENTS.md` with the memory protocol.
   */
  async systemPrompt(base: string, options: { memory?: boolean } = {}): Promise<string> {
    if (typeof base !== 'string') throw new TypeError(`systemPrompt: base must be a string, got ${base === null ? 'null' : typeof base}`);
    if (options === null || typeof options !== 'object') throw new TypeError('systemPrompt: options must be an object ({ memory })');
    // As Python's `bool(memory)`: whatever is given says yes or no; nothing, the store decides.
    const memory = options.memory === undefined ? undefined : Boolean(options.memory);
    let agentsMd: string | null = null;
    try {
      if (memory !== false) agentsMd = await this.#io.read(AGENTS_MD_PATH);
    } catch (error) {
      // Typed, naming the file (a timeout, an invalid path are already).
      if (error instanceof CompactorError) throw error;
      throw new CompactorError('store_failed', `systemPrompt: reading ${AGENTS_MD_PATH} failed: ${errorMessage(error)}`, { path: AGENTS_MD_PATH, op: 'read', cause: error });
    }
    return this.#core.systemPrompt(base, memory, agentsMd ?? undefined);
  }

  /** AI SDK middleware for `wrapLanguageModel({ model, middleware: compactor.middleware() })`:
   * compacts each call's prompt (single calls; agents use `prepareStep`). */
  middleware(options?: MiddlewareOptions): CompactorMiddleware {
    return middleware(this, options);
  }

  /** The same tool set, each tool's output offloaded at return time when over the threshold,
   * so a huge output never enters the history. */
  wrapTools<T extends Record<string, ExecutableTool>>(tools: T): T {
    return wrapTools(this, tools);
  }

  /** AI SDK tools `read_file`, `grep`, `ls` over this compactor's store; a `read_file` page is
   * at most 10 % of the window (`maxPageChars`); `ls` and `grep` leave the state out. */
  tools(options?: RecoveryToolOptions): RecoveryToolSet {
    return recoveryTools(this.#io, { contextWindow: this.model.contextWindow, ...(this.#statePath !== undefined ? { statePath: this.#statePath } : {}), ...options });
  }

  /** Writes the state (stats, calibration, the compaction record) to the store;
   * `loadState(store, path)` reads it back. At `statePath` the save is conditional: when
   * another compactor saved there since for this conversation or a later turn of it, this one
   * takes that state and writes nothing over it; over an earlier turn's or a deleted state it
   * saves; over another branch's it throws `state_conflict` (docs/API.md, "Many instances, one
   * conversation"). */
  async saveState(path: string = this.#statePath ?? DEFAULT_STATE_PATH): Promise<void> {
    if (checkPath(path) !== this.#statePath) {
      return Promise.resolve(this.#io.write(path, JSON.stringify(this.state()))).catch((error: unknown) => {
        // Typed, naming the file, as a store that stalls is.
        throw error instanceof CompactorError ? error : new CompactorError('store_failed', `saveState: writing ${path} failed: ${errorMessage(error)}`, { path, op: 'write', cause: error });
      });
    }
    // The core's call (`save`): conditional on what was last read or saved (src/stored.rs
    // `Persist`): what one another compactor beat does is the core's.
    await this.#enqueue(async () => {
      const done = await this.#call(stringify({ save: true }), { messages: [], refs: new Map(), input: this.#input }, new Map(), { trigger: 'auto' });
      if (done.stateError !== undefined) throw new CompactorError('store_failed', done.stateError, { path, op: 'write' });
    }, 'saveState');
  }

  stats(): Stats {
    return JSON.parse(this.#core.stats()) as Stats;
  }

  /** Serializable state: persist it and pass it back as `options.state`. */
  state(): CompactorState {
    return JSON.parse(this.#core.state()) as CompactorState;
  }

  /** Frees the core's memory now (otherwise the garbage collector does, eventually). Again:
   * nothing. A call after it is a `CompactorError('disposed')`. */
  dispose(): void {
    const held = this.#core;
    this.#core = disposedCore();
    if (!(held instanceof WasmCompactor)) return;
    held.free();
  }
}

/** One IO request of the core's loop (`sessionPoll`; docs/LOOP.md). */
interface SessionIo {
  id: number;
  request:
    // `content` and the summary's `prompt` are empty: `takeContent(id)` has them, as UTF-8.
    | { type: 'write'; path: string; content: string; whole?: boolean }
    | { type: 'resync'; rerun?: boolean }
    | { type: 'conversation' }
    | { type: 'background'; ahead: NonNullable<Plan['ahead']> }
    | StoreRequest
    | { type: 'summarize'; summary: SummarizeAction }
    | { type: 'ask'; preCompact: { trigger: 'auto' | 'manual'; currentTokens: number; targetTokens: number; messageCount: number } };
}

/** The end of a call of the core's loop: `messages` absent when the conversation is as given. */
interface SessionDone {
  type: 'done';
  /** The messages differ from the ones given (`takeResult` has them). */
  changed: boolean;
  /** The plan's work was applied: the result is the conversation the core holds now. */
  applied: boolean;
  events: CompactionEvent[];
  plan: Plan;
  cancelled: boolean;
  cancelOverridden: boolean;
  tokensBefore: number;
  tokensAfter: number;
  /** With `statePath`: a save that failed, or a state that could not be read. */
  stateError?: string;
  /** A store that keeps refusing saves: the call's `state_conflict`. */
  conflict?: { message: string; attempts: number; revision: number };
  /** A recovery with nothing left to compact: the call's `context_overflow`. */
  overflow?: { message: string; details: Record<string, unknown> };
}

/** What a disposed compactor calls instead of its core: every method a typed `disposed`. */
function disposedCore(): WasmCompactor {
  const gone = () => {
    throw new CompactorError('disposed', 'this compactor was disposed (dispose()): create a new one');
  };
  return new Proxy({}, { get: () => gone }) as WasmCompactor;
}

/** `value` once settled, or undefined when it has not within `ms` (a rejection is thrown). */
async function settledWithin(value: unknown, ms: number): Promise<unknown> {
  if (typeof (value as { then?: unknown } | null)?.then !== 'function') return value;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timerMs(ms))));
  try {
    return await Promise.race([value as PromiseLike<unknown>, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A call made from inside a call's own callback (`#enqueue`). */
function busy(what: string): CompactorError {
  return new CompactorError('busy', `${what}: called from inside a call of the same compactor (its onPreCompact hook or summarizer); a compactor runs one call at a time: make this call after that one returns`, { call: what });
}

/** A tool output's offload (`offloadPoll`): its writes (content inline), and its end. */
type OffloadWrite = { type: 'write'; path: string; content: string; whole?: boolean };
type OffloadDone = { type: 'done'; preview: string | null; events: CompactionEvent[] };

/** A step of one of the core's runs: requests to carry out, a wait, or its end. */
type Step<R, D> = { type: 'io'; ios: { id: number; request: R }[]; plan?: Plan } | { type: 'wait' } | D;

/** What a call's requests are carried out on: its messages (`resync` may change them), their
 * binary values, and the messages it was given. */
interface CallIo {
  messages: readonly MessageLike[];
  refs: Refs;
  input: readonly MessageLike[];
}

/** The one loop of each of the core's runs (a call, a tool output's offload, a summary made
 * ahead): polls its requests, carries out each batch at once, hands back every outcome with the
 * wall clock, until it is done. `between`: after each batch. */
async function drive<R, D extends { type: 'done' }>(poll: () => Step<R, D>, handle: (id: number, reply: string) => void, carry: (request: R, id: number, plan: Plan | undefined) => Promise<object>, what: string, between?: () => void): Promise<D> {
  for (;;) {
    const step = poll();
    if (step.type === 'done') return step as D;
    if (step.type === 'wait' || !('ios' in step)) throw new CompactorError('internal', `${what}: waiting with no request out`);
    const replies = await Promise.all(step.ios.map(async (io) => [io.id, await carry(io.request, io.id, step.plan)] as const));
    for (const [id, reply] of replies) core(() => handle(id, stringify({ ...reply, now: Date.now() })));
    between?.();
  }
}

type SessionReply =
  | StoreReply
  | { type: 'conversation'; conversation: string }
  | { type: 'text'; text: string }
  | ({ type: 'decision' } & PreCompactDecision)
  | { type: 'failed'; error: string };

/** A plan as the core hands it over: its JSON, and its summary request's prompt as UTF-8. */
interface CorePlan {
  json: string;
  prompt: Uint8Array;
}

// ignoreBOM: a text that starts with U+FEFF (a user's file) keeps it, byte for byte.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** Makes a summary request's `prompt` (and `messages`, `[{role: 'user', content: prompt}]`) the
 * core's UTF-8 `bytes`, decoded when first read: a plan that is only looked at (a dry run, a
 * re-plan under way) never pays for the span it would send. Both stay plain enumerable
 * properties to a reader (JSON, spread, structuredClone) and can be set. */
function lazyPrompt(request: SummaryRequest, bytes: Uint8Array | undefined): void {
  let prompt: string | undefined = bytes === undefined ? request.prompt : undefined;
  let messages: SummaryRequest['messages'] | undefined;
  Object.defineProperties(request, {
    prompt: {
      get: () => (prompt ??= utf8.decode(bytes!)),
      set: (value: string) => { prompt = value; },
      enumerable: true,
      configurable: true,
    },
    messages: {
      get: () => (messages ??= [{ role: 'user', content: request.prompt }]),
      set: (value: SummaryRequest['messages']) => { messages = value; },
      enumerable: true,
      configurable: true,
    },
  });
}

/** The store writes an action needs, as [path, content]. */
/** A cheap mark of a message's shape and sizes (role, each part's type and text or value
 * length), so that an edit in place that changes a size is seen as a change by `#sync`. */
function mark(message: unknown): number {
  try {
    return shapeMark(message);
  } catch {
    // Unreadable (a throwing getter, a revoked proxy): never equal, so it is encoded, and the
    // codec names the message and field in a typed error.
    return NaN;
  }
}

function shapeMark(message: unknown): number {
  if (message === null || typeof message !== 'object') return -1;
  const { role, content } = message as { role?: unknown; content?: unknown };
  let h = typeof role === 'string' ? role.length : -2;
  if (typeof content === 'string') return (h * 31 + content.length) | 0;
  if (!Array.isArray(content)) return -3;
  h = (h * 31 + content.length) | 0;
  for (const part of content as Record<string, unknown>[]) h = (h * 31 + partMark(part)) | 0;
  return h;
}

function partMark(part: Record<string, unknown> | null): number {
  if (part === null || typeof part !== 'object') return -1;
  const size = (v: unknown): number => (typeof v === 'string' ? v.length : v !== null && typeof v === 'object' ? Object.keys(v).length : 0);
  const type = typeof part.type === 'string' ? part.type.length : 0;
  const output = part.output as Record<string, unknown> | undefined;
  return type * 7919 + size(part.text) + size(part.input) * 3 + size(part.toolCallId) * 5 + (output ? size(output.value) * 11 + size(output.type) : 0);
}

function planOptions(options: { trigger?: 'auto' | 'manual'; instructions?: string | undefined; overflow?: RunOptions['overflow'] } | undefined, background: boolean, now: number, partial = false, lease?: object): string {
  const overflow = options?.overflow ? { ...options.overflow.info, attempt: options.overflow.attempt } : undefined;
  return stringify({ trigger: options?.trigger ?? 'auto', instructions: options?.instructions ?? null, ...(overflow ? { overflow } : {}), ...(background ? { background } : {}), now, ...(partial ? { partial } : {}), ...(lease ? { lease } : {}) });
}

function isAsyncIterable(value: unknown): boolean {
  return value !== null && typeof value === 'object' && Symbol.asyncIterator in value;
}

/** AI SDK `instructions` (string | system message | system message[]) as system messages. */
function systemMessages(instructions: unknown): MessageLike[] {
  if (instructions === undefined || instructions === null || instructions === '') return [];
  if (typeof instructions === 'string') return [{ role: 'system', content: instructions }];
  const list = Array.isArray(instructions) ? instructions : [instructions];
  for (const message of list) {
    if (!message || typeof message !== 'object' || (message as MessageLike).role !== 'system') {
      throw new CompactorError('invalid_messages', 'prepareStep: instructions must be a string or system messages');
    }
  }
  return list as MessageLike[];
}
