// What differs on AI SDK 6 for the snippets' mock model (see preamble.ts): its mock class from
// `ai/test`, its finish reason and usage shapes.
export { MockLanguageModelV3 as MockModel } from 'ai/test';
export const finish = (reason: 'stop' | 'tool-calls') => ({ unified: reason, raw: reason });
export const usage = { inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: undefined }, outputTokens: { total: 10, text: 10, reasoning: undefined } };
