// The serverless load run (a bench, not a test): 1,000 conversations × 20 turns, 16 concurrent
// workers (worker threads, each a stateless route instance), over one Redis server
// (redis-server on loopback, started here) and, for comparison, over a MemoryStore. Reports the
// compactor's per-request overhead (new compactor + state load + manage + offloads + state
// save), p50 / p99 in ms, and Redis round trips per request (commands the server processed,
// from INFO stats; unstorage sends one command per call, nothing pipelined).
//   node bench/serverless/run.mjs [--conversations 1000] [--turns 20] [--workers 16]
import { Worker } from 'node:worker_threads';
import { mkdirSync, writeFileSync } from 'node:fs';
import Redis from 'ioredis';
import { startRedis } from '../../js/test-helpers/redis.mjs';

const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const conversations = arg('conversations', 1000);
const turns = arg('turns', 20);
const workers = arg('workers', 16);

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function run(backend, url) {
  const counter = new SharedArrayBuffer(4);
  const threads = Array.from({ length: workers }, () => new Worker(new URL('./worker.mjs', import.meta.url), { workerData: { backend, url, conversations, turns, counter } }));
  const message = (worker) => new Promise((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject)));
  await Promise.all(threads.map(message));
  const started = performance.now();
  const done = threads.map(message);
  for (const worker of threads) worker.postMessage('go');
  const results = await Promise.all(done);
  const seconds = (performance.now() - started) / 1000;
  const overheads = results.flatMap((r) => r.overheads).sort((a, b) => a - b);
  const requests = results.reduce((n, r) => n + r.requests, 0);
  const compactions = results.reduce((n, r) => n + r.compactions, 0);
  return { backend, requests, compactions, seconds, p50: percentile(overheads, 50), p99: percentile(overheads, 99), mean: overheads.reduce((a, b) => a + b, 0) / overheads.length };
}

const redis = await startRedis();
const admin = new Redis(redis.url);
try {
  const memory = await run('memory');
  const before = Number(/total_commands_processed:(\d+)/.exec(await admin.info('stats'))[1]);
  const overRedis = await run('redis', redis.url);
  const after = Number(/total_commands_processed:(\d+)/.exec(await admin.info('stats'))[1]);
  overRedis.roundTrips = (after - before - 1) / overRedis.requests; // less the INFO itself
  const memoryUsed = /used_memory_human:(\S+)/.exec(await admin.info('memory'))[1];
  const keys = await admin.dbsize();
  const rows = [memory, overRedis].map(
    (r) => `| ${r.backend} | ${r.requests} | ${r.compactions} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.mean.toFixed(2)} | ${r.roundTrips === undefined ? '—' : r.roundTrips.toFixed(2)} | ${r.seconds.toFixed(1)} |`,
  );
  const table = [
    `${conversations} conversations × ${turns} turns, ${workers} workers (worker threads), window 6,000 tokens, a new compactor per request with its state at statePath; Node ${process.version}; Redis holds ${keys} keys, ${memoryUsed} after the run.`,
    '',
    '| store | requests | requests that compacted | overhead p50, ms | p99, ms | mean, ms | Redis round trips / request | wall, s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
  console.log(table);
  mkdirSync(new URL('./out/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./out/results.md', import.meta.url), table + '\n');
} finally {
  admin.disconnect();
  await redis.stop();
}
