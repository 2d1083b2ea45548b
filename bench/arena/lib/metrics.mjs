// Turns the prompts a contender sent into the arena's figures. Every prompt is counted with the
// same exact tokenizer (o200k_base), whatever framework sent it.
import { createHash } from 'node:crypto';
import { countTokens } from 'context-compactor';
import { orphans, pieces, promptContains } from './prompt.mjs';
import { account, visible } from './reread.mjs';

/** Anthropic's published prompt-cache multipliers: a cache read costs 0.1× an input token, a
 * cache write 1.25×. */
export const CACHE_READ = 0.1;
export const CACHE_WRITE = 1.25;

/**
 * How long a cached prefix lives, in seconds: Anthropic's default (ephemeral) cache lifetime,
 * 5 minutes, the one CACHE_WRITE's 1.25× buys (the 1-hour lifetime costs 2×). Each main call
 * refreshes it (it reads or writes the prefix); a main call that starts more than this after the
 * previous main call started finds the cache gone and writes its whole prompt (`coldCalls`), for
 * every contender alike; a continuation summary reads the cache only while it lives.
 */
export const CACHE_LIFETIME_S = 300;

/** The arena clock's epoch: a session starts on Monday 2026-01-05 at 09:00 UTC (`Scorer.now()`). */
export const SESSION_START_MS = Date.UTC(2026, 0, 5, 9, 0, 0);

/**
 * How long a summarizer call takes, in seconds (issue 32: the time a turn waits on compaction):
 * a fixed part (the request's round trip and time to first token, 1 s), reading the request
 * (10,000 uncached input tokens a second, ten times that from the cache) and writing the summary
 * (800 tokens at 80 a second: 10 s, the summary template's typical length at a fast model's
 * speed). Stated, not measured: it prices every contender's summaries the same way.
 */
export const SUMMARY_LATENCY = { fixedS: 1, uncachedPerS: 10_000, cachedPerS: 100_000, outputTokens: 800, outputPerS: 80 };

/** Seconds a summarizer call of `tokens` input tokens, `cached` of them from the cache, takes. */
export function summarySeconds(tokens, cached) {
  const l = SUMMARY_LATENCY;
  return l.fixedS + (tokens - cached) / l.uncachedPerS + cached / l.cachedPerS + l.outputTokens / l.outputPerS;
}

/**
 * How long a main model call takes, in seconds: the arena's clock (a summary made in the
 * background is ready once the time after it — calls, and the user's think time before a turn —
 * has reached its `summarySeconds`). The same reading speeds as a summary, and 150 output tokens
 * (a tool call or a short answer) at 80 a second. Stated, not measured. Tools take no time (the
 * replay returns recorded outputs); between turns the clock passes the session's think time
 * (`Scorer.idle`: the real sessions' own, from their logs; the generated ones', drawn from a
 * stated distribution, sessions/lib.mjs THINK_TIME).
 */
export const CALL_LATENCY = { fixedS: 1, outputTokens: 150 };

/** Seconds a main call of `tokens` input tokens, `cached` of them from the cache, takes. */
export function callSeconds(tokens, cached) {
  const l = SUMMARY_LATENCY;
  return CALL_LATENCY.fixedS + (tokens - cached) / l.uncachedPerS + cached / l.cachedPerS + CALL_LATENCY.outputTokens / l.outputPerS;
}

const counts = new Map();
/** Tokens of one piece, remembered (pieces repeat from call to call). */
function tokens(text) {
  let n = counts.get(text);
  if (n === undefined) {
    n = countTokens(text);
    if (text.length > 64) counts.set(text, n);
  }
  return n;
}

/** `stored(value)` over a contender's stored texts: whether any holds the value. */
export function searchIn(texts) {
  const all = texts.join('\n');
  return (value) => all.includes(value);
}

export function clearCounts() {
  counts.clear();
}

function commonPrefixLength(a, b) {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** `{tokens, pieces}` of a prompt, and the tokens it shares as a prefix with `previous`. */
export function measure(prompt, previous) {
  const ps = pieces(prompt);
  const each = ps.map(tokens);
  const total = each.reduce((a, b) => a + b, 0);
  let cached = 0;
  let whole = false;
  let i = 0;
  if (previous) {
    while (i < ps.length && i < previous.pieces.length && ps[i] === previous.pieces[i]) cached += each[i++];
    whole = i === previous.pieces.length;
    if (!whole && i < ps.length) {
      const common = commonPrefixLength(ps[i], previous.pieces[i]);
      if (common > 0) cached += Math.max(0, countTokens(ps[i].slice(0, common)) - 1);
    }
  }
  return { tokens: total, pieces: ps, cached, common: i, extendsPrevious: previous ? whole : true };
}

/** The think time of a session, for the report: `{ gaps, idleMinutes, overCacheLifetime,
 * longestMinutes }` (`gaps`: user messages after the first). */
export function thinkTimeSummary(session) {
  const gaps = (session.thinkSeconds ?? []).slice(1);
  const minutes = (s) => Math.round(s / 6) / 10;
  return { gaps: gaps.length, idleMinutes: minutes(gaps.reduce((a, b) => a + b, 0)), overCacheLifetime: gaps.filter((g) => g > CACHE_LIFETIME_S).length, longestMinutes: minutes(Math.max(0, ...gaps)) };
}

/**
 * Scores one run as it goes (prompts are not kept: an unmanaged run sends gigabytes in all).
 * `idle(seconds)` before each user turn (the user's think time: the clock passes it);
 * `call(prompt)` for each main model call, in order; `summary(prompt)` for each summarizer call;
 * `needle(needle, prompt)` for the first prompt of the turn that needs it; `result(stored)` at
 * the end (with a digest of every prompt, in order, to compare host shapes byte for byte), `stored(value)` saying whether the contender's store holds the value
 * (content only leaves a prompt after it is stored, and stores only grow, so "stored at the end"
 * is "stored when needed" for every needle that had left the prompt by then).
 */
export class Scorer {
  #previous;
  #input = 0;
  #cost = 0;
  #over = 0;
  #orphaned = 0;
  #breaks = 0;
  #breakCalls = [];
  #largest = 0;
  #calls = 0;
  #summaries = 0;
  #summaryInput = 0;
  #summaryCached = 0;
  #summaryCost = 0;
  /** Seconds of summaries since the last main call (the next call waits for them). */
  #pendingWait = 0;
  #waitedCalls = 0;
  #waitSeconds = 0;
  /** The arena's clock, in seconds: main calls and the waits before them (`callSeconds`). */
  #clock = 0;
  /** Background summaries under way: when each is ready, and what to resolve then. */
  #running = [];
  /** When the last main call started (it read or wrote the cache then): the cache lives
   * CACHE_LIFETIME_S from there. */
  #cacheAt;
  #cold = 0;
  /** Seconds of think time the clock passed (`idle`). */
  #idle = 0;
  #background = 0;
  #needles = [];
  #digests = [];
  #reads = [];
  #continuity = { plan: [0, 0], working: [0, 0] };
  /** Whether the last call's prompt did not extend the one before (a compaction). */
  lastBroke = false;

  constructor(window) {
    this.window = window;
  }

  /** The arena's clock, in seconds since the session started. */
  get clock() {
    return this.#clock;
  }

  /** The arena's clock as epoch milliseconds (SESSION_START_MS + the clock): a contender may hand
   * it to a library as its clock. */
  now() {
    return SESSION_START_MS + Math.round(this.#clock * 1000);
  }

  /** Whether the cache the last main call read or wrote still lives now. */
  #cacheAlive() {
    return this.#cacheAt !== undefined && this.#clock - this.#cacheAt <= CACHE_LIFETIME_S;
  }

  /** Resolves the background summaries ready by `at` on the clock. */
  #resolve(at) {
    const ready = this.#running.filter((r) => r.at <= at);
    this.#running = this.#running.filter((r) => r.at > at);
    for (const r of ready) r.resolve();
  }

  /** The user's think time before a turn: the clock passes `seconds`. Summaries keep running
   * through it: a background one whose time has come is ready (resolved now, before the turn's
   * first call is planned), and a summary the next call would wait for has that much less left. */
  idle(seconds) {
    if (!(seconds > 0)) return;
    this.#pendingWait = Math.max(0, this.#pendingWait - seconds);
    this.#clock += seconds;
    this.#idle += seconds;
    this.#resolve(this.#clock);
  }

  /** Resolves now the background summaries that will be ready `seconds` from now, however the
   * contender spends the time: at a turn's last call, the think time before the next turn (the
   * contender then has the rest of the turn to take the summary in, as it has between calls). */
  settleWithin(seconds) {
    this.#resolve(this.#clock + Math.max(0, seconds));
  }

  /** A main-model call. `step` (the session message it answers with) and `uses` (the earlier
   * outputs that step used, `reread.mjs`) feed the re-read accounting. A call that starts more
   * than CACHE_LIFETIME_S after the previous one writes its whole prompt (a cold call). */
  call(prompt, { step, uses = [] } = {}) {
    const m = measure(prompt, this.#previous);
    if (this.#pendingWait > 0) {
      this.#waitedCalls++;
      this.#waitSeconds += this.#pendingWait;
      this.#clock += this.#pendingWait;
      this.#pendingWait = 0;
    }
    // The cache: the previous call's prefix, if it still lives (the first call has none).
    const cold = this.#previous !== undefined && !this.#cacheAlive();
    if (cold) this.#cold++;
    const cached = cold ? 0 : m.cached;
    this.#cacheAt = this.#clock;
    // The call runs; background summaries finish meanwhile.
    this.#clock += callSeconds(m.tokens, cached);
    this.#resolve(this.#clock);
    this.#reads.push({ step, tokens: m.tokens, pieces: m.pieces.length, common: m.common, cold, uses: uses.map((use) => ({ use, visible: visible(prompt, use) })) });
    this.#calls++;
    this.#input += m.tokens;
    this.#cost += CACHE_READ * cached + CACHE_WRITE * (m.tokens - cached);
    if (m.tokens > this.window) this.#over++;
    if (orphans(prompt) > 0) this.#orphaned++;
    if (!m.extendsPrevious) {
      this.#breaks++;
      this.#breakCalls.push({ call: this.#calls, tokens: m.tokens, cached });
    }
    this.lastBroke = !m.extendsPrevious;
    this.#largest = Math.max(this.#largest, m.tokens);
    this.#digests.push(createHash('sha1').update(m.pieces.join('\u0000')).digest('hex').slice(0, 12));
    this.#previous = m;
    return m.tokens;
  }

  /** A summarizer call. A continuation of the agent's prompt reads from the cache what it
   * shares with the last main call, while that cache lives (CACHE_LIFETIME_S; a continuation does
   * not refresh it: only main calls do); a plain request is all new input. A summary on the turn's
   * critical path makes the next main call wait for it (`summarySeconds`); one made in the
   * background (`background`, context-compactor's `Plan.ahead`) waits for nobody: the returned
   * promise resolves once the clock after it — main calls, waits, the user's think time — has
   * passed that long (the contender's summarizer answers then), so a summary the trigger needs
   * before that is not ready. */
  summary(prompt, { continuation = false, background = false } = {}) {
    const m = measure(prompt, continuation && this.#cacheAlive() ? this.#previous : undefined);
    const seconds = summarySeconds(m.tokens, m.cached);
    let done;
    if (background) {
      // Off the critical path: ready once the clock has passed as long (calls, think time).
      this.#background++;
      done = new Promise((resolve) => this.#running.push({ at: this.#clock + seconds, resolve }));
    } else this.#pendingWait += seconds;
    const cost = CACHE_READ * m.cached + CACHE_WRITE * (m.tokens - m.cached);
    this.#summaries++;
    this.#summaryInput += m.tokens;
    this.#summaryCached += m.cached;
    this.#summaryCost += cost;
    this.#cost += cost;
    return done;
  }

  /** After a compaction: whether the latest plan (`plan`, after a summary) or the working file's
   * latest content (`working`) is in the prompt. */
  continuity(kind, inPrompt) {
    this.#continuity[kind][1]++;
    if (inPrompt) this.#continuity[kind][0]++;
  }

  /** A needle's check; a call made again (a retry after a rejected prompt) replaces the earlier
   * check: the prompt that went through is the one the model answered from. */
  needle(needle, prompt) {
    const check = { id: needle.id, value: needle.value, inPrompt: promptContains(prompt, needle.value) };
    const k = this.#needles.findIndex((n) => n.id === needle.id);
    if (k >= 0) this.#needles[k] = check;
    else this.#needles.push(check);
  }

  result(stored) {
    const lost = this.#needles.filter((n) => !n.inPrompt && !stored(n.value));
    const reread = account(this.#reads, { stored, count: tokens, read: CACHE_READ, write: CACHE_WRITE });
    // What the losses would cost had the agent run their tools again instead (a peer without a
    // store; reported in results.json, not in the tables).
    const rerun = reread.losses ? account(this.#reads, { stored: () => true, count: tokens, read: CACHE_READ, write: CACHE_WRITE }).rereadCost : reread.rereadCost;
    const cost = Math.round(this.#cost);
    return {
      calls: this.#calls,
      overWindow: this.#over,
      orphanedCalls: this.#orphaned,
      inputTokens: this.#input,
      largestPrompt: this.#largest,
      summarizerCalls: this.#summaries,
      summarizerInputTokens: this.#summaryInput,
      summarizerCachedTokens: this.#summaryCached,
      planKept: this.#continuity.plan,
      workingFileKept: this.#continuity.working,
      summarizerCost: Math.round(this.#summaryCost),
      callsWaited: this.#waitedCalls,
      secondsWaited: Math.round(this.#waitSeconds * 10) / 10,
      coldCalls: this.#cold,
      idleSeconds: Math.round(this.#idle * 10) / 10,
      clockSeconds: Math.round(this.#clock * 10) / 10,
      backgroundSummaries: this.#background,
      cost,
      uses: reread.uses,
      rereads: reread.rereads,
      rereadCost: reread.rereadCost,
      losses: reread.losses,
      effectiveCost: cost + reread.rereadCost,
      effectiveCostIfRerun: cost + rerun,
      rereadCalls: reread.rereadCalls,
      lostUses: reread.lost,
      prefixBreaks: this.#breaks,
      breakCalls: this.#breakCalls,
      needles: this.#needles.length,
      needlesInPrompt: this.#needles.filter((n) => n.inPrompt).length,
      needlesRecoverable: this.#needles.length - lost.length - this.#needles.filter((n) => n.inPrompt).length,
      needlesLost: lost.map((n) => n.id),
      promptDigests: this.#digests,
    };
  }
}
