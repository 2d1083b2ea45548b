// Key-value stores (Cloudflare KV and R2, Vercel KV, Deno KV, Redis...) as file stores. The
// adapter interface is four calls; ready-made adapters cover Cloudflare KV and R2 structurally,
// so this file imports nothing from their SDKs.
import { checkPath, checkPrefix, type FileStore } from '../store.js';

type MaybePromise<T> = T | Promise<T>;

/** The four calls a key-value backend must offer. Keys are store paths, with `prefix` prepended. */
export interface KeyValueBackend {
  get(key: string): MaybePromise<string | null | undefined>;
  put(key: string, value: string): MaybePromise<unknown>;
  delete(key: string): MaybePromise<unknown>;
  /** Every key starting with `prefix` (all pages). */
  keys(prefix: string): MaybePromise<string[]>;
  /** Optional: writes `value` only if `key` holds `expected` (`null`: only if absent), atomically,
   * and says whether it did. With it the store has `writeIf` (a `statePath` save's
   * compare-and-set); without it the save reads, compares and writes. */
  putIf?(key: string, expected: string | null, value: string): MaybePromise<boolean>;
}

/** Cloudflare Workers KV, structurally (`env.MY_KV`). */
export interface CloudflareKvNamespace {
  get(key: string, type: 'text'): Promise<string | null>;
  put(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  list(options: { prefix?: string; cursor?: string; limit?: number }): Promise<{ keys: { name: string }[]; list_complete: boolean; cursor?: string }>;
}

/** Cloudflare R2, structurally (`env.MY_BUCKET`). */
export interface R2BucketLike {
  get(key: string): Promise<{ text(): Promise<string>; etag?: string } | null>;
  /** With `onlyIf`, R2 answers `null` when the condition fails (nothing written). */
  put(key: string, value: string, options?: { onlyIf?: { etagMatches?: string; etagDoesNotMatch?: string } }): Promise<unknown>;
  delete(key: string): Promise<void>;
  list(options: { prefix?: string; cursor?: string; limit?: number }): Promise<{ objects: { key: string }[]; truncated: boolean; cursor?: string }>;
}

export interface KvStoreOptions {
  /** Prepended to every key, e.g. `sessions/<id>` — one namespace can hold many sessions. */
  prefix?: string;
}

/**
 * A file store over a key-value backend. Each path is one key (`prefix + path`).
 *
 * Cloudflare KV is eventually consistent across locations (a write is visible in its own
 * location at once, elsewhere within ~60 s) and holds values up to 25 MiB; R2 is strongly
 * consistent with no practical size limit — prefer R2 for large tool outputs.
 */
export class KvStore implements FileStore {
  readonly #backend: KeyValueBackend;
  readonly #prefix: string;
  /** Present when the backend has `putIf` (`KvStore.r2` has). */
  readonly writeIf?: (path: string, expected: string | null, text: string) => Promise<boolean>;

  constructor(backend: KeyValueBackend, options: KvStoreOptions = {}) {
    this.#backend = backend;
    this.#prefix = (options.prefix ?? '').replace(/\/+$/, '');
    const putIf = backend.putIf;
    if (typeof putIf === 'function') {
      this.writeIf = async (path, expected, text) => {
        if (typeof text !== 'string') throw new TypeError(`writeIf(${path}): text must be a string`);
        return (await putIf.call(backend, this.#prefix + checkPath(path), expected, text)) === true;
      };
    }
  }

  /** A store over a Cloudflare KV namespace. */
  static cloudflareKv(namespace: CloudflareKvNamespace, options: KvStoreOptions = {}): KvStore {
    return new KvStore(
      {
        get: (key) => namespace.get(key, 'text'),
        put: (key, value) => namespace.put(key, value),
        delete: (key) => namespace.delete(key),
        keys: async (prefix) => {
          const keys: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await namespace.list({ prefix, ...(cursor ? { cursor } : {}) });
            keys.push(...page.keys.map((k) => k.name));
            cursor = page.list_complete ? undefined : page.cursor;
          } while (cursor);
          return keys;
        },
      },
      options,
    );
  }

  /** A store over a Cloudflare R2 bucket. Its `writeIf` is atomic: the text is compared, then
   * put on the condition that the object is still the one read (R2's `onlyIf` on its etag, or
   * `etagDoesNotMatch: '*'` for an absent one). */
  static r2(bucket: R2BucketLike, options: KvStoreOptions = {}): KvStore {
    return new KvStore(
      {
        get: async (key) => (await bucket.get(key))?.text() ?? null,
        put: (key, value) => bucket.put(key, value),
        putIf: async (key, expected, value) => {
          const current = await bucket.get(key);
          if (expected === null ? current !== null : current === null || (await current.text()) !== expected) return false;
          // An object without an etag (a stand-in, not R2): compared, not conditional.
          const onlyIf = current === null ? { etagDoesNotMatch: '*' } : current.etag === undefined ? undefined : { etagMatches: current.etag };
          return (await bucket.put(key, value, onlyIf ? { onlyIf } : undefined)) !== null;
        },
        delete: (key) => bucket.delete(key),
        keys: async (prefix) => {
          const keys: string[] = [];
          let cursor: string | undefined;
          do {
            const page = await bucket.list({ prefix, ...(cursor ? { cursor } : {}) });
            keys.push(...page.objects.map((o) => o.key));
            cursor = page.truncated ? page.cursor : undefined;
          } while (cursor);
          return keys;
        },
      },
      options,
    );
  }

  async read(path: string): Promise<string | null> {
    const value = await this.#backend.get(this.#prefix + checkPath(path));
    return typeof value === 'string' ? value : null;
  }

  async write(path: string, text: string): Promise<void> {
    if (typeof text !== 'string') throw new TypeError(`write(${path}): text must be a string`);
    await this.#backend.put(this.#prefix + checkPath(path), text);
  }

  async list(prefix: string): Promise<string[]> {
    prefix = checkPrefix(prefix);
    const keys = await this.#backend.keys(this.#prefix + prefix);
    return keys
      .filter((key) => key.startsWith(this.#prefix + prefix))
      .map((key) => key.slice(this.#prefix.length))
      .sort();
  }

  async delete(path: string): Promise<void> {
    await this.#backend.delete(this.#prefix + checkPath(path));
  }
}
