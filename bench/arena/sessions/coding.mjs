// A long coding-agent session on a fictional billing service ("ledgerline": TypeScript services,
// a Rust crate, Python scripts). Many file reads (and re-reads), whole-file writes, edits,
// greps and big test/build logs, a few of them larger than a 32k window on their own.
import {
  Rng, hashString, thinkTimes, Clock, SessionBuilder, codeBlocks, mutateBlock, vitestLog, integrationLog, cargoLog, tscLog, bundleLog,
  eslintLog, pytestLog, paragraph, sentence, needleValue, insertMiddle, insertSentence, CODE, PROJECT_ROOT,
} from './lib.mjs';

const CODE_CPT = 4.0; // characters per token of generated source (measured, o200k)
const FILE_SIZE = 0.47; // scales the FILES token sizes below
const LOG_CPT = 2.9; // ... of test/build logs

const TOPIC = { style: 'code', terms: ['ledger entries', 'the settlement worker', 'refunds', 'idempotency keys', 'the retry helper', 'webhook deliveries', 'tax rounding', 'the billing service', 'payouts', 'the dunning worker'], headings: [] };

// path, language, size in tokens
const FILES = [
  ['src/server.ts', 'ts', 1400], ['src/app.ts', 'ts', 2200], ['src/config.ts', 'ts', 1200], ['src/db/pool.ts', 'ts', 1800],
  ['src/db/migrations.ts', 'ts', 2600], ['src/routes/invoices.ts', 'ts', 4200], ['src/routes/customers.ts', 'ts', 3100],
  ['src/routes/webhooks.ts', 'ts', 3600], ['src/routes/subscriptions.ts', 'ts', 2900], ['src/services/billing.ts', 'ts', 6800],
  ['src/services/tax.ts', 'ts', 3300], ['src/services/ledger.ts', 'ts', 5200], ['src/services/notifications.ts', 'ts', 2400],
  ['src/services/usage.ts', 'ts', 2800], ['src/lib/money.ts', 'ts', 1500], ['src/lib/retry.ts', 'ts', 1300],
  ['src/lib/logger.ts', 'ts', 700], ['src/lib/errors.ts', 'ts', 900], ['src/workers/settlement.ts', 'ts', 4600],
  ['src/workers/dunning.ts', 'ts', 3400], ['test/services/billing.test.ts', 'test-ts', 4400], ['test/routes/invoices.test.ts', 'test-ts', 3800],
  ['test/services/ledger.test.ts', 'test-ts', 3200], ['test/workers/settlement.test.ts', 'test-ts', 2900], ['test/routes/webhooks.test.ts', 'test-ts', 2500],
  ['crates/ledger-core/src/lib.rs', 'rs', 1600], ['crates/ledger-core/src/ledger.rs', 'rs', 4800], ['crates/ledger-core/src/money.rs', 'rs', 2700],
  ['crates/ledger-core/src/reconcile.rs', 'rs', 3900], ['scripts/backfill_usage.py', 'py', 2600], ['scripts/export_report.py', 'py', 2200],
];
const TS_SOURCES = FILES.filter(([, l]) => l === 'ts').map(([p]) => p);

const TASKS = [
  {
    files: ['src/workers/settlement.ts', 'src/services/ledger.ts', 'test/workers/settlement.test.ts'], test: 'vitest',
    prompt: (r, c) => `The settlement worker double-counts refunds when a payout is retried. Finance noticed ledger totals off by exactly the refund amount for ${r.int(3, 9)} tenants last week. Can you find the cause and fix it? Here is the trace from the alert:\n\n\`\`\`\nLedgerMismatchError: ledger for t_${r.int(10, 99)} does not balance (debits ${r.int(10_000, 90_000)}, credits ${r.int(10_000, 90_000)})\n${c.stack()}\n\`\`\`\n\nPlease add a regression test too.`,
  },
  {
    files: ['src/routes/invoices.ts', 'src/services/billing.ts', 'test/routes/invoices.test.ts'], test: 'vitest',
    prompt: (r) => `Add idempotency to invoice creation: \`POST /v1/invoices\` should return the existing invoice (200, not 201) when the same \`Idempotency-Key\` header is reused within ${r.pick([24, 48])}h, and 409 if the body differs. Store the key with the invoice. Tests please.`,
  },
  {
    files: ['src/services/billing.ts', 'src/services/tax.ts', 'test/services/billing.test.ts'], test: 'vitest',
    prompt: (r) => `\`npm test\` is red on main since the tax service refactor — ${r.int(3, 8)} failures in test/services/billing.test.ts, all around proration. Fix the code, not the tests (unless a test is genuinely wrong, then tell me why).`,
  },
  {
    files: ['crates/ledger-core/src/money.rs', 'crates/ledger-core/src/ledger.rs', 'crates/ledger-core/src/lib.rs'], test: 'cargo',
    prompt: () => `The Rust ledger-core crate rounds half-up for JPY and half-even for everything else. It should be banker's rounding (half-even) everywhere. Fix \`crates/ledger-core/src/money.rs\`, check the callers, and make \`cargo test\` pass.`,
  },
  {
    files: ['scripts/backfill_usage.py', 'src/services/usage.ts'], test: 'pytest',
    prompt: (r) => `scripts/backfill_usage.py times out for our biggest tenants (${r.int(2, 9)}M usage rows). Make it page through rows in batches of 500 with a server-side cursor, add a \`--dry-run\` summary, and keep memory flat.`,
  },
  {
    files: ['src/lib/retry.ts', 'src/services/notifications.ts', 'src/workers/dunning.ts'], test: 'vitest',
    prompt: () => `Refactor src/lib/retry.ts so retries use exponential backoff with full jitter and honour \`Retry-After\` when the upstream sends it. Update the callers (notifications and dunning at least). Keep the public signature if you can.`,
  },
  {
    files: ['src/routes/webhooks.ts', 'src/config.ts', 'test/routes/webhooks.test.ts'], test: 'vitest',
    prompt: (r) => `Inbound webhooks: verify the HMAC-SHA256 signature in \`src/routes/webhooks.ts\` (header \`X-Ledgerline-Signature\`, secret from config) and reject timestamps older than ${r.pick([5, 10])} minutes with a 400. Constant-time comparison, please.`,
  },
  {
    files: ['src/workers/dunning.ts', 'src/services/notifications.ts', 'src/db/pool.ts'], test: 'vitest',
    prompt: (r) => `Customers got duplicate dunning emails after Tuesday's deploy (${r.int(40, 400)} duplicates). I suspect two workers picked up the same job during the rolling restart. Investigate and make the dunning worker safe to run concurrently.`,
  },
  {
    files: ['src/routes/customers.ts', 'src/services/billing.ts', 'src/app.ts'], test: 'tsc',
    prompt: () => `After bumping zod to 3.23, \`npx tsc --noEmit\` reports a pile of type errors. Clean them up without sprinkling \`any\`.`,
  },
  {
    files: ['crates/ledger-core/src/reconcile.rs', 'crates/ledger-core/src/ledger.rs'], test: 'cargo',
    prompt: () => `Reconciliation in crates/ledger-core/src/reconcile.rs bails on the first mismatch. Make it collect every mismatch per period and return them all, and add tests for a period with two mismatches.`,
  },
  {
    files: ['src/services/ledger.ts', 'src/db/migrations.ts', 'test/services/ledger.test.ts'], test: 'vitest',
    prompt: () => `Add a \`settled_at\` column to ledger entries: a migration that adds it and backfills from the settlement events, and the ledger service should set it when an entry settles. Update the tests.`,
  },
  {
    files: ['src/services/billing.ts', 'src/routes/subscriptions.ts', 'test/services/billing.test.ts'], test: 'vitest',
    prompt: () => `Subscriptions: prorate plan upgrades in the middle of a period (credit the unused part of the old plan, charge the remainder of the new one, same invoice). Implement it in the billing service with tests for upgrades on day 1, mid-period and the last day.`,
  },
  {
    files: ['src/services/usage.ts', 'src/services/billing.ts', 'src/services/ledger.ts'], test: 'lint',
    prompt: () => `CI lint is failing (\`no-floating-promises\` and a few \`no-explicit-any\`) in src/services. Fix the findings properly — await or \`void\` with a reason, real types instead of any.`,
  },
  {
    files: ['test/routes/invoices.test.ts', 'test/workers/settlement.test.ts', 'src/db/pool.ts'], test: 'integration',
    prompt: (r) => `The integration suite now takes over ${r.int(5, 9)} minutes in CI. Find what is slow (I bet the fixtures) and speed it up without losing coverage.`,
  },
  {
    files: ['scripts/export_report.py', 'src/services/ledger.ts'], test: 'pytest',
    prompt: () => `The monthly export (scripts/export_report.py) should include refunds as negative lines and a per-currency subtotal at the end. Finance wants it for the next close.`,
  },
  {
    files: ['src/server.ts', 'src/app.ts', 'src/config.ts'], test: 'build',
    prompt: (r) => `Prepare release 2.${r.int(15, 19)}.0: bump the version, make sure the production build is clean and the bundle did not grow much, and list what changed since the last tag.`,
  },
];

const TOOL_NEEDLES = [
  { line: (v) => `[deploy:staging] resolved deploy key ${v} for target eu-west-1 (expires in 30d)`, question: 'Earlier in this session one of the test runs printed the deploy key it resolved for the staging target. What was that key exactly?', answer: (v) => `The staging deploy key printed in that run was \`${v}\` (target eu-west-1).` },
  { line: (v) => `[fixtures] loaded snapshot ${v} (42 tenants, 18211 ledger entries)`, question: 'Which fixture snapshot id did the test fixtures load in one of the earlier runs? I need it for the CI cache key.', answer: (v) => `The fixtures loaded snapshot \`${v}\` (42 tenants, 18211 ledger entries).` },
  { line: (v) => `[09:14:52.118] WARN  (webhooks/4412): signing secret rotated, new secret id ${v}`, question: 'One of the logs earlier reported that the webhook signing secret was rotated. What was the new secret id?', answer: (v) => `The log reported the rotated webhook signing secret as secret id \`${v}\`.` },
  { line: (v) => `[license] ledgerline enterprise build, license id ${v} (seats: 25)`, question: 'A build/test log earlier showed the enterprise license id. What was it?', answer: (v) => `The license id printed in that log was \`${v}\` (25 seats).` },
  { line: (v) => `[migrations] advisory lock ${v} acquired by ci-runner-4`, question: 'What was the migration advisory lock token that ci-runner-4 acquired in one of the earlier test runs?', answer: (v) => `ci-runner-4 acquired migration advisory lock \`${v}\`.` },
];

const USER_NEEDLES = [
  { style: 'prefixed', prefix: 'SUP', text: (v) => `By the way, this came in through support ticket ${v}, so keep that id in mind — I'll need it for the changelog later.`, question: 'What was the support ticket id I gave you earlier? I need it for the changelog.', answer: (v) => `The support ticket id you gave me was \`${v}\`.` },
  { style: 'code', text: (v) => `Also, product agreed to call the new feature flag ${v} — don't create it yet, just remember the name.`, question: 'What was the feature flag name product agreed on, the one you were supposed to remember?', answer: (v) => `The feature flag name product agreed on is \`${v}\`.` },
  { style: 'hex', text: (v) => `FYI the staging read replica we use for manual checks has instance id ${v}, in case you need to point something at it.`, question: 'Remind me of the staging read replica instance id I mentioned a while ago?', answer: (v) => `The staging read replica's instance id is \`${v}\`.` },
  { style: 'prefixed', prefix: 'ESC', text: (v) => `Note that our on-call escalation code is ${v} if anything in prod looks off while you are in there.`, question: 'What was the on-call escalation code I shared earlier?', answer: (v) => `The on-call escalation code you shared is \`${v}\`.` },
  { style: 'soft', text: (v) => `The codename for this quarter's release is ${v}, for the release notes.`, question: "What's the release codename I told you to use in the release notes?", answer: (v) => `This quarter's release codename is \`${v}\`.` },
];

const SYSTEM = `You are Ledger Agent, an autonomous software engineer working in the git repository at ${PROJECT_ROOT} (a TypeScript billing service with a Rust crate under crates/ledger-core and Python scripts under scripts/).

You work in steps. In each step you may call one or more tools; their results come back before your next step. When the task is done, reply with a short summary of what you changed and how you verified it, without calling tools.

Guidelines:
- Read the relevant code before changing it. Prefer small, focused changes that match the existing style.
- Use \`search_code\` to find usages before renaming or changing a signature.
- \`create_file\` replaces the whole file: always send the complete new content. \`replace_in_file\` replaces one exact, unique string.
- After a change, run the relevant tests (\`npm test\`, \`cargo test\`, \`pytest\`) and, for TypeScript, \`npx tsc --noEmit\`.
- Never commit, push, or run destructive commands (rm -rf, git reset --hard, dropping databases).
- Never print or store secrets. If a secret appears in output, do not repeat it unless the user asks for it.
- If a test is wrong rather than the code, say so and explain why before changing the test.
- Keep the user informed with one short sentence before a batch of tool calls when it helps.

The repository uses Node 20, pnpm, vitest, zod, fastify and pino; the crate uses Rust stable (2021 edition). Money is always integer cents (\`Cents\` in Rust, \`number\` branded as \`Cents\` in TypeScript).`;

const TOOLS = {
  open_file: { description: 'Read a file from the repository. Returns its content with line numbers (cat -n style).', inputSchema: { type: 'object', properties: { path: { type: 'string', description: 'Path relative to the repository root.' } }, required: ['path'], additionalProperties: false } },
  create_file: { description: 'Create or overwrite a file with the complete content given.', inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string', description: 'The complete new content of the file.' } }, required: ['path', 'content'], additionalProperties: false } },
  replace_in_file: { description: 'Replace one exact occurrence of old_string with new_string in a file. old_string must be unique in the file.', inputSchema: { type: 'object', properties: { path: { type: 'string' }, old_string: { type: 'string' }, new_string: { type: 'string' } }, required: ['path', 'old_string', 'new_string'], additionalProperties: false } },
  run_command: { description: 'Run a shell command in the repository root and return its combined stdout/stderr and exit code.', inputSchema: { type: 'object', properties: { command: { type: 'string' }, timeout_ms: { type: 'integer', minimum: 1000, maximum: 1_800_000 } }, required: ['command'], additionalProperties: false } },
  search_code: { description: 'Search file contents with a regular expression (ripgrep). Returns matching lines as path:line:text.', inputSchema: { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string', description: 'Directory or file to search, default the repository root.' }, glob: { type: 'string', description: 'Only files matching this glob, e.g. "*.ts".' } }, required: ['pattern'], additionalProperties: false } },
};

class Repo {
  constructor(rng) {
    this.files = new Map();
    for (const [path, lang, tokens] of FILES) {
      this.files.set(path, { lang, blocks: codeBlocks(rng.derive(path), lang, path, tokens * FILE_SIZE * CODE_CPT) });
    }
  }
  content(path) {
    return this.files.get(path).blocks.join('\n\n') + '\n';
  }
  readOutput(path) {
    return this.content(path).replace(/\n$/, '').split('\n').map((l, i) => `${String(i + 1).padStart(6)}\t${l}`).join('\n');
  }
  /** Replaces one block; returns the replace_in_file input. */
  edit(rng, path) {
    const f = this.files.get(path);
    const i = rng.int(1, f.blocks.length - 1);
    const old = f.blocks[i];
    const next = mutateBlock(rng, f.lang, old);
    f.blocks[i] = next;
    return { path, old_string: old, new_string: next };
  }
  /** Rewrites a few blocks (and maybe adds one); returns the new content. */
  rewrite(rng, path) {
    const f = this.files.get(path);
    for (let k = 0, n = rng.int(1, 3); k < n; k++) {
      const i = rng.int(1, f.blocks.length - 1);
      f.blocks[i] = mutateBlock(rng, f.lang, f.blocks[i]);
    }
    if (rng.chance(0.5)) f.blocks.splice(rng.int(1, f.blocks.length), 0, mutateBlock(rng, f.lang, f.blocks[f.blocks.length - 1]));
    return this.content(path);
  }
  /** An identifier defined in a file (a function or type name). */
  identifier(rng, path) {
    const names = [...this.content(path).matchAll(/(?:function|fn|def|class|interface|struct|const) (\w{6,})/g)].map((m) => m[1]);
    return names.length ? rng.pick(names) : 'reconcile';
  }
  grep(pattern, prefix) {
    const out = [];
    let files = 0;
    for (const [path] of this.files) {
      if (prefix && !path.startsWith(prefix)) continue;
      const lines = this.content(path).split('\n');
      let hit = false;
      lines.forEach((l, i) => {
        if (l.includes(pattern)) {
          out.push(`${path}:${i + 1}:${l}`);
          hit = true;
        }
      });
      if (hit) files++;
    }
    if (!out.length) return 'No matches found.';
    const shown = out.slice(0, 120);
    return `${shown.join('\n')}${out.length > shown.length ? `\n... ${out.length - shown.length} more matches` : ''}\n\n${out.length} matches in ${files} files`;
  }
}

function pickLogTokens(rng) {
  return rng.weighted([[rng.int(3000, 6000), 5], [rng.int(6000, 10_000), 3], [rng.int(10_000, 15_000), 1.5]]);
}

export function generateCoding({ scale = 1 } = {}) {
  const rng = new Rng(hashString('coding-agent'));
  const repo = new Repo(rng.derive('repo'));
  const clock = new Clock(rng.derive('clock'), { hour: 9, minute: 5 });
  const b = new SessionBuilder();
  const used = new Set();

  const T = Math.max(2, Math.round(12 * scale));
  const taskOrder = rng.shuffle(TASKS).slice(0, T);
  const H = Math.max(1, Math.round(3 * scale));
  const hugeTurns = new Map(Array.from({ length: H }, (_, k) => [Math.floor(((k + 0.5) * T) / H), [30_000, 44_000, 57_000][k % 3] + rng.int(-1500, 1500)]));

  // needles: alternating tool/user, planted in the first ~30 % of the turns, asked after ~60 %
  const N = Math.max(3, Math.min(8, Math.ceil(8 * scale)));
  const plantTurns = Math.max(1, Math.ceil(T * 0.3));
  const toolDefs = rng.shuffle(TOOL_NEEDLES);
  const userDefs = rng.shuffle(USER_NEEDLES);
  const needles = [];
  for (let k = 0; k < N; k++) {
    const kind = k % 2 === 0 ? 'tool' : 'user';
    const def = kind === 'tool' ? toolDefs[k >> 1] : userDefs[k >> 1];
    const value = kind === 'tool' ? needleValue(rng, used, 'code') : needleValue(rng, used, def.style, def.prefix);
    needles.push({ id: `n${k + 1}`, kind, def, value, turn: (k >> 1) % plantTurns, messageIndex: -1, neededAt: -1 });
  }
  const askFrom = Math.min(T - 1, Math.ceil(T * 0.62));
  const asksAfter = new Map(); // turn -> needles asked right after it
  rng.shuffle(needles).forEach((n, i) => {
    const t = askFrom + (i % (T - askFrom));
    if (!asksAfter.has(t)) asksAfter.set(t, []);
    asksAfter.get(t).push(n);
  });

  const readSoFar = new Set();
  const stack = () => {
    const lines = [];
    for (let i = 0, n = rng.int(4, 7); i < n; i++) lines.push(`    at ${rng.pick(['SettlementWorker', 'LedgerService', 'BillingService'])}.${rng.pick(CODE.verb)}${rng.pick(['Entries', 'Payout', 'Refund', 'Batch'])} (${PROJECT_ROOT}/${rng.pick(TS_SOURCES)}:${rng.int(20, 400)}:${rng.int(5, 40)})`);
    return lines.join('\n');
  };

  for (let t = 0; t < T; t++) {
    const task = taskOrder[t];
    const pending = needles.filter((n) => n.turn === t && n.kind === 'tool');
    // ---- user message
    let prompt = task.prompt(rng, { stack });
    const userNeedles = needles.filter((n) => n.turn === t && n.kind === 'user');
    for (const n of userNeedles) prompt = insertSentence(rng, prompt, n.def.text(n.value));
    if (t > 0 && rng.chance(0.4)) prompt = `${rng.pick(['Thanks, that looks good.', 'Great, merged that.', 'Nice.', 'OK, next thing.'])} ${prompt}`;
    const userIdx = b.user(prompt);
    for (const n of userNeedles) n.messageIndex = userIdx;

    const say = (s) => (rng.chance(0.65) ? s : undefined);
    const focus = task.files;
    const srcFocus = focus.filter((p) => !p.startsWith('test/'));
    const read = (p) => {
      readSoFar.add(p);
      return { toolName: 'open_file', input: { path: p }, output: repo.readOutput(p) };
    };
    const logOutput = (text, exit) => {
      let out = text;
      if (pending.length && out.length >= 3000 * LOG_CPT) {
        const n = pending.shift();
        out = insertMiddle(rng, out, n.def.line(n.value));
        n.plantPending = true;
      }
      return `${out}\n\n[exit code: ${exit}]`;
    };
    const testRun = (failures, { huge = 0, kind = task.test, targeted = false } = {}) => {
      if (huge && kind === 'pytest') kind = 'integration';
      if (targeted && (kind === 'integration' || kind === 'build')) kind = 'vitest';
      const tokens = huge || (targeted ? rng.int(700, 2600) : pickLogTokens(rng));
      const chars = tokens * LOG_CPT;
      let cmd;
      let text;
      if (huge && (kind === 'vitest' || kind === 'integration' || kind === 'tsc' || kind === 'lint')) {
        cmd = rng.pick(['npm run test:integration -- --reporter=verbose', 'npx vitest run --reporter=verbose 2>&1']);
        text = cmd.includes('integration') ? integrationLog(rng, { chars, clock }) : vitestLog(rng, { chars, clock, failures, verbose: true, files: TS_SOURCES });
      } else if (huge && kind === 'build') {
        cmd = 'DEBUG=vite:* npm run build 2>&1';
        text = bundleLog(rng, { chars, clock, files: TS_SOURCES });
      } else if (targeted) {
        const focusTest = focus.find((p) => p.startsWith('test/')) ?? 'test/services/billing.test.ts';
        if (kind === 'cargo') {
          cmd = `cargo test -p ledger-core ${focus[0].split('/').pop().replace('.rs', '')}`;
          text = cargoLog(rng, { chars: tokens * 3.8, clock, failures });
          text = text.slice(text.indexOf('    Finished'));
        } else if (kind === 'pytest') {
          cmd = `python -m pytest scripts -q -k ${rng.pick(['backfill', 'export', 'rollup'])}`;
          text = pytestLog(rng, { chars: tokens * 3, failures });
        } else {
          cmd = `npx vitest run ${focusTest}`;
          text = vitestLog(rng, { chars, clock, failures, files: [focusTest.replace(/^test\//, 'src/').replace('.test.ts', '.ts')] });
        }
      } else if (kind === 'cargo') {
        cmd = huge ? 'cargo build -vv -p ledger-core 2>&1 && cargo test -p ledger-core' : 'cargo test -p ledger-core 2>&1';
        text = huge ? cargoLog(rng, { chars: chars * 0.5, clock, test: false, verbose: true }) + '\n' + cargoLog(rng, { chars: chars * 0.5, clock, failures }) : cargoLog(rng, { chars, clock, failures });
      } else if (kind === 'pytest') {
        cmd = huge ? 'python -m pytest scripts -vv 2>&1' : 'python -m pytest scripts -q';
        text = huge ? integrationLog(rng, { chars, clock }) : pytestLog(rng, { chars: tokens * 5, failures });
      } else if (kind === 'integration') {
        cmd = 'npm run test:integration';
        text = integrationLog(rng, { chars, clock });
      } else if (kind === 'build') {
        cmd = 'npm run build';
        text = bundleLog(rng, { chars, clock, files: TS_SOURCES });
      } else {
        cmd = rng.pick(['npm test', 'npx vitest run', `npx vitest run ${focus.find((p) => p.startsWith('test/')) ?? 'test/'}`]);
        text = vitestLog(rng, { chars, clock, failures, verbose: rng.chance(0.2), files: TS_SOURCES });
      }
      return { toolName: 'run_command', input: { command: cmd, timeout_ms: 600_000 }, output: logOutput(text, failures ? 1 : 0) };
    };

    // ---- explore
    const ident = repo.identifier(rng, srcFocus[0] ?? focus[0]);
    b.step(say(`Let me find where \`${ident}\` is defined and used.`), [{ toolName: 'search_code', input: { pattern: ident, path: srcFocus[0]?.split('/')[0] ?? 'src' }, output: repo.grep(ident, srcFocus[0]?.split('/')[0]) }]);
    const first = focus.slice(0, rng.int(1, Math.min(3, focus.length)));
    b.step(say(`I'll read ${first.map((p) => `\`${p}\``).join(first.length > 1 ? ' and ' : '')} first.`), first.map(read));
    for (const p of focus.slice(first.length)) {
      if (rng.chance(0.8)) b.step(say(`Now \`${p}\`.`), [read(p)]);
    }
    // related files, often ones read in an earlier turn (unchanged re-reads)
    const earlier = [...readSoFar].filter((p) => !focus.includes(p));
    for (let k = 0, n = rng.int(0, 2); k < n; k++) {
      const p = earlier.length && rng.chance(0.7) ? rng.pick(earlier) : rng.pick(FILES)[0];
      b.step(say(`Checking \`${p}\` for how this is wired up.`), [read(p)]);
    }
    if (rng.chance(0.6)) {
      const id2 = rng.chance(0.5) ? repo.identifier(rng, rng.pick(focus)) : rng.pick(['idempotencyKey', 'amountCents', 'logger.warn', 'throw new', 'retryAt', 'tenantId', 'status ===', 'await tx.']);
      b.step(say(`Looking for other uses of \`${id2}\`.`), [{ toolName: 'search_code', input: { pattern: id2, glob: '*.ts' }, output: repo.grep(id2) }]);
    }
    if (rng.chance(0.3)) {
      b.step(say('Checking recent history of these files.'), [{ toolName: 'run_command', input: { command: `git log --oneline -${rng.int(5, 12)} -- ${focus.join(' ')}` }, output: Array.from({ length: rng.int(5, 12) }, () => `${rng.hex(7)} ${rng.pick(['fix', 'feat', 'chore', 'refactor', 'test'])}(${rng.pick(['billing', 'ledger', 'webhooks', 'settlement', 'deps', 'ci'])}): ${sentence(rng, TOPIC).toLowerCase().replace(/\.$/, '')}`).join('\n') + '\n\n[exit code: 0]' }]);
    }

    // ---- reproduce
    const failing = task.test === 'build' ? 0 : rng.int(1, 3);
    if (task.test === 'tsc') {
      b.step(say('Running the type checker to see the full list.'), [{ toolName: 'run_command', input: { command: 'npx tsc --noEmit' }, output: `${tscLog(rng, { errors: rng.int(12, 40), files: TS_SOURCES })}\n\n[exit code: 2]` }]);
    } else if (task.test === 'lint') {
      b.step(say('Running the linter.'), [{ toolName: 'run_command', input: { command: 'npx eslint src/services --max-warnings 0' }, output: `${eslintLog(rng, { files: TS_SOURCES.filter((p) => p.startsWith('src/services')), problems: rng.int(9, 30) })}\n\n[exit code: 1]` }]);
    }
    b.step(say('Running the tests to reproduce.'), [testRun(failing, { huge: hugeTurns.get(t) ?? 0 })]);
    if (rng.chance(0.35)) {
      const p = rng.pick(focus);
      b.step(say(`Re-reading \`${p}\` around the failing assertion.`), [read(p)]);
    }

    // ---- fix loop
    const iterations = rng.int(1, 3);
    for (let it = 0; it < iterations; it++) {
      const target = rng.pick(srcFocus.length ? srcFocus : focus);
      const last = it === iterations - 1;
      if (rng.chance(0.45)) {
        const input = repo.edit(rng, target);
        b.step(say(`Fixing \`${target}\`.`), [{ toolName: 'replace_in_file', input, output: `The file ${target} has been updated. Applied 1 edit.` }]);
      } else {
        const content = repo.rewrite(rng, target);
        b.step(say(`Rewriting \`${target}\` with the fix.`), [{ toolName: 'create_file', input: { path: target, content }, output: `Wrote ${content.length} bytes (${content.split('\n').length - 1} lines) to ${target}` }]);
      }
      const testFile = focus.find((p) => p.startsWith('test/'));
      if (testFile && it === 0 && rng.chance(0.6)) {
        const content = repo.rewrite(rng, testFile);
        b.step(say('Adding a regression test.'), [{ toolName: 'create_file', input: { path: testFile, content }, output: `Wrote ${content.length} bytes (${content.split('\n').length - 1} lines) to ${testFile}` }]);
      }
      if (rng.chance(0.35)) b.step(say(`Double-checking the result in \`${target}\`.`), [read(target)]);
      const calls = [testRun(last ? 0 : rng.int(1, 2), { kind: task.test === 'tsc' || task.test === 'lint' ? 'vitest' : task.test, targeted: !last || rng.chance(0.3) })];
      if (rng.chance(0.3) && task.test !== 'cargo') calls.push({ toolName: 'run_command', input: { command: 'npx tsc --noEmit' }, output: last ? '\n[exit code: 0]' : `${tscLog(rng, { errors: rng.int(1, 4), files: srcFocus.length ? srcFocus : TS_SOURCES })}\n\n[exit code: 2]` });
      b.step(say(last ? 'Running the suite again.' : 'Re-running the tests.'), calls);
    }
    // tool needles that did not find a big enough log yet
    while (pending.length) b.step(say('Running the integration suite as well.'), [testRun(0, { kind: 'integration' })]);

    // ---- verify
    if (rng.chance(0.5)) b.step(say('Checking the diff.'), [{ toolName: 'run_command', input: { command: 'git status --short && git diff --stat' }, output: `${focus.map((p) => ` M ${p}`).join('\n')}\n${focus.map((p) => ` ${p} | ${rng.int(4, 120)} ${'+'.repeat(rng.int(2, 30))}${'-'.repeat(rng.int(1, 12))}`).join('\n')}\n ${focus.length} files changed, ${rng.int(20, 300)} insertions(+), ${rng.int(5, 120)} deletions(-)\n\n[exit code: 0]` }]);

    // needles planted in this turn's logs
    for (const n of needles) {
      if (n.plantPending) {
        n.messageIndex = b.messages.findLastIndex((m) => m.role === 'tool' && m.content.some((p) => p.output.value.includes(n.value)));
        delete n.plantPending;
      }
    }

    // ---- final answer
    const changed = [...new Set(srcFocus.concat(focus.filter((p) => p.startsWith('test/'))))];
    b.answer([
      `## ${rng.pick(['Summary', 'What I changed', 'Done'])}`,
      '',
      paragraph(rng, TOPIC, 2, 4),
      '',
      '### Changes',
      '',
      ...changed.map((p) => `- \`${p}\`: ${sentence(rng, TOPIC)}`),
      '',
      '### Verification',
      '',
      '```',
      task.test === 'cargo' ? `test result: ok. ${rng.int(40, 200)} passed; 0 failed; 0 ignored` : task.test === 'pytest' ? `${rng.int(20, 140)} passed in ${rng.float(0.5, 30).toFixed(2)}s` : ` Test Files  ${rng.int(20, 45)} passed\n      Tests  ${rng.int(300, 700)} passed`,
      '```',
      '',
      rng.pick(['Nothing is committed yet.', 'I did not commit anything; the changes are in the working tree.', `One follow-up worth considering: ${sentence(rng, TOPIC).toLowerCase()}`]),
    ].join('\n'));

    // ---- needle questions
    for (const n of asksAfter.get(t) ?? []) {
      n.neededAt = b.user(`${rng.pick(['Quick question before the next task:', 'Before I forget —', 'Unrelated, but:', 'One thing:'])} ${n.def.question}`);
      b.answer(n.def.answer(n.value));
    }
  }

  return {
    name: 'coding-agent',
    description: 'A coding agent fixing bugs and adding features in a TypeScript/Rust/Python billing service over many user turns, with repeated file reads, whole-file writes and large test/build logs.',
    system: SYSTEM,
    tools: TOOLS,
    messages: b.messages,
    // the user's think time before each user message (lib.mjs THINK_TIME)
    thinkSeconds: thinkTimes('coding-agent', b.messages),
    needles: needles.map(({ id, value, messageIndex, kind, neededAt, def }) => ({ id, value, messageIndex, kind, neededAt, question: def.question })),
  };
}
