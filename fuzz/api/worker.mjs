// The worker thread that runs cases (run.mjs starts it, and kills it when a case hangs).
import { parentPort } from 'node:worker_threads';
import { runCase } from './case.mjs';

// No network: nothing in a case may fetch (an image URL the SDK would download, say).
globalThis.fetch = async (url) => {
  throw new Error(`network access in the fuzz harness: ${url}`);
};

globalThis.AI_SDK_LOG_WARNINGS = false;
const cc = await import('context-compactor');
await cc.init();
const ai = await import('ai');
const aiTest = await import('ai/test');

let current;
// A promise the package (or the SDK) lets reject with no handler would end a Node app by
// default: a violation of its own, charged to the running case.
process.on('unhandledRejection', (reason) => {
  const message = `unhandled rejection: ${reason?.constructor?.name ?? typeof reason}: ${String(reason?.message ?? reason).slice(0, 300)}`;
  if (current) current.extra.push({ class: 'unhandled-rejection', message });
  else parentPort.postMessage({ type: 'stray', message });
});

const tick = (info) => parentPort.postMessage({ type: 'tick', ...info });

parentPort.on('message', async (msg) => {
  if (msg.type !== 'run') return;
  current = { extra: [] };
  const result = await runCase(msg.spec, { cc, ai, aiTest, tick });
  // Late rejections surface a turn later.
  await new Promise((resolve) => setImmediate(resolve));
  for (const v of current.extra) if (!result.violations.some((x) => x.class === v.class)) result.violations.push(v);
  current = undefined;
  parentPort.postMessage({ type: 'result', id: msg.id, ...result });
});
parentPort.postMessage({ type: 'ready' });
