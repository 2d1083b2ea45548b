// What a browser or a Worker downloads to count tokens: each entry bundled with esbuild
// (minified ESM, browser conditions), .wasm files as separate assets, gzip -9. Prints JSON.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
const { build } = await import('esbuild').catch(() => {
  console.error('sizes.mjs bundles with esbuild, one of the benchmark packages: run `(cd bench/tokenizers && npm ci)` once (npm run bench does)');
  process.exit(1);
});

const HERE = new URL('.', import.meta.url).pathname;
const DIST = join(HERE, '../../js/dist');
const nm = (p) => join(HERE, 'node_modules', p);
const ranks = (e) => join(DIST, 'ranks', `${e}.wasm`);
const SETS = { o200k: ['o200k_base'], both: ['o200k_base', 'cl100k_base'] };

const TARGETS = [
  {
    name: 'context-compactor (full: planner, stores, AI SDK kit + counting)',
    entry: () => ({ js: `export * from '${join(DIST, 'entry/browser.js')}';`, wasm: [join(DIST, 'wasm/context_compactor_bg.wasm')] }),
    ranks: true,
  },
  {
    name: 'context-compactor/tokens (counting only)',
    entry: () => ({ js: `export * from '${join(DIST, 'entry/browser-tokens.js')}';`, wasm: [join(DIST, 'counter/counter_bg.wasm')] }),
    ranks: true,
    sets: { none: [], ...SETS },
  },
  {
    name: 'context-compactor/lite (no ranks)',
    entry: () => ({ js: `export * from '${join(DIST, 'entry/browser-lite.js')}';`, wasm: [join(DIST, 'wasm/context_compactor_bg.wasm')] }),
    sets: { none: [] },
  },
  {
    name: 'gpt-tokenizer/encoding/*',
    entry: (encs) => ({ js: encs.map((e, i) => `export { countTokens as c${i} } from 'gpt-tokenizer/encoding/${e}';`).join('\n'), wasm: [] }),
  },
  {
    name: 'tiktoken/lite + encoders/*.json',
    entry: (encs) => ({
      js: `import { Tiktoken } from 'tiktoken/lite';\n${encs.map((e, i) => `import r${i} from 'tiktoken/encoders/${e}.json';`).join('\n')}\nexport const encs = [${encs.map((_, i) => `r${i}`).join(',')}].map((r) => new Tiktoken(r.bpe_ranks, r.special_tokens, r.pat_str));`,
      wasm: [join(nm('tiktoken'), 'lite', 'tiktoken_bg.wasm')],
    }),
  },
  {
    name: 'js-tiktoken/lite + ranks/*',
    entry: (encs) => ({ js: `import { Tiktoken } from 'js-tiktoken/lite';\n${encs.map((e, i) => `import r${i} from 'js-tiktoken/ranks/${e}';`).join('\n')}\nexport const encs = [${encs.map((_, i) => `r${i}`).join(',')}].map((r) => new Tiktoken(r));`, wasm: [] }),
  },
];

const gz = (b) => gzipSync(b, { level: 9 }).length;
const rows = [];
for (const t of TARGETS) {
  for (const [set, encs] of Object.entries(t.sets ?? SETS)) {
    const { js, wasm } = t.entry(encs);
    const res = await build({
      stdin: { contents: js, resolveDir: HERE, loader: 'js' },
      bundle: true, minify: true, format: 'esm', platform: 'browser', write: false,
      external: ['*.wasm', 'node:*'], conditions: ['worker', 'browser'], logLevel: 'silent',
    });
    const jsBytes = Buffer.from(res.outputFiles[0].contents);
    const files = [...wasm, ...(t.ranks ? encs.map(ranks) : [])].map((p) => readFileSync(p));
    rows.push({
      name: t.name, set,
      jsBytes: jsBytes.length, jsGzip: gz(jsBytes),
      wasmBytes: files.reduce((a, b) => a + b.length, 0), wasmGzip: files.reduce((a, b) => a + gz(b), 0),
      totalGzip: gz(jsBytes) + files.reduce((a, b) => a + gz(b), 0),
    });
  }
}
console.log(JSON.stringify(rows));
