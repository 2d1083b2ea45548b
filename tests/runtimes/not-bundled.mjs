// The Workers and Edge entries carry o200k_base's data only (js/src/entry/bundled-data.ts): an
// app imports the rest (`context-compactor/ranks/<name>.wasm`, `context-compactor/compiler.wasm`,
// with `?module` on Vercel Edge) and hands it over. Their bundles give the scenario that as
// `data` = { runtime, suffix, ranks: { <name>: module }, compiler }; these check what the package
// says before it is handed over. Runtime-agnostic like scenario.mjs.

/** The import line the package's error must give for `name` (a data file, or 'compiler'). */
export function importLine(data, name) {
  return name === 'compiler'
    ? `import compiler from 'context-compactor/compiler.wasm${data.suffix}'; await init({ compiler })`
    : `import data from 'context-compactor/ranks/${name}.wasm${data.suffix}'; await loadEncoding('${name}', data)`;
}

/** What `fn` threw or rejected with; undefined when it succeeded. */
export async function thrownBy(fn) {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

/**
 * Checks that `what` (a call) rejected with `error`, the entry's typed error for `name` not being
 * bundled: `encoding_not_loaded` naming the data (still not loaded afterwards), or
 * `not_initialized` for the compiler, its message giving the import line. `api` is the entry
 * (its CompactorError and isEncodingLoaded).
 */
export function notBundledCheck(api, check, data, what, error, name) {
  const code = name === 'compiler' ? 'not_initialized' : 'encoding_not_loaded';
  return check(
    `${what} before the app hands over ${name === 'compiler' ? 'the tokenizer compiler' : `${name}'s data`} rejects with a typed ${code} giving the import line (${data.runtime} entry)`,
    error instanceof api.CompactorError && error.code === code && error.message.includes(importLine(data, name)) &&
      (name === 'compiler' || (error.details?.name === name && !api.isEncodingLoaded(name))),
    error ? `${error.code}: ${error.message}` : 'did not reject',
  );
}
