// scripts/strip-wasm.mjs, which scripts/build.sh runs on wasm-pack's output (wasm-pack cannot pass
// wasm-bindgen's --remove-name-section / --remove-producers-section): it drops exactly those two
// custom sections and keeps every other byte; the shipped core has neither.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { stripWasm } from '../../scripts/strip-wasm.mjs';

const header = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
const custom = (name, payload) => {
  const body = [name.length, ...Buffer.from(name), ...payload];
  return [0x00, body.length, ...body];
};
// A type section declaring () -> (), a function section, and a code section with one empty body.
const typeSec = [0x01, 0x04, 0x01, 0x60, 0x00, 0x00];
const funcSec = [0x03, 0x02, 0x01, 0x00];
const codeSec = [0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b];

/** The custom sections' names in a module, in order. */
function customNames(bytes) {
  const module = new WebAssembly.Module(bytes);
  return ['name', 'producers', 'keep'].filter((n) => WebAssembly.Module.customSections(module, n).length > 0);
}

test('drops the name and producers sections and keeps the rest byte for byte', () => {
  const keep = custom('keep', [1, 2, 3]);
  const input = Uint8Array.from([
    ...header, ...typeSec, ...custom('producers', [0]), ...funcSec, ...keep, ...codeSec,
    ...custom('name', [0x01, 0x04, 0x01, 0x00, 0x01, 0x66]),
  ]);
  const { bytes, dropped } = stripWasm(input, 'in.wasm');
  assert.deepEqual([...bytes], [...header, ...typeSec, ...funcSec, ...keep, ...codeSec]);
  assert.deepEqual(dropped, ['producers (13 bytes)', 'name (13 bytes)']);
  assert.deepEqual(customNames(bytes), ['keep']);
  // Idempotent: a stripped module comes back unchanged.
  assert.deepEqual([...stripWasm(bytes).bytes], [...bytes]);
});

test('bad input: a clear error naming the file and the byte', () => {
  assert.throws(() => stripWasm(Buffer.from('not wasm'), 'x.wasm'), /x\.wasm: not a WebAssembly 1\.0 module/);
  const truncated = Uint8Array.from([...header, 0x01, 0x09, 0x01]);
  assert.throws(() => stripWasm(truncated, 'y.wasm'), /y\.wasm: section 1 at byte 8 runs past the end/);
  const badName = Uint8Array.from([...header, 0x00, 0x02, 0x05, 0x61]);
  assert.throws(() => stripWasm(badName, 'z.wasm'), /z\.wasm: custom section name at byte 8 runs past its section/);
});

test('the shipped core wasm has no name or producers section', () => {
  const core = readFileSync(new URL('../dist/wasm/context_compactor_bg.wasm', import.meta.url));
  const module = new WebAssembly.Module(core);
  assert.equal(WebAssembly.Module.customSections(module, 'name').length, 0);
  assert.equal(WebAssembly.Module.customSections(module, 'producers').length, 0);
  // Stripping it again changes nothing: build.sh already did.
  assert.equal(Buffer.compare(stripWasm(core).bytes, core), 0);
});
