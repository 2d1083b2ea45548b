// Re-read accounting (issue 34, item 1). The arena replays recorded actions, so a contender that
// hid an output early would look cheaper than it is: the recorded agent never pays for the read it
// would have needed. This module finds, from the session alone, the earlier tool outputs each
// model step used (`detectUses`), and prices what a contender would have paid to read them back
// (`account`), from what its prompts held (`visible`).
//
// A step *uses* an earlier tool output when
//   - quote: a fragment of its tool inputs or text — a trimmed line, or a quoted string inside a
//     line — of at least MIN_QUOTE characters (with a word of 4 letters and a space: not a bare
//     path or identifier) occurs in that output, and the latest earlier message holding it is that
//     output (not the agent's own earlier call, which it wrote itself, nor a user message);
//   - after a read: it is the step right after a file read (a read tool, or `cat`/`sed -n`/`head`/
//     `tail`/`nl`/`grep`/`awk` on a file) and quotes that read with a fragment of at least
//     MIN_NEXT characters, or edits the file it read without quoting it (an edit by line number,
//     say): then it needs the whole read.
// The needed part is the fragments found (or the whole output). A use is met when every needed
// fragment is in the call's prompt (as is, or JSON-escaped in a tool call's input) — wherever it
// came from — or in a page the contender re-read earlier and still holds.
//
// A use that is not met costs a *re-read* if the contender keeps the output in a store (its
// offload store, DeepAgents' state files, a Strands stash entry it was given the reference to): a
// tool round trip — the agent's extra call (its prompt read from the cache) and a
// `read_file(path, offset, limit)` call + result of one page (`page`), written into the cache at
// that call and read from it at every later call until the contender's prompt changes at or before
// the place it went (it compacted it away). Otherwise it is a *loss*: the content is out of reach.
import { callText, outputValue, promptContains, resultText } from './prompt.mjs';

/** A quote's minimum length (characters, trimmed). */
export const MIN_QUOTE = 25;
/** The minimum length of a quote of the read just before (the "after a read" rule). */
export const MIN_NEXT = 12;
/** A re-read page: PAGE_LINES lines from PAGE_BEFORE lines before the first needed line (widened
 * to the last needed line), at most PAGE_CHARS characters around the needed part. */
export const PAGE_LINES = 100;
export const PAGE_BEFORE = 10;
export const PAGE_CHARS = 12_000;
/** At most this many fragments per use are checked (the first ones, in the step's order). */
export const MAX_FRAGMENTS = 40;

const READ_TOOLS = new Set(['read_file', 'open_file', 'view_file', 'cat', 'Read']);
const EDIT_TOOLS = new Set(['edit_file', 'replace_in_file', 'str_replace_editor', 'str_replace_based_edit_tool', 'Edit', 'MultiEdit', 'NotebookEdit']);
const PATH_KEYS = ['path', 'file_path', 'filePath', 'filename', 'notebook_path'];
const SHELL_TOOLS = new Set(['bash', 'Bash', 'run_command', 'shell', 'execute', 'run_shell_command']);
const SHELL_READS = /^(cat|head|tail|nl|less|more|sed|awk|grep)$/;

/** Whether `s` can be a quote: long enough, with a word of 4 letters and (a quote of any earlier
 * output) two tokens, not a bare path or identifier. */
export function distinctive(s, min = MIN_QUOTE, tokens = true) {
  return s.length >= min && /[A-Za-z_]{4}/.test(s) && (!tokens || /\S\s+\S/.test(s));
}

/** Every string in a tool call's input (values, recursively; keys left out). */
function strings(value, out = []) {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value && typeof value === 'object') for (const v of Object.values(value)) strings(v, out);
  return out;
}

const QUOTED = /"((?:[^"\\\n]|\\.){12,})"|'([^'\n]{12,})'|`([^`\n]{12,})`/g;
/** A `sed` substitution's pattern: `s/old/new/`, `s|old|new|`, `s#old#new#`. */
const SED = /(?:^|[\s';"])s([/|#])((?:\\.|(?!\1)[^\n])+)\1/g;

/** The candidate fragments of a text: its trimmed lines, the quoted strings inside them
 * (`"…"` with `\"` unescaped, `'…'`, `` `…` ``) and the patterns of `sed` substitutions in them
 * (backslashes removed), in order, without repeats. */
export function fragmentsOf(text) {
  const out = new Set();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line) out.add(line);
    for (const m of line.matchAll(QUOTED)) {
      const q = (m[1] !== undefined ? m[1].replace(/\\(["\\])/g, '$1') : (m[2] ?? m[3])).trim();
      if (q && q !== line) out.add(q);
    }
    for (const m of line.matchAll(SED)) {
      const q = m[2].replace(/\\(.)/g, '$1').trim();
      if (q && q !== line) out.add(q);
    }
  }
  return [...out];
}

/** A rough shell split of one command segment (quotes kept together, not unescaped). */
function words(segment) {
  return segment.match(/"(?:[^"\\]|\\.)*"|'[^']*'|\S+/g) ?? [];
}

const looksLikePath = (w) => !/^["'-]/.test(w) && /[\w-]\.[A-Za-z0-9]+$|\//.test(w) && !/[|<>;&$*]/.test(w);

/** The file a shell command reads (`cat f`, `sed -n '1,20p' f`, `grep -n x f`, `head f`, …), or
 * undefined: the last such segment's last path-like argument. A redirect makes it a write. */
export function shellRead(command) {
  let path;
  for (const segment of command.split(/&&|\|\||;|\n|\|/)) {
    const w = words(segment.trim());
    if (!w.length || !SHELL_READS.test(w[0]) || /(^|\s)>{1,2}\s*\S/.test(segment)) continue;
    if (w[0] === 'sed' && !w.includes('-n')) continue;
    if (w[0] === 'grep' && w.some((x) => /^-\w*r/.test(x))) continue;
    const args = w.slice(1).filter((x) => !x.startsWith('-'));
    const last = args.at(-1);
    if (last && looksLikePath(last) && (w[0] === 'cat' || w[0] === 'nl' || w[0] === 'head' || w[0] === 'tail' || w[0] === 'less' || w[0] === 'more' || args.length >= 2)) path = last;
  }
  return path;
}

/** Whether a shell command edits `path` in place (`sed -i`, `perl -i`): an edit that needs the
 * file's current lines. A redirect, `tee` or a script overwrites or appends and needs none (a
 * script that replaces text quotes it, which the fragments catch). */
export function shellEdits(command, path) {
  return command.split(/&&|\|\||;|\n/).some((s) => /\b(sed\s+(-\w+\s+)*-i|perl\s+-\w*i)/.test(s) && s.includes(path));
}

const pathOf = (input) => PATH_KEYS.map((k) => input?.[k]).find((v) => typeof v === 'string');
const samePath = (a, b) => a === b || a.endsWith(`/${b}`) || b.endsWith(`/${a}`);

/** The file a tool call reads, or undefined. */
export function readOf(call) {
  if (READ_TOOLS.has(call.toolName)) return pathOf(call.input);
  if (SHELL_TOOLS.has(call.toolName) && typeof call.input?.command === 'string') return shellRead(call.input.command);
  return undefined;
}

/** Whether a tool call edits `path`. */
export function editsPath(call, path) {
  if (EDIT_TOOLS.has(call.toolName)) {
    const p = pathOf(call.input);
    return typeof p === 'string' && samePath(p, path);
  }
  if (SHELL_TOOLS.has(call.toolName) && typeof call.input?.command === 'string') return shellEdits(call.input.command, path);
  return false;
}

/** The last index of ascending `starts` whose value is at most `pos` (0 if none). */
function floorIndex(starts, pos) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function textOf(content) {
  if (typeof content === 'string') return content;
  return content
    .map((p) => (p.type === 'text' || p.type === 'reasoning' ? p.text : p.type === 'tool-call' ? strings(p.input).join('\n') : ''))
    .join('\n');
}

/**
 * `Map<stepIndex, Use[]>`: for each assistant message (by its index in `session.messages`), the
 * earlier tool outputs it used. A use is `{ step, source, sourceIndex, tool, output, fragments,
 * whole, rule }`: `source` the tool call id of the output, `sourceIndex` its tool message,
 * `fragments` the needed text (empty when `whole`: the whole output is needed), `rule` `quote`
 * or `after-read`.
 */
export function detectUses(session) {
  const { messages } = session;
  // One searchable text per segment: the system prompt, then each message (a tool message one
  // segment per result), so that `lastIndexOf` finds the latest earlier holder of a fragment.
  const segments = [{ index: -1, text: session.system ?? '' }];
  const calls = new Map();
  messages.forEach((m, index) => {
    if (m.role === 'tool') for (const p of m.content) segments.push({ index, source: p.toolCallId, text: outputValue(p.output) });
    else segments.push({ index, text: textOf(m.content) });
    if (m.role === 'assistant' && Array.isArray(m.content)) for (const p of m.content) if (p.type === 'tool-call') calls.set(p.toolCallId, p);
  });
  const starts = [];
  let all = '';
  // What the agent did not learn from a tool: the system prompt, the user's messages and its own
  // earlier steps. A fragment found there first is not a use of an output.
  const ownStarts = new Map();
  let own = '';
  for (const s of segments) {
    starts.push(all.length);
    all += s.text + '\u0000';
    if (s.source === undefined) {
      if (!ownStarts.has(s.index)) ownStarts.set(s.index, own.length);
      // and as a shell would read it (`python -c "print(\"x\")"` wrote `print("x")`)
      const unescaped = s.text.replace(/\\(["'`$\\])/g, '$1');
      own += s.text + '\u0000' + (unescaped === s.text ? '' : unescaped + '\u0000');
    }
  }
  const firstSegment = new Map();
  segments.forEach((s, k) => {
    if (!firstSegment.has(s.index)) firstSegment.set(s.index, k);
  });
  const segmentAt = (pos) => floorIndex(starts, pos);
  const uses = new Map();
  messages.forEach((m, j) => {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) return;
    const before = starts[firstSegment.get(j)];
    const ownBefore = ownStarts.get(j);
    const given = (f) => {
      const at = own.indexOf(f);
      return at >= 0 && at + f.length < ownBefore;
    };
    const fragments = fragmentsOf(textOf(m.content));
    const found = new Map(); // source → use
    const add = (seg, fragment, rule) => {
      let use = found.get(seg.source);
      if (!use) {
        const call = calls.get(seg.source);
        use = { step: j, source: seg.source, sourceIndex: seg.index, tool: call?.toolName, output: seg.text, fragments: [], whole: false, rule };
        found.set(seg.source, use);
      }
      if (use.fragments.length < MAX_FRAGMENTS && !use.fragments.includes(fragment)) use.fragments.push(fragment);
    };
    // The reads answered just before this step (the tool message right before it).
    const reads = [];
    const previous = messages[j - 1];
    if (previous?.role === 'tool') {
      for (const p of previous.content) {
        const call = calls.get(p.toolCallId);
        const path = call && readOf(call);
        if (path) reads.push({ source: p.toolCallId, index: j - 1, path, text: outputValue(p.output) });
      }
    }
    for (const f of fragments) {
      if (!distinctive(f, MIN_NEXT, false)) continue;
      // Right after a read, what the step quotes of it comes from it, whoever wrote it first.
      const fromRead = reads.filter((r) => r.text.includes(f));
      for (const r of fromRead) add({ index: r.index, source: r.source, text: r.text }, f, 'after-read');
      if (fromRead.length || !distinctive(f, MIN_QUOTE)) continue;
      const pos = all.lastIndexOf(f, before - f.length - 1);
      if (pos < 0) continue;
      const seg = segments[segmentAt(pos)];
      if (seg.source !== undefined && !given(f)) add(seg, f, 'quote');
    }
    // An edit of the file just read that quotes none of it: it needs the whole read.
    for (const r of reads) {
      if (found.has(r.source)) continue;
      if (m.content.some((p) => p.type === 'tool-call' && editsPath(p, r.path))) {
        const call = calls.get(r.source);
        found.set(r.source, { step: j, source: r.source, sourceIndex: r.index, tool: call?.toolName, output: r.text, fragments: [], whole: true, rule: 'after-read' });
      }
    }
    if (found.size) uses.set(j, [...found.values()]);
  });
  return uses;
}

/** Whether `text` is in the prompt as it is or JSON-escaped (inside a tool call's input). */
function inPrompt(prompt, text) {
  return promptContains(prompt, text) || promptContains(prompt, JSON.stringify(text).slice(1, -1));
}

/** Whether a use's needed part is in `prompt`: the whole output, or every needed fragment. */
export function visible(prompt, use) {
  if (promptContains(prompt, use.output)) return true;
  if (use.whole) return false;
  return use.fragments.every((f) => inPrompt(prompt, f));
}

/** The lines of the output a whole use needs checked in a store (its distinctive lines, ≤ 20). */
function wholeProbe(use) {
  const lines = use.output.split('\n').map((l) => l.trim()).filter((l) => distinctive(l, MIN_NEXT));
  return lines.length ? lines.slice(0, 20) : [use.output];
}

/** Whether the contender's store can give the needed part back (`stored(text)` searches it). */
export function recoverable(use, stored) {
  const has = (t) => stored(t) || stored(JSON.stringify(t).slice(1, -1));
  return (use.whole ? wholeProbe(use) : use.fragments).every(has);
}

/**
 * The page a `read_file(path, offset, limit)` over the stored copy returns for a use:
 * `{ offset, limit, text }` (offset and limit in lines).
 */
export function page(use) {
  const out = use.output;
  const lines = out.split('\n');
  const lineStarts = [];
  let at = 0;
  for (const l of lines) {
    lineStarts.push(at);
    at += l.length + 1;
  }
  const lineOf = (pos) => floorIndex(lineStarts, pos);
  const spans = use.whole ? [] : use.fragments.map((f) => [out.indexOf(f), f.length]).filter(([p]) => p >= 0);
  const first = spans.length ? Math.min(...spans.map(([p]) => p)) : 0;
  const last = spans.length ? Math.max(...spans.map(([p, n]) => p + n)) : 0;
  const offset = spans.length ? Math.max(0, lineOf(first) - PAGE_BEFORE) : 0;
  const end = Math.min(lines.length, Math.max(offset + PAGE_LINES, spans.length ? lineOf(last) + 1 : 0));
  let text = lines.slice(offset, end).join('\n');
  if (text.length > PAGE_CHARS) {
    const base = lineStarts[offset];
    const from = spans.length ? Math.max(0, first - base - 1000) : 0;
    const to = Math.max(from + PAGE_CHARS, spans.length ? last - base : 0);
    text = text.slice(from, to);
  }
  return { offset, limit: end - offset, text };
}

/** The round trip of re-reading one use as prompt pieces: the agent's `read_file` call and its
 * result (what the re-read adds to the prompt). */
export function roundTrip(use, n) {
  const p = page(use);
  const id = `reread-${n}`;
  return { page: p, pieces: [`assistant\n${callText(id, 'read_file', { path: `/reread/${use.source}`, offset: p.offset, limit: p.limit })}`, `tool\n${resultText(id, p.text)}`] };
}

/**
 * Prices the re-reads of one run. `calls`: every main-model call in order, `{ step, tokens,
 * pieces, common, cold, uses: [{ use, visible }] }` (`pieces` the prompt's piece count, `common` how
 * many leading pieces it shares with the previous call's, `cold` whether the call found the cache
 * expired (metrics.mjs CACHE_LIFETIME_S: pages carried are written again, not read), `visible`
 * whether the use's needed part was in this prompt). A call followed by a call for the same step was rejected and retried: only
 * the retry is checked. `stored(text)`: whether the contender's store holds the text.
 * `count(text)`: tokens of a piece. Returns `{ uses, rereads, rereadCost, losses, rereadCalls,
 * lost }` (`uses` checked, in the calls that went through).
 */
export function account(calls, { stored, count, read = 0.1, write = 1.25 }) {
  let active = []; // { at, tokens, texts }
  let rereads = 0;
  let losses = 0;
  let uses = 0;
  let cost = 0;
  const rereadCalls = [];
  const lost = [];
  calls.forEach((c, i) => {
    if (i > 0) active = active.filter((a) => c.common >= a.at);
    const carried = active.reduce((n, a) => n + a.tokens, 0);
    cost += (c.cold ? write : read) * carried;
    const retried = i + 1 < calls.length && calls[i + 1].step === c.step;
    if (retried || !c.uses?.length) return;
    uses += c.uses.length;
    const needed = c.uses.filter(({ use, visible }) => !visible && !active.some((a) => covers(a.texts, use)));
    let tokens = 0;
    const texts = [];
    for (const { use } of needed) {
      if (!recoverable(use, stored)) {
        losses++;
        lost.push({ call: i + 1, step: c.step, source: use.source });
        continue;
      }
      const trip = roundTrip(use, ++rereads);
      tokens += trip.pieces.reduce((n, p) => n + count(p), 0);
      texts.push(trip.page.text);
    }
    if (!texts.length) return;
    // The extra call (this prompt, read from the cache) asks for the pages; this call then writes them.
    cost += read * (c.tokens + carried) + write * tokens;
    rereadCalls.push({ call: i + 1, step: c.step, rereads: texts.length, tokens });
    active.push({ at: c.pieces, tokens, texts });
  });
  return { uses, rereads, rereadCost: Math.round(cost), losses, rereadCalls, lost };
}

/** Whether pages already re-read hold a use's needed part. */
function covers(texts, use) {
  if (use.whole) return texts.some((t) => t === page(use).text);
  return use.fragments.every((f) => texts.some((t) => t.includes(f)));
}

export { inPrompt };
