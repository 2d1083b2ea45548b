// The OpenAI Agents SDK for JavaScript (`@openai/agents`, `@openai/agents-core`): the compactor as
// the run's `callModelInputFilter`, a model wrapper for calibration and overflow recovery, tools
// that store large outputs as they return, and the recovery tools as Agents SDK tools.
// `import { compactorInputFilter, compactorModel } from 'context-compactor/openai-agents'`
// (issue 33).
//
// Thin by design: this file converts the SDK's input items (Responses API shape) to the core's
// (AI SDK `ModelMessage`) shape and back; every decision is the compactor's. The Responses API
// sends one item per part of a message, so a run of consecutive items is one message, as the AI
// SDK holds the same conversation (and the compactor sees, counts and compacts the same
// messages as through `prepareStep`):
// - `system` / `user` messages → the same roles (`input_text` as text, `input_image` as an image
//   part), one message each;
// - consecutive `assistant` message, `reasoning` and `function_call` items (one model response)
//   → one assistant message: `output_text` as text, reasoning parts, tool-calls (`arguments`
//   parsed);
// - consecutive `function_call_result` items → one tool message of tool results (`text`, or the
//   output's JSON);
// - any other item (a compaction item, a hosted tool call, an unknown item) → its JSON text in an
//   assistant message of its own the core pins: counted, never summarized, dropped or edited.
// An item the compactor left unchanged comes back as the same object; a changed message is
// rebuilt item by item from the originals it was made of (the unchanged items among them as
// they were). The agent's instructions are counted as the system prompt.
//
// The filter runs before every model call on the whole turn input, so the compaction record
// replays earlier compactions onto it (the middleware host shape): the SDK's history stays
// whole and every prompt is the compacted one.
//
// The SDK has no hook that sees a model call's reported usage or its error (run hooks report
// agents and tools; the filter gets the user's context, not the run's usage), so the model is
// wrapped: `compactorModel(compactor, model)` (or `compactorModelProvider` for models given by
// name) passes each response's `usage.inputTokens` to the filter, which feeds it to
// `observeUsage` when the next call is planned (calibration, as `prepareStep` does), and answers
// a provider's "prompt too long" error by compacting the refused request harder
// (`compactor.recover`) and calling the model again, at most `overflow.retries` times.
import { tool, type AgentInputItem, type CallModelInputFilter, type FunctionTool, type Model, type ModelProvider, type ModelRequest, type StreamEvent, type Tool } from '@openai/agents-core';
import type { Compactor } from './compactor.js';
import type { RecoveryToolOptions } from './ai.js';
import type { ManageResult } from './types.js';
import { overflowVerdict, parseOverflow } from './overflow.js';
import { checkCompactor, isObject, mapBack, type CoreMessage, type Json, type Part } from './adapters.js';

export type { CoreMessage } from './adapters.js';


export interface CompactorInputFilterOptions {
  /** Called with every `manage` result (logs, tests). */
  onResult?: (result: ManageResult<CoreMessage>) => void;
}

/** `run(agent, input, { callModelInputFilter: compactorInputFilter(compactor) })`: every model
 * call gets the compacted input. With the agent's model wrapped (`compactorModel`), the usage
 * each call reported is observed here, when the next call is planned (calibration). */
export function compactorInputFilter(compactor: Compactor, options: CompactorInputFilterOptions = {}): CallModelInputFilter {
  checkCompactor('compactorInputFilter', compactor);
  return async ({ modelData }) => {
    // The provider's count of the prompt this filter returned last (`compactorModel` saw it):
    // observed now, as `prepareStep` observes the previous step's, so a tool that ran in between
    // offloaded with the calibration a `prepareStep` host has at that point.
    const reported = pending.get(compactor);
    if (reported !== undefined) {
      pending.delete(compactor);
      compactor.observeUsage({ inputTokens: reported });
    }
    const items = modelData.input;
    const converted = toModelMessages(items);
    const system: CoreMessage[] = modelData.instructions ? [{ role: 'system', content: modelData.instructions }] : [];
    const result = (await compactor.manage([...system, ...converted])) as ManageResult<CoreMessage>;
    options.onResult?.(result);
    const compacted = result.messages.slice(system.length);
    if (JSON.stringify(compacted) === JSON.stringify(converted)) return modelData;
    return { ...modelData, input: fromModelMessages(compacted, items, converted) };
  };
}

/** The provider's reported input tokens of each compactor's last model call, from
 * `compactorModel` to the next `compactorInputFilter` call. */
const pending = new WeakMap<Compactor, number>();

export interface CompactorModelOptions {
  /** Called with every `recover` result after a provider's "prompt too long" error (logs,
   * tests). */
  onResult?: (result: ManageResult<CoreMessage>) => void;
}

/** `new Agent({ model: compactorModel(compactor, model), ... })` with `callModelInputFilter:
 * compactorInputFilter(compactor)` on the run: each response's reported input tokens calibrate
 * the compactor (observed when the filter plans the next call), and a provider's "prompt too
 * long" error compacts the refused request harder (`compactor.recover`) and calls the model
 * again, at most `overflow.retries` times (default 1); still refused after that, the call fails
 * with a `CompactorError('context_overflow')` whose `cause` is the provider's error. Any other
 * error goes through unchanged. A streamed call is retried only before its first event. A
 * request that continues a server-side conversation (`previousResponseId`, `conversationId`)
 * is passed through: the compactor does not see the history the provider holds. */
export function compactorModel(compactor: Compactor, model: Model, options: CompactorModelOptions = {}): Model {
  checkCompactor('compactorModel', compactor);
  if (model === null || typeof model !== 'object' || typeof model.getResponse !== 'function' || typeof model.getStreamedResponse !== 'function') {
    throw new TypeError('compactorModel: model must be an Agents SDK Model (getResponse, getStreamedResponse)');
  }
  const observe = (request: ModelRequest, usage: { inputTokens?: unknown } | undefined) => {
    const input = usage?.inputTokens;
    if (local(request) && typeof input === 'number' && Number.isFinite(input) && input > 0) pending.set(compactor, input);
  };
  const wrapped: Model = {
    async getResponse(request) {
      for (let attempt = 1; ; attempt++) {
        try {
          const response = await model.getResponse(request);
          observe(request, response.usage);
          return response;
        } catch (error) {
          request = await retryRequest(compactor, request, error, attempt, options);
        }
      }
    },
    async *getStreamedResponse(request): AsyncIterable<StreamEvent> {
      for (let attempt = 1; ; attempt++) {
        let started = false;
        try {
          for await (const event of model.getStreamedResponse(request)) {
            started = true;
            if (event.type === 'response_done') observe(request, event.response.usage);
            yield event;
          }
          return;
        } catch (error) {
          if (started) throw error;
          request = await retryRequest(compactor, request, error, attempt, options);
        }
      }
    },
  };
  if (model.supportsPromptModelSelection !== undefined) Object.defineProperty(wrapped, 'supportsPromptModelSelection', { value: model.supportsPromptModelSelection, enumerable: true });
  if (typeof model.getRetryAdvice === 'function') wrapped.getRetryAdvice = (args) => model.getRetryAdvice!(args);
  return wrapped;
}

/** A `ModelProvider` whose models are `compactorModel`s, for agents that name their model:
 * `new Runner({ modelProvider: compactorModelProvider(compactor, new OpenAIProvider()) })`. */
export function compactorModelProvider(compactor: Compactor, provider: ModelProvider, options: CompactorModelOptions = {}): ModelProvider {
  checkCompactor('compactorModelProvider', compactor);
  if (provider === null || typeof provider !== 'object' || typeof provider.getModel !== 'function') throw new TypeError('compactorModelProvider: provider must be an Agents SDK ModelProvider (getModel)');
  return { getModel: async (name) => compactorModel(compactor, await provider.getModel(name), options) };
}

/** Whether the request carries the whole conversation (no history held by the provider). */
function local(request: ModelRequest): boolean {
  return !request.previousResponseId && !request.conversationId;
}

/** The request to retry after `error`: the refused input compacted harder (`compactor.recover`,
 * the instructions counted as the system prompt, as the filter counts them). Rethrows an error
 * that is not an overflow; an overflow after the last retry is a typed `context_overflow`. */
async function retryRequest(compactor: Compactor, request: ModelRequest, error: unknown, attempt: number, options: CompactorModelOptions): Promise<ModelRequest> {
  // The core's rules (src/overflow.rs), as every other middleware's: `attempt - 1` made so far.
  const verdict = overflowVerdict('refused', local(request) ? parseOverflow(error) : undefined, attempt - 1, compactor.overflowRetries, error);
  if (verdict.verdict === 'as-is') throw error;
  if (verdict.verdict === 'fail') throw verdict.error;
  const items: AgentInputItem[] = typeof request.input === 'string' ? [{ role: 'user', content: request.input }] : request.input;
  const converted = toModelMessages(items);
  const system: CoreMessage[] = request.systemInstructions ? [{ role: 'system', content: request.systemInstructions }] : [];
  const result = (await compactor.recover([...system, ...converted], error, { attempt })) as ManageResult<CoreMessage>;
  options.onResult?.(result);
  return { ...request, input: fromModelMessages(result.messages.slice(system.length), items, converted) };
}

/** `tools`, each function tool storing its output over the offload threshold the moment it
 * returns (the model gets the preview naming its path). Other tools are passed through. */
export function compactorTools<T extends readonly Tool<any>[]>(compactor: Compactor, tools: T): T {
  if (!Array.isArray(tools)) throw new TypeError('compactorTools: tools must be an array of Agents SDK tools');
  return tools.map((t) => {
    if (t.type !== 'function') return t;
    const fn = t as FunctionTool<any, any, any>;
    const invoke: FunctionTool<any, any, any>['invoke'] = async (runContext, input, details) => {
      const output = await fn.invoke(runContext, input, details);
      const id = details?.toolCall?.callId ?? `${fn.name}-${Date.now()}`;
      return compactor.offloadToolOutput(fn.name, id, output);
    };
    return Object.assign(Object.create(Object.getPrototypeOf(fn)), fn, { invoke });
  }) as unknown as T;
}

/** The recovery tools (`read_file`, `grep`, `ls`) as Agents SDK function tools over the
 * compactor's store. */
export function recoveryAgentTools(compactor: Compactor, options?: RecoveryToolOptions) {
  checkCompactor('recoveryAgentTools', compactor);
  const set = compactor.tools(options);
  return (['read_file', 'grep', 'ls'] as const).map((name) => {
    const t = set[name];
    const parameters = (t.inputSchema as unknown as { jsonSchema: Json }).jsonSchema;
    return tool({ name, description: t.description, parameters: parameters as never, strict: false, execute: (input: unknown) => t.execute(input as never) });
  });
}

/** Input items in the core's (AI SDK `ModelMessage`) shape: one message per user or system
 * item, per run of consecutive assistant-side items (a model response) and per run of
 * consecutive function call results. */
export function toModelMessages(items: readonly AgentInputItem[]): CoreMessage[] {
  if (!Array.isArray(items)) throw new TypeError('toModelMessages: items must be an array of Agents SDK input items');
  return grouped(items).map(({ message }) => message);
}

/** The compacted messages as input items: each unchanged message is its original items (matched
 * in order by its converted form), each changed one rebuilt from the items of the message at its
 * place when the lists are as long (each part's original item kept where the part is unchanged),
 * and a new one (a summary) as a user message. `converted` is `toModelMessages(originals)`. */
export function fromModelMessages(compacted: readonly CoreMessage[], originals: readonly AgentInputItem[], converted: readonly CoreMessage[]): AgentInputItem[] {
  const groups = grouped(originals);
  if (groups.length !== converted.length) throw new TypeError('fromModelMessages: converted must be toModelMessages(originals)');
  return mapBack(compacted, groups.map((g) => g.items), converted, (message, like) => fromModel(message, like)).flat();
}

type Kind = 'user' | 'system' | 'assistant' | 'tool' | 'pinned';

/** What one item contributes: the message kind it belongs to and its parts (or, for a user or
 * system item and a pinned one, its whole message). */
function itemOf(item: Json, index: number): { kind: Kind; parts?: Part[]; message?: CoreMessage } {
  if (item === null || typeof item !== 'object') throw new TypeError(`toModelMessages: items[${index}] is not an input item`);
  if (item.role === 'system') return { kind: 'system', message: { role: 'system', content: textOf(item.content) } };
  if (item.role === 'user') return { kind: 'user', message: { role: 'user', content: typeof item.content === 'string' ? item.content : partsOf(item.content) } };
  if (item.role === 'assistant') return { kind: 'assistant', parts: partsOf(item.content) };
  if (item.type === 'function_call') {
    let input: unknown;
    try {
      input = JSON.parse(String(item.arguments ?? '{}'));
    } catch {
      input = { arguments: item.arguments };
    }
    return { kind: 'assistant', parts: [{ type: 'tool-call', toolCallId: String(item.callId), toolName: String(item.name), input }] };
  }
  if (item.type === 'function_call_result') {
    const out = item.output as unknown;
    const output =
      typeof out === 'string'
        ? { type: 'text', value: out }
        : isObject(out) && out.type === 'text' && typeof out.text === 'string'
          ? { type: 'text', value: out.text }
          : { type: 'json', value: out ?? null };
    return { kind: 'tool', parts: [{ type: 'tool-result', toolCallId: String(item.callId), toolName: String(item.name), output }] };
  }
  if (item.type === 'reasoning') {
    const text = Array.isArray(item.content) ? item.content.map((c) => (isObject(c) && typeof c.text === 'string' ? c.text : '')).join('') : '';
    return { kind: 'assistant', parts: [{ type: 'reasoning', text }] };
  }
  // Anything else (a compaction item, a hosted tool call, ...) is kept as it is: pinned.
  return { kind: 'pinned', message: { role: 'assistant', content: [{ type: 'text', text: JSON.stringify(item) }], providerOptions: { contextCompactor: { pin: true } } } };
}

/** The items as messages, each with the items it was made of. */
function grouped(items: readonly AgentInputItem[]): { message: CoreMessage; items: AgentInputItem[] }[] {
  const out: { kind: Kind; message: CoreMessage; items: AgentInputItem[] }[] = [];
  items.forEach((item, i) => {
    const { kind, parts, message } = itemOf(item as Json, i);
    const last = out.at(-1);
    if (parts && last?.kind === kind) {
      (last.message.content as Part[]).push(...parts);
      last.items.push(item);
    } else out.push({ kind, message: message ?? { role: kind as 'assistant' | 'tool', content: [...parts!] }, items: [item] });
  });
  return out.map(({ message, items: its }) => ({ message, items: its }));
}

/** A changed message as items: its parts in runs (text parts as one assistant message, each
 * reasoning part, tool-call and tool-result as its item), each run the original item whose
 * parts it equals, else rebuilt from the original of its kind (the same call id for calls and
 * results). */
function fromModel(message: CoreMessage, like: AgentInputItem[] | undefined): AgentInputItem[] {
  const originals = (like ?? []) as Json[];
  const parts = typeof message.content === 'string' ? [] : message.content;
  const text = typeof message.content === 'string' ? message.content : parts.filter((p) => p.type === 'text').map((p) => String(p.text)).join('');
  if (message.role === 'system') return [{ role: 'system', content: text } as AgentInputItem];
  if (message.role === 'user') {
    const base = originals.find((o) => o.role === 'user');
    const media = parts.some((p) => p.type === 'image');
    const content = media ? parts.map((p) => (p.type === 'image' ? { type: 'input_image', image: String(p.image) } : { type: 'input_text', text: String(p.text ?? JSON.stringify(p)) })) : text;
    return [{ ...(base ?? {}), role: 'user', content } as AgentInputItem];
  }
  // Runs of parts: consecutive text parts are one assistant message item.
  const runs: Part[][] = [];
  for (const p of parts) {
    if (p.type === 'text' && runs.at(-1)?.[0]?.type === 'text') runs.at(-1)!.push(p);
    else runs.push([p]);
  }
  const used = new Set<Json>();
  const take = (test: (o: Json) => boolean) => {
    const found = originals.find((o) => !used.has(o) && test(o));
    if (found) used.add(found);
    return found;
  };
  return runs.map((run): AgentInputItem => {
    const key = JSON.stringify(run);
    const same = take((o) => JSON.stringify(itemOf(o, 0).parts) === key);
    if (same) return same as AgentInputItem;
    const [first] = run as [Part];
    if (first.type === 'tool-result') {
      const result = first as Part & { output: { type: string; value: unknown } };
      const value = typeof result.output.value === 'string' ? result.output.value : JSON.stringify(result.output.value);
      const base = take((o) => o.type === 'function_call_result' && o.callId === result.toolCallId) ?? { type: 'function_call_result', callId: result.toolCallId, name: result.toolName, status: 'completed' };
      return { ...base, output: { type: 'text', text: value } } as AgentInputItem;
    }
    if (first.type === 'tool-call') {
      const base = take((o) => o.type === 'function_call' && o.callId === first.toolCallId) ?? { type: 'function_call', callId: first.toolCallId, name: first.toolName, status: 'completed' };
      return { ...base, arguments: JSON.stringify(first.input) } as AgentInputItem;
    }
    if (first.type === 'reasoning') {
      const base = take((o) => o.type === 'reasoning') ?? { type: 'reasoning' };
      return { ...base, content: [{ type: 'input_text', text: String(first.text ?? '') }] } as AgentInputItem;
    }
    const base = take((o) => o.role === 'assistant') ?? { role: 'assistant', status: 'completed' };
    return { ...base, content: run.map((p) => ({ type: 'output_text', text: p.type === 'text' ? String(p.text) : JSON.stringify(p) })) } as AgentInputItem;
  });
}

function partsOf(content: unknown): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  return content.map((c): Part => {
    if (!isObject(c)) return { type: 'text', text: String(c) };
    if ((c.type === 'input_text' || c.type === 'output_text') && typeof c.text === 'string') return { type: 'text', text: c.text };
    if (c.type === 'input_image' && typeof c.image === 'string') return { type: 'image', image: c.image };
    return { type: 'text', text: JSON.stringify(c) };
  });
}

function textOf(content: unknown): string {
  return typeof content === 'string' ? content : partsOf(content).map((p) => String(p.text ?? '')).join('');
}
