// LangChain.js v1 agents (`createAgent`): the compactor as agent middleware, and the recovery
// tools as LangChain tools. `import { compactorMiddleware } from 'context-compactor/langchain'`.
//
// Thin by design (issue 33): this file converts LangChain messages to the core's (AI SDK
// `ModelMessage`) shape and back, and wires the hooks; every decision is the compactor's. It is
// the TypeScript twin of the Python package's `context_compactor.langchain` and converts the
// same way:
// - `SystemMessage` → `system`, `HumanMessage` → `user`, `AIMessage` → `assistant` (its text,
//   reasoning blocks and `tool_calls`), `ToolMessage` → `tool` (one `tool-result`: `text`, or
//   `error-text` for `status: 'error'`, or `content` with images).
// - Image blocks (LangChain v1 `{type: 'image', data | url}`, OpenAI's `image_url`, Anthropic's
//   `source`) cross as the core's image parts, counted as images.
// - A message the compactor left unchanged comes back as the same LangChain object (id,
//   metadata and all); a changed one is rebuilt with the original's id and fields.
//
// `beforeModel` runs `compactor.manage` on the agent's messages before every model call and,
// when something changed, replaces them in the agent's state (`RemoveMessage(REMOVE_ALL)` then
// the compacted list, as LangChain's own `summarizationMiddleware` does), so a compaction
// persists into later steps. `wrapToolCall` offloads a tool's large output the moment it
// returns (`offloadAtReturn`, on by default), so it never enters the history whole.
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, createMiddleware, tool } from 'langchain';
import { RemoveMessage, type BaseMessage } from '@langchain/core/messages';
import type { Compactor } from './compactor.js';
import type { ManageResult } from './types.js';
import { checkCompactor, isObject, mapBack, type CoreMessage, type Json, type Part } from './adapters.js';

export type { CoreMessage } from './adapters.js';
import type { RecoveryToolOptions } from './ai.js';

/** LangGraph's `REMOVE_ALL_MESSAGES` (`@langchain/langgraph`), not imported: the middleware
 * needs nothing else from it. */
const REMOVE_ALL_MESSAGES = '__remove_all__';


export interface CompactorMiddlewareOptions {
  /** Store a tool's output over the offload threshold the moment the tool returns (the model
   * gets the preview naming its path). Default true. */
  offloadAtReturn?: boolean;
  /** Called with every `manage` result (logs, tests). */
  onResult?: (result: ManageResult<CoreMessage>) => void;
}

/** The middleware for `createAgent({ model, tools, middleware: [compactorMiddleware(compactor)] })`.
 * Give the agent the recovery tools too (`recoveryLangChainTools(compactor)`), so it can read
 * back what was stored. Calibrates from each reply's `usage_metadata.input_tokens`. */
export function compactorMiddleware(compactor: Compactor, options: CompactorMiddlewareOptions = {}) {
  checkCompactor('compactorMiddleware', compactor);
  const offloadAtReturn = options.offloadAtReturn ?? true;
  let observed: unknown;
  let systemText = '';
  return createMiddleware({
    name: 'ContextCompactorMiddleware',
    beforeModel: async (state) => {
      const messages = state.messages as BaseMessage[];
      // Calibration: the latest reply's usage is the provider's count of the prompt this
      // middleware returned last; each reply is observed once (by id: a checkpointer hands the
      // same reply back as a new object).
      const reply = [...messages].reverse().find((m) => AIMessage.isInstance(m)) as AIMessage | undefined;
      const key = reply?.id ?? reply;
      if (reply !== undefined && key !== observed) {
        observed = key;
        const input = reply.usage_metadata?.input_tokens;
        if (typeof input === 'number' && input > 0) compactor.observeUsage({ inputTokens: input });
      }
      const converted = toModelMessages(messages);
      // The system prompt goes with every call but is not in the agent's messages: it is
      // counted as the first message (the one the last model call carried, seen by
      // `wrapModelCall`), and the core keeps it verbatim.
      const system: CoreMessage[] = systemText ? [{ role: 'system', content: systemText }] : [];
      const result = (await compactor.manage([...system, ...converted])) as ManageResult<CoreMessage>;
      options.onResult?.(result);
      const compacted = result.messages.slice(system.length);
      if (JSON.stringify(compacted) === JSON.stringify(converted)) return undefined;
      return { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...fromModelMessages(compacted, messages, converted)] };
    },
    wrapModelCall: async (request, handler) => {
      systemText = joined(request.systemMessage?.content ?? request.systemPrompt ?? '');
      return handler(request);
    },
    wrapToolCall: async (request, handler) => {
      const result = await handler(request);
      if (!offloadAtReturn || !ToolMessage.isInstance(result) || typeof result.content !== 'string' || result.status === 'error') return result;
      const preview = await compactor.offloadToolOutput(result.name ?? request.toolCall.name, result.tool_call_id, result.content);
      if (preview === result.content) return result;
      return new ToolMessage({ content: preview, tool_call_id: result.tool_call_id, name: result.name, id: result.id, artifact: result.artifact, status: result.status, additional_kwargs: result.additional_kwargs, response_metadata: result.response_metadata });
    },
  });
}

/** The recovery tools (`read_file`, `grep`, `ls`) as LangChain tools over the compactor's store. */
export function recoveryLangChainTools(compactor: Compactor, options?: RecoveryToolOptions) {
  const set = compactor.tools(options);
  return (['read_file', 'grep', 'ls'] as const).map((name) => {
    const t = set[name];
    const schema = (t.inputSchema as unknown as { jsonSchema: Json }).jsonSchema;
    return tool(async (input: unknown) => t.execute(input as never), { name, description: t.description, schema });
  });
}

/** LangChain messages in the core's (AI SDK `ModelMessage`) shape. */
export function toModelMessages(messages: readonly BaseMessage[]): CoreMessage[] {
  if (!Array.isArray(messages)) throw new TypeError('toModelMessages: messages must be an array of LangChain messages');
  return messages.map((m, i) => toModel(m, i));
}

/** The compacted messages as LangChain messages: each unchanged one is the original object
 * (matched in order by its converted form), each changed one rebuilt, keeping the id and fields
 * of the original at its place when the lists are as long. */
export function fromModelMessages(compacted: readonly CoreMessage[], originals: readonly BaseMessage[], converted: readonly CoreMessage[]): BaseMessage[] {
  return mapBack(compacted, originals, converted, (message, like) => fromModel(message, like));
}

function toModel(message: BaseMessage, index: number): CoreMessage {
  if (SystemMessage.isInstance(message)) return { role: 'system', content: joined(message.content) };
  if (ToolMessage.isInstance(message)) {
    const parts = partsOf(message.content);
    const output =
      parts.some((p) => p.type !== 'text')
        ? { type: 'content', value: parts.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image-data', data: p.image, mediaType: p.mediaType ?? 'image/png' })) }
        : { type: message.status === 'error' ? 'error-text' : 'text', value: typeof message.content === 'string' ? message.content : parts.map((p) => p.text).join('') };
    return { role: 'tool', content: [{ type: 'tool-result', toolCallId: message.tool_call_id, toolName: message.name ?? 'tool', output }] };
  }
  if (AIMessage.isInstance(message)) {
    const ids = new Set((message.tool_calls ?? []).map((c) => c.id));
    // Blocks that repeat a tool call (Anthropic's `tool_use`, v1 `tool_call`) cross once, as
    // the call.
    const blocks = Array.isArray(message.content) ? message.content.filter((b) => !(isObject(b) && typeof b.id === 'string' && ids.has(b.id) && ['tool_use', 'tool_call', 'function_call'].includes(String(b.type)))) : message.content;
    const parts: Part[] = partsOf(blocks, false);
    for (const call of message.tool_calls ?? []) {
      if (typeof call.id !== 'string') throw new TypeError(`toModelMessages: messages[${index}] has a tool call without an id`);
      parts.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.args });
    }
    return { role: 'assistant', content: parts };
  }
  if (HumanMessage.isInstance(message) && typeof message.content === 'string') return { role: 'user', content: message.content };
  if (HumanMessage.isInstance(message)) return { role: 'user', content: partsOf(message.content) };
  throw new TypeError(`toModelMessages: messages[${index}] is a ${message?.getType?.() ?? typeof message} message, which the compactor cannot place (system, human, ai or tool)`);
}

function fromModel(message: CoreMessage, like: BaseMessage | undefined): BaseMessage {
  const type = { system: 'system', user: 'human', assistant: 'ai', tool: 'tool' }[message.role];
  const keep = like !== undefined && like.getType() === type ? { id: like.id, additional_kwargs: like.additional_kwargs, response_metadata: like.response_metadata, name: like.name } : {};
  const parts = typeof message.content === 'string' ? [] : message.content;
  const text = typeof message.content === 'string' ? message.content : parts.filter((p) => p.type === 'text').map((p) => String(p.text)).join('');
  if (message.role === 'system') return new SystemMessage({ ...keep, content: text });
  if (message.role === 'user') {
    const media = parts.some((p) => p.type === 'image' || p.type === 'file');
    return new HumanMessage({ ...keep, content: media ? (parts.map(block) as never) : text });
  }
  if (message.role === 'assistant') {
    const calls = parts.filter((p) => p.type === 'tool-call').map((p) => ({ id: String(p.toolCallId), name: String(p.toolName), args: p.input as Json, type: 'tool_call' as const }));
    return new AIMessage({ ...keep, ...(like && AIMessage.isInstance(like) && like.usage_metadata ? { usage_metadata: like.usage_metadata } : {}), content: text, tool_calls: calls });
  }
  const result = parts.find((p) => p.type === 'tool-result') as (Part & { toolCallId: string; toolName: string; output: { type: string; value: unknown } }) | undefined;
  if (result === undefined) throw new TypeError('fromModelMessages: a tool message without a tool-result');
  const { output } = result;
  const content =
    output.type === 'content' && Array.isArray(output.value)
      ? (output.value as Part[]).map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : { type: 'image', data: p.data, mimeType: p.mediaType }))
      : typeof output.value === 'string'
        ? output.value
        : JSON.stringify(output.value);
  return new ToolMessage({ ...keep, content: content as string, tool_call_id: result.toolCallId, name: result.toolName, status: output.type.startsWith('error') ? 'error' : 'success' });
}

/** The core's parts for LangChain content: text and images; any other block as its JSON text. */
function partsOf(content: unknown, media = true): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const b of content) {
    if (typeof b === 'string') parts.push({ type: 'text', text: b });
    else if (!isObject(b)) continue;
    else if (b.type === 'text' && typeof b.text === 'string') parts.push({ type: 'text', text: b.text });
    else if ((b.type === 'reasoning' || b.type === 'thinking') && typeof (b.reasoning ?? b.thinking) === 'string') parts.push({ type: 'reasoning', text: String(b.reasoning ?? b.thinking) });
    else if (media && image(b)) parts.push(image(b)!);
    else parts.push({ type: 'text', text: JSON.stringify(b) });
  }
  return parts;
}

/** An image block as the core's image part: LangChain v1 (`data` base64 or `url`), OpenAI's
 * `image_url`, Anthropic's `source`. */
function image(b: Json): Part | undefined {
  const mime = (b.mimeType ?? b.mime_type) as string | undefined;
  if (b.type === 'image' && typeof b.data === 'string') return { type: 'image', image: b.data, ...(mime ? { mediaType: mime } : {}) };
  if (b.type === 'image' && typeof b.url === 'string') return { type: 'image', image: b.url, ...(mime ? { mediaType: mime } : {}) };
  if (b.type === 'image_url') {
    const url = typeof b.image_url === 'string' ? b.image_url : isObject(b.image_url) ? b.image_url.url : undefined;
    if (typeof url === 'string') return { type: 'image', image: url };
  }
  if (b.type === 'image' && isObject(b.source) && typeof b.source.data === 'string') return { type: 'image', image: b.source.data, ...(typeof b.source.media_type === 'string' ? { mediaType: b.source.media_type } : {}) };
  return undefined;
}

/** A core part as a LangChain v1 content block. */
function block(p: Part): Json {
  if (p.type === 'text') return { type: 'text', text: p.text };
  if (p.type === 'image') {
    const data = String(p.image);
    return /^(https?:|data:)/.test(data) ? { type: 'image', url: data } : { type: 'image', data, ...(p.mediaType ? { mimeType: p.mediaType } : {}) };
  }
  return { type: 'text', text: JSON.stringify(p) };
}

function joined(content: unknown): string {
  return typeof content === 'string' ? content : partsOf(content, false).map((p) => String(p.text ?? '')).join('');
}
