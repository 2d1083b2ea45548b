// Where the npm host did something else than the Python host for the same input (found by
// comparing the two, issue 31): each test fails on the npm host as it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import * as cc from '../dist/entry/node.js';
import { prose } from '../../tests/runtimes/stateless.mjs';

await cc.init();
const chat = (turns) => [
  { role: 'system', content: 'You are a helpful research agent.' },
  ...Array.from({ length: turns }, (_, t) => [
    { role: 'user', content: `Turn ${t}: ${prose(t, 30)}` },
    { role: 'assistant', content: `Part ${t}: ${prose(t + 2, 160)}` },
  ]).flat(),
];

test('loadState as the first call of a process loads the core itself', async () => {
  const store = new cc.MemoryStore();
  const compactor = await cc.createCompactor({ contextWindow: 8_000, store, statePath: '/state/a.json', summarize: () => '## S\nx' });
  await compactor.compact(chat(20));
  const text = await store.read('/state/a.json');
  const entry = new URL('../dist/entry/node.js', import.meta.url).href;
  const script = `const cc = await import(${JSON.stringify(entry)}); const store = new cc.MemoryStore(); await store.write('/s.json', process.argv[1]);
const state = await cc.loadState(store, '/s.json'); process.stdout.write(JSON.stringify(Object.keys(state).sort()));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script, text], { cwd: fileURLToPath(new URL('.', import.meta.url)) }).toString();
  assert.deepEqual(JSON.parse(out), Object.keys(compactor.state()).sort());
});

test('a cancelled call is saved with its time, as any call that goes out', async () => {
  const store = new cc.MemoryStore();
  const compactor = await cc.createCompactor({ model: 'claude-opus-4-5', contextWindow: 8_000, store, statePath: '/state/c.json', now: () => 1_700_000_000_000, onPreCompact: () => ({ cancel: true }) });
  const result = await compactor.compact(chat(12)); // below the hard limit: the cancel holds
  assert.equal(result.cancelled, true);
  const saved = await cc.loadState(store, '/state/c.json');
  assert.ok(saved, 'the state was saved');
  assert.equal(saved.lastCallAt, 1_700_000_000_000);
});

test('a summarizeTimeoutMs past what a timer takes waits for the summary (it does not fire at once)', async () => {
  const compactor = await cc.createCompactor({ contextWindow: 8_000, summarizeTimeoutMs: 2 ** 31, summarize: async () => { await new Promise((r) => setTimeout(r, 50)); return '## S\nMade.'; } });
  const result = await compactor.compact(chat(20));
  const event = result.events.find((e) => e.strategy === 'summarize');
  assert.equal(event.status, 'applied', event.error);
});

test('an onPreCompact answer of the wrong type is a typed error naming the field, in the core', async () => {
  for (const [answer, field] of [[{ cancel: 1 }, 'onPreCompact.cancel'], [{ cancel: 'no' }, 'onPreCompact.cancel'], [{ customSummary: 5 }, 'onPreCompact.customSummary'], ['cancel', 'onPreCompact']]) {
    const compactor = await cc.createCompactor({ contextWindow: 8_000, onPreCompact: () => answer });
    await assert.rejects(compactor.compact(chat(12)), (e) => e instanceof cc.CompactorError && e.code === 'invalid_config' && e.details.field === field && /onPreCompact returned/.test(e.message), JSON.stringify(answer));
    // The compactor still works after the failed call.
    assert.ok(compactor.usage(chat(2)).tokens > 0);
  }
});

test('an onPreCompact answer with other keys is read for its three fields only', async () => {
  const compactor = await cc.createCompactor({ contextWindow: 8_000, onPreCompact: () => ({ type: 'done', cancel: true, note: 'x' }) });
  const result = await compactor.compact(chat(12));
  assert.equal(result.cancelled, true);
});
