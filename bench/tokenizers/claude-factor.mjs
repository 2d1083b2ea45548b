// How the Claude factors in src/models.rs were derived, re-run: ratio of a reference Claude count
// to our exact o200k_base count, per content class, on real text from this repository.
//   node bench/tokenizers/claude-factor.mjs
// Reference, Claude up to 4.6: ai-tokenizer 1.0.6's `claude` encoding times its per-model
// contentMultiplier (1.1 for every Claude model it lists), whose published accuracy against the
// real count_tokens API is 97.6-99.98 % (its README). Claude Opus 4.7 and later has a new
// tokenizer and no offline reference: its reference is the first one times the published
// per-class increases (independent counts against count_tokens: ~1.45x English prose,
// 1.13-1.20x code (1.165 used), 1.00x CJK; Anthropic: 1.0-1.35x overall). JSON is taken as code.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const walk = (dir, ext) => readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) =>
  e.isDirectory() ? walk(join(dir, e.name), ext) : ext.some((x) => e.name.endsWith(x)) ? [join(dir, e.name)] : []);
const read = (files) => files.sort().map((f) => readFileSync(join(root, f), 'utf8'));
const fixture = JSON.parse(readFileSync(join(root, 'tests/fixtures/token-counts.json'), 'utf8')).cases;
const classes = {
  prose: read(['README.md', ...walk('docs', ['.md'])]),
  code: read([...walk('src', ['.rs']), ...walk('js/src', ['.ts'])]),
  json: read(walk('tests/fixtures/golden', ['.json'])),
  cjk: fixture.filter((c) => /^cjk_/.test(c.name)).map((c) => c.text),
};
const OPUS_47 = { prose: 1.45, code: 1.165, json: 1.165, cjk: 1.0 };

const cc = await import('../../js/dist/entry/node.js');
await cc.init();
const { Tokenizer } = await import('ai-tokenizer');
const claude = new Tokenizer(await import('ai-tokenizer/encoding/claude'));
const { models } = await import('ai-tokenizer');
const multiplier = models['anthropic/claude-sonnet-4.5'].tokens.contentMultiplier;

const rows = {};
for (const [name, texts] of Object.entries(classes)) {
  const o200k = texts.reduce((n, t) => n + cc.countTokens(t, 'o200k_base'), 0);
  const ref46 = texts.reduce((n, t) => n + claude.count(t), 0) * multiplier;
  rows[name] = { o200k, ref46, ref47: ref46 * OPUS_47[name], bytes: texts.reduce((n, t) => n + Buffer.byteLength(t), 0) };
}
// One factor per generation: pooled over prose, code and JSON in equal weight (an agent's
// context), CJK reported beside.
const mixed = ['prose', 'code', 'json'];
const factor = (key) => mixed.reduce((s, c) => s + rows[c][key] / rows[c].o200k, 0) / mixed.length;
const f46 = factor('ref46'), f47 = factor('ref47');
console.log(`ai-tokenizer claude encoding x ${multiplier}`);
console.log('| class | bytes | o200k | ref <=4.6 | ratio <=4.6 | ref 4.7+ | ratio 4.7+ |');
console.log('|---|---|---|---|---|---|---|');
for (const [c, r] of Object.entries(rows)) {
  console.log(`| ${c} | ${r.bytes} | ${r.o200k} | ${r.ref46.toFixed(0)} | ${(r.ref46 / r.o200k).toFixed(3)} | ${r.ref47.toFixed(0)} | ${(r.ref47 / r.o200k).toFixed(3)} |`);
}
console.log(`factor <=4.6: ${f46.toFixed(3)}; factor 4.7+: ${f47.toFixed(3)}`);
console.log('| class | error <=4.6 | error 4.7+ |');
console.log('|---|---|---|');
const round = (f) => Math.round(f * 100) / 100;
for (const [c, r] of Object.entries(rows)) {
  const e46 = (round(f46) * r.o200k) / r.ref46 - 1, e47 = (round(f47) * r.o200k) / r.ref47 - 1;
  console.log(`| ${c} | ${(e46 * 100).toFixed(1)} % | ${(e47 * 100).toFixed(1)} % |`);
}
