// Case generator: a seeded description ("spec") of one fuzz case, plain JSON so that a repro file
// can hold it. Values JSON cannot carry are tags that hydrate.mjs turns into live values:
//   {"$bytes": base64}  Uint8Array         {"$buffer": base64}   Buffer
//   {"$ab": base64}     ArrayBuffer        {"$url": href}        URL object
//   {"$lines": [seed, n, flavor]}          n deterministic lines of text (huge outputs stay small)
// Lone surrogates need no tag: JSON.stringify writes them as \udXXX escapes and JSON.parse reads
// them back. What no JSON can hold (BigInts, cycles, throwing getters, symbols) is made at run
// time by case.mjs `malform` from the spec's `malformed` field.

export const SPEC_VERSION = 1;

// ---------------------------------------------------------------------------------------------
// PRNG: sfc32 seeded by cyrb128 of a string.

function cyrb128(str) {
  let h1 = 1779033703, h2 = 3144134277, h3 = 1013904242, h4 = 2773480762;
  for (let i = 0, k; i < str.length; i++) {
    k = str.charCodeAt(i);
    h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
    h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
    h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
    h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
  }
  h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
  h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
  h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
  h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
  return [(h1 ^ h2 ^ h3 ^ h4) >>> 0, (h2 ^ h1) >>> 0, (h3 ^ h1) >>> 0, (h4 ^ h1) >>> 0];
}

export class Rng {
  constructor(seed) {
    [this.a, this.b, this.c, this.d] = cyrb128(String(seed));
    for (let i = 0; i < 12; i++) this.u32();
  }
  u32() {
    let { a, b, c, d } = this;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    Object.assign(this, { a, b, c, d });
    return t >>> 0;
  }
  float() { return this.u32() / 4294967296; }
  int(n) { return n <= 1 ? 0 : Math.floor(this.float() * n); }
  range(lo, hi) { return lo + this.int(hi - lo + 1); }
  chance(p) { return this.float() < p; }
  pick(list) { return list[this.int(list.length)]; }
  /** `table`: [[weight, value], ...] */
  weighted(table) {
    const total = table.reduce((n, [w]) => n + w, 0);
    let x = this.float() * total;
    for (const [w, v] of table) if ((x -= w) < 0) return v;
    return table.at(-1)[1];
  }
}

/** A 32-bit FNV-1a hash of a string (fault and summarizer decisions keyed by content). */
export function hash32(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The seed of case `index` of a run seeded `seed`. */
export function caseSeed(seed, index) {
  return `${seed}:${index}`;
}

// ---------------------------------------------------------------------------------------------
// Text and values.

const CUT_LEAD = '\ud83d'; // the first half of 😀
const CUT_TRAIL = '\ude00'; // its second half
const LONE = ['x\udfff', CUT_LEAD, CUT_TRAIL, `cut ${CUT_LEAD}`, `${CUT_TRAIL} rest`, 'a\ud800b', '\udbff'];
const REAL_FFFD = ['x\ufffd', '\ufffd', 'a\ufffdb', `cut \ufffd`];
const WORDS = [
  'window', 'budget', 'cache', 'parser', 'token', 'offload', 'summary', 'agent', 'request', 'result',
  'the', 'a', 'of', 'to', 'and', 'in', 'is', 'for', 'with', 'on', 'error', 'value', 'index', 'file',
  'résumé', 'naïve', 'über', '日本語', 'テキスト', '中文', 'русский', 'العربية', 'עברית', '한국어',
  '😀', '🎉', '👩‍💻', '✅', '𝕳𝖊𝖑𝖑𝖔', '"quoted"', 'back\\slash', 'tab\there', '{json: 1}', '[x]',
  '<|endoftext|>', '<|im_end|>', '$ccRef', '\u0001ctl', 'line\r\nbreak', '   ', '0.1', '-113.71428571428571',
];

/** Numbers whose JSON text a float round trip could change, and some ordinary ones. */
export const NUMBERS = [
  -113.71428571428571, -99.71428571428571, 123456789.12345679, 0.1 + 0.2, 18446744073709552000, 1e21,
  -1.7976931348623157e308, 5e-324, -1e-7, 1.5e-7, 1e16, 2 ** 53 + 2, 9007199254740993, 0.000001, 1 / 3,
  0, 1, -1, 42, 1e300, 2.5e-8, 1234.5, Number.MAX_SAFE_INTEGER, 4.35, 0.0000015, 1e-300, 2 ** 64,
  -(2 ** 63), 123e-20, 7.000000000000001, 100, 3.14159, 1e+100, 0.30000000000000004, 2.2250738585072014e-308,
];

export function word(rng) {
  const roll = rng.float();
  if (roll < 0.02) return rng.pick(LONE);
  if (roll < 0.03) return rng.pick(REAL_FFFD);
  if (roll < 0.08) return String(rng.pick(NUMBERS));
  return rng.pick(WORDS);
}

export function sentence(rng, n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(word(rng));
  return out.join(rng.chance(0.05) ? '\n' : ' ');
}

export function randomNumber(rng) {
  const roll = rng.float();
  if (roll < 0.45) return rng.pick(NUMBERS);
  if (roll < 0.6) return rng.int(1000) / 7 - 100;
  if (roll < 0.75) return rng.range(-1e6, 1e6);
  if (roll < 0.9) return (rng.float() - 0.5) * 10 ** rng.range(-12, 25);
  // Any finite double, from random bits.
  const view = new DataView(new ArrayBuffer(8));
  view.setUint32(0, rng.u32());
  view.setUint32(4, rng.u32());
  const x = view.getFloat64(0);
  return Number.isFinite(x) ? x : 1.5;
}

const KEYS = ['id', 'name', 'value', 'score', 'rows', 'items', 'meta', 'text', 'v', 'w', 'lat', 'lng', 'total', '', 'k\ud83d', 'ключ', 'type', 'data', '0', '10', 'a.b', '$ref'];

export function jsonValue(rng, depth = 0) {
  const roll = rng.float();
  if (depth > 4 || roll < 0.35) {
    const leaf = rng.float();
    if (leaf < 0.45) return randomNumber(rng);
    if (leaf < 0.55) return rng.pick(LONE.concat(REAL_FFFD));
    if (leaf < 0.85) return sentence(rng, rng.range(0, 6));
    if (leaf < 0.92) return rng.chance(0.5);
    return null;
  }
  if (roll < 0.6) return Array.from({ length: rng.range(0, 5) }, () => jsonValue(rng, depth + 1));
  const object = {};
  for (let i = rng.range(0, 5); i > 0; i--) object[rng.pick(KEYS)] = jsonValue(rng, depth + 1);
  return object;
}

/** A JSON output value: small, or rows enough to be offloaded. */
export function jsonOutput(rng, size) {
  if (size === 'small') return jsonValue(rng, 1);
  const n = size === 'huge' ? rng.range(1_500, 4_000) : rng.range(60, 500);
  const template = Array.from({ length: rng.range(2, 6) }, () => rng.pick(KEYS.filter(Boolean)));
  const rows = [];
  for (let i = 0; i < n; i++) {
    const row = { i };
    for (const key of template) row[key] = rng.chance(0.7) ? randomNumber(rng) : rng.chance(0.3) ? rng.pick(LONE.concat(REAL_FFFD)) : sentence(rng, 3);
    rows.push(row);
  }
  return rng.chance(0.5) ? { rows, total: n, mean: randomNumber(rng) } : rows;
}

const FLAVORS = ['log', 'csv', 'code', 'surrogates', 'json', 'prose'];

/** Deterministic text of `n` lines (the `$lines` tag). */
export function linesText(seed, n, flavor) {
  const rng = new Rng(`lines:${seed}:${flavor}`);
  const lines = [];
  for (let i = 0; i < n; i++) {
    switch (flavor) {
      case 'log': lines.push(`2026-11-28T03:${String(i % 60).padStart(2, '0')}:00Z INFO req=${(i * 7919) % 100_003} took=${(i * 37) % 1000}ms path=/api/v${i % 3}/items`); break;
      case 'csv': lines.push(`${i},${randomNumber(rng)},${rng.pick(WORDS)},${rng.int(100) / 7}`); break;
      case 'code': lines.push(`    let v${i} = step_${i % 17}(${(i * 131) % 977}).await?; // ${rng.pick(WORDS)}`); break;
      case 'surrogates': lines.push(`line ${i}: ${sentence(rng, 4)} ${i % 13 === 0 ? rng.pick(LONE) : i % 11 === 0 ? rng.pick(REAL_FFFD) : 'ok'}`); break;
      case 'json': lines.push(JSON.stringify({ i, v: randomNumber(rng), s: sentence(rng, 2) })); break;
      default: lines.push(sentence(rng, 12)); break;
    }
  }
  return lines.join('\n');
}

/** Text of about `size`: a literal, or a `$lines` tag for the large ones. */
export function text(rng, size) {
  switch (size) {
    case 'tiny': return sentence(rng, rng.range(0, 3));
    case 'small': return sentence(rng, rng.range(3, 40));
    case 'medium': return sentence(rng, rng.range(100, 600));
    case 'large': return { $lines: [rng.u32(), rng.range(200, 1_500), rng.pick(FLAVORS)] };
    case 'huge': return { $lines: [rng.u32(), rng.range(5_000, 25_000), rng.pick(FLAVORS)] };
    default: throw new Error(size);
  }
}

function textSize(rng, bias) {
  return rng.weighted([[30, 'tiny'], [40, 'small'], [20 + bias * 10, 'medium'], [6 + bias * 6, 'large'], [0.1 + bias * 0.25, 'huge']]);
}

function base64(rng, n) {
  const bytes = new Uint8Array(n);
  for (let i = 0; i < n; i++) bytes[i] = rng.int(256);
  return Buffer.from(bytes).toString('base64');
}

/** Image data in every form the AI SDK takes. */
function imageData(rng) {
  const n = rng.chance(0.1) ? rng.range(5_000, 40_000) : rng.range(1, 64);
  return rng.weighted([
    [3, { $bytes: base64(rng, n) }],
    [1, { $buffer: base64(rng, n) }],
    [1, { $ab: base64(rng, n) }],
    [3, base64(rng, n)],
    [2, { $url: `https://example.com/img/${rng.u32()}.png` }],
    [1, `https://example.com/img/${rng.u32()}.jpg`],
    [1, `data:image/png;base64,${base64(rng, n)}`],
  ]);
}

function fileData(rng, mediaType) {
  const textual = /^text\/|json|xml|yaml|csv/.test(mediaType);
  if (textual && rng.chance(0.7)) {
    const body = rng.chance(0.4) ? linesText(rng.u32(), rng.range(50, 1_500), rng.pick(FLAVORS)) : sentence(rng, rng.range(3, 80));
    const b64 = Buffer.from(body.toWellFormed(), 'utf8').toString('base64');
    return rng.weighted([[3, b64], [2, `data:${mediaType};base64,${b64}`], [2, { $bytes: b64 }], [1, { $buffer: b64 }]]);
  }
  return rng.weighted([[2, { $bytes: base64(rng, rng.range(1, 200)) }], [2, base64(rng, rng.range(1, 200))], [2, { $url: `https://example.com/f/${rng.u32()}` }], [1, `https://example.com/doc/${rng.u32()}.pdf`]]);
}

const MEDIA = ['text/plain', 'application/json', 'text/csv', 'application/pdf', 'image/png', 'application/octet-stream', 'text/markdown', 'application/xml'];

function providerOptions(rng) {
  return rng.weighted([
    [6, { meta: { n: randomNumber(rng), s: rng.pick(LONE.concat(REAL_FFFD, ['plain'])) } }],
    [2, { anthropic: { cacheControl: { type: 'ephemeral' } } }],
    [2, { contextCompactor: { pin: true } }],
    [1, { openai: { itemId: `item_${rng.u32()}` } }],
  ]);
}

// ---------------------------------------------------------------------------------------------
// Conversations.

const TOOLS = ['search', 'read_file', 'write_file', 'query', 'fetch', 'write_todos', 'bash', 'grep', 'ls', 'edit_file', 'load_skill'];

class Ids {
  constructor(rng) {
    this.rng = rng;
    this.n = 0;
    this.style = rng.weighted([[10, 'unique'], [2, 'repeat'], [1, 'blank'], [1, 'toolname'], [1, 'surrogate']]);
    this.used = [];
  }
  next(toolName) {
    const { rng } = this;
    let id;
    if (this.style === 'repeat' && this.used.length > 0 && rng.chance(0.5)) id = rng.pick(this.used);
    else if (this.style === 'blank' && rng.chance(0.5)) id = rng.chance(0.7) ? '' : ' ';
    else if (this.style === 'toolname' && rng.chance(0.6)) id = toolName;
    else if (this.style === 'surrogate' && rng.chance(0.3)) id = `call_${rng.pick(LONE)}${this.n++}`;
    else id = `call_${this.n++}`;
    this.used.push(id);
    return id;
  }
}

function toolInput(rng, toolName, bias) {
  const input = {};
  if (['read_file', 'write_file', 'edit_file'].includes(toolName)) input.path = rng.pick(['/src/a.ts', '/src/b.rs', '/README.md', `/f${rng.int(5)}.txt`]);
  if (toolName === 'write_file' || toolName === 'edit_file') input.content = text(rng, rng.weighted([[3, 'small'], [3, 'medium'], [2, 'large']]));
  if (toolName === 'write_todos') input.todos = Array.from({ length: rng.range(1, 5) }, (_, i) => ({ id: i, content: sentence(rng, 5), status: rng.pick(['pending', 'done']) }));
  if (['search', 'grep', 'query', 'fetch'].includes(toolName)) input.query = sentence(rng, rng.range(1, 6));
  if (rng.chance(0.4)) input.limit = randomNumber(rng);
  if (rng.chance(0.3)) input.extra = jsonValue(rng, 2);
  if (rng.chance(0.05 * bias)) input.blob = text(rng, 'large');
  return input;
}

function contentItems(rng, bias) {
  const items = [];
  for (let i = rng.range(1, 4); i > 0; i--) {
    items.push(rng.weighted([
      [5, { type: 'text', text: text(rng, textSize(rng, bias)) }],
      [1, { type: 'media', data: base64(rng, rng.range(1, 64)), mediaType: 'image/png' }],
      [1, { type: 'image-data', data: base64(rng, rng.range(1, 64)), mediaType: 'image/jpeg' }],
      [1, { type: 'file-data', data: base64(rng, rng.range(1, 64)), mediaType: 'application/pdf', filename: 'r.pdf' }],
      [1, { type: 'image-url', url: `https://example.com/i/${rng.u32()}.png` }],
      [1, { type: 'file-url', url: `https://example.com/d/${rng.u32()}.pdf` }],
    ]));
  }
  return items;
}

function toolOutput(rng, bias) {
  const size = rng.weighted([[5, 'small'], [3, 'medium'], [3 + bias * 3, 'large'], [0.1 + bias * 0.3, 'huge']]);
  return rng.weighted([
    [8, () => ({ type: 'text', value: text(rng, size === 'small' ? 'small' : size) })],
    [2, () => ({ type: 'error-text', value: text(rng, size === 'huge' ? 'large' : size === 'small' ? 'tiny' : 'small') })],
    [7, () => ({ type: 'json', value: jsonOutput(rng, size === 'medium' ? 'small' : size) })],
    [1, () => ({ type: 'error-json', value: jsonOutput(rng, size === 'huge' ? 'large' : 'small') })],
    [2, () => ({ type: 'content', value: contentItems(rng, bias) })],
    [1, () => ({ type: 'execution-denied', ...(rng.chance(0.6) ? { reason: sentence(rng, 5) } : {}) })],
  ])();
}

function userMessage(rng, bias) {
  const withPO = (m) => (rng.chance(0.08) ? { ...m, providerOptions: providerOptions(rng) } : m);
  if (rng.chance(0.55)) return withPO({ role: 'user', content: text(rng, textSize(rng, bias)) });
  const parts = [];
  for (let i = rng.range(1, 4); i > 0; i--) {
    parts.push(rng.weighted([
      [6, () => ({ type: 'text', text: text(rng, textSize(rng, bias)) })],
      [2, () => ({ type: 'image', image: imageData(rng), ...(rng.chance(0.6) ? { mediaType: rng.pick(['image/png', 'image/jpeg', 'image']) } : {}) })],
      [2, () => {
        const mediaType = rng.pick(MEDIA);
        return { type: 'file', data: fileData(rng, mediaType), mediaType, ...(rng.chance(0.5) ? { filename: rng.pick(['a.txt', 'data.json', 'r.pdf', `n${rng.pick(LONE)}.csv`]) } : {}) };
      }],
    ])());
    if (rng.chance(0.06)) parts.at(-1).providerOptions = providerOptions(rng);
  }
  return withPO({ role: 'user', content: parts });
}

/** One agent step: an assistant message (text, reasoning, tool calls, approvals), then its
 * tool messages. Returns the messages and whether a call was left in flight. */
function step(rng, ids, bias, options) {
  const assistant = [];
  if (rng.chance(0.2)) assistant.push({ type: 'reasoning', text: text(rng, rng.weighted([[4, 'small'], [1, 'medium']])), ...(rng.chance(0.5) ? { providerOptions: { anthropic: { signature: base64(rng, 12) } } } : {}) });
  if (rng.chance(0.35)) assistant.push({ type: 'text', text: text(rng, rng.weighted([[6, 'small'], [2, 'medium'], [0.3, 'large']])) });
  if (rng.chance(0.02)) assistant.push({ type: 'text', text: 'Earlier context compacted by the provider.', providerOptions: { anthropic: { type: 'compaction' } } });
  if (rng.chance(0.02)) assistant.push({ type: 'custom', kind: 'openai.compaction', providerOptions: { openai: { itemId: `cmp_${rng.u32()}`, encryptedContent: base64(rng, 40) } } });
  const calls = [];
  const ncalls = rng.weighted([[2, 0], [6, 1], [2, 2], [1, 3]]);
  for (let i = 0; i < ncalls; i++) {
    const toolName = rng.pick(options.tools);
    const call = { type: 'tool-call', toolCallId: ids.next(toolName), toolName, input: toolInput(rng, toolName, bias) };
    if (rng.chance(0.05)) call.providerOptions = providerOptions(rng);
    if (rng.chance(0.03)) call.providerExecuted = true;
    assistant.push(call);
    calls.push(call);
    if (rng.chance(0.08)) {
      const approvalId = `appr_${rng.u32().toString(36)}`;
      assistant.push({ type: 'tool-approval-request', approvalId, toolCallId: call.toolCallId });
      call.approval = { approvalId, approved: rng.chance(0.7) };
    }
  }
  if (assistant.length === 0) assistant.push({ type: 'text', text: sentence(rng, 4) });
  const messages = [{ role: 'assistant', content: rng.chance(0.1) && calls.length === 0 && assistant.length === 1 && assistant[0].type === 'text' && typeof assistant[0].text === 'string' ? assistant[0].text : assistant }];
  if (calls.length === 0) return { messages, inFlight: false };
  if (options.last && rng.chance(0.15)) {
    for (const c of calls) delete c.approval;
    return { messages: [{ role: 'assistant', content: assistant.filter((p) => p.type !== 'tool-approval-request') }], inFlight: true };
  }
  const responses = calls.filter((c) => c.approval).map((c) => ({ type: 'tool-approval-response', approvalId: c.approval.approvalId, approved: c.approval.approved, ...(rng.chance(0.3) ? { reason: sentence(rng, 3) } : {}) }));
  const results = calls.map((c) => ({
    type: 'tool-result',
    toolCallId: c.toolCallId,
    toolName: c.toolName,
    output: c.approval && !c.approval.approved ? { type: 'execution-denied', reason: 'denied by the user' } : toolOutput(rng, bias),
    ...(rng.chance(0.05) ? { providerOptions: providerOptions(rng) } : {}),
  }));
  for (const c of calls) delete c.approval;
  if (rng.chance(0.3)) results.reverse();
  if (responses.length > 0) messages.push({ role: 'tool', content: responses });
  if (results.length > 1 && rng.chance(0.15)) {
    const cut = rng.range(1, results.length - 1);
    messages.push({ role: 'tool', content: results.slice(0, cut) }, { role: 'tool', content: results.slice(cut) });
  } else {
    messages.push({ role: 'tool', content: results });
  }
  return { messages, inFlight: false };
}

/** Turns: each a user message, zero or more agent steps, usually a closing assistant text. */
export function conversation(rng, options) {
  const ids = new Ids(rng);
  const turns = [];
  const nTurns = options.turns;
  const bias = options.bias;
  for (let t = 0; t < nTurns; t++) {
    const turn = [];
    if (t === 0 && rng.chance(0.85)) turn.push({ role: 'system', content: text(rng, rng.weighted([[5, 'small'], [2, 'medium'], [0.3, 'large']])), ...(rng.chance(0.1) ? { providerOptions: providerOptions(rng) } : {}) });
    turn.push(userMessage(rng, bias));
    const steps = rng.weighted([[2, 0], [4, 1], [3, 2], [2, 4], [0.5, 8]]);
    let inFlight = false;
    for (let s = 0; s < steps; s++) {
      const last = t === nTurns - 1 && s === steps - 1;
      const made = step(rng, ids, bias, { tools: options.tools, last });
      turn.push(...made.messages);
      inFlight = made.inFlight;
    }
    if (!inFlight && rng.chance(0.7)) turn.push({ role: 'assistant', content: rng.chance(0.6) ? text(rng, textSize(rng, bias)) : [{ type: 'text', text: text(rng, textSize(rng, bias)) }] });
    if (rng.chance(0.03)) turn.push({ role: 'system', content: sentence(rng, 6) });
    turns.push(turn);
  }
  return turns;
}

// ---------------------------------------------------------------------------------------------
// Options, summarizers, stores.

function compactorOptions(rng) {
  const options = {};
  const window = rng.weighted([[2, 1_500], [4, 3_000], [6, 6_000], [5, 12_000], [3, 24_000], [1, 64_000]]);
  const model = rng.weighted([[6, undefined], [2, 'gpt-4o'], [2, 'claude-sonnet-4-5'], [1, 'gemini-2.5-pro'], [1, 'my-local-model'], [0.5, 'deepseek-chat'], [0.5, 'gpt-4']]);
  if (model) options.model = model;
  if (!model || rng.chance(0.9)) options.contextWindow = window;
  if (rng.chance(0.3)) options.preset = rng.pick(['simple', 'smart', 'aggressive']);
  if (rng.chance(0.3)) {
    options.offload = {};
    if (rng.chance(0.5)) options.offload.thresholdTokens = rng.pick([50, 200, 1_000, 5_000]);
    if (rng.chance(0.4)) options.offload.userThresholdTokens = rng.pick([0, 100, 500, 3_000]);
    if (rng.chance(0.2)) options.offload.excludedTools = ['search'];
    if (rng.chance(0.2)) options.offload.previewHeadLines = rng.range(0, 5);
  }
  if (rng.chance(0.3)) {
    options.compaction = {};
    if (rng.chance(0.5)) options.compaction.keepToolResults = rng.range(0, 6);
    if (rng.chance(0.3)) options.compaction.minSavingTokens = rng.pick([0, 50, 500]);
    if (rng.chance(0.3)) options.compaction.workingFiles = { maxFiles: rng.range(0, 2) };
    if (rng.chance(0.2)) options.compaction.enabled = rng.chance(0.5);
    if (rng.chance(0.2)) options.compaction.keepToolResultsFraction = rng.pick([0.1, 1]);
  }
  if (rng.chance(0.45)) {
    options.history = {};
    if (rng.chance(0.7)) options.history.strategy = rng.weighted([[5, 'summarize'], [3, 'truncate'], [2, 'importance'], [1, 'off']]);
    if (rng.chance(0.3)) options.history.keepRecentMessages = rng.range(0, 6);
    if (rng.chance(0.2)) options.history.summaryMaxTokens = rng.pick([50, 300, 2_000]);
    if (rng.chance(0.2)) options.history.pinnedTools = ['load_skill'];
    if (rng.chance(0.1)) options.history.planTools = [];
    if (rng.chance(0.1)) options.history.continuation = false;
  }
  if (rng.chance(0.2)) options.cache = { provider: rng.pick(['none', 'anthropic', 'openai', 'gemini']) };
  if (rng.chance(0.15)) options.imageTokens = rng.pick([0, 85, 1_600, 5_000]);
  if (rng.chance(0.1)) options.fileTokens = rng.pick([0, 500]);
  if (rng.chance(0.2)) options.tools = [{ name: 'search', description: 'Search the web', inputSchema: { type: 'object', properties: { query: { type: 'string' } } } }, { name: `lookup${rng.pick(['', '\ud83d'])}`, description: sentence(rng, 8) }];
  return options;
}

/** How the summarizer answers a request, decided by a hash of the request's prompt (the same in
 * every host shape). Rates out of 1000. */
function summarizerSpec(rng) {
  if (rng.chance(0.15)) return null;
  const mode = rng.weighted([[6, 'answer'], [1, 'throw'], [1, 'hang'], [1, 'slow'], [1, 'mixed']]);
  const rates = { answer: 1000 };
  if (mode === 'mixed') Object.assign(rates, { throw: 150, hang: 100, slow: 150, nonstring: 80, huge: 80, sync: 150, empty: 40 });
  else if (mode !== 'answer') rates[mode] = 1000;
  else if (rng.chance(0.3)) Object.assign(rates, { sync: 300, huge: 100 });
  return { rates, delayMs: rng.range(1, 30) };
}

function preCompactSpec(rng) {
  if (rng.chance(0.75)) return null;
  return { cancel: rng.pick([0, 300, 700, 1000]), customSummary: rng.pick([0, 200]), instructions: rng.pick([0, 300]), throws: rng.pick([0, 0, 0, 50]) };
}

function storeSpec(rng) {
  const spec = { writeIf: rng.chance(0.8), faults: [] };
  if (rng.chance(0.55)) return spec;
  for (let i = rng.range(1, 3); i > 0; i--) {
    const path = rng.weighted([[4, 'offload'], [3, 'transcript'], [3, 'lease'], [2, 'state'], [1, 'any']]);
    const op = rng.weighted([[5, 'write'], [2, 'read'], [2, 'writeIf'], [1, 'list'], [1, 'any']]);
    // A hang of a call the compactor does not bound (everything but the lease) holds the call:
    // rarer, since each such case waits out the watchdog.
    const hangWeight = path === 'lease' ? 2 : 0.12;
    const mode = rng.weighted([[4, 'reject'], [3, 'throw'], [hangWeight, 'hang'], [2, 'slow'], [op === 'writeIf' ? 3 : 0, 'refuse']]);
    spec.faults.push({ path, op, mode, rate: rng.pick([1000, 500, 250]), salt: rng.u32() % 1000 });
  }
  return spec;
}

// ---------------------------------------------------------------------------------------------
// Cases.

export function generate(seed) {
  const rng = new Rng(seed);
  const kind = rng.weighted([[72, 'conversation'], [18, 'agent'], [10, 'malformed']]);
  const bias = rng.weighted([[3, 0], [3, 1], [1, 2]]);
  const tools = rng.chance(0.5) ? TOOLS : TOOLS.slice(0, rng.range(1, TOOLS.length));
  const options = compactorOptions(rng);
  const summarizer = summarizerSpec(rng);
  const timeout = summarizer && (summarizer.rates.hang || summarizer.rates.slow) ? rng.pick([300, 500, 800]) : rng.pick([500, 1_500, 3_000]);
  options.summarizeTimeoutMs = timeout;
  const preCompact = preCompactSpec(rng);
  const store = storeSpec(rng);
  // A store call that never answers counts as failed after `storeTimeoutMs` (default 10 s).
  // (Its own stream, so the rest of the case is what the seed made before this option existed.)
  const own = new Rng(`${seed}:storeTimeoutMs`);
  if (store.faults.some((f) => f.mode === 'hang') || own.chance(0.1)) options.storeTimeoutMs = own.pick([200, 500, 1_000]);
  const spec = { v: SPEC_VERSION, seed: String(seed), kind, options, summarizer, preCompact, store };
  if (kind === 'conversation') {
    const turns = conversation(rng, { turns: rng.weighted([[2, 1], [3, 2], [4, 4], [3, 6], [1, 10]]), bias, tools });
    spec.turns = turns;
    spec.ops = turns.map(() => rng.weighted([[16, 'manage'], [2, 'compact'], [1, { compact: sentence(rng, 6) }]]));
    // Streams of their own (the cases above stay as they were): a turn the provider refused
    // (`recover`, counting a factor of the compactor's count), and the provider's usage after a
    // turn (`observeUsage`, then `saveState` where the state is kept), so calibration moves.
    const provider = new Rng(`${seed}:provider`);
    spec.ops = spec.ops.map((op) => (op === 'manage' && provider.chance(0.1) ? { recover: provider.pick([1.05, 1.3, 2]) } : op));
    spec.usage = turns.map(() => (provider.chance(0.25) ? provider.pick([0.9, 1.1, 1.4]) : null));
    const shapes = ['long'];
    if (rng.chance(0.8)) shapes.push('stateless');
    if (rng.chance(0.8)) shapes.push('fresh');
    if (rng.chance(0.5)) shapes.push('managed');
    if (rng.chance(0.35)) shapes.push('rerun');
    spec.shapes = shapes;
  } else if (kind === 'agent') {
    spec.turns = conversation(rng, { turns: rng.weighted([[3, 1], [3, 2], [2, 4]]), bias, tools });
    // The loop starts from a user message: drop an in-flight call at the end.
    const last = spec.turns.at(-1);
    const tail = last.at(-1);
    if (tail.role === 'assistant' && Array.isArray(tail.content) && tail.content.some((p) => p.type === 'tool-call')) last.pop();
    last.push({ role: 'user', content: text(rng, 'small') });
    const ids = new Ids(rng);
    const steps = [];
    for (let s = rng.range(1, 7); s > 0; s--) {
      const calls = Array.from({ length: rng.weighted([[5, 1], [2, 2], [1, 3]]) }, () => {
        const toolName = rng.pick(tools.filter((t) => !['read_file', 'grep', 'ls'].includes(t)).concat(['search']));
        const kindOfOutput = rng.weighted([[4, 'text'], [4, 'json'], [1, 'huge']]);
        const output = kindOfOutput === 'text' ? text(rng, rng.weighted([[3, 'small'], [2, 'medium'], [3, 'large']])) : kindOfOutput === 'json' ? jsonOutput(rng, rng.pick(['small', 'large'])) : text(rng, 'huge');
        return { toolCallId: ids.next(toolName), toolName, input: toolInput(rng, toolName, 0), output };
      });
      steps.push({ calls, inputTokensFactor: rng.pick([0, 1, 1.1, 1.5]) });
    }
    steps.push({ text: sentence(rng, 8) });
    spec.agent = {
      steps,
      wrapTools: rng.weighted([[2, 'all'], [1, 'none'], [1, 'some']]),
      instructions: rng.weighted([[3, 'string'], [1, 'messages'], [1, 'none']]),
      instructionsText: text(rng, 'small'),
      onStepFinish: rng.chance(0.7),
    };
  } else {
    spec.turns = conversation(rng, { turns: rng.range(1, 3), bias: 0, tools });
    spec.malformed = malformation(rng, spec.turns.flat().length);
    spec.entries = ['usage', 'plan', 'manage', 'compact', 'prepareStep'].filter(() => rng.chance(0.7));
    if (spec.entries.length === 0) spec.entries = ['manage'];
  }
  return spec;
}

/** One way to break a valid conversation (applied by case.mjs `malform`). */
function malformation(rng, length) {
  const at = rng.int(Math.max(1, length));
  const kind = rng.pick([
    'role-unknown', 'role-missing', 'role-number', 'content-number', 'content-null', 'content-object', 'content-missing',
    'part-null', 'part-no-type', 'part-type-number', 'part-string', 'call-no-id', 'call-id-number', 'call-no-name',
    'result-orphan', 'result-no-output', 'output-value-number', 'output-unknown-type', 'content-output-not-array',
    'message-null', 'message-string', 'message-array', 'messages-null', 'messages-object', 'messages-string',
    'messages-number', 'messages-undefined', 'bigint', 'cycle', 'deep-200', 'deep-10000', 'throwing-getter',
    'nan-number', 'unknown-part', 'function-value', 'symbol-value', 'sparse-array', 'result-in-user',
    'call-in-user', 'huge-id', 'proto-key', 'date-value', 'text-not-string', 'image-number',
  ]);
  return { at, kind, seed: rng.u32() };
}
