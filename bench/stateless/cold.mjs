// Issue 32 item 3's cold figures (a bench, not a test): a fresh process per run, as a cold
// serverless instance: import + init, createCompactor with the previous request's state, and
// its first manage on a long real history (the arena's real sessions), medians of 7 runs.
//   node bench/stateless/cold.mjs [--dist DIR]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const arg = (name) => { const i = process.argv.indexOf(name); return i < 0 ? undefined : process.argv[i + 1]; };
const dist = arg('--dist') ?? fileURLToPath(new URL('../../js/dist', import.meta.url));
const entry = pathToFileURL(join(dist, 'entry/node.js')).href;

if (process.argv.includes('--child')) {
  const input = JSON.parse(readFileSync(arg('--input'), 'utf8'));
  const t0 = performance.now();
  const cc = await import(entry);
  await cc.init();
  const t1 = performance.now();
  const compactor = await cc.createCompactor({ ...input.options, state: input.state });
  const t2 = performance.now();
  await compactor.manage(input.history);
  const t3 = performance.now();
  console.log(JSON.stringify({ init: t1 - t0, create: t2 - t1, manage: t3 - t2, total: t3 - t0 }));
  process.exit(0);
}

const { loadReal } = await import('../arena/sessions/real.mjs');
const cc = await import(entry);
await cc.init();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const dir = mkdtempSync(join(tmpdir(), 'cc-cold-'));
for (const name of ['claude-code-wallpaper', 'swe-sqlfluff-1733']) {
  const s = loadReal(name);
  const history = [{ role: 'system', content: s.system }, ...s.messages];
  const options = { model: 'gpt-4o', contextWindow: 128_000 };
  // The previous request's state: a compactor that managed the history without its last turn.
  const previous = await cc.createCompactor(options);
  await previous.manage(history.slice(0, -2));
  const input = join(dir, `${name}.json`);
  writeFileSync(input, JSON.stringify({ options, state: previous.state(), history }));
  const runs = Array.from({ length: 7 }, () => JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), '--child', '--input', input, '--dist', dist], { encoding: 'utf8' })));
  const m = (k) => median(runs.map((r) => r[k])).toFixed(0);
  console.log(`${name}: ${history.length} messages; cold instance, medians of 7: import + init ${m('init')} ms, createCompactor ${m('create')} ms, first manage with the state ${m('manage')} ms, total ${m('total')} ms`);
}
