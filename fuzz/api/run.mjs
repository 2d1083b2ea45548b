#!/usr/bin/env node
// The API fuzz harness: generated conversations through the npm package's public API (see
// README.md in this folder).
//
//   node fuzz/api/run.mjs --seconds 60 [--seed S] [--cases N] [--skip-class C]...
//   node fuzz/api/run.mjs --repro fuzz/api/repros/<class>-<seed>.json
//
// One worker thread runs the cases, one at a time; this thread is its watchdog (a call that
// starves the worker's event loop cannot time itself out). On a violation the case is minimized
// and written to fuzz/api/repros/<class>-<seed>.json (the first of each class).
import { Worker } from 'node:worker_threads';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { caseSeed, generate } from './gen.mjs';
import { candidates, size } from './shrink.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');

// ---------------------------------------------------------------------------------------------
// Arguments.

function parseArgs(argv) {
  const args = { seconds: undefined, seed: undefined, cases: undefined, skip: new Set(), repro: undefined, minimize: true, minimizeSeconds: 60, out: join(HERE, 'repros'), shard: [0, 1], from: 0, quiet: false, progress: 10 };
  const value = (i) => {
    if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
    return argv[i + 1];
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    switch (a) {
      case '--seconds': args.seconds = Number(value(i++)); break;
      case '--seed': args.seed = value(i++); break;
      case '--cases': args.cases = Number(value(i++)); break;
      case '--skip-class': for (const c of value(i++).split(',')) args.skip.add(c.trim()); break;
      case '--repro': args.repro = value(i++); break;
      case '--no-minimize': args.minimize = false; break;
      case '--minimize': args.shrink = true; break;
      case '--minimize-seconds': args.minimizeSeconds = Number(value(i++)); break;
      case '--out': args.out = value(i++); break;
      case '--shard': { const [k, n] = value(i++).split('/').map(Number); args.shard = [k, n]; break; }
      case '--progress': args.progress = Number(value(i++)); break;
      case '--from': args.from = Number(value(i++)); break;
      case '--quiet': args.quiet = true; break;
      case '-h':
      case '--help':
        console.log(readFileSync(join(HERE, 'README.md'), 'utf8').split('\n## ')[1] ?? 'see fuzz/api/README.md');
        process.exit(0);
        break;
      default: throw new Error(`unknown argument ${a} (see fuzz/api/README.md)`);
    }
  }
  if (args.seconds === undefined && args.cases === undefined && !args.repro) args.seconds = 60;
  if (args.seed === undefined) args.seed = String(Date.now() % 1_000_000_000);
  return args;
}

// ---------------------------------------------------------------------------------------------
// The worker and its watchdog.

class Runner {
  constructor() {
    this.worker = undefined;
    this.ready = undefined;
    this.id = 0;
    this.crashes = 0;
    this.strays = [];
  }

  start() {
    const worker = new Worker(new URL('./worker.mjs', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: 3_072 } });
    this.worker = worker;
    this.ready = new Promise((resolve, reject) => {
      const onMessage = (msg) => {
        if (msg.type === 'ready') { worker.off('error', onError); resolve(); }
      };
      const onError = (error) => reject(error);
      worker.on('message', onMessage);
      worker.once('error', onError);
    });
    worker.on('message', (msg) => {
      if (msg.type === 'stray') this.strays.push(msg.message);
    });
    return this.ready;
  }

  async kill() {
    const worker = this.worker;
    this.worker = undefined;
    if (worker) await worker.terminate();
  }

  /** Runs a spec; resolves to its result, or to a hang or crash violation (the worker is then
   * replaced). */
  async run(spec) {
    if (!this.worker) await this.start();
    await this.ready;
    const worker = this.worker;
    const id = ++this.id;
    return new Promise((resolve) => {
      let last = Date.now();
      let deadline = 60_000;
      let lastName = 'start';
      const started = Date.now();
      let done = false;
      const finish = (result) => {
        if (done) return;
        done = true;
        clearInterval(watch);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        resolve(result);
      };
      const onMessage = (msg) => {
        if (msg.type === 'tick') {
          last = Date.now();
          deadline = msg.deadline;
          lastName = msg.name;
        } else if (msg.type === 'result' && msg.id === id) {
          finish(msg);
        }
      };
      const onError = (error) => {
        this.crashes++;
        this.worker = undefined;
        finish({ violations: [{ class: 'crash', message: `the worker died: ${error?.stack ?? error}`.slice(0, 1_000) }], stats: { calls: 0, summarizerCalls: 0, ms: Date.now() - started }, crashed: true });
      };
      const onExit = (code) => onError(new Error(`exit code ${code}`));
      const watch = setInterval(() => {
        // No word from the worker past the running call's deadline (its own watchdog would have
        // answered): its event loop is starved, or it is stuck in the core.
        if (Date.now() - last > deadline + 15_000) {
          this.worker = undefined;
          worker.terminate();
          finish({ violations: [{ class: 'hang', message: `the worker stopped answering during ${lastName} (${Math.round((Date.now() - last) / 1000)} s without an event-loop turn): the call starved the event loop or never left the core` }], stats: { calls: 0, summarizerCalls: 0, ms: Date.now() - started }, killed: true });
        }
      }, 500);
      worker.on('message', onMessage);
      worker.once('error', onError);
      worker.once('exit', onExit);
      worker.postMessage({ type: 'run', id, spec });
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Minimizing and repro files.

async function minimize(runner, spec, cls, seconds, log) {
  const until = Date.now() + seconds * 1000;
  let best = spec;
  let message;
  let attempts = 0;
  let accepted = 0;
  let progress = true;
  // A smaller case counts when it still fails with this class and with no class the original
  // did not have (a cut that breaks the conversation another way is not the same failure).
  const original = new Set((await runner.run(spec)).violations.map((v) => v.class));
  while (progress && Date.now() < until) {
    progress = false;
    for (const candidate of candidates(best)) {
      if (Date.now() >= until) break;
      attempts++;
      const result = await runner.run(candidate);
      const same = result.violations.find((v) => v.class === cls);
      if (same && result.violations.every((v) => original.has(v.class))) {
        best = candidate;
        message = same.message;
        accepted++;
        progress = true;
        break;
      }
    }
  }
  log(`  minimized ${cls}: ${size(spec)} → ${size(best)} bytes of spec, ${accepted} cuts in ${attempts} tries`);
  return { spec: best, message, attempts, accepted };
}

function safe(text) {
  return String(text).replace(/[^\w.-]+/g, '_').slice(0, 60);
}

function writeRepro(dir, cls, seed, found, minimized) {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${safe(cls)}-${safe(seed)}.json`);
  const file = relative(ROOT, path);
  writeFileSync(path, `${JSON.stringify({
    class: cls,
    seed,
    message: minimized?.message ?? found.message,
    original: found.message,
    minimized: minimized ? { attempts: minimized.attempts, cuts: minimized.accepted } : null,
    command: `node fuzz/api/run.mjs --repro ${file}`,
    spec: minimized?.spec ?? found.spec,
  }, null, 1)}\n`);
  return file;
}

// ---------------------------------------------------------------------------------------------
// Main.

async function replay(args) {
  const repro = JSON.parse(readFileSync(args.repro, 'utf8'));
  const spec = repro.spec ?? repro;
  const runner = new Runner();
  const result = await runner.run(spec);
  if (args.shrink && result.violations.some((v) => v.class === repro.class)) {
    // --repro FILE --minimize: minimize it further (or at all) and write it again.
    const minimized = await minimize(runner, spec, repro.class, args.minimizeSeconds, console.log);
    const file = writeRepro(args.out, repro.class, spec.seed, { message: repro.message, spec }, minimized);
    console.log(`minimized repro: ${file}`);
  }
  await runner.kill();
  console.log(`repro ${args.repro}: class ${repro.class ?? '(none)'}, seed ${spec.seed}, kind ${spec.kind}`);
  console.log(`calls ${result.stats.calls}, summarizer calls ${result.stats.summarizerCalls}, ${result.stats.ms} ms`);
  for (const v of result.violations) console.log(`  ${v.class}: ${v.message}`);
  const still = result.violations.some((v) => v.class === repro.class);
  console.log(result.violations.length === 0 ? 'no violation: fixed' : still ? `reproduces (${repro.class})` : 'fails, but with another class');
  process.exitCode = result.violations.length > 0 ? 1 : 0;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.repro) return replay(args);
  const log = (...a) => !args.quiet && console.log(...a);
  const runner = new Runner();
  const started = Date.now();
  const end = args.seconds !== undefined ? started + args.seconds * 1000 : Infinity;
  const totals = { conversations: 0, calls: 0, summarizerCalls: 0, hangs: 0, crashes: 0, passthrough: 0, documented: 0, minimizeMs: 0, checked: 0, replanExcused: 0 };
  const classes = new Map(); // class → { count, seeds, repro, message }
  const [shard, shards] = args.shard;
  log(`API fuzz: seed ${args.seed}${args.cases !== undefined ? `, ${args.cases} cases` : ''}${args.seconds !== undefined ? `, ${args.seconds} s` : ''}${shards > 1 ? `, shard ${shard}/${shards}` : ''}${args.skip.size ? `, skipping ${[...args.skip].join(', ')}` : ''}`);
  let nextProgress = started + args.progress * 1000;
  for (let n = args.from; ; n++) {
    if (args.cases !== undefined && n - args.from >= args.cases) break;
    if (Date.now() >= end) break;
    const seed = caseSeed(args.seed, n * shards + shard);
    const spec = generate(seed);
    const result = await runner.run(spec);
    totals.conversations++;
    totals.calls += result.stats.calls;
    totals.summarizerCalls += result.stats.summarizerCalls;
    totals.passthrough += result.passthrough ?? 0;
    totals.checked += result.stats.checked ?? 0;
    totals.replanExcused += result.stats.replanExcused ?? 0;
    totals.documented += result.documented?.length ?? 0;
    for (const v of result.violations) {
      if (v.class === 'hang' || v.class === 'hang-store') totals.hangs++;
      if (v.class === 'crash' || v.class === 'untyped-error') totals.crashes++;
      let entry = classes.get(v.class);
      if (!entry) classes.set(v.class, (entry = { count: 0, seeds: [], repro: undefined, message: v.message }));
      entry.count++;
      if (entry.seeds.length < 5) entry.seeds.push(seed);
      const skipped = args.skip.has(v.class);
      log(`case ${seed} (${spec.kind}): ${v.class}${skipped ? ' (skipped class)' : ''}: ${v.message.slice(0, 400)}`);
      if (!entry.repro) {
        const t0 = Date.now();
        const minimized = args.minimize && !skipped ? await minimize(runner, spec, v.class, args.minimizeSeconds, log) : undefined;
        totals.minimizeMs += Date.now() - t0;
        entry.repro = writeRepro(args.out, v.class, seed, { message: v.message, spec }, minimized);
        log(`  repro: ${entry.repro}`);
      }
    }
    if (Date.now() >= nextProgress) {
      nextProgress = Date.now() + args.progress * 1000;
      const counts = [...classes].map(([c, e]) => `${c} ${e.count}`).join(', ') || 'none';
      log(`[${Math.round((Date.now() - started) / 1000)} s] ${totals.conversations} conversations, ${totals.calls} calls; violations: ${counts}`);
    }
  }
  await runner.kill();
  const seconds = (Date.now() - started) / 1000;
  const failing = [...classes].filter(([c]) => !args.skip.has(c));
  console.log('');
  console.log(`seed ${args.seed}${shards > 1 ? ` shard ${shard}/${shards}` : ''}`);
  console.log(`conversations    ${totals.conversations}`);
  console.log(`calls            ${totals.calls}`);
  console.log(`summarizer calls ${totals.summarizerCalls}`);
  console.log(`seconds          ${seconds.toFixed(1)} (minimizing ${(totals.minimizeMs / 1000).toFixed(1)})`);
  console.log(`hangs            ${totals.hangs}`);
  console.log(`crashes          ${totals.crashes}`);
  console.log(`results checked  ${totals.checked} (re-plans with work, excused by a failed action, a cancel or a note: ${totals.replanExcused})`);
  console.log(`app errors passed through ${totals.passthrough}; documented limits met ${totals.documented}`);
  if (runner.strays.length) console.log(`unhandled rejections between cases: ${runner.strays.length} (${runner.strays[0]})`);
  console.log(`violations by class (conversations):${classes.size ? '' : ' none'}`);
  for (const [c, e] of [...classes].sort((a, b) => b[1].count - a[1].count)) {
    console.log(`  ${c.padEnd(18)} ${String(e.count).padStart(6)}${args.skip.has(c) ? '  (skipped)' : ''}  repro ${e.repro ?? '-'}  seeds ${e.seeds.join(' ')}`);
  }
  process.exitCode = failing.length > 0 ? 1 : 0;
}

main().catch((error) => {
  console.error(error?.stack ?? error);
  process.exitCode = 2;
});
