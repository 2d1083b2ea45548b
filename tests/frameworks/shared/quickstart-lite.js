// The quick start with `context-compactor/lite` (shared/quickstart-run.js): the app loads the
// encoding's data itself, from where it serves it.
import { countTokens, createCompactor, isEncodingLoaded, loadEncoding, MemoryStore } from 'context-compactor/lite';
import { runQuickstart } from './quickstart-run.js';

/** `ranks`: where the app serves o200k_base's data (the package's ranks/o200k_base.wasm). */
export async function quickstart(ranks) {
  if (!isEncodingLoaded('o200k_base')) {
    const response = await fetch(ranks);
    if (!response.ok) throw new Error(`${ranks}: HTTP ${response.status}`);
    await loadEncoding('o200k_base', await response.arrayBuffer());
  }
  return runQuickstart({ countTokens, createCompactor, MemoryStore });
}
