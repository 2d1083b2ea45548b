// Quick figures for the end-to-end slice (the full side-by-side benchmark is issue 5's):
// cold start (fresh process, import → first o200k count), counting MB/s in Node on a few MB of
// mixed text, and the wasm size.   node bench/quick.mjs
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const entry = new URL('../js/dist/entry/node.js', import.meta.url).href;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const coldScript = `const t0 = performance.now(); const m = await import(${JSON.stringify(entry)}); await m.init(); m.countTokens('hello', 'o200k_base'); console.log(performance.now() - t0);`;
const cold = Array.from({ length: 7 }, () => Number(execFileSync(process.execPath, ['--input-type=module', '-e', coldScript], { encoding: 'utf8' })));

const { countTokens, init } = await import(entry);
await init();
const fixture = JSON.parse(readFileSync(new URL('../tests/fixtures/token-counts.json', import.meta.url), 'utf8'));
const { session } = await import('../examples/demo/session.mjs');
const sessionText = JSON.stringify(session());
// ~4 MB of mixed text: the fixture's hard cases, prose/code/JSON/logs from the demo session,
// each copy made unique so no tokenizer-internal cache sees repeats.
const chunks = [];
for (let i = 0; chunks.reduce((n, c) => n + c.length, 0) < 4_000_000; i++) {
  for (const c of fixture.cases) chunks.push(`${i} ${c.text}`);
  chunks.push(`${i} ${sessionText}`);
}
const bytes = chunks.reduce((n, c) => n + Buffer.byteLength(c), 0);
const results = {};
for (const enc of ['o200k_base', 'cl100k_base']) {
  const runs = [];
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now();
    let tokens = 0;
    for (const c of chunks) tokens += countTokens(c, enc);
    runs.push(performance.now() - t0);
    results[enc] = { tokens };
  }
  results[enc].mbPerSec = +(bytes / 1e6 / (median(runs) / 1000)).toFixed(2);
  results[enc].firstPassMbPerSec = +(bytes / 1e6 / (runs[0] / 1000)).toFixed(2);
}
const wasm = readFileSync(new URL('../js/dist/wasm/context_compactor_bg.wasm', import.meta.url));
console.log(JSON.stringify({
  coldStartMs: { median: +median(cold).toFixed(1), runs: cold.map((x) => +x.toFixed(1)) },
  countingCorpusMB: +(bytes / 1e6).toFixed(2),
  counting: results,
  wasmBytes: wasm.length,
  wasmGzipBytes: gzipSync(wasm, { level: 9 }).length,
  node: process.version,
}, null, 2));
