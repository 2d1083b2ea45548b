// A real Redis server for the tests: Debian's redis-server (scripts/setup.sh installs it) on the
// loopback interface, on a free port, with its files in a temp dir; stopped by `stop()`. A
// missing redis-server is an error, never a skip.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function redisServerPath() {
  for (const candidate of ['redis-server', '/usr/bin/redis-server', '/usr/local/bin/redis-server']) {
    try {
      execFileSync(candidate, ['--version'], { stdio: 'ignore' });
      return candidate;
    } catch {}
  }
  throw new Error('redis-server is not installed: run `bash scripts/setup.sh` (it installs Debian\'s redis-server)');
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Starts redis-server; resolves to { url, port, stop } once it accepts connections. */
export async function startRedis() {
  const binary = redisServerPath();
  const dir = await mkdtemp(join(tmpdir(), 'cc-redis-'));
  const port = await freePort();
  const child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start within 10 s:\n${log}`)), 10_000);
    const poll = setInterval(() => {
      if (/Ready to accept connections/.test(log)) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve();
      }
    }, 20);
    child.on('exit', (code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`redis-server exited (${code}):\n${log}`));
    });
  });
  child.removeAllListeners('exit');
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
