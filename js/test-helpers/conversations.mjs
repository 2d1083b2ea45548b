// Deterministic conversations shared by the host tests (no clock, no randomness).
const words = ['alpha', 'budget', 'cache', 'delta', 'error', 'fixture', 'gamma', 'harness', 'index', 'json'];
export const prose = (seed, n) => Array.from({ length: n }, (_, i) => `${words[(i * 7 + seed) % 10]} ${seed}-${i}`).join(' ');

/** A chat of `turns` exchanges, each about `size` words a side; with `toolCall`, one tool call
 * in the middle. */
export function chat(turns, size = 120, { toolCall = true } = {}) {
  const messages = [{ role: 'system', content: 'You are a helpful agent.' }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: `Turn ${t}: ${prose(t, size)}` });
    if (toolCall && t === Math.floor(turns / 2)) {
      messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `call${t}`, toolName: 'read_file', input: { path: `/src/f${t}.rs` } }] });
      messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `call${t}`, toolName: 'read_file', output: { type: 'text', value: prose(t + 1, size) } }] });
    }
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Answer ${t}: ${prose(t + 3, size)}` }] });
  }
  return messages;
}
