// Cloudflare module worker that only counts (tokens-answer.mjs): cl100k_base's data imported by
// the package's subpath, as a Workers app does.
import cl100k from 'context-compactor/ranks/cl100k_base.wasm';
import { answer } from './tokens-answer.mjs';

export default { fetch: () => answer(cl100k) };
