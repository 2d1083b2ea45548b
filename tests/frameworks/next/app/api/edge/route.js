// app/api/edge/route.js: the quick start in an Edge route.
import { quickstart } from '../../../lib/quickstart.js';

export const runtime = 'edge';
export const dynamic = 'force-dynamic';

export async function GET() {
  return Response.json(await quickstart());
}
