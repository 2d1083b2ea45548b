// workerd via miniflare 4: `node runners/workerd.mjs [fixture.json]`.
// Bundles runners/bundled/worker.mjs with esbuild using the workerd conditions
// (workerd, worker, browser — what wrangler uses); the package's `.wasm` import stays a
// separate module that miniflare loads as CompiledWasm (modulesRules), exactly as a
// wrangler deploy would upload it. The worker runs the scenario on fetch and returns JSON.
// A second, separate bundle (bundled/probe.mjs) reports `runtimeEntry`; its .wasm files and gzip
// size are the Workers entry's own (the core and o200k_base: the rest is the app's import).
import { Miniflare } from 'miniflare';
import { builtinModules } from 'node:module';
import { mkdtemp, rm, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { printReport, errString } from './common.mjs';
import { runtimesDir, loadFixtureInfo, fixturePlugin, bundleWorker, miniflareOptions, pkgVersion, answerJson, bundledReport, bundleSize } from './bundle.mjs';

/** What wrangler leaves to workerd with `nodejs_compat`: `cloudflare:*` and Node's built-ins
 * (a bare `path` as `node:path`). The Cloudflare Agents worker needs it (`agents` imports them). */
const bare = new RegExp(`^(${builtinModules.filter((m) => !m.startsWith('_')).join('|')})(/.*)?$`);
const workerdBuiltins = {
  name: 'workerd-builtins',
  setup(build) {
    build.onResolve({ filter: /^(cloudflare|node):/ }, (args) => ({ path: args.path, external: true }));
    build.onResolve({ filter: bare }, (args) => ({ path: `node:${args.path}`, external: true }));
  },
};

/** Bundles `entry` into a fresh dir, runs it in miniflare (a fetch of each of `paths`, in
 * order, in one isolate), returns { json (the last answer), answers, wasmFiles, keptWasmImports,
 * size, bundleMs, fetchMs }. */
async function runWorker(entry, fixtureInfo, extraOptions = {}, plugins = [], paths = ['/']) {
  const outdir = await mkdtemp(join(tmpdir(), 'cc-workerd-'));
  let mf;
  try {
    const t0 = Date.now();
    const wasmFiles = await bundleWorker({ entry: join(runtimesDir, entry), outdir, absWorkingDir: runtimesDir, plugins: [fixturePlugin(fixtureInfo), ...plugins] });
    const bundleMs = Date.now() - t0;
    // Did the entry's `.wasm` import survive tree-shaking? (Resolution alone proves nothing.)
    const bundled = await readFile(join(outdir, 'worker.js'), 'utf8');
    const keptWasmImports = wasmFiles.filter((f) => bundled.includes(`"./${f.split('/').pop()}"`));
    const size = await bundleSize('worker.js', bundled, keptWasmImports);
    mf = new Miniflare({ ...miniflareOptions(outdir), ...extraOptions });
    const t1 = Date.now();
    const answers = [];
    for (const path of paths) answers.push(await answerJson(await mf.dispatchFetch(`http://localhost${path}`), entry, 'worker'));
    return { json: answers.at(-1), answers, wasmFiles, keptWasmImports, size, bundleMs, fetchMs: Date.now() - t1 };
  } finally {
    await mf?.dispose().catch(() => {});
    await rm(outdir, { recursive: true, force: true });
  }
}

let report;
try {
  const fixtureInfo = await loadFixtureInfo(process.argv[2]);
  const probe = await runWorker('runners/bundled/probe.mjs', fixtureInfo);
  const main = await runWorker('runners/bundled/worker.mjs', fixtureInfo);
  const tokensOnly = await runWorker('runners/bundled/tokens-worker.mjs', fixtureInfo);
  // A Durable Object holding the store (context-compactor/stores/durable-object).
  const durable = await runWorker('runners/bundled/do-worker.mjs', fixtureInfo, { durableObjects: { CONVERSATION: 'Conversation' } });
  // A store over an R2 bucket (KvStore.r2), its writeIf atomic by R2's conditional put.
  const r2 = await runWorker('runners/bundled/r2-worker.mjs', fixtureInfo, { r2Buckets: ['BUCKET'] });
  // A Cloudflare Agent (AIChatAgent, SQLite-backed) wired with context-compactor/cloudflare.
  const chat = await runWorker('runners/bundled/chat-agent-worker.mjs', fixtureInfo, {
    compatibilityDate: '2026-01-01',
    compatibilityFlags: ['nodejs_compat'],
    durableObjects: { Chat: { className: 'Chat', useSQLite: true } },
  }, [workerdBuiltins]);
  // A stateless route handed ctx.waitUntil: a summary made after one response, applied by a
  // later request (issue 32).
  const background = await runWorker('runners/bundled/background-worker.mjs', fixtureInfo, {}, [], ['/1', '/2']);
  report = bundledReport({
    expectedEntry: 'workerd',
    probe,
    main,
    tokensOnly,
    sizeLimit: { plan: 'Workers Free', bytes: 3e6 },
    wasmCheck: "bundle (named imports) keeps the core, counting-only module and o200k_base's data, and the worker's own imports (cl100k_base, qwen3, deepseek_v3, the tokenizer compiler), as separate CompiledWasm modules, and no other .wasm",
    runtime: `workerd (miniflare ${await pkgVersion('miniflare')})`,
    timings: { bundleMs: main.bundleMs, fetchMs: main.fetchMs, probeMs: probe.bundleMs + probe.fetchMs, tokensOnlyMs: tokensOnly.bundleMs + tokensOnly.fetchMs, durableObjectMs: durable.bundleMs + durable.fetchMs, r2Ms: r2.bundleMs + r2.fetchMs, chatAgentMs: chat.bundleMs + chat.fetchMs },
  });
  const backgroundChecks = background.answers.flatMap((a) => a?.checks ?? []);
  report.checks.push(...backgroundChecks, { name: 'background summary, ctx.waitUntil: every check ran', ok: backgroundChecks.length === 3, detail: `${backgroundChecks.length} checks` });
  const durableChecks = durable.json?.checks ?? [];
  report.checks.push(...durableChecks, { name: 'Durable Object store: every check ran', ok: durableChecks.length >= 8, detail: `${durableChecks.length} checks` });
  const r2Checks = r2.json?.checks ?? [];
  report.checks.push(...r2Checks, { name: 'R2 store: every check ran', ok: r2Checks.length >= 10, detail: `${r2Checks.length} checks` });
  const chatChecks = chat.json?.checks ?? [];
  report.checks.push(...chatChecks, { name: 'Cloudflare Agents: every check ran', ok: chatChecks.length >= 10, detail: `${chatChecks.length} checks; ${JSON.stringify(chat.json?.figures ?? {})}` }, {
    // The worker as wrangler uploads it (not minified): agents, @cloudflare/ai-chat, ai, the package's entries and its .wasm.
    name: 'the Cloudflare Agents worker fits Workers Free (3 MB gzipped)',
    ok: chat.size.gzip <= 3e6,
    detail: `${(chat.size.gzip / 1000).toFixed(1)} kB gzipped (raw ${(chat.size.raw / 1000).toFixed(1)} kB): ${chat.size.files.map((f) => `${f.name} ${(f.gzip / 1000).toFixed(1)} kB`).join(', ')}`,
  });
} catch (e) {
  report = { runtime: 'workerd', checks: [{ name: 'worker builds and answers', ok: false, detail: errString(e) }], timings: {} };
}
process.exitCode = printReport(report) ? 0 : 1;
