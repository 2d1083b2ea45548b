// Session reports from JS: record what compaction did at each model call, then render the same
// self-contained HTML page as `context-compactor report` (the renderer is the core's, in Rust,
// reached through the wasm binding: one template for both hosts).

import { renderReport as coreRenderReport, renderReportChart as coreRenderChart } from './wasm/context_compactor.js';
import type { Compactor, PrepareStepInput } from './compactor.js';
import { CompactorError, core } from './errors.js';
import { assertInitialized, countTokens } from './core.js';
import type { CompactionEvent, ManageResult, MessageLike, Plan, Strategy } from './types.js';

/** Everything a session report shows (the CLI's `report --json` prints the same shape). */
export interface ReportData {
  /** The page's heading. */
  title: string;
  /** The model name as configured. */
  model: string;
  /** The encoding of the store table's token counts. */
  encoding: string;
  /** The context window the compactor budgets against. */
  window: number;
  /** Where the tiers fire, in tokens. */
  thresholds: { compactAt: number; target: number; summarizeAt: number };
  /** One entry per model call, in order. */
  calls: ReportCall[];
  /** Every file compaction wrote, in the order written. */
  store: ReportFile[];
  /** Remarks shown under the heading. */
  notes: string[];
}

/** One model call: the conversation handed to the compactor, and the prompt sent. */
export interface ReportCall {
  /** 1-based call number. */
  call: number;
  /** Messages handed to the compactor for this call (the CLI: of the recorded session so far). */
  messages: number;
  /** Tokens of the conversation before this call's compaction. */
  tokensBefore: number;
  /** Tokens of the prompt sent. */
  tokensAfter: number;
  /** The prompt does not start with the previous call's prompt: the provider's prompt cache is
   * re-read from the first changed message. */
  prefixBreak: boolean;
  /** What compaction did before this call. */
  events: ReportEvent[];
}

/** The fields of a `CompactionEvent` a report shows. */
export type ReportEvent = Pick<CompactionEvent, 'strategy' | 'status' | 'messageIndex' | 'path' | 'tokensBefore' | 'tokensAfter' | 'tokensSaved' | 'error'>;

/** A file compaction wrote. */
export interface ReportFile {
  path: string;
  /** The action that wrote it (`transcript` for a saved conversation). */
  strategy: Strategy;
  /** The call before which it was written. */
  call: number;
  /** Exact tokens of the content in the report's encoding. */
  tokens: number;
  /** Characters (code points) of the content. */
  chars: number;
}

/** The report as one self-contained HTML page (inline CSS and SVG; no script, font or network
 * request). Synchronous once `init()` resolved. */
export function renderReport(data: ReportData): string {
  assertInitialized('renderReport');
  return core(() => coreRenderReport(JSON.stringify(data)));
}

/** The report's chart alone: a `<figure>` with an inline `<svg>` that scales to its container's
 * width, for a page that shows it live (the browser-chat example does). */
export function renderReportChart(data: ReportData): string {
  assertInitialized('renderReportChart');
  return core(() => coreRenderChart(JSON.stringify(data)));
}

/** Options of `createReportRecorder`. */
export interface ReportOptions {
  /** The page's heading (default `'Session report'`). */
  title?: string;
  /** Calls recorded earlier (a previous recorder's `calls`), to continue a session after a
   * reload. */
  calls?: readonly ReportCall[];
}

/** What `createReportRecorder` returns. Each method that takes a compactor records one model
 * call; `data()` and `html()` read the last compactor seen. */
export interface ReportRecorder {
  /** The calls recorded so far (plain data: persist it and pass it back as `options.calls`). */
  readonly calls: readonly ReportCall[];
  /** Pass as the compactor's `onEvent` (or call it from yours): the events of `prepareStep`
   * and of `offloadToolOutput`/`wrapTools` reach the recorder only this way. An event counts
   * toward the call being recorded, or the next one. */
  readonly onEvent: (event: CompactionEvent) => void;
  /** `compactor.prepareStep`, recorded: pass `prepareStep: report.prepareStep(compactor)`. */
  prepareStep(compactor: Compactor): <M extends MessageLike>(step: PrepareStepInput<M>) => Promise<{ messages: M[] }>;
  /** `compactor.manage(messages)`, recorded. */
  manage<M extends MessageLike>(compactor: Compactor, messages: readonly M[]): Promise<ManageResult<M>>;
  /** `compactor.compact(messages, options)`, recorded. */
  compact<M extends MessageLike>(compactor: Compactor, messages: readonly M[], options?: { instructions?: string }): Promise<ManageResult<M>>;
  /** The report: the calls, the thresholds, and every stored file read back from the store. */
  data(compactor?: Compactor): Promise<ReportData>;
  /** `renderReport(await data())`. */
  html(compactor?: Compactor): Promise<string>;
}

/**
 * Records a session report from a live compactor, one entry per model call: the tokens of the
 * conversation handed in, the tokens of the prompt sent, the compaction events in between, and
 * whether the prompt broke the previous one's prefix (the provider's prompt cache).
 *
 * ```ts
 * const report = createReportRecorder({ title: 'research agent' });
 * const compactor = await createCompactor({ model: 'gpt-4o', onEvent: report.onEvent });
 * await generateText({ model, messages, prepareStep: report.prepareStep(compactor) });
 * await writeFile('report.html', await report.html());
 * ```
 *
 * With `manage` the tokens before are the compactor's own (`plan.tokensBefore`); with
 * `prepareStep` they are `compactor.usage` of the instructions and the step's messages, once the
 * previous step's usage has calibrated it — in AI SDK 7, where the returned messages persist,
 * the same figure.
 */
export function createReportRecorder(options: ReportOptions = {}): ReportRecorder {
  const calls: ReportCall[] = [...(options.calls ?? [])];
  const readable = new Map<string, string>(); // transcript JSON path → its Markdown sibling
  let pending: CompactionEvent[] = [];
  let trigger: Plan['trigger'] | undefined;
  let previous: readonly unknown[] | undefined;
  let last: Compactor | undefined;
  let system: { instructions: unknown; messages: MessageLike[] } | undefined;

  const record = (compactor: Compactor, handedIn: number, before: number, prompt: readonly unknown[], events: CompactionEvent[]): void => {
    last = compactor;
    const all = [...pending.filter((e) => !events.includes(e)), ...events];
    pending = [];
    const changed = all.some((e) => e.status === 'applied' || e.status === 'fallback');
    calls.push({
      call: calls.length + 1,
      messages: handedIn,
      tokensBefore: before,
      tokensAfter: changed ? compactor.usage(prompt as MessageLike[]).tokens : before,
      prefixBreak: previous !== undefined && !startsWith(prompt, previous),
      events: all.map(reportEvent),
    });
    previous = prompt;
  };
  const fromResult = (compactor: Compactor, messages: readonly unknown[], result: ManageResult): void => {
    trigger ??= result.plan.trigger;
    for (const action of result.plan.actions) if (action.type === 'save-transcript') readable.set(action.path, action.readablePath);
    record(compactor, messages.length, result.plan.tokensBefore, result.messages, result.events);
  };

  const data = async (compactor: Compactor | undefined = last): Promise<ReportData> => {
    if (!compactor) throw new CompactorError('invalid_config', 'createReportRecorder: no call recorded yet; pass the compactor to data()/html()');
    const model = compactor.model;
    const files: ReportFile[] = [];
    const seen = new Set<string>();
    for (const call of calls) {
      for (const event of call.events) {
        if (event.status !== 'applied' || event.path === null) continue;
        const paths = [event.path];
        const markdown = readable.get(event.path);
        if (event.strategy === 'transcript' && markdown) paths.push(markdown);
        for (const path of paths) {
          if (seen.has(path)) continue;
          seen.add(path);
          const text = await compactor.store.read(path);
          if (text === null || text === undefined) continue;
          files.push({ path, strategy: event.strategy, call: call.call, tokens: countTokens(text, model.encoding), chars: codePoints(text) });
        }
      }
    }
    trigger ??= compactor.plan([]).trigger;
    return {
      title: options.title ?? 'Session report',
      model: model.name,
      encoding: model.encoding,
      window: model.contextWindow,
      thresholds: { compactAt: trigger.compactAt, target: trigger.target, summarizeAt: trigger.summarizeAt },
      calls: structuredClone(calls),
      store: files,
      notes: [],
    };
  };

  return {
    calls,
    onEvent: (event) => {
      pending.push(event);
      // A transcript's Markdown sibling is named like its JSON (see data()).
      if (event.strategy === 'transcript' && event.path?.endsWith('.json')) readable.set(event.path, `${event.path.slice(0, -5)}.md`);
    },
    prepareStep: (compactor: Compactor) => async <M extends MessageLike>(step: PrepareStepInput<M>): Promise<{ messages: M[] }> => {
      // The same system message objects every step (as prepareStep keeps its own): the core
      // then sees a conversation that only grew, and counts only what is new.
      if (!system || system.instructions !== step.instructions) system = { instructions: step.instructions, messages: systemMessages(step.instructions) };
      const sys = system.messages as M[];
      // The previous step's usage first, as `compactor.prepareStep` feeds it before it counts:
      // measured before that calibration, `before` would be on another scale than `after` (an
      // offload could show the prompt growing). The compactor ignores the second report.
      const lastUsage = step.steps?.at(-1)?.usage;
      if (lastUsage) compactor.observeUsage(lastUsage);
      const before = compactor.usage([...sys, ...step.messages]).tokens;
      const out = await compactor.prepareStep({ ...step, instructions: sys });
      record(compactor, sys.length + step.messages.length, before, [...sys, ...out.messages], []);
      return out;
    },
    manage: async (compactor, messages) => {
      const result = await compactor.manage(messages);
      fromResult(compactor, messages, result);
      return result;
    },
    compact: async (compactor, messages, opts) => {
      const result = await compactor.compact(messages, opts);
      fromResult(compactor, messages, result);
      return result;
    },
    data,
    html: async (compactor) => renderReport(await data(compactor)),
  };
}

/** AI SDK `instructions` as system messages (`[]` for none). */
function systemMessages(instructions: unknown): MessageLike[] {
  if (instructions === undefined || instructions === null || instructions === '') return [];
  if (typeof instructions === 'string') return [{ role: 'system', content: instructions }];
  return (Array.isArray(instructions) ? instructions : [instructions]) as MessageLike[];
}

function reportEvent(e: CompactionEvent): ReportEvent {
  return { strategy: e.strategy, status: e.status, messageIndex: e.messageIndex, path: e.path, tokensBefore: e.tokensBefore, tokensAfter: e.tokensAfter, tokensSaved: e.tokensSaved, error: e.error };
}

/** Whether `prompt` starts with `previous`: the same objects, or messages with the same JSON
 * (a compaction returns new objects for every message). */
function startsWith(prompt: readonly unknown[], previous: readonly unknown[]): boolean {
  if (prompt.length < previous.length) return false;
  return previous.every((m, i) => m === prompt[i] || JSON.stringify(m) === JSON.stringify(prompt[i]));
}

function codePoints(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length - 1; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}
