// Issue 35, class 1: with a `statePath` and a store whose writes to the summary leases
// (`<statePath>.summaries/...`) fail, `manage` and `compact` never returned — a failed lease
// write was taken for another request's lease and the wait retried at once, forever, starving
// the event loop (no timer of the app fired either). A failed lease write settles like any other
// failed write: the summary is asked directly and the call returns, within the summarizer
// timeout when the store hangs.
//
// Each case runs in a worker thread: a call that starves its event loop cannot fail a test in
// its own thread (no timer fires), so the main thread terminates the worker and fails the case.
// Inside the worker, the call races a watchdog timer and an interval counts the event-loop
// turns: both must be able to fire while the call runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const SUMMARIZE_TIMEOUT_MS = 1_000;
const WATCHDOG_MS = 5_000;
const PATH = '/state/compactor.json';

if (isMainThread) {
  const run = (data) =>
    new Promise((resolve) => {
      const worker = new Worker(new URL(import.meta.url), { workerData: data });
      const kill = setTimeout(() => {
        worker.terminate();
        resolve({ error: `no answer within ${WATCHDOG_MS * 2} ms: the call hung and starved the worker's event loop` });
      }, WATCHDOG_MS * 2);
      worker.once('message', (message) => {
        clearTimeout(kill);
        worker.terminate();
        resolve(message);
      });
      worker.once('error', (error) => {
        clearTimeout(kill);
        resolve({ error: String(error?.stack ?? error) });
      });
    });

  // reject: the write's promise rejects at once; throw: the call throws synchronously; hang: it
  // never settles; refuse: every conditional write says "not written" (no error), as if another
  // request always came first. `writeIf: false`: a store without compare-and-set.
  for (const mode of ['reject', 'throw', 'hang', 'refuse']) {
    for (const withWriteIf of [true, false]) {
      if (mode === 'refuse' && !withWriteIf) continue;
      for (const entry of ['manage', 'compact']) {
        test(`${entry} returns when the store's lease writes ${mode}${withWriteIf ? '' : ' (a store without writeIf)'}`, async () => {
          const result = await run({ mode, withWriteIf, entry });
          assert.equal(result.error, undefined, result.error);
          assert.ok(result.elapsed < 3 * SUMMARIZE_TIMEOUT_MS, `took ${result.elapsed} ms`);
          assert.ok(result.ticks > 0, 'the event loop kept turning during the call');
          assert.ok(result.summarized, 'the summarizer was asked directly and its summary applied');
          assert.ok(result.tokens <= result.window, `prompt of ${result.tokens} tokens in a ${result.window}-token window`);
          assert.equal(result.stateError, undefined);
        });
      }
    }
  }
} else {
  const { MemoryStore, createCompactor, init } = await import('../dist/entry/node.js');
  await init();
  const { mode, withWriteIf, entry } = workerData;
  const prose = (seed, words) => Array.from({ length: words }, (_, i) => `${['window', 'budget', 'cache'][(i + seed) % 3]} ${seed}.${i}`).join(' ');
  const chat = Array.from({ length: 40 }, (_, t) => [
    { role: 'user', content: `Question ${t}: ${prose(t, 120)}` },
    { role: 'assistant', content: `Answer ${t}: ${prose(t + 1, 160)}` },
  ]).flat();

  const inner = new MemoryStore();
  const failing = (path) => path.includes('.summaries/');
  const fail = (path) => {
    if (mode === 'throw') throw new Error(`store down (${path})`);
    if (mode === 'hang') return new Promise(() => {});
    return Promise.reject(new Error(`store down (${path})`));
  };
  const store = {
    read: (path) => inner.read(path),
    write: (path, text) => (failing(path) && mode !== 'refuse' ? fail(path) : inner.write(path, text)),
    list: (prefix) => inner.list(prefix),
    delete: (path) => inner.delete(path),
  };
  if (withWriteIf) {
    store.writeIf = (path, expected, text) => {
      if (!failing(path)) return inner.writeIf(path, expected, text);
      return mode === 'refuse' ? Promise.resolve(false) : fail(path);
    };
  }

  let calls = 0;
  const summarize = async (request) => {
    calls++;
    await new Promise((resolve) => setTimeout(resolve, 30)); // a model call takes a while
    return `## Session Intent\nThe direct summary (${request.prompt.length}).`;
  };
  let ticks = 0;
  const ticker = setInterval(() => ticks++, 10);
  let watchdog;
  const started = Date.now();
  try {
    const compactor = await createCompactor({ contextWindow: 8_000, store, statePath: PATH, summarize, summarizeTimeoutMs: SUMMARIZE_TIMEOUT_MS });
    const result = await Promise.race([
      compactor[entry](chat),
      new Promise((_, reject) => {
        watchdog = setTimeout(() => reject(new Error(`watchdog: ${entry} did not return within ${WATCHDOG_MS} ms`)), WATCHDOG_MS);
      }),
    ]);
    const elapsed = Date.now() - started;
    const usage = compactor.usage(result.messages);
    parentPort.postMessage({
      elapsed,
      ticks,
      summarized: calls === 1 && result.messages.some((m) => typeof m.content === 'string' && m.content.includes('The direct summary')),
      tokens: usage.tokens,
      window: usage.window,
      stateError: result.stateError,
    });
  } catch (error) {
    parentPort.postMessage({ error: String(error?.stack ?? error) });
  } finally {
    clearTimeout(watchdog);
    clearInterval(ticker);
  }
}
