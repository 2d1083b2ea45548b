// Issue 21 item 5: `init({ encodings })` makes each named encoding count synchronously, as the
// README's API section says; a plain `init()` still loads only o200k_base.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as cc from '../dist/entry/node.js';

// Counts from the official tiktoken (scripts/oracle/regen.sh).
const fixture = JSON.parse(readFileSync(new URL('../../tests/fixtures/token-counts.json', import.meta.url), 'utf8'));

test('plain init() loads o200k_base only; init({ encodings }) adds cl100k_base', async () => {
  await cc.init();
  assert.equal(cc.countTokens('hello world', 'o200k_base'), 2);
  assert.throws(() => cc.countTokens('x', 'cl100k_base'), (e) => e.code === 'encoding_not_loaded');
  // A later call with a list loads what it names (the core is not loaded twice).
  await cc.init({ encodings: ['o200k_base', 'cl100k_base'] });
  assert.equal(cc.isEncodingLoaded('cl100k_base'), true);
  assert.equal(cc.countTokens('x', 'cl100k_base'), 1);
  let differ = 0;
  for (const c of fixture.cases) {
    assert.equal(cc.countTokens(c.text, 'cl100k_base'), c.cl100k_base, c.name);
    assert.equal(cc.countTokens(c.text, 'o200k_base'), c.o200k_base, c.name);
    if (c.cl100k_base !== c.o200k_base) differ++;
  }
  assert.ok(differ > 10, 'the fixture tells the two encodings apart');
});

test('init rejects a malformed encodings option and an unknown name with typed errors', async () => {
  await assert.rejects(cc.init({ encodings: 'cl100k_base' }), TypeError);
  await assert.rejects(cc.init({ encodings: ['p50k_base'] }), (e) => e.code === 'unknown_encoding');
});
