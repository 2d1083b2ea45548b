// The lite entry: the core without ranks. Nothing is loaded for you; every way of handing the
// ranks over works, and wrong data is a typed error. (Its own process: node --test isolates files.)
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import * as lite from '../dist/entry/node-lite.js';
// Imported beside it on purpose: its data loader must not become the lite entry's.
import * as tokens from '../dist/entry/node-tokens.js';

const dist = new URL('../dist/', import.meta.url);
const fixture = JSON.parse(await readFile(new URL('../../tests/fixtures/token-counts.json', import.meta.url), 'utf8'));
const rejectsWith = (promise, code) => assert.rejects(promise, (e) => e.code === code || assert.fail(`${e.code}: ${e.message}`));

test('lite: bytes that are not the core are a typed error naming the file, and init can be retried', async () => {
  await rejectsWith(lite.init(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 255])), 'not_initialized');
  await assert.rejects(lite.init({ wasm: new Uint8Array(8) }), (e) => /wasm\/context_compactor_bg\.wasm could not be instantiated/.test(e.message));
  // A valid module that is not ours (here the empty one) would break the glue for good if it
  // were instantiated: refused before.
  await assert.rejects(lite.init(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])), (e) => e.code === 'not_initialized' && /not a context-compactor module/.test(e.message));
  const data = await readFile(new URL('ranks/o200k_base.wasm', dist));
  await assert.rejects(lite.init(await WebAssembly.compile(data)), (e) => e.code === 'not_initialized' && /exports no countTokens/.test(e.message));
  assert.equal(lite.isInitialized(), false);
});

test('lite: init loads no encoding, and counting says what to load (the tokens entry imported beside it loads its own)', async () => {
  await tokens.init();
  assert.equal(tokens.countTokens('hello world'), 2);
  await lite.init();
  assert.equal(lite.isEncodingLoaded('o200k_base'), false);
  assert.throws(() => lite.countTokens('hello'), (e) => e.code === 'encoding_not_loaded' && /loadEncoding/.test(e.message));
  await rejectsWith(lite.createCompactor({ model: 'gpt-4o' }), 'encoding_not_loaded');
  await rejectsWith(lite.loadEncoding('o200k_base'), 'encoding_not_loaded');
});

test('lite: damaged or mismatched ranks are typed errors, and leave the encoding unloaded', async () => {
  const o200kRaw = await readFile(new URL('../../data/o200k_base.ranks', import.meta.url));
  await rejectsWith(lite.loadEncoding('cl100k_base', o200kRaw), 'invalid_rank_data'); // the file is for o200k
  await rejectsWith(lite.loadEncoding('o200k_base', o200kRaw.subarray(0, 1000)), 'invalid_rank_data');
  await rejectsWith(lite.loadEncoding('o200k_base', new Uint8Array([1, 2, 3])), 'invalid_rank_data');
  await rejectsWith(lite.loadEncoding('p50k_base', o200kRaw), 'unknown_encoding');
  assert.equal(lite.isEncodingLoaded('o200k_base'), false);
  assert.equal(lite.isEncodingLoaded('cl100k_base'), false);
});

test('lite: cl100k_base is stored by reference to o200k_base; loading it first says what to load', async () => {
  const cl100k = await readFile(new URL('ranks/cl100k_base.wasm', dist));
  await assert.rejects(lite.loadEncoding('cl100k_base', cl100k), (e) => e.code === 'encoding_not_loaded' && /load o200k_base first/.test(e.message));
  assert.equal(lite.isEncodingLoaded('cl100k_base'), false);
});

test('lite: ranks as the package .wasm bytes, as a compiled module, or as the raw file; counts exact', async () => {
  await lite.loadEncoding('o200k_base', await readFile(new URL('ranks/o200k_base.wasm', dist)));
  const cl100kModule = await WebAssembly.compile(await readFile(new URL('ranks/cl100k_base.wasm', dist)));
  await lite.loadEncoding('cl100k_base', cl100kModule);
  assert.ok(lite.isEncodingLoaded('o200k_base') && lite.isEncodingLoaded('cl100k_base'));
  for (const c of fixture.cases) {
    assert.equal(lite.countTokens(c.text, 'o200k_base'), c.o200k_base, c.name);
    assert.equal(lite.countTokens(c.text, 'cl100k_base'), c.cl100k_base, c.name);
  }
  // Loading again is a no-op, whatever the source.
  await lite.loadEncoding('o200k_base', await readFile(new URL('../../data/o200k_base.ranks', import.meta.url)));
  const compactor = await lite.createCompactor({ model: 'gpt-4' });
  assert.equal(compactor.model.encoding, 'cl100k_base');
});
