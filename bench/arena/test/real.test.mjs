// The real sessions through no management and every context-compactor contender, at both
// windows, held to the CI margins (`lib/check.mjs`). The peers are left to `run.mjs` (their
// replay takes most of a full run's time). Skipped where the real sessions' data is not here.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { init } from 'context-compactor';
import { CONTENDERS, runOne } from '../lib/arena.mjs';
import { check, ratios } from '../lib/check.mjs';
import { available, loadReal, REAL } from '../sessions/real.mjs';

before(async () => {
  await init();
});

const ours = CONTENDERS.filter((c) => c.name === 'none' || c.name.startsWith('context-compactor '));

for (const name of Object.keys(REAL)) {
  test(`${name}: inside the window, pairs intact, every derived needle kept, at 128k and 32k`, { skip: available(name) ? false : `no data for ${name} here (see sessions/real.mjs)` }, async () => {
    const session = loadReal(name);
    const results = [];
    for (const window of [128_000, 32_000]) for (const c of ours) results.push(await runOne(c, session, window));
    assert.deepEqual(check(results), []);
    const none32 = results.find((r) => r.contender === 'none' && r.window === 32_000);
    assert.ok(none32.overWindow > none32.calls / 2, `the unmanaged run overflows 32k on most calls (${none32.overWindow}/${none32.calls})`);
    // What the agent quoted from old outputs: 3 to 8 in most sessions, 1 in claude-code-mac-security.
    assert.ok(session.needles.length >= 1, `${session.needles.length} derived needles`);
    for (const r of results) assert.equal(r.needles, session.needles.length, `${r.contender} ${r.window}: every needle checked once`);
    assert.equal(ratios(results).length, 4, 'both host shapes at both windows, against long-lived smart');
  });
}
