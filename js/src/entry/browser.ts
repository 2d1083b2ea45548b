// Browsers and bundlers: fetch and compile the .wasm, streaming where the server sends the
// application/wasm content type.
import { setLoader } from '../init.js';

setLoader(async () => {
  const response = fetch(new URL('../wasm/context_compactor_bg.wasm', import.meta.url));
  try {
    return await WebAssembly.compileStreaming(response);
  } catch {
    return WebAssembly.compile(await (await response).clone().arrayBuffer());
  }
});
export const runtimeEntry = 'browser';
export * from '../index.js';
