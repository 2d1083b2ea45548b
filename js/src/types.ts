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

/** Tier 1: store `content` at `path`, then the tool result's output becomes `replacement`. */
export interface OffloadAction {
  type: 'offload';
  id: string;
  messageIndex: number;
  partIndex: number;
  toolCallId: string;
  toolName: string;
  path: string;
  content: string;
  replacement: ToolOutput;
  tokensBefore: number;
  tokensAfter: number;
}

export type Action = OffloadAction;

export type Note =
  | { type: 'unknown-model'; name: string; assumedWindow: number }
  | { type: 'over-budget'; tokensAfter: number; window: number; reason: string };

/** A compaction plan: plain data, the same on every runtime. */
export interface Plan {
  model: ModelInfo;
  window: number;
  tokensBefore: number;
  tokensAfter: number;
  actions: Action[];
  notes: Note[];
}

export type Outcome =
  | { type: 'written'; id: string }
  | { type: 'failed'; id: string; error: string };

export interface CompactionEvent {
  actionId: string;
  strategy: 'offload';
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
  byStrategy: Partial<Record<'offload', StrategyStats>>;
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
