// Runs examples/deno/main.ts in Deno (the pinned `deno` npm package from tests/runtimes) with
// write permission for one temp directory only; exits with its status.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const deno = join(root, 'tests/runtimes/node_modules/.bin/deno');
const dir = mkdtempSync(join(tmpdir(), 'cc-deno-'));
const run = spawnSync(deno, ['run', '--no-prompt', '--no-lock', '--node-modules-dir=manual', `--allow-read=${root},${dir}`, `--allow-write=${dir}`, 'examples/deno/main.ts', dir], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, DENO_NO_UPDATE_CHECK: '1' },
});
rmSync(dir, { recursive: true, force: true });
if (run.error) console.error(run.error);
process.exit(run.status ?? 1);
