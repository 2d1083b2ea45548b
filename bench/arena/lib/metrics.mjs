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
 * background is ready once the calls after it have taken its `summarySeconds`). The same reading
 * speeds as a summary, and 150 output tokens (a tool call or a short answer) at 80 a second.
 * Stated, not measured; no user think time (the replays have none): the least time a background
 * summary gets.
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

/**
 * Scores one run as it goes (prompts are not kept: an unmanaged run sends gigabytes in all).
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

  /** A main-model call. `step` (the session message it answers with) and `uses` (the earlier
   * outputs that step used, `reread.mjs`) feed the re-read accounting. */
  call(prompt, { step, uses = [] } = {}) {
    const m = measure(prompt, this.#previous);
    if (this.#pendingWait > 0) {
      this.#waitedCalls++;
      this.#waitSeconds += this.#pendingWait;
      this.#clock += this.#pendingWait;
      this.#pendingWait = 0;
    }
    // The call runs; background summaries finish meanwhile.
    this.#clock += callSeconds(m.tokens, m.cached);
    const ready = this.#running.filter((r) => r.at <= this.#clock);
    this.#running = this.#running.filter((r) => r.at > this.#clock);
    for (const r of ready) r.resolve();
    this.#reads.push({ step, tokens: m.tokens, pieces: m.pieces.length, common: m.common, uses: uses.map((use) => ({ use, visible: visible(prompt, use) })) });
    this.#calls++;
    this.#input += m.tokens;
    this.#cost += CACHE_READ * m.cached + CACHE_WRITE * (m.tokens - m.cached);
    if (m.tokens > this.window) this.#over++;
    if (orphans(prompt) > 0) this.#orphaned++;
    if (!m.extendsPrevious) {
      this.#breaks++;
      this.#breakCalls.push({ call: this.#calls, tokens: m.tokens, cached: m.cached });
    }
    this.lastBroke = !m.extendsPrevious;
    this.#largest = Math.max(this.#largest, m.tokens);
    this.#digests.push(createHash('sha1').update(m.pieces.join('\u0000')).digest('hex').slice(0, 12));
    this.#previous = m;
    return m.tokens;
  }

  /** A summarizer call. A continuation of the agent's prompt reads from the cache what it
   * shares with the last main call; a plain request is all new input. A summary on the turn's
   * critical path makes the next main call wait for it (`summarySeconds`); one made in the
   * background (`background`, context-compactor's `Plan.ahead`) waits for nobody: the returned
   * promise resolves once the main calls after it have taken that long (the contender's
   * summarizer answers then), so a summary the trigger needs before that is not ready. */
  summary(prompt, { continuation = false, background = false } = {}) {
    const m = measure(prompt, continuation ? this.#previous : undefined);
    const seconds = summarySeconds(m.tokens, m.cached);
    let done;
    if (background) {
      // Off the critical path: ready once the main calls after it have taken as long.
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
