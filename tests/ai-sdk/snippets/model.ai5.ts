// What differs on AI SDK 5 for the snippets' mock model (see preamble.ts): its mock class from
// `ai/test`, its finish reason and usage shapes.
export { MockLanguageModelV2 as MockModel } from 'ai/test';
export const finish = (reason: 'stop' | 'tool-calls') => reason;
export const usage = { inputTokens: 100, outputTokens: 10, totalTokens: 110 };
