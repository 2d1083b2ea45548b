// Prompts the arena's harness tests share.

/** A short AI SDK exchange: a tool call, its result, an answer. */
export const aiPrompt = [
  { role: 'system', content: 'You are terse.' },
  { role: 'user', content: [{ type: 'text', text: 'List the files.' }] },
  { role: 'assistant', content: [{ type: 'text', text: 'Looking.' }, { type: 'tool-call', toolCallId: 'c1', toolName: 'ls', input: { path: '/' } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'ls', output: { type: 'text', value: 'a.txt\nb.txt' } }] },
  { role: 'assistant', content: [{ type: 'text', text: 'Two files.' }] },
];
