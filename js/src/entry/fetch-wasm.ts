/** Fetches and compiles a .wasm, streaming where the server sends `application/wasm`. */
export async function compileUrl(url: URL): Promise<WebAssembly.Module> {
  const response = fetch(url);
  try {
    return await WebAssembly.compileStreaming(response);
  } catch {
    const res = await response;
    if (!res.ok) throw new Error(`context-compactor: fetching ${url} failed: HTTP ${res.status}`);
    return WebAssembly.compile(await res.clone().arrayBuffer());
  }
}
