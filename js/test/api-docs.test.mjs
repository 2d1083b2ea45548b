// docs/API.md is the hand-kept API reference: every export (values of each entry and subpath,
// exported type names, Compactor methods) must be documented there, and nothing documented
// may be missing from the build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as main from '../dist/entry/node.js';
import * as tokens from '../dist/entry/node-tokens.js';
import * as nodeStores from '../dist/stores/node.js';
import * as browserStores from '../dist/stores/browser.js';
import * as unstorageStores from '../dist/stores/unstorage.js';
import * as durableObjectStores from '../dist/stores/durable-object.js';
import * as langchain from '../dist/langchain.js';
import * as openaiAgents from '../dist/openai-agents.js';

const docs = readFileSync(new URL('../../docs/API.md', import.meta.url), 'utf8');
const headings = new Set([...docs.matchAll(/^### (\w+)$/gm)].map((m) => m[1]));
// Type names exported by index.d.ts and every file it re-exports with `export type *`.
const dts = (file) => readFileSync(new URL(`../dist/${file}`, import.meta.url), 'utf8');
const typeNames = new Set([
  ...[...dts('index.d.ts').matchAll(/export type \{([^}]+)\}/g)].flatMap((m) => m[1].split(',').map((s) => s.trim()).filter(Boolean)),
  ...[...dts('types.d.ts').matchAll(/^export (?:interface|type) (\w+)/gm)].map((m) => m[1]),
]);

test('every value export has a section, and every section is an export', () => {
  const values = new Set([...Object.keys(main), ...Object.keys(nodeStores), ...Object.keys(browserStores), ...Object.keys(unstorageStores), ...Object.keys(durableObjectStores), 'FileStore', 'CompactorErrorCode',
    // The Deno store cannot load in Node: read its exports from its declarations.
    ...[...dts('stores/deno.d.ts').matchAll(/^export declare class (\w+)/gm)].map((m) => m[1])]);
  for (const name of values) assert.ok(headings.has(name), `docs/API.md has no "### ${name}"`);
  for (const heading of headings) assert.ok(values.has(heading), `docs/API.md documents "${heading}", which is not exported`);
});

test('the tokens entry exports only what the main entry exports, each listed in its section', () => {
  const section = docs.slice(docs.indexOf('## Counting only'), docs.indexOf('## The compactor'));
  for (const name of Object.keys(tokens)) {
    assert.ok(name in main, `context-compactor/tokens exports ${name}, which the main entry does not`);
    assert.ok(section.includes(`\`${name}\``), `the tokens section of docs/API.md does not list ${name}`);
  }
  for (const name of [...dts('counter.d.ts').matchAll(/export type \{([^}]+)\}/g)].flatMap((m) => m[1].split(',').map((s) => s.trim()).filter(Boolean))) {
    assert.ok(typeNames.has(name), `context-compactor/tokens exports type ${name}, which the main entry does not`);
  }
});

test('every exported type is named in the reference', () => {
  assert.ok(typeNames.size > 30, `only ${typeNames.size} type names parsed`);
  for (const name of typeNames) assert.ok(new RegExp(`\\b${name}\\b`).test(docs), `type ${name} is not in docs/API.md`);
});

test('every Compactor method is documented as compactor.<method>', () => {
  const methods = Object.getOwnPropertyNames(main.Compactor.prototype).filter((m) => m !== 'constructor');
  methods.push('prepareStep'); // an arrow-function property
  for (const m of methods) assert.ok(docs.includes(`compactor.${m}`), `compactor.${m} is not documented`);
});

test('each framework adapter entry lists its exports in its section', () => {
  for (const [entry, module, heading] of [['langchain', langchain, '## LangChain.js agents'], ['openai-agents', openaiAgents, '## OpenAI Agents SDK']]) {
    const at = docs.indexOf(heading);
    assert.ok(at >= 0, `docs/API.md has no "${heading}" section`);
    const section = docs.slice(at, docs.indexOf('\n## ', at + 1));
    for (const name of Object.keys(module)) assert.ok(section.includes(`\`${name}(`), `the ${entry} section of docs/API.md does not document ${name}`);
  }
});

test('the Cloudflare Agents entry lists its exports in its section', () => {
  // dist/cloudflare.js imports the Workers entry (its .wasm as modules): read its declarations.
  const names = [...dts('cloudflare.d.ts').matchAll(/^export declare function (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual(names.sort(), ['chatCompactor', 'streamTextOptions']);
  const at = docs.indexOf('## Cloudflare Agents');
  assert.ok(at >= 0, 'docs/API.md has no "## Cloudflare Agents" section');
  const section = docs.slice(at, docs.indexOf('\n## ', at + 1));
  for (const name of names) assert.ok(section.includes(`\`${name}(`), `the cloudflare section of docs/API.md does not document ${name}`);
});
