// The same page test, but bundled by esbuild for the browser (conditions: browser) with named
// imports (cc.mjs), as an app bundler would build it — this is where tree-shaking of the entry
// module (package.json "sideEffects") would bite. The bundle is served from the package's entry
// directory, so the entry's `new URL('../wasm/…', import.meta.url)` still finds the .wasm.
import { cc } from './cc.mjs';
import { runScenario } from '../../scenario.mjs';
import { runReport, errString } from '../common.mjs';

try {
  const fixtureInfo = await (await fetch('/fixture-info.json')).json();
  window.__ccReport = await runReport('chromium (esbuild bundle)', undefined, async () => cc, fixtureInfo, runScenario);
} catch (e) {
  window.__ccReport = { runtime: 'chromium (esbuild bundle)', checks: [{ name: 'bundled page ran', ok: false, detail: errString(e) }], timings: {} };
}
