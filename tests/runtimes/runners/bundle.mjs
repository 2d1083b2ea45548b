// esbuild helpers shared by the bundling runners (Node-side).
import { readFile, copyFile, mkdir } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { parseFixture } from './common.mjs';

export const runtimesDir = fileURLToPath(new URL('..', import.meta.url));
export const defaultFixture = fileURLToPath(new URL('../../fixtures/token-counts.json', import.meta.url));

export async function loadFixtureInfo(path = defaultFixture) {
  const text = await readFile(path, 'utf8').catch(() => null);
  return parseFixture(text, path);
}

/** `import x from 'virtual:fixture'` -> the parsed fixture (plus any load problem), inlined. */
export function fixturePlugin(fixtureInfo) {
  return {
    name: 'virtual-fixture',
    setup(build) {
      build.onResolve({ filter: /^virtual:fixture$/ }, () => ({ path: 'fixture', namespace: 'virtual-fixture' }));
      build.onLoad({ filter: /.*/, namespace: 'virtual-fixture' }, () => ({
        contents: JSON.stringify(fixtureInfo),
        loader: 'json',
      }));
    },
  };
}

/**
 * The file a `.wasm` import names, found by esbuild's own resolver: a relative path inside the
 * package, or a subpath of the package (`context-compactor/ranks/cl100k_base.wasm`) through its
 * `exports`, as wrangler and Vercel resolve them. `pluginData.wasmFile` marks the inner lookup,
 * which the wasm plugins leave alone.
 */
export async function resolveWasm(build, path, args) {
  const found = await build.resolve(path, { kind: args.kind, importer: args.importer, resolveDir: args.resolveDir, pluginData: { wasmFile: true } });
  if (found.errors.length) throw new Error(`cannot resolve ${path} from ${args.importer}: ${found.errors.map((e) => e.text).join('; ')}`);
  return found.path;
}

/**
 * `.wasm` (and `.wasm?module`) imports stay imports: the file is copied next to the bundle and the import is
 * kept external, so the host (workerd) loads it as its own CompiledWasm module. Records the
 * resolved source paths in `seen`.
 */
export function externalWasmPlugin(outdir, seen = []) {
  return {
    name: 'external-wasm',
    setup(build) {
      // `?module` too: the Workers entries use it (wrangler's default rules read both as CompiledWasm).
      build.onResolve({ filter: /\.wasm(\?module)?$/ }, async (args) => {
        if (args.pluginData?.wasmFile) return undefined;
        const src = await resolveWasm(build, args.path.replace(/\?module$/, ''), args);
        await mkdir(outdir, { recursive: true });
        await copyFile(src, `${outdir}/${basename(src)}`);
        if (!seen.includes(src)) seen.push(src); // two entries may import one file (o200k_base)
        return { path: './' + basename(src), external: true };
      });
    },
  };
}

/**
 * Bundles a module worker the way wrangler does (conditions `workerd, worker, browser`; the
 * package's `.wasm` kept as a separate CompiledWasm import) into `outdir/worker.js`. Returns the
 * `.wasm` files the bundle imports.
 */
export async function bundleWorker({ entry, outdir, absWorkingDir, plugins = [] }) {
  const { build } = await import('esbuild');
  const wasmFiles = [];
  await build({
    entryPoints: [entry],
    outfile: `${outdir}/worker.js`,
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    absWorkingDir,
    logLevel: 'error',
    plugins: [...plugins, externalWasmPlugin(outdir, wasmFiles)],
  });
  return wasmFiles;
}

/** Miniflare options that run a bundle from `bundleWorker`: ES modules plus the `.wasm` as a
 * CompiledWasm module, as workerd loads a wrangler build. */
export function miniflareOptions(outdir) {
  return {
    modules: true,
    scriptPath: `${outdir}/worker.js`,
    modulesRoot: outdir,
    modulesRules: [
      { type: 'ESModule', include: ['**/*.js', '**/*.mjs'] },
      { type: 'CompiledWasm', include: ['**/*.wasm'] },
    ],
    compatibilityDate: '2025-09-01',
  };
}

export async function pkgVersion(name) {
  const text = await readFile(`${runtimesDir}/node_modules/${name}/package.json`, 'utf8').catch(() => '{}');
  return JSON.parse(text).version ?? '?';
}

/** Parses a bundled worker's JSON answer; anything else is an error naming the entry. */
export async function answerJson(res, entry, what) {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${entry}: ${what} answered ${res.status}: ${text.slice(0, 1000)}`);
  }
}

/**
 * The .wasm files a Workers / Edge bundle carries: the main entry's (the core and o200k_base's
 * data: nothing else, to fit the platforms' size limits), the tokens entry's, and what the test
 * apps import themselves (runners/bundled/worker.mjs, edge-worker.mjs, tokens-*worker.mjs).
 */
export const MAIN_ENTRY_WASM = ['context_compactor_bg', 'o200k_base'];
const TOKENS_ENTRY_WASM = ['counter_bg', 'o200k_base'];
const SCENARIO_APP_WASM = ['cl100k_base', 'qwen3', 'deepseek_v3', 'compiler_bg'];
const TOKENS_APP_WASM = ['cl100k_base'];

/** Whether the bundle's .wasm files (paths) are exactly `names`, each once. */
const exactly = (files, names) => {
  const got = files.map((f) => f.split('/').pop()).sort();
  const want = [...new Set(names)].map((n) => `${n}.wasm`).sort();
  return got.length === want.length && got.every((f, i) => f === want[i]);
};

/** Raw and gzip sizes (zlib's default level) of what a deploy uploads: the bundled script
 * (`code`, named `script`) and the .wasm files it imports (paths), as the platforms' limits count
 * an upload (after compression). */
export async function bundleSize(script, code, wasmPaths) {
  const files = [{ name: script, bytes: Buffer.from(code) }];
  for (const path of wasmPaths) files.push({ name: basename(path), bytes: await readFile(path) });
  const rows = files.map(({ name, bytes }) => ({ name, raw: bytes.length, gzip: gzipSync(bytes).length }));
  const sum = (key) => rows.reduce((n, r) => n + r[key], 0);
  return { raw: sum('raw'), gzip: sum('gzip'), files: rows };
}

const kB = (n) => `${(n / 1000).toFixed(1)} kB`;

/**
 * The report of a bundled runtime: the main scenario's checks, preceded by the packaging checks
 * (the export condition picked `expectedEntry`, checked in a separate probe bundle of the main
 * entry alone so it cannot keep the entry alive in the main one; that bundle carries the core and
 * o200k_base's data and nothing else, its gzip size recorded and within `sizeLimit`; the main bundle kept its .wasm
 * imports, the app's own among them and no others) and followed by the tokens-only bundle's (an
 * app that imports `context-compactor/tokens` alone gets its entry, the counting module and the
 * data, not the core, and counts exactly).
 */
export function bundledReport({ expectedEntry, probe, main, tokensOnly, wasmCheck, sizeLimit, runtime, timings }) {
  const report = main.json;
  const probeWasm = probe.keptWasmImports.map((f) => f.split('/').pop());
  const tokensWasm = tokensOnly.keptWasmImports.map((f) => f.split('/').pop());
  const size = probe.size;
  report.checks.unshift(
    {
      name: `export condition resolves to the '${expectedEntry}' entry (separate probe bundle)`,
      ok: probe.json.runtimeEntry === expectedEntry,
      detail: `runtimeEntry=${JSON.stringify(probe.json.runtimeEntry)}`,
    },
    {
      name: 'a bundle of the main entry alone carries exactly the core and o200k_base\'s data (no counting module, no cl100k_base, qwen, deepseek or tekken data, no tokenizer compiler)',
      ok: exactly(probe.keptWasmImports, MAIN_ENTRY_WASM),
      detail: `${probeWasm.join(', ')}; gzip ${kB(size.gzip)} (raw ${kB(size.raw)}): ${size.files.map((f) => `${f.name} ${kB(f.gzip)}`).join(', ')}`,
    },
    {
      // What the entries carry only o200k_base for: an app that counts with it alone deploys on
      // the platform's smallest plan (each file gzipped, decimal MB).
      name: `that bundle fits ${sizeLimit.plan} (${sizeLimit.bytes / 1e6} MB gzipped)`,
      ok: size.gzip <= sizeLimit.bytes,
      detail: `${kB(size.gzip)}, ${kB(sizeLimit.bytes - size.gzip)} to spare`,
    },
    {
      name: wasmCheck,
      // the core, the counting-only module, o200k_base's data (the entries'), and cl100k_base's,
      // qwen3's, deepseek_v3's data and the tokenizer compiler (the worker's own imports): no other
      ok: exactly(main.keptWasmImports, [...MAIN_ENTRY_WASM, ...TOKENS_ENTRY_WASM, ...SCENARIO_APP_WASM]),
      detail: main.keptWasmImports.map((f) => f.split('/').pop()).join(', ') ||
        `the bundle has no .wasm import (resolved: ${main.wasmFiles.join(', ') || 'none'}): wrong entry, or the entry module was tree-shaken`,
    },
  );
  report.checks.push(
    {
      name: `'context-compactor/tokens' alone resolves to the '${expectedEntry}' entry`,
      ok: tokensOnly.json.runtimeEntry === expectedEntry,
      detail: `runtimeEntry=${JSON.stringify(tokensOnly.json.runtimeEntry)}`,
    },
    {
      name: "a bundle of 'context-compactor/tokens' alone keeps the counting module and o200k_base's data (and cl100k_base's, the app's import), not the compactor's core",
      ok: exactly(tokensOnly.keptWasmImports, [...TOKENS_ENTRY_WASM, ...TOKENS_APP_WASM]),
      detail: tokensWasm.join(', '),
    },
    {
      name: 'that bundle counts the fixture exactly in both encodings',
      ok: tokensOnly.json.cases > 0 && tokensOnly.json.bad?.length === 0 && tokensOnly.json.total > 0,
      detail: JSON.stringify(tokensOnly.json).slice(0, 600),
    },
  );
  report.runtime = runtime;
  report.timings = { ...report.timings, ...timings, minimalBundleGzipBytes: size.gzip, minimalBundleRawBytes: size.raw };
  return report;
}
