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
  // (working files, provider items, summary continuations: +16 kB); 408 kB now.
  assert.ok(core < 450_000, `core wasm ${kB(core)} (budget 450 kB)`);
  // Rank format version 3 (data/README.md: each token a pair of lower ranks) since issue 21:
  // o200k 719 kB (989 kB before), cl100k 251 kB (by reference to o200k; 281 kB before).
  assert.ok(o200k < 800_000, `o200k ranks ${kB(o200k)} (budget 800 kB)`);
  assert.ok(cl100k < 300_000, `cl100k ranks ${kB(cl100k)} (budget 300 kB)`);
  // What a browser downloads for both encodings, beside the JS: 1,378 kB now (the README's
  // 1,395 adds the bundled JS); 1,676 kB before version 3.
  assert.ok(core + o200k + cl100k < 1_450_000, `core + both rank modules ${kB(core + o200k + cl100k)} (budget 1,450 kB)`);
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
