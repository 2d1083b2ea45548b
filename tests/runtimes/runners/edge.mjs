// Vercel Edge via edge-runtime: `node runners/edge.mjs [fixture.json]`.
// Bundles runners/bundled/edge-worker.mjs with esbuild using the Edge conditions
// (edge-light, worker, browser — what Next.js/Vercel use) into one classic script.
// `import m from './x.wasm?module'` (the Vercel convention) is resolved the way Vercel does it:
// the .wasm is compiled ahead of time — here with the VM's OWN WebAssembly, so `instanceof`
// holds inside the VM — and handed to the bundle as a binding. Then compiling wasm from bytes is
// switched off inside the VM (as on real Edge: "Wasm code generation disallowed by embedder"),
// so the test fails if the package tries any path other than the precompiled Module.
// The Edge entry carries the core and o200k_base only: the scenario's bundle imports the rest by
// the package's subpaths with `?module` (bundled/edge-worker.mjs); the probe bundle's .wasm and
// gzip size are the entry's own.
import { build } from 'esbuild';
import { EdgeRuntime } from 'edge-runtime';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { printReport, errString } from './common.mjs';
import { runtimesDir, loadFixtureInfo, fixturePlugin, pkgVersion, answerJson, bundledReport, bundleSize, resolveWasm } from './bundle.mjs';

/** `*.wasm?module` -> `export default globalThis.__CC_WASM_MODULES__[<index>]`; records the file.
 * The path before `?module` is resolved as Vercel's bundler does: relative, or a package subpath
 * through its `exports` (`context-compactor/ranks/cl100k_base.wasm?module`). */
function wasmModulePlugin(seen) {
  return {
    name: 'wasm-module-binding',
    setup(b) {
      b.onResolve({ filter: /\.wasm\?module$/ }, async (args) => {
        const file = await resolveWasm(b, args.path.slice(0, -'?module'.length), args);
        if (!seen.includes(file)) seen.push(file);
        return { path: String(seen.indexOf(file)), namespace: 'wasm-module-binding' };
      });
      b.onResolve({ filter: /\.wasm$/ }, (args) => (args.pluginData?.wasmFile ? undefined : {
        errors: [{ text: `plain .wasm import ${args.path} is not supported on Vercel Edge; use ?module` }],
      }));
      b.onLoad({ filter: /.*/, namespace: 'wasm-module-binding' }, (args) => ({
        contents: `export default globalThis.__CC_WASM_MODULES__[${args.path}];`,
        loader: 'js',
      }));
    },
  };
}

// Runs inside the VM after the bindings exist: from here on, compiling from bytes throws.
const FORBID_WASM_CODEGEN = `(() => {
  const W = WebAssembly;
  const deny = (what) => { throw new W.CompileError(what + ': Wasm code generation disallowed by embedder'); };
  const isModule = (x) => x instanceof W.Module;
  W.Module = new Proxy(W.Module, { construct() { deny('WebAssembly.Module()'); } });
  W.compile = () => Promise.reject(new W.CompileError('WebAssembly.compile(): Wasm code generation disallowed by embedder'));
  W.compileStreaming = () => Promise.reject(new W.CompileError('WebAssembly.compileStreaming(): Wasm code generation disallowed by embedder'));
  const instantiate = W.instantiate;
  W.instantiate = (src, imports) => isModule(src) ? instantiate(src, imports)
    : Promise.reject(new W.CompileError('WebAssembly.instantiate(bytes): Wasm code generation disallowed by embedder'));
  W.instantiateStreaming = () => Promise.reject(new W.CompileError('WebAssembly.instantiateStreaming(): Wasm code generation disallowed by embedder'));
})();`;

/** Bundles `entry` to a classic script, runs it in a fresh EdgeRuntime, returns its JSON answer. */
async function runEdge(entry, fixtureInfo) {
  const t0 = Date.now();
  const wasmFiles = [];
  const out = await build({
    entryPoints: [join(runtimesDir, entry)],
    write: false,
    bundle: true,
    format: 'iife',
    platform: 'neutral',
    target: 'es2022',
    conditions: ['edge-light', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    absWorkingDir: runtimesDir,
    logLevel: 'error',
    plugins: [fixturePlugin(fixtureInfo), wasmModulePlugin(wasmFiles)],
  });
  const code = out.outputFiles[0].text;
  const bundleMs = Date.now() - t0;
  // Which `?module` imports survived tree-shaking? (Resolution alone proves nothing.)
  const keptWasmImports = wasmFiles.filter((f, i) => code.includes(`__CC_WASM_MODULES__[${i}]`));
  const size = await bundleSize('index.js', code, keptWasmImports);

  const t1 = Date.now();
  const runtime = new EdgeRuntime();
  const VmWebAssembly = runtime.evaluate('WebAssembly');
  runtime.context.__CC_WASM_MODULES__ = await Promise.all(
    wasmFiles.map(async (f) => new VmWebAssembly.Module(await readFile(f))),
  );
  runtime.evaluate(FORBID_WASM_CODEGEN);
  const compileMs = Date.now() - t1;
  runtime.evaluate(code);
  const t2 = Date.now();
  const res = await runtime.dispatchFetch('http://localhost/');
  const json = await answerJson(res, entry, 'edge function');
  return { json, wasmFiles, keptWasmImports, size, bundleMs, compileMs, fetchMs: Date.now() - t2 };
}

let report;
try {
  const fixtureInfo = await loadFixtureInfo(process.argv[2]);
  const probe = await runEdge('runners/bundled/probe.mjs', fixtureInfo);
  const main = await runEdge('runners/bundled/edge-worker.mjs', fixtureInfo);
  const tokensOnly = await runEdge('runners/bundled/tokens-edge-worker.mjs', fixtureInfo);
  report = bundledReport({
    expectedEntry: 'edge',
    probe,
    main,
    tokensOnly,
    // The main entry (core + o200k_base, 988 kB) is within Pro's 2 MB; an Edge function on Hobby's 1 MB
    // uses the lite entry with the data from a static file (tests/frameworks checks that one).
    sizeLimit: { plan: 'Vercel Pro', bytes: 2e6 },
    wasmCheck: "bundle (named imports) imports the core, counting-only module and o200k_base's data, and the function's own imports (cl100k_base, qwen3, deepseek_v3, the tokenizer compiler), as precompiled WebAssembly.Modules (?module), and no other .wasm",
    runtime: `edge-runtime ${await pkgVersion('edge-runtime')}`,
    timings: { bundleMs: main.bundleMs, compileMs: main.compileMs, fetchMs: main.fetchMs },
  });
} catch (e) {
  report = { runtime: 'edge', checks: [{ name: 'edge function builds and answers', ok: false, detail: errString(e) }], timings: {} };
}
process.exitCode = printReport(report) ? 0 : 1;
