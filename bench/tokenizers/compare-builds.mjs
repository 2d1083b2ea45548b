// Two or more builds of the package side by side, in fresh Node processes, runs alternated:
// counting speed on the bench corpus (first pass and best of three warm passes, MB/s), loading
// o200k (the core initialized, then its rank module's data), and import -> init() -> first count.
// Times are the process's CPU time (user + system), not wall time, so that other work on a shared
// machine weighs less (a pass of one thread: the same figure on an idle machine).
// Medians, and each run's figures. Build each version into its own copy of js/dist first:
//   bash scripts/build.sh && cp -r js/dist /tmp/dist-now
//   node bench/tokenizers/compare-builds.mjs 7 /tmp/dist-before /tmp/dist-now
// One process's cold start: node bench/tokenizers/compare-builds.mjs --cold js/dist [entry/node-tokens.js]
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { corpusFile } from './corpus.mjs';

const HERE = new URL('.', import.meta.url).pathname;
const [mode, ...args] = process.argv.slice(2);
const url = (dist, path) => pathToFileURL(resolve(dist, path)).href;
/** CPU milliseconds since `from` (a `process.cpuUsage()`), or now when no `from`. */
const cpu = (from) => { const u = process.cpuUsage(from); return (u.user + u.system) / 1000; };

if (mode === '--count') {
  // `--count DIST ENCODING [ENTRY]`: ENTRY `entry/node-tokens.js` counts with `context-compactor/tokens`.
  const [dist, encoding, entry = 'entry/node.js'] = args;
  const texts = JSON.parse(readFileSync(corpusFile('chunks.json'), 'utf8')).map((c) => c.text);
  const mb = texts.reduce((a, t) => a + Buffer.byteLength(t), 0) / 1e6;
  const m = await import(url(dist, entry));
  await m.init({ encodings: [encoding] });
  const pass = () => { const t = process.cpuUsage(); for (const s of texts) m.countTokens(s, encoding); return mb / (cpu(t) / 1000); };
  const first = pass();
  console.log(JSON.stringify({ first, warm: Math.max(pass(), pass(), pass()) }));
} else if (mode === '--load') {
  const [dist] = args;
  const glue = await import(url(dist, 'wasm/context_compactor.js'));
  glue.initSync({ module: new WebAssembly.Module(readFileSync(resolve(dist, 'wasm/context_compactor_bg.wasm'))) });
  const { data, length } = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(resolve(dist, 'ranks/o200k_base.wasm')))).exports;
  const ranks = new Uint8Array(data.buffer, 0, Number(length.value)).slice();
  const t = process.cpuUsage();
  glue.loadEncoding('o200k_base', ranks);
  console.log(JSON.stringify({ loadMs: cpu(t) }));
} else if (mode === '--cold') {
  // `--cold DIST [ENTRY]`: ENTRY `entry/node-tokens.js` times `context-compactor/tokens`.
  const t = process.cpuUsage();
  const m = await import(url(args[0], args[1] ?? 'entry/node.js'));
  await m.init();
  m.countTokens("Hello, world! Let's count tokens: naïve café 日本語 🦀");
  console.log(JSON.stringify({ coldMs: cpu(t) }));
} else {
  const runs = Number(mode);
  const dists = args;
  if (!(runs > 0) || dists.length === 0) throw new Error('usage: node compare-builds.mjs RUNS DIST...');
  const child = (...a) => JSON.parse(execFileSync(process.execPath, [new URL(import.meta.url).pathname, ...a], { encoding: 'utf8' }));
  const results = new Map(dists.map((d) => [d, {}]));
  const push = (d, key, v) => (results.get(d)[key] ??= []).push(v);
  for (let r = 0; r < runs; r++) {
    for (const d of dists) {
      for (const e of ['o200k_base', 'cl100k_base']) {
        const { first, warm } = child('--count', d, e);
        push(d, `${e} first MB/s`, first);
        push(d, `${e} warm MB/s`, warm);
      }
      push(d, 'o200k load ms', child('--load', d).loadMs);
      push(d, 'import -> first count ms', child('--cold', d).coldMs);
    }
  }
  const median = (a) => [...a].sort((x, y) => x - y)[(a.length - 1) >> 1];
  for (const [d, byKey] of results) {
    console.log(d);
    for (const [k, a] of Object.entries(byKey)) console.log(`  ${k.padEnd(26)} median ${median(a).toFixed(1).padStart(6)}   runs ${a.map((x) => x.toFixed(1)).join(', ')}`);
  }
}
