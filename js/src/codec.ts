// Messages cross the wasm boundary as JSON. AI SDK messages may hold values JSON cannot carry
// (Uint8Array / ArrayBuffer / Buffer image and file data, URL objects, Dates): those are swapped
// for `{"$ccRef": "<kind>:<hash>"}` placeholders on the way in and restored on the way out, so
// nothing is lost or mangled (JSON.stringify would turn a Uint8Array into an object of
// indices). A placeholder names its value by content (its type and a 64-bit hash of its bytes,
// URL or date), never by the order the host met it: the core fingerprints and names what it
// stores from what it is given, and every host shape — a long-lived compactor, a new one per
// request, fresh objects each call — must give it the same. In what is written to the store (a
// transcript, an offloaded JSON output) each placeholder becomes the value's JSON form (bytes as
// base64, a URL as its string), so the store holds the data itself.
//
// Lone UTF-16 surrogates (a string cut in the middle of an emoji by `slice`, a truncated tool
// output) are the other thing a Rust string cannot hold. `JSON.stringify` writes them as `\ud83d`
// escapes; the core's parser turns each into U+FFFD (src/message.rs `parse_json`), which is what
// the official tiktoken counts (it replaces them the same way before encoding), so counts stay
// exact. The originals stay here, host-side, beside the refs of the same conversation: each
// message holding a lone surrogate (or a real U+FFFD beside them), each of its parts, tool
// outputs, output values and tool-call inputs that holds one, by its JSON as the core writes it
// back (U+FFFD in place of each lone surrogate); each JSON output's value and tool-call input by
// its text as a stored copy or a Markdown transcript shows it; each string by its U+FFFD form.
// What the core did not change it writes back as it came in, so whatever it hands back or stores
// is matched piece by piece, from the largest: such a message, part, output or input is the app's
// own object again, an offloaded JSON output is stored as the app's `JSON.stringify(value, null,
// 2)`, a transcript holds the messages as the app's JSON.stringify writes them. Pieces that look
// alike that way (a lone surrogate beside a real U+FFFD) are told apart by their order, the
// core keeping the order of what it does not change; what is left (a string inside a changed
// message, text joined from several strings) gets each string's original by its U+FFFD form.
// Why this way rather than a private escape the core would understand: the core stays a plain
// UTF-8 JSON processor with one documented rule (lone surrogate → U+FFFD) that native callers
// share; no marker can collide with real text inside the core, and valid input pays one
// `includes` over the JSON. The limits: two strings that share a U+FFFD form (`"a\ud83d"` and
// `"a\ude00"`, or a real `"a\ufffd"` beside `"a\ud83d"`) in pieces that cannot be told apart by
// their place (a part the core changed, text joined from several strings, or two outputs alike
// but for them, which the core names and stores as one file) both stay in that form rather than
// risk the wrong original.
//
// Nesting past MAX_NESTING (and cycles, BigInts, throwing getters: everything JSON.stringify
// refuses) is a typed `invalid_message` naming the message index and the field, found by an
// iterative walk that only runs once JSON.stringify has failed.

import { CompactorError, errorMessage } from './errors.js';

const REF_KEY = '$ccRef';

/** How deep messages may nest arrays and objects, the messages array counting as level 1 (a
 * message object is level 2, a tool-call `input` level 5). The core's limit (src/message.rs
 * `MAX_NESTING`, serde_json's default recursion limit), checked the same way here for what
 * `JSON.stringify` itself cannot serialize. */
export const MAX_NESTING = 127;

/** The values behind a conversation's placeholders, by key. */
export type Refs = Map<string, unknown>;

export interface Encoded {
  json: string;
  refs: Refs;
  /** Whether this JSON holds a lone surrogate (escaped by JSON.stringify); not looked for
   * (undefined) when the caller lets the core's parse say (`keepOriginals`). */
  lone: boolean | undefined;
}

/** What the host keeps of a conversation's lone surrogates (see above), per conversation (its
 * refs list). */
interface Kept {
  /** Each message, part, tool output, output value and tool-call input holding a lone surrogate
   * or a real U+FFFD, by its JSON as the core writes it back (compact, placeholders in, U+FFFD in
   * place of each lone surrogate): its originals in conversation order, the JSON of the first,
   * and whether they all have that JSON (then any of them is the one). */
  nodes: Map<string, { originals: unknown[]; json: string; alike: boolean }>;
  /** The JSON of each JSON output's value as an offloaded copy holds it and a Markdown
   * transcript shows it (pretty-printed), and of each tool-call input as a Markdown transcript
   * shows it (compact), by its U+FFFD form: the original texts in conversation order, and
   * whether they are all one text. */
  blocks: Map<string, { originals: string[]; alike: boolean }>;
  /** Each string holding a lone surrogate, by its U+FFFD form (null: two originals share it, or
   * a string with a real U+FFFD has it, so neither can be told from it). */
  strings: Map<string, string | null>;
  /** Strings that held a real U+FFFD: their form is no lone surrogate's to restore. */
  real: Set<string>;
}
const originals = new WeakMap<Refs, Kept>();

function needsRef(value: unknown): boolean {
  return (
    value instanceof Uint8Array ||
    value instanceof ArrayBuffer ||
    value instanceof URL ||
    value instanceof Date ||
    (typeof ArrayBuffer.isView === 'function' && ArrayBuffer.isView(value))
  );
}

/** `refs`: the placeholders' values join this map (a conversation synced in pieces shares one).
 * `first`: the index of the first message, for errors (a conversation synced from message k). */
export function encode(messages: unknown, refs: Refs = new Map(), first = 0, scan = true): Encoded {
  const added: string[] = [];
  let json: string | undefined;
  try {
    // A replacer takes JSON.stringify off its fast path (measured on the 2,000-message benchmark
    // conversation: 3.4 ms against 2.1, 12.6 against 7.1 on a fresh process's first call): it
    // is only passed when a value needs a placeholder.
    json = mayNeedRefs(messages) ? JSON.stringify(messages, placeholders(refs, added)) : JSON.stringify(messages);
  } catch (error) {
    for (const key of added) refs.delete(key);
    throw Array.isArray(messages) ? failing(messages, first, error) : unserializable(messages, undefined, error);
  }
  if (json === undefined) throw new CompactorError('invalid_messages', `messages: expected an array of messages, got ${typeof messages}`);
  return { json, refs, lone: scan ? keepOriginals(messages, json, refs) : undefined };
}

/**
 * Keeps what `encode`'s JSON of `messages` loses (see the top of this file), and says whether
 * it held a lone surrogate. JSON.stringify escapes lone surrogates (and only them) as `\udXXX`:
 * `lone` says whether the JSON holds one (the core's parse notes it while it splits the text:
 * `surrogateEscapes`), or, undefined, the JSON is searched. Rare, so only then (or when the
 * conversation had some and this part has a real U+FFFD) is each message written again, alone
 * (the same text, placeholders numbered the same), to keep the ones holding lone surrogates, and
 * those holding a real U+FFFD beside them: both come back from the core with U+FFFD, so both are
 * kept to be told apart by their order.
 */
export function keepOriginals(messages: unknown, json: string, refs: Refs, lone: boolean = hasLoneEscape(json)): boolean {
  const real = (lone || originals.has(refs)) && json.includes('\ufffd');
  if (Array.isArray(messages) && (lone || real)) {
    let kept = originals.get(refs);
    if (!kept) originals.set(refs, (kept = { nodes: new Map(), blocks: new Map(), strings: new Map(), real: new Set() }));
    const same = placeholders(); // the same placeholders again (they name content)
    for (const message of messages) {
      const text = JSON.stringify(message, same);
      if (text === undefined || !(text.includes('\\ud') || text.includes('\ufffd'))) continue;
      if (hasLoneEscape(text)) keepStrings(text, kept);
      keepNodes(message, text, same, kept);
    }
    // Strings that held a real U+FFFD are set apart from the lone surrogates' U+FFFD forms.
    if (real) keepReal(json, kept);
  }
  return lone;
}

/** Whether lone surrogates of an earlier `encode` into `refs` are kept (see the top of this
 * file): a conversation synced in pieces must have been encoded whole once the first lone
 * surrogate came, so that the real U+FFFDs of the earlier pieces are kept beside them. */
export function keepsSurrogates(refs: Refs): boolean {
  return originals.has(refs);
}

/** Whether JSON text (as JSON.stringify writes it) escapes a lone surrogate: a `\udXXX` after
 * an even run of backslashes (`\\ud83d` is a backslash then the text `ud83d`). */
function hasLoneEscape(json: string): boolean {
  // A scan for `\\ud` rather than LONE_ESCAPE over the whole text: a regex that may start with a
  // run of backslashes is tried at every offset (a tenth of a stateless request's first `manage`
  // on a long session whose code holds a `\\ud` somewhere, bench/stateless).
  for (let at = json.indexOf('\\ud'); at >= 0; at = json.indexOf('\\ud', at + 1)) {
    const third = json.charCodeAt(at + 3);
    if (!((third >= 0x38 && third <= 0x39) || (third >= 0x61 && third <= 0x66)) || !isHex(json.charCodeAt(at + 4)) || !isHex(json.charCodeAt(at + 5))) continue;
    let start = at;
    while (start > 0 && json.charCodeAt(start - 1) === 0x5c) start--;
    if ((at - start) % 2 === 0) return true;
  }
  return false;
}

/** Whether a UTF-16 code unit is a lowercase hex digit (as JSON.stringify writes `\\uXXXX`). */
function isHex(unit: number): boolean {
  return (unit >= 0x30 && unit <= 0x39) || (unit >= 0x61 && unit <= 0x66);
}

const LONE_ESCAPE = /(\\*)\\u(d[89a-f][0-9a-f]{2})/g;

/** Whether JSON.stringify could meet a value that needs a placeholder in `value`: one is there,
 * or something this walk cannot see through is (a `toJSON` method, which may return one; nesting
 * past MAX_NESTING; a cycle; a getter that throws). `false` only when the placeholders replacer
 * would return every value unchanged. */
function mayNeedRefs(value: unknown): boolean {
  try {
    return refsBelow(value, 0);
  } catch {
    return true;
  }
}

function refsBelow(value: unknown, depth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (needsRef(value) || depth > MAX_NESTING || typeof (value as { toJSON?: unknown }).toJSON === 'function') return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (refsBelow(value[i], depth + 1)) return true;
    return false;
  }
  // Inherited enumerable keys too (JSON.stringify reads own ones only): at worst the replacer runs.
  for (const key in value) if (refsBelow((value as Record<string, unknown>)[key], depth + 1)) return true;
  return false;
}

/** A JSON.stringify replacer swapping ref values for placeholders named by their content (see
 * the top of this file), keeping each value in `refs` (and its new keys in `added`) when given.
 * Two values of the same type and content share a key and come back as the first one met. */
function placeholders(refs?: Refs, added?: string[]) {
  return function (this: Record<string, unknown>, key: string, value: unknown): unknown {
    // `this[key]` is the value before toJSON() ran (URL, Date and Buffer define toJSON).
    const original = key === '' ? value : this[key];
    if (!needsRef(original)) return value;
    const name = refKey(original);
    if (refs && !refs.has(name)) {
      refs.set(name, original);
      added?.push(name);
    }
    return { [REF_KEY]: name };
  };
}

/** A ref value's key: its type and a 64-bit FNV-1a hash of its bytes (a URL's string, a date's
 * time), with the byte length. */
function refKey(value: unknown): string {
  if (value instanceof URL) return `url:${hash64(new TextEncoder().encode(value.href))}`;
  if (value instanceof Date) return `date:${Number.isNaN(value.getTime()) ? 'invalid' : value.toISOString()}`;
  const view = bytesOf(value);
  const kind = value instanceof ArrayBuffer ? 'ArrayBuffer' : (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name || 'bytes';
  return `${kind}:${view.byteLength}:${hash64(view)}`;
}

/** The bytes of an ArrayBuffer or a view on one (a typed array, a Buffer, a DataView). */
function bytesOf(value: unknown): Uint8Array {
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  const view = value as ArrayBufferView;
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** FNV-1a over `bytes` in two 32-bit lanes (different bases), as 16 hex digits. */
function hash64(bytes: Uint8Array): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ bytes.length;
  for (let i = 0; i < bytes.length; i++) {
    a = Math.imul(a ^ bytes[i]!, 0x01000193);
    b = Math.imul(b ^ bytes[i]!, 0x01000193) ^ (b >>> 13);
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0');
}

/** A ref value as JSON can carry it, for the store: bytes as base64 (what the AI SDK accepts for
 * image and file data), a URL as its string, a date as ISO text. */
function storable(value: unknown): string {
  if (value instanceof URL) return value.href;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  const view = bytesOf(value);
  let binary = '';
  for (let i = 0; i < view.length; i += 0x8000) binary += String.fromCharCode(...view.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The typed error naming the first message JSON.stringify refuses. */
function failing(messages: unknown[], first: number, cause: unknown): CompactorError {
  const plain = placeholders();
  for (let i = 0; i < messages.length; i++) {
    try {
      JSON.stringify(messages[i], plain);
    } catch (error) {
      return unserializable(messages[i], first + i, error);
    }
  }
  return new CompactorError('invalid_messages', `messages cannot be serialized as JSON: ${cause instanceof Error ? cause.message : String(cause)}`);
}

/** JSON.stringify for the other values the core parses (config, state, plan options, outcomes,
 * loop state): a lone surrogate there (a summary or a loop iteration cut mid-emoji, a tool
 * description) becomes U+FFFD, as the core does for messages, instead of failing the call. These
 * are the host's own inputs to the core, nothing it hands back to the app, so nothing is kept. */
export function stringify(value: unknown): string {
  const json = JSON.stringify(value) as string;
  return json.includes('\\ud') ? wellFormedJson(json) : json;
}

/** JSON text as JSON.stringify writes it (each lone surrogate escaped as `\udXXX`, and nothing
 * else so) with U+FFFD in place of each lone surrogate: the core's form of the same value. */
function wellFormedJson(json: string): string {
  return json.replace(LONE_ESCAPE, (match, backslashes: string) => (backslashes.length % 2 === 0 ? `${backslashes}\ufffd` : match));
}

export function decode<T>(json: string, refs: Refs): T {
  const kept = originals.get(refs);
  if (!kept || !json.includes('\ufffd')) return parse<T>(json, refs);
  // What the core did not change is written back as it came in, lone surrogates as U+FFFD:
  // each such message, part, output or input is the app's own object again (see restoreTree);
  // the rest gets its strings back one by one.
  const placed = new Set<unknown>();
  return revive(restoreTree(JSON.parse(json) as unknown, kept, placed), refs, placed) as T;
}

/** A call's result as the core sends it (src/bindings/json.rs `as_given`): each message the
 * call left as it was is the index of the app's own object in `given` (not one byte of it
 * changes, and nothing of it was copied or decoded); the others are decoded. */
export function decodeResult<M>(json: string, given: readonly M[], refs: Refs): M[] {
  return decode<unknown[]>(json, refs).map((message) => {
    if (typeof message !== 'number') return message as M;
    if (!(message in given)) throw new CompactorError('internal', `the core's result names message ${message} of ${given.length} given`);
    return given[message]!;
  });
}

function parse<T>(json: string, refs: Refs): T {
  if (refs.size === 0) return JSON.parse(json) as T;
  return JSON.parse(json, (_key, value: unknown) => {
    if (value !== null && typeof value === 'object' && REF_KEY in value) {
      const keys = Object.keys(value);
      const name = (value as Record<string, unknown>)[REF_KEY];
      if (keys.length === 1 && typeof name === 'string' && refs.has(name)) return refs.get(name);
    }
    return value;
  }) as T;
}

/** The content of a store write with the conversation's originals (`refs`) back: each
 * placeholder as its value's JSON form (see `storable`), and the original lone surrogates. An
 * offloaded JSON output (or a `wrapTools` one) is its value's JSON as the app's JSON.stringify
 * writes it; other JSON files (transcripts) get each message, part, output and input the core
 * did not change back whole, then each other string; text files are a text output's original
 * whole or, for text joined from several (a Markdown transcript, a `content` output's items),
 * each JSON output's and tool input's original JSON in place of its U+FFFD form, then each
 * string's original in place of its U+FFFD form (each string set apart from the shorter ones).
 * `wholeOnly`: the content is one string of the app's (restored when it held a lone surrogate)
 * or text the core decoded from bytes (a user's text file), never text joined from several. */
export function restoreStored(path: string, content: string, refs: Refs, wholeOnly = false): string {
  const kept = originals.get(refs);
  if (!kept || !content.includes('\ufffd')) return withRefs(content, refs);
  const block = kept.blocks.get(content);
  if (block?.alike) return withRefs(block.originals[0]!, refs);
  if (path.endsWith('.json')) return withRefs(restoreJsonFile(content, kept) ?? restoreJson(content, kept.strings), refs);
  const text = withRefs(content, refs);
  const whole = kept.strings.get(text);
  if (typeof whole === 'string') return whole;
  // One string of the app's that held a real U+FFFD (no lone surrogate), or text the core
  // decoded from bytes (a user's text file: UTF-8, so no lone surrogate): already the original.
  if ((whole === undefined && kept.real.has(text)) || wholeOnly) return text;
  // The blocks first (longest first; one text, or as many in the text as were kept, in order),
  // then the app's strings (longest first): one that held a lone surrogate becomes its
  // original, one that held a real U+FFFD (or whose form two originals share) stays as it is.
  // Each text found is set apart, so that a shorter string's U+FFFD form inside it (a lone
  // `"x\ud83d"` inside a real `"a x\ufffd b"`) is not taken for that string.
  let pieces: Piece[] = [{ text: content, done: false }];
  const blocks = [...kept.blocks].filter(([wellFormed]) => content.includes(wellFormed)).sort((a, b) => b[0].length - a[0].length);
  for (const [wellFormed, { originals, alike }] of blocks) {
    const count = pieces.reduce((n, piece) => (piece.done ? n : n + piece.text.split(wellFormed).length - 1), 0);
    if (!alike && count !== originals.length) continue;
    let n = 0;
    pieces = setApart(pieces, wellFormed, () => originals[alike ? 0 : n++]!);
  }
  const strings: [string, string][] = [];
  for (const [wellFormed, original] of kept.strings) strings.push([wellFormed, original ?? wellFormed]);
  for (const real of kept.real) if (!kept.strings.has(real)) strings.push([real, real]);
  strings.sort((a, b) => b[0].length - a[0].length);
  for (const [wellFormed, original] of strings) {
    if (content.includes(wellFormed)) pieces = setApart(pieces, wellFormed, () => original);
  }
  return pieces.map((piece) => withRefs(piece.text, refs)).join('');
}

/** A part of a text being restored; `done`: an original, set apart from later passes. */
type Piece = { text: string; done: boolean };

/** `pieces` with each occurrence of `wellFormed` in a piece not done split out as a done piece
 * holding `original()` (called once per occurrence, in order). */
function setApart(pieces: Piece[], wellFormed: string, original: () => string): Piece[] {
  return pieces.flatMap((piece) =>
    piece.done || !piece.text.includes(wellFormed)
      ? [piece]
      : piece.text.split(wellFormed).flatMap((rest, i) => (i === 0 ? [{ text: rest, done: false }] : [{ text: original(), done: true }, { text: rest, done: false }])),
  );
}

function withRefs(content: string, refs: Refs): string {
  return refs.size > 0 && content.includes(REF_KEY) ? withStorable(content, refs) : content;
}

/** A JSON file of the core's (a transcript: the messages pretty-printed) with the originals
 * back (restoreTree), written as the core writes it; undefined when that is not the core's
 * text but for lone surrogates (the core wrote a number or a string otherwise than
 * JSON.stringify does). */
function restoreJsonFile(content: string, kept: Kept): string | undefined {
  let tree: unknown;
  try {
    tree = JSON.parse(content);
  } catch {
    return undefined;
  }
  const out = JSON.stringify(restoreTree(tree, kept, new Set()), placeholders(), /^[[{]\n/.test(content) ? 2 : undefined);
  return out !== undefined && wellFormedJson(out) === content ? out : undefined;
}

/** A holder of a value in a tree, and its key there. */
type Slot = [Record<string | number, unknown>, string | number];

/** How deep the nodes kept whole lie: a part's output value in `{messages: [...]}`. */
const NODE_DEPTH = 6;

/** `root` (the core's JSON, parsed; changed in place) with the originals back, level by level
 * from the top: a node (down to NODE_DEPTH) whose JSON is a kept node's becomes the app's own
 * object — the one when all its originals have one JSON, else in order when as many came back
 * as were kept (the core keeps the order of what it does not change) — and the others are
 * looked into; a string (or key) whose U+FFFD form is kept becomes its original. The nodes
 * placed join `placed`. */
function restoreTree(root: unknown, kept: Kept, placed: Set<unknown>): unknown {
  const top: Record<string, unknown> = { '': root };
  let level: Slot[] = [[top, '']];
  for (let depth = 0; level.length > 0; depth++) {
    const found = new Map<string, Slot[]>();
    const next: Slot[] = [];
    for (const slot of level) {
      const node = slot[0][slot[1]];
      if (typeof node === 'string') {
        const original = node.includes('\ufffd') ? kept.strings.get(node) : undefined;
        if (typeof original === 'string') set(slot, original);
        continue;
      }
      if (node === null || typeof node !== 'object') continue;
      if (depth <= NODE_DEPTH) {
        const text = JSON.stringify(node);
        if (!text.includes('\ufffd')) continue;
        if (kept.nodes.has(text)) {
          const at = found.get(text);
          if (at) at.push(slot);
          else found.set(text, [slot]);
          continue;
        }
      }
      below(node, next, kept);
    }
    for (const [text, slots] of found) {
      const { originals, alike } = kept.nodes.get(text)!;
      if (alike || originals.length === slots.length) {
        slots.forEach((slot, n) => {
          const original = originals[Math.min(n, originals.length - 1)];
          set(slot, original);
          placed.add(original);
        });
      } else {
        for (const [holder, key] of slots) below(holder[key] as object, next, kept);
      }
    }
    level = next;
  }
  return top[''];
}

/** Appends the slots of `node`'s children to `next`, each key whose U+FFFD form is kept
 * restored first (the keys keep their order). */
function below(node: object, next: Slot[], kept: Kept): void {
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) next.push([node as unknown as Record<number, unknown>, i]);
    return;
  }
  const record = node as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.some((key) => key.includes('\ufffd') && typeof kept.strings.get(key) === 'string')) {
    const entries = keys.map((key): [string, unknown] => [kept.strings.get(key) ?? key, record[key]]);
    for (const key of keys) delete record[key];
    for (const [key, value] of entries) set([record, key], value);
  }
  for (const key of Object.keys(record)) next.push([record, key]);
}

/** Sets a slot's value: as an own property (a JSON key may be `__proto__`). */
function set([holder, key]: Slot, value: unknown): void {
  if (Array.isArray(holder)) holder[key as number] = value;
  else Object.defineProperty(holder, key, { value, writable: true, enumerable: true, configurable: true });
}

/** `root` with each placeholder of a known value as that value (what `parse` does), the nodes
 * in `placed` (the app's own) left as they are. */
function revive(root: unknown, refs: Refs, placed: Set<unknown>): unknown {
  if (refs.size === 0) return root;
  const top: Record<string, unknown> = { '': root };
  const todo: Slot[] = [[top, '']];
  while (todo.length > 0) {
    const slot = todo.pop()!;
    const node = slot[0][slot[1]];
    if (node === null || typeof node !== 'object' || placed.has(node)) continue;
    if (REF_KEY in node) {
      const keys = Object.keys(node);
      const name = (node as Record<string, unknown>)[REF_KEY];
      if (keys.length === 1 && typeof name === 'string' && refs.has(name)) {
        set(slot, refs.get(name));
        continue;
      }
    }
    const holder = node as Record<string | number, unknown>;
    for (const key of Array.isArray(node) ? node.keys() : Object.keys(node)) todo.push([holder, key]);
  }
  return top[''];
}

/** `content` with each placeholder of a known value (compact or pretty-printed JSON) as the
 * JSON string of its storable form. */
function withStorable(content: string, refs: Refs): string {
  return content.replace(/\{\s*"\$ccRef"\s*:\s*"([^"\\]+)"\s*\}/g, (match, name: string) => (refs.has(name) ? JSON.stringify(storable(refs.get(name))) : match));
}

/** `String.prototype.toWellFormed` (each lone surrogate → U+FFFD), where the engine lacks it. */
function toWellFormed(text: string): string {
  const native = (text as { toWellFormed?: () => string }).toWellFormed;
  if (typeof native === 'function') return native.call(text);
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

/** Whether the character at `at` is escaped: preceded by an odd run of backslashes. */
function escaped(json: string, at: number): boolean {
  let n = 0;
  while (at - 1 - n >= 0 && json.charCodeAt(at - 1 - n) === 92) n++;
  return n % 2 === 1;
}

/** The bounds [open quote, close quote] of the JSON string token holding position `at`. */
function tokenAround(json: string, at: number): [number, number] {
  let start = at;
  do start = json.lastIndexOf('"', start - 1);
  while (start > 0 && escaped(json, start));
  let end = at;
  do end = json.indexOf('"', end + 1);
  while (end !== -1 && escaped(json, end));
  return [start, end === -1 ? json.length - 1 : end];
}

/** Keeps each string of a message's JSON (`json`) holding a lone surrogate by its U+FFFD form. */
function keepStrings(json: string, kept: Kept): void {
  for (let at = json.indexOf('\\ud'); at !== -1; ) {
    if (escaped(json, at)) {
      at = json.indexOf('\\ud', at + 1);
      continue;
    }
    const [start, end] = tokenAround(json, at);
    const original = JSON.parse(json.slice(start, end + 1)) as string;
    const replaced = toWellFormed(original);
    if (kept.real.has(replaced)) kept.strings.set(replaced, null);
    else remember(kept.strings, replaced, original);
    at = json.indexOf('\\ud', end + 1);
  }
}

/** Keeps a message holding a lone surrogate or a real U+FFFD (`json`: its JSON), and each of its
 * parts, tool outputs, output values and tool-call inputs that holds one, by their U+FFFD form
 * (see Kept): what the core did not change comes back, and is stored, as the app's own. */
function keepNodes(message: unknown, json: string, same: ReturnType<typeof placeholders>, kept: Kept): void {
  const keep = (node: unknown, text = JSON.stringify(node, same) as string | undefined): void => {
    if (node === null || typeof node !== 'object' || text === undefined) return;
    if (!text.includes('\\ud') && !text.includes('\ufffd')) return;
    const key = wellFormedJson(text);
    const entry = kept.nodes.get(key);
    if (!entry) kept.nodes.set(key, { originals: [node], json: text, alike: true });
    else {
      entry.originals.push(node);
      if (entry.json !== text) entry.alike = false;
    }
  };
  const block = (text: string | undefined): void => {
    if (text === undefined || !(text.includes('\\ud') || text.includes('\ufffd'))) return;
    const key = wellFormedJson(text);
    const entry = kept.blocks.get(key);
    if (!entry) kept.blocks.set(key, { originals: [text], alike: true });
    else {
      entry.originals.push(text);
      if (entry.originals[0] !== text) entry.alike = false;
    }
  };
  keep(message, json);
  const content = message !== null && typeof message === 'object' ? (message as { content?: unknown }).content : undefined;
  if (!Array.isArray(content)) return;
  for (const part of content as unknown[]) {
    if (part === null || typeof part !== 'object') continue;
    keep(part);
    const { input, output } = part as { input?: unknown; output?: unknown };
    if (input !== undefined) {
      const text = JSON.stringify(input, same);
      keep(input, text);
      block(text);
    }
    if (output === null || typeof output !== 'object') continue;
    keep(output);
    const { type, value } = output as { type?: unknown; value?: unknown };
    keep(value);
    if (type === 'json' || type === 'error-json') block(JSON.stringify(value, same, 2));
  }
}

/** Sets apart the strings of `json` holding a real U+FFFD (none of its lone surrogates): a
 * lone surrogate's original must not replace them. */
function keepReal(json: string, kept: Kept): void {
  for (let at = json.indexOf('\ufffd'); at !== -1; ) {
    const [start, end] = tokenAround(json, at);
    const token = json.slice(start, end + 1);
    if (!hasLoneEscape(token)) {
      const text = JSON.parse(token) as string;
      kept.real.add(text);
      if (kept.strings.has(text)) kept.strings.set(text, null);
    }
    at = json.indexOf('\ufffd', end + 1);
  }
}

/** Keeps `original` under `key`; a key two different originals share keeps null. */
function remember(map: Map<string, string | null>, key: string, original: string): void {
  const known = map.get(key);
  if (known === undefined) map.set(key, original);
  else if (known !== original) map.set(key, null);
}

/** `json` (as the core writes it: U+FFFD unescaped) with every string whose U+FFFD form is
 * kept replaced by its original. */
function restoreJson(json: string, kept: Map<string, string | null>): string {
  if (kept.size === 0) return json;
  let at = json.indexOf('\ufffd');
  if (at === -1) return json;
  const out: string[] = [];
  let copied = 0;
  while (at !== -1) {
    const [start, end] = tokenAround(json, at);
    let original: string | null | undefined;
    try {
      // Always a string token in the core's JSON; anything else is left as it is.
      original = start >= copied ? kept.get(JSON.parse(json.slice(start, end + 1)) as string) : undefined;
    } catch {
      original = undefined;
    }
    if (typeof original === 'string') {
      out.push(json.slice(copied, start), JSON.stringify(original));
      copied = end + 1;
    }
    at = json.indexOf('\ufffd', end + 1);
  }
  if (copied === 0) return json;
  out.push(json.slice(copied));
  return out.join('');
}

/** The typed error for what JSON.stringify refused (`cause`) in message `index` (undefined:
 * `value` is the whole messages value, not an array): the first value nested past MAX_NESTING,
 * cyclic, a BigInt or throwing, found by an iterative walk in JSON.stringify's order. */
function unserializable(value: unknown, index: number | undefined, cause: unknown): CompactorError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  const fail = (path: (string | number)[], message: string): CompactorError => {
    if (index === undefined) return new CompactorError('invalid_messages', `messages: ${message}`);
    const field = path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
    return new CompactorError('invalid_message', `message ${index}: invalid \`${field}\`: ${message}`, { index, field });
  };
  // A child is read when its turn comes, so a throwing getter is reported at its own path.
  type Item = { holder: Record<string | number, unknown>; key: string | number; path: (string | number)[] } | { exit: object };
  const ancestors = new Set<object>();
  const todo: Item[] = [{ holder: { '': value }, key: '', path: [] }];
  // The messages array is level 1, so a message object is level 2.
  const rootLevel = index === undefined ? 1 : 2;
  while (todo.length > 0) {
    const item = todo.pop()!;
    if ('exit' in item) {
      ancestors.delete(item.exit);
      continue;
    }
    const { path } = item;
    let value: unknown;
    try {
      value = item.holder[item.key];
      if (typeof value === 'bigint') return fail(path, 'a BigInt is not JSON (convert it to a number or a string)');
      if (value === null || typeof value !== 'object' || needsRef(value)) continue;
      const toJSON = (value as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === 'function') {
        value = toJSON.call(value, String(path.at(-1) ?? ''));
        if (typeof value === 'bigint') return fail(path, 'a BigInt is not JSON (convert it to a number or a string)');
        if (value === null || typeof value !== 'object') continue;
      }
      if (ancestors.has(value)) return fail(path, 'a cyclic reference (the value contains itself)');
      if (rootLevel + path.length > MAX_NESTING) {
        return fail(path, `nested deeper than ${MAX_NESTING} levels of arrays and objects (the messages array counting as one); flatten it or send it as a string`);
      }
      ancestors.add(value);
      todo.push({ exit: value });
      const keys = Array.isArray(value) ? Array.from({ length: value.length }, (_, i) => i) : Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!;
        todo.push({ holder: value as Record<string | number, unknown>, key, path: [...path, key] });
      }
    } catch (error) {
      return fail(path, `reading it threw: ${errorMessage(error)}`);
    }
  }
  return fail([], `cannot be serialized as JSON: ${reason}`);
}
