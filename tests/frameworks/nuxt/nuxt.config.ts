// Default config, but for one line that Nitro's Cloudflare presets need to bundle any `.wasm`
// (its `wasm` option, off by default; the node-server preset does not need it).
export default defineNuxtConfig({
  compatibilityDate: '2026-11-01',
  nitro: { experimental: { wasm: true } },
});
