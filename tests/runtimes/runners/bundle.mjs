// esbuild helpers shared by the bundling runners (Node-side).
import { readFile, copyFile, mkdir } from 'node:fs/promises';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
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
 * Plain `.wasm` imports stay imports: the file is copied next to the bundle and the import is
 * kept external, so the host (workerd) loads it as its own CompiledWasm module. Records the
 * resolved source paths in `seen`.
 */
export function externalWasmPlugin(outdir, seen = []) {
  return {
    name: 'external-wasm',
    setup(build) {
      build.onResolve({ filter: /\.wasm$/ }, async (args) => {
        const src = fileURLToPath(new URL(args.path, 'file://' + args.resolveDir + '/'));
        await mkdir(outdir, { recursive: true });
        await copyFile(src, `${outdir}/${basename(src)}`);
        if (!seen.includes(src)) seen.push(src); // two entries may import one file (the compiler)
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

/** Every .wasm a bundle of the full entry imports (the tokenizers' by dynamic import). */
export const BUNDLED_WASM = ['context_compactor_bg', 'compiler_bg', 'o200k_base', 'cl100k_base', 'qwen3', 'qwen2_5', 'deepseek_v3', 'mistral_tekken_240718', 'mistral_tekken_240911'];
/** …and a bundle of both entries (the runtimes' workers import `context-compactor/tokens` too). */
const BOTH_ENTRIES_WASM = [...BUNDLED_WASM, 'counter_bg'];

/**
 * The report of a bundled runtime: the main scenario's checks, preceded by the packaging checks
 * (the export condition picked `expectedEntry`, checked in a separate probe bundle of the main
 * entry alone so it cannot keep the entry alive in the main one, and that bundle has no counting
 * module; the main bundle kept its .wasm imports) and followed by the tokens-only bundle's (an app
 * that imports `context-compactor/tokens` alone gets its entry, the counting module and the data,
 * not the core, and counts exactly).
 */
export function bundledReport({ expectedEntry, probe, main, tokensOnly, wasmCheck, runtime, timings }) {
  const report = main.json;
  const probeWasm = probe.keptWasmImports.map((f) => f.split('/').pop());
  const tokensWasm = tokensOnly.keptWasmImports.map((f) => f.split('/').pop());
  report.checks.unshift(
    {
      name: `export condition resolves to the '${expectedEntry}' entry (separate probe bundle)`,
      ok: probe.json.runtimeEntry === expectedEntry,
      detail: `runtimeEntry=${JSON.stringify(probe.json.runtimeEntry)}`,
    },
    {
      name: 'a bundle of the main entry alone has the core and not the counting module',
      ok: probeWasm.includes('context_compactor_bg.wasm') && !probeWasm.includes('counter_bg.wasm'),
      detail: probeWasm.join(', '),
    },
    {
      name: wasmCheck,
      // the core, the counting-only module, the two encodings' and the prebuilt tokenizers' data-only modules
      ok: main.keptWasmImports.length === BOTH_ENTRIES_WASM.length && BOTH_ENTRIES_WASM.every((n) => main.keptWasmImports.some((f) => f.endsWith(`/${n}.wasm`))),
      detail: main.keptWasmImports.join(', ') ||
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
      name: "a bundle of 'context-compactor/tokens' alone keeps the counting module and the data, not the compactor's core",
      ok: tokensWasm.includes('counter_bg.wasm') && tokensWasm.includes('o200k_base.wasm') && !tokensWasm.includes('context_compactor_bg.wasm'),
      detail: tokensWasm.join(', '),
    },
    {
      name: 'that bundle counts the fixture exactly in both encodings',
      ok: tokensOnly.json.cases > 0 && tokensOnly.json.bad?.length === 0 && tokensOnly.json.total > 0,
      detail: JSON.stringify(tokensOnly.json).slice(0, 600),
    },
  );
  report.runtime = runtime;
  report.timings = { ...report.timings, ...timings };
  return report;
}
