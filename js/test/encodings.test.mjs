// The full entry: o200k_base comes with init(), cl100k_base on first need.
import test from 'node:test';
import assert from 'node:assert/strict';
import * as cc from '../dist/entry/node.js';

test('init loads o200k_base; a cl100k model loads cl100k_base through createCompactor', async () => {
  await cc.init();
  assert.equal(cc.isEncodingLoaded('o200k_base'), true);
  assert.equal(cc.isEncodingLoaded('cl100k_base'), false);
  assert.equal(cc.countTokens('hello world'), 2);
  assert.throws(() => cc.countTokens('hello world', 'cl100k_base'), (e) => e.code === 'encoding_not_loaded');
  const compactor = await cc.createCompactor({ model: 'gpt-4' });
  assert.equal(compactor.model.encoding, 'cl100k_base');
  assert.equal(cc.isEncodingLoaded('cl100k_base'), true);
  assert.equal(cc.countTokens('hello world', 'cl100k_base'), 2);
});
