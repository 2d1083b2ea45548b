// Public types. They mirror the Rust core's serde types (src/plan.rs, src/compactor.rs,
// src/models.rs); the JSON that crosses the wasm boundary has exactly these shapes.

/** An AI SDK `ModelMessage`-shaped message. Kept structural so any AI SDK version's types fit. */
export interface MessageLike {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: unknown;
  [key: string]: unknown;
}

export type EncodingName = 'o200k_base' | 'cl100k_base';

/**
 * The open-weight tokenizers the package ships compact data for (`dist/ranks/<name>.wasm`),
 * loaded on demand like cl100k_base: Qwen 3, Qwen 2.5, DeepSeek V3 (R1), Mistral tekken. Llama 3.x
 * and Gemma 3 are not shipped (their licences attach conditions to redistribution): load them
 * from the model's own `tokenizer.json` with `loadTokenizer`.
 */
export type PrebuiltTokenizerName = 'qwen3' | 'qwen2_5' | 'deepseek_v3' | 'mistral_tekken_240718' | 'mistral_tekken_240911';

export type ModelFamily =
  | 'openai' | 'anthropic' | 'google' | 'meta' | 'mistral' | 'qwen' | 'deepseek' | 'xai' | 'unknown';

export interface ModelInfo {
  name: string;
  /** The registry entry matched, or null for an unknown model. */
  matched: string | null;
  contextWindow: number;
  maxOutputTokens: number;
  encoding: EncodingName;
  /**
   * The Hugging Face tokenizer that counts this model exactly, by the name to load it under
   * (`loadTokenizer('llama3_1', json)`): `llama3`, `llama3_1`, `llama3_2`, `qwen2_5`, `qwen3`,
   * `deepseek_v3`, `gemma3` (Gemini 2.x / 3 too), `mistral_tekken_240718`, `mistral_tekken_240911`;
   * null when none is public (Claude, Mistral's SentencePiece models, Llama 4).
   */
  tokenizer: string | null;
  family: ModelFamily;
  /** Estimated tokens per BPE token for this model (1 when counted exactly). */
  tokenRatio: number;
}

/** A tool-result output (AI SDK `ToolResultOutput`). */
export type ToolOutput =
  | { type: 'text' | 'error-text'; value: string; [key: string]: unknown }
  | { type: 'json' | 'error-json'; value: unknown; [key: string]: unknown }
  | { type: 'content'; value: unknown[]; [key: string]: unknown }
  | { type: 'execution-denied'; reason?: string; [key: string]: unknown };

/** What replaces the stored content: a tool result's whole output, one string argument of a
 * tool call's input, a user message's text (its string content or one text part: a pasted log
 * over `offload.userThresholdTokens`; `toolCallId` and `toolName` are then empty), or a user's
 * text file (`file-text`: the file part becomes a text part; the store gets the file's text). */
export type Replace =
  | { kind: 'output'; output: ToolOutput }
  | { kind: 'input-field'; field: string; value: string }
  | { kind: 'text'; value: string }
  | { kind: 'file-text'; value: string };

/**
 * A store edit (tiers 1 and 2): store `content` at `path` (content-addressed), and only once
 * that write succeeded, replace the part's content as `replace` says.
 * - `offload` (tier 1): a tool result over the offload threshold → preview + path;
 * - `evict-input` (tier 2): the file content argument of a write/edit call → pointer + preview;
 * - `dedupe` (tier 2): an older read of a file read again later → `[Previously read: …]`;
 * - `mask` (tier 2): a tool result older than the last K → placeholder naming its stored copy.
 */
export interface StoreEditAction {
  type: 'offload' | 'evict-input' | 'dedupe' | 'mask';
  id: string;
  messageIndex: number;
  partIndex: number;
  toolCallId: string;
  toolName: string;
  path: string;
  content: string;
  replace: Replace;
  tokensBefore: number;
  tokensAfter: number;
}

/** Tier 3, before anything lossy: the whole conversation as JSON (`path`) and Markdown. */
export interface SaveTranscriptAction {
  type: 'save-transcript';
  id: string;
  path: string;
  readablePath: string;
  json: string;
  markdown: string;
  messages: number;
  /** The lossy step it is saved before. */
  lossyStrategy: 'summarize' | 'truncate' | 'importance';
}

/** What a summarizer is asked: a valid conversation on its own (one user message). */
export interface SummaryRequest {
  system: string;
  prompt: string;
  /** `[{ role: 'user', content: prompt }]`: a valid `messages` for any AI SDK call. */
  messages: Array<{ role: 'user'; content: string }>;
  maxTokens: number;
  /** The same request as a continuation of the agent's own prompt, which the provider reads
   * from its cache: offered when the model's provider caches prompts and that costs less (see
   * docs/API.md, "A summary request that reads the cache"). `summarizer(model)` sends it when
   * the summarizer is the agent's model. */
  continuation?: SummaryContinuation;
}

/** A summary request as a continuation of the agent's cached prompt. */
export interface SummaryContinuation {
  /** The prefix is messages `[0, end)` of the conversation as planned. */
  end: number;
  /** The last user message: the summary template and the span to summarize. */
  instruction: string;
  /** Tokens of the prefix (read from the cache). */
  prefixTokens: number;
  /** Predicted input cost of this request and of the plain one, in uncached-token equivalents. */
  cost: number;
  plainCost: number;
  /** What to send: the conversation as planned up to `end` (the agent's system messages
   * first, as it sent them), then `instruction` as a user message. Built when first read. */
  readonly messages: MessageLike[];
  /** The tools of the agent's last call exactly as the provider got them (with
   * `compactor.middleware()`; absent with `prepareStep`): send them unchanged, or the cached
   * prefix does not match. */
  readonly tools?: readonly unknown[];
}

/** Tier 3: `messages[start..end)` become one summary message naming the transcript. */
export interface SummarizeAction {
  type: 'summarize';
  id: string;
  /** The save-transcript action that must succeed first. */
  transcript: string;
  transcriptPath: string;
  start: number;
  end: number;
  request: SummaryRequest;
  previousSummary: string | null;
  instructions: string | null;
  /** Heuristic summary used when there is no summarizer or it fails. */
  fallback: string;
  tokensBefore: number;
  tokensAfter: number;
  /** Messages of the span kept verbatim right after the summary: pinned messages with the
   * groups that keep their tool calls valid (absent when none). */
  keep?: number[];
  /** The live plan carried at the end of the summary message (`[Current plan, kept
   * verbatim] the latest <tool> input:\n<JSON>`), when the span holds the latest plan-tool call. */
  plan?: string;
  /** The span's key when its summary is (or was) made ahead of need (`Plan.ahead`). */
  aheadKey?: string;
  /** The summary made ahead for this span: applied as it is, the summarizer is not asked. */
  ready?: string;
  /** Made in the call by a compactor that makes summaries in the background: the call waits
   * (its event says `blocking`). */
  blocking?: boolean;
}

/** Truncation / importance: `messages` leave (their text stays in the transcript); `notice`
 * is inserted at `insertAt`. */
export interface DropAction {
  type: 'drop';
  id: string;
  strategy: 'truncate' | 'importance';
  transcript: string;
  transcriptPath: string;
  messages: number[];
  insertAt: number;
  /** The end (exclusive) of the span the notice stands for, when pinned or working-file messages
   * right after the last removed one stay after the notice. */
  keptUntil?: number;
  notice: string;
  tokensBefore: number;
  tokensAfter: number;
}

export type Action = StoreEditAction | SaveTranscriptAction | SummarizeAction | DropAction;
export type Strategy = StoreEditAction['type'] | 'transcript' | 'summarize' | 'truncate' | 'importance';

export type Note =
  /** `didYouMean`: the registry's names `name` may be a misspelling of, best first. */
  | { type: 'unknown-model'; name: string; assumedWindow: number; didYouMean?: string[] }
  | { type: 'lossy'; strategy: Strategy; messages: number; transcriptPath: string }
  | { type: 'target-not-met'; tokensAfter: number; target: number; reason: string }
  | { type: 'over-budget'; tokensAfter: number; window: number; reason: string }
  /** Actions failed as they were carried out (a store write refused, ...): their content
   * stayed in the conversation, which is over the target; the next call tries again. Added to
   * a `manage`/`compact` result's plan after the fact (the events say which). */
  | { type: 'actions-failed'; failed: number; tokensAfter: number; target: number; reason: string }
  /** Pinned messages and the live plan alone are over the target: no tier may touch them. */
  | { type: 'pinned-over-budget'; pinnedTokens: number; target: number }
  | { type: 'fixed-over-trigger'; fixedTokens: number; trigger: number; reason: string }
  /** The summary asked ahead (`Plan.ahead`) is not back yet: this call goes on unsummarized
   * rather than wait, until the prompt passes the hard limit. */
  | { type: 'summary-pending'; tokens: number; hardLimit: number }
  /** The provider's prompt cache expired since the last call (`now`, `cache.lifetimeSeconds`):
   * the prompt is written again anyway, so the deferred edits were taken. */
  | { type: 'cache-expired'; idleSeconds: number; lifetimeSeconds: number }
  | { type: 'overflow'; reportedTokens: number | null; countedTokens: number; budgetWindow: number; reason: string };

/** A compaction plan: plain data, the same on every runtime. */
export interface Plan {
  model: ModelInfo;
  window: number;
  tokensBefore: number;
  /** Predicted; a summary counts at its maximum size. */
  tokensAfter: number;
  actions: Action[];
  notes: Note[];
  trigger: {
    /** Tier 2 fires above this many tokens… */
    compactAt: number;
    /** …and compacts down to this many. */
    target: number;
    tier2: boolean;
    /** The lossy tier fires above this many tokens, or when tier 2 falls short. */
    summarizeAt: number;
    tier3: boolean;
    /** Past this many tokens an `onPreCompact` cancel is overridden. */
    hardLimit: number;
    manual: boolean;
    /** Tier 1 only, for a tool result as it returns (`wrapTools`); not recorded. */
    offloadOnly: boolean;
  };
  /** Prompt-cache cost: edits to earlier messages invalidate the cache from the first one on.
   * `breakCost` is what the next call pays beyond a cache hit (`tokensInvalidated × (write −
   * read)`) and `savingPerCall` what each later call saves, both in uncached input tokens;
   * `breakEvenCalls` is when the break has paid for itself. */
  cache: {
    prefixChangingEdits: number;
    firstChangedMessage: number | null;
    tokensInvalidated: number;
    pricing?: { provider: 'anthropic' | 'openai' | 'gemini' | 'none'; read: number; write: number };
    breakCost: number;
    savingPerCall: number;
    breakEvenCalls: number | null;
  };
  /** What the compaction record put back before planning (see `CompactorState.record`): the
   * plan's indices refer to the conversation after it. */
  replayed: { edits: number; spans: number };
  /** A summary to make ahead of need, off the critical path (`history.aheadFraction`; only for
   * a compactor whose `background` is on). Not an action: `manage` runs it in the background
   * itself (see `CompactorOptions.background`); the call that reaches the lossy trigger
   * applies it over the same span. */
  ahead?: SummarizeAction;
}

export type Outcome =
  | { type: 'written'; id: string }
  | { type: 'failed'; id: string; error: string }
  | { type: 'summarized'; id: string; text: string };

export interface CompactionEvent {
  actionId: string;
  strategy: Strategy;
  /** `applied`: stored and replaced. `failed`: the store write (or the transcript) failed,
   * nothing removed (a write that did not answer within `storeTimeoutMs` failed). `not-executed`:
   * no outcome was reported, nothing removed. `fallback`: the
   * summarizer was missing or failed and the heuristic summary was applied (`error` says why). */
  status: 'applied' | 'failed' | 'not-executed' | 'fallback';
  messageIndex: number;
  path: string | null;
  tokensBefore: number;
  tokensAfter: number;
  tokensSaved: number;
  filesWritten: number;
  error: string | null;
  /** The tool call whose part this event changed (store edits: offload, evict-input, dedupe,
   * mask); null for transcripts, summaries and drops. */
  toolCallId: string | null;
  toolName: string | null;
  /** A summary made in the call by a compactor that makes them in the background (`background`):
   * none was ready (the hard limit came first, or the conversation jumped past the trigger), so
   * this call waited for the summarizer. */
  blocking?: boolean;
  /** Which call of this compactor fired it (1 for its first `manage`, `compact`,
   * `prepareStep` or middleware call, …). */
  call?: number;
  /** The AI SDK step (`prepareStep`'s `stepNumber`) that fired it, when known. */
  stepNumber?: number;
  /** Set on the events of a recovery from a provider's "prompt too long" error (`recover`,
   * `middleware()`): which provider's error, its count and limit when given, and which retry
   * this compaction prepares (1 for the first). */
  overflow?: { provider: string; reportedTokens?: number; limit?: number; message: string; attempt: number };
}

export interface Usage {
  tokens: number;
  window: number;
  /** tokens / window */
  fraction: number;
}

export interface StrategyStats {
  events: number;
  tokensSaved: number;
  filesWritten: number;
  messagesAffected: number;
}

export interface Stats {
  compactions: number;
  tokensSaved: number;
  filesWritten: number;
  actionsFailed: number;
  byStrategy: Partial<Record<Strategy, StrategyStats>>;
  timeline: { compaction: number; tokensBefore: number; tokensAfter: number }[];
}

/** Everything a compactor learned; persist it and pass it back as `options.state`. */
export interface CompactorState {
  version: number;
  calibration: { model: string; ratio: number; samples: number } | null;
  stats: Stats;
  /** Every edit applied, keyed by the content it replaced, with its replacement as rendered:
   * replayed onto whatever history the compactor is given, so a new compactor with this state
   * and the raw history sends the same prompt as a long-lived one. Opaque; bounded by the live
   * conversation (see docs/API.md). */
  record?: { edits: unknown[]; spans: unknown[] };
  /** When the last model call went out (ms since the Unix epoch, by the compactor's `now`). */
  lastCallAt?: number;
}

export interface ManageResult<M extends MessageLike = MessageLike> {
  messages: M[];
  events: CompactionEvent[];
  plan: Plan;
  /** Tokens of the conversation given, its recorded compactions replayed (what the call started
   * from; `plan.tokensBefore`). */
  tokensBefore: number;
  /** Tokens of `messages`, counted after the call: what is sent, failed writes included (their
   * content stays), where `plan.tokensAfter` is the plan's prediction. */
  tokensAfter: number;
  /** `onPreCompact` cancelled: nothing new was executed and no state changed; `messages` are
   * the input with the recorded compactions replayed (earlier summaries and edits put back: the
   * prompt a long-lived compactor sends), which is the input itself when there are none. */
  cancelled?: boolean;
  /** `onPreCompact` cancelled past the hard limit: the compaction ran anyway. */
  cancelOverridden?: boolean;
  /** With `statePath`: why the state could not be saved after this compaction (the store
   * failed, or did not answer within `storeTimeoutMs`; the compaction itself stands), or why it
   * could not be read (the call then planned from the messages alone). A save lost to another
   * request is not an error (see docs/API.md, "Many instances, one conversation"). */
  stateError?: string;
}

/** What `onPreCompact` is told before a compaction (tier 2 or 3, or manual) runs. */
export interface PreCompactContext {
  trigger: 'auto' | 'manual';
  currentTokens: number;
  targetTokens: number;
  messageCount: number;
  plan: Plan;
}

/** What `onPreCompact` may answer. */
export interface PreCompactDecision {
  /** Skip this compaction (overridden past `plan.trigger.hardLimit`: no deadlock). */
  cancel?: boolean;
  /** Added to the summary prompt (the plan is made again with them). */
  customInstructions?: string;
  /** Used as the summary, without calling `summarize`. */
  customSummary?: string;
}
