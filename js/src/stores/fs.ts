// A file store on a real file system, shared by the Node (node:fs) and Deno (Deno.*) stores:
// each supplies only the few primitives below. Paths are confined to the root twice: lexically
// (checkPath refuses `..`, NUL, backslashes, over-long names) and physically (the real path of
// every directory touched must stay under the root's real path, so a symlink planted inside the
// root cannot lead out of it).
import { CompactorError } from '../errors.js';
import { checkPath, checkPrefix, type FileStore } from '../store.js';

/** What a file system must offer an FsStore. Paths here are native, absolute. */
export interface FsPrimitives {
  /** File contents as UTF-8, or null when there is no such file. */
  readText(file: string): Promise<string | null>;
  /** Writes `text` to `temp` (must not exist), flushes it to disk, renames it to `file`. */
  writeAtomic(temp: string, file: string, text: string): Promise<void>;
  mkdirp(dir: string): Promise<void>;
  /** The real path (symlinks resolved), or null when it does not exist. */
  realPath(path: string): Promise<string | null>;
  /** Entries of a directory (empty when it does not exist). */
  readDir(dir: string): Promise<{ name: string; isDirectory: boolean }[]>;
  /** Removes a file; a missing file is not an error. */
  remove(file: string): Promise<void>;
  /** Creates `file` empty only if it does not exist (`O_EXCL`): whether it did. */
  createNew(file: string): Promise<boolean>;
  /** How long ago `file` was last modified, in ms, or null when it does not exist. */
  age(file: string): Promise<number | null>;
  /** A name unlikely to collide, for temp files. */
  unique(): string;
  sep: string;
}

const TEMP_SUFFIX = '.cc-tmp';
/** Beside a file while a `writeIf` compares and writes it. */
const LOCK_SUFFIX = '.cc-lock';
/** A lock older than this is a holder that died (a compare and write takes milliseconds). */
const STALE_LOCK_MS = 10_000;

export class FsStore implements FileStore {
  /** The root directory, as given (resolved to absolute by the runtime store). */
  readonly root: string;
  readonly #fs: FsPrimitives;
  #realRoot: Promise<string> | undefined;

  constructor(root: string, fs: FsPrimitives) {
    if (typeof root !== 'string' || root === '') {
      throw new CompactorError('invalid_config', 'a file store needs a root directory', { field: 'root' });
    }
    this.root = root.endsWith(fs.sep) && root.length > 1 ? root.slice(0, -1) : root;
    this.#fs = fs;
  }

  async read(path: string): Promise<string | null> {
    const file = this.#native(path);
    const real = await this.#fs.realPath(file);
    if (real === null) return null;
    await this.#confined(real, path);
    return this.#fs.readText(file);
  }

  async write(path: string, text: string): Promise<void> {
    if (typeof text !== 'string') throw new TypeError(`write(${path}): text must be a string`);
    const file = await this.#writable(path);
    await this.#fs.writeAtomic(`${file}.${this.#fs.unique()}${TEMP_SUFFIX}`, file, text);
  }

  async list(prefix: string): Promise<string[]> {
    prefix = checkPrefix(prefix);
    // Walk only the deepest directory the prefix names.
    const base = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    const out: string[] = [];
    const walk = async (storeDir: string): Promise<void> => {
      const native = this.root + storeDir.split('/').join(this.#fs.sep).replace(/[\\/]$/, '');
      const real = await this.#fs.realPath(native);
      if (real === null) return;
      await this.#confined(real, storeDir);
      for (const entry of await this.#fs.readDir(native)) {
        const path = storeDir + entry.name;
        if (entry.isDirectory) {
          if ((path + '/').startsWith(prefix) || prefix.startsWith(path + '/')) await walk(path + '/');
        } else if (!entry.name.endsWith(TEMP_SUFFIX) && !entry.name.endsWith(LOCK_SUFFIX) && path.startsWith(prefix)) {
          out.push(path);
        }
      }
    };
    await walk(base);
    return out.sort();
  }

  /**
   * Writes `text` only while `path` holds `expected` (null: nothing there), atomically between
   * processes that share the directory: the compare and the write run under a lock file beside
   * it (`<file>.cc-lock`, made with `O_EXCL`), so the state's conditional saves and the summary
   * leases hold across workers on one disk. A lock left by a process that died is broken after
   * 10 s; one not taken within `STALE_LOCK_MS` either fails the call.
   */
  async writeIf(path: string, expected: string | null, text: string): Promise<boolean> {
    if (typeof text !== 'string') throw new TypeError(`writeIf(${path}): text must be a string`);
    const file = await this.#writable(path);
    const lock = file + LOCK_SUFFIX;
    for (let waited = 0; !(await this.#fs.createNew(lock)); waited += 10) {
      const age = await this.#fs.age(lock);
      if (age !== null && age > STALE_LOCK_MS) await this.#fs.remove(lock);
      else if (waited > STALE_LOCK_MS) throw new CompactorError('store_failed', `writeIf(${path}): ${lock} held for over ${STALE_LOCK_MS} ms`, { path, op: 'writeIf' });
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    try {
      if ((await this.#fs.readText(file)) !== expected) return false;
      await this.#fs.writeAtomic(`${file}.${this.#fs.unique()}${TEMP_SUFFIX}`, file, text);
      return true;
    } finally {
      await this.#fs.remove(lock);
    }
  }

  async delete(path: string): Promise<void> {
    const file = this.#native(path);
    const real = await this.#fs.realPath(file);
    if (real === null) return;
    await this.#confined(real, path);
    await this.#fs.remove(file);
  }

  /** `path`'s native file, its directory made and confined to the root. */
  async #writable(path: string): Promise<string> {
    const file = this.#native(path);
    const dir = file.slice(0, file.lastIndexOf(this.#fs.sep));
    await this.#root();
    await this.#fs.mkdirp(dir);
    await this.#confined((await this.#fs.realPath(dir)) ?? dir, path);
    return file;
  }

  #native(path: string): string {
    return this.root + checkPath(path).split('/').join(this.#fs.sep);
  }

  #root(): Promise<string> {
    this.#realRoot ??= (async () => {
      await this.#fs.mkdirp(this.root);
      return (await this.#fs.realPath(this.root)) ?? this.root;
    })();
    return this.#realRoot;
  }

  async #confined(real: string, path: string): Promise<void> {
    const root = await this.#root();
    if (real !== root && !real.startsWith(root + this.#fs.sep)) {
      throw new CompactorError('invalid_path', `store path ${JSON.stringify(path)} leads outside the store's root (through a symlink)`, { path });
    }
  }
}
