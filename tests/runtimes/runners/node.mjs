// Node 20 and Bun: `node runners/node.mjs [fixture.json]` / `bun runners/node.mjs [fixture.json]`.
// Loads the package by name from tests/runtimes/node_modules, through its export conditions
// (Node picks "node"; Bun picks "bun", which the package maps to the same entry).
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { runScenario } from '../scenario.mjs';
import { parseFixture, runReport, printReport } from './common.mjs';

const runtime = globalThis.Bun ? `bun ${Bun.version}` : `node ${process.version}`;
const fixturePath = process.argv[2] || fileURLToPath(new URL('../../fixtures/token-counts.json', import.meta.url));
const text = await readFile(fixturePath, 'utf8').catch(() => null);
const report = await runReport(runtime, 'node', async () => ({ ...(await import('context-compactor')), loadTokens: () => import('context-compactor/tokens') }), parseFixture(text, fixturePath), runScenario);
process.exitCode = printReport(report) ? 0 : 1;
