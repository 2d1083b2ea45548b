import { CompactorError } from './errors.js';

type MaybePromise<T> = T | Promise<T>;

/**
 * Where offloaded content goes. Paths are absolute POSIX-style (`/tool_outputs/x.txt`).
 * Implementations must make `write` durable before it resolves: the compactor removes content
 * from the conversation only after the write succeeded.
 */
export interface FileStore {
  read(path: string): MaybePromise<string | null>;
  write(path: string, text: string): MaybePromise<void>;
  /** Paths under `prefix`, sorted. */
  list(prefix: string): MaybePromise<string[]>;
  delete(path: string): MaybePromise<void>;
  /** Optional: writes `text` only while `path` still holds `expected` (null: nothing there) and
   * says whether it did. `statePath` saves go through it when present (compare-and-set: two
   * requests of one conversation cannot both save over the same state); without it they read,
   * compare and write. Atomic in MemoryStore, UnstorageStore over Redis, DurableObjectStore,
   * KvStore.r2, IndexedDbStore, OpfsStore (under a Web Lock) and the file-system stores (a lock
   * file). */
  writeIf?(path: string, expected: string | null, text: string): MaybePromise<boolean>;
}

/** `store.writeIf` where the store has it; otherwise read, compare, write (not atomic: a write
 * landing between the read and the write is lost). See `conditionalWrite`. */
export async function writeIf(store: FileStore, path: string, expected: string | null, text: string): Promise<boolean> {
  return (await conditionalWrite(store, path, expected, text)).written;
}

/** What a conditional write did: `written`, or not, and then what `path` held when read back
 * (`current`), or why it could not be read (`readError`). */
export interface ConditionalWrite {
  written: boolean;
  current?: string | null;
  readError?: unknown;
}

/**
 * `writeIf`, saying what `path` held when the write was refused (read back once: a caller that
 * lost a save needs it, and a store that hangs is then waited on once, not twice).
 *
 * A conditional write whose reply is lost can be applied and still say it was not: a client
 * that re-sends it after a dropped connection (ioredis does) sees the condition fail on its own
 * write, and one that does not throws. Either way `path` then holds `text`, so a refused or
 * failed `store.writeIf` is checked by reading `path` back: holding `text`, the write is ours.
 * (Every text written this way is unique to its writer — a state's revision and conversation,
 * a lease's owner — or the same content, for which it does not matter who wrote it.) A write
 * that did not answer in time (`isStoreTimeout`) is not read back: it may still be under way.
 */
export async function conditionalWrite(store: FileStore, path: string, expected: string | null, text: string): Promise<ConditionalWrite> {
  const readBack = async (): Promise<ConditionalWrite> => {
    try {
      const current = (await store.read(path)) ?? null;
      return current === text ? { written: true } : { written: false, current };
    } catch (readError) {
      return { written: false, readError };
    }
  };
  if (typeof store.writeIf === 'function') {
    let done: boolean;
    try {
      done = await store.writeIf(path, expected, text);
    } catch (error) {
      if (!isStoreTimeout(error) && (await readBack()).written) return { written: true };
      throw error;
    }
    return done ? { written: true } : readBack();
  }
  const current = (await store.read(path)) ?? null;
  if (current !== expected) return { written: false, current };
  await store.write(path, text);
  return { written: true };
}

/** Whether `error` is a store call that did not answer within the compactor's
 * `storeTimeoutMs` (see `withTimeout`). */
export function isStoreTimeout(error: unknown): boolean {
  return error instanceof CompactorError && error.code === 'store_failed' && typeof error.details.timeoutMs === 'number';
}

/** Longest wait `setTimeout` takes (a longer one fires at once). */
const MAX_TIMER_MS = 2_147_483_647;

/** `ms` as a `setTimeout` delay: at least 1, and at most what a timer takes (a longer wait is
 * as good as none, where a longer delay would fire at once). */
export function timerMs(ms: number): number {
  return Math.min(Math.max(ms, 1), MAX_TIMER_MS);
}

/**
 * `store` with a bounded wait on every call: a call (read, write, list, delete, writeIf) that
 * has not settled within `ms` rejects with `CompactorError('store_failed')` (`details.path`,
 * `op`, `timeoutMs`), as a failed call does; a synchronous throw rejects too. The call itself
 * is left to finish: its late result is dropped and its late rejection caught (never an
 * unhandled rejection). `writeIf` is there while `store` has it.
 */
export function withTimeout(store: FileStore, ms: number): FileStore {
  const wait = timerMs(ms);
  const inner = checked(store);
  const bounded = <T>(op: string, path: string, call: () => MaybePromise<T>): Promise<T> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const running = new Promise<T>((resolve) => resolve(call()));
    running.catch(() => undefined);
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CompactorError('store_failed', `store ${op} of ${JSON.stringify(path)} did not answer within ${ms} ms (storeTimeoutMs)`, { path, op, timeoutMs: ms })), wait);
    });
    return Promise.race([running, timeout]).finally(() => clearTimeout(timer));
  };
  const view: FileStore = {
    read: (path) => bounded('read', path, () => inner.read(path)),
    write: (path, text) => bounded('write', path, () => store.write(path, text)),
    list: (prefix) => bounded('list', prefix, () => inner.list(prefix)),
    delete: (path) => bounded('delete', path, () => store.delete(path)),
  };
  // Read when called: a store given `writeIf` later has it here too.
  Object.defineProperty(view, 'writeIf', {
    get: () => (typeof store.writeIf === 'function' ? (path: string, expected: string | null, text: string) => bounded('writeIf', path, () => store.writeIf!(path, expected, text)) : undefined),
    enumerable: true,
  });
  return view;
}

/**
 * `store` with its answers checked before they reach the core: a `read` that gives neither text
 * nor nothing (a number, an object a JSON-parsing backend made, bytes) or a `list` that gives
 * anything but paths is a `CompactorError('store_failed')` naming the call, as a failed call is.
 */
export function checked(store: FileStore): FileStore {
  const wrong = (op: string, path: string, value: unknown, expected: string): never => {
    const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : ArrayBuffer.isView(value) ? value.constructor.name : typeof value;
    throw new CompactorError('store_failed', `store ${op} of ${JSON.stringify(path)} returned ${got}: expected ${expected}`, { path, op });
  };
  return {
    read: async (path) => {
      const text = await store.read(path);
      return text == null ? null : typeof text === 'string' ? text : wrong('read', path, text, 'a string, or null when nothing is stored there');
    },
    write: (path, text) => store.write(path, text),
    list: async (prefix) => {
      const paths = await store.list(prefix);
      return Array.isArray(paths) && paths.every((p) => typeof p === 'string') ? paths : wrong('list', prefix, paths, 'an array of paths (strings)');
    },
    delete: (path) => store.delete(path),
    ...(typeof store.writeIf === 'function' ? { writeIf: store.writeIf.bind(store) } : {}),
  };
}

/** Longest path a store accepts (UTF-16 code units; generous for content hashes). */
export const MAX_PATH_LENGTH = 1024;
/** Longest path segment, in UTF-8 bytes: what file systems (ext4, APFS, NTFS) accept. */
export const MAX_SEGMENT_BYTES = 255;

const utf8 = new TextEncoder();

/** Rejects paths that could escape a store's root or confuse a backend. */
export function checkPath(path: unknown, field?: string): string {
  const fail = (why: string): never => {
    throw new CompactorError('invalid_path', `${field ? `${field}: ` : ''}invalid store path ${JSON.stringify(path)}: ${why}`, {
      path: typeof path === 'string' ? path : String(path),
      ...(field ? { field } : {}),
    });
  };
  if (typeof path !== 'string') return fail('not a string');
  if (!path.startsWith('/')) fail('must be absolute (start with "/")');
  if (path.includes('\0')) fail('contains a NUL character');
  if (path.length > MAX_PATH_LENGTH) fail(`longer than ${MAX_PATH_LENGTH} characters`);
  if (path.split('/').some((segment) => segment === '..' || segment === '.')) fail('contains "." or ".." segments');
  if (path.includes('\\')) fail('contains a backslash');
  const segments = path.slice(1).split('/');
  if (segments.some((segment) => segment === '')) fail('has an empty segment (a trailing or doubled "/")');
  const long = segments.find((segment) => utf8.encode(segment).length > MAX_SEGMENT_BYTES);
  if (long !== undefined) fail(`has a segment longer than ${MAX_SEGMENT_BYTES} bytes`);
  return path;
}

/** Checks a `list` prefix: absolute, no `.`/`..` segments, no NUL; it may end with `/`. The
 * empty prefix means everything and comes back as `/`. */
export function checkPrefix(prefix: unknown): string {
  if (prefix === '' || prefix === '/') return '/';
  if (typeof prefix !== 'string') return checkPath(prefix);
  checkPath(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
  return prefix;
}

/** An in-memory store: per process, per isolate, per tab. */
export class MemoryStore implements FileStore {
  readonly #files = new Map<string, string>();

  async read(path: string): Promise<string | null> {
    return this.#files.get(checkPath(path)) ?? null;
  }

  async write(path: string, text: string): Promise<void> {
    if (typeof text !== 'string') throw new TypeError(`MemoryStore.write(${path}): text must be a string`);
    this.#files.set(checkPath(path), text);
  }

  async list(prefix: string): Promise<string[]> {
    const checked = checkPrefix(prefix);
    return [...this.#files.keys()].filter((p) => p.startsWith(checked)).sort();
  }

  async delete(path: string): Promise<void> {
    this.#files.delete(checkPath(path));
  }

  async writeIf(path: string, expected: string | null, text: string): Promise<boolean> {
    if (typeof text !== 'string') throw new TypeError(`MemoryStore.writeIf(${path}): text must be a string`);
    if ((this.#files.get(checkPath(path)) ?? null) !== expected) return false;
    this.#files.set(path, text);
    return true;
  }

  /** Number of files held. */
  get size(): number {
    return this.#files.size;
  }
}
