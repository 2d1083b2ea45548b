// The deterministic mock model, tool and summarizer of the browser chat (no API key, no network).
// Pure functions with no DOM: the page imports this module, and so does test.mjs (in Node), which
// regenerates every tool output to compare it with what the store holds.

/** Every TOOL_EVERY-th user message (turns 2, 6, 10, ...) makes the model call fetch_page. */
export const TOOL_EVERY = 4;

/** A small seeded PRNG (mulberry32): the same seed gives the same numbers in every runtime. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** FNV-1a over UTF-16 code units: a seed from a string. */
function hash(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

const WORDS = ('context window token budget offload summary transcript agent model prompt cache ' +
  'latency throughput request response header payload schema index shard replica cluster ' +
  'browser storage origin worker stream buffer parser encoder decoder tokenizer compaction ' +
  'history message tool result preview store path file directory quota eviction policy ' +
  'benchmark baseline regression release version changelog migration rollout canary metric').split(' ');

/** The page `fetch_page(url)` "downloads": ~3,500 o200k tokens of varied, deterministic text,
 * unique per url. */
export function toolOutput(url) {
  const rand = prng(hash(url));
  const pick = () => WORDS[Math.floor(rand() * WORDS.length)];
  const lines = [`# ${url}`, `fetched: 2025-01-${String(1 + (hash(url) % 28)).padStart(2, '0')}T12:00:00Z  status: 200  type: text/html`, ''];
  for (let section = 1; section <= 16; section++) {
    lines.push(`## Section ${section}: ${pick()} ${pick()}`);
    for (let p = 0; p < 5; p++) {
      const words = [];
      const n = 28 + Math.floor(rand() * 20);
      for (let w = 0; w < n; w++) words.push(rand() < 0.08 ? String(Math.floor(rand() * 100000)) : pick());
      words[0] = words[0][0].toUpperCase() + words[0].slice(1);
      lines.push(`${words.join(' ')}.`);
    }
    lines.push('');
  }
  lines.push(`-- end of ${url} --`);
  return lines.join('\n');
}

/** Whether the model answers user turn `turn` (1-based) with a tool call. */
export function callsTool(turn) {
  return turn % TOOL_EVERY === 2;
}

/** The url the model fetches on `turn`. */
export function toolUrl(turn, userText) {
  const slug = userText.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 32) || 'page';
  return `https://docs.example.com/${slug}/${turn}`;
}

/** What the assistant says before the tool call. */
export function toolIntro(url) {
  return `Let me look that up: fetching ${url}.`;
}

/** The assistant's answer to `userText` on `turn`. `seen` is the tool result as the model saw
 * it (the offload preview), when this turn called a tool. ~120-200 tokens. */
export function reply(turn, userText, seen) {
  const rand = prng(hash(`reply:${turn}:${userText}`));
  const pick = () => WORDS[Math.floor(rand() * WORDS.length)];
  const parts = [];
  if (seen !== undefined) {
    const stored = /\/tool_outputs\/[^\s)\]"']+/.exec(seen)?.[0];
    parts.push(stored
      ? `I fetched the page; the full text was stored at ${stored} and I see a preview of ${seen.split('\n').length} lines.`
      : `I fetched the page (${seen.length.toLocaleString('en-US')} characters).`);
  }
  parts.push(`On "${userText.slice(0, 80)}" (turn ${turn}):`);
  for (let i = 0; i < 4; i++) {
    const words = [];
    const n = 18 + Math.floor(rand() * 12);
    for (let w = 0; w < n; w++) words.push(pick());
    parts.push(`${i + 1}. ${words[0][0].toUpperCase()}${words.join(' ').slice(1)}.`);
  }
  return parts.join('\n');
}

/** The summarizer: deterministic, no LLM. Lists the user requests in the span it is given, within
 * the request's token cap (a conservative 3 characters per token). */
export function summarize(request) {
  const text = request.messages
    .map((m) => (typeof m.content === 'string' ? m.content : (m.content ?? []).map((p) => p.text ?? '').join('\n')))
    .join('\n');
  const asks = [...text.matchAll(/On "([^"]{1,80})" \(turn (\d+)\)/g)].map((m) => `- turn ${m[2]}: ${m[1]}`);
  const fetched = [...new Set([...text.matchAll(/\/tool_outputs\/[^\s)\]"'`]+/g)].map((m) => m[0]))];
  const lines = [
    '## Conversation summary (mock summarizer)',
    `The user asked ${asks.length} questions; the assistant answered each with a numbered list.`,
    ...asks.slice(-12),
  ];
  if (fetched.length) lines.push('Pages fetched (full text in the store, readable with read_file):', ...fetched.map((p) => `- ${p}`));
  let out = lines.join('\n');
  const cap = Math.max(200, request.maxTokens * 3);
  if (out.length > cap) out = out.slice(0, cap);
  return out;
}

/** The 30 user messages the test sends (and a sample for the page's placeholder). */
export function userMessages(count = 30) {
  const topics = ['OPFS quotas', 'IndexedDB transactions', 'prompt caching', 'tokenizer speed', 'tool output previews',
    'summary quality', 'wasm startup time', 'service workers', 'streaming responses', 'rate limits'];
  return Array.from({ length: count }, (_, i) => `Question ${i + 1}: what should I know about ${topics[i % topics.length]}?`);
}
