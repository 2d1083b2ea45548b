// Routes paths to stores by prefix: `/memories/` to a store that outlives the session, the rest
// to the session's store (SPEC §8).
import { CompactorError } from '../errors.js';
import { checkPath, checkPrefix, writeIf, type FileStore } from '../store.js';

/** Where long-term memory lives, and the file loaded into the system prompt. */
export const MEMORIES_PREFIX = '/memories/';
export const AGENTS_MD_PATH = '/memories/AGENTS.md';

/**
 * A store that sends each path to the store of its longest matching route prefix, or to
 * `fallback`. Paths are passed on unchanged.
 *
 * ```ts
 * const store = new CompositeStore(new MemoryStore(), { '/memories/': new NodeFsStore('.memories') });
 * ```
 */
export class CompositeStore implements FileStore {
  readonly fallback: FileStore;
  readonly #routes: [string, FileStore][];

  constructor(fallback: FileStore, routes: Record<string, FileStore> = {}) {
    this.fallback = fallback;
    this.#routes = Object.entries(routes)
      .map(([prefix, store]): [string, FileStore] => {
        if (!prefix.startsWith('/') || !prefix.endsWith('/')) {
          throw new CompactorError('invalid_config', `route ${JSON.stringify(prefix)} must start and end with "/"`, { field: 'routes' });
        }
        prefix = checkPrefix(prefix);
        return [prefix, store];
      })
      .sort(([a], [b]) => b.length - a.length);
  }

  /** The store a path goes to. */
  storeFor(path: string): FileStore {
    return this.#routes.find(([prefix]) => path.startsWith(prefix))?.[1] ?? this.fallback;
  }

  read(path: string): Promise<string | null> | string | null {
    return this.storeFor(checkPath(path)).read(path);
  }

  write(path: string, text: string): Promise<void> | void {
    return this.storeFor(checkPath(path)).write(path, text);
  }

  delete(path: string): Promise<void> | void {
    return this.storeFor(checkPath(path)).delete(path);
  }

  /** The owning store's `writeIf` (read-compare-write where it has none). */
  writeIf(path: string, expected: string | null, text: string): Promise<boolean> {
    return writeIf(this.storeFor(checkPath(path)), path, expected, text);
  }

  /** Paths under `prefix` from every store that can hold them, each from the store that owns it. */
  async list(prefix: string): Promise<string[]> {
    prefix = checkPrefix(prefix);
    const stores = new Set<FileStore>([this.fallback]);
    for (const [route, store] of this.#routes) if (route.startsWith(prefix) || prefix.startsWith(route)) stores.add(store);
    const lists = await Promise.all([...stores].map(async (store) => ((await store.list(prefix)) as string[]).filter((p) => this.storeFor(p) === store)));
    return lists.flat().sort();
  }
}

/** `/memories/AGENTS.md` from `store`, or null. */
export async function loadAgentsMd(store: FileStore, path = AGENTS_MD_PATH): Promise<string | null> {
  return store.read(path);
}
