#!/usr/bin/env node
// Runs the shared scenario in every runtime, each as a child process with a hard timeout.
//
//   node run-all.mjs [--only node,deno,bun,workerd,edge,chromium] [--fixture path.json]
//                    [--timeout 120] [--verbose]
//
// Prints each runtime's checks, then a final line `N passed, N failed` (checks across all
// runtimes). A runtime that fails to start, crashes, times out or reports nothing counts as a
// failed check — never as skipped. Exit code 1 on any failure.
import { spawn } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESULT_MARKER, formatReport } from './runners/common.mjs';

const here = dirname(fileURLToPath(import.meta.url));

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  if (i >= 0) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`--${name}=`));
  return eq ? eq.slice(name.length + 3) : fallback;
};
const verbose = args.includes('--verbose');
const timeoutMs = Number(opt('timeout', '120')) * 1000;
const fixture = await withTokenizer(resolve(opt('fixture', join(here, '../fixtures/token-counts.json'))));

/**
 * The token-count fixture plus a non-OpenAI tokenizer for the scenario to load on demand: Gemma
 * 3's tokenizer.json (Gemini 2.x / 3's vocabulary; scripts/fetch-tokenizers.sh) and its expected
 * counts (tests/fixtures/hf-token-counts.json, from Python `tokenizers`), in one file every
 * runner already reads, with the counts of two tokenizers the package ships prebuilt (Qwen 3,
 * DeepSeek V3). Missing files leave `hf` out, which the scenario reports as a failure.
 */
async function withTokenizer(path) {
  const { readFile, writeFile, mkdir } = await import('node:fs/promises');
  const base = JSON.parse(await readFile(path, 'utf8'));
  const tokenizer = await readFile(join(here, '../../.tools/tokenizers/gemma3/tokenizer.json'), 'utf8').catch(() => null);
  const counts = JSON.parse(await readFile(join(here, '../fixtures/hf-token-counts.json'), 'utf8'));
  if (tokenizer) {
    base.hf = { name: 'gemma3', tokenizer, cases: counts.cases.map((c) => ({ name: c.name, text: c.text, count: c.gemma3 })) };
  }
  // The prebuilt tokenizers' expected counts (their data ships in the package: nothing to read).
  base.prebuilt = counts.cases.map((c) => ({ name: c.name, text: c.text, qwen3: c.qwen3, deepseek_v3: c.deepseek_v3 }));
  await mkdir(join(here, 'out'), { recursive: true });
  const out = join(here, 'out', 'fixture-with-tokenizer.json');
  await writeFile(out, JSON.stringify(base));
  return out;
}

// npx resolves the pinned binaries from tests/runtimes/node_modules/.bin (--no: never download).
const npx = (bin, ...rest) => ['npx', ['--no', bin, ...rest]];
const RUNTIMES = {
  node: async () => [process.execPath, ['runners/node.mjs', fixture]],
  deno: async () => {
    // Minimal permissions: read this directory (node_modules), the package (file: dependency is
    // a symlink, Deno reads through its real path) and the fixture. Nothing else.
    const pkg = await realpath(join(here, 'node_modules/context-compactor')).catch(() => join(here, 'node_modules'));
    return npx('deno', 'run', '--no-prompt', '--no-lock', '--node-modules-dir=manual',
      `--allow-read=${[here, pkg, fixture].join(',')}`, 'runners/deno.mjs', fixture);
  },
  bun: async () => npx('bun', 'runners/node.mjs', fixture),
  workerd: async () => [process.execPath, ['runners/workerd.mjs', fixture]],
  edge: async () => [process.execPath, ['runners/edge.mjs', fixture]],
  chromium: async () => [process.execPath, ['runners/browser.mjs', fixture]],
};

const only = opt('only');
const selected = only ? only.split(',').map((s) => s.trim()).filter(Boolean) : Object.keys(RUNTIMES);
const unknown = selected.filter((r) => !RUNTIMES[r]);
if (unknown.length) {
  console.error(`unknown runtime(s): ${unknown.join(', ')}; known: ${Object.keys(RUNTIMES).join(', ')}`);
  process.exit(2);
}

function run(cmd, argv) {
  return new Promise((done) => {
    const t0 = Date.now();
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let child;
    try {
      child = spawn(cmd, argv, {
        cwd: here,
        detached: true, // own process group, so a timeout kills browsers/workerd too
        env: { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', FORCE_COLOR: '0' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (e) {
      return done({ code: null, signal: null, stdout, stderr: String(e), timedOut, ms: 0 });
    }
    const killTree = () => { try { process.kill(-child.pid, 'SIGKILL'); } catch {} };
    const timer = setTimeout(() => { timedOut = true; killTree(); }, timeoutMs);
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    child.on('error', (e) => { stderr += `\nspawn error: ${e.message}`; });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      killTree(); // leftovers of a runner that exited (e.g. an orphaned browser)
      done({ code, signal, stdout, stderr, timedOut, ms: Date.now() - t0 });
    });
  });
}

const tail = (s, n = 1500) => (s.length > n ? '...' + s.slice(-n) : s).trim();
let passed = 0;
let failed = 0;
const summary = [];

for (const name of selected) {
  const [cmd, argv] = await RUNTIMES[name]();
  if (verbose) console.log(`$ ${cmd} ${argv.join(' ')}`);
  const r = await run(cmd, argv);
  const line = r.stdout.split('\n').find((l) => l.startsWith(RESULT_MARKER));
  let report;
  if (line) {
    try { report = JSON.parse(line.slice(RESULT_MARKER.length)); } catch {}
  }
  // npm's own warnings (e.g. about user config) are not the runtime's output.
  const stderr = r.stderr.split('\n').filter((l) => !/^npm (warn|notice)/.test(l)).join('\n');
  if (!report) {
    report = {
      runtime: name,
      checks: [{
        name: `${name} runner started and reported`,
        ok: false,
        detail: r.timedOut ? `timed out after ${timeoutMs / 1000} s` : `exit ${r.code ?? r.signal}, no report`,
      }],
      timings: {},
    };
  } else if (r.timedOut || r.code !== 0) {
    const allOk = report.checks.every((c) => c.ok);
    if (allOk || r.timedOut) {
      report.checks.push({ name: `${name} runner exited cleanly`, ok: false, detail: r.timedOut ? 'timed out' : `exit ${r.code ?? r.signal}` });
    }
  }
  report.timings = { ...report.timings, wallMs: r.ms };
  const p = report.checks.filter((c) => c.ok).length;
  const f = report.checks.length - p;
  passed += p;
  failed += f;
  summary.push(`${name.padEnd(9)} ${f ? 'FAIL' : 'ok  '} ${String(p).padStart(3)} passed ${String(f).padStart(3)} failed  ${(r.ms / 1000).toFixed(1)} s  (${report.runtime})`);
  console.log(formatReport({ ...report, runtime: `${name}: ${report.runtime}` }));
  const showStdout = verbose || !line;
  if ((f || verbose) && stderr.trim()) console.log(`    stderr:\n${tail(stderr).replace(/^/gm, '    | ')}`);
  if (showStdout && r.stdout.trim()) console.log(`    stdout:\n${tail(r.stdout.split('\n').filter((l) => !l.startsWith(RESULT_MARKER)).join('\n')).replace(/^/gm, '    | ')}`);
  console.log('');
}

console.log(summary.join('\n'));
console.log(`${passed} passed, ${failed} failed`);
process.exitCode = failed ? 1 : 0;
