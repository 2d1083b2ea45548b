// Vercel AI SDK integration (versions 5 to 7), with no import of the `ai` package at run time:
// every object here is built to the SDK's structural contracts, so one build serves every version
// and apps that bundle only what they use. For types, `ai` is an optional peer dependency: the
// recovery tools' schemas are typed as the installed SDK's own `Schema` (see `AiSdkSchema`); the
// middleware and `prepareStep` are generic, so they fit any version's types without it.
import type { Compactor } from './compactor.js';
import { stringify } from './codec.js';
import { assertInitialized } from './core.js';
import { CompactorError, core, errorMessage } from './errors.js';
import { RecoveryToolRun, anthropicBreakpoints, recoveryToolSpecs } from './wasm/context_compactor.js';
import { isOverflowResult, overflowVerdict, parseOverflow, type OverflowInfo } from './overflow.js';
import { checkPath, checkPrefix, checked, type FileStore } from './store.js';
import type { MessageLike, SummaryRequest } from './types.js';

// ---------------------------------------------------------------------------------------------
// Schemas: the AI SDK recognizes `jsonSchema()` results by registered symbols: `schema` (v5-v7)
// and, for validation, `validator` (v5).

const SCHEMA = Symbol.for('vercel.ai.schema');
const VALIDATOR = Symbol.for('vercel.ai.validator');

interface JsonSchemaObject {
  type: 'object';
  properties: Record<string, { type: string; description?: string }>;
  required?: string[];
  additionalProperties: false;
}

/**
 * An AI SDK schema: the installed `ai`'s own `Schema<T>` (what its `jsonSchema()` returns, v5
 * to v7), so tools carrying one are assignable to its `ToolSet`. The SDK marks schemas with a
 * `unique symbol` that no declaration outside it can name (a symbol declared here to match is a
 * different type), hence the type comes from `ai`: an optional peer dependency, used for this
 * type only. Without `ai` installed this is `any`; the directive on the next line keeps that
 * from being an error, even under `skipLibCheck: false` (it is kept in the .d.ts).
 * @ts-ignore */
export type AiSdkSchema<T> = import('ai').Schema<T>;

/** What `schema()` builds, structurally: the SDK's markers (registered symbols), the JSON
 * Schema and a small validator for flat objects. */
interface BuiltSchema<T> {
  readonly [SCHEMA]: true;
  readonly [VALIDATOR]: true;
  readonly _type: T | undefined;
  readonly jsonSchema: JsonSchemaObject;
  validate(value: unknown): { success: true; value: T } | { success: false; error: Error };
}

function schema<T>(json: JsonSchemaObject): AiSdkSchema<T> {
  const built: BuiltSchema<T> = {
    [SCHEMA]: true,
    [VALIDATOR]: true,
    _type: undefined,
    jsonSchema: json,
    validate(value) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return { success: false, error: new TypeError('expected an object') };
      for (const key of json.required ?? []) {
        if (!(key in value)) return { success: false, error: new TypeError(`missing required field "${key}"`) };
      }
      for (const [key, field] of Object.entries(value)) {
        const want = json.properties[key]?.type;
        if (want === undefined) return { success: false, error: new TypeError(`unknown field "${key}"`) };
        const got = Number.isInteger(field) ? 'integer' : typeof field;
        if (field !== undefined && got !== want && !(want === 'number' && got === 'integer')) {
          return { success: false, error: new TypeError(`field "${key}" must be ${want === 'integer' ? 'an integer' : `a ${want}`}`) };
        }
      }
      return { success: true, value: value as T };
    },
  };
  return built as unknown as AiSdkSchema<T>;
}

// ---------------------------------------------------------------------------------------------
// Recovery tools: read back what compaction stored.

/** An AI SDK tool (assignable to the installed SDK's `ToolSet`, v5 to v7). */
export interface RecoveryTool<I> {
  description: string;
  inputSchema: AiSdkSchema<I>;
  execute(input: I, options?: unknown): Promise<string>;
}

/** `read_file`, `grep`, `ls`. A type alias, not an interface: an object type is assignable to
 * the SDK's `ToolSet` (a string-indexed record) only without declaration merging. */
export type RecoveryToolSet = {
  read_file: RecoveryTool<{ path: string; offset?: number; limit?: number }>;
  grep: RecoveryTool<{ pattern: string; path?: string }>;
  ls: RecoveryTool<{ path?: string }>;
};

export interface RecoveryToolOptions {
  /** Lines `read_file` returns when no `limit` is given. Default 500. */
  defaultLimit?: number;
  /** A line over this many characters wraps onto the next line numbers (`read_file` pages and
   * `grep` number it alike; nothing is cut). Default 2,000. */
  maxLineChars?: number;
  /** `grep` stops after this many matching lines. Default 100. */
  maxMatches?: number;
  /** A `read_file` page ends before it passes this many characters (at least one line), so one
   * page cannot fill a small window. Default: unbounded, or 10 % of `contextWindow` (4
   * characters a token, at least 2,000) when that is given, as `compactor.tools()` does. */
  maxPageChars?: number;
  /** The window of the model the tools serve (see `maxPageChars`). */
  contextWindow?: number;
  /** The compactor's state path: `ls` and `grep` leave the state and its summary leases
   * (`<statePath>.summaries/`) out. Default `/state/compactor.json`; `compactor.tools()` gives
   * its own. */
  statePath?: string;
}

/**
 * `read_file` (line-numbered, paged with `offset`/`limit`), `grep` (literal text) and `ls` over a
 * store: the tools the recovery prompt segment tells the agent to use. Errors come back as text
 * the model can act on, not exceptions. Their descriptions, schemas, paging and answers are the
 * core's (src/recovery.rs, the same for every host); this only carries out the store calls a run
 * asks for.
 */
export function recoveryTools(store: FileStore, options: RecoveryToolOptions = {}): RecoveryToolSet {
  const { maxPageChars, ...rest } = options;
  const io = checked(store); // a read that gives no text is a failed read, not a value the core takes
  // Infinity (no page limit) crosses as nothing; NaN and -Infinity, which JSON cannot say, are
  // refused here; the core checks the rest (a fraction is floored, below 1 is `invalid_config`).
  if (typeof maxPageChars === 'number' && (Number.isNaN(maxPageChars) || maxPageChars === -Infinity)) {
    throw new CompactorError('invalid_config', `recoveryTools: maxPageChars must be a number of characters >= 1, got ${maxPageChars}`, { field: 'maxPageChars' });
  }
  const coreOptions = stringify({ ...rest, ...(maxPageChars !== Infinity && maxPageChars !== undefined ? { maxPageChars } : {}) });
  // Read from the core when first needed, so that tools made before `init()` (at a module's top
  // level) work once it has run.
  let specs: Map<string, { description: string; inputSchema: JsonSchemaObject }> | undefined;
  const spec = (name: string) => {
    if (!specs) {
      assertInitialized('recoveryTools');
      specs = new Map((JSON.parse(core(() => recoveryToolSpecs(coreOptions))) as { name: string; description: string; inputSchema: JsonSchemaObject }[]).map((s) => [s.name, s]));
    }
    return specs.get(name)!;
  };
  const tool = <I>(name: keyof RecoveryToolSet): RecoveryTool<I> => {
    let inputSchema: AiSdkSchema<I> | undefined;
    return {
      get description() {
        return spec(name).description;
      },
      get inputSchema() {
        return (inputSchema ??= schema<I>(spec(name).inputSchema));
      },
      execute: (input: I) => runTool(io, name, input, coreOptions),
    };
  };
  return { read_file: tool('read_file'), grep: tool('grep'), ls: tool('ls') };
}

/** One recovery tool call: the core's run, each store call it asks for made here. */
async function runTool(store: FileStore, name: string, input: unknown, options: string): Promise<string> {
  type Io = { type: 'read'; path: string } | { type: 'list'; prefix: string } | { type: 'done'; text: string };
  let arguments_: string;
  try {
    arguments_ = stringify(input ?? {});
  } catch (error) {
    return `Error: the arguments of ${name} are not JSON: ${errorMessage(error)}`;
  }
  assertInitialized('recoveryTools');
  const run = core(() => new RecoveryToolRun(name, arguments_, options));
  try {
    for (let io = JSON.parse(run.io()) as Io; ; io = JSON.parse(run.io()) as Io) {
      if (io.type === 'done') return io.text;
      try {
        if (io.type === 'read') run.handleRead((await store.read(checkPath(io.path))) ?? undefined, undefined);
        else run.handleList(await store.list(checkPrefix(io.prefix)), undefined);
      } catch (error) {
        if (io.type === 'read') run.handleRead(undefined, errorMessage(error));
        else run.handleList([], errorMessage(error));
      }
    }
  } finally {
    run.free();
  }
}

// ---------------------------------------------------------------------------------------------
// Tools whose large outputs are offloaded when they return.

/** Anything with an `execute` (an AI SDK tool); other entries pass through untouched. */
export interface ExecutableTool {
  execute?: ((input: never, options: never) => unknown) | undefined;
  toModelOutput?: unknown;
}

/** `tools`, each `execute` wrapped so an output over the offload threshold is stored and the
 * model gets a preview naming its path. Tools with their own `toModelOutput` and streaming
 * tools (async iterables) are left as they are. */
export function wrapTools<T extends Record<string, ExecutableTool>>(compactor: Compactor, tools: T): T {
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) throw new TypeError('wrapTools: tools must be a tool set (an object of tools)');
  const wrapped: Record<string, ExecutableTool> = {};
  for (const [name, tool] of Object.entries(tools)) {
    if (tool === null || typeof tool !== 'object') throw new TypeError(`wrapTools: tools.${name} must be a tool (an object), got ${tool === null ? 'null' : typeof tool}`);
    const execute = tool.execute as ((input: unknown, options?: { toolCallId?: string }) => unknown) | undefined;
    // A streaming tool (an async generator: the AI SDK sends each value as a preliminary result,
    // the last as the output) is left as it is.
    if (typeof execute !== 'function' || tool.toModelOutput !== undefined || Object.prototype.toString.call(execute) === '[object AsyncGeneratorFunction]') {
      wrapped[name] = tool;
      continue;
    }
    let calls = 0;
    wrapped[name] = {
      ...tool,
      // Not an async function: an execute that returns an async iterable (streaming after all)
      // hands it on as it is, which the AI SDK streams; an awaited one it would not.
      execute: ((input: unknown, options?: { toolCallId?: string }) => {
        let result: unknown;
        try {
          result = execute.call(tool, input, options);
        } catch (error) {
          return Promise.reject(error); // as an async execute's
        }
        if (result !== null && typeof result === 'object' && Symbol.asyncIterator in result) return result;
        return Promise.resolve(result).then((output) => compactor.offloadToolOutput(name, options?.toolCallId ?? `${name}-${++calls}`, output));
      }) as ExecutableTool['execute'],
    };
  }
  return wrapped as T;
}

// ---------------------------------------------------------------------------------------------
// Middleware: compacts the prompt of each model call (AI SDK `wrapLanguageModel`).

/** A language-model middleware, assignable to the AI SDK's `LanguageModelMiddleware` (v5's
 * `LanguageModelV2Middleware` to v7's): generic in the call options, so each version's own
 * `params` type flows through unchanged. */
export interface CompactorMiddleware {
  /** The middleware version AI SDK 6 requires (`LanguageModelV3Middleware`); AI SDK 5 and 7
   * accept it and read nothing from it. */
  readonly specificationVersion: 'v3';
  transformParams<P extends { prompt: unknown }>(options: { params: P; type?: string }): Promise<P>;
  /** Overflow recovery around `doGenerate`: a "prompt too long" error (or Anthropic's
   * `model_context_window_exceeded` stop) compacts harder and retries (`overflow.retries`). */
  wrapGenerate<P extends { prompt: unknown }, R>(options: { doGenerate: () => PromiseLike<R>; params: P; model: { doGenerate(options: P): PromiseLike<R> } }): Promise<R>;
  /** The same around `doStream`: a provider that refuses the prompt before it streams, or
   * reports the overflow in the stream (an `error` part, a context-window stop) before any
   * content reached the caller; after content, the stream ends with a typed `context_overflow`
   * error part. */
  wrapStream<P extends { prompt: unknown }, R>(options: { doStream: () => PromiseLike<R>; params: P; model: { doStream(options: P): PromiseLike<R> } }): Promise<R>;
}

/** Options of `compactor.middleware()`. */
export interface MiddlewareOptions {
  /** Compact every call's prompt (`transformParams`). Default true; false leaves only the
   * overflow recovery, for agents that compact in `prepareStep`. */
  compact?: boolean;
}

/** A language-model prompt has parts wherever a `ModelMessage` may have a string: the summary
 * or notice the core inserts (a user message with string content) becomes one text part. */
function promptMessage(message: MessageLike): MessageLike {
  if (message.role === 'system' || typeof message.content !== 'string') return message;
  return { ...message, content: [{ type: 'text', text: message.content }] };
}

/**
 * Compacts every call's prompt before it reaches the model. The SDK does not keep the compacted
 * prompt (each call brings the full history again), and the compactor's record replays every
 * earlier edit and summary onto it: the same prompt as `prepareStep` would send, no span
 * summarized twice, the cached prefix kept.
 */
export function middleware(compactor: Compactor, options: MiddlewareOptions = {}): CompactorMiddleware {
  const compact = options.compact ?? true;
  // The provider's usage of the last call, observed when the next call is planned (as
  // `prepareStep` observes the previous step's): a tool that runs in between offloads its
  // result with the calibration a `prepareStep` host has at that point, so both send the same.
  let pending: number | undefined;
  const observe = (usage: unknown): void => {
    pending = inputTokens(usage) ?? pending;
  };
  return {
    specificationVersion: 'v3',
    async transformParams<P extends { prompt: unknown }>(options: { params: P }): Promise<P> {
      const params = options?.params;
      if (params === null || typeof params !== 'object') throw new TypeError('transformParams: expected the AI SDK call options ({ params })');
      if (!compact || !Array.isArray(params.prompt)) return params;
      if (pending !== undefined) compactor.observeUsage({ inputTokens: pending });
      pending = undefined;
      // A summary continuation sends the agent's tools unchanged (its cached prefix).
      const tools = (params as { tools?: unknown }).tools;
      compactor.agentTools = Array.isArray(tools) ? tools : undefined;
      const { messages } = await compactor.manage(params.prompt as MessageLike[]);
      return { ...params, prompt: messages.map(promptMessage) };
    },
    // The provider's usage calibrates the compactor's counts (prepareStep does it when the
    // middleware only recovers).
    wrapGenerate: async ({ doGenerate, params, model }) => {
      const { result } = await recovering(compactor, params, doGenerate, (p) => model.doGenerate(p), true);
      if (compact) observe((result as { usage?: unknown } | undefined)?.usage);
      return result;
    },
    wrapStream: async ({ doStream, params, model }) => {
      const call = (p: typeof params) => model.doStream(p);
      return recoveringStream(compactor, await recovering(compactor, params, doStream, call, false), call, compact ? observe : undefined);
    },
  };
}

/** The input tokens of a provider's reported usage (`inputTokens` a number up to AI SDK 5's
 * providers, `{ total }` from 6), or undefined. */
function inputTokens(usage: unknown): number | undefined {
  if (typeof usage !== 'object' || usage === null) return undefined;
  const input = (usage as { inputTokens?: unknown }).inputTokens;
  const total = typeof input === 'object' && input !== null ? (input as { total?: unknown }).total : input;
  return typeof total === 'number' && Number.isFinite(total) ? total : undefined;
}

/** A model call's result, the call options it answered and the compaction rounds before it. */
interface Attempted<P, R> {
  result: R;
  params: P;
  attempt: number;
}

/**
 * Calls the model; on a provider's "prompt too long" error, `compactor.recover`s the refused
 * prompt and calls again with the compacted one, at most `overflow.retries` times. Any other
 * error is rethrown unchanged; an overflow after the last retry is a
 * `CompactorError('context_overflow')` whose `cause` is the provider's error. A generate result
 * that stopped at the context window (`model_context_window_exceeded`) is retried the same way
 * while retries remain, and returned as it is after. `attempt` is the number of compactions
 * already done for this model call (a stream's overflow retries from there).
 */
async function recovering<P extends { prompt: unknown }, R>(
  compactor: Compactor,
  params: P,
  first: (() => PromiseLike<R>) | undefined,
  call: (params: P) => PromiseLike<R>,
  checkResult: boolean,
  attempt = 0,
): Promise<Attempted<P, R>> {
  const retries = compactor.overflowRetries;
  let current = params;
  for (;;) {
    let outcome: { refused: false; result: R } | { refused: true; error: unknown };
    try {
      const pending = first ? first() : call(current);
      first = undefined;
      outcome = { refused: false, result: await pending };
    } catch (error) {
      outcome = { refused: true, error };
    }
    const local = Array.isArray(current.prompt);
    if (!outcome.refused && !(checkResult && local && isOverflowResult(outcome.result))) return { result: outcome.result, params: current, attempt };
    const failure = outcome.refused ? outcome.error : new Error('stop_reason: model_context_window_exceeded');
    // The core's rules (src/overflow.rs): retry, fail typed, or let it through as it is.
    const verdict = overflowVerdict(outcome.refused ? 'refused' : 'cut', local ? parseOverflow(failure) : undefined, attempt, retries, failure);
    if (verdict.verdict === 'fail') throw verdict.error;
    if (verdict.verdict === 'as-is') {
      if (outcome.refused) throw outcome.error;
      return { result: outcome.result, params: current, attempt };
    }
    attempt = verdict.attempt;
    current = await compacted(compactor, current, failure, attempt);
  }
}

/** `params` with the refused prompt compacted harder (`compactor.recover`), for the retry. */
async function compacted<P extends { prompt: unknown }>(compactor: Compactor, params: P, failure: unknown, attempt: number): Promise<P> {
  const { messages } = await compactor.recover(params.prompt as MessageLike[], failure, { attempt });
  return { ...params, prompt: messages.map(promptMessage) };
}

/** Stream parts that carry no content: held back until content comes, so a stream that reports
 * an overflow before any content can be replaced by the retry's without the caller seeing two
 * starts. */
const PREAMBLE = new Set(['stream-start', 'response-metadata', 'raw', 'ping']);

/**
 * A stream's overflow reported in the stream: an `error` part whose error is a provider's
 * overflow, or a `finish` at the context window (`model_context_window_exceeded`). While no
 * content has reached the caller (only the preamble, held back), the refused stream is
 * cancelled, the prompt compacted harder and the model called again (`overflow.retries` in all
 * for this model call, the up-front refusals included): the caller reads the retry's stream as
 * if it were the first. Once content was delivered, or the retries are spent, the overflow ends
 * the stream with an `error` part holding the typed `CompactorError('context_overflow')`, whose
 * `cause` is the provider's error (a context-window finish still follows it, with its usage;
 * without retries spent that is the only difference from the generate path, which returns a cut
 * result as it is). Every other part passes through unchanged; `observe` gets the usage of the
 * finish the caller receives.
 */
function recoveringStream<P extends { prompt: unknown }, R>(
  compactor: Compactor,
  started: Attempted<P, R>,
  call: (params: P) => PromiseLike<R>,
  observe: ((usage: unknown) => void) | undefined,
): R {
  const source = (started.result as { stream?: unknown } | undefined)?.stream;
  const retries = compactor.overflowRetries;
  if (!(source instanceof ReadableStream) || (retries === 0 && !observe)) return started.result;
  let reader = (source as ReadableStream<unknown>).getReader();
  let { params, attempt } = started;
  let delivered = false;
  let held: unknown[] = [];
  let done = false;
  const stream = new ReadableStream<unknown>({
    async pull(controller) {
      const enqueue = (part: unknown): void => {
        for (const p of held) controller.enqueue(p);
        held = [];
        controller.enqueue(part);
      };
      const end = (error: unknown): void => {
        enqueue({ type: 'error', error });
        done = true;
        controller.close();
        reader.cancel().catch(() => undefined);
      };
      // Reads until a part reaches the caller (held parts do not count) or the stream ends.
      while (!done) {
        let next: ReadableStreamReadResult<unknown>;
        try {
          next = await reader.read();
        } catch (error) {
          // A provider that errors its stream instead of sending an error part.
          next = { done: false, value: { type: 'error', error, thrown: true } };
        }
        if (next.done) {
          for (const p of held) controller.enqueue(p);
          held = [];
          done = true;
          controller.close();
          return;
        }
        const part = next.value as { type?: unknown; error?: unknown; usage?: unknown; thrown?: boolean } | null;
        const type = part?.type;
        let failure: unknown;
        let info: OverflowInfo | undefined;
        if (retries > 0 && Array.isArray(params.prompt)) {
          if (type === 'error') {
            info = parseOverflow(part!.error);
            failure = part!.error;
          } else if (type === 'finish' && isOverflowResult(part)) {
            failure = new Error('stop_reason: model_context_window_exceeded');
            info = parseOverflow(failure);
          }
        }
        if (!info) {
          if (part?.thrown) {
            for (const p of held) controller.enqueue(p);
            held = [];
            done = true;
            controller.error(part.error);
            return;
          }
          if (typeof type === 'string' && PREAMBLE.has(type) && !delivered) {
            held.push(part);
            continue;
          }
          if (type === 'finish') observe?.(part!.usage);
          else delivered = true;
          enqueue(part);
          return;
        }
        const cut = type === 'finish';
        const verdict = overflowVerdict(delivered ? (cut ? 'cut-after-content' : 'refused-after-content') : cut ? 'cut' : 'refused', info, attempt, retries, failure);
        if (verdict.verdict === 'fail' && delivered && cut) {
          // A cut answer after content: the typed error, then the finish with its usage.
          enqueue({ type: 'error', error: verdict.error });
          observe?.(part!.usage);
          controller.enqueue(part);
          return;
        }
        if (verdict.verdict === 'fail') return end(verdict.error);
        if (verdict.verdict === 'as-is') {
          // As the generate path: a context-window stop after the last retry is returned as is.
          observe?.(part!.usage);
          enqueue(part);
          return;
        }
        // Nothing reached the caller: drop the refused stream and call again on a smaller prompt.
        reader.cancel().catch(() => undefined);
        held = [];
        try {
          const retried = await recovering(compactor, await compacted(compactor, params, failure, attempt + 1), undefined, call, false, attempt + 1);
          const next = (retried.result as { stream?: unknown } | undefined)?.stream;
          if (!(next instanceof ReadableStream)) throw new TypeError('the retried model call returned no stream');
          ({ params, attempt } = retried);
          reader = (next as ReadableStream<unknown>).getReader();
          // The caller cancelled while the retry was under way.
          if (done) {
            reader.cancel().catch(() => undefined);
            return;
          }
        } catch (error) {
          return end(error);
        }
      }
    },
    cancel(reason) {
      done = true;
      return reader.cancel(reason);
    },
  });
  return { ...(started.result as object), stream } as R;
}

// ---------------------------------------------------------------------------------------------
// Summarizer: any AI SDK language model as the `summarize` callback.

/** A language model object (`LanguageModelV2` to `V4`), structurally: what `doGenerate` needs. */
export interface LanguageModelLike {
  readonly specificationVersion: string;
  readonly modelId: string;
  doGenerate(options: {
    prompt: unknown[];
    maxOutputTokens?: number;
    abortSignal?: AbortSignal;
    [key: string]: unknown;
  }): PromiseLike<{ content?: ReadonlyArray<{ type: string; text?: string }> }>;
}

export interface SummarizerOptions {
  /** Output cap; the request's `maxTokens` when lower. */
  maxOutputTokens?: number;
  /** Send `request.continuation` when the core offers one (the agent's own cached prompt plus
   * a final instruction, instead of a rendered transcript): `'auto'` (default) when this model
   * is the agent's (same model id), `true` always, `false` never. A reply that calls a tool
   * instead of answering, or fails, falls back to the plain request. */
  continuation?: boolean | 'auto';
  /** With `generateText` and `prepareStep`: the agent's tool set, so the continuation's prefix
   * matches the agent's calls (tools are sent without `execute`: a tool call is refused). */
  tools?: Record<string, unknown>;
  /** Extra call settings passed to the model (`temperature`, `providerOptions`, ...). */
  settings?: Record<string, unknown>;
  /** Call through the SDK instead (retries, telemetry, string model ids via the gateway):
   * pass `generateText` from `ai` (5, 6 or 7). It is called with `GenerateTextCall`; typed to
   * take anything, since each SDK version types its own arguments more narrowly. */
  generateText?: (options: never) => PromiseLike<{ text: string }>;
}

/** What `summarizer` hands `SummarizerOptions.generateText`. */
export interface GenerateTextCall {
  model: unknown;
  system?: string;
  messages: MessageLike[];
  maxOutputTokens: number;
  abortSignal: AbortSignal;
  [key: string]: unknown;
}

/**
 * The `summarize` callback from an AI SDK model: sends the core's request (the structured
 * template as the system prompt, the span as one user message), caps the output at the
 * request's `maxTokens`, and honours the compactor's timeout through the abort signal.
 *
 * ```ts
 * createCompactor({ model: 'claude-sonnet-4-5', summarize: summarizer(anthropic('claude-haiku-4-5')) });
 * ```
 */
export function summarizer(model: LanguageModelLike | string, options: SummarizerOptions = {}): (request: SummaryRequest, call: { signal: AbortSignal; model?: string }) => Promise<string> {
  if (typeof model === 'string' && !options.generateText) {
    throw new CompactorError('invalid_config', 'summarizer(modelId) needs options.generateText (from "ai") to resolve a string model id; or pass a model object', { field: 'summarizer' });
  }
  if (typeof model !== 'string' && (model === null || typeof model !== 'object')) throw new TypeError('summarizer: model must be a language model or a model id');
  const modelId = typeof model === 'string' ? model : model.modelId;
  return async (request, { signal, model: agentModel }) => {
    const maxOutputTokens = Math.min(request.maxTokens, options.maxOutputTokens ?? Infinity);
    const wanted = options.continuation ?? 'auto';
    const continuation = request.continuation;
    if (continuation && (wanted === true || (wanted === 'auto' && sameModel(modelId, agentModel)))) {
      try {
        const text = await continued(model, options, continuation, maxOutputTokens, signal);
        if (text !== undefined) return text;
      } catch (error) {
        if (signal.aborted) throw error;
      }
    }
    if (options.generateText) {
      const generate = options.generateText as unknown as (call: GenerateTextCall) => PromiseLike<{ text: string }>;
      const result = await generate({ ...options.settings, model, system: request.system, messages: request.messages, maxOutputTokens, abortSignal: signal });
      return result.text;
    }
    const prompt = toPrompt([{ role: 'system', content: request.system }, ...request.messages]);
    const result = await (model as LanguageModelLike).doGenerate({ ...options.settings, prompt, maxOutputTokens, abortSignal: signal });
    const text = textOf(result.content);
    if (!text.trim()) throw new Error(`${(model as LanguageModelLike).modelId} returned no text`);
    return text;
  };
}

/** Whether two model ids name the same model (`claude-sonnet-4-5` and its dated snapshot, a
 * gateway's `anthropic/claude-sonnet-4-5`). */
function sameModel(a: string, b: string | undefined): boolean {
  if (!b) return false;
  const bare = (id: string) => id.slice(id.lastIndexOf('/') + 1).toLowerCase();
  const [x, y] = [bare(a), bare(b)];
  return x === y || x.startsWith(`${y}-`) || y.startsWith(`${x}-`);
}

/** The continuation request (`undefined` when the model answered with a tool call or no text:
 * the caller falls back to the plain request). */
async function continued(
  model: LanguageModelLike | string,
  options: SummarizerOptions,
  continuation: NonNullable<SummaryRequest['continuation']>,
  maxOutputTokens: number,
  signal: AbortSignal,
): Promise<string | undefined> {
  const messages = continuation.messages;
  if (options.generateText) {
    const tools = options.tools ? Object.fromEntries(Object.entries(options.tools).map(([name, t]) => [name, { ...(t as object), execute: undefined }])) : undefined;
    const generate = options.generateText as unknown as (call: Omit<GenerateTextCall, 'system'>) => PromiseLike<{ text: string; toolCalls?: unknown[] }>;
    const result = await generate({ ...options.settings, model, messages, ...(tools ? { tools } : {}), maxOutputTokens, abortSignal: signal });
    return (result.toolCalls?.length ?? 0) > 0 || !result.text.trim() ? undefined : result.text;
  }
  const prompt = toPrompt(messages);
  const result = await (model as LanguageModelLike).doGenerate({ ...options.settings, prompt, ...(continuation.tools ? { tools: continuation.tools } : {}), maxOutputTokens, abortSignal: signal });
  if ((result.content ?? []).some((p) => p.type === 'tool-call')) return undefined;
  const text = textOf(result.content);
  return text.trim() ? text : undefined;
}

/** Messages as a language model's `prompt`: a user or assistant string becomes one text part
 * (a system message keeps its string). */
function toPrompt(messages: readonly MessageLike[]): MessageLike[] {
  return messages.map((m) => ({ ...m, content: typeof m.content === 'string' && m.role !== 'system' ? [{ type: 'text', text: m.content }] : m.content }));
}

/** The text parts of a generate result, joined. */
function textOf(content: ReadonlyArray<{ type: string; text?: string }> | undefined): string {
  return (content ?? []).filter((p) => p.type === 'text').map((p) => p.text ?? '').join('');
}

// ---------------------------------------------------------------------------------------------
// Anthropic prompt caching.

/** Anthropic accepts at most this many cache breakpoints per request. */
export const ANTHROPIC_MAX_BREAKPOINTS = 4;

type WithProviderOptions = MessageLike & { providerOptions?: Record<string, Record<string, unknown> | undefined> };

function marked(message: WithProviderOptions): boolean {
  return message.providerOptions?.anthropic?.cacheControl !== undefined;
}

function mark<M extends WithProviderOptions>(message: M, cacheControl: Record<string, unknown> | undefined): M {
  const anthropic = { ...message.providerOptions?.anthropic };
  if (cacheControl) anthropic.cacheControl = cacheControl;
  else delete anthropic.cacheControl;
  const providerOptions = { ...message.providerOptions, anthropic };
  if (Object.keys(anthropic).length === 0) delete (providerOptions as Record<string, unknown>).anthropic;
  const copy = { ...message, providerOptions };
  if (Object.keys(providerOptions).length === 0) delete (copy as { providerOptions?: unknown }).providerOptions;
  return copy;
}

/**
 * Sets Anthropic `cacheControl` breakpoints: on the last system message and on the last message
 * (so the next call reads the whole conversation so far from cache). Breakpoints already set
 * are kept, newest first; the oldest non-system ones are removed so the total stays within
 * `maxBreakpoints` (at most 4; pass fewer when your tools carry breakpoints). The rule is the
 * core's (`src/cache.rs` `anthropic_breakpoints`, Python's `anthropic_cache_control` too).
 * Returns copies; the input is not changed.
 */
export function anthropicCacheControl<M extends MessageLike>(
  messages: readonly M[],
  options: { maxBreakpoints?: number; ttl?: '5m' | '1h' } = {},
): M[] {
  if (!Array.isArray(messages)) throw new TypeError('anthropicCacheControl: messages must be an array');
  assertInitialized('anthropicCacheControl');
  const max = options.maxBreakpoints ?? ANTHROPIC_MAX_BREAKPOINTS;
  if (!Number.isInteger(max) || max < 0) throw new CompactorError('invalid_config', `anthropicCacheControl: maxBreakpoints must be a whole number >= 0, got ${String(max)}`, { field: 'maxBreakpoints' });
  const cacheControl = { type: 'ephemeral', ...(options.ttl ? { ttl: options.ttl } : {}) };
  const out = messages.map((m) => m as WithProviderOptions) as WithProviderOptions[];
  const flags = (test: (m: WithProviderOptions) => boolean) => Uint8Array.from(out, (m) => (test(m) ? 1 : 0));
  const { add, remove } = JSON.parse(anthropicBreakpoints(flags((m) => m.role === 'system'), flags(marked), Math.min(max, ANTHROPIC_MAX_BREAKPOINTS))) as { add: number[]; remove: number[] };
  for (const i of add) out[i] = mark(out[i]!, cacheControl);
  for (const i of remove) out[i] = mark(out[i]!, undefined);
  return out as M[];
}
