// Vercel Edge function that only counts (tokens-answer.mjs): cl100k_base's data imported by the
// package's subpath with `?module`, as an Edge app does.
import cl100k from 'context-compactor/ranks/cl100k_base.wasm?module';
import { answer } from './tokens-answer.mjs';

addEventListener('fetch', (event) => event.respondWith(answer(cl100k)));
