// The ~100k-token tool output every runtime (scenario.mjs) and every framework app
// (tests/frameworks, which copies this file into each app) offloads. No imports: it runs anywhere.

/** Deterministic, varied, ~100k-token (o200k_base) tool output: 2,550 distinct log-like lines (109,158 o200k tokens by gpt-tokenizer). */
export function makeBigText(lines = 2550) {
  // xorshift32 with a fixed seed: same text on every runtime, every run.
  let s = 0x9e3779b9;
  const next = () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'theta', 'kappa', 'lambda',
    'sigma', 'omega', 'router', 'cache', 'shard', 'tensor', 'widget', 'parser', 'queue', 'ledger',
    'compile', 'render', 'fetch', 'stream', 'token', 'window', 'budget'];
  const levels = ['INFO', 'WARN', 'DEBUG', 'ERROR', 'TRACE'];
  const out = [];
  for (let i = 0; i < lines; i++) {
    const a = next(), b = next(), c = next(), d = next();
    const w1 = words[a % words.length], w2 = words[b % words.length], w3 = words[c % words.length];
    const hex = (d >>> 0).toString(16).padStart(8, '0');
    const score = ((a % 100000) / 100000).toFixed(5);
    out.push(
      `${String(i).padStart(5, '0')} ${levels[d % levels.length]} src/${w1}/${w2}_${c % 97}.ts:${b % 1000} ` +
      `result id=${hex} score=${score} ${w3} ${w1}-${w2} matched "${w2} ${w3} ${b % 7919}" in ${a % 512}ms`,
    );
  }
  return out.join('\n');
}
