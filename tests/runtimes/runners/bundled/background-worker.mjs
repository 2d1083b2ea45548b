// A summary made in the background in a Worker (issue 32), bundled by runners/workerd.mjs: a
// stateless chat route — a new compactor per request, the raw history re-sent, the state and the
// summary beside it in one store — handed `ctx.waitUntil`. Request 1 plays the chat's turns
// until a call asks a summary ahead of need and answers at once; the summarizer (a timer) ends
// after the response, kept alive by `waitUntil`. Request 2 plays on, from the store: the call at
// the trigger applies that summary without asking the summarizer again.
import { createCompactor, init, MemoryStore } from 'context-compactor';
import { prose, reply } from '../../stateless.mjs';

const WINDOW = 8_000;
const statePath = '/state/chat.json';
// The isolate's memory stands in for KV: both requests run in this isolate.
const store = new MemoryStore();
const summaries = [];
let raw = [{ role: 'system', content: 'You are a helpful research agent.' }];
let turn = 0;
let asked;

const summarize = async (request, { background }) => {
  summaries.push({ background: background === true, done: false });
  const mine = summaries.at(-1);
  await new Promise((resolve) => setTimeout(resolve, 50)); // ends after the response
  mine.done = true;
  return `## Session Intent\nMade in the background (${summaries.length})`;
};

/** One request of the route: its result. */
async function request(ctx) {
  raw.push({ role: 'user', content: `Turn ${turn}: ${prose(turn, 30)}` });
  const compactor = await createCompactor({ contextWindow: WINDOW, store, statePath, summarize, waitUntil: (p) => ctx.waitUntil(p) });
  const result = await compactor.manage(structuredClone(raw));
  raw.push(...reply(turn));
  turn += 1;
  return result;
}

export default {
  async fetch(req, env, ctx) {
    await init();
    const checks = [];
    const check = (name, ok, detail = '') => checks.push({ name: `background summary, ctx.waitUntil: ${name}`, ok: Boolean(ok), detail: String(detail) });
    try {
      if (new URL(req.url).pathname === '/1') {
        // Turns until one asks ahead; that request answers before its summary is done.
        while (turn < 60 && !asked) {
          const result = await request(ctx);
          if (result.plan.ahead) asked = { key: result.plan.ahead.aheadKey, turn: turn - 1 };
        }
        check('a call asked a summary ahead of need and returned before it was made', asked && !summaries.some((s) => s.done), JSON.stringify({ asked, summaries }));
        return Response.json({ checks });
      }
      // The next user message comes a moment later: request 1's summary, kept alive by its
      // waitUntil after its response, lands meanwhile (without waitUntil it would not).
      const path = `${statePath}.summaries/ahead-${asked?.key}.json`;
      let lease;
      for (let waited = 0; waited < 3_000 && !JSON.parse(lease ?? '{}').summary; waited += 25) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        lease = await store.read(path);
      }
      check('the summary ended after the response and waited beside the state', summaries.length === 1 && summaries[0].background && summaries[0].done && JSON.parse(lease ?? '{}').summary?.startsWith('## Session Intent'), lease);
      let applied;
      while (turn < 80 && !applied) {
        const result = await request(ctx);
        const event = result.events.find((e) => e.strategy === 'summarize');
        if (event) applied = { event, action: result.plan.actions.find((a) => a.type === 'summarize'), turn: turn - 1 };
      }
      check('a later request applied it over its span, without asking the summarizer again', applied?.event.status === 'applied' && applied.action.aheadKey === asked.key && summaries.length === 1, JSON.stringify({ turn: applied?.turn, key: applied?.action.aheadKey, summaries: summaries.length }));
    } catch (error) {
      check('ran', false, error?.stack ?? error);
    }
    return Response.json({ checks });
  },
};
