// A file store over unstorage (https://unstorage.unjs.io): any of its drivers — Redis, Upstash /
// Vercel KV, S3, Vercel Blob, Netlify Blobs, Azure, MongoDB, Cloudflare KV / R2, the file
// system, IndexedDB, memory — becomes a compactor store. Import it from
// `context-compactor/stores/unstorage`. The storage is typed structurally, so this file imports
// nothing from unstorage (an optional peer dependency: the app creates the storage).
//
// Two things unstorage does to values and keys are undone here, so that every path and text
// round-trips exactly:
// - keys: unstorage turns `/` and `\` into `:`, cuts at `?` and collapses `::`, so `/a:b` and
//   `/a/b` would be one key. Each path segment escapes `%`, `:`, `?` and lone surrogates as
//   `%XX` / `%uXXXX`, and `/` becomes `:`.
// - values: `getItem` parses what looks like JSON (`123`, `true`, `{...}`), and a file-system or
//   Redis backend stores UTF-8, which has no lone surrogates. A text that could be misread is
//   stored as `cc:` + its JSON string (ASCII-safe); every other text is stored verbatim, so the
//   files of a file-system driver stay readable.
import { CompactorError, errorMessage } from '../errors.js';
import { checkPath, checkPrefix, type FileStore } from '../store.js';

type MaybePromise<T> = T | Promise<T>;

/** The part of an unstorage driver this store uses (`redis` gives atomic conditional writes). */
export interface UnstorageDriverLike {
  name?: string;
  options?: { base?: string } & Record<string, unknown>;
  getInstance?: () => unknown;
}

/** An unstorage `Storage` (from `createStorage({ driver })`), structurally. */
export interface UnstorageLike {
  getItem(key: string): MaybePromise<unknown>;
  setItem(key: string, value: string): MaybePromise<void>;
  removeItem(key: string): MaybePromise<void>;
  getKeys(base?: string): MaybePromise<string[]>;
  getMount?(key?: string): { base: string; driver: UnstorageDriverLike };
}

/** The ioredis calls the Redis conditional write needs. */
interface RedisClientLike {
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>;
}

export interface UnstorageStoreOptions {
  /** Key prefix inside the storage, e.g. `chat:<id>` — one storage holds many conversations.
   * Letters, digits and `_ - . :` only. */
  base?: string;
  /** Largest text accepted, in UTF-16 code units; a longer one is refused with a typed
   * `store_failed` error before it is sent. Default: no limit of our own (the backend's: Redis
   * 512 MB, Cloudflare KV 25 MiB, Upstash 1 MB on its free plan...). */
  maxValueLength?: number;
}

/** One page of `listPage`. `cursor` is set while more paths remain. */
export interface ListPage {
  paths: string[];
  cursor?: string;
}

const TAG = 'cc:';
const KEYWORD = /^(true|false|null|undefined|nan|-?infinity)$/i;
const JSON_LOOKING = /^\s*(["[{]|-?\d)/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** What the storage holds for `text`. */
function encodeValue(text: string): string {
  const verbatim = !(text.trim().length <= 9 && (text.trim() === '' || KEYWORD.test(text.trim()))) && !JSON_LOOKING.test(text) && !text.startsWith(TAG) && !LONE_SURROGATE.test(text);
  return verbatim ? text : TAG + JSON.stringify(text);
}

/** The text back from what the storage held (which unstorage may have parsed). */
function decodeValue(value: unknown, path: string): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'string') {
    throw new CompactorError('store_failed', `store path ${JSON.stringify(path)} holds a ${typeof value} this store did not write`, { path, op: 'read' });
  }
  return value.startsWith(TAG) ? (JSON.parse(value.slice(TAG.length)) as string) : value;
}

const ESCAPED = /%|:|\?|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const hex = (code: number, width: number): string => code.toString(16).toUpperCase().padStart(width, '0');

/** The unstorage key of a (checked) store path, under `base`. */
function keyOf(base: string, path: string): string {
  const segments = path.slice(1).split('/').map((s) => s.replace(ESCAPED, (c) => (c.length === 1 && c.charCodeAt(0) >= 0xd800 ? `%u${hex(c.charCodeAt(0), 4)}` : `%${hex(c.charCodeAt(0), 2)}`)));
  return base + segments.join(':');
}

/** The store path of an unstorage key under `base`. */
function pathOf(base: string, key: string): string {
  return '/' + key.slice(base.length).split(':').map((s) => s.replace(/%u([0-9A-F]{4})|%([0-9A-F]{2})/g, (_, u: string, b: string) => String.fromCharCode(parseInt(u ?? b, 16)))).join('/');
}

// Replaces the value only while it is still the one expected (its SHA-1; '' for none), with the
// driver's `ttl` (seconds; '' for none) as its own writes have it.
const REDIS_WRITE_IF = `local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if cur then return 0 end
elseif (not cur) or redis.sha1hex(cur) ~= ARGV[1] then
  return 0
end
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
else
  redis.call('SET', KEYS[1], ARGV[2])
end
return 1`;

/** A storage's probe (`#keysAgree`): whether the computed Redis keys are unstorage's, once known. */
interface Probe {
  agree: Promise<boolean>;
  settled?: boolean;
}
const PROBED = new WeakMap<object, Probe>();

async function sha1(text: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-1', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => hex(b, 2).toLowerCase()).join('');
}

/**
 * A file store over an unstorage `Storage`: each path is one key under `base`.
 *
 * ```ts
 * import { createStorage } from 'unstorage';
 * import redisDriver from 'unstorage/drivers/redis';
 * import { UnstorageStore } from 'context-compactor/stores/unstorage';
 * const store = new UnstorageStore(createStorage({ driver: redisDriver({ url: process.env.REDIS_URL }) }), { base: `chat:${id}` });
 * ```
 *
 * `writeIf` (the conditional write under `statePath`) is atomic on the Redis driver (one Lua
 * script); on other drivers it reads, compares and writes, which narrows the race to one round
 * trip but does not close it (`conditionalWrites` says which).
 */
export class UnstorageStore implements FileStore {
  readonly storage: UnstorageLike;
  readonly #base: string;
  readonly #maxValueLength: number;

  constructor(storage: UnstorageLike, options: UnstorageStoreOptions = {}) {
    if (!storage || typeof storage.getItem !== 'function' || typeof storage.setItem !== 'function' || typeof storage.getKeys !== 'function') {
      throw new CompactorError('invalid_config', 'UnstorageStore needs an unstorage Storage (createStorage({ driver }))', { field: 'storage' });
    }
    const base = options.base ?? '';
    if (typeof base !== 'string' || !/^[A-Za-z0-9_.:-]*$/.test(base) || /(^|:)\.{1,2}(:|$)/.test(base)) {
      throw new CompactorError('invalid_config', `invalid unstorage base ${JSON.stringify(base)}: use letters, digits and _ - . :`, { field: 'base' });
    }
    this.storage = storage;
    this.#base = base.replace(/^:+|:+$/g, '').replace(/:+/g, ':');
    if (this.#base) this.#base += ':';
    // unstorage's Redis driver (1.17) lists nothing under a base holding `/` or `\\` or starting
    // with `:` (it writes the key cleaned up and strips the base as given), so `ls`, `grep` and
    // every listing would come back empty: refused here, with the base that works.
    const driver = storage.getMount?.(this.#base + 'x')?.driver;
    const driverBase = driver?.name === 'redis' ? String(driver.options?.base ?? '') : '';
    if (/[/\\]|^:/.test(driverBase)) {
      const fixed = driverBase.replace(/[:/\\]+/g, ':').replace(/^:|:$/g, '');
      throw new CompactorError('invalid_config', `unstorage's Redis driver base ${JSON.stringify(driverBase)}: its keys cannot be listed back (the driver writes them as ${JSON.stringify(fixed)}:...); give the driver base ${JSON.stringify(fixed)}`, { field: 'storage' });
    }
    this.#maxValueLength = options.maxValueLength ?? Infinity;
  }

  /** `atomic` on the Redis driver, `read-compare-write` elsewhere (see the class doc), and on a
   * storage whose Redis keys are not the ones this store computes (a `prefixStorage` wrapper),
   * once the first conditional write found so. */
  get conditionalWrites(): 'atomic' | 'read-compare-write' {
    return this.#redis(this.#base + 'x') && PROBED.get(this.storage)?.settled !== false ? 'atomic' : 'read-compare-write';
  }

  async read(path: string): Promise<string | null> {
    checkPath(path);
    return decodeValue(await this.#call('read', path, () => this.storage.getItem(keyOf(this.#base, path))), path);
  }

  async write(path: string, text: string): Promise<void> {
    const value = this.#encode(path, text);
    await this.#call('write', path, () => this.storage.setItem(keyOf(this.#base, path), value));
  }

  async delete(path: string): Promise<void> {
    checkPath(path);
    await this.#call('delete', path, () => this.storage.removeItem(keyOf(this.#base, path)));
  }

  async list(prefix: string): Promise<string[]> {
    prefix = checkPrefix(prefix);
    // Ask for the deepest directory the prefix names (drivers list by `base:`), filter the rest.
    const dir = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    const dirKey = dir === '/' ? this.#base : keyOf(this.#base, dir.slice(0, -1)) + ':';
    const keys = (await this.#call('list', prefix, () => this.storage.getKeys(dirKey))) as string[];
    return keys
      .filter((key) => key.startsWith(this.#base))
      .map((key) => pathOf(this.#base, key))
      .filter((path) => path.startsWith(prefix))
      .sort();
  }

  /** `list` in pages of `limit` paths (default 1,000), in order; pass the page's `cursor` back
   * for the next. */
  async listPage(prefix: string, options: { cursor?: string; limit?: number } = {}): Promise<ListPage> {
    const limit = options.limit ?? 1000;
    if (!Number.isInteger(limit) || limit < 1) throw new CompactorError('invalid_config', 'listPage: limit must be a whole number >= 1', { field: 'limit' });
    const all = await this.list(prefix);
    const after = options.cursor;
    const start = after === undefined ? 0 : all.findIndex((p) => p > after);
    const paths = start < 0 ? [] : all.slice(start, start + limit);
    const more = start >= 0 && start + limit < all.length;
    return more ? { paths, cursor: paths.at(-1)! } : { paths };
  }

  /** Writes `text` only while the path still holds `expected` (null: nothing); false when it
   * holds something else. Atomic on Redis (see `conditionalWrites`). */
  async writeIf(path: string, expected: string | null, text: string): Promise<boolean> {
    const value = this.#encode(path, text);
    const key = keyOf(this.#base, path);
    const found = this.#redis(key);
    const redis = found && (await this.#keysAgree(path)) ? found : undefined;
    if (redis) {
      const want = expected === null ? '' : await sha1(encodeValue(expected));
      const done = await this.#call('write', path, () => redis.client.eval(REDIS_WRITE_IF, 1, redis.key, want, value, redis.ttl));
      return done === 1;
    }
    if ((await this.read(path)) !== expected) return false;
    await this.#call('write', path, () => this.storage.setItem(key, value));
    return true;
  }

  #encode(path: string, text: string): string {
    checkPath(path);
    if (typeof text !== 'string') throw new TypeError(`write(${path}): text must be a string`);
    if (text.length > this.#maxValueLength) {
      throw new CompactorError('store_failed', `store path ${JSON.stringify(path)}: ${text.length} characters exceed this store's maxValueLength (${this.#maxValueLength})`, { path, op: 'write', length: text.length });
    }
    return encodeValue(text);
  }

  /** The Redis client, full key and the driver's `ttl` behind `key`, when its mount is
   * unstorage's Redis driver. */
  #redis(key: string): { client: RedisClientLike; key: string; ttl: string } | undefined {
    const mount = this.storage.getMount?.(key);
    const driver = mount?.driver;
    if (!mount || driver?.name !== 'redis' || typeof driver.getInstance !== 'function') return undefined;
    const client = driver.getInstance() as RedisClientLike;
    if (typeof client?.eval !== 'function') return undefined;
    // As the driver names it: unstorage's `joinKeys(base, key)` (`/` and `\\` read as `:`, one
    // separator cut from each end of each piece).
    const piece = (k: string) => k.replace(/[:/\\]/g, ':').replace(/^:|:$/g, '');
    const full = [piece(String(driver.options?.base ?? '')), piece(key.slice(mount.base.length))].filter(Boolean).join(':');
    const ttl = driver.options?.ttl;
    return { client, key: full, ttl: typeof ttl === 'number' && ttl > 0 ? String(Math.ceil(ttl)) : '' };
  }

  /** Whether the Redis key `#redis` computes is the one unstorage writes, found once per storage
   * by a probe (a key written through unstorage, read back by its computed name, deleted): a
   * wrapper this store cannot see through (`prefixStorage`) makes the Lua script's key another
   * one, whose saves would land where no read looks. Then conditional writes read, compare and
   * write, as on other drivers. A probe that fails (Redis down) is not kept: its error is the
   * write's. */
  async #keysAgree(path: string): Promise<boolean> {
    let probe = PROBED.get(this.storage);
    if (!probe) {
      const token = `probe-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
      const key = keyOf(this.#base, `/.context-compactor-probe-${token}`);
      const redis = this.#redis(key)!;
      const entry: Probe = {
        agree: (async () => {
          try {
            await this.storage.setItem(key, token);
            return (await redis.client.eval("return redis.call('GET', KEYS[1])", 1, redis.key)) === token;
          } finally {
            await Promise.resolve(this.storage.removeItem(key)).catch(() => undefined);
          }
        })(),
      };
      entry.agree.then((agree) => (entry.settled = agree), () => PROBED.delete(this.storage));
      PROBED.set(this.storage, (probe = entry));
    }
    return this.#call('write', path, () => probe.agree);
  }

  /** Runs a backend call; what the backend throws becomes a typed `store_failed` error naming
   * the path and the operation (the backend's error is its `cause`). */
  async #call<T>(op: string, path: string, run: () => MaybePromise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof CompactorError) throw error;
      const reason = errorMessage(error);
      const typed = new CompactorError('store_failed', `unstorage ${op} of ${JSON.stringify(path)} failed: ${reason}`, { path, op });
      Object.defineProperty(typed, 'cause', { value: error, enumerable: false, configurable: true, writable: true });
      throw typed;
    }
  }
}
