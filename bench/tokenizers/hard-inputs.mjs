// Linearity on the inputs that make tokenizers superlinear: for each, the time to count 100 kB
// and 1 MB, and their ratio (10 = linear). Each text is counted once, after a warm-up on a
// different text of the same kind, so no cache of pieces already seen can hide the work. One contender per run:
//   node hard-inputs.mjs <contender> [input]   -> JSON { input: { ms100k, ms1m, ratio, mbps1m } }
// A count that throws (npm tiktoken's wasm traps, `RuntimeError: unreachable`, on 1 MB of
// spaces) is a result: { input: { crashed: 'RuntimeError: unreachable', on: '1 MB of spaces' } },
// and the inputs after it are not counted (the contender's state may be broken).
import { allContenders } from './contenders.mjs';

export function hardInputs(size) {
  const fill = (unit) => unit.repeat(Math.ceil(size / Buffer.byteLength(unit))).slice(0, size);
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const base64 = Array.from({ length: size }, () => B64[Math.floor(rnd() * 64)]).join('');
  const json = JSON.stringify(Array.from({ length: Math.ceil(size / 60) }, (_, i) => ({ id: i * 7919, name: `item-${i}`, tags: ['a', 'b'], ok: i % 3 === 0 }))).slice(0, size);
  return {
    'NBSP run': fill('\u00A0'),
    'U+3000 run': fill('\u3000'),
    CJK: fill('中文字語日本語の文章'),
    'one repeated char': fill('a'),
    'spaces': fill(' '),
    base64,
    'minified JSON': json,
  };
}

/** Milliseconds to count `s` once, after a warm-up on a different text of the same kind (JIT and
 * tables warm; no cache of pieces already seen can hide the work). */
export function timeFirstCount(count, s) {
  count(s.slice(0, 999) + ' warm-up');
  const t0 = performance.now();
  count(s);
  return performance.now() - t0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const c = (await allContenders()).find((x) => x.name === process.argv[2]);
  const enc = await c.load('o200k_base');
  const small = hardInputs(100_000);
  const large = hardInputs(1_000_000);
  const time = (s) => timeFirstCount(enc.count, s);
  const out = {};
  for (const k of Object.keys(small).filter((k) => !process.argv[3] || k === process.argv[3])) {
    let on = `100 kB of ${k}`;
    try {
      const ms100k = time(small[k]);
      on = `1 MB of ${k}`;
      const ms1m = time(large[k]);
      out[k] = { ms100k, ms1m, ratio: ms1m / ms100k, mbps1m: Buffer.byteLength(large[k]) / 1e3 / ms1m };
    } catch (error) {
      out[k] = { crashed: `${error?.name ?? 'Error'}: ${error?.message ?? error}`.trim(), on };
      break;
    }
  }
  console.log(JSON.stringify(out));
}
