// Transpiles the WebAssembly Component (python/src/context_compactor/core.wasm, made by
// scripts/build-component.sh) into an ES module with jco, into out/ (not committed), so Node
// can run it with the WASI shims of @bytecodealliance/preview2-shim.
//   node tests/component/transpile.mjs [component.wasm]
import { transpile, writeFiles } from '@bytecodealliance/jco-transpile';

const here = new URL('.', import.meta.url).pathname;
const wasm = process.argv[2] ?? new URL('../../python/src/context_compactor/core.wasm', import.meta.url).pathname;
const { files } = await transpile(wasm, { outDir: `${here}out`, name: 'core', noTypescript: true });
await writeFiles(files);
