import { WasmCompactor } from './wasm/context_compactor.js';
import { decode, encode, type Encoded } from './codec.js';
import { CompactorError, core } from './errors.js';
import { init } from './init.js';
import { MemoryStore, type FileStore } from './store.js';
import type {
  Action,
  CompactionEvent,
  CompactorState,
  EncodingName,
  ManageResult,
  MessageLike,
  ModelInfo,
  Outcome,
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
  /** Offload tool results above this many tokens. Default 20,000. */
  thresholdTokens?: number;
  /** …or above this fraction of the window, whichever is smaller. Default 0.25. */
  maxWindowFraction?: number;
  /** Preview lines from the start. Default 10. */
  previewHeadLines?: number;
  /** Preview lines from the end. Default 3. */
  previewTailLines?: number;
  /** Preview lines are cut at this many characters. Default 200. */
  previewLineChars?: number;
  /** Tools never offloaded. Default: write_todos, list_skills, read_file, grep, ls, glob. */
  excludedTools?: string[];
  /** Store directory for offloaded results. Default `/tool_outputs/`. */
  pathPrefix?: string;
}

/** Tier-2 options (see src/config.rs `CompactionConfig`). */
export interface CompactionOptions {
  /** Whether tier 2 runs at all. Default true (false in the `simple` preset). */
  enabled?: boolean;
  /** Tier 2 fires above this fraction of the window. Default 0.85. */
  triggerFraction?: number;
  /** …and compacts down to this fraction. Default 0.70. */
  targetFraction?: number;
  /** Edits to earlier messages saving fewer tokens are skipped (prompt cache). Default 500. */
  minSavingTokens?: number;
  /** The last K tool results stay verbatim. Default 10. */
  keepToolResults?: number;
  evictInputTools?: string[];
  evictInputFields?: string[];
  /** Characters of evicted file content kept as a preview. Default 100. */
  inputPreviewChars?: number;
  readTools?: string[];
  pathFields?: string[];
  pathPrefix?: string;
}

/** Tier-3 options (see src/config.rs `HistoryConfig`). */
export interface HistoryOptions {
  /** Default `summarize`. */
  strategy?: 'summarize' | 'truncate' | 'importance' | 'off';
  /** Fires above this fraction of the window (or when tier 2 falls short). Default 0.95. */
  triggerFraction?: number;
  /** Past this fraction an `onPreCompact` cancel is overridden. Default 0.95. */
  hardLimitFraction?: number;
  /** Recent messages kept verbatim, as a share of the window. Default 0.20. */
  keepRecentFraction?: number;
  /** Keep this many recent messages instead. */
  keepRecentMessages?: number | null;
  /** Summary size cap (also ≤ 10 % of the window). Default 2,000. */
  summaryMaxTokens?: number;
  /** Cap of the span sent to the summarizer. Default: half the window. */
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
}

/** Writes a summary: send `request.system` and `request.messages` to an LLM, at most
 * `request.maxTokens` out, and return the text. A throw makes the core use its heuristic
 * summary (the event says so). */
export type Summarizer = (request: SummaryRequest) => Promise<string> | string;

export interface CompactorOptions {
  /** Model name for the registry (`gpt-4o`, `claude-sonnet-4-5`, `openai/gpt-4.1`, ...). */
  model?: string;
  /** Context window in tokens; overrides the registry. */
  contextWindow?: number;
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
  tools?: ToolDefinition[] | Record<string, { description?: string; inputSchema?: unknown; parameters?: unknown }>;
  /** Starting point for every threshold: `simple`, `smart` (the defaults) or `aggressive`. */
  preset?: 'simple' | 'smart' | 'aggressive';
  compaction?: CompactionOptions;
  history?: HistoryOptions;
  /** Writes summaries (tier 3). Without it, the heuristic summary is used. */
  summarize?: Summarizer;
  /** Called before a compaction (tier 2 or 3, or manual) runs; may cancel it, add instructions
   * or supply the summary. */
  onPreCompact?: (context: PreCompactContext) => Promise<PreCompactDecision | void> | PreCompactDecision | void;
  /** Called for every compaction event, in order (for UIs and logs). */
  onEvent?: (event: CompactionEvent) => void;
}

/** Options the core does not see: they stay in the host. */
const HOST_ONLY = new Set(['store', 'state', 'onEvent', 'summarize', 'onPreCompact']);

interface RunOptions {
  trigger: 'auto' | 'manual';
  instructions?: string | undefined;
}

/** AI SDK `prepareStep` argument, structurally (v5–v7). */
export interface PrepareStepInput<M extends MessageLike = MessageLike> {
  messages: M[];
  steps?: ReadonlyArray<{ usage?: { inputTokens?: number | undefined } | undefined }>;
  instructions?: unknown;
  stepNumber?: number;
}

/** Creates a compactor; loads the core first if needed. */
export async function createCompactor(options: CompactorOptions = {}): Promise<Compactor> {
  await init();
  return new Compactor(options);
}

/**
 * Keeps a conversation inside its model's context window. Create it with `createCompactor`.
 * `manage` plans, stores what leaves the conversation, and applies — in that order, so nothing
 * is removed before it is stored.
 */
export class Compactor {
  readonly store: FileStore;
  readonly #core: WasmCompactor;
  readonly #onEvent: ((event: CompactionEvent) => void) | undefined;
  readonly #summarize: Summarizer | undefined;
  readonly #onPreCompact: CompactorOptions['onPreCompact'];
  /** Serializes manage() calls: two racing calls would plan against stale messages. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Our uncalibrated count of the last prompt handed to the model, for calibration. */
  #lastRawCount: number | undefined;

  constructor(options: CompactorOptions = {}) {
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
    const state = options.state === undefined ? undefined : JSON.stringify(options.state);
    this.#core = core(() => new WasmCompactor(JSON.stringify(config), state));
  }

  /** The model as resolved by the registry and overrides. */
  get model(): ModelInfo {
    return JSON.parse(this.#core.model()) as ModelInfo;
  }

  /** Dry run: what `manage` (or, with `trigger: 'manual'`, `compact`) would do. Plain data,
   * no IO. */
  plan(messages: readonly MessageLike[], options?: { trigger?: 'auto' | 'manual'; instructions?: string }): Plan {
    return JSON.parse(core(() => this.#core.plan(encode(messages).json, planOptions(options)))) as Plan;
  }

  /** Tokens used by `messages` against the window. */
  usage(messages: readonly MessageLike[]): Usage {
    return JSON.parse(core(() => this.#core.usage(encode(messages).json))) as Usage;
  }

  /** Plans, executes against the store (and the summarizer), applies. Concurrent calls on one
   * compactor run one after another. */
  manage<M extends MessageLike>(messages: readonly M[]): Promise<ManageResult<M>> {
    return this.#enqueue(() => this.#run(messages, { trigger: 'auto' }));
  }

  /** Compacts now, whatever the usage: every tier runs and older messages are summarized (or
   * truncated, per `history.strategy`). `instructions` steer the summary. */
  compact<M extends MessageLike>(messages: readonly M[], options: { instructions?: string } = {}): Promise<ManageResult<M>> {
    return this.#enqueue(() => this.#run(messages, { trigger: 'manual', instructions: options.instructions }));
  }

  #enqueue<T>(job: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(job);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #run<M extends MessageLike>(messages: readonly M[], options: RunOptions): Promise<ManageResult<M>> {
    const encoded = encode(messages);
    let planJson = core(() => this.#core.plan(encoded.json, planOptions(options)));
    let plan = JSON.parse(planJson) as Plan;
    if (plan.actions.length === 0) return { messages: [...messages], events: [], plan };

    let decision: PreCompactDecision = {};
    let cancelOverridden = false;
    const compacting = plan.trigger.tier2 || plan.trigger.tier3 || plan.trigger.manual;
    if (compacting && this.#onPreCompact) {
      decision = (await this.#onPreCompact({
        trigger: options.trigger,
        currentTokens: plan.tokensBefore,
        targetTokens: plan.trigger.target,
        messageCount: messages.length,
        plan,
      })) ?? {};
      if (decision.cancel) {
        // No deadlock: past the hard limit the next request would fail, so compaction runs.
        if (plan.tokensBefore <= plan.trigger.hardLimit) return { messages: [...messages], events: [], plan, cancelled: true };
        cancelOverridden = true;
      }
      if (decision.customInstructions?.trim()) {
        const instructions = [options.instructions, decision.customInstructions].filter(Boolean).join('\n');
        planJson = core(() => this.#core.plan(encoded.json, planOptions({ ...options, instructions })));
        plan = JSON.parse(planJson) as Plan;
      }
    }
    const outcomes = await this.#execute(plan, decision.customSummary);
    const result = this.#apply<M>(encoded, planJson, plan, outcomes);
    return cancelOverridden ? { ...result, cancelOverridden } : result;
  }

  /** Runs the plan: every store write (failures become outcomes, never exceptions), then the
   * summary — only once its transcript is stored, so no LLM call is wasted on a summary that
   * could not be applied. */
  async #execute(plan: Plan, customSummary: string | undefined): Promise<Outcome[]> {
    const writes = await Promise.all(
      plan.actions.filter((a) => writesOf(a).length > 0).map(async (action): Promise<Outcome> => {
        try {
          for (const [path, content] of writesOf(action)) await this.store.write(path, content);
          return { type: 'written', id: action.id };
        } catch (error) {
          return { type: 'failed', id: action.id, error: message(error) };
        }
      }),
    );
    const outcomes = [...writes];
    for (const action of plan.actions) {
      if (action.type !== 'summarize') continue;
      const transcript = writes.find((o) => o.id === action.transcript);
      if (transcript?.type !== 'written') continue;
      outcomes.push(await this.#summary(action, customSummary));
    }
    return outcomes;
  }

  async #summary(action: SummarizeAction, customSummary: string | undefined): Promise<Outcome> {
    if (customSummary?.trim()) return { type: 'summarized', id: action.id, text: customSummary };
    if (!this.#summarize) return { type: 'failed', id: action.id, error: 'no summarizer configured (options.summarize)' };
    try {
      const text = await this.#summarize(action.request);
      if (typeof text !== 'string') throw new TypeError(`summarize returned ${typeof text}, not a string`);
      return { type: 'summarized', id: action.id, text };
    } catch (error) {
      return { type: 'failed', id: action.id, error: `summarizer failed: ${message(error)}` };
    }
  }

  #apply<M extends MessageLike>(encoded: Encoded, planJson: string, plan: Plan, outcomes: Outcome[]): ManageResult<M> {
    const appliedJson = core(() => this.#core.apply(encoded.json, planJson, JSON.stringify(outcomes)));
    const applied = decode<{ messages: M[]; events: CompactionEvent[] }>(appliedJson, encoded.refs);
    for (const event of applied.events) this.#onEvent?.(event);
    return { messages: applied.messages, events: applied.events, plan };
  }

  /**
   * Feeds the provider's reported input tokens back, for calibration of estimated (non-OpenAI)
   * counts. `prepareStep` does this by itself from the previous step's usage.
   */
  observeUsage(usage: { inputTokens?: number | undefined }): void {
    const actual = usage.inputTokens;
    if (this.#lastRawCount === undefined || typeof actual !== 'number' || !Number.isFinite(actual)) return;
    this.#core.observeUsage(this.#lastRawCount, Math.round(actual));
  }

  /**
   * AI SDK `prepareStep`: `generateText({ ..., prepareStep: compactor.prepareStep })`. Counts the
   * instructions with the messages, offloads what must go, and returns the messages for this step
   * (in AI SDK 7 they persist into later steps).
   */
  readonly prepareStep = async <M extends MessageLike>(input: PrepareStepInput<M>): Promise<{ messages: M[] }> => {
    const lastUsage = input.steps?.at(-1)?.usage;
    if (lastUsage) this.observeUsage(lastUsage);
    const system = systemMessages(input.instructions) as M[];
    const { messages } = await this.manage([...system, ...input.messages]);
    this.#lastRawCount = core(() => this.#core.countRaw(encode(messages).json));
    return { messages: messages.slice(system.length) };
  };

  stats(): Stats {
    return JSON.parse(this.#core.stats()) as Stats;
  }

  /** Serializable state: persist it and pass it back as `options.state`. */
  state(): CompactorState {
    return JSON.parse(this.#core.state()) as CompactorState;
  }

  /** Frees the core's memory now (otherwise the garbage collector does, eventually). */
  dispose(): void {
    this.#core.free();
  }
}

/** A tool as the model sees it. */
export interface ToolDefinition {
  name: string;
  description?: string;
  inputSchema?: unknown;
}

/** JSON tool definitions from either accepted shape. */
function toolDefinitions(tools: NonNullable<CompactorOptions['tools']>): ToolDefinition[] {
  if (Array.isArray(tools)) return tools;
  return Object.entries(tools).map(([name, tool]) => {
    const schema = tool?.inputSchema ?? tool?.parameters;
    const json = schema && typeof schema === 'object' && 'jsonSchema' in schema ? (schema as { jsonSchema: unknown }).jsonSchema : schema;
    // A schema object we cannot read as JSON (e.g. a raw zod schema) counts by name and
    // description only; pass `zodSchema(...)` or JSON to count it exactly.
    const plain = json !== null && typeof json === 'object' && ('type' in json || 'properties' in json || '$schema' in json);
    return { name, ...(tool?.description ? { description: tool.description } : {}), ...(plain ? { inputSchema: json } : {}) };
  });
}

/** The store writes an action needs, as [path, content]. */
function writesOf(action: Action): [string, string][] {
  switch (action.type) {
    case 'save-transcript':
      return [[action.path, action.json], [action.readablePath, action.markdown]];
    case 'summarize':
    case 'drop':
      return [];
    default:
      return [[action.path, action.content]];
  }
}

function planOptions(options: { trigger?: 'auto' | 'manual'; instructions?: string | undefined } | undefined): string | undefined {
  if (!options) return undefined;
  return JSON.stringify({ trigger: options.trigger ?? 'auto', instructions: options.instructions ?? null });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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
