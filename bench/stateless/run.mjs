// Issue 32 item 3's figures (a bench, not a test): a new compactor's first manage on a long real
// history (the arena's real sessions), with and without the previous request's state, against
// one countTokens of the history's JSON, medians of 15 in one warm process:
//   node --max-old-space-size=8192 bench/stateless/run.mjs [--dist DIR] [--before DIR]
// `--before DIR` measures an older build (a copy of its js/dist) too, interleaved with this one in
// the same process, and prints both side by side.
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadReal } from '../arena/sessions/real.mjs';

const arg = (name) => { const i = process.argv.indexOf(name); return i < 0 ? undefined : process.argv[i + 1]; };
const builds = { after: arg('--dist') ?? fileURLToPath(new URL('../../js/dist', import.meta.url)) };
if (arg('--before')) builds.before = arg('--before');
const libs = {};
for (const [label, dist] of Object.entries(builds)) {
  libs[label] = await import(pathToFileURL(join(dist, 'entry/node.js')).href);
  await libs[label].init();
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const name of ['claude-code-wallpaper', 'swe-sqlfluff-1733']) {
  const s = loadReal(name);
  const history = [{ role: 'system', content: s.system }, ...s.messages];
  const json = JSON.stringify(history);
  const opts = { model: 'gpt-4o', contextWindow: 128_000 };
  const runs = {};
  for (const [label, cc] of Object.entries(libs)) {
    const store = new cc.MemoryStore();
    const first = await cc.createCompactor({ ...opts, store });
    const managed = await first.manage(history);
    runs[label] = { cc, store, state: first.state(), events: managed.events.length, count: [], fresh: [], withState: [] };
  }
  for (let i = 0; i < 15; i++) {
    for (const r of Object.values(runs)) {
      let t = performance.now(); r.cc.countTokens(json); r.count.push(performance.now() - t);
      const a = await r.cc.createCompactor({ ...opts, store: r.store });
      t = performance.now(); await a.manage(history); r.fresh.push(performance.now() - t);
      const b = await r.cc.createCompactor({ ...opts, store: r.store, state: r.state });
      t = performance.now(); await b.manage(history); r.withState.push(performance.now() - t);
      a.dispose(); b.dispose();
    }
  }
  for (const [label, r] of Object.entries(runs)) {
    const c = median(r.count), f = median(r.fresh), w = median(r.withState);
    console.log(`${name} [${label}]: ${history.length} messages, ${r.cc.countTokens(json)} tokens of JSON (${r.events} events on the first manage); countTokens(JSON) ${c.toFixed(1)} ms; first manage, no state ${f.toFixed(1)} ms (${(f / c).toFixed(2)}x); with the previous state ${w.toFixed(1)} ms (${(w / c).toFixed(2)}x)`);
  }
}
