// The frameworks suite: for each framework, a fresh minimal app made from the files in this
// folder installs the `npm pack` tarball of js/ (never a link), runs the framework's own
// production build with its default config, serves it, and asks for the README quick start
// (shared/quickstart.js) on a request: a large tool result is offloaded, the count is exact, the
// stored copy is byte for byte, and the recovery tool reads it back. Prints a table of
// framework × bundler × route → build, request, offload, exact count, time, and the bytes our
// package adds to the output (gzip).
//   node tests/frameworks/run.mjs [app ...]     apps: node next vite wrangler nuxt (default all)
// Needs Node 22 (wrangler 4 and AI SDK 7): scripts/setup.sh installs it into .tools/node22, and
// this runs every tool with it. Apps build in tests/frameworks/.work/ (kept between runs, so that
// their node_modules are reused).
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const work = join(here, '.work');
const node22 = join(root, '.tools', 'node22', 'node_modules', 'node', 'bin');
const env = { ...process.env, PATH: `${node22}:${process.env.PATH}`, NEXT_TELEMETRY_DISABLED: '1', NUXT_TELEMETRY_DISABLED: '1', WRANGLER_SEND_METRICS: 'false', CI: '1', NO_COLOR: '1' };
const apps = process.argv.slice(2).length ? process.argv.slice(2) : ['node', 'next', 'vite', 'wrangler', 'nuxt'];
const rows = [];
let port = 3300;

const log = (s) => console.log(`\x1b[1m[frameworks]\x1b[0m ${s}`);
const kb = (n) => (n / 1024).toFixed(0);
const gz = (file) => gzipSync(readFileSync(file), { level: 9 }).length;

/** Runs a command to its end; throws with its output's tail on failure. */
function run(cmd, args, cwd, { timeout = 600_000, extraEnv = {} } = {}) {
  const r = spawnSync(cmd, args, { cwd, env: { ...env, ...extraEnv }, encoding: 'utf8', timeout, maxBuffer: 64 << 20 });
  const out = `${r.stdout ?? ''}${r.stderr ?? ''}`;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${relative(root, cwd)}) failed${r.signal ? ` by ${r.signal}` : ''}:\n${out.slice(-3000)}`);
  return out;
}

/** Starts a server, waits until `url` answers, returns a stop function. */
async function serve(cmd, args, cwd, url, extraEnv = {}) {
  const child = spawn(cmd, args, { cwd, env: { ...env, ...extraEnv }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const stop = () => {
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${cmd} ${args.join(' ')} exited (${child.exitCode}):\n${output.slice(-3000)}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      return { stop, output: () => output };
    } catch {
      if (Date.now() > deadline) { stop(); throw new Error(`${url} did not answer in 90 s:\n${output.slice(-3000)}`); }
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}

/** The checks every quick-start answer must pass; returns [] when it does. */
function problems(result) {
  if (!result || typeof result !== 'object') return ['no JSON answer'];
  if (result.error) return [`error: ${String(result.error).slice(0, 600)}`];
  const out = [];
  if (result.tokens !== result.expectedTokens) out.push(`count ${result.tokens} != tiktoken's ${result.expectedTokens}`);
  if (!/^\/tool_outputs\/search_[0-9a-f]+\.txt$/.test(result.offloadedPath ?? '')) out.push(`no offload path in the second prompt (${result.offloadedPath})`);
  if (result.stored !== true) out.push('the stored copy is not the tool output byte for byte');
  if (typeof result.readBack !== 'string' || !result.readBack.includes(result.expectedLine)) out.push(`read_file did not return the stored lines: ${JSON.stringify(result.readBack)?.slice(0, 200)}`);
  if (!(result.largestPromptChars < result.logChars / 2)) out.push(`a prompt of ${result.largestPromptChars} chars: the log reached the model`);
  if (result.text !== 'The ERROR lines cluster in src/router.') out.push(`answer ${JSON.stringify(result.text)}`);
  return out;
}

/** Asks `url` for the quick start and records a row. */
async function request(row, url) {
  const t0 = Date.now();
  let result;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
    const text = await res.text();
    try { result = JSON.parse(text); } catch { result = { error: `HTTP ${res.status}: ${text.slice(0, 600)}` }; }
  } catch (error) {
    result = { error: String(error) };
  }
  record(row, result, Date.now() - t0);
}

function record(row, result, ms) {
  const issues = problems(result);
  rows.push({ ...row, request: !result?.error, offload: /^\/tool_outputs\//.test(result?.offloadedPath ?? '') && result?.stored === true, exact: result?.tokens === result?.expectedTokens && result?.tokens !== undefined, ms, ok: issues.length === 0, issues });
}

function fail(row, error) {
  rows.push({ ...row, build: row.build ?? false, request: false, offload: false, exact: false, ms: 0, ok: false, issues: [String(error?.message ?? error).slice(0, 3000)] });
}

/** Makes `.work/<app>` from `<app>/` and installs its pinned packages plus the tarball. */
function prepare(app, tarball, quickstartDir) {
  const dir = join(work, app);
  mkdirSync(dir, { recursive: true });
  mkdirSync(join(dir, quickstartDir), { recursive: true });
  cpSync(join(here, app), dir, { recursive: true, filter: (src) => !/node_modules|\.next|\.output|\.nuxt|dist$|\.wrangler/.test(relative(here, src)) });
  for (const file of readdirSync(join(here, 'shared'))) cpSync(join(here, 'shared', file), join(dir, quickstartDir, file));
  cpSync(join(root, 'tests', 'runtimes', 'big-text.mjs'), join(dir, quickstartDir, 'big-text.mjs'));
  const pkg = JSON.parse(readFileSync(join(here, app, 'package.json'), 'utf8'));
  pkg.dependencies = { ...pkg.dependencies, 'context-compactor': `file:${relative(dir, tarball)}` };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
  // A fresh copy of the package each run: the tarball's name does not change with its content.
  rmSync(join(dir, 'node_modules', 'context-compactor'), { recursive: true, force: true });
  rmSync(join(dir, 'package-lock.json'), { force: true });
  const t0 = Date.now();
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], dir);
  const installed = join(dir, 'node_modules', 'context-compactor');
  if (statSync(installed).isSymbolicLink?.() || !existsSync(join(installed, 'dist', 'wasm', 'context_compactor_bg.wasm'))) throw new Error('the package is not installed from its tarball');
  log(`${app}: installed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return dir;
}

/** Gzip bytes of files under `dir` whose path matches `test`. */
function sizeOf(dir, test) {
  let total = 0;
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (test(p)) total += gz(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return total;
}

const suites = {
  async node(tarball) {
    const dir = prepare('node', tarball, '.');
    const base = { framework: 'Node 22', bundler: 'none', build: true };
    for (const [route, cmd, args] of [
      ['ESM', join(node22, 'node'), ['esm.mjs']],
      ['CommonJS require', join(node22, 'node'), ['cjs.cjs']],
      ['Node 20 ESM', process.execPath, ['esm.mjs']],
      ['Deno (npm packages)', join(root, 'tests/runtimes/node_modules/.bin/deno'), ['run', '-A', 'esm.mjs']],
      ['Bun', join(root, 'tests/runtimes/node_modules/.bin/bun'), ['esm.mjs']],
    ]) {
      const row = { ...base, framework: route.startsWith('Node 20') ? `Node ${process.versions.node}` : route.startsWith('Deno') || route.startsWith('Bun') ? route.split(' ')[0] : 'Node 22', route };
      const t0 = Date.now();
      try {
        const out = run(cmd, args, dir).trim().split('\n').at(-1);
        const result = JSON.parse(out);
        if (route === 'CommonJS require') {
          const ok = result.required === 'function' && result.tokens === 2;
          rows.push({ ...row, request: true, offload: null, exact: result.tokens === 2, ms: Date.now() - t0, ok, issues: ok ? [] : [`require gave ${out}`] });
        } else record(row, result, Date.now() - t0);
      } catch (error) {
        fail(row, error);
      }
    }
  },

  async next(tarball) {
    const dir = prepare('next', tarball, 'lib');
    // What the README says for the lite Edge route: serve o200k_base's data from public/.
    mkdirSync(join(dir, 'public'), { recursive: true });
    cpSync(join(dir, 'node_modules/context-compactor/dist/ranks/o200k_base.wasm'), join(dir, 'public/o200k_base.wasm'));
    for (const bundler of ['turbopack', 'webpack']) {
      const base = { framework: 'Next.js 16', bundler };
      const t0 = Date.now();
      try {
        rmSync(join(dir, '.next'), { recursive: true, force: true });
        run(join(dir, 'node_modules/.bin/next'), ['build', ...(bundler === 'webpack' ? ['--webpack'] : [])], dir);
      } catch (error) {
        for (const route of ['Node route', 'Edge route', 'proxy (middleware)', 'Edge route, lite']) fail({ ...base, route }, error);
        continue;
      }
      const buildMs = Date.now() - t0;
      log(`next (${bundler}): built in ${(buildMs / 1000).toFixed(1)} s`);
      const manifest = JSON.parse(readFileSync(join(dir, '.next/server/middleware-manifest.json'), 'utf8'));
      const edgeSize = (page) => {
        const fn = manifest.functions[page];
        if (!fn) return undefined;
        const files = [...fn.files, ...(fn.wasm ?? []).map((w) => w.filePath), ...(fn.assets ?? []).map((a) => a.filePath)];
        return { total: files.reduce((n, f) => n + gz(join(dir, '.next', f)), 0), wasm: (fn.wasm ?? []).reduce((n, w) => n + gz(join(dir, '.next', w.filePath)), 0) };
      };
      const p = port++;
      let server;
      try {
        server = await serve(join(dir, 'node_modules/.bin/next'), ['start', '-p', String(p)], dir, `http://127.0.0.1:${p}/`);
        const nodeWasm = sizeOf(join(dir, '.next/server'), (f) => f.endsWith('.wasm') && !f.includes('/edge/'));
        await request({ ...base, route: 'Node route', build: true, size: nodeWasm, sizeNote: 'wasm files in .next/server (Node)' }, `http://127.0.0.1:${p}/api/node`);
        const edge = edgeSize('/api/edge/route');
        await request({ ...base, route: 'Edge route', build: true, size: edge?.total, sizeNote: `Edge function, all files (ours: wasm ${kb(edge?.wasm ?? 0)} KiB)`, limit: 'Vercel Pro 2 MB (Hobby: the lite route)', limitBytes: 2_000_000 }, `http://127.0.0.1:${p}/api/edge`);
        await request({ ...base, route: 'proxy (middleware)', build: true }, `http://127.0.0.1:${p}/proxy/quickstart`);
        const lite = edgeSize('/api/edge-lite/route');
        await request({ ...base, route: 'Edge route, lite', build: true, size: lite?.total, sizeNote: `Edge function, all files (ours: wasm ${kb(lite?.wasm ?? 0)} KiB; ranks from public/)`, limit: 'Vercel Hobby 1 MB', limitBytes: 1_000_000 }, `http://127.0.0.1:${p}/api/edge-lite`);
      } catch (error) {
        fail({ ...base, route: 'server', build: true }, error);
      } finally {
        server?.stop();
      }
    }
  },

  async vite(tarball) {
    const dir = prepare('vite', tarball, 'src');
    const base = { framework: 'Vite 8', bundler: 'Rolldown (vite build)', route: 'browser SPA (Chromium)' };
    try {
      rmSync(join(dir, 'dist'), { recursive: true, force: true });
      run(join(dir, 'node_modules/.bin/vite'), ['build'], dir);
    } catch (error) {
      return fail(base, error);
    }
    const p = port++;
    let server;
    try {
      server = await serve(join(dir, 'node_modules/.bin/vite'), ['preview', '--port', String(p), '--strictPort', '--host', '127.0.0.1'], dir, `http://127.0.0.1:${p}/`);
      const t0 = Date.now();
      const dom = run('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${join(work, 'chromium-profile')}`, '--virtual-time-budget=60000', '--dump-dom', `http://127.0.0.1:${p}/`], dir, { timeout: 120_000 });
      const match = /<pre id="result"[^>]*>([\s\S]*?)<\/pre>/.exec(dom);
      const text = match ? match[1].replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&') : '';
      let result;
      try { result = JSON.parse(text); } catch { result = { error: `page shows: ${text.slice(0, 400) || dom.slice(0, 400)}` }; }
      // What the browser downloads from our package: the .wasm assets (core, then o200k on init).
      const assets = readdirSync(join(dir, 'dist', 'assets'));
      const loaded = assets.filter((f) => /^(context_compactor_bg|o200k_base).*\.wasm$/.test(f));
      record({ ...base, build: true, size: loaded.reduce((n, f) => n + gz(join(dir, 'dist', 'assets', f)), 0), sizeNote: `downloaded .wasm (core + o200k); ${assets.filter((f) => f.endsWith('.wasm')).length} .wasm emitted` }, result, Date.now() - t0);
    } catch (error) {
      fail({ ...base, build: true }, error);
    } finally {
      server?.stop();
    }
  },

  async wrangler(tarball) {
    const dir = prepare('wrangler', tarball, 'src');
    const base = { framework: 'Cloudflare Workers', bundler: 'wrangler 4 (esbuild)', route: 'Worker fetch (workerd)' };
    let size;
    try {
      rmSync(join(dir, 'dist'), { recursive: true, force: true });
      const out = run(join(dir, 'node_modules/.bin/wrangler'), ['deploy', '--dry-run', '--outdir', 'dist'], dir);
      const m = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(out);
      if (!m) throw new Error(`no upload size in wrangler's output:\n${out.slice(-1500)}`);
      size = Math.round(Number(m[2]) * 1024);
    } catch (error) {
      return fail(base, error);
    }
    const p = port++;
    let server;
    try {
      server = await serve(join(dir, 'node_modules/.bin/wrangler'), ['dev', '--port', String(p), '--ip', '127.0.0.1'], dir, `http://127.0.0.1:${p}/favicon.ico`);
      await request({ ...base, build: true, size, sizeNote: 'whole Worker upload (wrangler --dry-run)', limit: 'Workers Free 3 MB', limitBytes: 3_000_000 }, `http://127.0.0.1:${p}/`);
    } catch (error) {
      fail({ ...base, build: true }, error);
    } finally {
      server?.stop();
    }
  },

  async nuxt(tarball) {
    const dir = prepare('nuxt', tarball, 'server');
    for (const preset of ['node-server', 'cloudflare-module']) {
      const base = { framework: 'Nuxt 4', bundler: `Nitro (Rollup), ${preset}`, route: preset === 'node-server' ? 'server route (Node)' : 'server route (workerd, wrangler dev)' };
      try {
        rmSync(join(dir, '.output'), { recursive: true, force: true });
        run(join(dir, 'node_modules/.bin/nuxt'), ['build'], dir, { extraEnv: { NITRO_PRESET: preset } });
      } catch (error) {
        fail(base, error);
        continue;
      }
      const p = port++;
      let server;
      try {
        const size = sizeOf(join(dir, '.output/server'), (f) => f.endsWith('.wasm'));
        server = preset === 'node-server'
          ? await serve(join(node22, 'node'), ['.output/server/index.mjs'], dir, `http://127.0.0.1:${p}/`, { PORT: String(p), HOST: '127.0.0.1' })
          // What .output/nitro.json's preview command runs.
          : await serve(join(dir, 'node_modules/.bin/wrangler'), ['dev', 'server/index.mjs', '--assets', 'public', '--compatibility-date', '2026-11-01', '--compatibility-flags', 'nodejs_compat', '--port', String(p), '--ip', '127.0.0.1'], join(dir, '.output'), `http://127.0.0.1:${p}/favicon.ico`);
        await request({ ...base, build: true, size, sizeNote: 'wasm files in .output/server' }, `http://127.0.0.1:${p}/api/chat`);
      } catch (error) {
        fail({ ...base, build: true }, error);
      } finally {
        server?.stop();
      }
    }
  },
};

const started = Date.now();
if (!existsSync(join(node22, 'node'))) {
  console.error(`frameworks: no Node 22 at ${node22}; run bash scripts/setup.sh`);
  process.exit(1);
}
mkdirSync(work, { recursive: true });
log(`node ${run(join(node22, 'node'), ['--version'], root).trim()}; packing js/`);
for (const f of readdirSync(work)) if (f.endsWith('.tgz')) rmSync(join(work, f));
run('npm', ['pack', '--pack-destination', work, '--loglevel=error'], join(root, 'js'));
const tarball = join(work, readdirSync(work).find((f) => f.endsWith('.tgz')));
for (const app of apps) {
  if (!suites[app]) { console.error(`frameworks: no app "${app}" (${Object.keys(suites).join(', ')})`); process.exit(2); }
  const t0 = Date.now();
  try {
    await suites[app](tarball);
  } catch (error) {
    fail({ framework: app, bundler: '', route: 'install' }, error);
  }
  log(`${app}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

// A size over the plan's limit fails its row.
for (const row of rows) {
  if (row.limitBytes && row.size !== undefined && row.size > row.limitBytes) {
    row.ok = false;
    row.issues.push(`${kb(row.size)} KiB gzipped is over ${row.limit}`);
  }
}
const mark = (v) => (v === null ? '—' : v ? 'yes' : 'NO');
console.log('\n| framework | bundler | route | build | request | offload | exact count | ms | our bytes (gzip) | limit |');
console.log('|---|---|---|---|---|---|---|---:|---|---|');
for (const r of rows) {
  console.log(`| ${r.framework} | ${r.bundler} | ${r.route} | ${mark(r.build)} | ${mark(r.request)} | ${mark(r.offload)} | ${mark(r.exact)} | ${r.ms} | ${r.size === undefined ? '—' : `${kb(r.size)} KiB (${r.sizeNote})`} | ${r.limit ?? '—'} |`);
}
const failed = rows.filter((r) => !r.ok);
for (const r of failed) console.log(`\nFAILED ${r.framework} / ${r.bundler} / ${r.route}:\n  ${r.issues.join('\n  ')}`);
console.log(`\nframeworks: ${rows.length - failed.length} of ${rows.length} passed in ${((Date.now() - started) / 1000).toFixed(0)} s`);
process.exitCode = failed.length || rows.length === 0 ? 1 : 0;
