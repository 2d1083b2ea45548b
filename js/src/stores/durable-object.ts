// A Cloudflare Durable Object's transactional storage as a file store (issue 33): what a
// Cloudflare Agent (`agents`' `AIChatAgent`, or any Durable Object) holds its conversation in.
// `import { DurableObjectStore } from 'context-compactor/stores/durable-object'`.
//
// The storage is strongly consistent and the Durable Object runs one request at a time, so
// `writeIf` is an atomic compare-and-set (in one storage transaction): a `statePath` save needs
// no lease server. Values of the key-value storage API are limited (128 KiB each), so a text
// longer than a chunk is stored as chunks under keys apart from the paths (`list` never sees
// them), with the path's own key naming how many there are. Imports nothing from workerd:
// the storage is typed structurally.
import { checkPath, checkPrefix, type FileStore } from '../store.js';

/** The parts of `DurableObjectTransaction` (what `storage.transaction` hands its closure) this
 * store uses. */
export interface DurableObjectTransactionLike {
  get(key: string): Promise<unknown>;
  get(keys: string[]): Promise<Map<string, unknown>>;
  put(entries: Record<string, unknown>): Promise<void>;
  delete(keys: string[]): Promise<number>;
  list(options: { prefix?: string; start?: string; limit?: number }): Promise<Map<string, unknown>>;
}

/** The parts of `DurableObjectStorage` (`ctx.storage`) this store uses: workers-types'
 * `DurableObjectStorage` is one (its transaction is not a storage: it has no `transaction`). */
export interface DurableObjectStorageLike extends DurableObjectTransactionLike {
  transaction<T>(closure: (txn: DurableObjectTransactionLike) => Promise<T>): Promise<T>;
}

export interface DurableObjectStoreOptions {
  /** Prepended to every key: one Durable Object can hold several stores. Default `''`. */
  prefix?: string;
  /** Characters per stored value. Default 32,768 (at most 128 KiB of UTF-32 worst case: within
   * the key-value API's 128 KiB value limit however the text is encoded). */
  chunkChars?: number;
}

/** What a path's key holds: the text, or how many chunks it was split into. */
type Entry = { text: string } | { chunks: number };

const CHUNKS = '\u0001chunks';

export class DurableObjectStore implements FileStore {
  readonly #storage: DurableObjectStorageLike;
  readonly #prefix: string;
  readonly #chunkChars: number;

  constructor(storage: DurableObjectStorageLike, options: DurableObjectStoreOptions = {}) {
    if (storage === null || typeof storage !== 'object' || typeof storage.transaction !== 'function') {
      throw new TypeError('DurableObjectStore: storage must be a Durable Object storage (ctx.storage)');
    }
    const chunkChars = options.chunkChars ?? 32_768;
    if (!Number.isInteger(chunkChars) || chunkChars < 1) throw new TypeError(`DurableObjectStore: chunkChars must be a positive integer, got ${chunkChars}`);
    this.#storage = storage;
    this.#prefix = options.prefix ?? '';
    this.#chunkChars = chunkChars;
  }

  async read(path: string): Promise<string | null> {
    checkPath(path);
    return read(this.#storage, this.#key(path), this.#chunkKeys.bind(this));
  }

  async write(path: string, text: string): Promise<void> {
    checkPath(path);
    await this.#storage.transaction((txn) => this.#put(txn, path, text));
  }

  async writeIf(path: string, expected: string | null, text: string): Promise<boolean> {
    checkPath(path);
    return this.#storage.transaction(async (txn) => {
      const current = await read(txn, this.#key(path), this.#chunkKeys.bind(this));
      if (current !== expected) return false;
      await this.#put(txn, path, text);
      return true;
    });
  }

  async list(prefix: string): Promise<string[]> {
    checkPrefix(prefix);
    const keys = await this.#storage.list({ prefix: this.#key(prefix) });
    return [...keys.keys()].map((k) => k.slice(this.#prefix.length)).sort();
  }

  async delete(path: string): Promise<void> {
    checkPath(path);
    await this.#storage.transaction(async (txn) => {
      const entry = (await txn.get(this.#key(path))) as Entry | undefined;
      const chunks = entry && 'chunks' in entry ? this.#chunkKeys(this.#key(path), entry.chunks) : [];
      await txn.delete([this.#key(path), ...chunks]);
    });
  }

  #key(path: string): string {
    return this.#prefix + path;
  }

  #chunkKeys(key: string, count: number): string[] {
    return Array.from({ length: count }, (_, i) => `${this.#prefix}${CHUNKS}${key.slice(this.#prefix.length)}\u0000${i}`);
  }

  /** Replaces what `path` holds (and its old chunks) with `text`, in `txn`. */
  async #put(txn: DurableObjectTransactionLike, path: string, text: string): Promise<void> {
    const key = this.#key(path);
    const old = (await txn.get(key)) as Entry | undefined;
    const stale = old && 'chunks' in old ? this.#chunkKeys(key, old.chunks) : [];
    if (text.length <= this.#chunkChars) {
      if (stale.length) await txn.delete(stale);
      await txn.put({ [key]: { text } satisfies Entry });
      return;
    }
    const count = Math.ceil(text.length / this.#chunkChars);
    const keys = this.#chunkKeys(key, count);
    if (stale.length > count) await txn.delete(stale.slice(count));
    // A surrogate pair split between chunks is rejoined on read: chunks are kept as JS
    // strings (structured clone), not re-encoded.
    for (let i = 0; i < count; i += 64) {
      const entries: Record<string, unknown> = {};
      for (let j = i; j < Math.min(count, i + 64); j++) entries[keys[j]!] = text.slice(j * this.#chunkChars, (j + 1) * this.#chunkChars);
      await txn.put(entries);
    }
    await txn.put({ [key]: { chunks: count } satisfies Entry });
  }
}

async function read(storage: DurableObjectTransactionLike, key: string, chunkKeys: (key: string, count: number) => string[]): Promise<string | null> {
  const entry = (await storage.get(key)) as Entry | undefined;
  if (entry === undefined || entry === null) return null;
  if ('text' in entry) return entry.text;
  const keys = chunkKeys(key, entry.chunks);
  let text = '';
  for (let i = 0; i < keys.length; i += 128) {
    const batch = await storage.get(keys.slice(i, i + 128));
    for (const k of keys.slice(i, i + 128)) {
      const part = batch.get(k);
      if (typeof part !== 'string') throw new Error(`DurableObjectStore: ${key} is missing chunk ${k.split('\u0000').pop()} of ${entry.chunks}`);
      text += part;
    }
  }
  return text;
}
