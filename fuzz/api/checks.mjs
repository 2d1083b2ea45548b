// Invariants of one call's output against its input and the store. Each check returns a list
// of violations `{ class, message }`; the classes are listed in README.md.
import { J, S, storableReplacer } from './hydrate.mjs';

// Replacement texts the core writes (src/edit.rs): a replaced part starts with one of them and
// names the stored copy's path.
export const MARKERS = ['[Tool output offloaded: ', '[Older tool result cleared', '[Previously read: ', '[Content written to ', '[Long message text stored: '];
const isReplacement = (text) => typeof text === 'string' && MARKERS.some((m) => text.startsWith(m));

/** A snapshot of a store's files (path → text), read past any fault injection. */
export async function snapshot(store) {
  const files = new Map();
  for (const path of await store.list('/')) files.set(path, await store.read(path));
  return files;
}

// ---------------------------------------------------------------------------------------------
// Differences, classified: numbers, lone surrogates, or other content.

const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
const wellFormed = (s) => (typeof s === 'string' ? s.toWellFormed() : s);
/** JSON text with every lone surrogate escape as U+FFFD (JSON.stringify escapes them). */
const fixEscapes = (json) => json.replace(/\\u(d[89a-f][0-9a-f]{2})/gi, '\ufffd');

/** 'number', 'surrogate' or 'content': what tells `expected` and `actual` apart (texts, or JSON
 * texts of values). */
export function classifyDiff(expected, actual) {
  if (typeof expected !== 'string' || typeof actual !== 'string') return 'content';
  if (expected === actual) return 'content';
  const parse = (json) => {
    try {
      return { value: JSON.parse(json) };
    } catch {
      return undefined;
    }
  };
  const e = parse(expected);
  const a = e && parse(actual);
  if (e && a) return classifyValues(e.value, a.value);
  // Text (a stored text file): a lone surrogate, or numbers written otherwise.
  const we = fixEscapes(wellFormed(expected));
  const wa = fixEscapes(wellFormed(actual));
  if (we === wa) return 'surrogate';
  if (we.replace(NUMBER, '#') === wa.replace(NUMBER, '#')) return 'number';
  return 'content';
}

/** Two JSON values, walked in step: 'number' when every difference is a number (some may also be
 * lone surrogates), 'surrogate' when every one is a string that lost a lone surrogate (or got
 * one), 'order' when the same keys come in another order, else 'content'. */
function classifyValues(e, a) {
  let numbers = 0;
  let surrogates = 0;
  let order = false;
  const walk = (x, y) => {
    if (typeof x === 'number' && typeof y === 'number') {
      if (x !== y || String(x) !== String(y)) numbers++;
      return true;
    }
    if (typeof x === 'string' && typeof y === 'string') {
      if (x !== y) {
        if (x.toWellFormed() !== y.toWellFormed()) return false;
        surrogates++;
      }
      return true;
    }
    if (x === null || y === null || typeof x !== 'object' || typeof y !== 'object') return x === y;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    if (Array.isArray(x)) return x.length === y.length && x.every((v, i) => walk(v, y[i]));
    const xk = Object.keys(x);
    const yk = Object.keys(y);
    if (xk.length !== yk.length) return false;
    if (xk.some((k, i) => k !== yk[i])) {
      const wf = (keys) => keys.map((k) => k.toWellFormed()).sort().join('\u0000');
      if (wf(xk) !== wf(yk)) return false;
      if ([...xk].sort().join('\u0000') === [...yk].sort().join('\u0000')) order = true;
      else surrogates++;
    }
    const ym = new Map(yk.map((k) => [k.toWellFormed(), k]));
    return xk.every((k) => walk(x[k], y[k] !== undefined ? y[k] : y[ym.get(k.toWellFormed())]));
  };
  if (!walk(e, a)) return 'content';
  if (order) return 'order';
  if (numbers > 0) return 'number';
  if (surrogates > 0) return 'surrogate';
  return 'content';
}

/** The first place two texts differ, shown with a little context. */
export function firstDiff(expected, actual) {
  if (typeof expected !== 'string' || typeof actual !== 'string') return `${typeof expected} vs ${typeof actual}`;
  let i = 0;
  while (i < expected.length && i < actual.length && expected[i] === actual[i]) i++;
  const show = (s) => JSON.stringify(s.slice(Math.max(0, i - 30), i + 40));
  return `at ${i}: expected …${show(expected)}… got …${show(actual)}… (lengths ${expected.length}, ${actual.length})`;
}

// ---------------------------------------------------------------------------------------------
// Pairs.

/** Every tool result answers an earlier call and sits in a tool message; every call is
 * answered unless it is in the last message (in flight); approval requests sit with their call,
 * responses follow their request. (tests/invariants.rs `check_pairs`, on the app's shape.) */
export function checkPairs(messages, where) {
  const out = [];
  const calls = new Map();
  const answered = new Set();
  const requests = new Set();
  messages.forEach((m, i) => {
    if (!Array.isArray(m?.content)) return;
    const here = new Set(m.content.filter((p) => p?.type === 'tool-call').map((p) => p.toolCallId));
    m.content.forEach((p, j) => {
      if (p?.type === 'tool-call') {
        if (m.role !== 'assistant') out.push(`tool call ${JSON.stringify(p.toolCallId)} in a ${m.role} message ${i}`);
        calls.set(p.toolCallId, i);
      } else if (p?.type === 'tool-result') {
        if (m.role !== 'tool') out.push(`tool result ${JSON.stringify(p.toolCallId)} in a ${m.role} message ${i}`);
        if (!calls.has(p.toolCallId)) out.push(`orphan tool result ${JSON.stringify(p.toolCallId)} at message ${i} part ${j}`);
        answered.add(p.toolCallId);
      } else if (p?.type === 'tool-approval-request') {
        if (!here.has(p.toolCallId)) out.push(`approval request ${p.approvalId} separated from its call`);
        requests.add(p.approvalId);
      } else if (p?.type === 'tool-approval-response' && !requests.has(p.approvalId)) {
        out.push(`approval response ${p.approvalId} before its request`);
      }
    });
  });
  for (const [id, i] of calls) {
    if (!answered.has(id) && i + 1 !== messages.length) out.push(`tool call ${JSON.stringify(id)} at message ${i} has no result and is not in flight`);
  }
  return out.slice(0, 3).map((message) => ({ class: 'pairs', message: `${where}: ${message}` }));
}

/** Pairs in a LanguageModelV4 prompt (what the provider receives). */
export function checkPromptPairs(prompt, where) {
  const calls = new Set();
  const out = [];
  for (const [i, m] of prompt.entries()) {
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type === 'tool-call') calls.add(p.toolCallId);
      if (p.type === 'tool-result' && !calls.has(p.toolCallId)) out.push({ class: 'pairs', message: `${where}: provider prompt message ${i}: orphan tool result ${JSON.stringify(p.toolCallId)}` });
    }
  }
  return out.slice(0, 3);
}

// ---------------------------------------------------------------------------------------------
// What the store should hold for a part that left.

/** The texts a store may hold for this part's content (src/message.rs `ToolOutput::text`, and
 * docs/API.md "Input the core accepts": a JSON output as `JSON.stringify(value, null, 2)`). */
export function outputForms(output) {
  if (!output || typeof output !== 'object') return [];
  switch (output.type) {
    case 'text':
    case 'error-text':
      return typeof output.value === 'string' ? [output.value] : [];
    case 'json':
    case 'error-json':
      return [JSON.stringify(output.value, storableReplacer, 2)];
    case 'content':
      return Array.isArray(output.value) ? [output.value.filter((item) => typeof item?.text === 'string').map((item) => item.text).join('\n')] : [];
    case 'execution-denied':
      return [typeof output.reason === 'string' ? output.reason : ''];
    default:
      return [];
  }
}

/** A file part's text, as the core reads it (base64, a data: URL or bytes, UTF-8). */
export function fileText(part) {
  const data = part?.data;
  try {
    if (typeof data === 'string') {
      const m = /^data:[^,]*?;base64,(.*)$/s.exec(data);
      return Buffer.from(m ? m[1] : data, 'base64').toString('utf8');
    }
    if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return Buffer.from(data.buffer ?? data, data.byteOffset ?? 0, data.byteLength).toString('utf8');
  } catch {
    return undefined;
  }
  return undefined;
}

/** Whether `text` (a replacement) names a stored file holding one of `expected`; otherwise the
 * violation (classified against the first expected form). */
function verifyStored(text, expected, files, where, ctx) {
  const named = [...files.keys()].filter((path) => text.includes(path));
  if (named.length === 0) return { class: 'kept-content', message: `${where}: replaced by ${JSON.stringify(text.slice(0, 120))}, which names no stored file` };
  if (ctx) ctx.replaced = true;
  for (const path of named) if (expected.includes(files.get(path))) return null;
  if (expected.length === 0) return null; // nothing to compare with (a binary file, a URL)
  const path = named[0];
  const stored = files.get(path);
  const kind = classifyDiff(expected[0], stored);
  // docs/API.md: two outputs alike but for their lone surrogates are stored as one file.
  if (kind === 'surrogate' && ctx?.allForms?.has(stored)) {
    ctx.documented.push(`${where}: ${path} holds another output alike but for its lone surrogates (documented)`);
    return null;
  }
  return { class: kind === 'number' ? 'stored-number' : kind === 'surrogate' ? 'stored-surrogate' : 'stored-copy', message: `${where}: ${path} ${firstDiff(expected[0], stored)}` };
}

// ---------------------------------------------------------------------------------------------
// Kept content and nothing lost.

/** Parts of `o` (output) against `i` (input): null when every difference is a replacement whose
 * stored copy holds the original; else the violation. */
function compareMessage(o, i, files, where, outer) {
  if (o.role !== i.role) return { class: 'kept-content', message: `${where}: role ${i.role} became ${o.role}` };
  // Documented lone-surrogate losses count only inside a message the core changed.
  const ctx = { ...outer, documented: [], replaced: false };
  const v = compareContent(o, i, files, where, ctx);
  if (v) return v;
  if (ctx.documented.length > 0 && !ctx.replaced) return { class: 'kept-surrogate', message: `${where}: a message the core did not change came back with U+FFFD for a lone surrogate (${ctx.documented[0]})` };
  outer?.documented?.push(...ctx.documented);
  return null;
}

function compareContent(o, i, files, where, ctx) {
  const { content: oc, ...orest } = o;
  const { content: ic, ...irest } = i;
  const fields = J(orest) !== J(irest) ? diffViolation('kept', where + ' (message fields)', J(irest), J(orest), ctx) : null;
  if (fields) return fields;
  if (typeof ic === 'string' || typeof oc === 'string') {
    if (typeof ic === 'string' && typeof oc === 'string' && isReplacement(oc)) return verifyStored(oc, [ic], files, where, ctx);
    return diffViolation('kept', where, J(ic), J(oc), ctx);
  }
  if (!Array.isArray(ic) || !Array.isArray(oc) || ic.length !== oc.length) return { class: 'kept-content', message: `${where}: content shape changed (${Array.isArray(ic) ? ic.length : typeof ic} parts → ${Array.isArray(oc) ? oc.length : typeof oc})` };
  for (let k = 0; k < ic.length; k++) {
    const ip = ic[k];
    const op = oc[k];
    const pj = J(ip);
    if (pj === J(op)) continue;
    const at = `${where} part ${k} (${ip?.type})`;
    // Documented lone-surrogate losses count only inside a part the core changed.
    const local = { ...ctx, documented: [], replaced: false };
    const v = comparePart(ip, op, files, at, local);
    if (v) return v;
    if (local.documented.length > 0 && !local.replaced) return { class: 'kept-surrogate', message: `${at}: a part the core did not change came back with U+FFFD for a lone surrogate` };
    ctx.documented.push(...local.documented);
    if (local.replaced) ctx.replaced = true;
  }
  return null;
}

function comparePart(ip, op, files, at, ctx) {
  if (ip?.type === 'file' && op?.type === 'text' && isReplacement(op.text)) {
    const t = fileText(ip);
    return verifyStored(op.text, t === undefined ? [] : [t], files, at, ctx);
  }
  if (!ip || !op || ip.type !== op.type) return { class: 'kept-content', message: `${at}: became ${J(op)?.slice(0, 120)}` };
  if (ip.type === 'tool-result') {
    const { output: io, ...ir } = ip;
    const { output: oo, ...or } = op;
    const fields = J(ir) !== J(or) ? diffViolation('kept', at + ' fields', J(ir), J(or), ctx) : null;
    if (fields) return fields;
    const preview = replacedOutput(io, oo);
    if (preview !== undefined) return verifyStored(preview, outputForms(io), files, at, ctx);
    return diffViolation('kept', at + ' output', J(io), J(oo), ctx);
  }
  if (ip.type === 'tool-call') {
    const { input: ii, ...ir } = ip;
    const { input: oi, ...or } = op;
    const fields = J(ir) !== J(or) ? diffViolation('kept', at + ' fields', J(ir), J(or), ctx) : null;
    if (fields) return fields;
    if (ii && oi && typeof ii === 'object' && typeof oi === 'object' && !Array.isArray(ii) && J(Object.keys(ii)) === J(Object.keys(oi))) {
      for (const key of Object.keys(ii)) {
        if (J(ii[key]) === J(oi[key])) continue;
        if (typeof ii[key] === 'string' && isReplacement(oi[key])) {
          const v = verifyStored(oi[key], [ii[key]], files, `${at} input.${key}`, ctx);
          if (v) return v;
          continue;
        }
        const v = diffViolation('kept', `${at} input.${key}`, J(ii[key]), J(oi[key]), ctx);
        if (v) return v;
      }
      return null;
    }
    return diffViolation('kept', at + ' input', J(ii), J(oi), ctx);
  }
  if (ip.type === 'text' && isReplacement(op.text)) {
    const { text: it, ...ir } = ip;
    const { text: ot, ...or } = op;
    const fields = J(ir) !== J(or) ? diffViolation('kept', at + ' fields', J(ir), J(or), ctx) : null;
    if (fields) return fields;
    return verifyStored(ot, [it], files, at, ctx);
  }
  return diffViolation('kept', at, J(ip), J(op), ctx);
}

/** The preview text when `oo` is `io` replaced as the core replaces an output (src/edit.rs
 * `replacement`): errors stay `error-text`, `content` keeps its non-text items byte for byte,
 * text and JSON become `text`; the output's other fields stay. Otherwise undefined. */
function replacedOutput(io, oo) {
  if (!io || !oo || typeof io !== 'object' || typeof oo !== 'object') return undefined;
  const { type: it, value: iv, ...iextra } = io;
  const { type: ot, value: ov, ...oextra } = oo;
  if (J(iextra) !== J(oextra)) return undefined;
  if (it === 'content') {
    if (ot !== 'content' || !Array.isArray(ov) || !Array.isArray(iv) || ov[0]?.type !== 'text' || Object.keys(ov[0]).length !== 2) return undefined;
    const kept = iv.filter((item) => item?.type !== 'text');
    if (J(ov.slice(1)) !== J(kept)) return undefined;
    return isReplacement(ov[0].text) ? ov[0].text : undefined;
  }
  const want = it === 'error-text' || it === 'error-json' ? 'error-text' : it === 'text' || it === 'json' ? 'text' : undefined;
  if (!want || ot !== want || !isReplacement(ov)) return undefined;
  return ov;
}

/** Pairs of strings that tell two JSON texts apart, walking both values in step (undefined
 * when their shapes differ). */
function differingStrings(expected, actual) {
  const pairs = [];
  const walk = (e, a) => {
    if (typeof e === 'string' && typeof a === 'string') {
      if (e !== a) pairs.push([e, a]);
      return true;
    }
    if (e === null || a === null || typeof e !== 'object' || typeof a !== 'object') return e === a;
    const ek = Object.keys(e);
    const ak = Object.keys(a);
    if (ek.length !== ak.length) return false;
    for (let i = 0; i < ek.length; i++) {
      if (ek[i] !== ak[i]) {
        if (ek[i].toWellFormed() !== ak[i]) return false;
        pairs.push([ek[i], ak[i]]);
      }
      if (!walk(e[ek[i]], a[ak[i]])) return false;
    }
    return true;
  };
  try {
    return walk(JSON.parse(expected), JSON.parse(actual)) ? pairs : undefined;
  } catch {
    return undefined;
  }
}

/** docs/API.md: a string that shares its U+FFFD form with another string of the conversation
 * may keep that form where its place cannot tell them apart (inside a message the core
 * changed). True when every difference is such a string. */
export function documentedSurrogates(expected, actual, collisions) {
  const pairs = differingStrings(expected, actual);
  return pairs !== undefined && pairs.length > 0 && pairs.every(([e, a]) => a === e.toWellFormed() && collisions?.has(a));
}

function diffViolation(prefix, where, expected, actual, ctx) {
  const kind = classifyDiff(expected, actual);
  if (kind === 'surrogate' && documentedSurrogates(expected, actual, ctx?.collisions)) {
    ctx.documented.push(`${where}: a lone surrogate came back as U+FFFD beside a string of the same form (documented)`);
    return null;
  }
  return { class: `${prefix}-${kind}`, message: `${where}: ${firstDiff(expected, actual)}` };
}

/** An inserted summary or notice: names a transcript the store holds. */
function insertedLossy(o, files) {
  const textOf = typeof o.content === 'string' ? o.content : Array.isArray(o.content) ? o.content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('\n') : '';
  return [...files.keys()].some((path) => path.includes('conversation_history') && textOf.includes(path));
}

/** A message's tool call and result ids, in order (the same message as a transcript holds it). */
function toolIds(m) {
  return Array.isArray(m?.content) ? JSON.stringify(m.content.map((p) => p?.toolCallId ?? null)) : '';
}

/** Roughly how alike two messages are (for naming the input message a changed one came from). */
function likeness(o, i, files) {
  if (o?.role !== i?.role) return -1;
  // A replacement naming a stored copy of this very content is the best hint.
  const holds = (text, original) => files !== undefined && isReplacement(text) && typeof original === 'string' && [...files].some(([path, stored]) => text.includes(path) && (stored === original || (stored.length === original.length && stored.toWellFormed() === original.toWellFormed())));
  if (typeof o.content === 'string' || typeof i.content === 'string') return typeof o.content === typeof i.content ? (holds(o.content, i.content) ? 10 : 1) : 0;
  if (!Array.isArray(o.content) || !Array.isArray(i.content)) return 0;
  let n = o.content.length === i.content.length ? 2 : 0;
  for (let k = 0; k < Math.min(o.content.length, i.content.length); k++) {
    const a = o.content[k];
    const b = i.content[k];
    if (a?.type === b?.type) n += 1;
    if (a?.toolCallId !== undefined && a?.toolCallId === b?.toolCallId) n += 3;
    if (J(a) === J(b)) n += 2;
    else if (a?.type === 'text' && holds(a.text, b?.text)) n += 10;
  }
  return n;
}

/**
 * Kept content: each output message is an input message byte for byte (as JSON), or one whose
 * changed parts are replacements naming a stored copy that holds the original, or an inserted
 * summary or notice naming a stored transcript. Nothing lost: each input message missing from
 * the output is held by a stored transcript. `ctx`: { documented: [] , allForms: Set }.
 */
export function checkKept(input, output, files, where, ctx) {
  const violations = [];
  const inJ = input.map((m) => J(m));
  const byJ = new Map();
  inJ.forEach((j, k) => (byJ.has(j) ? byJ.get(j).push(k) : byJ.set(j, [k])));
  const used = new Array(input.length).fill(false);
  let last = -1;
  let reordered = false;
  const take = (list) => {
    const free = list.filter((k) => !used[k]);
    if (free.length === 0) return -1;
    const k = free.find((x) => x > last) ?? free[0];
    if (k < last) reordered = true;
    used[k] = true;
    last = k;
    return k;
  };
  for (const [n, o] of output.entries()) {
    const j = J(o);
    if (byJ.has(j) && take(byJ.get(j)) !== -1) continue;
    // A changed message: the likeliest unused input messages first.
    const candidates = input.map((m, k) => [k, likeness(o, m, files)]).filter(([k, s]) => !used[k] && s >= 0).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    let matched = -1;
    let first;
    let blamed = -1;
    const near = (v) => /-(number|surrogate|order)$/.test(v.class);
    for (const [k] of candidates.slice(0, 12)) {
      const v = compareMessage(o, input[k], files, `${where}: output message ${n} (input ${k})`, ctx);
      if (!v) { matched = k; break; }
      // A near miss (a number or a lone surrogate apart) says more than another message.
      if (!first || (near(v) && !near(first))) { first = v; blamed = k; }
    }
    if (matched !== -1) { take([matched]); continue; }
    if (insertedLossy(o, files)) continue;
    // The input message blamed here is not reported again as lost.
    if (blamed !== -1) used[blamed] = true;
    violations.push(first ?? { class: 'kept-content', message: `${where}: output message ${n} (${o?.role}) matches no input message: ${J(o)?.slice(0, 160)}` });
  }
  if (reordered) violations.push({ class: 'kept-content', message: `${where}: kept messages are out of order` });
  // Nothing lost.
  const missing = input.map((m, k) => [m, k]).filter(([, k]) => !used[k]);
  if (missing.length > 0) {
    const transcripts = [];
    for (const [path, text] of files) {
      if (!path.includes('conversation_history') || !path.endsWith('.json')) continue;
      try {
        transcripts.push(...JSON.parse(text));
      } catch {
        violations.push({ class: 'stored-copy', message: `${where}: transcript ${path} is not JSON` });
      }
    }
    const exact = new Set(transcripts.map((m) => JSON.stringify(m)));
    for (const [m, k] of missing) {
      const s = JSON.parse(S(m));
      if (exact.has(JSON.stringify(s))) continue;
      // Held as it was planned: with earlier edits in place (a preview naming a stored copy
      // that holds the original).
      const quiet = { documented: [], allForms: ctx?.allForms, collisions: ctx?.collisions };
      let near;
      const held = transcripts.some((t) => {
        if (t?.role !== s.role || toolIds(t) !== toolIds(s)) return false;
        const v = compareMessage(t, s, files, `${where}: input message ${k} as a transcript holds it`, quiet);
        if (v && /-(number|surrogate|order)$/.test(v.class)) near ??= v;
        return v === null;
      });
      if (held) continue;
      // Held, but with a number or a lone surrogate changed: a stored copy that is not the input.
      if (near) violations.push({ class: near.class.replace(/^kept-/, 'stored-'), message: near.message });
      else violations.push({ class: 'lost', message: `${where}: input message ${k} (${m.role}) left the conversation and no stored transcript holds it: ${JSON.stringify(s).slice(0, 160)}` });
      break;
    }
  }
  return violations;
}
