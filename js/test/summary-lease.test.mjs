// One summary per span across the requests of one conversation (issue 20): two compactors
// sharing a statePath that compact the same conversation at the same time ask the summarizer
// once (a lease beside the state holds the summary for the other); a lease left by a request
// that died is taken over once it expires; a failing summarizer releases it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';

await init();
const PATH = '/state/compactor.json';
const prose = (seed, words) => Array.from({ length: words }, (_, i) => `${['window', 'budget', 'cache'][(i + seed) % 3]} ${seed}.${i}`).join(' ');
const chat = Array.from({ length: 40 }, (_, t) => [
  { role: 'user', content: `Question ${t}: ${prose(t, 120)}` },
  { role: 'assistant', content: `Answer ${t}: ${prose(t + 1, 160)}` },
]).flat();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function slowSummarizer(calls, ms = 80) {
  return async (request) => {
    calls.push(request.prompt.length);
    await sleep(ms);
    return `## Session Intent\nThe shared summary (${request.prompt.length}).`;
  };
}

test('two requests racing on one span ask the summarizer once and send the same prompt', async () => {
  const store = new MemoryStore();
  const calls = [];
  const options = { contextWindow: 8_000, store, statePath: PATH, summarize: slowSummarizer(calls) };
  const [a, b] = [await createCompactor(options), await createCompactor(options)];
  // manage(): the one that loses the state save reloads and runs again on the winner's state,
  // which is then under the trigger (a manual compact() would compact the result once more).
  const [ra, rb] = await Promise.all([a.manage(chat), b.manage(chat)]);
  assert.equal(calls.length, 1, `summarizer calls: ${calls.length}`);
  assert.deepEqual(ra.messages, rb.messages);
  assert.ok(ra.messages[0].content.includes('The shared summary'));
  const leases = await store.list(`${PATH}.summaries/`);
  assert.equal(leases.length, 1);
  assert.match(await store.read(leases[0]), /"summary":"## Session Intent/);
  // Without a statePath every compactor asks on its own.
  const own = [];
  const free = { contextWindow: 8_000, summarize: slowSummarizer(own) };
  await Promise.all([(await createCompactor(free)).manage(chat), (await createCompactor(free)).manage(chat)]);
  assert.equal(own.length, 2);
});

test('a lease its request left unfulfilled is taken over once it expires', async () => {
  const store = new MemoryStore();
  const calls = [];
  const options = { contextWindow: 8_000, store, statePath: PATH, summarize: slowSummarizer(calls, 5), summarizeTimeoutMs: 1_000 };
  // Plan once to learn the lease's path, then leave a lease as a killed request would.
  const probe = await createCompactor({ contextWindow: 8_000 });
  const plan = probe.plan(chat, { trigger: 'manual' });
  const prompt = plan.actions.find((x) => x.type === 'summarize').request.prompt;
  const { leasePath } = await import('../dist/state.js');
  await store.write(leasePath(PATH, prompt), JSON.stringify({ owner: 'dead', until: Date.now() + 300 }));
  const t0 = Date.now();
  const result = await (await createCompactor(options)).compact(chat);
  assert.equal(calls.length, 1);
  assert.ok(Date.now() - t0 >= 250, 'it waited for the lease to expire');
  assert.ok(result.messages[0].content.includes('The shared summary'));
});

test('a failing summarizer releases the lease: the next request asks again', async () => {
  const store = new MemoryStore();
  let fail = true;
  let calls = 0;
  const summarize = async () => {
    calls++;
    if (fail) throw new Error('provider down');
    return '## Session Intent\nSecond try.';
  };
  const options = { contextWindow: 8_000, store, statePath: PATH, summarize };
  const first = await (await createCompactor(options)).compact(chat);
  assert.ok(first.events.some((e) => e.strategy === 'summarize' && e.status === 'fallback') || first.messages[0].content.includes('[Conversation summary]'));
  fail = false;
  const second = await (await createCompactor({ ...options, store: new MemoryStore() })).compact(chat);
  assert.ok(second.messages[0].content.includes('Second try.'));
  assert.equal(calls, 2);
});
