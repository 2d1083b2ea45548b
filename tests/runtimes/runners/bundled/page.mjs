// Runs in Chromium as a native ES module. 'context-compactor' is mapped by the page's import map
// to the entry the package's export conditions select for browsers (resolved by runners/browser.mjs).
import { runScenario } from '/runtimes/scenario.mjs';
import { runReport, errString } from '/runtimes/runners/common.mjs';

try {
  const fixtureInfo = await (await fetch('/fixture-info.json')).json();
  window.__ccReport = await runReport(`chromium ${navigator.userAgent.match(/Chrome\/([\d.]+)/)?.[1] ?? '?'}`,
    'browser', async () => ({ ...(await import('context-compactor')), loadTokens: () => import('context-compactor/tokens') }), fixtureInfo, runScenario);
} catch (e) {
  window.__ccReport = { runtime: 'chromium', checks: [{ name: 'test page ran', ok: false, detail: errString(e) }], timings: {} };
}
