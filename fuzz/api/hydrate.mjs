// Spec values → live values (the tags of gen.mjs), fresh copies, and the two JSON views the
// checks compare by: J (the app's view: bytes, URLs and their types kept apart from strings) and
// S (the stored view: bytes as base64, a URL as its href, as the package writes them to a store).
import { linesText } from './gen.mjs';

const TAGS = new Set(['$bytes', '$buffer', '$ab', '$url', '$lines']);

/** A tagged spec value as the app would hold it (new objects on every call). */
export function hydrate(value) {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(hydrate);
  const keys = Object.keys(value);
  if (keys.length === 1 && TAGS.has(keys[0])) {
    const v = value[keys[0]];
    switch (keys[0]) {
      case '$bytes': return new Uint8Array(Buffer.from(v, 'base64'));
      case '$buffer': return Buffer.from(v, 'base64');
      case '$ab': { const b = Buffer.from(v, 'base64'); return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength); }
      case '$url': return new URL(v);
      case '$lines': return linesText(v[0], v[1], v[2]);
    }
  }
  const out = {};
  for (const key of keys) define(out, key, hydrate(value[key]));
  return out;
}

/** `__proto__` as an own key, as JSON.parse makes it. */
function define(object, key, value) {
  if (key === '__proto__') Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}

/** A deep copy with new objects everywhere, as a host that reloads its history would hand in:
 * structuredClone semantics, but a URL stays a URL (structuredClone turns one into `{}` in Node
 * 20) and a Buffer a Buffer (structuredClone makes it a plain Uint8Array). */
export function freshCopy(value) {
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof URL) return new URL(value.href);
  if (Buffer.isBuffer(value)) return Buffer.from(value);
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (value instanceof ArrayBuffer) return value.slice(0);
  if (ArrayBuffer.isView(value)) return structuredClone(value);
  if (value instanceof Date) return new Date(value.getTime());
  if (Array.isArray(value)) return value.map(freshCopy);
  const out = {};
  for (const key of Object.keys(value)) define(out, key, freshCopy(value[key]));
  return out;
}

function bytesOf(value) {
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
}
const isBinary = (v) => v instanceof ArrayBuffer || ArrayBuffer.isView(v);

/** J: the app's view of a value, as JSON text: binary values and URLs tagged with their type. */
export function J(value) {
  return JSON.stringify(value, function (key, v) {
    const original = key === '' ? v : this[key];
    if (isBinary(original)) return { $bin: `${original.constructor?.name}:${Buffer.from(bytesOf(original)).toString('base64')}` };
    if (original instanceof URL) return { $url: original.href };
    return v;
  });
}

/** The replacer of S: what the package stores for a value JSON cannot carry (codec.ts
 * `storable`): bytes as base64, a URL as its href, a date as ISO text. */
export function storableReplacer(key, v) {
  const original = key === '' ? v : this[key];
  if (isBinary(original)) return Buffer.from(bytesOf(original)).toString('base64');
  if (original instanceof URL) return original.href;
  if (original instanceof Date) return Number.isNaN(original.getTime()) ? 'Invalid Date' : original.toISOString();
  return v;
}

export function S(value, indent) {
  return JSON.stringify(value, storableReplacer, indent);
}
