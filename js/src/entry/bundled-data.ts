// Cloudflare Workers and Vercel Edge bundle every `.wasm` an entry imports into the upload, and
// their plans limit its size (Workers Free 3 MB, Vercel Hobby 1 MB, after compression): these
// entries carry o200k_base only. The other data and the tokenizer compiler are imported by the
// app that needs them, one line each, and this says which.
import { CompactorError } from '../errors.js';
import type { PrebuiltTokenizerName, EncodingName } from '../types.js';

export function notBundled(runtime: 'workerd' | 'edge', name: EncodingName | PrebuiltTokenizerName | 'compiler'): never {
  const suffix = runtime === 'edge' ? '?module' : '';
  if (name === 'compiler') {
    throw new CompactorError(
      'not_initialized',
      `context-compactor: the tokenizer compiler is not bundled in the ${runtime} entry (it would grow every upload); import it and pass it to init: ` +
        `\`import compiler from 'context-compactor/compiler.wasm${suffix}'; await init({ compiler })\``,
    );
  }
  throw new CompactorError(
    'encoding_not_loaded',
    `context-compactor: "${name}" is not bundled in the ${runtime} entry (it carries o200k_base only, to fit the platform's size limit); import its data and load it: ` +
      `\`import data from 'context-compactor/ranks/${name}.wasm${suffix}'; await loadEncoding('${name}', data)\``,
    { name },
  );
}

/** The rank loader of an entry that bundles o200k_base only (`o200k`, its data as a module): the
 * others say the import to add, when loaded and (`explain`) when a count finds one missing. */
export function bundledRanks(runtime: 'workerd' | 'edge', o200k: WebAssembly.Module) {
  return Object.assign((name: EncodingName | PrebuiltTokenizerName) => (name === 'o200k_base' ? o200k : notBundled(runtime, name)), {
    explain: (name: string): never => notBundled(runtime, name as EncodingName),
  });
}
