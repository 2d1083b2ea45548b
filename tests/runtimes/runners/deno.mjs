// Deno 2: `deno run --no-prompt --no-lock --node-modules-dir=manual --allow-read=... runners/deno.mjs [fixture.json]`
// Resolves `context-compactor` from tests/runtimes/node_modules (package.json next to it),
// through the package's "deno" export condition.
import { runScenario } from '../scenario.mjs';
import { parseFixture, runReport, printReport } from './common.mjs';

const fixturePath = Deno.args[0] || new URL('../../fixtures/token-counts.json', import.meta.url).pathname;
const text = await Deno.readTextFile(fixturePath).catch(() => null);
const report = await runReport(`deno ${Deno.version.deno}`, 'deno', async () => ({ ...(await import('context-compactor')), loadTokens: () => import('context-compactor/tokens') }),
  parseFixture(text, fixturePath), runScenario);
const ok = printReport(report);
Deno.exit(ok ? 0 : 1);
