// Browser stores: the Origin Private File System where it can write, IndexedDB otherwise.
// Import from `context-compactor/stores/browser`.
import { CompactorError } from '../errors.js';
import { checkPath, checkPrefix, type FileStore } from '../store.js';

/**
 * A store in the Origin Private File System, under the directory `name`. Each write goes
 * through `createWritable()`, which writes a swap file and replaces the file only on `close()`,
 * so a tab closed mid-write leaves the old content.
 */
export class OpfsStore implements FileStore {
  readonly backend = 'opfs';
  readonly #root: FileSystemDirectoryHandle;

  private constructor(root: FileSystemDirectoryHandle) {
    this.#root = root;
  }

  /** Opens (creating) `/<name>/` in the origin's private file system. */
  static async open(name = 'context-compactor'): Promise<OpfsStore> {
    const storage = (globalThis.navigator as Navigator | undefined)?.storage;
    if (!storage?.getDirectory) throw new CompactorError('invalid_config', 'the Origin Private File System is not available here (navigator.storage.getDirectory)', { field: 'store' });
    const top = await storage.getDirectory();
    return new OpfsStore(await top.getDirectoryHandle(checkName(name), { create: true }));
  }

  async read(path: string): Promise<string | null> {
    const file = await this.#file(path, false);
    return file ? (await file.getFile()).text() : null;
  }

  async write(path: string, text: string): Promise<void> {
    if (typeof text !== 'string') throw new TypeError(`write(${path}): text must be a string`);
    const file = await this.#file(path, true);
    const writable = await file!.createWritable();
    try {
      await writable.write(text);
      await writable.close();
    } catch (error) {
      await writable.abort().catch(() => undefined);
      throw error;
    }
  }

  /**
   * Writes `text` at `path` only while it holds `expected` (`null`: nothing), under a Web Lock
   * named by the store and the path (`navigator.locks`: every tab and worker of the origin), so
   * two tabs saving one chat's state cannot both win. Where the browser has no Web Locks, the
   * compare and the write are not atomic (as a store without `writeIf`).
   */
  async writeIf(path: string, expected: string | null, text: string): Promise<boolean> {
    if (typeof text !== 'string') throw new TypeError(`writeIf(${path}): text must be a string`);
    checkPath(path);
    const compareAndWrite = async (): Promise<boolean> => {
      if ((await this.read(path)) !== expected) return false;
      await this.write(path, text);
      return true;
    };
    const locks = (globalThis.navigator as { locks?: LockManager } | undefined)?.locks;
    return locks ? locks.request(`context-compactor:opfs:${this.#root.name}:${path}`, compareAndWrite) : compareAndWrite();
  }

  async list(prefix: string): Promise<string[]> {
    prefix = checkPrefix(prefix);
    const out: string[] = [];
    const walk = async (dir: FileSystemDirectoryHandle, at: string): Promise<void> => {
      for await (const [name, handle] of (dir as unknown as { entries(): AsyncIterable<[string, FileSystemHandle]> }).entries()) {
        const path = at + name;
        if (handle.kind === 'directory') {
          if ((path + '/').startsWith(prefix) || prefix.startsWith(path + '/')) await walk(handle as FileSystemDirectoryHandle, path + '/');
        } else if (path.startsWith(prefix)) {
          out.push(path);
        }
      }
    };
    await walk(this.#root, '/');
    return out.sort();
  }

  async delete(path: string): Promise<void> {
    const segments = checkPath(path).slice(1).split('/');
    const dir = await this.#dir(segments.slice(0, -1), false);
    await dir?.removeEntry(segments.at(-1)!).catch((error: unknown) => {
      if ((error as DOMException)?.name !== 'NotFoundError') throw error;
    });
  }

  async #dir(segments: string[], create: boolean): Promise<FileSystemDirectoryHandle | null> {
    let dir = this.#root;
    for (const segment of segments) {
      try {
        dir = await dir.getDirectoryHandle(segment, { create });
      } catch (error) {
        if (!create && ['NotFoundError', 'TypeMismatchError'].includes((error as DOMException)?.name)) return null;
        throw error;
      }
    }
    return dir;
  }

  async #file(path: string, create: boolean): Promise<FileSystemFileHandle | null> {
    const segments = checkPath(path).slice(1).split('/');
    const dir = await this.#dir(segments.slice(0, -1), create);
    if (!dir) return null;
    try {
      return await dir.getFileHandle(segments.at(-1)!, { create });
    } catch (error) {
      if (!create && ['NotFoundError', 'TypeMismatchError'].includes((error as DOMException)?.name)) return null;
      throw error;
    }
  }
}

/** A store in an IndexedDB database `name` (one object store, keyed by path). Each write is one
 * transaction, resolved on `complete`: durable once it resolves. */
export class IndexedDbStore implements FileStore {
  readonly backend = 'indexeddb';
  readonly #db: IDBDatabase;

  private constructor(db: IDBDatabase) {
    this.#db = db;
  }

  static async open(name = 'context-compactor'): Promise<IndexedDbStore> {
    const idb = (globalThis as { indexedDB?: IDBFactory }).indexedDB;
    if (!idb) throw new CompactorError('invalid_config', 'IndexedDB is not available here', { field: 'store' });
    const request = idb.open(checkName(name), 1);
    request.onupgradeneeded = () => request.result.createObjectStore(FILES);
    return new IndexedDbStore(await done(request));
  }

  async read(path: string): Promise<string | null> {
    const value = await done(this.#files('readonly').get(checkPath(path)));
    return typeof value === 'string' ? value : null;
  }

  async write(path: string, text: string): Promise<void> {
    if (typeof text !== 'string') throw new TypeError(`write(${path}): text must be a string`);
    checkPath(path);
    const tx = this.#db.transaction(FILES, 'readwrite', { durability: 'strict' });
    tx.objectStore(FILES).put(text, path);
    await committed(tx);
  }

  /** Writes `text` at `path` only while it holds `expected` (`null`: nothing): the read, the
   * compare and the write in one `readwrite` transaction, atomic between tabs and workers. */
  async writeIf(path: string, expected: string | null, text: string): Promise<boolean> {
    if (typeof text !== 'string') throw new TypeError(`writeIf(${path}): text must be a string`);
    checkPath(path);
    const tx = this.#db.transaction(FILES, 'readwrite', { durability: 'strict' });
    const files = tx.objectStore(FILES);
    let written = false;
    const get = files.get(path);
    get.onsuccess = () => {
      const held = typeof get.result === 'string' ? get.result : null;
      if (held !== expected) return;
      files.put(text, path);
      written = true;
    };
    await committed(tx);
    return written;
  }

  async list(prefix: string): Promise<string[]> {
    prefix = checkPrefix(prefix);
    // Keys sort as strings: every key starting with `prefix` is in [prefix, prefix + U+FFFF).
    const range = prefix === '' ? undefined : IDBKeyRange.bound(prefix, prefix + '\uffff');
    const keys = await done(this.#files('readonly').getAllKeys(range));
    return (keys as string[]).filter((k) => k.startsWith(prefix)).sort();
  }

  async delete(path: string): Promise<void> {
    checkPath(path);
    const tx = this.#db.transaction(FILES, 'readwrite');
    tx.objectStore(FILES).delete(path);
    await committed(tx);
  }

  /** Closes the database connection. */
  close(): void {
    this.#db.close();
  }

  #files(mode: IDBTransactionMode): IDBObjectStore {
    return this.#db.transaction(FILES, mode).objectStore(FILES);
  }
}

const FILES = 'files';

/**
 * The best store this browser offers: OPFS when it can create writable files (Chromium,
 * Firefox, Safari 17+ in workers), IndexedDB otherwise. `backend` forces one.
 */
export async function openBrowserStore(options: { name?: string; backend?: 'opfs' | 'indexeddb' } = {}): Promise<OpfsStore | IndexedDbStore> {
  const name = options.name ?? 'context-compactor';
  if (options.backend === 'indexeddb') return IndexedDbStore.open(name);
  if (options.backend === 'opfs') return OpfsStore.open(name);
  try {
    const store = await OpfsStore.open(name);
    // Safari's main thread has OPFS but no createWritable: probe once.
    const probe = '/.cc-probe';
    await store.write(probe, '');
    await store.delete(probe);
    return store;
  } catch {
    return IndexedDbStore.open(name);
  }
}

function checkName(name: string): string {
  if (typeof name !== 'string' || !/^[A-Za-z0-9._-]{1,128}$/.test(name) || name === '.' || name === '..') {
    throw new CompactorError('invalid_config', `invalid browser store name ${JSON.stringify(name)}: use 1-128 of A-Z a-z 0-9 . _ -`, { field: 'name' });
  }
  return name;
}

function done<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error('IndexedDB request failed'));
  });
}

function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}
