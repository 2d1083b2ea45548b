// Mastra (`@mastra/core`): the compactor as an agent processor, and the recovery tools as Mastra
// tools. `import { compactorProcessor } from 'context-compactor/mastra'` (issue 33).
//
// Thin by design: every decision is the compactor's. The processor works where Mastra's own
// `TokenLimiter` and `ToolCallFilter` budget the request, at `processLLMRequest`: after Mastra has
// converted its `MastraDBMessage`s (parts, tool invocations, files, reasoning, provider metadata)
// to the provider prompt and just before the provider call. That prompt is the AI SDK's
// `LanguageModelV2Prompt`, the core's own shape (as for `compactor.middleware()`), so the only
// conversion is Mastra's: the compactor reads the prompt as it is, a message it leaves alone
// goes back as the same object (images and files as `file` parts, reasoning and tool parts with
// their `providerOptions`), and a summary it inserts gets its text as a part. The change is for
// that call only (Mastra keeps its message list, memory and UI history whole); the compaction
// record replays earlier compactions onto each step's prompt, so every call is the compacted one
// (the middleware host shape).
//
// The same processor, in `outputProcessors`, stores a tool's large output the moment it returns
// (`processToolResult`: the message list and memory keep the preview naming its path);
// `processLLMResponse` reads each call's reported input tokens (calibration, observed when the
// next call is planned, as `prepareStep` does); in `errorProcessors`, `processAPIError` recovers
// from a provider's "prompt too long" rejection (`compactor.recover` on the refused prompt, then
// Mastra retries the step), at most `overflow.retries` times per call.
import { createTool } from '@mastra/core/tools';
import type { Processor, ProcessAPIErrorArgs, ProcessAPIErrorResult, ProcessLLMRequestArgs, ProcessLLMRequestResult, ProcessLLMResponseArgs, ProcessToolResultArgs } from '@mastra/core/processors';
import type { Compactor } from './compactor.js';
import type { RecoveryToolOptions } from './ai.js';
import type { ManageResult } from './types.js';
import { parseOverflow } from './overflow.js';
import { checkCompactor, isObject, mapBack, type CoreMessage, type Json } from './adapters.js';

export type { CoreMessage } from './adapters.js';

/** The provider prompt Mastra hands `processLLMRequest` (AI SDK `LanguageModelV2Prompt`). */
type Prompt = ProcessLLMRequestArgs['prompt'];

export interface CompactorProcessorOptions {
  /** The processor's id (Mastra's traces name it). Default `context-compactor`. */
  id?: string;
  /** Store a tool's output over the offload threshold the moment the tool returns (when the
   * processor is also in `outputProcessors`). Default true. */
  offloadAtReturn?: boolean;
  /** Called with every `manage` result, and every `recover` result after an overflow (logs,
   * tests). */
  onResult?: (result: ManageResult<CoreMessage>) => void;
}

/** The processor Mastra runs: `processLLMRequest` (compaction), `processLLMResponse`
 * (calibration), `processToolResult` (offload at return) and `processAPIError` (overflow
 * recovery). */
export type CompactorProcessor = Required<Pick<Processor<string>, 'processLLMRequest' | 'processLLMResponse' | 'processToolResult' | 'processAPIError'>> & { readonly id: string; readonly name: string };

/** `new Agent({ ..., inputProcessors: [p], outputProcessors: [p], errorProcessors: [p],
 * maxProcessorRetries: 1 })` with `p = compactorProcessor(compactor)`: in `inputProcessors`, every
 * model call gets the compacted prompt; in `outputProcessors`, large tool outputs are stored as
 * they return; in `errorProcessors` (Mastra asks error processors only when that list is not
 * empty, and retries up to `maxProcessorRetries`), a provider's "prompt too long" rejection is
 * compacted harder and retried. Give the agent the recovery tools too
 * (`recoveryMastraTools(compactor)`), so it can read back what was stored. */
export function compactorProcessor(compactor: Compactor, options: CompactorProcessorOptions = {}): CompactorProcessor {
  checkCompactor('compactorProcessor', compactor);
  const offloadAtReturn = options.offloadAtReturn ?? true;
  // The provider's count of the last prompt, observed when the next one is planned.
  let pending: number | undefined;
  // The prompt the last call was sent (what a provider refuses), and the overflow compactions
  // made for it; errors already answered (the processor may sit in several of Mastra's lists).
  let sent: Prompt | undefined;
  let attempts = 0;
  const answered = new WeakMap<object, ProcessAPIErrorResult | undefined>();
  return {
    id: options.id ?? 'context-compactor',
    name: 'Context Compactor',
    async processLLMRequest({ prompt }: ProcessLLMRequestArgs): Promise<ProcessLLMRequestResult> {
      if (!Array.isArray(prompt)) return undefined;
      if (pending !== undefined) compactor.observeUsage({ inputTokens: pending });
      pending = undefined;
      const result = (await compactor.manage(prompt as unknown as CoreMessage[])) as ManageResult<CoreMessage>;
      options.onResult?.(result);
      // Each message the compactor left as it was goes back as the original object.
      const original = prompt as unknown as CoreMessage[];
      const messages = mapBack(result.messages, original, original, promptMessage);
      const same = messages.length === original.length && messages.every((m, i) => m === original[i]);
      sent = same ? prompt : (messages as unknown as Prompt);
      return same ? undefined : { prompt: sent };
    },
    processLLMResponse({ chunks, fromCache }: ProcessLLMResponseArgs): void {
      attempts = 0;
      if (fromCache) return;
      const finish = [...chunks].reverse().find((c) => c.type === 'finish' || c.type === 'step-finish');
      const payload = isObject(finish?.payload) ? finish.payload : undefined;
      const usage = isObject(payload?.output) ? payload.output.usage : payload?.usage;
      pending = inputTokens(usage) ?? pending;
    },
    async processToolResult({ toolName, toolCallId, args, result, providerExecuted, messageList }: ProcessToolResultArgs) {
      if (!offloadAtReturn || providerExecuted || result === undefined) return undefined;
      const preview = await compactor.offloadToolOutput(toolName, toolCallId, result);
      if (preview === result) return undefined;
      messageList.updateToolInvocation({ type: 'tool-invocation', toolInvocation: { state: 'result', toolCallId, toolName, args, result: preview } });
      return messageList;
    },
    async processAPIError({ error }: ProcessAPIErrorArgs): Promise<ProcessAPIErrorResult | void> {
      const key = isObject(error) ? error : undefined;
      if (key && answered.has(key)) return answered.get(key);
      let answer: ProcessAPIErrorResult | undefined;
      if (sent !== undefined && parseOverflow(error) && attempts < compactor.overflowRetries) {
        attempts++;
        // The refused prompt, compacted harder and recorded: the retry's `processLLMRequest`
        // replays it onto the full history. Nothing left to compact: the provider's error stands.
        answer = await compactor.recover(sent as unknown as CoreMessage[], error, { attempt: attempts }).then(
          (result) => (options.onResult?.(result as ManageResult<CoreMessage>), { retry: true }),
          () => undefined,
        );
      }
      if (key) answered.set(key, answer);
      return answer;
    },
  };
}

/** The recovery tools (`read_file`, `grep`, `ls`) as Mastra tools (`createTool`) over the
 * compactor's store, keyed by name for an agent's `tools`. */
export function recoveryMastraTools(compactor: Compactor, options?: RecoveryToolOptions) {
  checkCompactor('recoveryMastraTools', compactor);
  const set = compactor.tools(options);
  const make = (name: 'read_file' | 'grep' | 'ls') => {
    const t = set[name];
    const inputSchema = (t.inputSchema as unknown as { jsonSchema: Json }).jsonSchema;
    return createTool({ id: name, description: t.description, inputSchema: inputSchema as never, execute: async (input: unknown) => t.execute(input as never) });
  };
  return { read_file: make('read_file'), grep: make('grep'), ls: make('ls') };
}

/** A provider prompt has parts wherever a `ModelMessage` may have a string: the summary or
 * notice the core inserts (a user message with string content) becomes one text part. */
function promptMessage(message: CoreMessage): CoreMessage {
  if (message.role === 'system' || typeof message.content !== 'string') return message;
  return { ...message, content: [{ type: 'text', text: message.content }] };
}

/** The input tokens of a reported usage (`inputTokens` a number, or `{ total }`), or undefined. */
function inputTokens(usage: unknown): number | undefined {
  if (!isObject(usage)) return undefined;
  const input = usage.inputTokens;
  const total = isObject(input) ? input.total : input;
  return typeof total === 'number' && Number.isFinite(total) && total > 0 ? total : undefined;
}
