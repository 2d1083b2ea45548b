// DenoFsStore: a directory on disk through Deno's own APIs, so Deno's permissions apply
// (`--allow-read=<root> --allow-write=<root>`). Import it from `context-compactor/stores/deno`.
import { FsStore, type FsPrimitives } from './fs.js';

interface DenoFile {
  write(data: Uint8Array): Promise<number>;
  sync(): Promise<void>;
  close(): void;
}
interface DenoApi {
  readTextFile(path: string): Promise<string>;
  open(path: string, options: { write: true; createNew: true; mode?: number }): Promise<DenoFile>;
  rename(from: string, to: string): Promise<void>;
  mkdir(path: string, options: { recursive: true }): Promise<void>;
  realPath(path: string): Promise<string>;
  readDir(path: string): AsyncIterable<{ name: string; isDirectory: boolean }>;
  remove(path: string): Promise<void>;
  stat(path: string): Promise<{ mtime: Date | null }>;
  cwd(): string;
  build: { os: string };
  errors: { NotFound: new (...args: never[]) => Error; AlreadyExists: new (...args: never[]) => Error };
}
declare const Deno: DenoApi;

const missing = (error: unknown): boolean => error instanceof Deno.errors.NotFound;
const utf8 = new TextEncoder();

function denoFs(): FsPrimitives {
  return {
    sep: Deno.build.os === 'windows' ? '\\' : '/',
    unique: () => crypto.randomUUID(),
    async readText(file) {
      try {
        return await Deno.readTextFile(file);
      } catch (error) {
        if (missing(error)) return null;
        throw error;
      }
    },
    async writeAtomic(temp, file, text) {
      const handle = await Deno.open(temp, { write: true, createNew: true, mode: 0o644 });
      try {
        const bytes = utf8.encode(text);
        for (let at = 0; at < bytes.length; ) at += await handle.write(bytes.subarray(at));
        await handle.sync();
      } finally {
        handle.close();
      }
      try {
        await Deno.rename(temp, file);
      } catch (error) {
        await Deno.remove(temp).catch(() => undefined);
        throw error;
      }
    },
    async mkdirp(dir) {
      await Deno.mkdir(dir, { recursive: true });
    },
    async realPath(path) {
      try {
        return await Deno.realPath(path);
      } catch (error) {
        if (missing(error)) return null;
        throw error;
      }
    },
    async readDir(dir) {
      const entries: { name: string; isDirectory: boolean }[] = [];
      try {
        for await (const e of Deno.readDir(dir)) entries.push({ name: e.name, isDirectory: e.isDirectory });
      } catch (error) {
        if (!missing(error)) throw error;
      }
      return entries;
    },
    async remove(file) {
      try {
        await Deno.remove(file);
      } catch (error) {
        if (!missing(error)) throw error;
      }
    },
    async createNew(file) {
      try {
        (await Deno.open(file, { write: true, createNew: true, mode: 0o644 })).close();
        return true;
      } catch (error) {
        if (error instanceof Deno.errors.AlreadyExists) return false;
        throw error;
      }
    },
    async age(file) {
      try {
        const { mtime } = await Deno.stat(file);
        return mtime ? Date.now() - mtime.getTime() : 0;
      } catch (error) {
        if (missing(error)) return null;
        throw error;
      }
    },
  };
}

/**
 * A store in a directory on disk, for Deno. Writes are atomic (temp file, flushed, renamed);
 * every path stays inside `root`, symlinks included.
 *
 * ```ts
 * import { DenoFsStore } from 'context-compactor/stores/deno';
 * const store = new DenoFsStore('./.agent-store');
 * ```
 */
export class DenoFsStore extends FsStore {
  constructor(root: string) {
    const fs = denoFs();
    const absolute = root.startsWith('/') || /^[A-Za-z]:[\\/]/.test(root) ? root : `${Deno.cwd()}${fs.sep}${root.replace(/^\.[\\/]/, '')}`;
    super(absolute, fs);
  }
}
