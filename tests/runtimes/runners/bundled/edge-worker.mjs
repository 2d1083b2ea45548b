// Vercel Edge function body (bundled by runners/edge.mjs with the edge-light conditions into a
// classic script the EdgeRuntime evaluates; it answers fetch events like a Vercel edge function).
// The Edge entry carries o200k_base's data only (the platform's size limit): the rest the
// scenario uses and the tokenizer compiler are imported here the documented way, by the
// package's subpaths with Vercel's `?module` (precompiled WebAssembly.Modules), and handed to
// the scenario (see worker.mjs).
import cl100k_base from 'context-compactor/ranks/cl100k_base.wasm?module';
import qwen3 from 'context-compactor/ranks/qwen3.wasm?module';
import deepseek_v3 from 'context-compactor/ranks/deepseek_v3.wasm?module';
import compiler from 'context-compactor/compiler.wasm?module';
import fixtureInfo from 'virtual:fixture';
import { cc } from './cc.mjs';
import { runScenario } from '../../scenario.mjs';
import { runReport } from '../common.mjs';

const data = { runtime: 'edge', suffix: '?module', ranks: { cl100k_base, qwen3, deepseek_v3 }, compiler };

addEventListener('fetch', (event) => {
  event.respondWith(
    runReport('edge', undefined, async () => cc, fixtureInfo, runScenario, { data }).then((report) => Response.json(report)),
  );
});
