// A Durable Object holding a conversation's store (`context-compactor/stores/durable-object`),
// bundled by runners/workerd.mjs and run in workerd with a real Durable Object namespace: the
// store's file semantics, a 300,000-character value (chunked), `writeIf` as an atomic
// compare-and-set under 8 concurrent saves, and a compactor with `statePath` in the store
// whose offload lands in the Durable Object's storage byte for byte.
import { createCompactor, init } from 'context-compactor';
import { DurableObjectStore } from 'context-compactor/stores/durable-object';

export class Conversation {
  constructor(ctx) {
    this.storage = ctx.storage;
    this.store = new DurableObjectStore(ctx.storage, { prefix: 'cc' });
  }

  async fetch() {
    const checks = [];
    const check = (name, ok, detail = '') => checks.push({ name: `Durable Object store: ${name}`, ok: Boolean(ok), detail: String(detail) });
    const s = this.store;
    try {
      await s.write('/a/one.txt', 'one');
      await s.write('/a/two.txt', 'two');
      await s.write('/b/three.txt', 'three');
      check('write, read, list, delete', (await s.read('/a/one.txt')) === 'one' && JSON.stringify(await s.list('/a/')) === '["/a/one.txt","/a/two.txt"]' && (await s.read('/missing')) === null, JSON.stringify(await s.list('/')));
      await s.delete('/a/two.txt');
      check('a deleted path reads null and is not listed', (await s.read('/a/two.txt')) === null && JSON.stringify(await s.list('/a/')) === '["/a/one.txt"]');

      const big = Array.from({ length: 10_000 }, (_, i) => `line ${i}: ${'é😀x'.repeat(6)}`).join('\n');
      await s.write('/big.txt', big);
      const back = await s.read('/big.txt');
      const chunks = (await this.storage.list({ prefix: 'cc\u0001' })).size;
      check(`a ${big.length}-character text is stored in chunks and reads back byte for byte`, back === big && chunks > 1 && (await s.list('/')).includes('/big.txt'), `${back?.length} characters, ${chunks} chunks`);
      await s.write('/big.txt', 'small now');
      const left = (await this.storage.list({ prefix: 'cc\u0001' })).size;
      check('rewriting it small leaves no chunk behind', (await s.read('/big.txt')) === 'small now' && left === 0, `${left} chunks left`);

      check('writeIf on a missing path with null', (await s.writeIf('/state.json', null, 'v1')) === true && (await s.read('/state.json')) === 'v1');
      check('writeIf refuses a stale expected text', (await s.writeIf('/state.json', 'v0', 'v2')) === false && (await s.read('/state.json')) === 'v1');
      const racing = await Promise.all(Array.from({ length: 8 }, (_, i) => s.writeIf('/state.json', 'v1', `from ${i}`)));
      check('8 concurrent saves over one state: exactly one wins', racing.filter(Boolean).length === 1 && (await s.read('/state.json')) === `from ${racing.indexOf(true)}`, JSON.stringify(racing));

      await init();
      const output = Array.from({ length: 4_000 }, (_, i) => `row ${i}: status=ok latency=${(i * 37) % 1000}ms`).join('\n');
      const compactor = await createCompactor({ model: 'gpt-4o', store: s, statePath: '/state/compactor.json' });
      const { messages, events } = await compactor.manage([
        { role: 'user', content: 'Check the logs.' },
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'logs', input: {} }] },
        { role: 'tool', content: [{ type: 'tool-result', toolCallId: 'c1', toolName: 'logs', output: { type: 'text', value: output } }] },
      ]);
      const offload = events.find((e) => e.strategy === 'offload' && e.status === 'applied');
      const stored = offload && (await s.read(offload.path));
      const state = await s.read('/state/compactor.json');
      check('manage offloads into the Durable Object, byte for byte, and saves its state there', stored === output && !JSON.stringify(messages).includes('row 2000:') && state !== null, JSON.stringify({ path: offload?.path, stored: stored?.length, original: output.length, state: state?.length }));
    } catch (error) {
      check('ran', false, error?.stack ?? error);
    }
    return Response.json({ checks });
  }
}

export default {
  async fetch(request, env) {
    return env.CONVERSATION.get(env.CONVERSATION.idFromName('conversation-1')).fetch(request);
  },
};
