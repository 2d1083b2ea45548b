// The size of the compactor's state (what `statePath` saves: stats, calibration and the
// compaction record) as a stateless host sees it: a new compactor per model call, the raw
// history re-sent, the state in a store. Prints the last and the largest size per session and
// window. `node bench/arena/state-size.mjs [session ...]` (default: every available session).
import { createCompactor, init, MemoryStore } from 'context-compactor';
import { defaultSessions, generate } from './sessions/index.mjs';

await init();
const names = process.argv.slice(2).length ? process.argv.slice(2) : defaultSessions();
console.log('| session | window | calls | state at the end | largest state |');
console.log('|---|---:|---:|---:|---:|');
for (const name of names) {
  const session = generate(name);
  const system = session.system ? [{ role: 'system', content: session.system }] : [];
  for (const contextWindow of [128_000, 32_000]) {
    const store = new MemoryStore();
    let largest = 0, last = 0, calls = 0;
    for (const [i, message] of session.messages.entries()) {
      if (i === 0 || message.role !== 'assistant') continue;
      const compactor = await createCompactor({ model: 'claude-sonnet-4-5', contextWindow, store, statePath: '/state.json' });
      await compactor.manage([...system, ...session.messages.slice(0, i)]);
      compactor.dispose();
      last = ((await store.read('/state.json')) ?? '').length;
      largest = Math.max(largest, last);
      calls++;
    }
    const kb = (n) => `${(n / 1000).toFixed(1)} kB`;
    console.log(`| ${name} | ${contextWindow / 1000}k | ${calls} | ${kb(last)} | ${kb(largest)} |`);
  }
}
