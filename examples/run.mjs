// Runs every example in its own runtime, as the test command does: `node examples/run.mjs`
// (or `node examples/run.mjs deno loop` for some). Each example exits non-zero when one of its
// checks fails; a missing runtime or a crash counts as a failure, never a skip.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const EXAMPLES = {
  'ai-sdk-agent': ['node', ['examples/ai-sdk-agent/index.mjs']],
  loop: ['node', ['--test', 'examples/loop/loop.test.mjs']],
  deno: ['node', ['examples/deno/test.mjs']],
  'cloudflare-worker': ['node', ['examples/cloudflare-worker/test.mjs']],
  'serverless-route': ['node', ['examples/serverless-route/test.mjs']],
  'browser-chat': ['node', ['examples/browser-chat/test.mjs']],
  'rust-native': ['cargo', ['run', '--quiet', '--example', 'rust-native']],
  'rust-native-async': ['cargo', ['run', '--quiet', '--example', 'rust-native', '--', '--async', '--replay']],
  'rust-native-stateless': ['cargo', ['run', '--quiet', '--example', 'rust-native', '--', '--stateless']],
  'rust-native-overflow': ['cargo', ['run', '--quiet', '--example', 'rust-native', '--', '--overflow']],
};
const TIMEOUT_MS = 300_000;

const only = process.argv.slice(2);
const unknown = only.filter((name) => !(name in EXAMPLES));
if (unknown.length > 0) {
  console.error(`unknown example(s): ${unknown.join(', ')}; known: ${Object.keys(EXAMPLES).join(', ')}`);
  process.exit(2);
}
const results = [];
for (const [name, [command, args]] of Object.entries(EXAMPLES)) {
  if (only.length > 0 && !only.includes(name)) continue;
  console.log(`\n--- example ${name}: ${command} ${args.join(' ')}`);
  const started = Date.now();
  const code = await new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit' });
    const timer = setTimeout(() => {
      console.error(`--- ${name}: no result after ${TIMEOUT_MS / 1000} s, killed`);
      child.kill('SIGKILL');
    }, TIMEOUT_MS);
    child.on('error', (error) => (console.error(error.message), resolve(1)));
    child.on('exit', (status, signal) => (clearTimeout(timer), resolve(signal ? 1 : status)));
  });
  results.push({ name, ok: code === 0, seconds: ((Date.now() - started) / 1000).toFixed(1) });
}
console.log('\nexamples:');
for (const r of results) console.log(`  ${r.ok ? 'ok  ' : 'FAIL'} ${r.name} (${r.seconds} s)`);
const failed = results.filter((r) => !r.ok).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
