// proxy.js (Next.js 16's middleware): the quick start on /proxy/quickstart, before any route.
import { NextResponse } from 'next/server';
import { quickstart } from './lib/quickstart.js';

export async function proxy(request) {
  if (request.nextUrl.pathname === '/proxy/quickstart') return NextResponse.json(await quickstart());
  return NextResponse.next();
}

export const config = { matcher: '/proxy/:path*' };
