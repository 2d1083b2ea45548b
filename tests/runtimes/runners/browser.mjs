// Headless Chromium via playwright-core: `node runners/browser.mjs [fixture.json]`.
// A tiny http server on 127.0.0.1 (port 0) serves the installed package's files unchanged under
// /pkg/, this directory under /runtimes/, and a test page whose import map points the bare
// specifier 'context-compactor' at the entry that esbuild's resolver picks with the browser
// conditions from the package's `exports`. The page imports the package natively, so the entry
// fetches its .wasm through `new URL(..., import.meta.url)` exactly as in a user's browser.
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { createServer } from 'node:http';
import { readFile, realpath, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep, extname } from 'node:path';
import { printReport, errString } from './common.mjs';
import { runtimesDir, loadFixtureInfo } from './bundle.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.json': 'application/json',
  '.wasm': 'application/wasm', '.html': 'text/html; charset=utf-8', '.map': 'application/json' };

/** Resolves a bare specifier the way a browser bundler would (esbuild, browser conditions). */
async function resolveForBrowser(specifier) {
  let resolved;
  await build({
    stdin: { contents: `import ${JSON.stringify(specifier)};`, resolveDir: runtimesDir, loader: 'js' },
    bundle: true, write: false, platform: 'browser', format: 'esm', conditions: ['browser'], logLevel: 'silent',
    plugins: [{
      name: 'capture',
      setup(b) {
        b.onResolve({ filter: new RegExp(`^${specifier}$`) }, async (args) => {
          if (args.pluginData === 'inner') return undefined;
          const r = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'inner' });
          if (r.errors.length) throw new Error(r.errors.map((e) => e.text).join('; '));
          resolved = r.path;
          return { path: r.path, external: true };
        });
      },
    }],
  });
  return resolved;
}

function serveFile(res, root, urlPath) {
  const file = resolve(root, '.' + decodeURIComponent(urlPath));
  if (file !== root && !file.startsWith(root + sep)) return notFound(res);
  return readFile(file).then(
    (body) => {
      // CC_WASM_CONTENT_TYPE lets you check the fallback for servers without application/wasm.
      const type = extname(file) === '.wasm' && process.env.CC_WASM_CONTENT_TYPE ? process.env.CC_WASM_CONTENT_TYPE : TYPES[extname(file)];
      res.writeHead(200, { 'content-type': type || 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(body);
    },
    () => notFound(res),
  );
}
function notFound(res) { res.writeHead(404, { 'content-type': 'text/plain' }); res.end('not found'); }

let report;
let server;
let context;
const userDataDir = await mkdtemp(join(tmpdir(), 'cc-chromium-'));
const pageLog = [];
try {
  const t0 = Date.now();
  const pkgRoot = await realpath(join(runtimesDir, 'node_modules/context-compactor'));
  const entry = await realpath(await resolveForBrowser('context-compactor'));
  if (!entry.startsWith(pkgRoot + sep)) throw new Error(`resolved entry ${entry} is outside the package ${pkgRoot}`);
  const entryUrl = '/pkg/' + relative(pkgRoot, entry).split(sep).join('/');
  const tokensEntry = await realpath(await resolveForBrowser('context-compactor/tokens'));
  const tokensUrl = '/pkg/' + relative(pkgRoot, tokensEntry).split(sep).join('/');
  const fixtureInfo = await loadFixtureInfo(process.argv[2]);
  // Second variant: an esbuild browser bundle (named imports), served next to the entry.
  const browserBundle = async (entry) => (await build({
    entryPoints: [join(runtimesDir, entry)],
    bundle: true, write: false, platform: 'browser', format: 'esm', target: 'es2022',
    conditions: ['browser'], absWorkingDir: runtimesDir, logLevel: 'error',
  })).outputFiles[0].text;
  const bundleJs = await browserBundle('runners/bundled/page-bundle.mjs');
  const bundleUrl = entryUrl.replace(/[^/]*$/, '__cc_test_bundle__.js');
  // Third variant: an app that imports `context-compactor/tokens` alone.
  const tokensJs = await browserBundle('runners/bundled/tokens-page.mjs');
  const tokensBundleUrl = entryUrl.replace(/[^/]*$/, '__cc_tokens_bundle__.js');
  const htmlBundled = `<!doctype html><meta charset="utf-8"><title>context-compactor (bundle)</title>
<script type="module" src="${bundleUrl}"></script>`;
  const html = `<!doctype html><meta charset="utf-8"><title>context-compactor</title>
<script type="importmap">${JSON.stringify({ imports: { 'context-compactor': entryUrl, 'context-compactor/tokens': tokensUrl } })}</script>
<script type="module" src="/runtimes/runners/bundled/page.mjs"></script>`;
  const requested = [];

  server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    requested.push(path);
    if (path === '/') { res.writeHead(200, { 'content-type': TYPES['.html'] }); return res.end(html); }
    if (path === '/bundled') { res.writeHead(200, { 'content-type': TYPES['.html'] }); return res.end(htmlBundled); }
    if (path === bundleUrl) { res.writeHead(200, { 'content-type': TYPES['.js'] }); return res.end(bundleJs); }
    if (path === '/tokens-only') { res.writeHead(200, { 'content-type': TYPES['.html'] }); return res.end(`<!doctype html><meta charset="utf-8"><title>tokens only</title><script type="module" src="${tokensBundleUrl}"></script>`); }
    if (path === tokensBundleUrl) { res.writeHead(200, { 'content-type': TYPES['.js'] }); return res.end(tokensJs); }
    if (path === '/favicon.ico') { res.writeHead(204); return res.end(); }
    if (path === '/fixture-info.json') { res.writeHead(200, { 'content-type': TYPES['.json'] }); return res.end(JSON.stringify(fixtureInfo)); }
    if (path.startsWith('/pkg/')) return serveFile(res, pkgRoot, path.slice(4));
    if (path.startsWith('/runtimes/')) return serveFile(res, runtimesDir.replace(/\/$/, ''), path.slice(9));
    return notFound(res);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const origin = `http://127.0.0.1:${server.address().port}`;

  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: ARGS, timeout: 60000,
  });
  const launchMs = Date.now() - t0;
  const page = context.pages()[0] ?? (await context.newPage());
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') pageLog.push(`console.${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => pageLog.push(`pageerror: ${e.message}`));
  page.on('response', (r) => { if (r.status() >= 400) pageLog.push(`http error: ${r.status()} ${r.url()}`); });
  page.on('requestfailed', (r) => pageLog.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  const t1 = Date.now();
  await page.goto(origin + '/', { waitUntil: 'load', timeout: 30000 });
  await page.waitForFunction(() => window.__ccReport, null, { timeout: 90000 });
  report = await page.evaluate(() => window.__ccReport);
  const pageMs = Date.now() - t1;
  const wasmFetched = requested.filter((p) => p.endsWith('.wasm'));
  report.checks.unshift({
    name: "browser condition resolves 'context-compactor' to an ES module entry served from the package",
    ok: true, detail: entryUrl,
  });
  report.checks.push({ name: 'the .wasm was fetched over http as its own file', ok: wasmFetched.length >= 1, detail: wasmFetched.join(', ') || `requests: ${requested.join(', ')}` });
  const errors = pageLog.filter((l) => !l.startsWith('console.warning'));
  report.checks.push({ name: 'no page errors, console errors or failed requests', ok: errors.length === 0, detail: pageLog.slice(0, 10).join(' | ') });

  // The bundled variant, in a fresh page.
  pageLog.length = 0;
  requested.length = 0;
  const t2 = Date.now();
  const page2 = await context.newPage();
  page2.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') pageLog.push(`console.${m.type()}: ${m.text()}`); });
  page2.on('pageerror', (e) => pageLog.push(`pageerror: ${e.message}`));
  page2.on('response', (r) => { if (r.status() >= 400) pageLog.push(`http error: ${r.status()} ${r.url()}`); });
  await page2.goto(origin + '/bundled', { waitUntil: 'load', timeout: 30000 });
  await page2.waitForFunction(() => window.__ccReport, null, { timeout: 90000 });
  const bundled = await page2.evaluate(() => window.__ccReport);
  for (const c of bundled.checks) report.checks.push({ ...c, name: `esbuild bundle: ${c.name}` });
  const errors2 = pageLog.filter((l) => !l.startsWith('console.warning'));
  report.checks.push({ name: 'esbuild bundle: no page errors, console errors or failed requests', ok: errors2.length === 0, detail: pageLog.slice(0, 10).join(' | ') });
  const bundleMs = Date.now() - t2;

  // The tokens-only bundle, in a fresh page: which .wasm files it fetches, and its counts.
  pageLog.length = 0;
  requested.length = 0;
  const page3 = await context.newPage();
  page3.on('pageerror', (e) => pageLog.push(`pageerror: ${e.message}`));
  page3.on('response', (r) => { if (r.status() >= 400) pageLog.push(`http error: ${r.status()} ${r.url()}`); });
  await page3.goto(origin + '/tokens-only', { waitUntil: 'load', timeout: 30000 });
  await page3.waitForFunction(() => window.__ccTokens, null, { timeout: 60000 });
  const tokensOnly = await page3.evaluate(() => window.__ccTokens);
  const fetched = requested.filter((p) => p.endsWith('.wasm')).map((p) => p.split('/').pop());
  report.checks.push(
    { name: "'context-compactor/tokens' alone resolves to the 'browser' entry", ok: tokensOnly.runtimeEntry === 'browser', detail: `runtimeEntry=${JSON.stringify(tokensOnly.runtimeEntry)}` },
    {
      name: "a page bundling 'context-compactor/tokens' alone fetches the counting module and the data, not the compactor's core",
      ok: fetched.includes('counter_bg.wasm') && fetched.includes('o200k_base.wasm') && !fetched.includes('context_compactor_bg.wasm') && !tokensJs.includes('context_compactor_bg.wasm'),
      detail: fetched.join(', '),
    },
    { name: 'that page counts the fixture exactly in both encodings', ok: tokensOnly.cases > 0 && tokensOnly.bad?.length === 0 && tokensOnly.total > 0 && pageLog.length === 0, detail: JSON.stringify(tokensOnly).slice(0, 400) + pageLog.slice(0, 5).join(' | ') },
  );
  report.timings = { ...report.timings, launchMs, pageMs, bundledPageMs: bundleMs };
} catch (e) {
  report = {
    runtime: 'chromium',
    checks: [{ name: 'page loads and reports', ok: false, detail: errString(e) + (pageLog.length ? ' || page: ' + pageLog.join(' | ') : '') }],
    timings: {},
  };
} finally {
  await context?.close().catch(() => {});
  server?.close();
  await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
}
process.exitCode = printReport(report) ? 0 : 1;
