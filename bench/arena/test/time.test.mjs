// The arena's time (issue 32): user think time in every session, the clock passing it, a cache
// that expires after CACHE_LIFETIME_S, background summaries running through idle time.
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { init } from 'context-compactor';
import { CONTENDERS, Recorder, runOne } from '../lib/arena.mjs';
import { CACHE_LIFETIME_S, CACHE_READ, CACHE_WRITE, measure, Scorer, SESSION_START_MS, summarySeconds } from '../lib/metrics.mjs';
import { fromAiSdk } from '../lib/prompt.mjs';
import { Replay } from '../lib/script.mjs';
import { generate, SESSIONS } from '../sessions/index.mjs';
import { THINK_TIME, thinkTimes } from '../sessions/lib.mjs';
import { available, loadReal, sourceText } from '../sessions/real.mjs';
import { aiPrompt as sharedPrompt } from './fixtures.mjs';

before(async () => {
  await init();
});

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

test('generated sessions: one think time per user message, the same for the same session, different between sessions', () => {
  const seen = new Set();
  for (const name of Object.keys(SESSIONS)) {
    const s = generate(name);
    const users = s.messages.filter((m) => m.role === 'user').length;
    assert.equal(s.thinkSeconds.length, users, name);
    assert.equal(s.thinkSeconds[0], 0, `${name}: the session starts with its first user message`);
    assert.deepEqual(generate(name).thinkSeconds, s.thinkSeconds, `${name}: deterministic`);
    assert.deepEqual(thinkTimes(name, s.messages), s.thinkSeconds, `${name}: seeded by the name alone`);
    seen.add(JSON.stringify(s.thinkSeconds.slice(1, 10)));
    // the stated share of gaps longer than the cache lifetime, and only those
    const away = s.thinkSeconds.filter((g) => g > CACHE_LIFETIME_S);
    assert.equal(away.length, Math.round(THINK_TIME.awayShare * (users - 1)), `${name}: ${away.length} away gaps`);
    assert.ok(away.length >= 2, `${name}: at least two gaps longer than the cache lifetime`);
    for (const g of away) assert.ok(g >= THINK_TIME.awayMinS && g <= THINK_TIME.awayMaxS, `${name}: away gap ${g} s`);
    for (const g of s.thinkSeconds.slice(1).filter((g) => g <= CACHE_LIFETIME_S)) assert.ok(g > 0 && g <= THINK_TIME.maxS, `${name}: think gap ${g} s`);
  }
  assert.equal(seen.size, Object.keys(SESSIONS).length, 'each session draws its own gaps');
});

test('the think-time distribution has the stated shape: log-normal around 30 s, 12 % away for 10–90 minutes', () => {
  const messages = Array.from({ length: 4001 }, () => ({ role: 'user', content: 'x' }));
  const gaps = thinkTimes('shape', messages).slice(1);
  const away = gaps.filter((g) => g > THINK_TIME.maxS);
  const think = gaps.filter((g) => g <= THINK_TIME.maxS);
  assert.equal(away.length, 480, '12 % of 4000');
  const m = median(think);
  assert.ok(m > 27 && m < 33, `think median ${m} s (stated 30 s)`);
  const within = think.filter((g) => g >= 8 && g <= 112).length / think.length;
  assert.ok(within > 0.86 && within < 0.94, `${(100 * within).toFixed(1)} % of think gaps in 8–112 s (σ 0.8: 90 %)`);
  assert.ok(think.filter((g) => g === THINK_TIME.maxS).length < 0.01 * think.length, 'the 4-minute cap cuts under 1 %');
  const a = median(away);
  assert.ok(a > 26 * 60 && a < 34 * 60, `away median ${(a / 60).toFixed(1)} min (log-uniform 10–90 min: 30 min)`);
  assert.ok(Math.min(...away) >= 600 && Math.max(...away) <= 5400);
});

// Claude Code: the gap before a user message, recomputed here from the raw log: find the record
// that carries the message's text, step back to the previous record of the main chain.
for (const name of ['claude-code-wallpaper', 'claude-code-mac-security']) {
  test(`${name}: the think time before each user message comes from the log's own timestamps`, { skip: available(name) ? false : `no data for ${name} here (see sessions/real.mjs)` }, () => {
    const session = loadReal(name);
    const records = sourceText(name)
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l));
    const main = records.filter((r) => (r.type === 'user' || r.type === 'assistant') && !r.isSidechain && !r.isMeta && !r.isCompactSummary);
    const textOf = (r) => (typeof r.message.content === 'string' ? [r.message.content] : r.message.content.filter((b) => b.type === 'text').map((b) => b.text));
    const users = session.messages.filter((m) => m.role === 'user');
    assert.equal(session.thinkSeconds.length, users.length);
    let from = 0;
    let checked = 0;
    users.forEach((m, k) => {
      const i = main.findIndex((r, j) => j >= from && r.type === 'user' && textOf(r).some((t) => t && m.content.startsWith(t)));
      assert.ok(i >= 0, `user message ${k} not found in the log`);
      from = i + 1;
      const expected = i === 0 ? 0 : (Date.parse(main[i].timestamp) - Date.parse(main[i - 1].timestamp)) / 1000;
      assert.ok(Math.abs(session.thinkSeconds[k] - expected) <= 0.05, `${name} user message ${k}: ${session.thinkSeconds[k]} s, the log says ${expected} s`);
      checked++;
    });
    assert.equal(checked, users.length);
    if (name === 'claude-code-wallpaper') {
      // its longest pause: 28.5 minutes before one user message (the log, 2026-01-15)
      const longest = Math.max(...session.thinkSeconds);
      assert.ok(longest > 1700 && longest < 1720, `longest gap ${longest} s`);
      assert.equal(session.thinkSeconds.filter((g) => g > CACHE_LIFETIME_S).length, 3);
    }
  });
}

test('mini-swe-agent runs: one user message, no think time', { skip: available('swe-astroid-1333') ? false : 'no data for swe-astroid-1333 here' }, () => {
  assert.deepEqual(loadReal('swe-astroid-1333').thinkSeconds, [0]);
});

/** The shared exchange, and the user's next message. */
const aiPrompt = [...sharedPrompt, { role: 'user', content: [{ type: 'text', text: 'And now?' }] }];

test('a call after more than CACHE_LIFETIME_S of idle writes its whole prompt (a cold call); one within reads the cache', () => {
  const first = fromAiSdk(aiPrompt.slice(0, 4));
  const second = fromAiSdk(aiPrompt);
  const t1 = measure(first).tokens;
  const t2 = measure(second).tokens;
  const run = (idle) => {
    const scorer = new Scorer(1_000_000);
    scorer.call(first);
    scorer.idle(idle);
    scorer.call(second);
    scorer.summary(second, { continuation: true });
    return scorer.result(() => false);
  };
  const warm = run(CACHE_LIFETIME_S - 60);
  assert.equal(warm.coldCalls, 0);
  assert.equal(warm.cost, Math.round(CACHE_WRITE * t1 + CACHE_READ * t1 + CACHE_WRITE * (t2 - t1) + CACHE_READ * t2));
  assert.equal(warm.summarizerCachedTokens, t2, 'the continuation reads the live cache');
  const cold = run(CACHE_LIFETIME_S);
  assert.equal(cold.coldCalls, 1);
  assert.equal(cold.cost, Math.round(CACHE_WRITE * t1 + CACHE_WRITE * t2 + CACHE_READ * t2), 'the whole second prompt written');
  assert.equal(cold.idleSeconds, CACHE_LIFETIME_S);
  // the continuation comes right after the cold call: that call wrote the cache again
  assert.equal(cold.summarizerCachedTokens, t2);
  // a continuation after the cache expired reads nothing
  const late = new Scorer(1_000_000);
  late.call(first);
  late.idle(CACHE_LIFETIME_S + 1);
  late.summary(first, { continuation: true });
  assert.equal(late.result(() => false).summarizerCachedTokens, 0);
});

test('the recorder passes each turn\'s think time when the replay begins it, before the turn\'s first call; now() is that clock', () => {
  const session = {
    name: 't',
    thinkSeconds: [0, 400, 30],
    messages: [aiPrompt[1], aiPrompt[4], aiPrompt[5], aiPrompt[4], { role: 'user', content: 'More?' }, aiPrompt[4]],
    needles: [],
  };
  const recorder = new Recorder(session, 1_000_000);
  const replay = new Replay(session);
  const prompts = [fromAiSdk(aiPrompt.slice(0, 2)), fromAiSdk(aiPrompt.slice(0, 6)), fromAiSdk([...aiPrompt, { role: 'assistant', content: [{ type: 'text', text: 'ok' }] }])];
  const times = [];
  for (let t = 0; t < 3; t++) {
    replay.begin(t);
    times.push(recorder.now()); // what a contender's library reads when it plans the call
    recorder.call(() => prompts[t], replay);
    replay.next();
  }
  assert.equal(times[0], SESSION_START_MS);
  assert.equal(SESSION_START_MS, Date.UTC(2026, 0, 5, 9, 0, 0));
  const r = recorder.scorer.result(() => false);
  assert.ok(times[1] - times[0] > 400_000 && times[1] - times[0] < 410_000, `${times[1] - times[0]} ms: the 400 s gap and the first call`);
  assert.ok(times[2] - times[1] > 30_000 && times[2] - times[1] < 40_000);
  assert.equal(r.idleSeconds, 430);
  assert.equal(r.coldCalls, 1, 'after 400 s the cache is gone; after 30 s it is not');
  assert.ok(Math.abs(r.clockSeconds * 1000 - (recorder.now() - SESSION_START_MS)) < 100);
});

test('a background summary started before an idle gap longer than its latency is ready at the next call', async () => {
  const session = { name: 't', thinkSeconds: [0, 120], messages: [aiPrompt[1], aiPrompt[4], aiPrompt[5], aiPrompt[4]], needles: [] };
  const p1 = fromAiSdk(aiPrompt.slice(0, 2));
  const p2 = fromAiSdk(aiPrompt.slice(0, 6));
  assert.ok(summarySeconds(measure(p1).tokens, 0) < 120, 'the summary takes less than the gap');
  const attempt = async (gap) => {
    const recorder = new Recorder({ ...session, thinkSeconds: [0, gap] }, 1_000_000);
    const replay = new Replay({ ...session, thinkSeconds: [0, gap] });
    replay.begin(0);
    recorder.call(() => p1, replay);
    replay.next();
    // after the turn's last call (an onStepFinish, a turn-end hook): off the critical path
    let ready = false;
    recorder.summary(p1, { background: true }).then(() => (ready = true));
    replay.begin(1);
    await null; // the contender's own awaits before it plans the call
    const before = ready;
    recorder.call(() => p2, replay);
    await null;
    return { before, after: ready, result: recorder.scorer.result(() => false) };
  };
  const idle = await attempt(120);
  assert.equal(idle.before, true, 'ready when the next turn begins, before its first call is planned');
  assert.deepEqual([idle.result.callsWaited, idle.result.backgroundSummaries], [0, 1]);
  // without the gap the summary (~11 s) outlasts the next call (~3 s): not ready before it
  const none = await attempt(0);
  assert.equal(none.before, false);
  assert.equal(none.after, false);
});

test('a summary the next call would wait for runs through the think time before it', () => {
  const p = fromAiSdk(aiPrompt.slice(0, 2));
  const scorer = new Scorer(1_000_000);
  scorer.call(p);
  scorer.summary(p); // a blocking summary at a turn's end
  scorer.idle(5);
  scorer.call(p);
  const r = scorer.result(() => false);
  assert.equal(r.callsWaited, 1);
  assert.equal(r.secondsWaited, Math.round((summarySeconds(measure(p).tokens, 0) - 5) * 10) / 10);
  const s2 = new Scorer(1_000_000);
  s2.call(p);
  s2.summary(p);
  s2.idle(60);
  s2.call(p);
  assert.equal(s2.result(() => false).callsWaited, 0, 'done while the user read');
});

test('every contender passes the same think time and finds the cache expired after the same gap', async () => {
  const messages = [];
  let id = 0;
  for (let t = 0; t < 4; t++) {
    messages.push({ role: 'user', content: `Task ${t}: look it up.` });
    for (let s = 0; s < 2; s++) {
      const toolCallId = `call_${id++}`;
      messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId, toolName: 'web_search', input: { query: `q${t}-${s}` } }] });
      messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: 'web_search', output: { type: 'text', value: `result ${t} ${s} `.repeat(200) } }] });
    }
    messages.push({ role: 'assistant', content: [{ type: 'text', text: `Done with task ${t}.` }] });
  }
  const tools = { web_search: { description: 'Search the web', inputSchema: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } } };
  const session = { name: 'timed', description: 'timed', system: 'You are a research agent.', tools, messages, thinkSeconds: [0, 45, 1800, 20], needles: [] };
  const sqlite = await import('node:sqlite').then(
    () => true,
    () => false,
  );
  for (const c of CONTENDERS) {
    if (!sqlite && c.name.startsWith('cloudflare')) continue;
    const r = await runOne(c, session, 128_000);
    assert.equal(r.error, undefined, `${c.name}: ${r.error}`);
    assert.equal(r.idleSeconds, 1865, c.name);
    assert.equal(r.coldCalls, 1, `${c.name}: the first call after the 30-minute gap, only`);
  }
});
