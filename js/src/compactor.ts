import { WasmCompactor } from './wasm/context_compactor.js';
import { decode, encode, type Encoded } from './codec.js';
import { CompactorError, core } from './errors.js';
import { init } from './init.js';
import { MemoryStore, type FileStore } from './store.js';
import type {
  CompactionEvent,
  CompactorState,
  EncodingName,
  ManageResult,
  MessageLike,
  ModelInfo,
  Outcome,
  Plan,
  Stats,
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
  /** Called for every compaction event, in order (for UIs and logs). */
  onEvent?: (event: CompactionEvent) => void;
}

/** Options the core does not see: they stay in the host. */
const HOST_ONLY = new Set(['store', 'state', 'onEvent']);

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
  /** Serializes manage() calls: two racing calls would plan against stale messages. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Our uncalibrated count of the last prompt handed to the model, for calibration. */
  #lastRawCount: number | undefined;

  constructor(options: CompactorOptions = {}) {
    const config = Object.fromEntries(Object.entries(options).filter(([key]) => !HOST_ONLY.has(key)));
    this.store = options.store ?? new MemoryStore();
    const missing = (['read', 'write', 'list', 'delete'] as const).filter((m) => typeof this.store[m] !== 'function');
    if (missing.length > 0) {
      throw new CompactorError('invalid_config', `store must implement read, write, list and delete; missing: ${missing.join(', ')}`, { field: 'store' });
    }
    this.#onEvent = options.onEvent;
    const state = options.state === undefined ? undefined : JSON.stringify(options.state);
    this.#core = core(() => new WasmCompactor(JSON.stringify(config), state));
  }

  /** The model as resolved by the registry and overrides. */
  get model(): ModelInfo {
    return JSON.parse(this.#core.model()) as ModelInfo;
  }

  /** Dry run: what `manage` would do. Plain data, no IO. */
  plan(messages: readonly MessageLike[]): Plan {
    return JSON.parse(core(() => this.#core.plan(encode(messages).json))) as Plan;
  }

  /** Tokens used by `messages` against the window. */
  usage(messages: readonly MessageLike[]): Usage {
    return JSON.parse(core(() => this.#core.usage(encode(messages).json))) as Usage;
  }

  /** Plans, executes against the store, applies. Concurrent calls run one after another. */
  manage<M extends MessageLike>(messages: readonly M[]): Promise<ManageResult<M>> {
    const run = this.#queue.then(() => this.#manage(messages));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #manage<M extends MessageLike>(messages: readonly M[]): Promise<ManageResult<M>> {
    const encoded = encode(messages);
    const planJson = core(() => this.#core.plan(encoded.json));
    const plan = JSON.parse(planJson) as Plan;
    if (plan.actions.length === 0) return { messages: [...messages], events: [], plan };
    const outcomes = await this.#execute(plan);
    return this.#apply<M>(encoded, planJson, plan, outcomes);
  }

  /** Runs each action against the store. A failure is an outcome, never an exception. */
  async #execute(plan: Plan): Promise<Outcome[]> {
    return Promise.all(
      plan.actions.map(async (action): Promise<Outcome> => {
        try {
          await this.store.write(action.path, action.content);
          return { type: 'written', id: action.id };
        } catch (error) {
          return { type: 'failed', id: action.id, error: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
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
