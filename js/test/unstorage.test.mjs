// UnstorageStore: one store suite run against three unstorage drivers — memory, the file system
// and a real Redis server (redis-server on loopback, through unstorage's Redis driver and
// ioredis). Exact round trips (JSON-looking, binary-looking, lone surrogates, 50 MB), paths
// unstorage would fold together, list by prefix with paging, the same path confinement as every
// store, typed errors where the backend refuses, and the conditional write statePath uses.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStorage } from 'unstorage';
import memoryDriver from 'unstorage/drivers/memory';
import fsDriver from 'unstorage/drivers/fs';
import redisDriver from 'unstorage/drivers/redis';
import { CompactorError, createCompactor, init, loadState } from '../dist/entry/node.js';
import { UnstorageStore } from '../dist/stores/unstorage.js';
import { startRedis } from '../test-helpers/redis.mjs';

await init();

const HOSTILE = ['/../etc/passwd', '/a/../../b', 'relative/path', '/a\0b', '/a\\..\\b', '/a//b', '/dir/', `/${'x'.repeat(256)}`, `/${'é'.repeat(128)}`, `/${'a/'.repeat(600)}z`, '', 42];
const TEXTS = {
  empty: '',
  number: '123',
  float: ' -4.5e3 ',
  keyword: 'true',
  nullWord: 'null',
  object: '{"a":1,"__proto__":{"x":1}}',
  array: '[1,2]',
  quoted: '"quoted"',
  tagLookalike: 'cc:"not ours"',
  base64Lookalike: 'base64:aGVsbG8=',
  binaryLooking: Array.from({ length: 256 }, (_, i) => String.fromCharCode(i)).join('') + '\r\n\t\u2028',
  bom: '\uFEFFwith a BOM',
  loneHigh: 'before \uD800 after',
  loneLow: '\uDC00 at the start',
  pairAndLone: '😀\uD83D😀',
  unicode: 'alpha\nβ 🚀 中文',
};

let redis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

const backends = {
  memory: async () => ({ storage: createStorage({ driver: memoryDriver() }), done: async () => {} }),
  fs: async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cc-unstorage-'));
    return { storage: createStorage({ driver: fsDriver({ base: dir }) }), dir, done: () => rm(dir, { recursive: true, force: true }) };
  },
  redis: async () => {
    const storage = createStorage({ driver: redisDriver({ url: redis.url, base: `t${Math.random().toString(36).slice(2)}` }) });
    return { storage, done: () => storage.dispose() };
  },
};

for (const [name, open] of Object.entries(backends)) {
  test(`UnstorageStore over ${name}: the store contract, exact texts, folded paths, paging, confinement, conditional writes`, async () => {
    const backend = await open();
    try {
      const store = new UnstorageStore(backend.storage, { base: 'chat:1' });
      assert.equal(store.conditionalWrites, name === 'redis' ? 'atomic' : 'read-compare-write');
      assert.equal(await store.read('/nothing/here.txt'), null);
      await store.write('/tool_outputs/a.txt', 'alpha\nβ 🚀');
      await store.write('/tool_outputs/sub/b.json', '{"b":1}');
      await store.write('/conversation_history/c.md', '# c');
      assert.equal(await store.read('/tool_outputs/a.txt'), 'alpha\nβ 🚀');
      await store.write('/tool_outputs/a.txt', 'replaced');
      assert.equal(await store.read('/tool_outputs/a.txt'), 'replaced', 'overwrite');
      assert.deepEqual(await store.list('/tool_outputs/'), ['/tool_outputs/a.txt', '/tool_outputs/sub/b.json']);
      assert.deepEqual(await store.list('/tool_outputs/s'), ['/tool_outputs/sub/b.json'], 'a prefix need not end at a directory');
      assert.deepEqual(await store.list('/'), ['/conversation_history/c.md', '/tool_outputs/a.txt', '/tool_outputs/sub/b.json']);
      assert.deepEqual(await store.list(''), await store.list('/'));
      await store.delete('/tool_outputs/a.txt');
      await store.delete('/tool_outputs/a.txt');
      assert.equal(await store.read('/tool_outputs/a.txt'), null);

      // Every text comes back exactly, whatever unstorage's getItem would make of it.
      for (const [label, text] of Object.entries(TEXTS)) {
        await store.write(`/texts/${label}`, text);
        assert.equal(await store.read(`/texts/${label}`), text, `${name}: ${label} round trip`);
      }
      // Paths unstorage would fold into one key (`/` and `:`, a cut at `?`) stay apart.
      // ('/k/a' itself cannot be both a file and a directory on a file system.)
      const tricky = ['/k/a:b', '/k/a/b', '/k/a?b', '/k/100%', '/k/%3A', '/k/lone\uD800', '/k/#hash'];
      for (const [i, path] of tricky.entries()) await store.write(path, `v${i}`);
      for (const [i, path] of tricky.entries()) assert.equal(await store.read(path), `v${i}`, `${name}: ${JSON.stringify(path)}`);
      assert.deepEqual(await store.list('/k/'), [...tricky].sort());
      // Another base on the same storage is another namespace.
      const other = new UnstorageStore(backend.storage, { base: 'chat:2' });
      assert.deepEqual(await other.list('/'), []);
      await other.write('/tool_outputs/a.txt', 'other chat');
      assert.equal(await store.read('/tool_outputs/a.txt'), null);

      // list in pages.
      for (let i = 0; i < 25; i++) await store.write(`/paged/f${String(i).padStart(2, '0')}`, String(i));
      const pages = [];
      let cursor;
      do {
        const page = await store.listPage('/paged/', { limit: 10, ...(cursor ? { cursor } : {}) });
        pages.push(page.paths);
        cursor = page.cursor;
      } while (cursor);
      assert.deepEqual(pages.map((p) => p.length), [10, 10, 5]);
      assert.deepEqual(pages.flat(), await store.list('/paged/'));

      // The same path confinement as every store.
      for (const path of HOSTILE) {
        for (const op of [() => store.read(path), () => store.write(path, 'x'), () => store.delete(path), () => store.writeIf(path, null, 'x')]) {
          await assert.rejects(op, (e) => e instanceof CompactorError && e.code === 'invalid_path', `${name}: ${JSON.stringify(path)} refused`);
        }
      }
      await assert.rejects(() => store.list('../'), (e) => e.code === 'invalid_path');
      assert.throws(() => new UnstorageStore(backend.storage, { base: '../up' }), (e) => e.code === 'invalid_config');

      // A value over the store's own limit: a typed error naming the path, nothing written.
      const small = new UnstorageStore(backend.storage, { base: 'small', maxValueLength: 10 });
      await assert.rejects(() => small.write('/big.txt', 'x'.repeat(11)), (e) => e.code === 'store_failed' && e.details.path === '/big.txt');
      assert.equal(await small.read('/big.txt'), null);

      // 50 MB, exactly.
      const big = 'the quick brown fox \u0000\uD800 '.repeat(2_000_000).slice(0, 50_000_000);
      await store.write('/tool_outputs/big.txt', big);
      assert.ok((await store.read('/tool_outputs/big.txt')) === big, `${name}: 50 MB round trip`);

      // Conditional writes.
      assert.equal(await store.writeIf('/state.json', null, 'one'), true);
      assert.equal(await store.writeIf('/state.json', null, 'two'), false, 'expected nothing, found one');
      assert.equal(await store.writeIf('/state.json', 'zero', 'two'), false, 'expected zero, found one');
      assert.equal(await store.writeIf('/state.json', 'one', '{"json":"two"}'), true);
      assert.equal(await store.read('/state.json'), '{"json":"two"}');
      if (name === 'redis') {
        // Atomic: of 20 racing saves over the same expected value exactly one lands.
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.writeIf('/state.json', '{"json":"two"}', `racer ${i}`)));
        assert.equal(results.filter(Boolean).length, 1);
        assert.equal(await store.read('/state.json'), `racer ${results.indexOf(true)}`);
      }
      if (name === 'fs') {
        // Plain text is stored verbatim: the driver's files stay readable.
        assert.equal(await readFile(join(backend.dir, 'chat/1/conversation_history/c.md'), 'utf8'), '# c');
      }
    } finally {
      await backend.done();
    }
  });
}

test('UnstorageStore over Redis: a conditional save lands where reads look, whatever wraps the storage (prefixStorage, a mount); a driver base its keys cannot be listed under is refused', async () => {
  // Found by a user test: the Lua script's key ignored prefixStorage and unstorage's key clean-up,
  // so writeIf said true and read() found nothing: every request started without its state, and
  // two tenants with one chat id shared a state.
  const { prefixStorage } = await import('unstorage');
  const url = redis.url;
  const tag = Math.random().toString(36).slice(2);
  // A driver base its own getKeys cannot list under: refused, naming the base that works.
  for (const base of [`app${tag}/v1`, `:app${tag}`]) {
    const storage = createStorage({ driver: redisDriver({ url, base }) });
    assert.throws(() => new UnstorageStore(storage, { base: 'chat:1' }), (e) => e instanceof CompactorError && e.code === 'invalid_config' && e.message.includes(`"app${tag}${base.includes('/') ? ':v1' : ''}"`), base);
    await storage.dispose?.();
  }
  const cases = {
    'driver base app:v1': () => createStorage({ driver: redisDriver({ url, base: `app${tag}:v1` }) }),
    prefixStorage: () => prefixStorage(createStorage({ driver: redisDriver({ url, base: `p${tag}` }) }), 'tenant1'),
    'mounted at data': () => {
      const storage = createStorage();
      storage.mount('data', redisDriver({ url, base: `m${tag}` }));
      return prefixStorage(storage, 'data');
    },
  };
  for (const [name, make] of Object.entries(cases)) {
    const storage = make();
    try {
      const store = new UnstorageStore(storage, { base: 'chat:1' });
      assert.equal(await store.writeIf('/state/x.json', null, 'first'), true, name);
      assert.equal(await store.read('/state/x.json'), 'first', `${name}: read where the save landed`);
      assert.equal(await store.writeIf('/state/x.json', 'first', 'second'), true, name);
      assert.equal(await store.writeIf('/state/x.json', 'first', 'third'), false, `${name}: a stale save is refused`);
      assert.equal(await store.read('/state/x.json'), 'second', name);
      // The probe left nothing behind.
      assert.deepEqual(await store.list('/'), ['/state/x.json'], name);
      // Where the driver's keys are the computed ones, the save stays atomic.
      assert.equal(store.conditionalWrites, name.startsWith('driver') ? 'atomic' : 'read-compare-write', name);
    } finally {
      await storage.dispose?.();
    }
  }
  // Two tenants, one chat id: their states are their own.
  const shared = createStorage({ driver: redisDriver({ url, base: `t${tag}` }) });
  try {
    const [a, b] = ['tenant-a', 'tenant-b'].map((t) => new UnstorageStore(prefixStorage(shared, t), { base: 'chat:1' }));
    assert.equal(await a.writeIf('/state.json', null, 'A'), true);
    assert.equal(await b.writeIf('/state.json', null, 'B'), true, 'the other tenant has no state yet');
    assert.deepEqual([await a.read('/state.json'), await b.read('/state.json')], ['A', 'B']);
  } finally {
    await shared.dispose?.();
  }
});

test("UnstorageStore over Redis: the driver's ttl holds for conditional saves (the state, the leases) as for its own writes", async () => {
  const storage = createStorage({ driver: redisDriver({ url: redis.url, base: `ttl${Math.random().toString(36).slice(2)}`, ttl: 600 }) });
  try {
    const store = new UnstorageStore(storage, { base: 'chat:1' });
    await store.write('/tool_outputs/a.txt', 'offloaded');
    assert.equal(await store.writeIf('/state/compactor.json', null, '{"version":1}'), true);
    const client = storage.getMount('x').driver.getInstance();
    const keys = await client.keys(`${storage.getMount('x').driver.options.base}:*`);
    assert.equal(keys.length, 2);
    for (const key of keys) {
      const ttl = await client.ttl(key);
      assert.ok(ttl > 590 && ttl <= 600, `${key} expires with the driver's ttl (${ttl})`);
    }
  } finally {
    await storage.dispose?.();
  }
});

test('UnstorageStore over Redis: a backend that refuses a write (out of memory) is a typed store_failed error', async () => {
  const storage = createStorage({ driver: redisDriver({ url: redis.url, base: 'oom' }) });
  const admin = storage.getMount('').driver.getInstance();
  try {
    const store = new UnstorageStore(storage);
    const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))[1]);
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', String(used + 2_000_000));
    await assert.rejects(
      () => store.write('/tool_outputs/huge.txt', 'y'.repeat(8_000_000)),
      (e) => e instanceof CompactorError && e.code === 'store_failed' && e.details.path === '/tool_outputs/huge.txt' && /OOM/.test(e.message) && e.cause instanceof Error,
    );
    await admin.config('SET', 'maxmemory', '0');
    assert.equal(await store.read('/tool_outputs/huge.txt'), null, 'nothing half-written');
  } finally {
    await admin.config('SET', 'maxmemory', '0').catch(() => {});
    await storage.dispose();
  }
});

test('statePath over Redis: offloads and the versioned state survive the instance; two racing compactors both land', async () => {
  const storage = createStorage({ driver: redisDriver({ url: redis.url, base: 'compactor' }) });
  try {
    const store = new UnstorageStore(storage, { base: 'chat:42' });
    const big = Array.from({ length: 3000 }, (_, i) => `line ${i}: ${'x'.repeat(20)}`).join('\n');
    const messages = [
      { role: 'user', content: 'read the log' },
      { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'bash', input: { cmd: 'cat log' } }] },
      { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'bash', output: { type: 'text', value: big } }] },
    ];
    const options = { model: 'gpt-4o', contextWindow: 32_000, store, statePath: '/state/compactor.json' };
    const first = await createCompactor(options);
    const result = await first.manage(messages);
    assert.equal(result.stateError, undefined);
    const path = result.events.find((e) => e.status === 'applied')?.path;
    assert.ok(path?.startsWith('/tool_outputs/'), 'offloaded');
    const saved = JSON.parse(await store.read('/state/compactor.json'));
    assert.equal(saved.revision, 1);
    assert.equal(saved.conversation.length, 3 * 8, 'a hash per message');
    assert.equal((await loadState(store, '/state/compactor.json')).revision, undefined, 'host fields stripped on load');

    // Another instance: reads the offload through the recovery tools, replays the same prompt.
    const second = await createCompactor(options);
    const again = await second.manage(messages);
    assert.deepEqual(again.messages, result.messages);
    const read = await second.tools().read_file.execute({ path, offset: 0, limit: 5 }, { toolCallId: 'r', messages: [] });
    assert.match(String(read), /line 0: x+/);

    // Two instances (two tabs) load revision N and compact different new turns at once: the
    // second save loses, reloads, runs again on the winner's state and lands as N + 2 with both
    // offloads recorded (last-write-wins would keep one); neither offload is lost.
    const turn = (id, fill) => [{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: id, toolName: 'bash', input: { cmd: `cat ${id}` } }] }, { role: 'tool', content: [{ type: 'tool-result', toolCallId: id, toolName: 'bash', output: { type: 'text', value: big.replaceAll('x', fill) } }] }];
    const a = await createCompactor(options);
    const b = await createCompactor(options);
    const before = JSON.parse(await store.read('/state/compactor.json'));
    assert.equal(before.record.edits.length, 1);
    const ra = await a.manage([...messages, ...turn('c2', 'y')]);
    const rb = await b.manage([...messages, ...turn('c3', 'z')]);
    assert.equal(ra.stateError, undefined);
    assert.equal(rb.stateError, undefined);
    const after = JSON.parse(await store.read('/state/compactor.json'));
    assert.equal(after.revision, before.revision + 2);
    assert.equal(after.record.edits.length, 3, 'both requests\' offloads are in the record');
    for (const event of [...ra.events, ...rb.events].filter((e) => e.path)) assert.notEqual(await store.read(event.path), null, `${event.path} readable`);
    // The same turn twice at once (a double submit): the loser replays the winner's edits and
    // answers with the same prompt, and has nothing new to save.
    const c = await createCompactor(options);
    const d = await createCompactor(options);
    const both = [...messages, ...turn('c2', 'y'), ...turn('c3', 'z'), ...turn('c4', 'w')];
    const [rc, rd] = await Promise.all([c.manage(both), d.manage(both)]);
    assert.deepEqual(rd.messages, rc.messages);
    const last = JSON.parse(await store.read('/state/compactor.json'));
    assert.equal(last.revision, after.revision + 1);
    assert.equal(last.record.edits.length, 4);
    // An explicit save over a state that moved on takes that state: nothing is written over it.
    await first.saveState();
    assert.equal(JSON.parse(await store.read('/state/compactor.json')).revision, last.revision);
    assert.equal(first.state().record.edits.length, 4);
  } finally {
    await storage.dispose();
  }
});
