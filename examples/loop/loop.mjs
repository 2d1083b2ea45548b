// An autonomous agent loop with the loop context of `context-compactor` (seed 003): a rolling
// window of raw iterations, a periodically re-summarized history, and a prompt rebuilt for every
// iteration within a token budget. No LLM and no API key: the "agent" is a deterministic script
// and the summarizer a deterministic mock that builds its text from the request it is given.
//
//   node examples/loop/loop.mjs [iterations]
//
// `runLoop(options)` is exported for the test (loop.test.mjs).
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { countTokens, init, loopContext } from 'context-compactor';

export const GOAL =
  'Add password login with session tokens to the Freightline API (POST /login, POST /logout, ' +
  'token refresh), with tests, and keep `pytest` and `mypy --strict` green.';

/** The loop settings of this example: a small raw window and a tight prompt budget, so that the
 * window rolls, summaries are due often, and the prompt has to be cut to fit. */
export const CONFIG = {
  rawWindowSize: 5,
  summarizeEvery: 5,
  maxSummaryTokens: 600,
  recentInPrompt: 3,
  recentOutputChars: 1_200,
  totalBudgetTokens: 1_500,
};

// ---------------------------------------------------------------------------------------------
// The scripted agent: what it "does" at each step. Facts of the early steps (argon2id, the Redis
// revert, the 15-minute TTL) must survive into the summary long after those iterations left
// the raw window.

const SCRIPT = [
  { did: 'Read the API layout: FastAPI app in freightline/api/app.py, users table in db/schema.sql', files: [] },
  { did: 'Decided: hash passwords with argon2id (argon2-cffi), not bcrypt', files: ['pyproject.toml'] },
  { did: 'Added users.password_hash column and migration 0007', files: ['db/migrations/0007_password_hash.sql', 'db/schema.sql'] },
  { did: 'Tried a Redis session cache: flaky tests in CI, reverted to a sessions table', files: ['freightline/auth/sessions.py'] },
  { did: 'Session tokens: 32 random bytes, stored as SHA-256, access TTL 15 minutes', files: ['freightline/auth/tokens.py'] },
  { did: 'POST /login returns access + refresh token; 401 on bad password', files: ['freightline/api/auth.py'] },
  { did: 'Tests for /login: success, wrong password, unknown user', files: ['tests/api/test_login.py'] },
  { did: 'Fixed mypy --strict errors in auth.py (Optional[User] narrowing)', files: ['freightline/api/auth.py'] },
  { did: 'POST /logout deletes the session row; idempotent', files: ['freightline/api/auth.py'] },
  { did: 'Tests for /logout', files: ['tests/api/test_logout.py'] },
  { did: 'Refresh tokens: rotate on use, 30-day TTL, reuse revokes the family', files: ['freightline/auth/tokens.py'] },
  { did: 'POST /token/refresh endpoint', files: ['freightline/api/auth.py'] },
  { did: 'Tests for refresh rotation and reuse detection', files: ['tests/api/test_refresh.py'] },
  { did: 'Rate limit: 5 failed logins per minute per IP (in-process token bucket)', files: ['freightline/api/ratelimit.py'] },
  { did: 'Tests for the rate limit', files: ['tests/api/test_ratelimit.py'] },
  { did: 'Auth dependency for protected routes: Bearer token → current user', files: ['freightline/api/deps.py'] },
  { did: 'Protected /quotes and /shipments with the auth dependency', files: ['freightline/api/quotes.py', 'freightline/api/shipments.py'] },
  { did: 'Updated 14 existing API tests to log in first (fixture authed_client)', files: ['tests/conftest.py'] },
  { did: 'Expired-session cleanup job (hourly, deletes rows past expiry)', files: ['freightline/jobs/cleanup.py'] },
  { did: 'Tests for expiry and the cleanup job', files: ['tests/jobs/test_cleanup.py'] },
  { did: 'OpenAPI docs: security scheme and examples for the auth endpoints', files: ['freightline/api/app.py'] },
  { did: 'Changelog and README section "Authentication"', files: ['CHANGELOG.md', 'README.md'] },
  { did: 'Full suite: 412 passed; mypy --strict clean; ruff clean', files: [] },
  { did: 'Reviewed the diff: removed a leftover debug print in sessions.py', files: ['freightline/auth/sessions.py'] },
  { did: 'Goal complete: login, logout and refresh with tests, suite green', files: [], complete: true },
];

/** A deterministic pseudo-random generator (the same run every time). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x / 2 ** 32;
  };
}

/** One "run" of the agent CLI: reads its prompt, prints a verbose log and its progress tags. */
export function scriptedAgent(prompt, n) {
  const step = SCRIPT[(n - 1) % SCRIPT.length];
  const seen = /- Total iterations: (\d+)/.exec(prompt)?.[1] ?? '?';
  const random = rng(n * 7919);
  // A long, noisy tool log: what makes raw iterations expensive to keep.
  const log = [];
  const tests = 40 + Math.floor(random() * 60);
  for (let t = 0; t < tests; t++) {
    const name = `tests/api/test_${['login', 'quotes', 'shipments', 'refresh', 'logout'][t % 5]}.py::test_case_${n}_${t}`;
    log.push(`${name} ${random() < 0.97 ? 'PASSED' : 'FAILED'} [${Math.round(((t + 1) / tests) * 100)}%]`);
  }
  const output = [
    `Resuming: the prompt says ${seen} iterations so far.`,
    `$ pytest -q`,
    ...log,
    `${tests} tests in ${(1 + random() * 9).toFixed(2)}s`,
    `<progress>${step.did}</progress>`,
    step.complete ? '<promise>COMPLETE</promise>' : '',
  ].join('\n');
  return {
    output,
    fileChanges: step.files,
    complete: Boolean(step.complete),
    durationMs: 20_000 + Math.floor(random() * 40_000),
  };
}

// ---------------------------------------------------------------------------------------------
// The mock summarizer: a stand-in for a cheap LLM. It only reads the request (the existing
// summary and the new iterations), so the summary knows exactly what the core asked about.

/** Parses the summary request's prompt: `{ existing: string[], iterations: {n, progress, files}[] }`.
 * The sections are located by their fixed headings; the iterations' own stored prompts (which
 * carry `#`/`##` headings of the loop prompt) sit inside the "New Iterations" section, so that
 * section runs up to the *last* `## Task` heading. */
export function parseSummaryRequest(request) {
  const prompt = request.messages?.[0]?.content ?? request.prompt;
  const between = (open, close, fromEnd = false) => {
    const start = prompt.indexOf(open);
    if (start < 0) return '';
    const end = fromEnd ? prompt.lastIndexOf(close) : prompt.indexOf(close, start + open.length);
    return prompt.slice(start + open.length, end < 0 ? undefined : end).trim();
  };
  const existingText = between('## Existing Progress Summary\n', '\n\n## New Iterations to Incorporate\n');
  const existing = existingText.startsWith('(none yet') ? [] : existingText.split('\n').filter((l) => l.startsWith('- '));
  const iterations = [];
  const section = between('## New Iterations to Incorporate\n', '\n\n## Task\n', true);
  for (const block of section.split(/^### Iteration (?=\d+\n)/m).slice(1)) {
    const n = Number.parseInt(block, 10);
    // The block's own bullet list comes first, before its stored prompt and output.
    const cut = block.search(/^(Prompt|Output):$/m);
    const head = cut < 0 ? block : block.slice(0, cut);
    const progress = /^- Progress: (.*)$/m.exec(head)?.[1] ?? '(no progress reported)';
    const files = /^- Files changed: (.*)$/m.exec(head)?.[1] ?? '';
    iterations.push({ n, progress, files });
  }
  return { existing, iterations };
}

/** Rolls the existing summary forward with one line per new iteration. Fails (throws) when
 * `fail` is set, like a rate-limited LLM call. */
export async function mockSummarizer(request, { fail = false } = {}) {
  if (fail) throw new Error('429 rate limited (simulated summarizer failure)');
  const { existing, iterations } = parseSummaryRequest(request);
  const lines = [
    ...existing,
    ...iterations.map((it) => `- it ${it.n}: ${it.progress}${it.files ? ` [${it.files}]` : ''}`),
  ];
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// The loop.

/**
 * Runs the loop. Options: `iterations` (25), `config` (merged over CONFIG), `goal`,
 * `failSummaries` (1-based numbers of the summary requests whose LLM call fails; default [2]),
 * `startUnixMs`, `log` (a line printer, or null for none).
 * Returns `{ state, records, summaries, finalPrompt, config }`: one record per iteration, one
 * entry per summary request.
 */
export async function runLoop(options = {}) {
  const {
    iterations = 25,
    goal = GOAL,
    failSummaries = [2],
    startUnixMs = Date.UTC(2025, 0, 6, 9, 0, 0),
    log = console.log,
  } = options;
  const config = { ...CONFIG, ...options.config };
  await init();

  let state = loopContext.create(goal, startUnixMs);
  const records = [];
  const summaries = [];
  let now = startUnixMs;

  for (let n = 1; n <= iterations; n++) {
    // 1. The prompt for this iteration: goal, progress summary, earlier and recent iterations,
    //    current state, instructions — under config.totalBudgetTokens.
    const prompt = loopContext.buildPrompt(state, config);
    const promptTokens = countTokens(prompt, 'o200k_base');

    // 2. The agent runs (here: the script).
    const run = scriptedAgent(prompt, n);
    now += run.durationMs;

    // 3. Record the iteration; the core says whether a summary is due.
    const step = loopContext.addIteration(
      state,
      {
        unixMs: now,
        cli: 'fake-agent',
        model: 'scripted-1',
        prompt,
        output: run.output,
        progressScore: Math.min(1, n / SCRIPT.length),
        fileChanges: run.fileChanges,
        durationMs: run.durationMs,
      },
      config,
    );
    state = step.state;

    // 4. A due summary goes to the (mock) LLM; success or failure goes back to the core.
    let summary = null;
    if (step.request) {
      const request = step.request;
      const ordinal = summaries.length + 1;
      const pendingBefore = state.pending.map((it) => it.number);
      let status;
      let error = null;
      try {
        const text = await mockSummarizer(request, { fail: failSummaries.includes(ordinal) });
        state = loopContext.applySummary(state, request.id, text);
        status = 'ok';
      } catch (e) {
        error = e instanceof Error ? e.message : String(e);
        state = loopContext.applySummary(state, request.id, { error });
        status = 'failed';
      }
      summary = { ordinal, id: request.id, from: request.from, through: request.through, status, error };
      summaries.push({
        ...summary,
        iteration: n,
        request,
        pendingBefore,
        pendingAfter: state.pending.map((it) => it.number),
        summarizedThrough: state.summarizedThrough,
        summaryFailures: state.summaryFailures,
        lastSummaryError: state.lastSummaryError,
      });
    }

    // 5. The state is plain JSON: persist it as an edge worker would between requests.
    state = JSON.parse(JSON.stringify(state));

    const record = {
      iteration: n,
      raw: state.iterations.length,
      rawNumbers: state.iterations.map((it) => it.number),
      pending: state.pending.map((it) => it.number),
      summarizedThrough: state.summarizedThrough,
      summary,
      prompt,
      promptTokens,
      complete: run.complete,
    };
    records.push(record);
    log?.(formatRecord(record, config));
    if (run.complete) break;
  }

  const finalPrompt = loopContext.buildPrompt(state, config);
  log?.(
    `\nFinal: ${state.totalIterations} iterations; summary covers 1-${state.summarizedThrough}; ` +
      `pending ${state.pending.length}; raw window ${state.iterations.map((it) => it.number).join(',')}; ` +
      `next prompt ${countTokens(finalPrompt, 'o200k_base').toLocaleString('en-US')} tokens ` +
      `(budget ${config.totalBudgetTokens.toLocaleString('en-US')}).`,
  );
  log?.(`Summary now (${countTokens(state.summary, 'o200k_base')} tokens), first lines:`);
  for (const line of state.summary.split('\n').slice(0, 6)) log?.(`  | ${line}`);
  return { state, records, summaries, finalPrompt, config };
}

function formatRecord(r, config) {
  const range = (xs) => (xs.length ? (xs.length > 1 ? `${xs[0]}-${xs.at(-1)}` : `${xs[0]}`) : '-');
  let summary = '';
  if (r.summary) {
    const { from, through, status, error } = r.summary;
    summary = status === 'ok' ? `summary ${from}-${through} ok` : `summary ${from}-${through} FAILED (${error}); kept pending`;
  }
  return (
    `it ${String(r.iteration).padStart(2)} | raw ${r.raw}/${config.rawWindowSize} [${range(r.rawNumbers).padEnd(5)}] ` +
    `| pending ${range(r.pending).padEnd(5)} | summarized 1-${String(r.summarizedThrough).padEnd(2)} ` +
    `| prompt ${String(r.promptTokens).padStart(5)} tok | ${summary}${r.complete ? ' | COMPLETE' : ''}`
  );
}

// Runnable as a script.
const isMain = (() => {
  try {
    return process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();
if (isMain) {
  const iterations = Number.parseInt(process.argv[2] ?? '25', 10);
  console.log(`Goal: ${GOAL}`);
  console.log(`Config: ${JSON.stringify(CONFIG)}; summary request #2 fails (simulated 429)\n`);
  await runLoop({ iterations });
}
