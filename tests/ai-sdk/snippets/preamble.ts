// The free variables the README and docs/API.md snippets use, as an app would have them. Each
// snippet imports only the names it uses and does not bind itself; the snippet test
// (../snippets.test.mjs) type-checks this file under `tsc --strict` with the snippets, against
// AI SDK 7 and AI SDK 5, and runs it with the runnable ones. Nothing here is typed loosely: a
// snippet that needs a cast to compile against these values needs the same cast in a user's app.
// What differs between SDK versions (the mock model's class and shapes) is in model.ai7.ts and
// model.ai5.ts, copied as model.ts.
import { jsonSchema, tool, type ModelMessage } from 'ai';
import type { CompactorState } from 'context-compactor';
import { MockModel, finish, usage } from './model.js';
import { AIMessage, fakeModel } from 'langchain';
import { Usage, type Model } from '@openai/agents-core';

/** A mock model (the SDK's own, from `ai/test`): calls the `search` tool once when it is
 * offered, then answers with a short text (a summary, when it is the summarizer). */
const answer = async ({ prompt, tools }: { prompt: unknown; tools?: ReadonlyArray<{ name: string }> }) => {
  const callTool = tools?.some((t) => t.name === 'search') === true && !JSON.stringify(prompt).includes('tool-result');
  return {
    content: callTool
      ? [{ type: 'tool-call' as const, toolCallId: 'call-1', toolName: 'search', input: JSON.stringify({ query: 'flaky' }) }]
      : [{ type: 'text' as const, text: '## Session Intent\nA snippet.\n## Next Steps\nNone.' }],
    finishReason: finish(callTool ? 'tool-calls' : 'stop'),
    usage,
    warnings: [],
  };
};

/** Any AI SDK model. */
export const model = new MockModel({ doGenerate: answer });

/** Stands in for `anthropic` from `@ai-sdk/anthropic` (not installed here): a provider function
 * that returns a language model. */
export const anthropic = (modelId: string) => new MockModel({ modelId, doGenerate: answer });

/** The app's tools: one whose output can be huge. */
export const tools = {
  search: tool({
    description: 'Search the corpus',
    inputSchema: jsonSchema<{ query: string }>({ type: 'object', properties: { query: { type: 'string' } }, required: ['query'] }),
    execute: async ({ query }) => Array.from({ length: 3_000 }, (_, i) => `${query} result ${i}`).join('\n'),
  }),
};

/** The conversation so far. */
export const messages: ModelMessage[] = [{ role: 'user', content: 'Find the flaky test.' }];

/** A state saved by an earlier compactor (`compactor.state()`), when there is one. */
export const state: CompactorState | undefined = undefined;

/** Stands in for Nuxt's auto-imported `defineEventHandler` (from h3, not installed here): it takes
 * the handler and returns it, as h3's does for a function. */
export const defineEventHandler = <T>(handler: (event: { node: unknown }) => T): ((event: { node: unknown }) => T) => handler;

/** A LangChain chat model (LangChain's own fake, from `langchain`): answers each call with a
 * short text. */
export const chatModel = fakeModel().respond(new AIMessage('Done.')).respond(new AIMessage('Done.')).respond(new AIMessage('Done.'));

/** An OpenAI Agents SDK model (a scripted `Model`): answers every request with a short text. */
export const agentModel: Model = {
  async getResponse() {
    return { usage: new Usage(), output: [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Done.' }] }] };
  },
  async *getStreamedResponse() {},
};
