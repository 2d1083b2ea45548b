// What the frameworks need from loading (tests/frameworks runs the real builds): data-only
// modules given as bytes are read without compiling (Workers and Edge forbid compiling bytes, and
// an app fetches the data from its static files), a module of another realm is accepted, the
// Workers and Edge entries name the import a missing encoding needs, and the glue carries no
// default .wasm URL for bundlers to emit a second copy of.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import vm from 'node:vm';
import * as lite from '../dist/entry/node-lite.js';
import { dataSegment } from '../dist/init.js';
import { notBundled } from '../dist/entry/bundled-data.js';

const dist = new URL('../dist/', import.meta.url);

test('o200k_base given as the bytes of its data-only module loads with compiling forbidden', async () => {
  await lite.init();
  const bytes = await readFile(new URL('ranks/o200k_base.wasm', dist));
  const { compile, instantiate, Module } = WebAssembly;
  const forbidden = () => { throw new Error('compiling is forbidden here'); };
  WebAssembly.compile = forbidden;
  WebAssembly.instantiate = forbidden;
  try {
    await lite.loadEncoding('o200k_base', bytes);
  } finally {
    Object.assign(WebAssembly, { compile, instantiate, Module });
  }
  assert.equal(lite.countTokens('hello world'), 2);
  assert.equal(lite.countTokens('The quick brown fox jumps over the lazy dog.'), 10);
});

test('dataSegment reads the data of every shipped data file and refuses code modules', async () => {
  for (const name of ['o200k_base', 'cl100k_base', 'qwen3']) {
    const bytes = new Uint8Array(await readFile(new URL(`ranks/${name}.wasm`, dist)));
    const data = dataSegment(bytes);
    assert.ok(data && data.length > 100_000, name);
    // The same bytes as instantiating the module gives.
    const { instance } = await WebAssembly.instantiate(bytes);
    const memory = new Uint8Array(instance.exports.data.buffer, 0, Number(instance.exports.size.value));
    assert.ok(Buffer.from(memory).equals(Buffer.from(data)), `${name}: the data segment differs from the module's memory`);
    // Nitro (Nuxt on cloudflare-module) copies a .wasm import's exports onto a function: an
    // export named `length` or `name` threw there ("Cannot assign to read only property").
    assert.deepEqual(WebAssembly.Module.exports(new WebAssembly.Module(bytes)).map((e) => e.name), ['data', 'size']);
    assert.doesNotThrow(() => Object.assign(() => undefined, instance.exports), name);
  }
  const core = new Uint8Array(await readFile(new URL('wasm/context_compactor_bg.wasm', dist)));
  assert.equal(dataSegment(core), undefined);
  assert.equal(dataSegment(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 11, 200])), undefined, 'a truncated section');
});

test('a data module compiled in another realm loads (a Next.js Edge route gives such modules)', async () => {
  await lite.init();
  const bytes = await readFile(new URL('ranks/cl100k_base.wasm', dist));
  const foreign = vm.runInNewContext('new WebAssembly.Module(bytes)', { bytes });
  assert.equal(foreign instanceof WebAssembly.Module, false, 'the module is of another realm');
  await lite.loadEncoding('o200k_base', await readFile(new URL('ranks/o200k_base.wasm', dist)));
  await lite.loadEncoding('cl100k_base', foreign);
  assert.equal(lite.countTokens('hello world', 'cl100k_base'), 2);
});

test('the Workers and Edge entries name the import that a data file they do not bundle needs', () => {
  for (const [runtime, suffix] of [['workerd', ''], ['edge', '?module']]) {
    assert.throws(() => notBundled(runtime, 'cl100k_base'), (error) => {
      assert.equal(error.code, 'encoding_not_loaded');
      assert.ok(error.message.includes(`import data from 'context-compactor/ranks/cl100k_base.wasm${suffix}'; await loadEncoding('cl100k_base', data)`), error.message);
      return true;
    });
    assert.throws(() => notBundled(runtime, 'compiler'), (error) => {
      assert.equal(error.code, 'not_initialized');
      assert.ok(error.message.includes(`import compiler from 'context-compactor/compiler.wasm${suffix}'; await init({ compiler })`), error.message);
      return true;
    });
  }
});

test('the wasm-bindgen glue has no default .wasm URL and accepts a module of another realm', async () => {
  for (const file of ['wasm/context_compactor.js', 'counter/counter.js', 'compiler/compiler.js']) {
    const glue = await readFile(new URL(file, dist), 'utf8');
    assert.doesNotMatch(glue, /new URL\('[\w.-]+\.wasm', import\.meta\.url\)/, file);
    assert.doesNotMatch(glue, /instanceof WebAssembly\.Module/, file);
  }
  // The package exports the files the Workers and Edge entries leave to the app.
  const pkg = JSON.parse(await readFile(new URL('../package.json', dist), 'utf8'));
  assert.equal(pkg.exports['./compiler.wasm'], './dist/compiler/compiler_bg.wasm');
  assert.equal(pkg.exports['./ranks/*'], './dist/ranks/*');
});

test('a non-string encoding is a TypeError, not a trap that breaks the module (fuzz/api: crash)', async () => {
  const cc = await import('../dist/entry/node.js');
  await cc.init();
  assert.throws(() => cc.countTokens('x', 42), TypeError);
  assert.throws(() => cc.countBreakdown([], { encoding: 42 }), TypeError);
  assert.throws(() => cc.warmUp(42), TypeError);
  assert.equal(cc.isEncodingLoaded(42), false);
  assert.equal(cc.countTokens('hello world'), 2, 'the module still counts');
});
