// A store over a real R2 bucket binding (`KvStore.r2`), bundled by runners/workerd.mjs and run
// in workerd: the store's file semantics, `writeIf` as an atomic compare-and-set (R2's `onlyIf`
// on the etag) under 8 concurrent saves, and a compactor with `statePath` in the bucket whose
// offload lands there byte for byte and whose second request continues from the saved state.
import { createCompactor, init, KvStore } from 'context-compactor';

export default {
  async fetch(request, env) {
    const checks = [];
    const check = (name, ok, detail = '') => checks.push({ name: `R2 store: ${name}`, ok: Boolean(ok), detail: String(detail) });
    const s = KvStore.r2(env.BUCKET, { prefix: 'sessions/s1' });
    try {
      await s.write('/a/one.txt', 'one');
      await s.write('/a/two.txt', 'two');
      check('write, read, list', (await s.read('/a/one.txt')) === 'one' && JSON.stringify(await s.list('/a/')) === '["/a/one.txt","/a/two.txt"]' && (await s.read('/missing')) === null, JSON.stringify(await s.list('/')));
      check('keys are under the prefix', (await env.BUCKET.get('sessions/s1/a/one.txt')) !== null);

      check('the store has writeIf', typeof s.writeIf === 'function');
      check('writeIf on a missing path with null', (await s.writeIf('/state.json', null, 'v1')) === true && (await s.read('/state.json')) === 'v1');
      check('writeIf with null refuses a path that is there', (await s.writeIf('/state.json', null, 'v9')) === false && (await s.read('/state.json')) === 'v1');
      check('writeIf refuses a stale expected text', (await s.writeIf('/state.json', 'v0', 'v2')) === false && (await s.read('/state.json')) === 'v1');
      const racing = await Promise.all(Array.from({ length: 8 }, (_, i) => s.writeIf('/state.json', 'v1', `from ${i}`)));
      check('8 concurrent saves over one state: exactly one wins', racing.filter(Boolean).length === 1 && (await s.read('/state.json')) === `from ${racing.indexOf(true)}`, JSON.stringify(racing));
      const creating = await Promise.all(Array.from({ length: 8 }, (_, i) => s.writeIf('/new.json', null, `first ${i}`)));
      check('8 concurrent creations of one path: exactly one wins', creating.filter(Boolean).length === 1 && (await s.read('/new.json')) === `first ${creating.indexOf(true)}`, JSON.stringify(creating));

      await init();
      const output = Array.from({ length: 4_000 }, (_, i) => `row ${i}: status=ok latency=${(i * 37) % 1000}ms`).join('\n');
      const chat = [
        { role: 'user', content: 'Check the logs.' },
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'logs', input: {} }] },
        { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'logs', output: { type: 'text', value: output } }] },
      ];
      const first = await createCompactor({ model: 'gpt-4o', store: s, statePath: '/state/compactor.json' });
      const one = await first.manage(chat);
      const offload = one.events.find((e) => e.strategy === 'offload' && e.status === 'applied');
      const stored = offload && (await s.read(offload.path));
      const state = await s.read('/state/compactor.json');
      check('manage offloads into the bucket, byte for byte, and saves its state there', stored === output && !JSON.stringify(one.messages).includes('row 2000:') && state !== null, JSON.stringify({ path: offload?.path, stored: stored?.length, original: output.length, state: state?.length }));
      // A second request (a new compactor, as a stateless route makes) from the saved state.
      const second = await createCompactor({ model: 'gpt-4o', store: s, statePath: '/state/compactor.json' });
      const two = await second.manage([...chat, { role: 'assistant', content: 'Done.' }]);
      check('a new compactor continues from the saved state: the same prompt prefix', JSON.stringify(two.messages.slice(0, 3)) === JSON.stringify(one.messages), `${two.messages.length} messages`);
    } catch (error) {
      check('ran', false, error?.stack ?? error);
    }
    return Response.json({ checks });
  },
};
