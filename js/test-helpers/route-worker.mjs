// One route-handler instance of the concurrency test (js/test/concurrency.test.mjs), in its own
// worker thread: its own ioredis connection, its own compactor per request, nothing kept between
// requests but the connection — a serverless instance. A request is `{ id, history, fault }`:
// it loads the state from Redis, compacts `history`, saves, and answers with the prompt.
// Faults: `kill` stops before the state save (after the offloads), telling the test, which
// terminates this thread; `slow-save` holds the state save 40 ms (the first of a double submit:
// its copies load the state it loaded, so one save surely loses the race, however fast the
// machine); store errors (a dropped Redis connection) answer 503.
import { createHash, randomUUID } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { createStorage } from 'unstorage';
import redisDriver from 'unstorage/drivers/redis';
import { createCompactor, init } from '../dist/entry/node.js';
import { UnstorageStore } from '../dist/stores/unstorage.js';

await init();
const storage = createStorage({ driver: redisDriver({ url: workerData.url, base: 'cc', maxRetriesPerRequest: 50, retryStrategy: () => 5 }) });
const client = storage.getMount('').driver.getInstance();
client.on('error', () => {}); // the test drops connections on purpose; ioredis reconnects

/** The scripted summarizer (the same text for the same span in every instance); each call is
 * counted in Redis under a hash of its prompt: one key per span, a set of call ids. A set, not
 * INCR: ioredis re-sends a command whose reply a dropped connection lost, and an INCR the server
 * had already applied would then count one call twice (the test failed so about one run in
 * four); adding the same call id again changes nothing. */
async function summarize(request) {
  await client.sadd(`summaries:${createHash('sha1').update(request.prompt).digest('hex')}`, randomUUID());
  return `## Session Intent\nScripted summary ${request.prompt.length}.`;
}

const STATE_PATH = '/state/compactor.json';

async function handle({ id, history, fault }) {
  const base = new UnstorageStore(storage, { base: 'chat:1' });
  // The killed request: every write goes through, then the process dies at the state save.
  // Every store call goes to Redis; a save that loses the race is counted; the killed request
  // makes every write, then dies at the state save.
  let lostSaves = 0;
  const store = {
    read: (p) => base.read(p),
    write: (p, t) => base.write(p, t),
    list: (p) => base.list(p),
    delete: (p) => base.delete(p),
    async writeIf(p, expected, text) {
      if (fault === 'kill') {
        parentPort.postMessage({ id, dying: true });
        return new Promise(() => {});
      }
      if (fault === 'slow-save' && p === STATE_PATH) await new Promise((resolve) => setTimeout(resolve, 40));
      const done = await base.writeIf(p, expected, text);
      if (!done) lostSaves += 1;
      return done;
    },
  };
  const compactor = await createCompactor({ ...workerData.options, store, statePath: STATE_PATH, summarize });
  try {
    const result = await compactor.manage(history);
    const failed = result.events.filter((e) => e.status === 'failed');
    if (result.stateError || failed.length > 0) return { id, status: 503, lostSaves, error: result.stateError ?? failed[0].error };
    return { id, status: 200, lostSaves, prompt: result.messages, offloaded: result.events.filter((e) => e.path).map((e) => e.path) };
  } finally {
    compactor.dispose();
  }
}

parentPort.on('message', async (request) => {
  try {
    parentPort.postMessage(await handle(request));
  } catch (error) {
    parentPort.postMessage({ id: request.id, status: error?.code === 'state_conflict' ? 409 : 503, error: String(error?.message ?? error) });
  }
});
parentPort.postMessage({ ready: true });
