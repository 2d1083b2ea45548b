// The real stores: NodeFsStore (atomic, confined to its root), KvStore over Cloudflare-KV- and
// R2-shaped backends, CompositeStore routing /memories/, hostile paths, state persistence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, symlink, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompactorError, CompositeStore, KvStore, MemoryStore, createCompactor, init, loadState } from '../dist/entry/node.js';
import { NodeFsStore } from '../dist/stores/node.js';

await init();

const HOSTILE = ['/../etc/passwd', '/a/../../b', 'relative/path', '/a\0b', '/a\\..\\b', '/a//b', '/dir/', `/${'x'.repeat(256)}`, `/${'é'.repeat(128)}`, `/${'a/'.repeat(600)}z`, '', 42];

async function contract(store, label) {
  assert.equal(await store.read('/nothing/here.txt'), null, `${label}: missing file reads as null`);
  await store.write('/tool_outputs/a.txt', 'alpha\nβ 🚀');
  await store.write('/tool_outputs/sub/b.json', '{"b":1}');
  await store.write('/conversation_history/c.md', '# c');
  assert.equal(await store.read('/tool_outputs/a.txt'), 'alpha\nβ 🚀', `${label}: round trip, UTF-8 intact`);
  await store.write('/tool_outputs/a.txt', 'replaced');
  assert.equal(await store.read('/tool_outputs/a.txt'), 'replaced', `${label}: overwrite`);
  assert.deepEqual(await store.list('/tool_outputs/'), ['/tool_outputs/a.txt', '/tool_outputs/sub/b.json'], `${label}: list is recursive and sorted`);
  assert.deepEqual(await store.list('/tool_outputs/s'), ['/tool_outputs/sub/b.json'], `${label}: a prefix need not end at a directory`);
  assert.deepEqual(await store.list('/'), ['/conversation_history/c.md', '/tool_outputs/a.txt', '/tool_outputs/sub/b.json']);
  assert.deepEqual(await store.list(''), await store.list('/'), `${label}: the empty prefix lists everything`);
  await store.delete('/tool_outputs/a.txt');
  await store.delete('/tool_outputs/a.txt'); // deleting twice is not an error
  assert.equal(await store.read('/tool_outputs/a.txt'), null);
  for (const path of HOSTILE) {
    for (const op of [() => store.read(path), () => store.write(path, 'x'), () => store.delete(path)]) {
      await assert.rejects(op, (e) => e instanceof CompactorError && e.code === 'invalid_path', `${label}: ${JSON.stringify(path)} refused`);
    }
  }
  await assert.rejects(() => store.list('../'), (e) => e.code === 'invalid_path');
}

test('NodeFsStore: the store contract, atomic writes, no temp files left, confined to its root', async () => {
  const root = await mkdtemp(join(tmpdir(), 'cc-store-'));
  try {
    const store = new NodeFsStore(join(root, 'store'));
    await contract(store, 'NodeFsStore');
    // Files are where they say, nothing else is left behind.
    assert.equal(await readFile(join(root, 'store/tool_outputs/sub/b.json'), 'utf8'), '{"b":1}');
    const all = await readdir(join(root, 'store'), { recursive: true });
    assert.ok(!all.some((f) => f.endsWith('.cc-tmp')), `temp files left: ${all}`);
    // 50 concurrent writes of one path: the file is always one whole version, never a mix.
    const versions = Array.from({ length: 50 }, (_, i) => `v${i}:`.padEnd(200_000, String(i % 10)));
    await Promise.all(versions.map((v) => store.write('/race.txt', v)));
    assert.ok(versions.includes(await store.read('/race.txt')), 'a torn write');
    // A symlink planted inside the root cannot lead out of it.
    await mkdir(join(root, 'outside'));
    await writeFile(join(root, 'outside/secret.txt'), 'secret');
    await symlink(join(root, 'outside'), join(root, 'store/escape'));
    await assert.rejects(() => store.read('/escape/secret.txt'), (e) => e.code === 'invalid_path' && /outside/.test(e.message));
    await assert.rejects(() => store.write('/escape/new.txt', 'x'), (e) => e.code === 'invalid_path');
    await assert.rejects(() => store.list('/escape/'), (e) => e.code === 'invalid_path');
    assert.deepEqual(await readdir(join(root, 'outside')), ['secret.txt'], 'nothing written outside');
    // A write that fails (a file where a directory must be) rejects and leaves nothing behind.
    await store.write('/blocker', 'file');
    await assert.rejects(() => store.write('/blocker/child.txt', 'x'));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

/** An in-memory Cloudflare KV namespace with paged list (page size 2, to exercise cursors). */
function fakeKv() {
  const data = new Map();
  return {
    data,
    get: async (key, type) => (assert.equal(type, 'text'), data.get(key) ?? null),
    put: async (key, value) => void data.set(key, value),
    delete: async (key) => void data.delete(key),
    list: async ({ prefix = '', cursor }) => {
      const keys = [...data.keys()].filter((k) => k.startsWith(prefix)).sort();
      const start = cursor ? Number(cursor) : 0;
      const page = keys.slice(start, start + 2);
      const done = start + 2 >= keys.length;
      return { keys: page.map((name) => ({ name })), list_complete: done, ...(done ? {} : { cursor: String(start + 2) }) };
    },
  };
}

function fakeR2() {
  const data = new Map();
  return {
    data,
    get: async (key) => (data.has(key) ? { text: async () => data.get(key) } : null),
    put: async (key, value) => void data.set(key, value),
    delete: async (key) => void data.delete(key),
    list: async ({ prefix = '', cursor }) => {
      const keys = [...data.keys()].filter((k) => k.startsWith(prefix)).sort();
      const start = cursor ? Number(cursor) : 0;
      const truncated = start + 2 < keys.length;
      return { objects: keys.slice(start, start + 2).map((key) => ({ key })), truncated, ...(truncated ? { cursor: String(start + 2) } : {}) };
    },
  };
}

test('KvStore over Cloudflare KV and R2: the contract, pages, and per-session key prefixes', async () => {
  const kv = fakeKv();
  await contract(KvStore.cloudflareKv(kv, { prefix: 'sessions/a' }), 'KV');
  assert.ok([...kv.data.keys()].every((k) => k.startsWith('sessions/a/')), [...kv.data.keys()].join());
  const other = KvStore.cloudflareKv(kv, { prefix: 'sessions/b' });
  assert.deepEqual(await other.list('/'), [], 'sessions do not see each other');
  const r2 = fakeR2();
  await contract(KvStore.r2(r2, { prefix: 'agent/' }), 'R2');
  assert.ok([...r2.data.keys()].every((k) => k.startsWith('agent/')));
});

test('KvStore.writeIf: there when the backend has putIf (R2 has), with the prefixed key; absent on KV', async () => {
  assert.equal(KvStore.cloudflareKv(fakeKv()).writeIf, undefined, 'KV has no conditional put: saves read, compare and write');
  const data = new Map();
  const calls = [];
  const backend = {
    get: (key) => data.get(key) ?? null,
    put: (key, value) => void data.set(key, value),
    delete: (key) => void data.delete(key),
    keys: (prefix) => [...data.keys()].filter((k) => k.startsWith(prefix)),
    putIf: (key, expected, value) => {
      calls.push(key);
      if ((data.get(key) ?? null) !== expected) return false;
      data.set(key, value);
      return true;
    },
  };
  const store = new KvStore(backend, { prefix: 'sessions/x' });
  assert.equal(await store.writeIf('/state/s.json', null, 'v1'), true);
  assert.equal(await store.writeIf('/state/s.json', null, 'v2'), false);
  assert.equal(await store.writeIf('/state/s.json', 'v1', 'v3'), true);
  assert.equal(await store.read('/state/s.json'), 'v3');
  assert.deepEqual(calls, ['sessions/x/state/s.json', 'sessions/x/state/s.json', 'sessions/x/state/s.json']);
  await assert.rejects(() => store.writeIf('/../escape', null, 'x'), (e) => e.code === 'invalid_path');
  await assert.rejects(() => store.writeIf('/a', null, 42), TypeError);
  // R2 (a stand-in without etags: compared, then put): refuses a stale or present text.
  const r2 = KvStore.r2(fakeR2(), { prefix: 'agent' });
  assert.equal(await r2.writeIf('/s', null, 'a'), true);
  assert.equal(await r2.writeIf('/s', null, 'b'), false);
  assert.equal(await r2.writeIf('/s', 'stale', 'b'), false);
  assert.equal(await r2.writeIf('/s', 'a', 'b'), true);
  assert.equal(await r2.read('/s'), 'b');
});

test('CompositeStore routes /memories/ to its own store and lists across both', async () => {
  const session = new MemoryStore();
  const memories = new MemoryStore();
  const store = new CompositeStore(session, { '/memories/': memories });
  await store.write('/memories/AGENTS.md', '# Project notes\n- tests run with cargo test');
  await store.write('/tool_outputs/x.txt', 'x');
  assert.deepEqual(await memories.list('/'), ['/memories/AGENTS.md']);
  assert.deepEqual(await session.list('/'), ['/tool_outputs/x.txt']);
  assert.deepEqual(await store.list('/'), ['/memories/AGENTS.md', '/tool_outputs/x.txt']);
  assert.deepEqual(await store.list('/memories/'), ['/memories/AGENTS.md']);
  assert.throws(() => new CompositeStore(session, { memories: memories }), (e) => e.code === 'invalid_config');
  await assert.rejects(async () => store.read('/memories/../x'), (e) => e.code === 'invalid_path');

  // The system prompt carries the recovery segment, the memory protocol and AGENTS.md.
  const compactor = await createCompactor({ store });
  const system = await compactor.systemPrompt('You are a coding agent.');
  assert.ok(system.startsWith('You are a coding agent.'));
  assert.ok(system.includes('/tool_outputs/') && system.includes('read_file'), 'recovery segment');
  assert.ok(system.includes('/memories/'), 'memory protocol');
  assert.ok(system.includes('tests run with cargo test'), 'AGENTS.md loaded');
  const bare = await (await createCompactor()).systemPrompt('Base.');
  assert.ok(bare.includes('read_file') && !bare.includes('cargo test'));
  // The compactor's own paths (the core's config); `memory: false` leaves memory out, unread.
  const own = await createCompactor({ store, offload: { pathPrefix: '/big/' }, history: { pathPrefix: '/past/' } });
  const noMemory = await own.systemPrompt('Base.', { memory: false });
  assert.ok(noMemory.includes('`/big/`') && noMemory.includes('/past/') && !noMemory.includes('/tool_outputs/'), noMemory);
  assert.ok(!noMemory.includes('/memories/') && !noMemory.includes('cargo test'));
  const asked = await (await createCompactor()).systemPrompt('', { memory: true });
  assert.ok(asked.startsWith('## Context Management') && asked.includes('/memories/'), 'the protocol, asked for, with no AGENTS.md yet');
});

test('statePath: a stateless host (a new compactor per request) keeps stats through the store', async () => {
  const store = KvStore.cloudflareKv(fakeKv(), { prefix: 's1' });
  const huge = (i) => Array.from({ length: 3_000 }, (_, k) => `req ${i} line ${k} value ${(k * 31) % 977}`).join('\n');
  const turn = (i) => [
    { role: 'user', content: `request ${i}` },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'fetch', input: {} }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${i}`, toolName: 'fetch', output: { type: 'text', value: huge(i) } }] },
  ];
  for (let i = 1; i <= 3; i++) {
    const compactor = await createCompactor({ contextWindow: 32_000, store, statePath: '/state/compactor.json' });
    assert.equal(compactor.stats().compactions, i - 1, 'the previous requests’ stats were loaded');
    const result = await compactor.manage(turn(i));
    assert.equal(result.events[0].status, 'applied');
    assert.equal(result.stateError, undefined);
  }
  assert.equal((await loadState(store, '/state/compactor.json')).stats.compactions, 3);
  await store.write('/state/bad.json', 'not json');
  await assert.rejects(() => loadState(store, '/state/bad.json'), (e) => e.code === 'invalid_config' && e.message.includes('/state/bad.json'));
  assert.equal(await loadState(store, '/state/none.json'), undefined);
  await assert.rejects(() => createCompactor({ statePath: '/state/x.json' }), (e) => e.code === 'invalid_config' && e.field === 'statePath');
  // One state write per call: offloads at tool-return time are saved by the next manage().
  const writes = [];
  const counting = { read: (p) => store.read(p), list: (p) => store.list(p), delete: (p) => store.delete(p),
    write: async (p, t) => (writes.push(p), store.write(p, t)) };
  const w = await createCompactor({ contextWindow: 32_000, store: counting, statePath: '/state/w.json' });
  const tools = w.wrapTools({ fetch: { execute: async ({ i }) => huge(i) } });
  await tools.fetch.execute({ i: 10 }, { toolCallId: 'x10' });
  await tools.fetch.execute({ i: 11 }, { toolCallId: 'x11' });
  assert.equal(writes.filter((p) => p.startsWith('/state/')).length, 0, 'not saved at tool return');
  await w.manage([{ role: 'user', content: 'hi' }]);
  await w.manage([{ role: 'user', content: 'hi again' }]);
  assert.equal(writes.filter((p) => p.startsWith('/state/')).length, 1, 'saved once, by the first call after the change');
  assert.equal((await loadState(store, '/state/w.json')).stats.filesWritten, 2);
  // A failing state save is reported, the compaction stands.
  const failing = { read: (p) => store.read(p), list: (p) => store.list(p), delete: (p) => store.delete(p),
    write: async (p, t) => { if (p.startsWith('/state/')) throw new Error('quota exceeded'); return store.write(p, t); } };
  const c = await createCompactor({ contextWindow: 32_000, store: failing, statePath: '/state/compactor.json' });
  const r = await c.manage(turn(4));
  assert.equal(r.events[0].status, 'applied');
  assert.match(r.stateError, /quota exceeded/);
});

test('NodeFsStore.writeIf is a compare-and-set between processes sharing the directory: no increment lost, no lock left', async () => {
  // Four processes add 1 to a counter 40 times each through writeIf (a refused write reads
  // again): read-compare-write without the lock loses increments between processes.
  const { spawn } = await import('node:child_process');
  const root = await mkdtemp(join(tmpdir(), 'cc-writeif-'));
  const worker = `
    const { NodeFsStore } = await import(${JSON.stringify(new URL('../dist/stores/node.js', import.meta.url).href)});
    const store = new NodeFsStore(process.argv[1]);
    for (let i = 0; i < 40; i++) {
      for (;;) {
        const now = await store.read('/state/counter.json');
        if (await store.writeIf('/state/counter.json', now, String(Number(now ?? 0) + 1))) break;
      }
    }`;
  try {
    await Promise.all(Array.from({ length: 4 }, () => new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', worker, root], { stdio: ['ignore', 'ignore', 'inherit'] });
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker exited ${code}`))));
    })));
    const store = new NodeFsStore(root);
    assert.equal(await store.read('/state/counter.json'), '160');
    assert.deepEqual(await readdir(join(root, 'state')), ['counter.json'], 'no lock or temp file left');
    assert.equal(await store.writeIf('/state/counter.json', '159', 'stale'), false);
    assert.equal(await store.writeIf('/state/new.json', null, 'first'), true);
    assert.equal(await store.writeIf('/state/new.json', null, 'second'), false);
    // A lock left by a process that died is broken once stale.
    await writeFile(join(root, 'state', 'new.json.cc-lock'), '');
    const { utimes } = await import('node:fs/promises');
    await utimes(join(root, 'state', 'new.json.cc-lock'), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    assert.equal(await store.writeIf('/state/new.json', 'first', 'third'), true);
    assert.deepEqual(await store.list('/state/'), ['/state/counter.json', '/state/new.json'], 'locks are not listed');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
