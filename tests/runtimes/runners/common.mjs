// Shared by every runner. Runtime-agnostic (used inside Node, Deno, Bun, workerd, Edge, Chromium).

export const RESULT_MARKER = '@@CC_RESULT@@';

/** Parses a fixture file's text; a missing/invalid fixture becomes a failed check, not a skip. */
export function parseFixture(text, where) {
  if (text == null) return { fixture: { cases: [] }, problem: `fixture not found: ${where}` };
  try {
    const fixture = JSON.parse(text);
    if (!Array.isArray(fixture.cases)) return { fixture: { cases: [] }, problem: `fixture has no "cases" array: ${where}` };
    return { fixture, problem: null };
  } catch (e) {
    return { fixture: { cases: [] }, problem: `fixture is not JSON (${e.message}): ${where}` };
  }
}

/**
 * Runs the scenario with a failed check for anything that throws before/around it (import errors
 * included), and returns the report object the runners print. `options` go to the scenario with
 * `expectedEntry` (the Workers and Edge bundles hand in `data`: scenario.mjs).
 */
export async function runReport(runtime, expectedEntry, loadModule, fixtureInfo, runScenario, options = {}) {
  const t0 = Date.now();
  const checks = [];
  let timings = {};
  if (fixtureInfo.problem) checks.push({ name: 'token-count fixture loads', ok: false, detail: fixtureInfo.problem });
  let cc;
  try {
    cc = await loadModule();
    checks.push({ name: "import 'context-compactor'", ok: true, detail: '' });
  } catch (e) {
    checks.push({ name: "import 'context-compactor'", ok: false, detail: errString(e) });
  }
  if (cc) {
    try {
      const r = await runScenario(cc, fixtureInfo.fixture, { ...options, expectedEntry });
      checks.push(...r);
      timings = r.timings || {};
    } catch (e) {
      checks.push({ name: 'scenario ran to completion', ok: false, detail: errString(e) });
    }
  }
  timings.totalMs = Date.now() - t0;
  return { runtime, checks, timings };
}

export function errString(e) {
  return e && (e.stack || e.message) ? String(e.stack || e.message).split('\n').slice(0, 6).join(' | ') : String(e);
}

export function formatReport(report) {
  const lines = [`[${report.runtime}]`];
  for (const c of report.checks) lines.push(`  ${c.ok ? 'PASS' : 'FAIL'}  ${c.name}${c.detail ? `  -- ${c.detail}` : ''}`);
  const t = report.timings || {};
  lines.push(`  timings: ${Object.entries(t).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  return lines.join('\n');
}

/** Human-readable lines, then one machine-readable line run-all.mjs parses. Returns ok. */
export function printReport(report) {
  console.log(formatReport(report));
  console.log(RESULT_MARKER + JSON.stringify(report));
  return report.checks.length > 0 && report.checks.every((c) => c.ok);
}
