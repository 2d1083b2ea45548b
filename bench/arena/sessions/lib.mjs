// Shared helpers for the arena's recorded sessions: a seeded PRNG, word lists, generators for
// code, logs, web pages and prose, needle helpers, a session builder and the statistics the CLI
// and the tests use. Everything is deterministic: a seeded PRNG, a hand-made clock, no environment.

// ---------------------------------------------------------------------------------------------
// PRNG
// ---------------------------------------------------------------------------------------------

/** FNV-1a, 32 bits. */
export function hashString(str) {
  let h = 0x811c9dc5;
  for (let i = 0; i < str.length; i++) {
    h ^= str.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyz0123456789';
const HEX = '0123456789abcdef';
const UNAMBIGUOUS = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** mulberry32 with a few conveniences. */
export class Rng {
  constructor(seed) {
    this.seed = seed >>> 0;
    this.state = this.seed;
  }
  next() {
    let t = (this.state = (this.state + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  /** Integer in [min, max]. */
  int(min, max) {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  float(min, max) {
    return min + this.next() * (max - min);
  }
  chance(p) {
    return this.next() < p;
  }
  pick(arr) {
    return arr[Math.floor(this.next() * arr.length)];
  }
  /** `n` distinct items (fewer if the array is shorter). */
  pickN(arr, n) {
    return this.shuffle(arr).slice(0, Math.min(n, arr.length));
  }
  shuffle(arr) {
    const a = arr.slice();
    for (let i = a.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a;
  }
  /** `pairs` is `[[item, weight], ...]`. */
  weighted(pairs) {
    let total = 0;
    for (const [, w] of pairs) total += w;
    let r = this.next() * total;
    for (const [item, w] of pairs) {
      if ((r -= w) < 0) return item;
    }
    return pairs[pairs.length - 1][0];
  }
  chars(n, alphabet) {
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[Math.floor(this.next() * alphabet.length)];
    return s;
  }
  hex(n) {
    return this.chars(n, HEX);
  }
  alnum(n) {
    return this.chars(n, ALNUM);
  }
  /** A new generator keyed by `label` and this generator's seed (its stream is not consumed):
   * the same label always gives the same content (a file's text, a page at a URL). */
  derive(label) {
    return new Rng(hashString(label) ^ Math.imul(this.seed ^ 0x9e3779b9, 2654435761));
  }
}

// ---------------------------------------------------------------------------------------------
// User think time (issue 32): the wall-clock gap before each user message
// ---------------------------------------------------------------------------------------------

/**
 * The stated distribution of a generated session's user think time, the gap between the agent's
 * last step of a turn and the user's next message. Most gaps are reading and typing: log-normal,
 * median 30 s, σ 0.8 (90 % between 8 s and 112 s), capped at 4 minutes — all inside a prompt
 * cache's 5-minute lifetime. A stated share, 12 % of the gaps (rounded: at least one in a session
 * of six user turns or more), are time away — lunch, a meeting, the next morning: log-uniform
 * between 10 and 90 minutes (median 30), longer than the cache lifetime, which is what makes time
 * matter to the cost. The first user message has no gap (the session starts with it).
 */
export const THINK_TIME = { medianS: 30, sigma: 0.8, maxS: 240, awayShare: 0.12, awayMinS: 600, awayMaxS: 5400 };

/** One standard normal draw (Box–Muller) from `rng`. */
function normal(rng) {
  const u = 1 - rng.next(); // (0, 1]
  const v = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/**
 * `THINK_TIME` drawn for session `name`: one gap in seconds (0.1 s steps) per user message of
 * `messages`, in order, the first 0. Seeded by the session's name alone, on a stream of its own
 * (the session's messages are not touched): the same session always has the same gaps.
 */
export function thinkTimes(name, messages) {
  const T = THINK_TIME;
  const rng = new Rng(hashString(`${name}/think-time`));
  const turns = messages.filter((m) => m.role === 'user').length;
  const gaps = [0];
  for (let t = 1; t < turns; t++) gaps.push(Math.min(T.maxS, T.medianS * Math.exp(T.sigma * normal(rng))));
  const later = Array.from({ length: Math.max(0, turns - 1) }, (_, i) => i + 1);
  for (const t of rng.pickN(later, Math.round(T.awayShare * later.length))) gaps[t] = T.awayMinS * (T.awayMaxS / T.awayMinS) ** rng.next();
  return gaps.slice(0, turns).map((g) => Math.round(g * 10) / 10);
}

// ---------------------------------------------------------------------------------------------
// Clock (no Date: a fixed calendar day plus milliseconds, formatted by hand)
// ---------------------------------------------------------------------------------------------

export const pad = (n, w = 2) => String(n).padStart(w, '0');

export class Clock {
  constructor(rng, { year = 2025, month = 3, day = 11, hour = 9, minute = 0 } = {}) {
    this.rng = rng;
    this.year = year;
    this.month = month;
    this.day = day;
    this.ms = (hour * 3600 + minute * 60) * 1000 + rng.int(0, 59_999);
  }
  advance(minMs = 1, maxMs = 400) {
    this.ms += this.rng.int(minMs, maxMs);
    while (this.ms >= 86_400_000) {
      this.ms -= 86_400_000;
      this.day = (this.day % 28) + 1;
    }
    return this;
  }
  get parts() {
    const ms = this.ms;
    return { h: Math.floor(ms / 3_600_000), m: Math.floor(ms / 60_000) % 60, s: Math.floor(ms / 1000) % 60, ms: ms % 1000 };
  }
  date() {
    return `${this.year}-${pad(this.month)}-${pad(this.day)}`;
  }
  time() {
    const p = this.parts;
    return `${pad(p.h)}:${pad(p.m)}:${pad(p.s)}`;
  }
  timeMs() {
    return `${this.time()}.${pad(this.parts.ms, 3)}`;
  }
  iso() {
    return `${this.date()}T${this.timeMs()}Z`;
  }
  /** Milliseconds since the epoch, approximately (for pino-style logs). */
  epoch() {
    return 1_741_651_200_000 + (this.day - 11) * 86_400_000 + this.ms;
  }
}

// ---------------------------------------------------------------------------------------------
// Word lists
// ---------------------------------------------------------------------------------------------

export const W = {
  noun: [
    'system', 'request', 'service', 'queue', 'index', 'cluster', 'node', 'client', 'server', 'cache', 'table', 'query',
    'schema', 'record', 'batch', 'worker', 'pipeline', 'job', 'thread', 'process', 'buffer', 'connection', 'pool',
    'lock', 'transaction', 'replica', 'shard', 'partition', 'snapshot', 'backup', 'migration', 'deployment', 'release',
    'config', 'setting', 'flag', 'metric', 'dashboard', 'alert', 'incident', 'team', 'customer', 'budget', 'deadline',
    'design', 'proposal', 'document', 'draft', 'review', 'estimate', 'benchmark', 'workload', 'dataset', 'model',
    'feature', 'endpoint', 'payload', 'response', 'latency', 'throughput', 'memory', 'disk', 'network', 'region',
    'vendor', 'license', 'contract', 'invoice', 'plan', 'roadmap', 'milestone', 'sprint', 'ticket', 'bug', 'fix', 'patch',
    'library', 'framework', 'runtime', 'compiler', 'parser', 'module', 'package', 'dependency', 'version', 'interface',
  ],
  verb: [
    'reduce', 'improve', 'handle', 'support', 'require', 'expose', 'store', 'return', 'load', 'update', 'replace', 'remove',
    'add', 'track', 'measure', 'compare', 'process', 'split', 'merge', 'sort', 'filter', 'group', 'scale', 'limit',
    'retry', 'skip', 'keep', 'move', 'rewrite', 'simplify', 'document', 'test', 'deploy', 'configure', 'monitor', 'protect',
    'validate', 'serialize', 'allocate', 'release', 'schedule', 'trigger', 'export', 'import', 'reuse', 'tune', 'cover',
  ],
  gerund: [
    'rebuilding', 'loading', 'sharding', 'indexing', 'compacting', 'replicating', 'serializing', 'retrying', 'sorting',
    'batching', 'streaming', 'scanning', 'hashing', 'caching', 'parsing', 'migrating', 'deploying', 'testing', 'profiling',
    'rewriting', 'tuning', 'monitoring', 'merging', 'splitting', 'validating', 'compressing', 'encoding', 'querying',
  ],
  adj: [
    'simple', 'large', 'small', 'fast', 'slow', 'stable', 'expensive', 'cheap', 'reliable', 'flexible', 'strict', 'common',
    'rare', 'new', 'old', 'default', 'custom', 'shared', 'separate', 'internal', 'external', 'public', 'private', 'recent',
    'careful', 'obvious', 'subtle', 'practical', 'noisy', 'consistent', 'predictable', 'useful', 'important', 'minor',
  ],
  adv: [
    'quickly', 'slowly', 'carefully', 'usually', 'rarely', 'often', 'eventually', 'immediately', 'mostly', 'roughly',
    'consistently', 'surprisingly', 'significantly', 'slightly', 'explicitly', 'implicitly', 'safely', 'lazily', 'eagerly',
  ],
  comparative: ['faster', 'slower', 'better', 'worse', 'more reliably', 'more cheaply', 'more predictably', 'less often', 'more often'],
  cond: [
    'the working set fits in memory', 'writes dominate the workload', 'the cluster is under load', 'you run more than one replica',
    'the data is skewed', 'latency matters more than cost', 'the batch size is large', 'requests arrive in bursts',
    'the cache is cold', 'you need strong consistency', 'the team is small', 'the schema changes often',
    'most queries are filtered', 'the dataset grows every week', 'the network is unreliable', 'you are on a tight budget',
  ],
  metric: ['p99 latency', 'median latency', 'throughput', 'recall', 'memory usage', 'CPU time', 'index size', 'build time', 'error rate', 'cost per month', 'cold-start time', 'QPS'],
  unit: ['ms', 'seconds', 'GB', 'MB', 'requests per second', 'percent', 'dollars', 'hours'],
  org: [
    'Shopify', 'Stripe', 'Discord', 'Notion', 'Figma', 'Cloudflare', 'Datadog', 'GitLab', 'Atlassian', 'Spotify', 'Airbnb',
    'Uber', 'Netflix', 'Dropbox', 'Segment', 'Vercel', 'Fly.io', 'Supabase', 'PlanetScale', 'Grafana Labs',
  ],
  person: [
    'Maya', 'Jonas', 'Priya', 'Tomás', 'Aiko', 'Lena', 'Marcus', 'Sofia', 'Daniel', 'Amara', 'Felix', 'Nadia', 'Oscar',
    'Ingrid', 'Ravi', 'Chloe', 'Mateo', 'Hannah', 'Yusuf', 'Elena', 'Kenji', 'Zoe', 'Lucas', 'Fatima',
  ],
  surname: ['Okafor', 'Lindqvist', 'Moreau', 'Tanaka', 'Schmidt', 'Haddad', 'Nakamura', 'Rossi', 'Kowalski', 'Andersen', 'Silva', 'Brennan', 'Ivanova', 'Chen', 'Patel', 'García'],
  connective: ['However,', 'In practice,', 'That said,', 'On the other hand,', 'For example,', 'In our experience,', 'Notably,', 'As a result,', 'In short,', 'Still,', 'Meanwhile,', 'To be fair,'],
};

// ---------------------------------------------------------------------------------------------
// Prose
// ---------------------------------------------------------------------------------------------

const SENTENCES = [
  '{Conn} {T} tends to {verb} the {noun} {comparative} than {T2}, especially when {cond}.',
  'We measured {metric} across {n} runs and saw a median of {num} {unit}, with the worst run at {num2} {unit}.',
  'The main trade-off is between {noun} and {noun2}: {T} favors the former, while {T2} is built around the latter.',
  'According to the maintainers, the {noun} path was rewritten in {year} to {verb} {metric}.',
  'If you run more than {n} instances, you will want to {verb} the {noun} before {gerund} the {noun2}.',
  'This is not a new problem; engineers at {org} and {org2} have written about similar issues with {T}.',
  'Most of the cost comes from {gerund} the {noun}, not from the {noun2} itself.',
  'The documentation is vague here, but the source makes it clear that {T} keeps the {noun} in memory until {cond}.',
  '{Conn} the {adj} option is usually good enough, and it is much easier to {verb} later.',
  'A {adj} {noun} is easier to reason about than a {adj2} one, even if it is {pct}% slower on paper.',
  'In a production setting, {T} has to {verb} the {noun} without blocking the {noun2}.',
  'The benchmark used {n} million vectors and a {adj} {noun}, which is closer to real workloads than the usual toy setups.',
  'One reader pointed out that {T2} can also {verb} the {noun} if you enable the {adj} mode.',
  'We ended up {gerund} the {noun} twice a day, which kept {metric} within budget.',
  'The numbers above assume {cond}; if that is not your case, expect {metric} to be {pct}% higher.',
  'There are {n} knobs that matter: the {noun}, the {noun2}, and how {adv} you {verb} the {noun3}.',
  'It is tempting to {verb} everything at once, but {gerund} in small steps made failures much easier to debug.',
  '{T} exposes the {noun} through a {adj} API, so most teams never touch it directly.',
  'After the upgrade, {metric} dropped from {num2} to {num} {unit} on the same hardware.',
  'The {adj} part is not {gerund} the {noun}; it is deciding when to {verb} it.',
  'For a team of {n}, operating {T} is {adv} manageable, but it does require someone to own the {noun}.',
  'We would not recommend {T2} for this unless {cond}.',
  'The {noun} is stored next to the {noun2}, which means a {adj} {noun3} can {verb} both.',
  'Version {ver} introduced a {adj} {noun} that {adv} changes how {T} handles {gerund}.',
  'Several users reported that {gerund} the {noun} caused {metric} to spike for about {n} minutes.',
  'To make the comparison fair, every system got the same {noun}, the same {noun2}, and {n} GB of memory.',
  'In the end it comes down to whether you can afford to {verb} the {noun} when {cond}.',
  '{Conn} we saw no meaningful difference in {metric} once the {noun} was warm.',
  'The upstream issue has been open since {year}, and the suggested workaround is to {verb} the {noun} manually.',
  'Keep in mind that {T} and {T2} count {metric} differently, so the raw numbers are not directly comparable.',
];

const LIFE_SENTENCES = [
  '{Conn} {T} is usually worth it if {lcond}.',
  'Most people underestimate how long {T} takes; plan for about {n} {lunit} more than you think.',
  'A good rule of thumb is to {lverb} {T} before you {lverb} {T2}.',
  'If {lcond}, skip {T} for now and focus on {T2} instead.',
  'The main thing to watch is {T}: it is easy to overdo it early on.',
  'Many people find that {T} works better when {lcond}.',
  'Budget roughly {money} for {T}, and keep {pct}% aside for surprises.',
  'You can {lverb} {T} in about {n} {lunit}, which leaves time for {T2}.',
  'I would start with {T}, then move on to {T2} once {lcond}.',
  'Try not to {lverb} {T} and {T2} on the same day; it gets tiring quickly.',
  'It helps to write down what you expect from {T} before you start.',
  '{Conn} {T} and {T2} are closely related, so a change to one affects the other.',
  'A common mistake is to {lverb} {T} without checking {T2} first.',
  'If you only have {n} {lunit}, prioritize {T} over {T2}.',
  'Keep a simple log of {T} for a couple of weeks; patterns show up quickly.',
  'The difference between {T} and {T2} matters less than being consistent.',
  'Ask about {T} early, because it often takes {n} {lunit} to arrange.',
  'Consider whether {T} is really necessary, or whether {T2} covers the same need.',
  'When {lcond}, {T} is the part people usually regret not planning properly.',
  '{Conn} there is no single right answer here; it depends on how much you value {T} versus {T2}.',
];
const LIFE = {
  lverb: ['book', 'plan', 'prepare', 'schedule', 'compare', 'review', 'practice', 'track', 'adjust', 'reduce', 'increase', 'combine', 'confirm', 'test'],
  lcond: ['the weather is unpredictable', 'you are short on time', 'your budget is tight', 'you are traveling with kids', 'you are just getting started', 'the deadline is close', 'you have a flexible schedule', 'it is peak season', 'you want to keep things simple', 'you have done this before'],
  lunit: ['days', 'hours', 'weeks', 'minutes'],
};

function fillTemplate(rng, tpl, topic) {
  const terms = topic?.terms?.length ? topic.terms : W.noun;
  let first;
  return tpl.replace(/\{(\w+)\}/g, (_, k) => {
    switch (k) {
      case 'T': return (first = rng.pick(terms));
      case 'T2': {
        let t = rng.pick(terms);
        if (t === first && terms.length > 1) t = terms[(terms.indexOf(t) + 1) % terms.length];
        return t;
      }
      case 'noun': case 'noun2': case 'noun3': return rng.pick(W.noun);
      case 'verb': return rng.pick(W.verb);
      case 'gerund': return rng.pick(W.gerund);
      case 'adj': case 'adj2': return rng.pick(W.adj);
      case 'adv': return rng.pick(W.adv);
      case 'comparative': return rng.pick(W.comparative);
      case 'cond': return rng.pick(W.cond);
      case 'metric': return rng.pick(W.metric);
      case 'unit': return rng.pick(W.unit);
      case 'org': case 'org2': return rng.pick(W.org);
      case 'Conn': return rng.pick(W.connective);
      case 'n': return String(rng.pick([2, 3, 4, 5, 8, 10, 12, 16, 20, 32, 50, 64, 100]));
      case 'num': return String(rng.int(2, 480));
      case 'num2': return String(rng.int(500, 4000));
      case 'pct': return String(rng.int(3, 60));
      case 'year': return String(rng.int(2017, 2024));
      case 'ver': return `${rng.int(0, 4)}.${rng.int(0, 19)}`;
      case 'lverb': return rng.pick(LIFE.lverb);
      case 'lcond': return rng.pick(LIFE.lcond);
      case 'lunit': return rng.pick(LIFE.lunit);
      case 'money': return `€${rng.pick([40, 60, 80, 120, 150, 200, 350, 500, 800, 1200, 2500, 4000])}`;
      default: return k;
    }
  });
}

const CODE_SENTENCES = [
  'The root cause was that `{fn}` wrote the {dom} before checking its status, so a retry could apply it twice.',
  '`{fn}` now runs inside the same transaction as the {dom} update.',
  'I added a guard that skips {dom}s already marked as `{status}`.',
  'The {dom} lookup is now keyed by tenant and idempotency key instead of the {dom} id alone.',
  'Moved the {dom} rounding into `{fn}` so every caller gets the same behaviour.',
  'Added a regression test for a {dom} that is retried after a timeout.',
  'The previous implementation swallowed the `{err}` and returned an empty result.',
  'Callers of `{fn}` did not await the promise, so errors were lost; they now await it.',
  'Typed the {dom} payload explicitly instead of relying on an inferred `any`.',
  'No behaviour change for tenants without {dom}s.',
  'The change is backwards compatible: `{fn}` keeps its signature.',
  'Left a TODO about {dom} pagination; it is out of scope here.',
  'The test fixture for {dom}s was sharing state between tests, which hid the bug.',
  '`{fn}` had an off-by-one on the period boundary, so the last day was counted twice.',
];

export function sentence(rng, topic) {
  if (topic?.style === 'code') {
    return rng.pick(CODE_SENTENCES).replace(/\{(\w+)\}/g, (_, k) => ({
      fn: () => camel(rng.pick(CODE.verb), rng.pick(CODE.domain)), dom: () => rng.pick(CODE.domain), status: () => rng.pick(CODE.status), err: () => rng.pick(CODE.errors),
    })[k]());
  }
  const s = fillTemplate(rng, rng.pick(topic?.style === 'life' ? LIFE_SENTENCES : SENTENCES), topic);
  return s[0].toUpperCase() + s.slice(1);
}

export function paragraph(rng, topic, min = 3, max = 6) {
  const n = rng.int(min, max);
  const out = [];
  for (let i = 0; i < n; i++) out.push(sentence(rng, topic));
  return out.join(' ');
}

/** Paragraphs of prose, about `chars` characters in all. */
export function prose(rng, topic, chars) {
  const out = [];
  let len = 0;
  while (len < chars) {
    const p = paragraph(rng, topic);
    out.push(p);
    len += p.length + 2;
  }
  return out.join('\n\n');
}

export const cap = (s) => (s ? s[0].toUpperCase() + s.slice(1) : s);
export const camel = (...parts) => parts.map((p, i) => (i === 0 ? p : cap(p))).join('');
export const snake = (...parts) => parts.join('_');
export const pascal = (...parts) => parts.map(cap).join('');

// ---------------------------------------------------------------------------------------------
// Code: TypeScript, Rust, Python (and small SQL)
// ---------------------------------------------------------------------------------------------

export const CODE = {
  domain: [
    'invoice', 'customer', 'subscription', 'payment', 'ledger', 'account', 'refund', 'webhook', 'session', 'tenant', 'plan',
    'usage', 'meter', 'report', 'audit', 'event', 'job', 'quota', 'credit', 'discount', 'tax', 'payout', 'dispute', 'charge',
    'coupon', 'price', 'order', 'receipt', 'balance', 'transfer', 'statement', 'settlement', 'entry', 'period', 'batch',
  ],
  verb: [
    'get', 'load', 'fetch', 'create', 'update', 'apply', 'compute', 'validate', 'normalize', 'parse', 'serialize', 'sync',
    'reconcile', 'emit', 'handle', 'resolve', 'build', 'ensure', 'list', 'find', 'merge', 'split', 'schedule', 'retry',
    'record', 'publish', 'mark', 'flush', 'prune', 'hydrate', 'format', 'convert', 'calculate', 'enqueue', 'dispatch', 'refresh',
  ],
  suffix: ['Service', 'Repository', 'Handler', 'Config', 'Options', 'Result', 'Error', 'Schema', 'Client', 'Store', 'Context', 'Snapshot', 'Summary', 'Batch', 'Policy', 'Event', 'Request', 'Response', 'State', 'Entry'],
  prop: [
    'id', 'tenantId', 'customerId', 'amountCents', 'currency', 'status', 'createdAt', 'updatedAt', 'dueAt', 'metadata',
    'lineItems', 'total', 'subtotal', 'taxCents', 'discountCents', 'attempts', 'lastError', 'version', 'externalRef',
    'periodStart', 'periodEnd', 'isActive', 'region', 'idempotencyKey', 'retryAt', 'source', 'kind', 'items', 'cursor', 'limit',
  ],
  tsType: ['string', 'number', 'boolean', 'Date', 'string | null', 'number | undefined', 'Money', 'TenantId', 'Record<string, unknown>', 'readonly string[]', 'InvoiceStatus', 'Cents', 'bigint'],
  status: ['pending', 'open', 'paid', 'void', 'failed', 'settled', 'draft', 'scheduled', 'retrying', 'disputed', 'refunded'],
  logMsg: [
    'skipping already settled entry', 'retrying after transient failure', 'loaded tenant configuration', 'applied discount',
    'computed tax for line items', 'webhook delivered', 'webhook delivery failed', 'payout scheduled', 'cache miss',
    'cache hit', 'lock acquired', 'lock released', 'idempotency key reused', 'ledger entry written', 'period closed',
    'invoice finalized', 'refund issued', 'usage record ingested', 'dunning attempt queued', 'statement rendered',
  ],
  errors: ['NotFoundError', 'ValidationError', 'ConflictError', 'RateLimitError', 'LedgerMismatchError', 'TimeoutError', 'PaymentDeclinedError'],
};

const rsProp = (p) => p.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase());

function tsExpr(rng, vars) {
  const v = rng.pick(vars);
  const p = rng.pick(CODE.prop);
  return rng.weighted([
    [`${v}.${p}`, 4],
    [`${v}.${p} ?? ${rng.int(0, 100)}`, 2],
    [`Math.max(0, ${v}.${p} - ${rng.pick(vars)}.${rng.pick(CODE.prop)})`, 1],
    [`${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))}(${v})`, 3],
    [`${v}.${p}.map((x) => x.${rng.pick(CODE.prop)})`, 2],
    [`${v}.${p}.filter((x) => x.status === '${rng.pick(CODE.status)}')`, 2],
    [`\`${rng.pick(CODE.domain)}:\${${v}.${p}}\``, 1],
    [`new Date(${v}.${p})`, 1],
    [`{ ...${v}, ${p}: ${rng.pick(vars)}.${rng.pick(CODE.prop)} }`, 2],
    [`${rng.int(1, 5000)}`, 1],
    [`'${rng.pick(CODE.status)}'`, 1],
  ]);
}

function tsBlock(rng, vars, indent, depth, n) {
  const out = [];
  const ind = '  '.repeat(indent);
  for (let i = 0; i < n; i++) {
    const kind = rng.weighted([
      ['const', 5], ['await', 4], ['if', depth < 2 ? 3 : 0], ['for', depth < 2 ? 1.5 : 0], ['try', depth < 1 ? 1 : 0],
      ['log', 2], ['assign', 2],
    ]);
    if (kind === 'const') {
      const name = camel(rng.pick(CODE.domain), rng.pick(['s', 'Id', 'Total', 'Row', 'Rows', 'Entry', 'Result', 'Ctx', 'Key']));
      const rhs = rng.chance(0.5)
        ? `await ${rng.pick(['this.repo', 'this.client', 'ctx.db', 'deps.store', 'this.cache', 'tx'])}.${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))}(${rng.pick(vars)}.${rng.pick(CODE.prop)})`
        : tsExpr(rng, vars);
      out.push(`${ind}const ${name} = ${rhs};`);
      vars = vars.concat(name);
    } else if (kind === 'await') {
      out.push(`${ind}await ${rng.pick(['this.repo', 'this.queue', 'ctx.db', 'this.events', 'tx'])}.${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))}(${rng.pick(vars)}, { ${rng.pick(CODE.prop)}: ${tsExpr(rng, vars)} });`);
    } else if (kind === 'if') {
      const v = rng.pick(vars);
      const cond = rng.pick([`!${v}`, `${v}.status === '${rng.pick(CODE.status)}'`, `${v}.${rng.pick(CODE.prop)} > ${rng.int(0, 1000)}`, `${v}.${rng.pick(CODE.prop)} === undefined`, `${v}.items.length === 0`]);
      out.push(`${ind}if (${cond}) {`);
      if (rng.chance(0.4)) out.push(`${ind}  throw new ${rng.pick(CODE.errors)}(\`${rng.pick(CODE.domain)} \${${v}.id} ${rng.pick(['not found', 'is not ' + rng.pick(CODE.status), 'has a negative amount', 'belongs to another tenant', 'was already processed'])}\`);`);
      else out.push(...tsBlock(rng, vars, indent + 1, depth + 1, rng.int(1, 3)));
      if (rng.chance(0.25)) {
        out.push(`${ind}} else {`);
        out.push(...tsBlock(rng, vars, indent + 1, depth + 1, rng.int(1, 2)));
      }
      out.push(`${ind}}`);
    } else if (kind === 'for') {
      const item = rng.pick(['item', 'entry', 'row', 'line', 'event']);
      out.push(`${ind}for (const ${item} of ${rng.pick(vars)}.${rng.pick(['items', 'lineItems', 'entries', 'rows'])}) {`);
      out.push(...tsBlock(rng, vars.concat(item), indent + 1, depth + 1, rng.int(1, 3)));
      out.push(`${ind}}`);
    } else if (kind === 'try') {
      out.push(`${ind}try {`);
      out.push(...tsBlock(rng, vars, indent + 1, depth + 1, rng.int(1, 3)));
      out.push(`${ind}} catch (err) {`);
      out.push(`${ind}  logger.warn({ err, ${rng.pick(vars)} }, '${rng.pick(CODE.logMsg)}');`);
      out.push(`${ind}  throw err;`);
      out.push(`${ind}}`);
    } else if (kind === 'log') {
      out.push(`${ind}logger.${rng.pick(['debug', 'info', 'info', 'warn'])}({ ${rng.pickN(vars, 2).join(', ')} }, '${rng.pick(CODE.logMsg)}');`);
    } else {
      out.push(`${ind}${rng.pick(vars)}.${rng.pick(CODE.prop)} = ${tsExpr(rng, vars)};`);
    }
  }
  return out;
}

function tsFunction(rng, { method = false, name } = {}) {
  const fname = name ?? camel(rng.pick(CODE.verb), rng.pick(CODE.domain), rng.pick(['', '', 'Batch', 'ForTenant', 'Safely', 'Totals']));
  const params = rng.pickN(['ctx', 'input', 'opts', 'tenant', 'invoice', 'entry'], rng.int(1, 3));
  const sig = params.map((p) => `${p}: ${pascal(rng.pick(CODE.domain), rng.pick(CODE.suffix))}`).join(', ');
  const ret = rng.pick(['Promise<void>', `Promise<${pascal(rng.pick(CODE.domain), rng.pick(CODE.suffix))}>`, 'boolean', 'number', `Promise<Result<${pascal(rng.pick(CODE.domain))}>>`]);
  const isAsync = ret.startsWith('Promise');
  const lines = [];
  if (rng.chance(0.5)) {
    lines.push(`${method ? '  ' : ''}/**`);
    lines.push(`${method ? '  ' : ''} * ${sentence(rng, { terms: CODE.domain })}`);
    if (rng.chance(0.5)) lines.push(`${method ? '  ' : ''} * @param ${params[0]} ${rng.pick(['the request context', 'validated input', 'tenant-scoped options', 'the entry to settle'])}`);
    lines.push(`${method ? '  ' : ''} */`);
  }
  const head = method ? `  ${isAsync ? 'async ' : ''}${fname}(${sig}): ${ret} {` : `export ${isAsync ? 'async ' : ''}function ${fname}(${sig}): ${ret} {`;
  lines.push(head);
  lines.push(...tsBlock(rng, params, method ? 2 : 1, 0, rng.int(3, 9)));
  const ind = method ? '    ' : '  ';
  if (ret !== 'Promise<void>') lines.push(`${ind}return ${ret === 'boolean' ? `${rng.pick(params)}.status !== '${rng.pick(CODE.status)}'` : tsExpr(rng, params)};`);
  lines.push(method ? '  }' : '}');
  return lines.join('\n');
}

function tsInterface(rng) {
  const name = pascal(rng.pick(CODE.domain), rng.pick(CODE.suffix));
  const props = rng.pickN(CODE.prop, rng.int(4, 10));
  return [`export interface ${name} {`, ...props.map((p) => `  ${p}${rng.chance(0.2) ? '?' : ''}: ${rng.pick(CODE.tsType)};`), '}'].join('\n');
}

function tsClass(rng, target) {
  const name = pascal(rng.pick(CODE.domain), rng.pick(['Service', 'Repository', 'Worker', 'Client', 'Store']));
  const lines = [`export class ${name} {`, `  private readonly log = logger.child({ component: '${name}' });`, ''];
  lines.push(`  constructor(`, `    private readonly repo: ${pascal(rng.pick(CODE.domain))}Repository,`, `    private readonly queue: JobQueue,`, `    private readonly clock: Clock = systemClock,`, `  ) {}`, '');
  let len = lines.join('\n').length;
  while (len < target) {
    const m = tsFunction(rng, { method: true });
    lines.push(m, '');
    len += m.length;
  }
  lines.push('}');
  return lines.join('\n');
}

function tsHeader(rng, path) {
  const mods = ['../db/pool', '../lib/logger', '../lib/errors', '../lib/money', '../lib/retry', '../services/ledger', '../services/tax', '../types', './schema', '../config'];
  const lines = [];
  if (rng.chance(0.3)) lines.push(`// ${path} — ${sentence(rng, { terms: CODE.domain }).toLowerCase()}`);
  lines.push(`import { z } from 'zod';`);
  for (const m of rng.pickN(mods, rng.int(3, 7))) {
    const names = rng.pickN(CODE.domain, rng.int(1, 3)).map((d) => rng.chance(0.5) ? pascal(d, rng.pick(CODE.suffix)) : camel(rng.pick(CODE.verb), d));
    lines.push(`import ${rng.chance(0.2) ? 'type ' : ''}{ ${[...new Set(names)].join(', ')} } from '${m}';`);
  }
  if (!lines.some((l) => l.includes('lib/logger'))) lines.push(`import { logger } from '../lib/logger';`);
  return lines.join('\n');
}

function tsConsts(rng) {
  const out = [];
  for (let i = 0, n = rng.int(1, 4); i < n; i++) {
    out.push(`const ${rng.pick(['DEFAULT', 'MAX', 'MIN', 'RETRY'])}_${rng.pick(CODE.domain).toUpperCase()}_${rng.pick(['LIMIT', 'DELAY_MS', 'BATCH_SIZE', 'TTL_SECONDS', 'ATTEMPTS'])} = ${rng.pick([3, 25, 100, 250, 500, 1000, 5000, 30_000, 86_400])};`);
  }
  const schema = pascal(rng.pick(CODE.domain)) + 'Input';
  out.push('', `export const ${schema} = z.object({`, ...rng.pickN(CODE.prop, rng.int(3, 7)).map((p) => `  ${p}: z.${rng.pick(['string()', 'string().uuid()', 'number().int().nonnegative()', 'boolean()', `enum(['${rng.pick(CODE.status)}', '${rng.pick(CODE.status)}'])`, 'string().optional()'])},`), '});');
  return out.join('\n');
}

function tsTestBlock(rng) {
  const subject = camel(rng.pick(CODE.verb), rng.pick(CODE.domain));
  const lines = [`describe('${subject}', () => {`];
  for (let i = 0, n = rng.int(2, 5); i < n; i++) {
    lines.push(`  it('${rng.pick(['returns', 'rejects', 'handles', 'skips', 'retries', 'keeps', 'rounds'])} ${rng.pick(['a', 'the', 'an empty', 'a negative', 'a duplicate', 'an expired'])} ${rng.pick(CODE.domain)} ${rng.pick(['correctly', 'when the tenant is suspended', 'after a timeout', 'with a zero amount', 'in the same period', 'across currencies'])}', async () => {`);
    lines.push(`    const ${rng.pick(CODE.domain)} = make${pascal(rng.pick(CODE.domain))}({ amountCents: ${rng.int(-500, 250_000)}, currency: '${rng.pick(['EUR', 'USD', 'GBP', 'JPY'])}' });`);
    for (let j = 0, m = rng.int(1, 4); j < m; j++) {
      lines.push(rng.pick([
        `    const result = await ${subject}(ctx, ${rng.pick(CODE.domain)});`,
        `    expect(result.${rng.pick(CODE.prop)}).toBe(${rng.pick([`'${rng.pick(CODE.status)}'`, rng.int(0, 9999), 'true', 'false'])});`,
        `    expect(repo.${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))}).toHaveBeenCalledTimes(${rng.int(0, 3)});`,
        `    await expect(${subject}(ctx, input)).rejects.toThrow(${rng.pick(CODE.errors)});`,
        `    vi.advanceTimersByTime(${rng.pick([100, 250, 1000, 30_000])});`,
        `    expect(events.published).toEqual([expect.objectContaining({ kind: '${rng.pick(CODE.domain)}.${rng.pick(CODE.status)}' })]);`,
      ]));
    }
    lines.push('  });', '');
  }
  lines.push('});');
  return lines.join('\n');
}

function rsFunction(rng, method) {
  const ind = method ? '    ' : '';
  const name = snake(rng.pick(CODE.verb), rng.pick(CODE.domain));
  const ret = rng.pick(['Result<(), LedgerError>', `Result<${pascal(rng.pick(CODE.domain))}, LedgerError>`, 'Option<Cents>', 'bool', 'Cents']);
  const args = rng.pickN(['entry: &Entry', 'period: Period', 'amount: Cents', 'tenant: TenantId', 'opts: &Options'], rng.int(1, 3));
  const lines = [];
  if (rng.chance(0.6)) lines.push(`${ind}/// ${sentence(rng, { terms: CODE.domain })}`);
  lines.push(`${ind}pub fn ${name}(${method ? (rng.chance(0.5) ? '&mut self, ' : '&self, ') : ''}${args.join(', ')}) -> ${ret} {`);
  const vars = ['entry', 'period', 'amount', 'tenant', 'opts'];
  for (let i = 0, n = rng.int(3, 9); i < n; i++) {
    const v = rng.pick(vars);
    const p = rsProp(rng.pick(CODE.prop));
    lines.push(rng.weighted([
      [`${ind}    let ${snake(rng.pick(CODE.domain), rng.pick(['total', 'id', 'rows', 'sum', 'key']))} = ${v}.${p}.${rng.pick(['clone()', 'len()', 'iter().sum::<i64>()', 'unwrap_or_default()', 'checked_add(1).ok_or(LedgerError::Overflow)?'])};`, 4],
      [`${ind}    if ${v}.${p}.is_empty() {\n${ind}        return Err(LedgerError::${pascal(rng.pick(CODE.domain))}${rng.pick(['Missing', 'Invalid', 'Mismatch'])}(${v}.id));\n${ind}    }`, 2],
      [`${ind}    for row in ${v}.${rng.pick(['entries', 'lines', 'rows'])}.iter().filter(|r| r.${p} > 0) {\n${ind}        self.${snake(rng.pick(CODE.verb), rng.pick(CODE.domain))}(row)?;\n${ind}    }`, 2],
      [`${ind}    tracing::${rng.pick(['debug', 'info', 'warn'])}!(${rng.pick(vars)} = ?${v}.${p}, "${rng.pick(CODE.logMsg)}");`, 2],
      [`${ind}    match ${v}.${p} {\n${ind}        Status::${pascal(rng.pick(CODE.status))} => {}\n${ind}        Status::${pascal(rng.pick(CODE.status))} if ${v}.amount < Cents::ZERO => return Err(LedgerError::Negative),\n${ind}        other => tracing::warn!(?other, "unexpected status"),\n${ind}    }`, 1],
      [`${ind}    self.${snake(rng.pick(CODE.domain), 'cache')}.insert(${v}.id, ${v}.${p}.clone());`, 1],
    ]));
  }
  lines.push(`${ind}    ${rng.pick(['Ok(())', 'Ok(entry.clone().into())', 'Some(amount)', 'true', 'amount.saturating_sub(Cents::ONE)', 'Ok(Default::default())'])}`);
  lines.push(`${ind}}`);
  return lines.join('\n');
}

function rsStruct(rng) {
  const name = pascal(rng.pick(CODE.domain), rng.pick(CODE.suffix));
  const fields = rng.pickN(CODE.prop, rng.int(3, 8));
  return [`#[derive(Debug, Clone${rng.chance(0.5) ? ', PartialEq, Eq' : ''}${rng.chance(0.5) ? ', Serialize, Deserialize' : ''})]`, `pub struct ${name} {`, ...fields.map((f) => `    pub ${rsProp(f)}: ${rng.pick(['u64', 'i64', 'Cents', 'String', 'Option<String>', 'Vec<Entry>', 'TenantId', 'Period', 'Status', 'bool'])},`), '}'].join('\n');
}

function rsImpl(rng, target) {
  const name = pascal(rng.pick(CODE.domain), rng.pick(['Ledger', 'Book', 'Reconciler', 'Journal']));
  const lines = [`impl ${name} {`];
  let len = 0;
  while (len < target) {
    const f = rsFunction(rng, true);
    lines.push(f, '');
    len += f.length;
  }
  lines.push('}');
  return lines.join('\n');
}

function rsTests(rng) {
  const lines = ['#[cfg(test)]', 'mod tests {', '    use super::*;', ''];
  for (let i = 0, n = rng.int(2, 5); i < n; i++) {
    lines.push('    #[test]', `    fn ${snake(rng.pick(CODE.verb), rng.pick(CODE.domain), rng.pick(['works', 'rejects_negative', 'rounds_half_even', 'is_idempotent', 'keeps_order']))}() {`);
    lines.push(`        let mut book = Book::new(TenantId(${rng.int(1, 99)}));`, `        let entry = Entry::debit(Cents(${rng.int(1, 99_999)}), Period::month(2025, ${rng.int(1, 12)}));`);
    lines.push(`        ${rng.pick(['assert_eq!', 'assert_ne!'])}(book.${snake(rng.pick(CODE.verb), rng.pick(CODE.domain))}(&entry).unwrap(), Cents(${rng.int(0, 99_999)}));`, '    }', '');
  }
  lines.push('}');
  return lines.join('\n');
}

function pyFunction(rng, method) {
  const ind = method ? '    ' : '';
  const name = snake(rng.pick(CODE.verb), rng.pick(CODE.domain));
  const args = rng.pickN(['tenant_id: str', 'since: datetime', 'rows: list[dict]', 'dry_run: bool = False', 'batch_size: int = 500', 'conn: Connection'], rng.int(1, 3));
  const lines = [`${ind}${rng.chance(0.3) ? 'async ' : ''}def ${name}(${method ? 'self, ' : ''}${args.join(', ')}) -> ${rng.pick(['None', 'int', 'list[dict]', 'dict[str, int]', 'Iterator[Row]'])}:`];
  if (rng.chance(0.6)) lines.push(`${ind}    """${sentence(rng, { terms: CODE.domain })}"""`);
  for (let i = 0, n = rng.int(3, 8); i < n; i++) {
    const d = rng.pick(CODE.domain);
    lines.push(rng.weighted([
      [`${ind}    ${d}_rows = conn.execute(${JSON.stringify(`SELECT id, ${rsProp(rng.pick(CODE.prop))}, ${rsProp(rng.pick(CODE.prop))} FROM ${d}s WHERE tenant_id = %s`)}, (tenant_id,)).fetchall()`, 3],
      [`${ind}    if not ${d}_rows:\n${ind}        log.info("no ${d}s to process for %s", tenant_id)\n${ind}        return ${rng.pick(['None', '0', '[]', '{}'])}`, 2],
      [`${ind}    for row in rows:\n${ind}        totals[row["${rsProp(rng.pick(CODE.prop))}"]] += row.get("amount_cents", 0)`, 2],
      [`${ind}    log.${rng.pick(['debug', 'info', 'warning'])}("${rng.pick(CODE.logMsg)}: %s", ${d}_id)`, 2],
      [`${ind}    ${d}_id = ${rng.pick(['uuid4().hex', 'row["id"]', `f"${d}_{tenant_id}"`])}`, 2],
    ]));
  }
  lines.push(`${ind}    return ${rng.pick(['None', 'len(rows)', 'dict(totals)', 'rows'])}`);
  return lines.join('\n');
}

/**
 * A source file as a list of top-level blocks (header first), about `chars` characters long.
 * `lang` is 'ts', 'test-ts', 'rs' or 'py'.
 */
export function codeBlocks(rng, lang, path, chars) {
  const blocks = [];
  let len = 0;
  const push = (b) => {
    blocks.push(b);
    len += b.length + 2;
  };
  if (lang === 'ts' || lang === 'test-ts') {
    push(lang === 'test-ts'
      ? `import { describe, it, expect, vi, beforeEach } from 'vitest';\nimport { makeCtx, make${pascal(rng.pick(CODE.domain))}, make${pascal(rng.pick(CODE.domain))} } from '../helpers';\nimport { ${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))} } from '../../${path.replace(/^test\//, 'src/').replace('.test.ts', '')}';`
      : tsHeader(rng, path));
    if (lang === 'ts') {
      push(tsConsts(rng));
      for (let i = 0, n = rng.int(1, 3); i < n; i++) push(tsInterface(rng));
    } else {
      push(`let ctx: TestContext;\nlet repo: MockRepo;\n\nbeforeEach(() => {\n  vi.useFakeTimers();\n  ({ ctx, repo } = makeCtx({ tenantId: 't_${rng.int(10, 99)}' }));\n});`);
    }
    while (len < chars) {
      if (lang === 'test-ts') push(tsTestBlock(rng));
      else if (rng.chance(0.2) && chars - len > 2500) push(tsClass(rng, rng.int(1500, 3500)));
      else push(tsFunction(rng));
    }
  } else if (lang === 'rs') {
    push(`use std::collections::{BTreeMap, HashMap};\n\nuse serde::{Deserialize, Serialize};\n\nuse crate::money::Cents;\nuse crate::{Entry, LedgerError, Period, Status, TenantId};`);
    for (let i = 0, n = rng.int(1, 3); i < n; i++) push(rsStruct(rng));
    while (len < chars - 700) {
      if (rng.chance(0.35)) push(rsImpl(rng, rng.int(1200, 3000)));
      else push(rsFunction(rng, false));
    }
    push(rsTests(rng));
  } else {
    push(`from __future__ import annotations\n\nimport argparse\nimport logging\nfrom collections import defaultdict\nfrom datetime import datetime, timedelta\nfrom uuid import uuid4\n\nfrom psycopg import Connection\n\nlog = logging.getLogger(__name__)\ntotals: dict[str, int] = defaultdict(int)`);
    while (len < chars) push(pyFunction(rng, false));
    push(`if __name__ == "__main__":\n    parser = argparse.ArgumentParser()\n    parser.add_argument("--tenant", required=True)\n    parser.add_argument("--dry-run", action="store_true")\n    args = parser.parse_args()\n    main(args.tenant, dry_run=args.dry_run)`);
  }
  return blocks;
}

/** A changed version of one top-level block (same language), as an edit would make it. */
export function mutateBlock(rng, lang, block) {
  if (lang === 'ts') {
    // keep the first line (signature), regenerate the body, add a guard
    const fresh = tsFunction(rng);
    const head = block.split('\n').find((l) => /function |^\s+(async )?\w+\(/.test(l));
    if (!head || !head.trim().endsWith('{')) return fresh;
    const body = fresh.split('\n');
    const start = body.findIndex((l) => l.includes('function '));
    return [head, `  // ${rng.pick(['guard against', 'handle', 'fix for', 'see'])} ${rng.pick(CODE.domain)} ${rng.pick(['double counting', 'negative amounts', 'retries after timeout', 'currency mismatch', 'stale cache'])}`, ...body.slice(start + 1)].join('\n');
  }
  if (lang === 'test-ts') return tsTestBlock(rng);
  if (lang === 'rs') return rng.chance(0.5) ? rsFunction(rng, false) : rsImpl(rng, rng.int(800, 1800));
  return pyFunction(rng, false);
}

export function sqlSnippet(rng) {
  const t = rng.pick(['orders', 'customers', 'events', 'sessions', 'invoices', 'subscriptions', 'page_views']);
  const cols = rng.pickN(['id', 'customer_id', 'created_at', 'status', 'amount', 'country', 'plan', 'source', 'user_id'], 3);
  return [
    `SELECT ${cols[0]},`,
    `       date_trunc('${rng.pick(['day', 'week', 'month'])}', created_at) AS bucket,`,
    `       count(*) AS n,`,
    `       sum(amount) FILTER (WHERE status = '${rng.pick(CODE.status)}') AS ${rng.pick(['paid_total', 'revenue', 'settled'])}`,
    `FROM ${t}`,
    `WHERE created_at >= now() - interval '${rng.int(7, 90)} days'`,
    rng.chance(0.5) ? `  AND ${cols[1]} IS NOT NULL` : `  AND ${cols[2]} <> 'test'`,
    `GROUP BY 1, 2`,
    `ORDER BY bucket DESC, n DESC`,
    `LIMIT ${rng.pick([20, 50, 100, 500])};`,
  ].join('\n');
}

/** A short code snippet for chat answers. */
export function snippet(rng, lang) {
  if (lang === 'sql') return sqlSnippet(rng);
  if (lang === 'py' || lang === 'python') return pyFunction(rng, false);
  if (lang === 'rs') return rsFunction(rng, false);
  if (lang === 'bash') {
    return rng.pickN([
      'set -euo pipefail', `docker compose up -d ${rng.pick(['db', 'redis', 'api'])}`, 'git fetch origin && git rebase origin/main',
      `rsync -avz --delete ./dist/ deploy@${rng.pick(['web1', 'web2', 'nas'])}.local:/srv/app/`, 'npm ci && npm run build',
      `ssh -L 5432:localhost:5432 ${rng.pick(['bastion', 'jump'])}.internal`, `find . -name '*.log' -mtime +${rng.int(3, 30)} -delete`,
      `curl -sS -H "Authorization: Bearer $TOKEN" https://api.example.com/v1/${rng.pick(CODE.domain)}s | jq '.data[] | .id'`,
    ], rng.int(3, 6)).join('\n');
  }
  return tsFunction(rng);
}

// ---------------------------------------------------------------------------------------------
// Logs
// ---------------------------------------------------------------------------------------------

export const PROJECT_ROOT = '/home/dev/ledgerline';

function shortId(rng, prefix) {
  return `${prefix}_${rng.alnum(rng.int(8, 12))}`;
}

/** One application log line (pino-pretty style), near-duplicates by design. */
export function appLogLine(rng, clock) {
  clock.advance(1, 120);
  const level = rng.weighted([['INFO', 10], ['DEBUG', 6], ['WARN', 1.5], ['ERROR', 0.4]]);
  const comp = rng.pick(['billing', 'ledger', 'webhooks', 'settlement', 'http', 'dunning', 'tax', 'usage']);
  const msg = rng.pick(CODE.logMsg);
  const extra = rng.weighted([
    [`{"tenant":"t_${rng.int(10, 99)}","invoice":"${shortId(rng, 'inv')}","attempt":${rng.int(1, 4)}}`, 3],
    [`{"reqId":"req-${rng.hex(6)}","method":"${rng.pick(['GET', 'POST', 'PATCH'])}","url":"/v1/${rng.pick(CODE.domain)}s${rng.chance(0.5) ? '/' + shortId(rng, rng.pick(['inv', 'cus', 'sub'])) : ''}","statusCode":${rng.weighted([[200, 8], [201, 2], [404, 0.5], [409, 0.3], [500, 0.2]])},"responseTime":${rng.float(0.4, 180).toFixed(2)}}`, 3],
    [`{"entry":"${shortId(rng, 'le')}","amountCents":${rng.int(-50_000, 500_000)},"currency":"${rng.pick(['EUR', 'USD', 'GBP'])}"}`, 2],
    ['', 2],
  ]);
  return `[${clock.timeMs()}] ${level.padEnd(5)} (${comp}/${rng.pick([4412, 4413, 4419])}): ${msg}${extra ? ' ' + extra : ''}`;
}

function jsStack(rng, fnHint) {
  const frames = [];
  const files = ['src/services/billing.ts', 'src/services/ledger.ts', 'src/workers/settlement.ts', 'src/routes/invoices.ts', 'src/lib/retry.ts', 'src/db/pool.ts'];
  frames.push(`    at ${fnHint ?? pascal(rng.pick(CODE.domain), 'Service')}.${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))} (${PROJECT_ROOT}/${rng.pick(files)}:${rng.int(20, 400)}:${rng.int(5, 40)})`);
  for (let i = 0, n = rng.int(2, 6); i < n; i++) {
    frames.push(rng.weighted([
      [`    at ${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))} (${PROJECT_ROOT}/${rng.pick(files)}:${rng.int(20, 400)}:${rng.int(5, 40)})`, 3],
      ['    at processTicksAndRejections (node:internal/process/task_queues:95:5)', 1],
      [`    at withRetry (${PROJECT_ROOT}/src/lib/retry.ts:${rng.int(30, 90)}:${rng.int(10, 30)})`, 1],
      [`    at file://${PROJECT_ROOT}/node_modules/@vitest/runner/dist/index.js:${rng.int(100, 900)}:${rng.int(5, 30)}`, 1],
    ]));
  }
  return frames.join('\n');
}

/**
 * A vitest run. `chars` sizes it; `failures` failing tests; `verbose` lists every test and the
 * stdout the code under test printed.
 */
export function vitestLog(rng, { chars, clock, failures = 0, verbose = false, files }) {
  const out = [` RUN  v1.6.0 ${PROJECT_ROOT}`, ''];
  const fail = [];
  let len = 0;
  let nFiles = 0;
  let nTests = 0;
  const budget = chars - 900 * failures - 400;
  let fi = 0;
  while (len < budget || nFiles < Math.max(1, failures)) {
    const file = files[fi++ % files.length].replace(/^src\//, 'test/').replace(/\.ts$/, `${fi > files.length ? '.' + rng.pick(['edge', 'int', 'props', 'regress']) : ''}.test.ts`);
    const n = rng.int(4, 28);
    nFiles++;
    nTests += n;
    const failedHere = fail.length < failures && (rng.chance(0.35) || len >= budget) ? 1 : 0;
    const lines = [];
    if (verbose) {
      lines.push(` ${failedHere ? '❯' : '✓'} ${file} (${n} tests${failedHere ? ' | 1 failed' : ''}) ${rng.int(12, 2400)}ms`);
      for (let i = 0; i < n; i++) {
        const name = `${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))} > ${rng.pick(['returns', 'rejects', 'handles', 'skips', 'retries', 'keeps'])} ${rng.pick(CODE.domain)} ${rng.pick(['correctly', 'when suspended', 'after timeout', 'with zero amount', 'in same period', 'across currencies'])}`;
        if (rng.chance(0.25)) {
          lines.push(`stdout | ${file} > ${name}`);
          for (let k = 0, m = rng.int(2, 14); k < m; k++) lines.push(appLogLine(rng, clock));
          lines.push('');
        }
        lines.push(`   ${failedHere && i === n - 1 ? '×' : '✓'} ${name} ${rng.int(0, 90)}ms`);
      }
    } else {
      lines.push(` ${failedHere ? '❯' : '✓'} ${file} (${n} tests${failedHere ? ' | 1 failed' : ''}) ${rng.int(12, 2400)}ms`);
      if (rng.chance(0.3)) {
        lines.push(`stderr | ${file} > ${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))}`);
        for (let k = 0, m = rng.int(1, 6); k < m; k++) lines.push(appLogLine(rng, clock));
        lines.push('');
      }
    }
    if (failedHere) fail.push(file);
    out.push(...lines);
    len += lines.reduce((a, l) => a + l.length + 1, 0);
  }
  while (fail.length < failures) fail.push(rng.pick(files).replace(/^src\//, 'test/').replace(/\.ts$/, '.test.ts'));
  if (fail.length) {
    out.push('', `⎯⎯⎯⎯⎯⎯⎯ Failed Tests ${fail.length} ⎯⎯⎯⎯⎯⎯⎯`, '');
    for (const f of fail) {
      const expected = rng.int(0, 90_000);
      const received = expected + rng.pick([-1, 1, 100, -100, 2 * expected + 1]);
      out.push(` FAIL  ${f} > ${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))} > ${rng.pick(['settles', 'refunds', 'totals', 'rounds'])} ${rng.pick(CODE.domain)} ${rng.pick(['once', 'after retry', 'per period', 'in cents'])}`);
      out.push(`AssertionError: expected ${received} to be ${expected} // Object.is equality`, '', '- Expected', '+ Received', '', `- ${expected}`, `+ ${received}`, '');
      const line = rng.int(20, 300);
      out.push(` ❯ ${f}:${line}:${rng.int(10, 40)}`);
      out.push(`    ${line - 2}|     const result = await ${camel(rng.pick(CODE.verb), rng.pick(CODE.domain))}(ctx, entry);`);
      out.push(`    ${line - 1}|`);
      out.push(`    ${line}|     expect(result.${rng.pick(CODE.prop)}).toBe(${expected});`);
      out.push(`       |                             ^`);
      out.push(`    ${line + 1}|   });`);
      out.push('', jsStack(rng), '', `⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[${fail.indexOf(f) + 1}/${fail.length}]⎯`, '');
    }
  }
  clock.advance(2000, 30_000);
  out.push('', ` Test Files  ${fail.length ? `${fail.length} failed | ` : ''}${nFiles - fail.length} passed (${nFiles})`);
  out.push(`      Tests  ${fail.length ? `${fail.length} failed | ` : ''}${nTests - fail.length} passed (${nTests})`);
  out.push(`   Start at  ${clock.time()}`, `   Duration  ${rng.float(4, 95).toFixed(2)}s (transform ${rng.int(300, 2000)}ms, setup ${rng.int(50, 900)}ms, collect ${rng.int(1000, 9000)}ms, tests ${rng.int(2000, 60_000)}ms)`);
  if (fail.length) out.push('', ' FAIL  Tests failed. Watching for file changes...'.replace(' Watching for file changes...', ''));
  return out.join('\n');
}

/** An integration test run: the server's JSON logs interleaved with test lines. */
export function integrationLog(rng, { chars, clock }) {
  const out = [`> ledgerline@2.14.0 test:integration`, `> vitest run --config vitest.integration.ts --reporter=verbose`, '', ` RUN  v1.6.0 ${PROJECT_ROOT}`, ''];
  out.push(`[setup] starting postgres container ledgerline-it-pg (image postgres:16.2-alpine)`, `[setup] applying ${rng.int(40, 90)} migrations`, `[setup] seeding ${rng.int(3, 12)} tenants`, '');
  let len = out.join('\n').length;
  while (len < chars - 300) {
    const l = rng.chance(0.12)
      ? `   ✓ integration > ${rng.pick(['invoices', 'webhooks', 'settlement', 'refunds', 'usage'])} > ${rng.pick(['creates', 'settles', 'retries', 'rejects', 'lists'])} ${rng.pick(CODE.domain)} ${rng.pick(['end to end', 'with idempotency key', 'under concurrent writes', 'for suspended tenant'])} ${rng.int(20, 900)}ms`
      : `{"level":${rng.weighted([[30, 10], [20, 5], [40, 1], [50, 0.3]])},"time":${clock.advance(1, 60).epoch()},"pid":${rng.pick([5120, 5121])},"hostname":"ci-runner-${rng.int(1, 9)}","reqId":"req-${rng.hex(5)}","component":"${rng.pick(['http', 'billing', 'ledger', 'webhooks'])}","msg":"${rng.pick(CODE.logMsg)}"${rng.chance(0.6) ? `,"tenant":"t_${rng.int(10, 99)}"` : ''}${rng.chance(0.5) ? `,"responseTime":${rng.float(0.5, 250).toFixed(1)}` : ''}}`;
    out.push(l);
    len += l.length + 1;
  }
  out.push('', ` Test Files  ${rng.int(8, 20)} passed`, `      Tests  ${rng.int(80, 300)} passed`, `   Duration  ${rng.float(60, 400).toFixed(2)}s`);
  return out.join('\n');
}

const CRATES = [
  'proc-macro2 v1.0.86', 'unicode-ident v1.0.12', 'quote v1.0.36', 'syn v2.0.72', 'serde v1.0.204', 'serde_derive v1.0.204',
  'serde_json v1.0.120', 'itoa v1.0.11', 'ryu v1.0.18', 'memchr v2.7.4', 'libc v0.2.155', 'cfg-if v1.0.0', 'once_cell v1.19.0',
  'tracing v0.1.40', 'tracing-core v0.1.32', 'tracing-attributes v0.1.27', 'pin-project-lite v0.2.14', 'thiserror v1.0.63',
  'thiserror-impl v1.0.63', 'rust_decimal v1.35.0', 'arrayvec v0.7.4', 'num-traits v0.2.19', 'autocfg v1.3.0', 'smallvec v1.13.2',
  'hashbrown v0.14.5', 'indexmap v2.2.6', 'equivalent v1.0.1', 'chrono v0.4.38', 'iana-time-zone v0.1.60', 'uuid v1.10.0',
  'getrandom v0.2.15', 'rand_core v0.6.4', 'rand v0.8.5', 'ppv-lite86 v0.2.17', 'rand_chacha v0.3.1', 'bytes v1.6.1',
  'wasm-bindgen v0.2.92', 'wasm-bindgen-backend v0.2.92', 'wasm-bindgen-macro v0.2.92', 'js-sys v0.3.69', 'log v0.4.22',
  'bumpalo v3.16.0', 'anyhow v1.0.86', 'proptest v1.5.0', 'regex-syntax v0.8.4', 'bitflags v2.6.0', 'tempfile v3.10.1',
];

/** `cargo build`/`cargo test` output. */
export function cargoLog(rng, { chars, clock, test = true, failures = 0, verbose = false }) {
  const out = [];
  for (const c of CRATES) {
    out.push(`   Compiling ${c}`);
    if (verbose) {
      const [name, ver] = c.split(' v');
      out.push(`     Running \`/home/dev/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/rustc --crate-name ${name.replace(/-/g, '_')} --edition=2021 /home/dev/.cargo/registry/src/index.crates.io-6f17d22bba15001f/${name}-${ver}/src/lib.rs --error-format=json --json=diagnostic-rendered-ansi,artifacts,future-incompat --crate-type lib --emit=dep-info,metadata,link -C embed-bitcode=no -C debuginfo=2 -C metadata=${rng.hex(16)} -C extra-filename=-${rng.hex(16)} --out-dir ${PROJECT_ROOT}/target/debug/deps -L dependency=${PROJECT_ROOT}/target/debug/deps --cap-lints allow\``);
    }
  }
  out.push('   Compiling ledger-core v0.9.3 (/home/dev/ledgerline/crates/ledger-core)');
  let len = out.join('\n').length;
  const mods = ['ledger', 'money', 'reconcile', 'period', 'journal'];
  // warnings
  for (let i = 0, n = rng.int(1, 4); i < n; i++) {
    const file = `crates/ledger-core/src/${rng.pick(mods)}.rs`;
    const line = rng.int(10, 400);
    const v = snake(rng.pick(CODE.domain), rng.pick(['total', 'id', 'rows']));
    out.push(`warning: unused variable: \`${v}\``, `  --> ${file}:${line}:${rng.int(9, 20)}`, '   |', `${String(line).padStart(3)} |         let ${v} = entry.amount.clone();`, `   |             ${'^'.repeat(v.length)} help: if this is intentional, prefix it with an underscore: \`_${v}\``, '   |', '   = note: `#[warn(unused_variables)]` on by default', '');
  }
  clock.advance(5000, 60_000);
  out.push(`    Finished \`${test ? 'test' : 'dev'}\` profile [unoptimized + debuginfo] target(s) in ${rng.float(3, 90).toFixed(2)}s`);
  if (test) {
    out.push(`     Running unittests src/lib.rs (target/debug/deps/ledger_core-${rng.hex(16)})`, '');
    const names = [];
    len = out.join('\n').length;
    while (len < chars - 1500 * failures - 300 || names.length < failures + 3) {
      const name = `${rng.pick(mods)}::tests::${snake(rng.pick(CODE.verb), rng.pick(CODE.domain), rng.pick(['works', 'rejects_negative', 'rounds_half_even', 'is_idempotent', 'keeps_order', 'roundtrip', 'prop']))}`;
      names.push(name);
      const l = `test ${name} ... ${names.length <= failures ? 'FAILED' : 'ok'}`;
      out.push(l);
      len += l.length + 1;
      if (rng.chance(0.05)) {
        const p = `proptest: Saving this and future failures in ${PROJECT_ROOT}/crates/ledger-core/proptest-regressions/${rng.pick(mods)}.txt`;
        out.push(p);
        len += p.length;
      }
    }
    if (failures) {
      out.push('', 'failures:', '');
      for (let i = 0; i < failures; i++) {
        out.push(`---- ${names[i]} stdout ----`);
        out.push(`thread '${names[i]}' panicked at crates/ledger-core/src/${names[i].split('::')[0]}.rs:${rng.int(30, 500)}:${rng.int(5, 30)}:`);
        const a = rng.int(0, 99_999);
        out.push('assertion `left == right` failed', `  left: Cents(${a})`, ` right: Cents(${a + rng.pick([1, -1, 100])})`);
        out.push('stack backtrace:');
        for (let k = 0, m = rng.int(8, 16); k < m; k++) out.push(`  ${String(k).padStart(2)}: ${rng.pick(['core::panicking::panic_fmt', 'core::panicking::assert_failed_inner', `ledger_core::${rng.pick(mods)}::${snake(rng.pick(CODE.verb), rng.pick(CODE.domain))}`, 'core::ops::function::FnOnce::call_once', 'std::rt::lang_start_internal', 'test::run_test_in_process'])}\n             at ${rng.pick(['/rustc/3f5fd8dd41153bc5fdca9427e9e05be2c767ba23/library/core/src/panicking.rs', `./crates/ledger-core/src/${rng.pick(mods)}.rs`])}:${rng.int(10, 600)}:${rng.int(5, 30)}`);
        out.push('note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.', '');
      }
      out.push('failures:', ...names.slice(0, failures).map((n) => `    ${n}`), '');
    }
    out.push(`test result: ${failures ? 'FAILED' : 'ok'}. ${names.length - failures} passed; ${failures} failed; ${rng.int(0, 3)} ignored; 0 measured; 0 filtered out; finished in ${rng.float(0.2, 20).toFixed(2)}s`);
    if (failures) out.push('', "error: test failed, to rerun pass `-p ledger-core --lib`");
  } else {
    // a build: pad with a verbose build script dump
    len = out.join('\n').length;
    while (len < chars) {
      const l = `[ledger-core ${rng.pick(['0.9.3', '0.9.3'])}] cargo:rerun-if-changed=${rng.pick(['src/schema.sql', 'build.rs', 'src/money.rs', 'migrations'])}${rng.chance(0.5) ? `/${String(rng.int(1, 120)).padStart(4, '0')}_${snake(rng.pick(CODE.verb), rng.pick(CODE.domain))}.sql` : ''}`;
      out.push(l);
      len += l.length + 1;
    }
  }
  return out.join('\n');
}

/** `tsc --noEmit` output. */
export function tscLog(rng, { errors, files }) {
  const out = [];
  for (let i = 0; i < errors; i++) {
    const f = rng.pick(files);
    const line = rng.int(5, 400);
    const col = rng.int(3, 40);
    const err = rng.pick([
      `error TS2322: Type '${rng.pick(CODE.tsType)}' is not assignable to type '${rng.pick(CODE.tsType)}'.`,
      `error TS2339: Property '${rng.pick(CODE.prop)}' does not exist on type '${pascal(rng.pick(CODE.domain), rng.pick(CODE.suffix))}'.`,
      `error TS2345: Argument of type '${pascal(rng.pick(CODE.domain))}' is not assignable to parameter of type '${pascal(rng.pick(CODE.domain), rng.pick(CODE.suffix))}'.`,
      `error TS18048: '${rng.pick(CODE.domain)}.${rng.pick(CODE.prop)}' is possibly 'undefined'.`,
      `error TS2554: Expected ${rng.int(1, 3)} arguments, but got ${rng.int(0, 4)}.`,
      `error TS7006: Parameter '${rng.pick(['x', 'row', 'entry'])}' implicitly has an 'any' type.`,
    ]);
    out.push(`${f}(${line},${col}): ${err}`);
    if (rng.chance(0.3)) out.push(`  Type '${pascal(rng.pick(CODE.domain), rng.pick(CODE.suffix))}' is missing the following properties from type '${pascal(rng.pick(CODE.domain), rng.pick(CODE.suffix))}': ${rng.pickN(CODE.prop, 3).join(', ')}`);
  }
  if (errors) out.push('', `Found ${errors} error${errors > 1 ? 's' : ''} in ${Math.min(errors, files.length)} file${errors > 1 ? 's' : ''}.`);
  return out.join('\n');
}

/** `vite build` (or similar bundler) output, optionally with the verbose module list. */
export function bundleLog(rng, { chars, clock, files }) {
  const out = ['> ledgerline@2.14.0 build', '> tsc -p tsconfig.build.json && vite build --debug', '', `vite v5.3.4 building for production...`];
  let len = 0;
  let n = 0;
  while (len < chars - 2500) {
    clock.advance(1, 30);
    const f = rng.chance(0.6) ? rng.pick(files) : `node_modules/.pnpm/${rng.pick(['zod@3.23.8', 'pino@9.3.1', 'fastify@4.28.1', 'undici@6.19.2', 'date-fns@3.6.0'])}/node_modules/${rng.pick(['zod', 'pino', 'fastify', 'undici', 'date-fns'])}/${rng.pick(['lib', 'dist', 'src'])}/${rng.pick(CODE.domain)}${rng.pick(['.js', '.mjs', '/index.js'])}`;
    const l = `  vite:${rng.pick(['transform', 'load', 'resolve', 'deps'])} ${rng.float(0.05, 40).toFixed(2)}ms ${f}${rng.chance(0.2) ? ` +${rng.int(0, 90)}ms` : ''}`;
    out.push(l);
    len += l.length + 1;
    n++;
  }
  out.push(`✓ ${n} modules transformed.`);
  for (let i = 0, m = rng.int(12, 30); i < m; i++) {
    out.push(`dist/${rng.pick(['assets/', 'chunks/', ''])}${rng.pick(CODE.domain)}-${rng.alnum(8)}.js${' '.repeat(rng.int(2, 20))}${rng.float(0.3, 480).toFixed(2)} kB │ gzip: ${rng.float(0.2, 120).toFixed(2)} kB │ map: ${rng.float(1, 900).toFixed(2)} kB`);
  }
  out.push('', `(!) Some chunks are larger than 500 kB after minification. Consider:`, '- Using dynamic import() to code-split the application', '- Use build.rollupOptions.output.manualChunks to improve chunking: https://rollupjs.org/configuration-options/#output-manualchunks', `✓ built in ${rng.float(3, 40).toFixed(2)}s`);
  return out.join('\n');
}

export function eslintLog(rng, { files, problems }) {
  const out = [];
  let left = problems;
  for (const f of rng.pickN(files, Math.min(files.length, Math.max(1, Math.ceil(problems / 3))))) {
    if (left <= 0) break;
    out.push('', `${PROJECT_ROOT}/${f}`);
    for (let i = 0, n = Math.min(left, rng.int(1, 5)); i < n; i++, left--) {
      out.push(`  ${rng.int(1, 400)}:${rng.int(1, 40)}  ${rng.pick(['warning', 'warning', 'error'])}  ${rng.pick([
        `'${rng.pick(CODE.domain)}${rng.pick(['Id', 'Rows', 'Total'])}' is assigned a value but never used  @typescript-eslint/no-unused-vars`,
        'Unexpected any. Specify a different type  @typescript-eslint/no-explicit-any',
        'Promises must be awaited, end with a call to .catch, or be explicitly marked as ignored with the `void` operator  @typescript-eslint/no-floating-promises',
        `Missing return type on function  @typescript-eslint/explicit-function-return-type`,
        `Import "${rng.pick(CODE.domain)}" is only used as types  @typescript-eslint/consistent-type-imports`,
      ])}`);
    }
  }
  out.push('', `✖ ${problems} problems (${Math.floor(problems / 3)} errors, ${problems - Math.floor(problems / 3)} warnings)`, `  ${rng.int(0, problems)} warnings potentially fixable with the \`--fix\` option.`);
  return out.join('\n');
}

/** A Python traceback-bearing pytest run. */
export function pytestLog(rng, { chars, failures = 0 }) {
  const out = ['============================= test session starts ==============================', 'platform linux -- Python 3.12.4, pytest-8.2.2, pluggy-1.5.0', `rootdir: ${PROJECT_ROOT}/scripts`, 'plugins: anyio-4.4.0, cov-5.0.0', `collected ${rng.int(20, 140)} items`, ''];
  let len = 0;
  while (len < chars - 1200 * failures) {
    const l = `tests/test_${rng.pick(['backfill_usage', 'export_report', 'rollup', 'fx_rates'])}.py ${'.'.repeat(rng.int(5, 60))}${rng.chance(0.1) ? 's' : ''}${' '.repeat(rng.int(1, 10))}[${String(rng.int(1, 100)).padStart(3)}%]`;
    out.push(l);
    len += l.length + 1;
  }
  for (let i = 0; i < failures; i++) {
    const fn = snake('test', rng.pick(CODE.verb), rng.pick(CODE.domain));
    out.push('', `___________________________ ${fn} ___________________________`, '', `    def ${fn}(conn):`, `        rows = backfill_usage(conn, tenant_id="t_${rng.int(10, 99)}", dry_run=True)`, `>       assert len(rows) == ${rng.int(1, 90)}`, `E       AssertionError: assert ${rng.int(91, 200)} == ${rng.int(1, 90)}`, `E        +  where ${rng.int(91, 200)} = len([{'id': '${rng.hex(8)}', 'amount_cents': ${rng.int(0, 9999)}}, ...])`, '', `tests/test_backfill_usage.py:${rng.int(10, 200)}: AssertionError`);
  }
  out.push(`========================= ${failures ? `${failures} failed, ` : ''}${rng.int(20, 140)} passed in ${rng.float(0.5, 30).toFixed(2)}s =========================`);
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Web: search results and pages
// ---------------------------------------------------------------------------------------------

export const SITES = [
  'engineering.shopify.com', 'blog.cloudflare.com', 'news.ycombinator.com', 'www.reddit.com/r/dataengineering', 'github.com',
  'stackoverflow.com', 'medium.com', 'arxiv.org', 'www.infoq.com', 'dev.to', 'thenewstack.io', 'www.percona.com/blog',
  'blog.acolyer.org', 'lwn.net', 'jepsen.io', 'www.timescale.com/blog', 'neon.tech/blog', 'supabase.com/blog', 'qdrant.tech/articles',
  'weaviate.io/blog', 'www.pinecone.io/learn', 'milvus.io/blog', 'vespa.ai/blog', 'opensearch.org/blog', 'www.elastic.co/blog',
  'towardsdatascience.com', 'benchmarks.example.org', 'docs.aws.amazon.com', 'cloud.google.com/blog', 'learn.microsoft.com',
];

export function slug(words) {
  return words.join('-').toLowerCase().replace(/[^a-z0-9-]+/g, '-').replace(/-+/g, '-').replace(/^-|-$/g, '');
}

export function titleFor(rng, topic) {
  const t = rng.pick(topic.terms);
  const t2 = rng.pick(topic.terms);
  return rng.pick([
    `${cap(t)} vs ${t2}: what we learned after ${rng.int(2, 18)} months in production`,
    `How we ${rng.pick(W.verb)} ${t} at scale`,
    `A practical guide to ${t}`,
    `Benchmarking ${t} and ${t2} on ${rng.int(10, 500)}M vectors`,
    `Why we moved away from ${t}`,
    `${cap(t)}: ${rng.pick(['the missing manual', 'common pitfalls', 'a deep dive', 'lessons learned', 'internals explained'])}`,
    `Ask HN: Anyone running ${t} in production?`,
    `${cap(t)} ${rng.pick(['performance tuning', 'memory usage', 'operational checklist', 'cost breakdown', 'release notes'])} (${rng.int(2021, 2025)})`,
    `Understanding ${t} for ${t2} workloads`,
  ]);
}

export function urlFor(rng, topic, title) {
  const site = rng.pick(SITES);
  const s = slug(title.split(/\s+/).slice(0, 9));
  if (site === 'news.ycombinator.com') return `https://news.ycombinator.com/item?id=${rng.int(30_000_000, 42_000_000)}`;
  if (site === 'github.com') return `https://github.com/${rng.pick(['qdrant', 'pgvector', 'milvus-io', 'weaviate', 'facebookresearch', 'nmslib', 'unum-cloud'])}/${rng.pick(['qdrant', 'pgvector', 'milvus', 'weaviate', 'faiss', 'hnswlib', 'usearch'])}/${rng.pick(['issues', 'discussions'])}/${rng.int(100, 6000)}`;
  if (site === 'arxiv.org') return `https://arxiv.org/abs/${rng.int(2101, 2412)}.${rng.int(10000, 19999)}`;
  if (site === 'stackoverflow.com') return `https://stackoverflow.com/questions/${rng.int(60_000_000, 79_000_000)}/${s}`;
  return `https://${site}/${rng.chance(0.5) ? `${rng.int(2021, 2025)}/${pad(rng.int(1, 12))}/` : ''}${s}`;
}

function mdTable(rng, topic) {
  if (topic.style === 'life') {
    const rows = rng.pickN(topic.terms, rng.int(3, 5));
    const out = ['| Option | Cost | Time | Priority | Notes |', '|---|---:|---:|---|---|'];
    for (const r of rows) out.push(`| ${cap(r)} | €${rng.int(10, 3000)} | ${rng.int(1, 40)} ${rng.pick(['h', 'days'])} | ${rng.pick(['high', 'medium', 'low'])} | ${sentence(rng, topic).replace(/\|/g, '/')} |`);
    return out.join('\n');
  }
  const systems = rng.pickN(topic.terms, rng.int(3, 5));
  const cols = rng.pickN(['p50 (ms)', 'p99 (ms)', 'QPS', 'recall@10', 'RAM (GB)', 'index build (min)', 'disk (GB)', '$ / month'], rng.int(3, 5));
  const out = [`| system | ${cols.join(' | ')} |`, `|---|${cols.map(() => '---:').join('|')}|`];
  for (const s of systems) out.push(`| ${s} | ${cols.map((c) => (c.startsWith('recall') ? rng.float(0.85, 0.995).toFixed(3) : c.includes('QPS') ? rng.int(200, 12_000) : rng.float(0.5, 900).toFixed(1))).join(' | ')} |`);
  return out.join('\n');
}

/** A markdown article body (no chrome). */
export function article(rng, topic, chars) {
  const out = [];
  let len = 0;
  while (len < chars) {
    const kind = rng.weighted([['p', 6], ['h', 1.5], ['list', 1.2], ['table', 0.5], ['code', 0.6], ['quote', 0.3]]);
    let b;
    if (kind === 'p') b = paragraph(rng, topic, 3, 7);
    else if (kind === 'h') b = `## ${cap(rng.pick([...topic.headings, ...topic.terms.map((t) => `How ${t} works`), 'Results', 'Methodology', 'Setup', 'Caveats', 'What we would do differently']))}`;
    else if (kind === 'list') b = Array.from({ length: rng.int(3, 7) }, () => `- ${sentence(rng, topic)}`).join('\n');
    else if (kind === 'table') b = mdTable(rng, topic);
    else if (kind === 'code') b = '```' + (topic.code ?? 'python') + '\n' + snippet(rng, topic.code === 'sql' ? 'sql' : topic.code === 'bash' ? 'bash' : 'py') + '\n```';
    else b = `> ${sentence(rng, topic)} ${sentence(rng, topic)}`;
    out.push(b);
    len += b.length + 2;
  }
  return out.join('\n\n');
}

/** A fetched page converted to markdown, with navigation, cookie banner, comments and footer. */
export function webPage(rng, topic, { url, title, chars }) {
  const host = url.replace(/^https:\/\//, '').split('/')[0];
  const head = [
    `URL: ${url}`,
    `Title: ${title}`,
    '',
    `[Skip to content](#main)`,
    '',
    rng.pick(['Home', 'Blog']) + ' | ' + rng.pickN(['Product', 'Pricing', 'Docs', 'Blog', 'Customers', 'Careers', 'Community', 'Changelog', 'Sign in', 'Get started'], rng.int(5, 8)).join(' | '),
    '',
    rng.chance(0.6) ? 'We use cookies to improve your experience. By continuing to browse this site you agree to our use of cookies. [Accept all] [Manage preferences]\n' : '',
    `# ${title}`,
    '',
    `By ${rng.pick(W.person)} ${rng.pick(W.surname)} · ${rng.int(2021, 2025)}-${pad(rng.int(1, 12))}-${pad(rng.int(1, 28))} · ${rng.int(4, 25)} min read`,
    '',
  ];
  const commentsChars = rng.chance(0.5) ? Math.floor(chars * rng.float(0.05, 0.2)) : 0;
  const body = article(rng, topic, Math.max(500, chars - commentsChars - 900));
  const tail = [''];
  if (commentsChars) {
    tail.push(`## ${rng.int(3, 140)} comments`, '');
    let len = 0;
    while (len < commentsChars) {
      const c = `**${rng.pick(W.person).toLowerCase()}${rng.int(1, 999)}** · ${rng.int(1, 30)} ${rng.pick(['days', 'months', 'hours'])} ago\n\n${paragraph(rng, topic, 1, 4)}\n\n${rng.int(0, 80)} points · Reply`;
      tail.push(c, '');
      len += c.length;
    }
  }
  tail.push('---', `### Related articles`, ...Array.from({ length: rng.int(3, 6) }, () => `- [${titleFor(rng, topic)}](https://${host}/${slug(rng.pickN(topic.terms, 2))})`), '', `© ${rng.int(2023, 2025)} ${host}. All rights reserved. · Privacy · Terms · Security · Status · RSS`);
  return [...head, body, ...tail].join('\n');
}

/** A web_search tool result: numbered hits with title, URL, date, snippet and extracted text. */
export function searchResults(rng, topic, { query, chars }) {
  const out = [`Search results for: ${query}`, `About ${rng.int(12, 900)},${rng.int(100, 999)} results (${rng.float(0.2, 0.9).toFixed(2)} s)`, ''];
  let len = out.join('\n').length;
  let i = 0;
  const hits = [];
  const per = Math.max(600, Math.floor(chars / rng.int(8, 14)));
  while (len < chars - 200) {
    i++;
    const title = titleFor(rng, topic);
    const url = urlFor(rng, topic, title);
    hits.push({ title, url });
    const block = [
      `[${i}] ${title}`,
      `URL: ${url}`,
      `Published: ${rng.int(2019, 2025)}-${pad(rng.int(1, 12))}-${pad(rng.int(1, 28))}`,
      `Snippet: ${sentence(rng, topic)} ${sentence(rng, topic)} ...`,
      `Extracted content:`,
      article(rng, topic, Math.max(300, per - 400 + rng.int(-200, 400))),
      '',
      '---',
      '',
    ].join('\n');
    out.push(block);
    len += block.length;
  }
  return { text: out.join('\n'), hits };
}

// ---------------------------------------------------------------------------------------------
// Markdown answers (chat, final answers)
// ---------------------------------------------------------------------------------------------

export function markdownAnswer(rng, topic, chars, { lead } = {}) {
  const out = [];
  if (lead) out.push(lead);
  out.push(paragraph(rng, topic, 2, 4));
  let len = out.join('\n\n').length;
  while (len < chars) {
    const kind = rng.weighted([['section', 3], ['bullets', 3], ['numbered', 1.5], ['code', topic.code ? 1.2 : 0], ['table', 0.5], ['p', 2]]);
    let b;
    if (kind === 'section') b = `### ${cap(rng.pick(topic.headings))}\n\n${paragraph(rng, topic, 2, 5)}`;
    else if (kind === 'bullets') b = Array.from({ length: rng.int(3, 6) }, () => `- **${cap(rng.pick(topic.terms))}**: ${sentence(rng, topic)}`).join('\n');
    else if (kind === 'numbered') b = Array.from({ length: rng.int(3, 6) }, (_, k) => `${k + 1}. ${sentence(rng, topic)}`).join('\n');
    else if (kind === 'code') b = '```' + topic.code + '\n' + snippet(rng, topic.code) + '\n```';
    else if (kind === 'table') b = mdTable(rng, topic);
    else b = paragraph(rng, topic, 2, 5);
    out.push(b);
    len += b.length + 2;
  }
  if (rng.chance(0.5)) out.push(rng.pick(['Want me to go deeper on any of these?', 'Let me know if you want a shorter version.', 'Happy to adjust this once you have more details.', 'If you share more context I can tailor this further.']));
  return out.join('\n\n');
}

// ---------------------------------------------------------------------------------------------
// Documents a user might paste
// ---------------------------------------------------------------------------------------------

const LEGAL = [
  'The {party} shall {lverb} the deliverables described in Schedule {sched} within {n} business days of the Effective Date.',
  'Either party may terminate this Agreement upon {n} days written notice if the other party materially breaches any provision hereof.',
  'All fees are exclusive of value added tax, which shall be added at the applicable rate.',
  'The {party} shall not assign or subcontract any of its obligations without the prior written consent of the {party2}.',
  'Confidential Information shall not include information that is or becomes publicly available through no fault of the receiving party.',
  'Invoices are payable within {n} days of receipt; late payments accrue interest at {pct}% per annum.',
  'Nothing in this Agreement limits liability for death or personal injury caused by negligence.',
  'The {party} warrants that the services will be performed with reasonable skill and care in accordance with good industry practice.',
  'Any change to the scope of the services must be agreed in writing through the change control procedure in clause {clause}.',
  'The aggregate liability of the {party} under this Agreement shall not exceed {pct}% of the fees paid in the preceding twelve months.',
];

function legalSentence(rng) {
  return rng.pick(LEGAL).replace(/\{(\w+)\}/g, (_, k) => ({
    party: rng.pick(['Supplier', 'Customer', 'Contractor', 'Client']), party2: rng.pick(['Supplier', 'Customer', 'Contractor', 'Client']),
    lverb: rng.pick(['deliver', 'complete', 'provide', 'install']), sched: rng.pick(['A', 'B', 'C']), n: String(rng.pick([5, 10, 14, 30, 45, 60, 90])),
    pct: String(rng.int(2, 150)), clause: `${rng.int(3, 19)}.${rng.int(1, 6)}`,
  })[k] ?? k);
}

/** A pasted document of about `chars` characters: 'notes' | 'contract' | 'draft' | 'csv' | 'email'. */
export function pastedDocument(rng, kind, topic, chars) {
  const out = [];
  let len = 0;
  const add = (s) => {
    out.push(s);
    len += s.length + 1;
  };
  const name = () => `${rng.pick(W.person)} ${rng.pick(W.surname)}`;
  if (kind === 'notes') {
    add(`# ${cap(rng.pick(topic.terms))} sync — ${rng.int(2025, 2025)}-${pad(rng.int(1, 12))}-${pad(rng.int(1, 28))}`);
    add(`Attendees: ${Array.from({ length: rng.int(3, 7) }, name).join(', ')}`);
    add('');
    while (len < chars) {
      add(`## ${cap(rng.pick(topic.headings))}`);
      for (let i = 0, n = rng.int(3, 8); i < n; i++) add(`- **${rng.pick(W.person)}**: ${sentence(rng, topic)}`);
      if (rng.chance(0.5)) add(`- Decision: ${sentence(rng, topic)}`);
      if (rng.chance(0.5)) add(`- [ ] ${rng.pick(W.person)} to ${rng.pick(W.verb)} the ${rng.pick(topic.terms)} by ${rng.pick(['Friday', 'next week', 'end of month', 'Tuesday'])}`);
      add('');
    }
  } else if (kind === 'contract') {
    add('SERVICES AGREEMENT (DRAFT v' + rng.int(2, 7) + ')');
    add('');
    let c = 0;
    while (len < chars) {
      c++;
      add(`${c}. ${rng.pick(['DEFINITIONS', 'SERVICES', 'FEES AND PAYMENT', 'TERM AND TERMINATION', 'CONFIDENTIALITY', 'LIABILITY', 'WARRANTIES', 'INTELLECTUAL PROPERTY', 'DATA PROTECTION', 'GENERAL'])}`);
      for (let i = 1, n = rng.int(3, 7); i <= n; i++) add(`${c}.${i} ${legalSentence(rng)} ${rng.chance(0.5) ? legalSentence(rng) : ''}`.trimEnd());
      add('');
    }
  } else if (kind === 'csv') {
    const cols = ['date', 'category', 'description', 'amount_eur', 'paid_by', 'status'];
    add(cols.join(','));
    while (len < chars) add([`2025-${pad(rng.int(1, 12))}-${pad(rng.int(1, 28))}`, rng.pick(['materials', 'labour', 'permits', 'travel', 'food', 'software', 'hardware', 'fees']), `"${rng.pick(topic.terms)} ${rng.pick(['deposit', 'invoice', 'refund', 'extra', 'balance'])}"`, rng.float(5, 4000).toFixed(2), rng.pick(W.person), rng.pick(['paid', 'pending', 'disputed'])].join(','));
  } else if (kind === 'email') {
    while (len < chars) {
      add(`From: ${name()} <${rng.pick(W.person).toLowerCase()}@${rng.pick(['acme.io', 'example.com', 'northwind.eu'])}>`);
      add(`Date: ${rng.pick(['Mon', 'Tue', 'Wed', 'Thu', 'Fri'])}, ${rng.int(1, 28)} ${rng.pick(['Feb', 'Mar', 'Apr'])} 2025 ${pad(rng.int(8, 19))}:${pad(rng.int(0, 59))}`);
      add(`Subject: Re: ${rng.pick(topic.terms)}`);
      add('');
      add(paragraph(rng, topic, 2, 5));
      add('');
      add(paragraph(rng, topic, 1, 4));
      add('');
      add(`Best,\n${rng.pick(W.person)}`);
      add('');
      add('-----Original Message-----');
    }
  } else {
    add(`# ${titleFor(rng, topic)}`);
    add('');
    add(article(rng, topic, chars - len));
  }
  return out.join('\n');
}

// ---------------------------------------------------------------------------------------------
// Needles
// ---------------------------------------------------------------------------------------------

const NEEDLE_WORDS = ['KESTREL', 'OSPREY', 'MARLIN', 'QUARTZ', 'TUNDRA', 'NIMBUS', 'HALCYON', 'CORVID', 'BASALT', 'CINDER', 'ZEPHYR', 'VESPER', 'ORCHID', 'TAMARIN', 'GARNET', 'PELICAN', 'WOMBAT', 'JUNIPER', 'COBALT', 'MAGPIE', 'ONYX', 'ZEBRA', 'ICARUS', 'LOCUST', 'FJORD', 'GLACIER'];
const NEEDLE_SOFT = ['pinecone', 'lantern', 'marmalade', 'thimble', 'harbor', 'saffron', 'pebble', 'juniper', 'walnut', 'meadow', 'copper', 'velvet', 'biscuit', 'tangerine'];

/** A unique, unguessable value. `style`: 'code' (KESTREL-4417-QX), 'prefixed' (given prefix:
 * ACC-88213-ZEBRA), 'soft' (pinecone-violet-482), 'hex' (7f3a-c91e-04bd). */
export function needleValue(rng, used, style = 'code', prefix = 'REF') {
  for (;;) {
    let v;
    if (style === 'prefixed') v = `${prefix}-${rng.int(10_000, 99_999)}-${rng.pick(NEEDLE_WORDS)}`;
    else if (style === 'soft') {
      const [a, b] = rng.pickN(NEEDLE_SOFT, 2);
      v = `${a}-${b}-${rng.int(100, 999)}`;
    }
    else if (style === 'hex') v = `${rng.hex(4)}-${rng.hex(4)}-${rng.hex(4)}`;
    else v = `${rng.pick(NEEDLE_WORDS)}-${rng.int(1000, 9999)}-${rng.chars(2, UNAMBIGUOUS)}`;
    if (!used.has(v) && !used.has(v.split('-')[0] + v.split('-')[1])) {
      used.add(v);
      return v;
    }
  }
}

/** Inserts `line` (one or more lines) in the middle of `text` — between 30 % and 70 % of its
 * lines, never in the first or last 15 lines. */
export function insertMiddle(rng, text, line) {
  const lines = text.split('\n');
  if (lines.length < 40) throw new Error(`insertMiddle: text too short (${lines.length} lines)`);
  const lo = Math.max(16, Math.floor(lines.length * 0.3));
  const hi = Math.min(lines.length - 16, Math.floor(lines.length * 0.7));
  lines.splice(rng.int(lo, hi), 0, line);
  return lines.join('\n');
}

/** Inserts a sentence in the middle of a prose message (between sentences, not first or last). */
export function insertSentence(rng, text, s) {
  const parts = text.split(/(?<=[.!?])\s+/);
  if (parts.length < 2) return `${text} ${s}`;
  const at = rng.int(1, parts.length - 1);
  parts.splice(at, 0, s);
  return parts.join(' ');
}

// ---------------------------------------------------------------------------------------------
// Session builder
// ---------------------------------------------------------------------------------------------

export class SessionBuilder {
  constructor() {
    this.messages = [];
    this.seq = 0;
  }
  get length() {
    return this.messages.length;
  }
  user(content) {
    this.messages.push({ role: 'user', content });
    return this.messages.length - 1;
  }
  /** One model step with tool calls: `calls` is `[{ toolName, input, output }]`. Returns the
   * index of the tool message. */
  step(text, calls) {
    if (!calls.length) throw new Error('step without calls: use answer()');
    const content = [];
    if (text) content.push({ type: 'text', text });
    const ids = calls.map(() => `call_${String(++this.seq).padStart(4, '0')}`);
    calls.forEach((c, i) => content.push({ type: 'tool-call', toolCallId: ids[i], toolName: c.toolName, input: c.input }));
    this.messages.push({ role: 'assistant', content });
    this.messages.push({
      role: 'tool',
      content: calls.map((c, i) => ({ type: 'tool-result', toolCallId: ids[i], toolName: c.toolName, output: { type: 'text', value: c.output } })),
    });
    return this.messages.length - 1;
  }
  /** A final, text-only step ending the user turn. */
  answer(text) {
    this.messages.push({ role: 'assistant', content: [{ type: 'text', text }] });
    return this.messages.length - 1;
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics and validation
// ---------------------------------------------------------------------------------------------

/** Every text of a message, as counted: user text, assistant texts, tool-call inputs (JSON),
 * tool outputs. */
export function messageTexts(m) {
  if (typeof m.content === 'string') return [m.content];
  const out = [];
  for (const p of m.content) {
    if (p.type === 'text') out.push(p.text);
    else if (p.type === 'tool-call') out.push(JSON.stringify(p.input));
    else if (p.type === 'tool-result') out.push(p.output.value);
  }
  return out;
}

export function sessionStats(session, countTokens) {
  const s = { messages: session.messages.length, steps: 0, userTurns: 0, toolCalls: 0, tokens: 0, largestOutput: 0, needles: session.needles.length, repeatSame: 0, repeatChanged: 0, byTool: {} };
  const seen = new Map();
  const pendingKeys = new Map();
  for (const m of session.messages) {
    if (m.role === 'user') s.userTurns++;
    if (m.role === 'assistant') s.steps++;
    for (const t of messageTexts(m)) s.tokens += countTokens(t);
    if (m.role === 'assistant') {
      for (const p of m.content) {
        if (p.type !== 'tool-call') continue;
        s.toolCalls++;
        pendingKeys.set(p.toolCallId, `${p.toolName} ${JSON.stringify(p.input)}`);
      }
    }
    if (m.role === 'tool') {
      for (const p of m.content) {
        const n = countTokens(p.output.value);
        s.largestOutput = Math.max(s.largestOutput, n);
        const bt = (s.byTool[p.toolName] ??= { calls: 0, tokens: 0 });
        bt.calls++;
        bt.tokens += n;
        const key = pendingKeys.get(p.toolCallId);
        if (p.toolName === 'open_file' || p.toolName === 'fetch_url' || p.toolName === 'lookup') {
          if (seen.has(key)) {
            if (seen.get(key) === p.output.value) s.repeatSame++;
            else s.repeatChanged++;
          }
          seen.set(key, p.output.value);
        }
      }
    }
  }
  return s;
}

/** Shape errors of a session (empty when well-formed). */
export function validateShape(session) {
  const errors = [];
  const msgs = session.messages;
  const ids = new Set();
  const names = new Set(Object.keys(session.tools));
  if (!msgs.length || msgs[0].role !== 'user') errors.push('first message is not a user message');
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i];
    if (m.role === 'user') {
      if (typeof m.content !== 'string' || !m.content) errors.push(`${i}: user content is not a non-empty string`);
      if (i > 0) {
        const prev = msgs[i - 1];
        if (prev.role !== 'assistant' || prev.content.some((p) => p.type !== 'text')) errors.push(`${i}: user message does not follow a text-only assistant`);
      }
    } else if (m.role === 'assistant') {
      if (!Array.isArray(m.content) || !m.content.length) errors.push(`${i}: assistant content empty`);
      const calls = m.content.filter((p) => p.type === 'tool-call');
      const texts = m.content.filter((p) => p.type === 'text');
      if (texts.length > 1) errors.push(`${i}: more than one text part`);
      if (m.content.some((p) => p.type !== 'text' && p.type !== 'tool-call')) errors.push(`${i}: unknown part type`);
      if (texts.length && m.content[0].type !== 'text') errors.push(`${i}: text does not come first`);
      for (const t of texts) if (typeof t.text !== 'string' || !t.text) errors.push(`${i}: empty text`);
      if (calls.length) {
        const next = msgs[i + 1];
        if (!next || next.role !== 'tool') {
          errors.push(`${i}: tool calls not followed by a tool message`);
          continue;
        }
        if (next.content.length !== calls.length) errors.push(`${i + 1}: ${next.content.length} results for ${calls.length} calls`);
        calls.forEach((c, k) => {
          if (ids.has(c.toolCallId)) errors.push(`${i}: duplicate toolCallId ${c.toolCallId}`);
          ids.add(c.toolCallId);
          if (!names.has(c.toolName)) errors.push(`${i}: undeclared tool ${c.toolName}`);
          if (!c.input || typeof c.input !== 'object' || Array.isArray(c.input)) errors.push(`${i}: input is not an object`);
          const r = next.content[k];
          if (!r || r.type !== 'tool-result' || r.toolCallId !== c.toolCallId || r.toolName !== c.toolName) errors.push(`${i + 1}: result ${k} does not answer ${c.toolCallId}`);
          else if (!r.output || r.output.type !== 'text' || typeof r.output.value !== 'string') errors.push(`${i + 1}: output is not {type:'text', value:string}`);
        });
      } else {
        const next = msgs[i + 1];
        if (next && next.role !== 'user') errors.push(`${i}: text-only assistant not followed by a user message`);
      }
    } else if (m.role === 'tool') {
      const prev = msgs[i - 1];
      if (!prev || prev.role !== 'assistant' || !prev.content.some((p) => p.type === 'tool-call')) errors.push(`${i}: tool message not after an assistant with calls`);
    } else errors.push(`${i}: unexpected role ${m.role}`);
  }
  const last = msgs[msgs.length - 1];
  if (!last || last.role !== 'assistant' || last.content.some((p) => p.type !== 'text')) errors.push('session does not end with a text-only assistant');
  return errors;
}

/** Needle errors (empty when every needle is well planted, asked and answered). */
export function validateNeedles(session) {
  const errors = [];
  const msgs = session.messages;
  const flat = msgs.map((m) => messageTexts(m).join('\n'));
  for (const n of session.needles) {
    const where = [];
    flat.forEach((t, i) => {
      if (t.includes(n.value)) where.push(i);
    });
    const answerAt = n.neededAt + 1;
    if (!flat[n.messageIndex]?.includes(n.value)) errors.push(`${n.id}: not in message ${n.messageIndex}`);
    const planted = msgs[n.messageIndex];
    if (planted && planted.role !== (n.kind === 'tool' ? 'tool' : 'user')) errors.push(`${n.id}: kind ${n.kind} but planted in a ${planted.role} message`);
    if (msgs[n.neededAt]?.role !== 'user') errors.push(`${n.id}: neededAt ${n.neededAt} is not a user message`);
    if (flat[n.neededAt]?.includes(n.value)) errors.push(`${n.id}: the asking message contains the value`);
    if (n.neededAt <= n.messageIndex) errors.push(`${n.id}: neededAt not after messageIndex`);
    const ans = msgs[answerAt];
    if (!ans || ans.role !== 'assistant' || ans.content.some((p) => p.type !== 'text') || !flat[answerAt].includes(n.value)) errors.push(`${n.id}: the answer (message ${answerAt}) does not repeat the value`);
    const expected = [n.messageIndex, answerAt];
    if (where.length !== 2 || where[0] !== expected[0] || where[1] !== expected[1]) errors.push(`${n.id}: value occurs in messages ${where.join(',')} (expected ${expected.join(',')})`);
    if (session.system.includes(n.value) || JSON.stringify(session.tools).includes(n.value)) errors.push(`${n.id}: value in system or tools`);
    if (n.kind === 'tool') {
      const part = planted.content.find((p) => p.output.value.includes(n.value));
      const lines = part.output.value.split('\n');
      const li = lines.findIndex((l) => l.includes(n.value));
      if (li < 15 || li >= lines.length - 15) errors.push(`${n.id}: tool needle at line ${li} of ${lines.length} (not in the middle)`);
    }
  }
  const ids = new Set(session.needles.map((n) => n.id));
  if (ids.size !== session.needles.length) errors.push('duplicate needle ids');
  return errors;
}
