// Issue 21 item 2: the open-weight tokenizers licensed for redistribution ship as compact prebuilt
// data (dist/ranks/<name>.wasm, made by scripts/tokenizer-data.mjs at build time) and load on
// demand like cl100k_base; each counts every case of tests/fixtures/hf-token-counts.json as the
// official Python `tokenizers` / `mistral-common` did. Missing or damaged data is a typed error.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync, cpSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as cc from '../dist/entry/node.js';

const fixture = JSON.parse(readFileSync(new URL('../../tests/fixtures/hf-token-counts.json', import.meta.url), 'utf8'));
const data = (name) => readFileSync(new URL(`../dist/ranks/${name}.wasm`, import.meta.url));
const FAMILIES = ['qwen3', 'qwen2_5', 'deepseek_v3', 'mistral_tekken_240718', 'mistral_tekken_240911'];

function mismatches(name, api = cc) {
  return fixture.cases
    .filter((c) => api.countTokens(c.text, name) !== c[name])
    .map((c) => `${c.name}: expected ${c[name]}, got ${api.countTokens(c.text, name)}`);
}

// First, while nothing is loaded: damaged data and data for another tokenizer are refused, and
// leave the name loadable.
test('damaged or mismatched data is a typed invalid_rank_data error', async () => {
  await cc.init();
  const wasm = data('mistral_tekken_240718');
  // A data-only module cut short does not compile; its raw data cut short does not parse.
  await assert.rejects(cc.loadEncoding('mistral_tekken_240718', wasm.subarray(0, wasm.length - 100)), (e) => {
    assert.equal(e.code, 'invalid_rank_data');
    assert.match(e.message, /"mistral_tekken_240718": not a data-only module/);
    return true;
  });
  const raw = Buffer.from('CCH1\x15mistral_tekken_240718\x04\x00\x09\xff\xff\xff\xff\x0f', 'latin1');
  await assert.rejects(cc.loadEncoding('mistral_tekken_240718', raw), (e) => {
    assert.equal(e.code, 'invalid_rank_data');
    assert.match(e.message, /mistral_tekken_240718.*more than the data holds/);
    return true;
  });
  await assert.rejects(cc.loadEncoding('mistral_tekken_240718', data('qwen2_5')), (e) => {
    assert.equal(e.code, 'invalid_rank_data');
    assert.match(e.message, /is for "qwen2_5"/);
    return true;
  });
  assert.equal(cc.isEncodingLoaded('mistral_tekken_240718'), false);
});

test('init({ encodings }) loads a prebuilt tokenizer; each counts the fixture exactly', async () => {
  assert.equal(cc.isEncodingLoaded('qwen3'), false);
  assert.throws(() => cc.countTokens('x', 'qwen3'), (e) => e.code === 'encoding_not_loaded' && e.details.name === 'qwen3');
  await cc.init({ encodings: ['qwen3'] });
  assert.equal(cc.isEncodingLoaded('qwen3'), true);
  // Qwen splits digits one by one; o200k_base in threes.
  assert.equal(cc.countTokens('123456', 'qwen3'), 6);
  assert.equal(cc.countTokens('123456', 'o200k_base'), 2);
  assert.deepEqual(mismatches('qwen3'), []);
  for (const name of FAMILIES.slice(1)) {
    // Concurrent calls share one load.
    await Promise.all([cc.loadEncoding(name), cc.loadEncoding(name)]);
    assert.deepEqual(mismatches(name), [], name);
  }
  // The same counts as the tokenizer.json path (hf-tokenizers.test.mjs checks that one).
  assert.ok(fixture.cases.length >= 70);
});

test('createCompactor loads the model\'s prebuilt tokenizer and counts exactly with it', async () => {
  // deepseek-chat → deepseek_v3, loaded above; a fresh process would load it here. The model
  // names of providers, Ollama and Hugging Face ids all map.
  for (const [model, tokenizer] of [['qwen/qwen3-32b', 'qwen3'], ['qwen3:8b', 'qwen3'], ['deepseek-chat', 'deepseek_v3'], ['mistral/mistral-large-latest', 'mistral_tekken_240911']]) {
    const compactor = await cc.createCompactor({ model });
    assert.equal(compactor.model.tokenizer, tokenizer, model);
    assert.equal(compactor.model.tokenRatio, 1, `${model}: exact, no factor`);
    const text = fixture.cases.find((c) => c.name === 'digits' || /\d{4}/.test(c.text)).text;
    const messages = [{ role: 'user', content: text }];
    const expected = cc.countBreakdown(messages, { encoding: tokenizer }).total;
    assert.equal(compactor.usage(messages).tokens, expected, model);
  }
  // A model the package ships no data for keeps its estimate until its tokenizer.json is loaded.
  const llama = await cc.createCompactor({ model: 'llama3.1:8b' });
  assert.equal(llama.model.tokenizer, 'llama3_1');
  assert.notEqual(llama.model.tokenRatio, 1);
});

test('names without shipped data are a typed error that says how to load them', async () => {
  for (const name of ['llama3_1', 'gemma3', 'p50k_base']) {
    await assert.rejects(cc.init({ encodings: [name] }), (e) => {
      assert.equal(e.code, 'unknown_encoding');
      assert.match(e.message, new RegExp(`"${name}".*loadTokenizer\\('${name}', json\\)`));
      return true;
    });
  }
});

/** A copy of the built package (its own module instances, so its own core), less `leave`. */
function copyDist(leave = '\0') {
  const dir = mkdtempSync(join(tmpdir(), 'cc-prebuilt-'));
  cpSync(new URL('../dist/', import.meta.url), dir, { recursive: true, filter: (src) => !src.endsWith(leave) });
  return dir;
}

/** Runs `body(dir)` on a fresh copy of the package (less `leave`), then removes the copy. */
async function withCopy(leave, body) {
  const dir = copyDist(leave);
  try {
    await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('lite: prebuilt data refers to o200k_base\'s tokens; before o200k it says what to load', async () => {
  await withCopy(undefined, async (dir) => {
    const lite = await import(pathToFileURL(join(dir, 'entry/node-lite.js')).href);
    await lite.init();
    await assert.rejects(lite.loadEncoding('qwen3', data('qwen3')), (e) => {
      assert.equal(e.code, 'encoding_not_loaded');
      assert.match(e.message, /load o200k_base first/);
      return true;
    });
    await lite.loadEncoding('o200k_base', data('o200k_base'));
    await lite.loadEncoding('qwen3', await WebAssembly.compile(data('qwen3')));
    assert.deepEqual(mismatches('qwen3', lite), []);
  });
});

test('a package copy missing a tokenizer\'s data file says which file, typed', async () => {
  await withCopy('deepseek_v3.wasm', async (dir) => {
    assert.equal(existsSync(join(dir, 'ranks/deepseek_v3.wasm')), false);
    const copy = await import(pathToFileURL(join(dir, 'entry/node.js')).href);
    await copy.init();
    await assert.rejects(copy.loadEncoding('deepseek_v3'), (e) => {
      assert.equal(e.code, 'encoding_not_loaded');
      assert.match(e.message, /"deepseek_v3" \(ranks\/deepseek_v3\.wasm\) could not be loaded: .*ENOENT/);
      return true;
    });
    // createCompactor for such a model says so too, rather than silently estimating.
    await assert.rejects(copy.createCompactor({ model: 'deepseek-chat' }), (e) => e.code === 'encoding_not_loaded');
    await copy.loadEncoding('qwen2_5');
    assert.equal(copy.countTokens('123456', 'qwen2_5'), 6);
  });
});

test('compileTokenizer makes the same compact data from a user\'s tokenizer.json (Llama 3.1 here)', async () => {
  const file = readFileSync(new URL('../../.tools/tokenizers/llama3_1/tokenizer.json', import.meta.url));
  const compiled = await cc.compileTokenizer('llama3_1', file);
  assert.ok(compiled instanceof Uint8Array);
  const gz = (b) => gzipSync(b, { level: 9 }).length;
  // Llama 3.1's merges are its ranks, so only the vocabulary is stored.
  assert.ok(gz(compiled) * 3 < gz(file), `${gz(compiled)} of ${gz(file)} bytes gzipped`);
  assert.equal(cc.isEncodingLoaded('llama3_1'), false);
  await cc.loadEncoding('llama3_1', compiled);
  assert.deepEqual(mismatches('llama3_1'), []);
  const compactor = await cc.createCompactor({ model: 'llama3.1:8b' });
  assert.equal(compactor.model.tokenRatio, 1);
  // Made for one name, refused under another.
  await assert.rejects(cc.loadEncoding('llama3', compiled), (e) => e.code === 'invalid_rank_data' && /is for "llama3_1"/.test(e.message));
  await assert.rejects(cc.compileTokenizer('broken', '{"model":'), (e) => e.code === 'invalid_rank_data');
});

const tokenizerJson = (family) => readFileSync(new URL(`../../.tools/tokenizers/${family}/tokenizer.json`, import.meta.url), 'utf8');

test('lite: loadTokenizer compiles with the o200k_base data it was handed, and says so before', async () => {
  await withCopy(undefined, async (dir) => {
    const lite = await import(pathToFileURL(join(dir, 'entry/node-lite.js')).href);
    await lite.init();
    await assert.rejects(lite.loadTokenizer('qwen3', tokenizerJson('qwen3')), (e) => {
      assert.equal(e.code, 'encoding_not_loaded');
      assert.match(e.message, /load it first: `await loadEncoding\('o200k_base', ranks\)`/);
      return true;
    });
    await lite.loadEncoding('o200k_base', data('o200k_base'));
    const info = await lite.loadTokenizer('qwen3', tokenizerJson('qwen3'));
    assert.equal(info.name, 'qwen3');
    assert.deepEqual(mismatches('qwen3', lite), []);
  });
});

test('the tokenizer compiler is its own module: a copy without it counts and plans, and loadTokenizer says what is missing', async () => {
  await withCopy('compiler_bg.wasm', async (dir) => {
    assert.equal(existsSync(join(dir, 'compiler/compiler_bg.wasm')), false);
    const copy = await import(pathToFileURL(join(dir, 'entry/node.js')).href);
    await copy.init({ encodings: ['qwen3'] });
    assert.deepEqual(mismatches('qwen3', copy), [], 'prebuilt data needs no compiler');
    await assert.rejects(copy.loadTokenizer('mine', tokenizerJson('qwen3')), (e) => {
      assert.equal(e.code, 'not_initialized');
      assert.match(e.message, /tokenizer compiler \(compiler\/compiler_bg\.wasm\) could not be loaded/);
      return true;
    });
    await assert.rejects(copy.compileTokenizer('mine', tokenizerJson('qwen3')), (e) => e.code === 'not_initialized');
  });
});
