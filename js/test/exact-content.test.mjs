// Kept content and stored copies are the app's, byte for byte (issue 35, classes 2 and 3):
// numbers as JSON.stringify wrote them (the core parsed floats approximately and printed them its
// own way: -113.71428571428571 came back as -113.71428571428572), and lone surrogates in JSON
// outputs stored as the app's (they were stored as U+FFFD when a real U+FFFD stood beside them).
// Each test failed before its fix.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryStore, createCompactor, init } from '../dist/entry/node.js';

await init();

// Numbers whose JSON.stringify text is the shortest round trip (JavaScript's own printing:
// exponents with a sign, no exponent below 1e21), and values whose nearest double serde_json's
// fast parser missed.
const numbers = {
  a: -113.71428571428571,
  b: -99.71428571428571,
  c: 123456789.12345679,
  d: 0.1 + 0.2,
  e: 18446744073709552000,
  f: 1e21,
  g: -1.7976931348623157e308,
  h: 5e-324,
  i: -1e-7, // (-0 is no JSON number: JSON.stringify writes 0)
  j: 1.5e-7,
  k: 1e16,
  l: 2 ** 53 + 2,
  m: 9007199254740993,
  n: 0.000001,
  o: 1 / 3,
};
const rows = (n, extra = () => ({})) => ({ rows: Array.from({ length: n }, (_, i) => ({ i, v: i / 7 - 100, w: (i + 1) * 1e21, ...numbers, ...extra(i) })) });
const bigText = Array.from({ length: 4_000 }, (_, i) => `line ${i}: value ${(i * 7919) % 10_007} ok`).join('\n');

const turn = (outputs) => [
  { role: 'system', content: 'You are an agent.' },
  { role: 'user', content: 'go' },
  { role: 'assistant', content: outputs.map((_, i) => ({ type: 'tool-call', toolCallId: `c${i}`, toolName: 'query', input: { limit: 0.1 + 0.2 } })) },
  { role: 'tool', content: outputs.map((output, i) => ({ type: 'tool-result', toolCallId: `c${i}`, toolName: 'query', output })) },
];

test('a kept JSON output comes back with every number as the tool wrote it when a sibling result is offloaded', async () => {
  const kept = { type: 'json', value: { ...numbers, list: Object.values(numbers) } };
  const messages = turn([{ type: 'text', value: bigText }, kept]);
  // Numbers in other fields of other parts too: an image's provider options (its part is read
  // field by field: a number past 64 bits there was refused), the results' own.
  messages[1] = { role: 'user', content: [{ type: 'text', text: 'go', providerOptions: { meta: numbers } }, { type: 'image', image: new URL('https://example.com/a.png'), providerOptions: { meta: numbers } }] };
  for (const part of messages[3].content) part.providerOptions = { meta: { ...numbers, tiny: 0.0000015 } };
  for (const shape of ['long-lived', 'per-request']) {
    const store = new MemoryStore();
    const options = { contextWindow: 16_000, store, ...(shape === 'per-request' ? { statePath: '/state.json' } : {}) };
    const compactor = await createCompactor(options);
    const result = await compactor.manage(messages);
    assert.ok(result.plan.actions.some((a) => a.type === 'offload'), `${shape}: the sibling is offloaded`);
    const back = result.messages[3].content[1].output;
    assert.deepEqual(back, kept, shape);
    assert.equal(JSON.stringify(back), JSON.stringify(kept), shape);
    assert.equal(JSON.stringify(result.messages[2]), JSON.stringify(messages[2]), `${shape}: the calls' inputs`);
    assert.equal(JSON.stringify(result.messages[1]), JSON.stringify(messages[1]), `${shape}: the user's parts`);
    assert.deepEqual(result.messages[3].content[1], messages[3].content[1], `${shape}: the kept result`);
    compactor.dispose();
  }
});

test('the stored copy of an offloaded JSON output is JSON.stringify(value, null, 2): numbers, lone surrogates beside a real U+FFFD', async () => {
  for (const value of [rows(300), rows(300, (i) => ({ s: i % 2 ? 'x\udfff' : 'x\ufffd', t: `cut \ud83d`, u: '\ud83d\ude00 whole' }))]) {
    const store = new MemoryStore();
    const compactor = await createCompactor({ contextWindow: 16_000, store });
    const messages = turn([{ type: 'json', value }, { type: 'error-json', value }]);
    const result = await compactor.manage(messages);
    const offloads = result.plan.actions.filter((a) => a.type === 'offload' && a.path.endsWith('.json'));
    assert.equal(offloads.length, 2);
    for (const offload of offloads) {
      assert.equal(await store.read(offload.path), JSON.stringify(value, null, 2));
      assert.equal(offload.content, JSON.stringify(value, null, 2), 'the plan names what was stored');
    }
    compactor.dispose();
  }
});

test('wrapTools stores a JSON output over the threshold as JSON.stringify(value, null, 2)', async () => {
  const value = rows(300, (i) => ({ s: i % 2 ? 'x\udfff' : 'x\ufffd' }));
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 16_000, store });
  const tools = compactor.wrapTools({ query: { description: 'q', execute: async () => value } });
  const preview = await tools.query.execute({}, { toolCallId: 'w1' });
  assert.equal(typeof preview, 'string');
  const path = preview.match(/\/tool_outputs\/\S+\.json/)?.[0];
  assert.ok(path, preview);
  assert.equal(await store.read(path), JSON.stringify(value, null, 2));
  compactor.dispose();
});

test('a transcript holds JSON outputs and tool inputs as written: numbers, lone surrogates beside a real U+FFFD', async () => {
  const value = { ...numbers, s: 'x\udfff', r: 'x\ufffd', cut: 'emoji \ud83d', list: ['a\ud83d', 'a\ude00', 'a\ufffd'] };
  // The same value but for its lone surrogates, and two inputs alike but for theirs: told apart
  // by their places.
  const twin = { ...value, s: 'x\ufffd', cut: 'emoji \ufffd', list: ['a\ufffd', 'a\ufffd', 'a\ufffd'] };
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 4_000, store, history: { strategy: 'truncate' } });
  const messages = turn([{ type: 'json', value }, { type: 'json', value: twin }]);
  messages[2].content[0].input = { q: 'find \ud800', limit: 1e21 };
  messages[2].content[1].input = { q: 'find \ufffd', limit: 1e21 };
  for (let t = 0; t < 12; t++) messages.push({ role: 'user', content: `Q ${t}: ${'word '.repeat(200)}` }, { role: 'assistant', content: `A ${t}: ${'more '.repeat(200)}` });
  const result = await compactor.manage(messages);
  const saved = result.plan.actions.find((a) => a.type === 'save-transcript');
  assert.ok(saved, 'a transcript is saved');
  assert.equal(await store.read(saved.path), JSON.stringify(messages, null, 2));
  // The Markdown shows each JSON output pretty-printed and each input compact, as written.
  const markdown = await store.read(saved.readablePath);
  const at = (text) => markdown.indexOf(text);
  assert.ok(at(JSON.stringify(value, null, 2)) !== -1 && at(JSON.stringify(twin, null, 2)) > at(JSON.stringify(value, null, 2)));
  assert.ok(at(JSON.stringify(messages[2].content[0].input)) !== -1 && at(JSON.stringify(messages[2].content[1].input)) > at(JSON.stringify(messages[2].content[0].input)));
  compactor.dispose();
});

test('a kept JSON output with a lone surrogate beside a real U+FFFD comes back as given when a sibling is offloaded', async () => {
  const kept = { type: 'json', value: { s: 'x\udfff', r: 'x\ufffd', ...numbers } };
  const messages = turn([{ type: 'text', value: bigText }, kept]);
  const compactor = await createCompactor({ contextWindow: 16_000, store: new MemoryStore() });
  const result = await compactor.manage(messages);
  assert.ok(result.plan.actions.some((a) => a.type === 'offload'));
  const back = result.messages[3].content[1].output;
  assert.deepEqual(back, kept);
  assert.equal(JSON.stringify(back), JSON.stringify(kept));
  compactor.dispose();
});

// A real U+FFFD is the app's too, wherever a lone surrogate with the same U+FFFD form stands
// (fuzz/api: stored-surrogate). Each case stored `x\ude00` where the app wrote `x\ufffd` before
// its fix: a text output whose JSON holds the text `\ud83d` (an escaped backslash, taken for a
// lone surrogate), a `content` output whose items are joined, a user's text file decoded from
// base64, and a conversation whose real U+FFFD came in a turn before the first lone surrogate.
test('a real U+FFFD is stored as written beside a lone surrogate with the same U+FFFD form', async () => {
  const lone = { role: 'user', content: 'x\ude00' };
  const realLines = Array.from({ length: 2_000 }, (_, i) => `{"i":${i},"s":"x\ufffd","raw":"\\\\ud83d ${i}"}`).join('\n');
  const joined = ['🎉 x\ufffd real', `lone \ud83d ${'filler line\n'.repeat(6_000)}`, 'x\ufffd tail'];
  // It starts with a byte-order mark, which the stored copy keeps (a default TextDecoder drops it).
  const fileText = `\ufeff${'line x\ufffd ok\n'.repeat(3_000)}`;
  const cases = {
    'text output': [{ type: 'text', value: realLines }],
    'content output': [{ type: 'content', value: joined.map((text) => ({ type: 'text', text })) }],
  };
  for (const [name, outputs] of Object.entries(cases)) {
    const store = new MemoryStore();
    const compactor = await createCompactor({ contextWindow: 16_000, store });
    const messages = turn(outputs);
    messages.splice(2, 0, lone, { role: 'assistant', content: 'ok' });
    const result = await compactor.manage(messages);
    const offload = result.plan.actions.find((a) => a.type === 'offload');
    assert.ok(offload, `${name}: offloaded`);
    const stored = await store.read(offload.path);
    const expected = name === 'text output' ? realLines : undefined;
    if (expected) assert.equal(stored, expected, name);
    else for (const text of joined) assert.ok(stored.includes(text), `${name}: ${JSON.stringify(text.slice(0, 20))} kept`);
    compactor.dispose();
  }
  // A user's text file as base64, and the real U+FFFD in turn 1, the lone surrogate in turn 2
  // (one compactor: the second turn syncs only what was appended).
  const store = new MemoryStore();
  const compactor = await createCompactor({ contextWindow: 16_000, store });
  const file = { type: 'file', mediaType: 'text/plain', data: Buffer.from(fileText).toString('base64') };
  const messages = [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'x\ufffd' },
    { role: 'assistant', content: 'ok' },
  ];
  await compactor.manage(messages);
  messages.push(lone, { role: 'assistant', content: 'ok' }, { role: 'user', content: [{ type: 'text', text: 'read x\ufffd' }, file] });
  const result = await compactor.manage(messages);
  const offload = result.plan.actions.find((a) => a.replace?.kind === 'file-text');
  assert.ok(offload, 'the file is offloaded');
  assert.equal(await store.read(offload.path), fileText);
  assert.equal(JSON.stringify(result.messages.slice(0, 5)), JSON.stringify(messages.slice(0, 5)), 'the kept messages');
  compactor.dispose();
});
