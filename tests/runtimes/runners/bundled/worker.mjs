// Cloudflare module worker (bundled by runners/workerd.mjs with the workerd conditions).
// The Workers entry carries o200k_base's data only (the platform's size limit): the data the
// scenario uses beyond it (cl100k_base, the prebuilt Qwen 3 and DeepSeek V3) and the tokenizer
// compiler are imported here the documented way, by the package's subpaths, each a separate
// CompiledWasm module, and handed to the scenario, which passes them to loadEncoding / init.
// `virtual:fixture` is the token-count fixture, embedded at bundle time.
import cl100k_base from 'context-compactor/ranks/cl100k_base.wasm';
import qwen3 from 'context-compactor/ranks/qwen3.wasm';
import deepseek_v3 from 'context-compactor/ranks/deepseek_v3.wasm';
import compiler from 'context-compactor/compiler.wasm';
import fixtureInfo from 'virtual:fixture';
import { cc } from './cc.mjs';
import { runScenario } from '../../scenario.mjs';
import { runReport } from '../common.mjs';

// `suffix`: what the package's errors must name in the import line (none on Workers).
const data = { runtime: 'workerd', suffix: '', ranks: { cl100k_base, qwen3, deepseek_v3 }, compiler };

export default {
  async fetch() {
    return Response.json(await runReport('workerd', undefined, async () => cc, fixtureInfo, runScenario, { data }));
  },
};
