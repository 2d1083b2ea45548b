// context-compactor beside gpt-tokenizer, tiktoken (npm, WASM), js-tiktoken and LangChain
// trimMessages, in one run on the same deterministic corpus. `npm run bench` at the repository
// root builds the package first; this file assumes js/dist exists.
//
//   node bench.mjs [--reps=5] [--init-runs=7] [--skip=init,throughput,sizes,hard,plan] [--quick]
//                  [--contenders=tiktoken,gpt-tokenizer] [--inputs=spaces,CJK] [--hard-budget=20]
//
// Writes out/results.json and out/results.md (also printed). Medians; ratios are ours / peer
// (speed) or peer / ours (time, size), so > 1 means we are ahead. Every measurement runs in a
// child process: a peer that crashes (npm tiktoken's wasm traps on 1 MB of spaces) or runs out
// of time is recorded as such ("crashed on 1 MB of spaces") and the run goes on; results.json is
// written after each section. `--contenders` and `--inputs` (hard inputs) narrow a run; ours
// always runs (the ratios are against it).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { allContenders, ENCODINGS, OURS } from './contenders.mjs';
import { corpusFile } from './corpus.mjs';

process.chdir(new URL('.', import.meta.url).pathname);
const opt = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')).map(([k, v]) => [k, v ?? 'true']));
const QUICK = opt.quick === 'true';
const SKIP = new Set((opt.skip ?? '').split(',').filter(Boolean));
const REPS = Number(opt.reps ?? (QUICK ? 2 : 5));
const INIT_RUNS = Number(opt['init-runs'] ?? (QUICK ? 3 : 7));
const log = (...a) => console.error('[bench]', ...a);
const median = (a) => { const b = [...a].sort((x, y) => x - y); return b.length % 2 ? b[(b.length - 1) / 2] : (b[b.length / 2 - 1] + b[b.length / 2]) / 2; };
const f = (x, d = 1) => (x >= 100 ? x.toFixed(0) : x.toFixed(d));
const ONLY = opt.contenders ? new Set(opt.contenders.split(',')) : undefined;
const contenders = (await allContenders()).filter((c) => (!QUICK || !c.slow) && (!ONLY || ONLY.has(c.name) || c.name === OURS));
mkdirSync('out', { recursive: true });

/**
 * Runs `node args` (one contender's measurement) and parses the JSON it prints. A child that
 * dies (a wasm trap, an abort, a signal) or prints no JSON is a result, `{ crashed, on }`, and
 * one that outlives `timeoutS` is `{ timeout }`: the run goes on either way.
 */
function measure(args, { on, timeoutS } = {}) {
  const run = spawnSync('node', args, { encoding: 'utf8', maxBuffer: 1 << 28, ...(timeoutS ? { timeout: timeoutS * 1000 } : {}) });
  if (timeoutS && run.error?.code === 'ETIMEDOUT') return { timeout: timeoutS };
  if (run.status === 0) {
    try {
      const out = JSON.parse(run.stdout);
      process.stderr.write(run.stderr); // the child's own progress lines
      return out;
    } catch {
      // no JSON: a crash as well
    }
  }
  const error = run.stderr.split('\n').map((line) => line.trim()).find((line) => /^\w*(Error|Exception)\b/.test(line));
  const reason = error ?? (run.error ? String(run.error.message) : run.signal ? `killed by ${run.signal}` : run.status ? `exit ${run.status}` : 'no JSON printed');
  log(`crashed on ${on}: ${reason}`);
  return { crashed: reason, on };
}
const crashed = (r) => r && typeof r === 'object' && 'crashed' in r;
const save = () => writeFileSync('out/results.json', JSON.stringify(results, null, 1));

const results = {
  machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memGB: +(os.totalmem() / 2 ** 30).toFixed(1), node: process.version, loadavg: os.loadavg() },
  startedAt: new Date().toISOString(),
};
corpusFile('chunks.json');

// ------------------------------------------------------------------ cold start
if (!SKIP.has('init')) {
  results.init = {};
  for (let run = 0; run < INIT_RUNS; run++) {
    for (const c of contenders) for (const e of ENCODINGS) {
      const out = measure(['--expose-gc', 'probe-init.mjs', c.name, e], { on: `the cold start (${e})` });
      ((results.init[c.name] ??= {})[e] ??= []).push(out);
    }
  }
  log('cold start done');
  save();
}

// ------------------------------------------------------------------ throughput + exactness
if (!SKIP.has('throughput')) {
  results.throughput = {};
  for (const c of contenders) for (const e of ENCODINGS) {
    log(`throughput ${c.name} ${e}`);
    const out = measure(['--expose-gc', 'worker-throughput.mjs', c.name, e, 'corpus', String(c.slow ? 1 : REPS), '0', '30'], { on: `the ${e} corpus` });
    (results.throughput[c.name] ??= {})[e] = out;
  }
  // Exactness: every contender against tiktoken (the official package) chunk by chunk, message
  // by message and on the whole corpus as one string.
  for (const e of ENCODINGS) {
    const ref = results.throughput.tiktoken?.[e];
    for (const [name, byE] of Object.entries(results.throughput)) {
      const r = byE[e];
      if (!ref || crashed(ref) || crashed(r)) continue;
      r.exact = {
        chunkMismatches: r.chunkCounts.filter((n, i) => n !== ref.chunkCounts[i]).length,
        messageMismatches: r.convCounts.filter((n, i) => n !== ref.convCounts[i]).length,
        wholeEqual: r.wholeCount === ref.wholeCount,
      };
    }
  }
  for (const byE of Object.values(results.throughput)) for (const r of Object.values(byE)) { delete r.chunkCounts; delete r.convCounts; }
  save();
}

// ------------------------------------------------------------------ sizes
if (!SKIP.has('sizes')) {
  log('sizes');
  results.sizes = measure(['sizes.mjs'], { on: 'the bundle sizes' });
  if (crashed(results.sizes)) delete results.sizes;
  save();
}

// ------------------------------------------------------------------ hard inputs (linearity)
if (!SKIP.has('hard')) {
  log('hard inputs, 100 kB vs 1 MB');
  results.hard = {};
  const { hardInputs } = await import('./hard-inputs.mjs');
  const HARD_BUDGET_S = Number(opt['hard-budget'] ?? 20);
  for (const c of contenders) {
    if (c.slow) continue; // js-tiktoken is quadratic here (the shared RESULTS.md): minutes
    results.hard[c.name] = {};
    const inputs = Object.keys(hardInputs(10)).filter((k) => !opt.inputs || opt.inputs.split(',').includes(k));
    for (const input of inputs) {
      // The child reports a count that throws itself ({crashed, on: '1 MB of spaces'}); a child
      // that dies outright is a crash on this input.
      const out = measure(['hard-inputs.mjs', c.name, input], { on: `100 kB or 1 MB of ${input}`, timeoutS: HARD_BUDGET_S });
      results.hard[c.name][input] = out.timeout || crashed(out) ? out : out[input];
      if (crashed(out[input])) log(`${c.name} crashed on ${out[input].on}: ${out[input].crashed}`);
    }
  }
  save();
}

// ------------------------------------------------------------------ planning vs trimMessages
if (!SKIP.has('plan')) {
  log('planning a 2,000-message conversation; LangChain trimMessages on the same');
  results.plan = measure(['--expose-gc', 'plan.mjs'], { on: 'planning' });
}
results.finishedAt = new Date().toISOString();
save();

// ------------------------------------------------------------------ report
const md = [];
const M = results.machine;
md.push(`${M.cpus} cores (${M.cpuModel}), Node ${M.node}, load ${M.loadavg.map((x) => x.toFixed(1)).join('/')}. Medians; MB = 10^6 UTF-8 bytes. Ratio = how many times better we are (> 1: ahead).`, '');
const peers = contenders.filter((c) => c.name !== OURS).map((c) => c.name);
if (results.init) {
  md.push('### Cold start: fresh process, import → first count (ms)', '');
  md.push(`| encoding | ${contenders.map((c) => c.name).join(' | ')} | ${peers.map((p) => `vs ${p}`).join(' | ')} |`);
  md.push(`|---|${contenders.map(() => '---').join('|')}|${peers.map(() => '---').join('|')}|`);
  for (const e of ENCODINGS) {
    const runs = (name) => results.init[name][e].filter((r) => !crashed(r));
    const ms = Object.fromEntries(contenders.map((c) => [c.name, runs(c.name).length ? median(runs(c.name).map((r) => r.totalMs)) : undefined]));
    const cell = (name) => (ms[name] === undefined ? `crashed on ${results.init[name][e][0].on}: ${results.init[name][e][0].crashed}` : f(ms[name]));
    md.push(`| ${e} | ${contenders.map((c) => cell(c.name)).join(' | ')} | ${peers.map((p) => (ms[p] === undefined || ms[OURS] === undefined ? '–' : `${f(ms[p] / ms[OURS])}×`)).join(' | ')} |`);
  }
  md.push('');
}
if (results.throughput) {
  md.push('### Counting throughput on the corpus (5.25 MB, 458 chunks one by one)', '');
  md.push('| contender | encoding | warm MB/s | first pass MB/s | one 5 MB string MB/s | 2,000 messages ms | short message µs | exact vs tiktoken |');
  md.push('|---|---|---|---|---|---|---|---|');
  const speed = {};
  for (const c of contenders) for (const e of ENCODINGS) {
    const r = results.throughput[c.name][e];
    if (crashed(r)) {
      md.push(`| ${c.name} | ${e} | crashed on ${r.on}: ${r.crashed} | – | – | – | – | – |`);
      continue;
    }
    const warm = median(r.corpusMs.map((ms) => r.corpusBytes / 1e3 / ms));
    const first = r.corpusBytes / 1e3 / r.firstCorpusMs;
    const whole = r.wholeMs.length ? median(r.wholeMs.map((ms) => r.wholeBytes / 1e3 / ms)) : r.wholeBytes / 1e3 / r.firstWholeMs;
    (speed[c.name] ??= {})[e] = { warm, first };
    const ex = r.exact ? (r.exact.chunkMismatches + r.exact.messageMismatches === 0 && r.exact.wholeEqual ? 'yes' : `NO (${r.exact.chunkMismatches} chunks, ${r.exact.messageMismatches} msgs)`) : '–';
    md.push(`| ${c.name} | ${e} | ${f(warm, 2)} | ${f(first, 2)} | ${f(whole, 2)} | ${f(median(r.convMs), 0)} | ${f(median(r.tinyUs), 2)} | ${ex} |`);
  }
  md.push('', '**Ratios** (our MB/s ÷ theirs):', '');
  md.push(`| encoding | pass | ${peers.map((p) => `vs ${p}`).join(' | ')} |`);
  md.push(`|---|---|${peers.map(() => '---').join('|')}|`);
  for (const e of ENCODINGS) for (const pass of ['warm', 'first']) {
    md.push(`| ${e} | ${pass} | ${peers.map((p) => (speed[OURS]?.[e] && speed[p]?.[e] ? `${f(speed[OURS][e][pass] / speed[p][e][pass], 2)}×` : '–')).join(' | ')} |`);
  }
  results.speedRatios = speed;
  md.push('');
}
if (results.sizes) {
  md.push('### Shipped size (esbuild minified ESM, browser; .wasm as assets; gzip -9, kB)', '');
  md.push('| bundle | what | JS | .wasm | total gzip |');
  md.push('|---|---|---|---|---|');
  for (const s of results.sizes) md.push(`| ${s.name} | ${s.set} | ${f(s.jsGzip / 1e3, 0)} | ${f(s.wasmGzip / 1e3, 0)} | **${f(s.totalGzip / 1e3, 0)}** |`);
  md.push('');
}
if (results.hard) {
  md.push('### Hard inputs: time for 1 MB ÷ time for 100 kB (10 = linear)', '');
  const kinds = Object.keys(Object.values(results.hard)[0]);
  md.push(`| input | ${Object.keys(results.hard).map((n) => `${n} ratio | ${n} MB/s at 1 MB`).join(' | ')} |`);
  md.push(`|---|${Object.keys(results.hard).map(() => '---|---').join('|')}|`);
  const cell = (h) => (!h ? '– | –' : crashed(h) ? `crashed on ${h.on} (${h.crashed}) | –` : h.timeout ? `> ${h.timeout} s for 100 kB + 1 MB | –` : `${f(h.ratio, 1)} | ${f(h.mbps1m, 2)}`);
  for (const k of kinds) md.push(`| ${k} | ${Object.values(results.hard).map((h) => cell(h[k])).join(' | ')} |`);
  md.push('');
}
if (results.plan && crashed(results.plan)) md.push(`### Planning: crashed (${results.plan.crashed})`, '');
else if (results.plan) {
  const p = results.plan;
  md.push(`### Planning ${p.messages} messages (${p.tokens.toLocaleString('en')} tokens) for a ${p.window.toLocaleString('en')}-token window`, '');
  md.push('| what | ms |', '|---|---|');
  md.push(`| context-compactor: first plan (every message counted) | ${f(p.firstPlanMs, 1)} |`);
  md.push(`| context-compactor: first plan in a warmed-up process (new compactor, every text new) | ${f(p.firstPlanWarmMs, 1)} |`);
  md.push(`| context-compactor: re-plan after one appended message, over the trigger (transcript and summary prompt re-planned) | ${f(p.replanMs, 2)} |`);
  md.push(`| context-compactor: re-plan after one appended message, under the trigger (${p.underWindow?.toLocaleString('en-US')} window) | ${f(p.replanUnderMs, 2)} |`);
  if (p.replanRecordCompactedMs !== undefined) {
    md.push(`| context-compactor: re-plan after one appended message, record in place (${p.recordedEdits} edits), on the compacted output (a long-lived host) | ${f(p.replanRecordCompactedMs, 2)} |`);
    md.push(`| context-compactor: the same on the raw history (a stateless host: the record replayed onto it) | ${f(p.replanRecordRawMs, 2)} |`);
  }
  md.push(`| context-compactor: usage() after one appended message | ${f(p.usageMs, 2)} |`);
  for (const t of p.trim) md.push(`| LangChain trimMessages, ${t.counter} | ${f(t.ms, 0)} |`);
  if (p.stateBytes !== undefined) md.push('', `State after that compaction (what \`statePath\` saves): ${p.stateBytes.toLocaleString('en')} bytes of JSON.`);
  md.push('', `Peak RSS of the planning process: ${f(p.maxRssMB, 0)} MB (Node alone: ~${f(p.baseRssMB, 0)} MB).`, '');
}
writeFileSync('out/results.md', md.join('\n'));
console.log(md.join('\n'));
