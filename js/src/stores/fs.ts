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
  /** A name unlikely to collide, for temp files. */
  unique(): string;
  sep: string;
}

const TEMP_SUFFIX = '.cc-tmp';

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
    const file = this.#native(path);
    const dir = file.slice(0, file.lastIndexOf(this.#fs.sep));
    await this.#root();
    await this.#fs.mkdirp(dir);
    await this.#confined((await this.#fs.realPath(dir)) ?? dir, path);
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
        } else if (!entry.name.endsWith(TEMP_SUFFIX) && path.startsWith(prefix)) {
          out.push(path);
        }
      }
    };
    await walk(base);
    return out.sort();
  }

  async delete(path: string): Promise<void> {
    const file = this.#native(path);
    const real = await this.#fs.realPath(file);
    if (real === null) return;
    await this.#confined(real, path);
    await this.#fs.remove(file);
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
