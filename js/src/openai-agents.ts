// The OpenAI Agents SDK for JavaScript (`@openai/agents`, `@openai/agents-core`): the compactor as
// the run's `callModelInputFilter`, tools that store large outputs as they return, and the
// recovery tools as Agents SDK tools. `import { compactorInputFilter } from
// 'context-compactor/openai-agents'` (issue 33).
//
// Thin by design: this file converts the SDK's input items (Responses API shape) to the core's
// (AI SDK `ModelMessage`) shape and back; every decision is the compactor's. One message per
// item:
// - `system` / `user` / `assistant` messages → the same roles (`input_text` / `output_text` as
//   text, `input_image` as an image part);
// - `function_call` → an assistant tool-call (its `arguments` parsed), `function_call_result` →
//   a tool result (`text`, or the output's JSON);
// - `reasoning` → a reasoning part;
// - any other item (a compaction item, a hosted tool call, an unknown item) → its JSON text in an
//   assistant message the core pins: counted, never summarized, dropped or edited.
// An item the compactor left unchanged comes back as the same object; a changed one is rebuilt
// from the original at its place. The agent's instructions are counted as the system prompt.
//
// The filter runs before every model call on the whole turn input, so the compaction record
// replays earlier compactions onto it (the middleware host shape): the SDK's history stays
// whole and every prompt is the compacted one.
import { tool, type AgentInputItem, type CallModelInputFilter, type FunctionTool, type Tool } from '@openai/agents-core';
import type { Compactor } from './compactor.js';
import type { RecoveryToolOptions } from './ai.js';
import type { ManageResult } from './types.js';
import { checkCompactor, isObject, mapBack, type CoreMessage, type Json, type Part } from './adapters.js';

export type { CoreMessage } from './adapters.js';


export interface CompactorInputFilterOptions {
  /** Called with every `manage` result (logs, tests). */
  onResult?: (result: ManageResult<CoreMessage>) => void;
}

/** `run(agent, input, { callModelInputFilter: compactorInputFilter(compactor) })`: every model
 * call gets the compacted input. */
export function compactorInputFilter(compactor: Compactor, options: CompactorInputFilterOptions = {}): CallModelInputFilter {
  checkCompactor('compactorInputFilter', compactor);
  return async ({ modelData }) => {
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
  const set = compactor.tools(options);
  return (['read_file', 'grep', 'ls'] as const).map((name) => {
    const t = set[name];
    const parameters = (t.inputSchema as unknown as { jsonSchema: Json }).jsonSchema;
    return tool({ name, description: t.description, parameters: parameters as never, strict: false, execute: (input: unknown) => t.execute(input as never) });
  });
}

/** Input items in the core's (AI SDK `ModelMessage`) shape, one message per item. */
export function toModelMessages(items: readonly AgentInputItem[]): CoreMessage[] {
  if (!Array.isArray(items)) throw new TypeError('toModelMessages: items must be an array of Agents SDK input items');
  return items.map((item, i) => toModel(item as Json, i));
}

/** The compacted messages as input items: each unchanged one is the original item (matched in
 * order by its converted form), each changed one rebuilt from the item at its place when the
 * lists are as long, and a new one (a summary) as a user message. */
export function fromModelMessages(compacted: readonly CoreMessage[], originals: readonly AgentInputItem[], converted: readonly CoreMessage[]): AgentInputItem[] {
  return mapBack(compacted, originals, converted, (message, like) => fromModel(message, like as Json | undefined));
}

function toModel(item: Json, index: number): CoreMessage {
  if (item === null || typeof item !== 'object') throw new TypeError(`toModelMessages: items[${index}] is not an input item`);
  if (item.role === 'system') return { role: 'system', content: textOf(item.content) };
  if (item.role === 'user') return { role: 'user', content: typeof item.content === 'string' ? item.content : partsOf(item.content) };
  if (item.role === 'assistant') return { role: 'assistant', content: partsOf(item.content) };
  if (item.type === 'function_call') {
    let input: unknown;
    try {
      input = JSON.parse(String(item.arguments ?? '{}'));
    } catch {
      input = { arguments: item.arguments };
    }
    return { role: 'assistant', content: [{ type: 'tool-call', toolCallId: String(item.callId), toolName: String(item.name), input }] };
  }
  if (item.type === 'function_call_result') {
    const out = item.output as unknown;
    const output =
      typeof out === 'string'
        ? { type: 'text', value: out }
        : isObject(out) && out.type === 'text' && typeof out.text === 'string'
          ? { type: 'text', value: out.text }
          : { type: 'json', value: out ?? null };
    return { role: 'tool', content: [{ type: 'tool-result', toolCallId: String(item.callId), toolName: String(item.name), output }] };
  }
  if (item.type === 'reasoning') {
    const text = Array.isArray(item.content) ? item.content.map((c) => (isObject(c) && typeof c.text === 'string' ? c.text : '')).join('') : '';
    return { role: 'assistant', content: [{ type: 'reasoning', text }] };
  }
  // Anything else (a compaction item, a hosted tool call, ...) is kept as it is: pinned.
  return { role: 'assistant', content: [{ type: 'text', text: JSON.stringify(item) }], providerOptions: { contextCompactor: { pin: true } } };
}

function fromModel(message: CoreMessage, like: Json | undefined): AgentInputItem {
  const parts = typeof message.content === 'string' ? [] : message.content;
  const text = typeof message.content === 'string' ? message.content : parts.filter((p) => p.type === 'text').map((p) => String(p.text)).join('');
  const call = parts.find((p) => p.type === 'tool-call');
  const result = parts.find((p) => p.type === 'tool-result') as (Part & { output: { type: string; value: unknown } }) | undefined;
  if (result !== undefined) {
    const { output } = result;
    const value = typeof output.value === 'string' ? output.value : JSON.stringify(output.value);
    const base = like?.type === 'function_call_result' ? like : { type: 'function_call_result', callId: result.toolCallId, name: result.toolName, status: 'completed' };
    return { ...base, output: { type: 'text', text: value } } as AgentInputItem;
  }
  if (call !== undefined) {
    const base = like?.type === 'function_call' ? like : { type: 'function_call', callId: call.toolCallId, name: call.toolName, status: 'completed' };
    return { ...base, arguments: JSON.stringify(call.input) } as AgentInputItem;
  }
  if (message.role === 'system') return { role: 'system', content: text } as AgentInputItem;
  if (message.role === 'assistant') {
    const base = like?.role === 'assistant' ? like : { role: 'assistant', status: 'completed' };
    return { ...base, content: [{ type: 'output_text', text }] } as AgentInputItem;
  }
  const media = parts.some((p) => p.type === 'image');
  const content = media ? parts.map((p) => (p.type === 'image' ? { type: 'input_image', image: String(p.image) } : { type: 'input_text', text: String(p.text ?? JSON.stringify(p)) })) : text;
  return { ...(like?.role === 'user' ? like : {}), role: 'user', content } as AgentInputItem;
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
