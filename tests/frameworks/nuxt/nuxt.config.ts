// Default config: nothing for context-compactor.
export default defineNuxtConfig({
  compatibilityDate: '2026-11-01',
});
