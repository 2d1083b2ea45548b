// app/api/node/route.js: the quick start in a Node.js route.
import { quickstart } from '../../../lib/quickstart.js';

export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export async function GET() {
  return Response.json(await quickstart());
}
