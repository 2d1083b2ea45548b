// Issue 32 item 3's figures (a bench, not a test): a new compactor's first manage on a long real
// history (the arena's real sessions), with and without the previous request's state, against
// one countTokens of the history's JSON, medians of 7 in one warm process:
//   node --max-old-space-size=8192 bench/stateless/run.mjs
import { performance } from 'node:perf_hooks';
import { countTokens, createCompactor, init, MemoryStore } from 'context-compactor';
import { loadReal } from '../arena/sessions/real.mjs';
await init();
const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const name of ['claude-code-wallpaper', 'swe-sqlfluff-1733']) {
  const s = loadReal(name);
  const history = [{ role: 'system', content: s.system }, ...s.messages];
  const json = JSON.stringify(history);
  const opts = { model: 'gpt-4o', contextWindow: 128_000 };
  const count = [], fresh = [], withState = [];
  const store = new MemoryStore();
  const first = await createCompactor({ ...opts, store });
  const managed = await first.manage(history);
  const state = first.state();
  for (let i = 0; i < 7; i++) {
    let t = performance.now(); countTokens(json); count.push(performance.now() - t);
    const a = await createCompactor({ ...opts, store });
    t = performance.now(); await a.manage(history); fresh.push(performance.now() - t);
    const b = await createCompactor({ ...opts, store, state });
    t = performance.now(); await b.manage(history); withState.push(performance.now() - t);
    a.dispose(); b.dispose();
  }
  console.log(`${name}: ${history.length} messages, ${countTokens(json)} tokens of JSON (${managed.events.length} events on the first manage); countTokens(JSON) ${median(count).toFixed(1)} ms; first manage, no state ${median(fresh).toFixed(1)} ms (${(median(fresh) / median(count)).toFixed(2)}x); with the previous state ${median(withState).toFixed(1)} ms (${(median(withState) / median(count)).toFixed(2)}x)`);
}
