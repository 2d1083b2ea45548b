// Messages cross the wasm boundary as JSON. AI SDK messages may hold values JSON cannot carry
// (Uint8Array / ArrayBuffer / Buffer image and file data, URL objects, Dates): those are swapped
// for `{"$ccRef": n}` placeholders on the way in and restored on the way out, so nothing is lost
// or mangled (JSON.stringify would turn a Uint8Array into an object of indices).

const REF_KEY = '$ccRef';

export interface Encoded {
  json: string;
  refs: unknown[];
}

function needsRef(value: unknown): boolean {
  return (
    value instanceof Uint8Array ||
    value instanceof ArrayBuffer ||
    value instanceof URL ||
    value instanceof Date ||
    (typeof ArrayBuffer.isView === 'function' && ArrayBuffer.isView(value))
  );
}

/** `refs`: placeholders continue this list (a conversation synced in pieces shares one). */
export function encode(messages: unknown, refs: unknown[] = []): Encoded {
  const json = JSON.stringify(messages, function (this: Record<string, unknown>, key, value: unknown) {
    // `this[key]` is the value before toJSON() ran (URL, Date and Buffer define toJSON).
    const original = key === '' ? value : this[key];
    if (needsRef(original)) {
      refs.push(original);
      return { [REF_KEY]: refs.length - 1 };
    }
    return value;
  });
  if (json === undefined) throw new TypeError('messages must be an array');
  return { json, refs };
}

export function decode<T>(json: string, refs: unknown[]): T {
  if (refs.length === 0) return JSON.parse(json) as T;
  return JSON.parse(json, (_key, value: unknown) => {
    if (value !== null && typeof value === 'object' && REF_KEY in value) {
      const keys = Object.keys(value);
      const index = (value as Record<string, unknown>)[REF_KEY];
      if (keys.length === 1 && typeof index === 'number' && index < refs.length) return refs[index];
    }
    return value;
  }) as T;
}
