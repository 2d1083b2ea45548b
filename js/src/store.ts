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
   * compare and write. Atomic in MemoryStore and UnstorageStore over Redis. */
  writeIf?(path: string, expected: string | null, text: string): MaybePromise<boolean>;
}

/** `store.writeIf` where the store has it; otherwise read, compare, write (not atomic: a write
 * landing between the read and the write is lost).
 *
 * A conditional write whose reply is lost can be applied and still say it was not: a client
 * that re-sends it after a dropped connection (ioredis does) sees the condition fail on its own
 * write, and one that does not throws. Either way `path` then holds `text`, so a refused or
 * failed `store.writeIf` is checked by reading `path` back: holding `text`, the write is ours.
 * (Every text written this way is unique to its writer — a state's revision and conversation,
 * a lease's owner — or the same content, for which it does not matter who wrote it.) */
export async function writeIf(store: FileStore, path: string, expected: string | null, text: string): Promise<boolean> {
  if (typeof store.writeIf === 'function') {
    let done: boolean;
    try {
      done = await store.writeIf(path, expected, text);
    } catch (error) {
      if (await holds(store, path, text)) return true;
      throw error;
    }
    return done || (await holds(store, path, text));
  }
  if (((await store.read(path)) ?? null) !== expected) return false;
  await store.write(path, text);
  return true;
}

/** Whether `path` holds `text` now (false when it cannot be read). */
async function holds(store: FileStore, path: string, text: string): Promise<boolean> {
  try {
    return ((await store.read(path)) ?? null) === text;
  } catch {
    return false;
  }
}

/** Longest path a store accepts (UTF-16 code units; generous for content hashes). */
export const MAX_PATH_LENGTH = 1024;
/** Longest path segment, in UTF-8 bytes: what file systems (ext4, APFS, NTFS) accept. */
export const MAX_SEGMENT_BYTES = 255;

const utf8 = new TextEncoder();

/** Rejects paths that could escape a store's root or confuse a backend. */
export function checkPath(path: unknown): string {
  const fail = (why: string): never => {
    throw new CompactorError('invalid_path', `invalid store path ${JSON.stringify(path)}: ${why}`, {
      path: typeof path === 'string' ? path : String(path),
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
