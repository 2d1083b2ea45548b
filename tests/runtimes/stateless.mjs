// The stateless route handler (the commonest AI SDK deployment: a Next.js / Vercel Function /
// Cloudflare Worker route that loads the chat's saved raw messages) against a long-lived
// compactor and one that gets fresh message objects every call (what the middleware sees).
// Runtime-agnostic: no node:/Deno/Bun APIs; `cc` is the package's module namespace. The host
// tests (js/test/record.test.mjs) and every runtime runner (scenario.mjs) run it.

/** Deterministic words, so every runtime builds the same chat. */
export function prose(seed, words) {
  const vocabulary = ['router', 'cache', 'ledger', 'shard', 'parser', 'budget', 'window', 'token', 'queue', 'stream'];
  const out = [];
  for (let i = 0; i < words; i++) out.push(`${vocabulary[(seed * 7 + i * 3) % vocabulary.length]}${(seed * 31 + i) % 97}`);
  return out.join(' ');
}

/** What the model answers at turn `t`: a tool call, its result (every fifth one large), a reply. */
export function reply(t) {
  const id = `call_${t}`;
  const size = t % 5 === 2 ? 2_400 : 120 + (t % 3) * 60;
  return [
    { role: 'assistant', content: [{ type: 'text', text: `Looking at part ${t}.` }, { type: 'tool-call', toolCallId: id, toolName: 'search', input: { q: `part ${t}` } }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'search', output: { type: 'text', value: prose(t + 1, size) } }] },
    { role: 'assistant', content: `Part ${t}: ${prose(t + 2, 40)}` },
  ];
}

/** True when `next` starts with every message of `previous` (the cached prefix survives). */
function keepsPrefix(previous, next) {
  const a = JSON.stringify(previous);
  return JSON.stringify(next).startsWith(a.slice(0, -1));
}

/**
 * Drives `turns` user turns through three host shapes and returns what each sent. With
 * `calibrate`, the model is a Claude one (an estimated count) and the provider reports each
 * prompt at 0.85 of the uncalibrated estimate: every shape observes it, the route handler saves
 * its state after the call, and the prompts must still be the same.
 * @returns {Promise<{ calls: number, identical: boolean, firstDifference: number | null,
 *   summaries: number[], breaks: number[], stateBytes: number, stored: number, calibrated: number,
 *   expired: number, coldBreaks: number }>} (`expired`: the long-lived shape's calls after the cache
 *   expired, with `idle`; `coldBreaks`: those that changed the prefix)
 */
export async function statelessRouteHandler(cc, { turns = 30, contextWindow = 6_000, calibrate = false, images = false, idle = false } = {}) {
  // With `idle`, the shapes share a clock: a minute between turns, and every eighth turn the user
  // is away for half an hour (past Claude's 5-minute cache): those calls take the edits a warm
  // cache defers, in every shape alike.
  let clock = Date.UTC(2026, 0, 5, 9);
  const model = { ...(calibrate || idle ? { model: 'claude-sonnet-4-5' } : {}), ...(idle ? { now: () => clock } : {}) };
  let expired = 0;
  let coldBreaks = 0;
  const probe = calibrate ? await cc.createCompactor({ ...model, contextWindow }) : undefined;
  const report = (compactor, prompt) => {
    if (probe) compactor.observeUsage({ inputTokens: Math.round(0.85 * probe.usage(prompt).tokens) });
  };
  const summaries = [0, 0, 0];
  const summarizer = (shape) => (request) => {
    summaries[shape] += 1;
    return `## Session Intent\nScripted summary ${request.prompt.length}.`;
  };
  const longLived = await cc.createCompactor({ ...model, contextWindow, summarize: summarizer(0) });
  const freshObjects = await cc.createCompactor({ ...model, contextWindow, summarize: summarizer(2) });
  const store = new cc.MemoryStore(); // the shared store (KV, Redis, ...) of the route handler
  const statePath = '/state/chat-1.json';
  const raw = [{ role: 'system', content: 'You are a helpful research agent.' }];
  const previous = [null, null, null];
  const breaks = [0, 0, 0];
  let identical = true;
  let firstDifference = null;
  for (let t = 0; t < turns; t++) {
    // With `images`, every seventh turn shows a screenshot (bytes): the shapes get copies, as
    // they would from a store or the wire.
    const text = `Turn ${t}: ${prose(t, 30)}`;
    raw.push({ role: 'user', content: images && t % 7 === 3 ? [{ type: 'text', text }, { type: 'image', image: screenshot(t), mediaType: 'image/png' }] : text });
    // One model call per turn; its reply joins the raw history the app saves.
    // A summary made in the background is back before the next request (what a route's
    // `waitUntil` gives in practice): every shape then applies it at the same call.
    if (idle) clock += t % 8 === 7 ? 30 * 60_000 : 60_000;
    const a = await longLived.manage(raw);
    const cold = a.plan.notes.some((n) => n.type === 'cache-expired');
    if (cold) expired += 1;
    await longLived.settled();
    report(longLived, a.messages);
    const handler = await cc.createCompactor({ ...model, contextWindow, store, statePath, summarize: summarizer(1) });
    const b = await handler.manage(structuredClone(raw));
    await handler.settled();
    report(handler, b.messages);
    if (probe) await handler.saveState();
    handler.dispose();
    const c = await freshObjects.manage(structuredClone(raw));
    await freshObjects.settled();
    report(freshObjects, c.messages);
    const prompts = [a.messages, b.messages, c.messages];
    const texts = prompts.map((p) => JSON.stringify(p));
    if (identical && (texts[0] !== texts[1] || texts[0] !== texts[2])) {
      identical = false;
      firstDifference = t;
    }
    prompts.forEach((prompt, shape) => {
      if (previous[shape] && !keepsPrefix(previous[shape], prompt)) {
        breaks[shape] += 1;
        if (shape === 0 && cold) coldBreaks += 1;
      }
      previous[shape] = prompt;
    });
    raw.push(...reply(t));
  }
  probe?.dispose();
  const calibrated = longLived.state().calibration?.samples ?? 0;
  const saved = await store.read(statePath);
  const paths = await store.list('/');
  // The screenshots of summarized turns are in the transcripts, as base64, never as placeholders.
  let transcriptImages = 0;
  let placeholders = 0;
  for (const path of paths.filter((p) => p.startsWith('/conversation_history/') && p.endsWith('.json'))) {
    const text = await store.read(path);
    placeholders += text.split('$ccRef').length - 1;
    for (const message of JSON.parse(text)) {
      for (const part of Array.isArray(message.content) ? message.content : []) {
        if (part.type === 'image' && typeof part.image === 'string' && part.image === toBase64(screenshot(Number(/Turn (\d+)/.exec(message.content[0].text)?.[1])))) transcriptImages += 1;
      }
    }
  }
  return { calls: turns, identical, firstDifference, summaries, breaks, stateBytes: saved ? saved.length : 0, stored: paths.length, calibrated, transcriptImages, placeholders, expired, coldBreaks };
}

/** A deterministic 'PNG' of 64 bytes for turn `t`. */
function screenshot(t) {
  return Uint8Array.from({ length: 64 }, (_, i) => (i < 8 ? [137, 80, 78, 71, 13, 10, 26, 10][i] : (t * 31 + i * 7) % 256));
}

function toBase64(bytes) {
  return btoa(String.fromCharCode(...bytes));
}
