// Loop context (seed 003) and prompt segments. The state is plain data: keep it, persist it
// (edge workers are stateless per request), and pass it back. All logic is in the core
// (src/loop_context.rs, src/prompts.rs); this file only converts.
import {
  loopAddIteration,
  loopApplySummary,
  loopBuildPrompt,
  loopNew,
  loopRequestSummary,
  memorySegment as coreMemorySegment,
  recoverySegment as coreRecoverySegment,
  withMemory as coreWithMemory,
} from './wasm/context_compactor.js';
import { stringify } from './codec.js';
import { core } from './errors.js';
import { assertInitialized } from './core.js';
import type { SummaryRequest } from './types.js';

/** Loop settings (defaults from seed 003). */
export interface LoopConfig {
  /** Iterations kept raw. Default 5. */
  rawWindowSize?: number;
  /** Re-summarize every N iterations. Default 10. */
  summarizeEvery?: number;
  /** Default 2,000. */
  maxSummaryTokens?: number;
  /** An iteration's prompt is cut to this many characters. Default 500. */
  promptMaxChars?: number;
  /** An iteration's output is cut to this many characters. Default 5,000. */
  outputMaxChars?: number;
  /** Recent iterations shown in the prompt. Default 3. */
  recentInPrompt?: number;
  /** Output characters of each of them. Default 1,000. */
  recentOutputChars?: number;
  goalMaxTokens?: number;
  instructionsMaxTokens?: number;
  extraInstructions?: string;
  /** The whole prompt's budget. Default 50,000. */
  totalBudgetTokens?: number;
}

/** One iteration of an agent loop, as the host reports it. */
export interface Iteration {
  number?: number;
  unixMs: number;
  cli?: string;
  model?: string;
  prompt?: string;
  output?: string;
  progressScore?: number;
  progressMarkers?: string[];
  fileChanges?: string[];
  durationMs?: number;
}

/** The loop's state (opaque to most hosts: keep it and pass it back). */
export interface LoopState {
  goal: string;
  startUnixMs: number;
  iterations: Required<Iteration>[];
  pending: Required<Iteration>[];
  summary: string;
  summarizedThrough: number;
  totalIterations: number;
  currentCli: string;
  currentModel: string;
  summaryInFlight: { id: string; from: number; through: number } | null;
  summaryFailures: number;
  lastSummaryError: string | null;
  [key: string]: unknown;
}

/** A summary the loop needs: run `system` + `messages` through an LLM, then `applySummary`. */
export interface LoopSummaryRequest extends SummaryRequest {
  id: string;
  from: number;
  through: number;
}

export interface LoopStep {
  state: LoopState;
  /** Present when a (re-)summarization is due. */
  request: LoopSummaryRequest | null;
}

/** The core's `{context, request}` answer as a LoopStep. */
function step(json: string): LoopStep {
  const { context, request } = JSON.parse(json) as { context: LoopState; request: LoopSummaryRequest | null };
  return { state: context, request };
}

/** The loop context API: every function takes the state and returns a new one. */
export const loopContext = {
  create(goal: string, startUnixMs: number): LoopState {
    assertInitialized('loopContext.create');
    return JSON.parse(loopNew(goal, startUnixMs)) as LoopState;
  },
  addIteration(state: LoopState, iteration: Iteration, config: LoopConfig = {}): LoopStep {
    assertInitialized('loopContext.addIteration');
    return step(core(() => loopAddIteration(stringify(state), stringify(iteration), stringify(config))));
  },
  requestSummary(state: LoopState, config: LoopConfig = {}): LoopStep {
    assertInitialized('loopContext.requestSummary');
    return step(core(() => loopRequestSummary(stringify(state), stringify(config))));
  },
  /** `result`: the summary text, or `{ error }` when the LLM call failed (nothing is lost;
   * the next interval retries). */
  applySummary(state: LoopState, id: string, result: string | { error: string }): LoopState {
    assertInitialized('loopContext.applySummary');
    const [summary, error] = typeof result === 'string' ? [result, undefined] : [undefined, result.error];
    return JSON.parse(core(() => loopApplySummary(stringify(state), id, summary, error))) as LoopState;
  },
  /** The prompt for the next iteration: goal, progress summary, recent iterations, state,
   * instructions — within the token budget. */
  buildPrompt(state: LoopState, config: LoopConfig = {}): string {
    assertInitialized('loopContext.buildPrompt');
    return core(() => loopBuildPrompt(stringify(state), stringify(config)));
  },
};

/** System-prompt segment telling the agent how compaction works and how to recover content. */
export function recoverySegment(offloadPrefix = '/tool_outputs/', historyPrefix = '/conversation_history/'): string {
  assertInitialized('recoverySegment');
  return coreRecoverySegment(offloadPrefix, historyPrefix);
}

/** System-prompt segment for the long-term memory protocol (`/memories/`). */
export function memorySegment(memoriesPrefix = '/memories/'): string {
  assertInitialized('memorySegment');
  return coreMemorySegment(memoriesPrefix);
}

/** Appends a loaded `/memories/AGENTS.md` to a system prompt (unchanged when empty). */
export function withMemory(system: string, agentsMd: string | null | undefined): string {
  assertInitialized('withMemory');
  return coreWithMemory(system, agentsMd ?? undefined);
}
