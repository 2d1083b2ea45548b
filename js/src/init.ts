// One idempotent initialization shared by every entrypoint. Each runtime entry registers how it
// loads the .wasm (read a file, fetch a URL, import a compiled module); `init()` runs that once.

import { initSync } from './wasm/context_compactor.js';
import { CompactorError } from './errors.js';

/** What a caller may hand to `init`: a compiled module (Edge, workerd) or the bytes. */
export type WasmSource = WebAssembly.Module | BufferSource;

type Loader = () => WasmSource | Promise<WasmSource>;

let loader: Loader | undefined;
let ready: Promise<void> | undefined;
let initialized = false;

/** Called once by each runtime entry module. */
export function setLoader(load: Loader): void {
  loader = load;
}

/**
 * Loads and instantiates the core. Safe to call many times and concurrently; the work happens
 * once. Pass a `WebAssembly.Module` or bytes to bypass the runtime's default loading.
 */
export function init(source?: WasmSource): Promise<void> {
  if (initialized) return Promise.resolve();
  ready ??= (async () => {
    const wasm = source ?? (await loader?.());
    if (!wasm) {
      throw new CompactorError('not_initialized', 'context-compactor: no wasm loader for this runtime; call init(module)');
    }
    initSync({ module: wasm });
    initialized = true;
  })().catch((error: unknown) => {
    ready = undefined; // let a later call retry
    throw error;
  });
  return ready;
}

export function isInitialized(): boolean {
  return initialized;
}

export function assertInitialized(what: string): void {
  if (!initialized) {
    throw new CompactorError(
      'not_initialized',
      `context-compactor: ${what} needs the core loaded: \`await init()\` (or \`await createCompactor()\`) first`,
    );
  }
}
