// One of the load run's workers (bench/serverless/run.mjs): takes conversations from a shared
// counter and serves their turns one after another as a stateless route would — a new compactor
// per request with its state at `statePath` — over Redis (unstorage's Redis driver) or over a
// MemoryStore per conversation (the same work without the network). Times each request.
import { parentPort, workerData } from 'node:worker_threads';
import { createStorage } from 'unstorage';
import redisDriver from 'unstorage/drivers/redis';
import { createCompactor, init, MemoryStore } from '../../js/dist/entry/node.js';
import { UnstorageStore } from '../../js/dist/stores/unstorage.js';
import { prose, reply } from '../../tests/runtimes/stateless.mjs';

await init();
const { backend, url, conversations, turns, counter } = workerData;
const next = new Int32Array(counter);
const storage = backend === 'redis' ? createStorage({ driver: redisDriver({ url, base: 'bench' }) }) : undefined;
const options = { contextWindow: 6_000 };
// Warm (the core compiled, the connection open), then wait for every worker: no request is
// timed while another thread is still starting.
if (storage) await storage.getItem('warm');
await new Promise((resolve) => {
  parentPort.once('message', resolve);
  parentPort.postMessage({ ready: true });
});
const overheads = [];
let requests = 0;
let compactions = 0;
for (let c = Atomics.add(next, 0, 1); c < conversations; c = Atomics.add(next, 0, 1)) {
  const store = storage ? new UnstorageStore(storage, { base: `chat:${c}` }) : new MemoryStore();
  const raw = [{ role: 'system', content: `You are research agent ${c}.` }];
  for (let t = 0; t < turns; t++) {
    raw.push({ role: 'user', content: `Conversation ${c}, turn ${t}: ${prose(t + c, 30)}` });
    const history = structuredClone(raw); // what the route parses from the request or the chat
    const started = performance.now();
    const compactor = await createCompactor({ ...options, store, statePath: '/state/compactor.json' });
    const result = await compactor.manage(history);
    overheads.push(performance.now() - started);
    compactor.dispose();
    if (result.stateError) throw new Error(result.stateError);
    if (result.events.length > 0) compactions += 1;
    requests += 1;
    raw.push(...reply(t));
  }
}
parentPort.postMessage({ overheads, requests, compactions });
await storage?.dispose();
