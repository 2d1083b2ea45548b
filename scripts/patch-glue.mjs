// Two edits to wasm-bindgen's `--target web` glue (pkg/*/<name>.js), each asserted to match once:
// 1. `initSync` tells a compiled module by its tag, not `instanceof`: a Next.js Edge route (and
//    Vercel's Edge runtime) hands the package a WebAssembly.Module compiled in another realm, which
//    `instanceof` rejects, and the glue then fails compiling it again ("Argument 0 must be a buffer
//    source").
// 2. No default `new URL('<name>_bg.wasm', import.meta.url)` in the unused async init: bundlers
//    (Turbopack, webpack, Vite, wrangler) emit the file that URL names a second time, beside the
//    one the entry loads, so every Edge function and Worker carried the core twice. The entries
//    always pass the module (js/src/entry/), so the default is an error instead.
//   node scripts/patch-glue.mjs pkg/web/context_compactor.js
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.argv[2];
let text = readFileSync(file, 'utf8');
const edits = [
  [/if \(!\(module instanceof WebAssembly\.Module\)\) \{/g, "if (Object.prototype.toString.call(module) !== '[object WebAssembly.Module]') {"],
  [/module_or_path = new URL\('[\w.-]+_bg\.wasm', import\.meta\.url\);/g, "throw new Error('context-compactor: the entry passes the module to init');"],
];
for (const [pattern, replacement] of edits) {
  const found = text.match(pattern)?.length ?? 0;
  if (found !== 1) {
    console.error(`patch-glue: ${file}: expected one match of ${pattern}, found ${found} (a new wasm-bindgen? update scripts/patch-glue.mjs)`);
    process.exit(1);
  }
  text = text.replace(pattern, replacement);
}
writeFileSync(file, text);
console.error(`[patch-glue] ${file}: initSync accepts a module of another realm; no default .wasm URL`);
