// Bundled separately from the scenario (so it cannot keep an otherwise tree-shaken entry alive):
// reports which entry the runtime's export conditions selected. Works as a module worker
// (workerd) and as a fetch-event script (Edge).
import { runtimeEntry } from 'context-compactor';

const answer = () => Response.json({ runtimeEntry });
if (typeof addEventListener === 'function' && typeof globalThis.EdgeRuntime === 'string') {
  addEventListener('fetch', (event) => event.respondWith(answer()));
}
export default { fetch: answer };
