// app/api/edge-lite/route.js: an Edge route within Vercel Hobby's 1 MB: `context-compactor/lite`
// (the core only), o200k_base's data served from public/ (copied there from the package's
// dist/ranks/o200k_base.wasm) and loaded on the first request.
import { quickstart } from '../../../lib/quickstart-lite.js';

export const runtime = 'edge';
export const dynamic = 'force-dynamic';

export async function GET(request) {
  return Response.json(await quickstart(new URL('/o200k_base.wasm', request.url)));
}
