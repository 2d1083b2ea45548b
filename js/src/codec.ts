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
// exact. The originals stay here, host-side, beside the refs of the same conversation, in two
// forms: each message holding a lone surrogate by its JSON as the core writes it back (U+FFFD in
// place of each lone surrogate), and each such string by its U+FFFD form. A message the core
// hands back unchanged is the app's own object again (messages that look alike that way, or
// hold a real U+FFFD, pair up in order); in a changed message, in a plan's store content and in
// a transcript, each string gets its original back. So the app sees and stores exactly the
// strings it passed in.
// Why this way rather than a private escape the core would understand: the core stays a plain
// UTF-8 JSON processor with one documented rule (lone surrogate → U+FFFD) that native callers
// share; no marker can collide with real text inside the core, and valid input pays one
// `includes` over the JSON. The limit: outside unchanged messages, strings are recognized by
// their U+FFFD form, so two that share it (`"a\ud83d"` and `"a\ude00"`, or a real `"a\ufffd"`
// beside `"a\ud83d"`) both stay in that form rather than risk the wrong original.
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
}

/** What the host keeps of a conversation's strings holding lone surrogates (see above), per
 * conversation (its refs list): each such message by its JSON as the core will write it back
 * (U+FFFD in place of each lone surrogate), and each such string by its U+FFFD form (null: two
 * originals share it, so neither can be told from it). */
interface Kept {
  /** In conversation order: identical messages differing only in their lone surrogates share
   * one key. */
  messages: Map<string, unknown[]>;
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
export function encode(messages: unknown, refs: Refs = new Map(), first = 0): Encoded {
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
  // JSON.stringify escapes lone surrogates (and only them) as `\udXXX`. Rare, so only then (or
  // when the conversation had some and this part has a real U+FFFD) is each message written
  // again, alone (the same text, placeholders numbered the same), to keep the ones holding lone
  // surrogates, and those holding a real U+FFFD beside them: both come back from the core with
  // U+FFFD, so both are kept to be told apart by their order.
  const lone = json.includes('\\ud');
  const real = json.includes('\ufffd') && (lone || originals.has(refs));
  if (Array.isArray(messages) && (lone || real)) {
    let kept = originals.get(refs);
    if (!kept) originals.set(refs, (kept = { messages: new Map(), strings: new Map(), real: new Set() }));
    const same = placeholders(); // the same placeholders again (they name content)
    for (const message of messages) {
      const text = JSON.stringify(message, same);
      if (text?.includes('\\ud')) keepOriginals(text, message, kept);
      else if (text?.includes('\ufffd')) keepMessage(kept, text, message);
    }
    // Strings that held a real U+FFFD are set apart from the lone surrogates' U+FFFD forms.
    if (real) keepReal(json, kept);
  }
  return { json, refs };
}

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
  if (!json.includes('\\ud')) return json;
  return json.replace(/(\\*)\\u(d[89a-f][0-9a-f]{2})/g, (match, backslashes: string) => (backslashes.length % 2 === 0 ? `${backslashes}\ufffd` : match));
}

export function decode<T>(json: string, refs: Refs): T {
  const kept = originals.get(refs);
  if (!kept) return parse<T>(json, refs);
  // A message the core did not change is written back exactly as it came in, lone surrogates
  // as U+FFFD: give back the app's own object. Messages that look the same that way pair up in
  // order (the core keeps the order of what it does not change) when all of them came back.
  // The rest gets its strings back one by one.
  const plain = JSON.parse(json) as unknown;
  const list = messagesOf(plain);
  const found = new Map<string, number[]>();
  list?.forEach((message, i) => {
    const text = JSON.stringify(message);
    if (!text.includes('\ufffd') || !kept.messages.has(text)) return;
    const at = found.get(text);
    if (at) at.push(i);
    else found.set(text, [i]);
  });
  const same: [number, unknown][] = [];
  for (const [text, at] of found) {
    const originals = kept.messages.get(text)!;
    if (originals.length === at.length) at.forEach((i, n) => same.push([i, originals[n]]));
  }
  for (const [i] of same) list![i] = null;
  const value = parse<T>(restoreJson(JSON.stringify(plain), kept.strings), refs);
  const restored = messagesOf(value);
  for (const [i, original] of same) restored![i] = original;
  return value;
}

function messagesOf(value: unknown): unknown[] | undefined {
  if (Array.isArray(value)) return value;
  const messages = value !== null && typeof value === 'object' ? (value as { messages?: unknown }).messages : undefined;
  return Array.isArray(messages) ? messages : undefined;
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
 * placeholder as its value's JSON form (see `storable`), and the original strings — JSON files
 * (`.json`: offloaded JSON outputs, transcripts) string by string, text files whole (an
 * offloaded text output) or, for text joined from several strings (a `content` output's items,
 * a Markdown transcript), each original in place of its U+FFFD form. */
export function restoreStored(path: string, content: string, refs: Refs): string {
  if (refs.size > 0 && content.includes(REF_KEY)) content = withStorable(content, refs);
  const kept = originals.get(refs)?.strings;
  if (!kept || !content.includes('\ufffd')) return content;
  if (path.endsWith('.json')) return restoreJson(content, kept);
  const whole = kept.get(content);
  if (typeof whole === 'string') return whole;
  const pairs = [...kept].filter((pair): pair is [string, string] => pair[1] !== null).sort((a, b) => b[0].length - a[0].length);
  for (const [wellFormed, original] of pairs) {
    if (content.includes(wellFormed)) content = content.split(wellFormed).join(original);
  }
  return content;
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

function keepOriginals(json: string, message: unknown, kept: Kept): void {
  const wellFormed: string[] = [];
  let copied = 0;
  for (let at = json.indexOf('\\ud'); at !== -1; ) {
    if (escaped(json, at)) {
      at = json.indexOf('\\ud', at + 1);
      continue;
    }
    const [start, end] = tokenAround(json, at);
    const original = JSON.parse(json.slice(start, end + 1)) as string;
    const replaced = toWellFormed(original);
    wellFormed.push(json.slice(copied, start), JSON.stringify(replaced));
    copied = end + 1;
    if (kept.real.has(replaced)) kept.strings.set(replaced, null);
    else remember(kept.strings, replaced, original);
    at = json.indexOf('\\ud', end + 1);
  }
  wellFormed.push(json.slice(copied));
  keepMessage(kept, wellFormed.join(''), message);
}

function keepMessage(kept: Kept, key: string, message: unknown): void {
  const same = kept.messages.get(key);
  if (same) same.push(message);
  else kept.messages.set(key, [message]);
}

/** Sets apart the strings of `json` holding a real U+FFFD (none of its lone surrogates): a
 * lone surrogate's original must not replace them. */
function keepReal(json: string, kept: Kept): void {
  for (let at = json.indexOf('\ufffd'); at !== -1; ) {
    const [start, end] = tokenAround(json, at);
    const token = json.slice(start, end + 1);
    if (!token.includes('\\ud')) {
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
