// NodeFsStore: a directory on disk, for Node and Bun (and Deno with node: compatibility).
// Import it from `context-compactor/stores/node`.
import { mkdir, open, readdir, readFile, realpath, rename, rm, stat } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import { resolve, sep } from 'node:path';
import { FsStore, type FsPrimitives } from './fs.js';

const missing = (error: unknown): boolean => (error as NodeJS.ErrnoException)?.code === 'ENOENT';

const nodeFs: FsPrimitives = {
  sep,
  unique: () => randomUUID(),
  async readText(file) {
    try {
      return await readFile(file, 'utf8');
    } catch (error) {
      if (missing(error)) return null;
      throw error;
    }
  },
  async writeAtomic(temp, file, text) {
    const handle = await open(temp, 'wx', 0o644);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      await rename(temp, file);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  },
  async mkdirp(dir) {
    await mkdir(dir, { recursive: true });
  },
  async realPath(path) {
    try {
      return await realpath(path);
    } catch (error) {
      if (missing(error)) return null;
      throw error;
    }
  },
  async readDir(dir) {
    try {
      return (await readdir(dir, { withFileTypes: true })).map((e) => ({ name: e.name, isDirectory: e.isDirectory() }));
    } catch (error) {
      if (missing(error)) return [];
      throw error;
    }
  },
  async remove(file) {
    await rm(file, { force: true });
  },
  async createNew(file) {
    try {
      await (await open(file, 'wx', 0o644)).close();
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException)?.code === 'EEXIST') return false;
      throw error;
    }
  },
  async age(file) {
    try {
      return Date.now() - (await stat(file)).mtimeMs;
    } catch (error) {
      if (missing(error)) return null;
      throw error;
    }
  },
};

/**
 * A store in a directory on disk. Writes are atomic (a temp file, flushed, then renamed), so a
 * crash never leaves half a file; every path stays inside `root`, symlinks included.
 *
 * ```ts
 * import { NodeFsStore } from 'context-compactor/stores/node';
 * const store = new NodeFsStore('.agent-store');
 * ```
 */
export class NodeFsStore extends FsStore {
  constructor(root: string) {
    super(resolve(root), nodeFs);
  }
}
