// Public types. They mirror the Rust core's serde types (src/plan.rs, src/compactor.rs,
// src/models.rs); the JSON that crosses the wasm boundary has exactly these shapes.

/** An AI SDK `ModelMessage`-shaped message. Kept structural so any AI SDK version's types fit. */
export interface MessageLike {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: unknown;
  [key: string]: unknown;
}

export type EncodingName = 'o200k_base' | 'cl100k_base';

export type ModelFamily =
  | 'openai' | 'anthropic' | 'google' | 'meta' | 'mistral' | 'qwen' | 'deepseek' | 'unknown';

export interface ModelInfo {
  name: string;
  /** The registry entry matched, or null for an unknown model. */
  matched: string | null;
  contextWindow: number;
  maxOutputTokens: number;
  encoding: EncodingName;
  family: ModelFamily;
  /** Estimated tokens per BPE token for this family (1 for OpenAI: exact). */
  tokenRatio: number;
}

/** A tool-result output (AI SDK `ToolResultOutput`). */
export type ToolOutput =
  | { type: 'text' | 'error-text'; value: string; [key: string]: unknown }
  | { type: 'json' | 'error-json'; value: unknown; [key: string]: unknown }
  | { type: 'content'; value: unknown[]; [key: string]: unknown }
  | { type: 'execution-denied'; reason?: string; [key: string]: unknown };

/** What replaces the stored content: a tool result's whole output, or one string argument
 * of a tool call's input. */
export type Replace =
  | { kind: 'output'; output: ToolOutput }
  | { kind: 'input-field'; field: string; value: string };

/**
 * Every action of this version: store `content` at `path` (content-addressed), and only once
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

export type Action = StoreEditAction;
export type Strategy = Action['type'];

export type Note =
  | { type: 'unknown-model'; name: string; assumedWindow: number }
  | { type: 'target-not-met'; tokensAfter: number; target: number; reason: string }
  | { type: 'over-budget'; tokensAfter: number; window: number; reason: string };

/** A compaction plan: plain data, the same on every runtime. */
export interface Plan {
  model: ModelInfo;
  window: number;
  tokensBefore: number;
  tokensAfter: number;
  actions: Action[];
  notes: Note[];
  /** Tier 2 fires above `compactAt` tokens and compacts down to `target`. */
  trigger: { compactAt: number; target: number; tier2: boolean };
  /** Prompt-cache cost: edits to earlier messages invalidate the cache from the first one on. */
  cache: { prefixChangingEdits: number; firstChangedMessage: number | null; tokensInvalidated: number };
}

export type Outcome =
  | { type: 'written'; id: string }
  | { type: 'failed'; id: string; error: string };

export interface CompactionEvent {
  actionId: string;
  strategy: Strategy;
  /** `applied`: stored and replaced. `failed`: the store write failed, nothing removed.
   * `not-executed`: no outcome was reported, nothing removed. */
  status: 'applied' | 'failed' | 'not-executed';
  messageIndex: number;
  path: string | null;
  tokensBefore: number;
  tokensAfter: number;
  tokensSaved: number;
  error: string | null;
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
}

export interface ManageResult<M extends MessageLike = MessageLike> {
  messages: M[];
  events: CompactionEvent[];
  plan: Plan;
}
