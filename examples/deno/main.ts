// context-compactor in Deno, with its store on disk through Deno's own file APIs.
//
//   deno run --allow-read --allow-write=<store dir> examples/deno/main.ts [store dir]
//
// Compacts the bundled long agent session into a 32k window, stores what leaves the
// conversation under the store directory, reads it back from disk, and checks that nothing was
// lost. Exits non-zero on any failed check.
import { CompactorError, createCompactor, countTokens, loadState, runtimeEntry } from 'context-compactor';
import { DenoFsStore } from 'context-compactor/stores/deno';
import { session } from '../demo/session.mjs';

const dir = Deno.args[0] ?? (await Deno.makeTempDir({ prefix: 'cc-deno-' }));
const store = new DenoFsStore(dir);
let failures = 0;
const check = (ok: boolean, what: string) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures++;
};

const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 32_000, store, statePath: '/state/compactor.json' });
const messages = session();
const { messages: compacted, events } = await compactor.manage(messages);
const before = compactor.usage(messages).tokens;
const after = compactor.usage(compacted).tokens;
console.log(`Deno ${Deno.version.deno}: ${messages.length} messages, ${before} → ${after} tokens; store: ${dir}`);
for (const e of events) console.log(`  ${e.strategy.padEnd(10)} ${e.status.padEnd(8)} -${String(e.tokensSaved).padStart(6)}  ${e.path ?? ''}`);

check(runtimeEntry === 'deno', `the package's deno entry was loaded (${runtimeEntry})`);
check(after <= 32_000, `fits the window (${after} <= 32000)`);
// Every stored file is on disk under the store directory, with the content the plan stored.
const plan = compactor.plan(messages);
for (const action of plan.actions) {
  if (!('path' in action) || !('content' in action)) continue;
  const onDisk = await Deno.readTextFile(`${dir}/${action.path.slice(1)}`);
  check(onDisk === action.content, `${action.path} on disk, byte for byte (${countTokens(onDisk, 'o200k_base')} tokens)`);
}
const listed = await store.list('/');
check(listed.length > 0 && listed.every((p) => p.startsWith('/')), `store lists ${listed.length} files`);
check((await loadState(store, '/state/compactor.json'))?.stats.compactions === 1, 'state saved next to the content');
// The recovery tools read back through the same store.
const firstPath = events.find((e) => e.path)?.path;
const page = firstPath ? await compactor.tools().read_file.execute({ path: firstPath, limit: 3 }) : '';
check(page.startsWith('1\t'), `read_file pages ${firstPath}`);
// Hostile paths are typed errors, and nothing is written outside the store directory.
for (const bad of ['/../escape.txt', 'relative.txt', '/a\0b']) {
  const error = await store.write(bad, 'x').then(() => null, (e) => e);
  check(error instanceof CompactorError && error.code === 'invalid_path', `refused ${JSON.stringify(bad)}`);
}
// Idempotent: the compacted conversation needs nothing more.
check(compactor.plan(compacted).actions.length === 0, 're-planning the result does nothing');

console.log(failures === 0 ? 'all checks passed' : `${failures} check(s) failed`);
Deno.exit(failures === 0 ? 0 : 1);
