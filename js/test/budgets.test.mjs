// Budgets with wide margins, so CI catches a regression and never a noisy machine: shipped sizes,
// and linear-time counting on the inputs that make tokenizers superlinear (the time for 1 MB over
// the time for 100 kB: 10 when linear, 100 when quadratic). The measured figures are in the
// README (`npm run bench`).
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { init, countTokens } from '../dist/entry/node.js';
import { hardInputs, timeFirstCount } from '../../bench/tokenizers/hard-inputs.mjs';

const gz = (path) => gzipSync(readFileSync(new URL(path, new URL('../dist/', import.meta.url))), { level: 9 }).length;

test('shipped sizes stay within budget (gzip -9)', () => {
  const core = gz('wasm/context_compactor_bg.wasm');
  const o200k = gz('ranks/o200k_base.wasm');
  const cl100k = gz('ranks/cl100k_base.wasm');
  const kB = (n) => `${Math.round(n / 1000)} kB`;
  // 350 kB before the tokenizer.json loaders (issue 21, +40 kB) and this round's planner
  // (working files, provider items, summary continuations: +16 kB); 406 kB now.
  assert.ok(core < 450_000, `core wasm ${kB(core)} (budget 450 kB)`);
  assert.ok(o200k < 1_100_000, `o200k ranks ${kB(o200k)} (budget 1,100 kB)`);
  // Stored by reference to o200k's ranks since issue 21: 284 kB (429 kB before).
  assert.ok(cl100k < 350_000, `cl100k ranks ${kB(cl100k)} (budget 350 kB)`);
});

test('counting is linear on hard inputs: time(1 MB) / time(100 kB) stays far below quadratic', async () => {
  await init();
  const small = hardInputs(100_000);
  const large = hardInputs(1_000_000);
  const time = (s) => timeFirstCount((text) => countTokens(text), s);
  const ratios = {};
  for (const kind of Object.keys(small)) {
    // Best of two for each size, against scheduler noise.
    const a = Math.min(time(small[kind]), time(small[kind]));
    const b = Math.min(time(large[kind]), time(large[kind]));
    ratios[kind] = b / Math.max(a, 1); // 1 ms floor: sub-millisecond timings are noise
  }
  for (const [kind, ratio] of Object.entries(ratios)) assert.ok(ratio < 30, `${kind}: ratio ${ratio.toFixed(1)} (linear is 10)`);
});
