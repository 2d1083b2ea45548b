// LangChain.js v1 agents (`createAgent`): the compactor as agent middleware, and the recovery
// tools as LangChain tools. `import { compactorMiddleware } from 'context-compactor/langchain'`.
//
// Thin by design (issue 33): this file converts LangChain messages to the core's (AI SDK
// `ModelMessage`) shape and back, and wires the hooks; every decision is the compactor's. It is
// the TypeScript twin of the Python package's `context_compactor.langchain` and converts the
// same way:
// - `SystemMessage` → `system`, `HumanMessage` → `user`, `AIMessage` → `assistant` (its text,
//   reasoning blocks and `tool_calls`), `ToolMessage` → `tool` (one `tool-result`: `text`, or
//   `error-text` for `status: 'error'`, or `content` with images and files); a message of any
//   other class (`ChatMessage`, `FunctionMessage`) → `user`, whatever its role says.
// - Image, file and audio blocks (LangChain v1 `{type: 'image' | 'file' | 'audio', data | url |
//   fileId}`, the older `source_type` ones, OpenAI's `image_url` and `input_audio`, Anthropic's
//   `source` and `document`) cross as the core's image and file parts, counted as images and
//   files.
// - A message the compactor left unchanged comes back as the same LangChain object (id,
//   metadata and all); a changed one is rebuilt with the original's id and fields, and each of
//   its image, file and audio blocks the core left as it crossed is that block again.
//
// `beforeModel` runs `compactor.manage` on the agent's messages before every model call and,
// when something changed, replaces them in the agent's state (`RemoveMessage(REMOVE_ALL)` then
// the compacted list, as LangChain's own `summarizationMiddleware` does), so a compaction
// persists into later steps; the system prompt is not in the state, so a call whose system
// prompt `beforeModel` did not count (the first, a dynamic one that changed) is compacted again
// in `wrapModelCall`, with it. `wrapToolCall` offloads a tool's large output the moment it
// returns (`offloadAtReturn`, on by default), so it never enters the history whole.
// `wrapModelCall` retries a model call the provider refused as too long (`overflowRetries`) on
// `compactor.recover`'s harder compaction.
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, createMiddleware, tool } from 'langchain';
import { RemoveMessage, type BaseMessage } from '@langchain/core/messages';
import { CompactorError } from './errors.js';
import type { Compactor } from './compactor.js';
import { isOverflowResult, overflowVerdict, parseOverflow } from './overflow.js';
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
  /** Called with every `manage` result, and every `recover` result of an overflow retry (logs,
   * tests). */
  onResult?: (result: ManageResult<CoreMessage>) => void;
  /** How many times one model call the provider refused as too long is compacted harder
   * (`compactor.recover`) and retried. Default the compactor's `overflow.retries` (1); 0 lets
   * the provider's error through unchanged. */
  overflowRetries?: number;
}

/** The middleware for `createAgent({ model, tools, middleware: [compactorMiddleware(compactor)] })`.
 * Give the agent the recovery tools too (`recoveryLangChainTools(compactor)`), so it can read
 * back what was stored. Calibrates from each reply's `usage_metadata.input_tokens`. */
export function compactorMiddleware(compactor: Compactor, options: CompactorMiddlewareOptions = {}) {
  checkCompactor('compactorMiddleware', compactor);
  const offloadAtReturn = options.offloadAtReturn ?? true;
  if (typeof offloadAtReturn !== 'boolean') {
    throw new CompactorError('invalid_config', `compactorMiddleware: offloadAtReturn must be true or false, got ${JSON.stringify(offloadAtReturn) ?? typeof offloadAtReturn}`, { field: 'offloadAtReturn' });
  }
  const retries = options.overflowRetries ?? compactor.overflowRetries;
  if (!Number.isInteger(retries) || retries < 0) {
    throw new CompactorError('invalid_config', 'compactorMiddleware: overflowRetries must be a whole number >= 0', { field: 'overflowRetries' });
  }
  let observed: unknown;
  let systemText = '';
  /** The system prompt the last compaction counted (undefined: none yet). The agent's system
   * prompt is not in its state: `beforeModel` counts the one the last model call carried, and a
   * call whose prompt is another (the first, which `beforeModel` counted without one; a dynamic
   * prompt that changed) is compacted again in `wrapModelCall`, with its own. */
  let counted: string | undefined;
  /** `run` (`manage` or `recover`) on the system prompt (counted first, as the last model call
   * carried it; kept verbatim) and `messages`: the compacted messages without it, and `messages`
   * converted. */
  const compactWith = async (messages: BaseMessage[], run: (prompt: CoreMessage[]) => Promise<ManageResult>) => {
    const converted = toModelMessages(messages);
    const system: CoreMessage[] = systemText ? [{ role: 'system', content: systemText }] : [];
    counted = systemText;
    const result = (await run([...system, ...converted])) as ManageResult<CoreMessage>;
    options.onResult?.(result);
    return { compacted: result.messages.slice(system.length), converted };
  };
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
      // The system prompt goes with every call but is not in the agent's messages: it is
      // counted as the first message (the one the last model call carried, seen by
      // `wrapModelCall`), and the core keeps it verbatim.
      const { compacted, converted } = await compactWith(messages, (prompt) => compactor.manage(prompt));
      if (JSON.stringify(compacted) === JSON.stringify(converted)) return undefined;
      return { messages: [new RemoveMessage({ id: REMOVE_ALL_MESSAGES }), ...fromModelMessages(compacted, messages, converted)] };
    },
    // As the AI SDK middleware's generate path (ai.ts `recovering`): a provider's "prompt too
    // long" error, or a reply that stopped at the context window, compacts the refused messages
    // harder and calls again, at most `retries` times; an error still an overflow after that is
    // the typed `context_overflow` (its `cause` the provider's error), a cut reply is returned
    // as it is. Any other error goes through unchanged.
    wrapModelCall: async (request, handler) => {
      systemText = joined(request.systemMessage?.content ?? request.systemPrompt ?? '');
      let current = request;
      if (systemText !== counted) {
        // The first call (counted without its system prompt, which `beforeModel` cannot see),
        // or a system prompt that changed: this call's prompt is compacted again with its own,
        // so that it fits. The state keeps what `beforeModel` returned (a compaction there
        // persists); the compaction record puts these edits back at the next `beforeModel`.
        const { compacted, converted } = await compactWith(current.messages, (prompt) => compactor.manage(prompt));
        current = { ...current, messages: fromModelMessages(compacted, current.messages, converted) };
      }
      for (let attempt = 0; ; ) {
        let outcome: { refused: false; reply: Awaited<ReturnType<typeof handler>> } | { refused: true; error: unknown };
        try {
          outcome = { refused: false, reply: await handler(current) };
        } catch (error) {
          outcome = { refused: true, error };
        }
        if (!outcome.refused && !windowFilled(outcome.reply)) return outcome.reply;
        const failure = outcome.refused ? outcome.error : new Error('stop_reason: model_context_window_exceeded');
        // The core's rules (src/overflow.rs), as every other middleware's.
        const verdict = overflowVerdict(outcome.refused ? 'refused' : 'cut', parseOverflow(failure), attempt, retries, failure);
        if (verdict.verdict === 'fail') throw verdict.error;
        if (verdict.verdict === 'as-is') {
          if (outcome.refused) throw outcome.error;
          return outcome.reply;
        }
        attempt = verdict.attempt;
        // The system prompt is counted first, as `beforeModel` counts it, and kept verbatim.
        const { compacted, converted } = await compactWith(current.messages, (prompt) => compactor.recover(prompt, failure, { attempt }));
        current = { ...current, messages: fromModelMessages(compacted, current.messages, converted) };
      }
    },
    wrapToolCall: async (request, handler) => {
      const result = await handler(request);
      if (!offloadAtReturn || !ToolMessage.isInstance(result) || typeof result.content !== 'string' || result.status === 'error') return result;
      const preview = await compactor.offloadToolOutput(result.name || request.toolCall.name, result.tool_call_id, result.content);
      if (preview === result.content) return result;
      return new ToolMessage({ content: preview, tool_call_id: result.tool_call_id, name: result.name, id: result.id, artifact: result.artifact, status: result.status, additional_kwargs: result.additional_kwargs, response_metadata: result.response_metadata });
    },
  });
}

/** The recovery tools (`read_file`, `grep`, `ls`) as LangChain tools over the compactor's store. */
export function recoveryLangChainTools(compactor: Compactor, options?: RecoveryToolOptions) {
  checkCompactor('recoveryLangChainTools', compactor);
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
        ? { type: 'content', value: parts.map((p) => (p.type === 'text' ? { type: 'text', text: p.text } : outputItem(p))) }
        : { type: message.status === 'error' ? 'error-text' : 'text', value: typeof message.content === 'string' ? message.content : parts.map((p) => p.text).join('') };
    return { role: 'tool', content: [{ type: 'tool-result', toolCallId: message.tool_call_id, toolName: message.name ?? 'tool', output }] };
  }
  if (AIMessage.isInstance(message)) {
    const ids = new Set((message.tool_calls ?? []).map((c) => c.id));
    // Blocks that repeat a tool call (Anthropic's `tool_use`, v1 `tool_call`, OpenAI Responses'
    // `function_call`, whose `id` is the item's and `call_id` the call's) cross once, as the call.
    const repeats = (b: unknown) => isObject(b) && ['tool_use', 'tool_call', 'function_call'].includes(String(b.type)) && [b.id, b.call_id].some((id) => typeof id === 'string' && ids.has(id));
    const blocks = Array.isArray(message.content) ? message.content.filter((b) => !repeats(b)) : message.content;
    const parts: Part[] = partsOf(blocks, false);
    for (const call of message.tool_calls ?? []) {
      if (typeof call.id !== 'string') throw new TypeError(`toModelMessages: messages[${index}] has a tool call without an id`);
      parts.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.args });
    }
    return { role: 'assistant', content: parts };
  }
  if (HumanMessage.isInstance(message) && typeof message.content === 'string') return { role: 'user', content: message.content };
  // Any other class (`ChatMessage`, `FunctionMessage`) crosses as the user's, as in the Python
  // twin: its content still counts, and a `ChatMessage`'s free-form role is none the core places.
  return { role: 'user', content: partsOf(message.content) };
}

function fromModel(message: CoreMessage, like: BaseMessage | undefined): BaseMessage {
  const type = { system: 'system', user: 'human', assistant: 'ai', tool: 'tool' }[message.role];
  const same = like !== undefined && like.getType() === type;
  const keep = same ? { id: like.id, additional_kwargs: like.additional_kwargs, response_metadata: like.response_metadata, name: like.name } : {};
  // The original's blocks, for the image, file and audio parts the core left as they crossed.
  const blocks: readonly unknown[] = same && Array.isArray(like.content) ? like.content : [];
  const parts = typeof message.content === 'string' ? [] : message.content;
  const text = typeof message.content === 'string' ? message.content : parts.filter((p) => p.type === 'text').map((p) => String(p.text)).join('');
  if (message.role === 'system') return new SystemMessage({ ...keep, content: text });
  if (message.role === 'user') {
    const media = parts.some((p) => p.type === 'image' || p.type === 'file');
    return new HumanMessage({ ...keep, content: media ? (parts.map(blockFor(blocks, (p) => p)) as never) : text });
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
      ? (output.value as Part[]).map(blockFor(blocks, outputItem))
      : typeof output.value === 'string'
        ? output.value
        : JSON.stringify(output.value);
  return new ToolMessage({ ...keep, content: content as string, tool_call_id: result.toolCallId, name: result.toolName, status: output.type.startsWith('error') ? 'error' : 'success' });
}

/** The core's parts for LangChain content: text; with `media` (user and tool messages) images,
 * files and audio as image and file parts, without (assistant messages) reasoning as reasoning;
 * any other block as its JSON text. */
function partsOf(content: unknown, media = true): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const b of content) {
    const part = media ? mediaPart(b) : undefined;
    if (typeof b === 'string') parts.push({ type: 'text', text: b });
    else if (!isObject(b)) continue;
    else if (b.type === 'text' && typeof b.text === 'string') parts.push({ type: 'text', text: b.text });
    else if (part !== undefined) parts.push(part);
    else if (!media && (b.type === 'reasoning' || b.type === 'thinking') && typeof (b.reasoning ?? b.thinking) === 'string') parts.push({ type: 'reasoning', text: String(b.reasoning ?? b.thinking) });
    else parts.push({ type: 'text', text: JSON.stringify(b) });
  }
  return parts;
}

/** An image, file or audio block as the core's image or file part (data as base64, bytes or a
 * URL, the media type when the block says it), or undefined for any other block. The rules of
 * the Python twin's `_media`, with LangChain.js's v1 names too (`data`, `mimeType`, `fileId`,
 * `metadata.filename`). The forms: v1 standard blocks (`{type: 'image' | 'file' | 'audio',
 * data | base64 | url | fileId, mimeType}`), the older `source_type` ones, OpenAI's `image_url`
 * (a data URL or a link) and `input_audio`, Anthropic's `source`. */
function mediaPart(b: unknown): Part | undefined {
  if (!isObject(b)) return undefined;
  if (b.type === 'document') return documentPart(b);
  let kind = b.type;
  let mime = b.mime_type || b.mimeType || b.media_type;
  let data: unknown;
  if (kind === 'image' || kind === 'file' || kind === 'audio') {
    const source = isObject(b.source) ? b.source : undefined;
    const id = b.fileId || b.file_id || b.id;
    if (typeof b.base64 === 'string') data = b.base64;
    else if (typeof b.url === 'string') data = b.url;
    else if (typeof b.data === 'string' || b.data instanceof Uint8Array) data = b.data;
    else if (source !== undefined && typeof (source.data || source.url) === 'string') {
      data = source.data || source.url;
      mime ||= source.media_type;
    } else if (typeof id === 'string') data = `file-id:${id}`;
  } else if (kind === 'image_url') {
    data = isObject(b.image_url) ? b.image_url.url : b.image_url;
    kind = 'image';
  } else if (kind === 'input_audio' && isObject(b.input_audio)) {
    data = b.input_audio.data;
    mime ||= `audio/${b.input_audio.format ?? 'wav'}`;
    kind = 'audio';
  }
  if (!(typeof data === 'string' || data instanceof Uint8Array)) return undefined;
  if (typeof data === 'string' && !mime && data.startsWith('data:') && data.includes(';base64,')) mime = data.slice(5, data.indexOf(';'));
  if (kind === 'image') return { type: 'image', image: data, ...(typeof mime === 'string' ? { mediaType: mime } : {}) };
  const name = b.filename || (isObject(b.extras) && b.extras.filename) || (isObject(b.metadata) && b.metadata.filename);
  return {
    type: 'file',
    data,
    mediaType: typeof mime === 'string' ? mime : kind === 'audio' ? 'audio/*' : 'application/octet-stream',
    ...(typeof name === 'string' ? { filename: name } : {}),
  };
}

/** Anthropic's `document` block (a PDF or a text, by base64, URL, file id or inline text) as
 * the core's file part (its `title` as the filename), or undefined for another source (a
 * `content` list of blocks). The Python twin's `_document`. */
function documentPart(b: Record<string, unknown>): Part | undefined {
  const source = isObject(b.source) ? b.source : {};
  const mime = typeof source.media_type === 'string' ? source.media_type : undefined;
  const name = typeof b.title === 'string' ? { filename: b.title } : {};
  if (source.type === 'text' && typeof source.data === 'string') return { type: 'file', data: { type: 'text', text: source.data }, mediaType: mime ?? 'text/plain', ...name };
  const data = source.type === 'base64' ? source.data : source.type === 'url' ? source.url : source.type === 'file' && typeof source.file_id === 'string' ? `file-id:${source.file_id}` : undefined;
  if (typeof data !== 'string') return undefined;
  return { type: 'file', data, mediaType: mime ?? 'application/pdf', ...name };
}

/** An image or file part as an item of a tool result's `content` output (AI SDK 6's
 * `image-data` / `image-url` / `file-data` / `file-url`). */
function outputItem(p: Part): Json {
  const data = p.image ?? p.data;
  const key = typeof data === 'string' && data.includes('://') ? 'url' : 'data';
  return {
    type: `${p.type === 'image' ? 'image' : 'file'}-${key}`,
    [key]: data,
    ...(typeof p.mediaType === 'string' ? { mediaType: p.mediaType } : {}),
    ...('filename' in p ? { filename: p.filename } : {}),
  };
}

/** Content blocks for a rebuilt message's parts (or tool output items): a media block of the
 * original (`blocks`) itself where its part (`crossed`: as the part crossed) came back as it
 * was, each block once, in order; any other part as the LangChain v1 block for it. */
function blockFor(blocks: readonly unknown[], crossed: (part: Part) => Json): (p: Part) => unknown {
  const pending = new Map<string, unknown[]>();
  for (const b of blocks) {
    const part = mediaPart(b);
    if (part === undefined) continue;
    const key = JSON.stringify(crossed(part));
    pending.set(key, [...(pending.get(key) ?? []), b]);
  }
  return (p) => pending.get(JSON.stringify(p))?.shift() ?? block(p);
}

/** A core part (or tool output item) as a LangChain v1 content block: text as text, media as an
 * image or file block (the core makes no media: this is for a part of no original block),
 * anything else as its JSON text. */
function block(p: Part): Json {
  if (p.type === 'text') return { type: 'text', text: p.text };
  const image = p.type === 'image' || p.type === 'media' || /^image-(data|url)$/.test(p.type);
  if (!image && !/^file(-data|-url)?$/.test(p.type)) return { type: 'text', text: JSON.stringify(p) };
  const data = p.image ?? p.data ?? p.url;
  const url = typeof data === 'string' && (data.includes('://') || data.startsWith('data:'));
  return { type: image ? 'image' : 'file', [url ? 'url' : 'data']: data, ...(typeof p.mediaType === 'string' ? { mimeType: p.mediaType } : {}) };
}

/** Whether a model reply stopped because the context window filled up: Anthropic's
 * `stop_reason: model_context_window_exceeded`, which LangChain's Anthropic chat model keeps in
 * `response_metadata`, Bedrock Converse's `stopReason` (ChatBedrockConverse), or the same as
 * `finish_reason` (OpenAI-shaped APIs that pass it on), as the Python twin's `_cut_at_window`
 * reads it. */
function windowFilled(reply: unknown): boolean {
  if (!AIMessage.isInstance(reply)) return false;
  const metadata = reply.response_metadata ?? {};
  return [metadata.stop_reason, metadata.stopReason, metadata.finish_reason].some((raw) => isOverflowResult({ finishReason: { raw } }));
}

function joined(content: unknown): string {
  return typeof content === 'string' ? content : partsOf(content, false).map((p) => String(p.text ?? '')).join('');
}
