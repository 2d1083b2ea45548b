// Node and Bun: reads a .wasm the package ships, named by `new URL('<literal>', import.meta.url)`.
// Each name is a literal at its call site (node-data.ts, node-lite.ts), so that bundlers which
// build server code (Turbopack, webpack, esbuild, Rollup in Nitro) emit every file and rewrite each
// URL to it; a template literal made Turbopack emit one file for every name. A bundler may hand
// back its own URL class, so the URL is read by its `href`.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/** Reads `url`; `inPackage` is the same file's path from this module, for bundlers that rewrite
 * the URL to where they serve the file rather than where they wrote it. */
export async function readWasm(url: URL, inPackage: string): Promise<Uint8Array> {
  const href = String(url.href);
  if (href.startsWith('file:')) return readFile(fileURLToPath(href));
  // webpack (Next.js `--webpack`) gives `/_next/static/media/<name>.<hash>.wasm`, a URL the app
  // serves, not a file: read the package's own copy, found from this module's file (a computed
  // path, so that no bundler takes it for an asset).
  const own = new URL(inPackage, import.meta.url);
  if (own.protocol !== 'file:') throw new Error(`no file at ${href} or ${own.href}`);
  return readFile(fileURLToPath(own.href));
}
