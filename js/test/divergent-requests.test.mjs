// Issue 35, class 5: requests of one conversation that run at once on other branches. Eight
// requests each add their own tool call to one saved conversation (eight tabs, or retries that
// diverge), and eight more are the same request sent eight times (double submits, retries), all
// at once, on eight instances sharing a real Redis server through UnstorageStore, each request a
// new compactor with `statePath`. Before the fix every lost save ran the call again and counted
// towards 5 attempts, so with nine branches racing for one state the last ones to land threw
// `state_conflict` (2 of 8 in the fuzz runs). Now no request is refused: a request on another
// branch than the saved state's answers from its own history; the same-branch requests converge
// on one prompt; every answer is inside the window with its tool pairs intact, and every stored
// copy an answer names is readable.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createStorage } from 'unstorage';
import redisDriver from 'unstorage/drivers/redis';
import { createCompactor, init } from '../dist/entry/node.js';
import { UnstorageStore } from '../dist/stores/unstorage.js';
import { startRedis } from '../test-helpers/redis.mjs';
import { prose } from '../test-helpers/conversations.mjs';

await init();

const RUNS = 10;
const INSTANCES = 8;
const BRANCHES = 8;
const COPIES = 8;
const PATH = '/state/compactor.json';
const WINDOW = 8_000;

let redis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

const output = (seed, lines) => Array.from({ length: lines }, (_, i) => `row ${i}: ${prose(seed + i, 6)}`).join('\n');
const toolTurn = (id, seed, lines) => [
  { role: 'assistant', content: [{ type: 'text', text: `Checking ${id}.` }, { type: 'tool-call', toolCallId: id, toolName: 'bash', input: { cmd: `inspect ${id}` } }] },
  { role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'bash', output: { type: 'text', value: output(seed, lines) } }] },
];

/** The saved part of the conversation: `turns` exchanges with a tool call each, the second one
 * large (offloaded by the request that saved it). With the new turn light runs stay under the
 * compaction trigger; heavy ones cross it (a summary of the older turns). */
function history(turns) {
  const messages = [{ role: 'system', content: 'You are a careful operations agent.' }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: `Step ${t}: ${prose(t, 60)}` });
    messages.push(...toolTurn(`base_${t}`, t * 13, t === 1 ? 260 : 12));
    messages.push({ role: 'assistant', content: `Done with step ${t}: ${prose(t + 5, 40)}` });
  }
  messages.push({ role: 'user', content: 'Now inspect the failing host and report.' });
  return messages;
}

/** Every tool call has its result and every result its call, in order. */
function pairsIntact(messages) {
  const open = new Set();
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content) {
      if (part.type === 'tool-call') open.add(part.toolCallId);
      if (part.type === 'tool-result') {
        if (!open.has(part.toolCallId)) return `result ${part.toolCallId} without its call`;
        open.delete(part.toolCallId);
      }
    }
  }
  return open.size === 0 ? null : `calls without results: ${[...open]}`;
}

const summarize = (request) => `## Session Intent\nScripted summary of ${request.prompt.length} characters.`;

test(`${BRANCHES} divergent and ${COPIES} same-branch requests at once over Redis, ${RUNS} runs: no refusal, every answer valid, the same branch converges`, { timeout: 300_000 }, async () => {
  const storages = Array.from({ length: INSTANCES }, () => createStorage({ driver: redisDriver({ url: redis.url, base: 'cc' }) }));
  const figures = [];
  const refusals = [];
  try {
    for (let run = 0; run < RUNS; run++) {
      const heavy = run % 2 === 1;
      const base = `run${run}`;
      const storeOf = (i) => new UnstorageStore(storages[i % INSTANCES], { base });
      // Summaries in the call (a summarizing run's requests race for one lease): made ahead,
      // the requests go on unsummarized and a later request applies the summary instead.
      const options = { contextWindow: WINDOW, statePath: PATH, summarize, background: false };
      const saved = history(heavy ? 6 : 4);
      // The conversation so far, saved by an earlier request.
      const first = await createCompactor({ ...options, store: storeOf(0) });
      const settled = await first.manage(saved);
      assert.equal(settled.stateError, undefined);
      first.dispose();

      const branch = (i) => [...structuredClone(saved), ...toolTurn(`branch_${i}`, 1_000 * (i + 1), 260)];
      const same = [...saved, ...toolTurn('same', 777, 260)];
      const requests = [
        ...Array.from({ length: BRANCHES }, (_, i) => ({ kind: 'divergent', messages: branch(i) })),
        ...Array.from({ length: COPIES }, () => ({ kind: 'same', messages: structuredClone(same) })),
      ];
      const answers = await Promise.all(
        requests.map(async (request, i) => {
          const compactor = await createCompactor({ ...options, store: storeOf(i) });
          try {
            const result = await compactor.manage(request.messages);
            const usage = compactor.usage(result.messages);
            return { ...request, result, tokens: usage.tokens };
          } catch (error) {
            return { ...request, error };
          } finally {
            compactor.dispose();
          }
        }),
      );

      const refused = answers.filter((a) => a.error);
      const store = storeOf(0);
      const state = JSON.parse(await store.read(PATH));
      figures.push({ run, heavy, refusals: refused.length, revision: state.revision });
      refusals.push(...refused.map((a) => `run ${run}, ${a.kind}: ${a.error.code ?? ''} ${a.error.message}`));
      for (const [i, answer] of answers.entries()) {
        const { result } = answer;
        if (!result) continue;
        assert.equal(result.stateError, undefined, `run ${run}, request ${i}: ${result.stateError}`);
        assert.ok(answer.tokens <= WINDOW, `run ${run}, request ${i}: ${answer.tokens} tokens in a ${WINDOW}-token window`);
        assert.equal(pairsIntact(result.messages), null, `run ${run}, request ${i}`);
        // Its own tool output is in the answer, whole or as a stored copy that reads back.
        const own = answer.kind === 'same' ? 'same' : `branch_${i}`;
        const part = result.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).find((p) => p.type === 'tool-result' && p.toolCallId === own);
        assert.ok(part, `run ${run}, request ${i}: its own tool result is in the answer`);
        // (By this request, or by a same-branch copy whose recorded edit it replayed.)
        const original = answer.messages.at(-1).content[0].output.value;
        const stored = String(part.output.value).match(/\/tool_outputs\/[A-Za-z0-9_.\-/]+[A-Za-z0-9_\-]/)?.[0];
        assert.ok(stored, `run ${run}, request ${i}: its own output was offloaded`);
        assert.equal(await store.read(stored), original, `run ${run}, request ${i}: ${stored} holds the output`);
        for (const path of new Set(JSON.stringify(result.messages).match(/\/(?:tool_outputs|conversation_history)\/[A-Za-z0-9_.\-/]+[A-Za-z0-9_\-]/g) ?? [])) {
          assert.notEqual(await store.read(path), null, `run ${run}, request ${i}: ${path}, named in its answer, is readable`);
        }
      }
      // The same request sent eight times converges: one prompt, the one a compactor on the
      // state now stored sends for it.
      const sameAnswers = answers.filter((a) => a.kind === 'same' && a.result).map((a) => JSON.stringify(a.result.messages));
      assert.equal(new Set(sameAnswers).size, 1, `run ${run}: the same-branch requests answered ${new Set(sameAnswers).size} different prompts`);
      const replay = await createCompactor({ ...options, store });
      const again = await replay.manage(structuredClone(same));
      replay.dispose();
      assert.equal(JSON.stringify(again.messages), sameAnswers[0], `run ${run}: the stored state replays the same-branch prompt`);
    }
    assert.deepEqual(refusals, [], `${refusals.length} requests refused`);
  } finally {
    console.log(`# ${RUNS} runs of ${BRANCHES} divergent + ${COPIES} same-branch requests: ${figures.map((f) => `run ${f.run}${f.heavy ? ' (summarizing)' : ''}: ${f.refusals} refused, revision ${f.revision}`).join('; ')}`);
    console.log(`# refusals in all: ${figures.reduce((n, f) => n + f.refusals, 0)}`);
    await Promise.all(storages.map((s) => s.dispose()));
  }
});
