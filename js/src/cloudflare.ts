// Cloudflare Agents (`agents`, `@cloudflare/ai-chat`): a compactor whose store and state live in
// the agent's own Durable Object storage, and what an `AIChatAgent`'s `onChatMessage` passes to
// the AI SDK's `streamText`. `import { chatCompactor, streamTextOptions } from
// 'context-compactor/cloudflare'` (issue 33).
//
// Thin by design: wiring only, every decision is the compactor's. `AIChatAgent` keeps the chat as
// UI messages in SQLite and its `onChatMessage` hands `convertToModelMessages(this.messages)` (AI
// SDK `ModelMessage`s, the core's own shape) to `streamText`: nothing to convert. Each turn is a
// new compactor over the Durable Object's storage (`DurableObjectStore`, its state at
// `statePath`): the compaction record replays earlier compactions onto the whole history the
// agent keeps, so every step's prompt is the one a long-lived compactor would send, and tool
// outputs stored at return time are read back from the same storage on any later turn.
//
// Nothing is imported from `agents`, `@cloudflare/ai-chat`, `ai` or workerd: the agent and the
// AI SDK options are typed structurally. The compactor comes from the Workers entry (this entry
// runs where a Durable Object does).
import { createCompactor, DEFAULT_STATE_PATH, type Compactor, type CompactorOptions, type PrepareStepInput, type RecoveryToolSet, type ExecutableTool } from './entry/workerd.js';
import { DurableObjectStore, type DurableObjectStorageLike } from './stores/durable-object.js';
import type { MessageLike } from './types.js';

/** What `chatCompactor` needs: the agent's Durable Object state, `this.ctx` in an
 * `AIChatAgent` (or any `Agent` / Durable Object; `ctx` is protected there, hence not `this`). */
export interface DurableObjectStateLike {
  storage: DurableObjectStorageLike;
}

export interface ChatCompactorOptions extends Omit<CompactorOptions, 'store'> {
  /** Prepended to every key the compactor writes in the Durable Object's storage (key-value
   * API: apart from the agent's SQLite tables). Default `'context-compactor'`. */
  prefix?: string;
  /** Characters per stored value (`DurableObjectStoreOptions.chunkChars`). */
  chunkChars?: number;
}

/**
 * A compactor for one turn of the agent whose state is `ctx`: its store is a
 * `DurableObjectStore` over `ctx.storage` (keys under `prefix`) and its state is loaded from
 * and saved to `statePath` there (default `/state/compactor.json`). Call it in each
 * `onChatMessage`: `chatCompactor(this.ctx, { model })`.
 */
export async function chatCompactor(ctx: DurableObjectStateLike, options: ChatCompactorOptions = {}): Promise<Compactor> {
  const storage = ctx?.storage;
  if (storage === null || typeof storage !== 'object') {
    throw new TypeError("chatCompactor: the first argument must be the agent's Durable Object state (this.ctx)");
  }
  const { prefix = 'context-compactor', chunkChars, ...rest } = options;
  const store = new DurableObjectStore(storage, { prefix, ...(chunkChars !== undefined ? { chunkChars } : {}) });
  return createCompactor({ ...rest, store, statePath: rest.statePath ?? DEFAULT_STATE_PATH });
}

export interface StreamTextInput<M extends MessageLike, T extends Record<string, ExecutableTool>> {
  /** The agent's system prompt: the recovery segment (and `/memories/AGENTS.md`, when the store
   * has it) is added, and it is counted with every step's messages. */
  system: string;
  /** `await convertToModelMessages(this.messages)`: the whole chat the agent keeps. */
  messages: M[];
  /** The agent's tools: each output over the offload threshold is stored when it returns. */
  tools?: T;
  /** Add `/memories/AGENTS.md` and the memory protocol (`compactor.systemPrompt`). Default: when
   * the store has the file. */
  memory?: boolean;
  /** A state save after a step that did not land (another turn saved first; the next step or
   * turn saves again). Default: `console.warn`. */
  onStateError?: (error: unknown) => void;
}

/** What `streamTextOptions` returns: spread it into `streamText({ model, ...options })`. */
export interface CompactorStreamTextOptions<M extends MessageLike, T extends Record<string, ExecutableTool>> {
  system: string;
  messages: M[];
  tools: T & RecoveryToolSet;
  prepareStep: <P extends MessageLike>(step: PrepareStepInput<P>) => Promise<{ messages: P[] }>;
  onStepFinish: (step: { usage?: { inputTokens?: number | undefined } | undefined }) => Promise<void>;
}

/**
 * The `streamText` (or `generateText`) options of a compacted agent turn: the system prompt with
 * the recovery segment, the messages, the tools wrapped to store large outputs at return time
 * plus the recovery tools (`read_file`, `grep`, `ls`), `prepareStep` (compacts every step's
 * prompt, the system prompt counted in AI SDK 6 as in 7) and `onStepFinish` (calibrates from the
 * step's usage and saves the state, so the last step's sample is kept).
 */
export async function streamTextOptions<M extends MessageLike, T extends Record<string, ExecutableTool> = {}>(
  compactor: Compactor,
  input: StreamTextInput<M, T>,
): Promise<CompactorStreamTextOptions<M, T>> {
  if (compactor === null || typeof compactor !== 'object' || typeof compactor.prepareStep !== 'function') {
    throw new TypeError('streamTextOptions: the first argument must be a compactor (chatCompactor(this.ctx, ...))');
  }
  if (input === null || typeof input !== 'object' || typeof input.system !== 'string' || !Array.isArray(input.messages)) {
    throw new TypeError('streamTextOptions: expected { system: string, messages: ModelMessage[], tools? }');
  }
  const system = await compactor.systemPrompt(input.system, input.memory === undefined ? {} : { memory: input.memory });
  const onStateError = input.onStateError ?? ((error: unknown) => console.warn('context-compactor: state not saved:', error));
  return {
    system,
    messages: input.messages,
    tools: { ...compactor.wrapTools(input.tools ?? ({} as T)), ...compactor.tools() } as T & RecoveryToolSet,
    // AI SDK 6 does not give `prepareStep` the system prompt (7 does, as `instructions`).
    prepareStep: (step) => compactor.prepareStep({ ...step, instructions: step.instructions ?? system }),
    onStepFinish: async (step) => {
      compactor.onStepFinish(step);
      await compactor.saveState().catch(onStateError);
    },
  };
}
