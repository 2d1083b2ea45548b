// A static server for the browser chat: `node examples/browser-chat/serve.mjs [port]`.
// Serves the repository's examples/browser-chat/ and the built package's js/dist/ (nothing else)
// with the content types browsers need: text/javascript for .js/.mjs (module scripts) and
// application/wasm for .wasm (streaming compilation). `/` redirects to the example.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(fileURLToPath(new URL('../..', import.meta.url)));
export const EXAMPLE_PATH = '/examples/browser-chat/';
const ALLOWED = [EXAMPLE_PATH, '/js/dist/'];
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.wasm': 'application/wasm',
  '.css': 'text/css; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.png': 'image/png',
};

/** Starts the server; resolves to `{ server, origin, url, requests, close() }`. `requests` logs
 * every request path with its status (the test checks the .wasm was served). */
export async function startServer({ port = 0, host = '127.0.0.1' } = {}) {
  const requests = [];
  const server = createServer(async (req, res) => {
    const send = (status, headers, body) => {
      requests.push({ path, status });
      res.writeHead(status, { 'cache-control': 'no-store', ...headers });
      res.end(body);
    };
    let path;
    try {
      path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      path = req.url;
      return send(400, { 'content-type': 'text/plain' }, 'bad request');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' }, 'method not allowed');
    if (path === '/' || path === EXAMPLE_PATH.slice(0, -1)) return send(302, { location: EXAMPLE_PATH }, '');
    if (path.endsWith('/')) path += 'index.html';
    const file = resolve(repoRoot, '.' + path);
    const inside = ALLOWED.some((prefix) => file.startsWith(resolve(repoRoot, '.' + prefix) + sep));
    if (!inside) return send(404, { 'content-type': 'text/plain' }, 'not found');
    try {
      if (!(await stat(file)).isFile()) throw new Error('not a file');
      const body = await readFile(file);
      return send(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }, req.method === 'HEAD' ? undefined : body);
    } catch {
      return send(404, { 'content-type': 'text/plain' }, 'not found');
    }
  });
  await new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, host, ok);
  });
  const { port: actual } = server.address();
  const origin = `http://${host}:${actual}`;
  return {
    server,
    origin,
    url: origin + EXAMPLE_PATH,
    requests,
    close: () => new Promise((ok) => server.close(() => ok())),
  };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const port = Number(process.argv[2] ?? process.env.PORT ?? 8787);
  const { url } = await startServer({ port });
  console.log(`browser chat: ${url}`);
  console.log(`  force IndexedDB:            ${url}?backend=indexeddb`);
  console.log(`  offload by manage() instead: ${url}?offload=manage`);
  console.log('Ctrl-C to stop.');
}
