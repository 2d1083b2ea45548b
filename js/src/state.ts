// The state kept at `statePath`: loaded when a compactor is created, saved with a
// compare-and-set so that two requests of one conversation (a double submit, a retry, two tabs
// on two serverless instances) cannot both save over the same state. What the saved text holds
// (the core's state, a revision, the conversation it was saved for), when a save is due and
// what a lost save means are the core's (`src/stored.rs` `Persist`); this module reads the
// state, hashes the app's messages and carries out the summary leases beside it.
import { CompactorError, core, errorMessage } from './errors.js';
import {
  LeaseRun,
  aheadPath as coreAheadPath,
  conversationHashes as coreConversationHashes,
  leasePath as coreLeasePath,
  storedState,
} from './wasm/context_compactor.js';
import { writeIf, type FileStore } from './store.js';
import type { CompactorState } from './types.js';

/** Where `saveState()` writes by default. */
export const DEFAULT_STATE_PATH = '/state/compactor.json';

/** A state as read from the store: what to save over (`text`) and what it holds. */
export interface StoredState {
  /** The core's state, or undefined when nothing is stored. */
  state: CompactorState | undefined;
  /** The stored text, exactly (null when nothing is stored): the `expected` of the next save. */
  text: string | null;
  revision: number;
  /** The conversation it was saved for (`conversationHashes`). */
  conversation: string;
  /** Set when the state could not be read (the store failed or did not answer): why. The
   * compactor plans as if nothing were stored, and saves only over nothing (`text` null). */
  unread?: string;
}

/** Reads the state at `path`. A file that is not a state is a typed error, not ignored. */
export async function readState(store: FileStore, path: string = DEFAULT_STATE_PATH): Promise<StoredState> {
  return parseState((await store.read(path)) ?? null, path);
}

/** The state in `text`, as stored at `path` (null: nothing stored). */
export function parseState(text: string | null, path: string): StoredState {
  let json: string;
  try {
    json = core(() => storedState(text ?? undefined, path));
  } catch (error) {
    // Not a saved state: the core's error, with the path where the host keeps it.
    if (error instanceof CompactorError && error.code === 'invalid_config') throw new CompactorError('invalid_config', error.message, { ...error.details, field: 'state', path });
    throw error;
  }
  const parsed = JSON.parse(json) as { state: CompactorState | null; revision: number; conversation: string };
  return { state: parsed.state ?? undefined, text, revision: parsed.revision, conversation: parsed.conversation };
}

/** What a compactor starts from when the state could not be read: nothing, saved over nothing. */
export function unreadState(error: unknown): StoredState {
  return { state: undefined, text: null, revision: 0, conversation: '', unread: errorMessage(error) };
}

/** The `conversation` field of `messages`: each message's JSON (binary values by their size)
 * hashed by the core. */
export function conversationHashes(messages: readonly unknown[]): string {
  const replacer = (_: string, value: unknown): unknown => (ArrayBuffer.isView(value) ? `bin:${value.byteLength}` : value instanceof ArrayBuffer ? `bin:${value.byteLength}` : value);
  return coreConversationHashes(messages.map((message) => JSON.stringify(message, replacer) ?? ''));
}

/** Where the lease of the summary request `prompt` lives: beside the state, named by a hash of
 * the prompt (two racing requests of one turn plan the same prompt). The core's rule. */
export const leasePath = (statePath: string, prompt: string): string => coreLeasePath(statePath, prompt);

/** Where a summary asked ahead under `key` waits beside the state at `statePath`. */
export const aheadPath = (statePath: string, key: string): string => coreAheadPath(statePath, key);

/** What a lease store call that has not answered in time rejects with. */
class LeaseTimeout extends Error {}

/** `op()` (a store call; a synchronous throw rejects), or a rejection once `ms` have passed. A
 * call left running is not awaited again: its late rejection is caught here. */
function bounded<T>(op: () => T | PromiseLike<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const call = new Promise<T>((resolve) => resolve(op()));
  call.catch(() => undefined);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new LeaseTimeout(`no answer from the store within ${ms} ms`)), ms);
  });
  return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
}

/** What the core's lease run (`src/lease.rs`) asks for next. */
type LeaseIo =
  | { type: 'read'; path: string; timeoutMs: number }
  | { type: 'write-if'; path: string; expected: string | null; text: string; timeoutMs: number }
  | { type: 'write'; path: string; text: string; timeoutMs: number }
  | { type: 'summarize' }
  | { type: 'sleep'; ms: number }
  | { type: 'done'; text: string | null; shared: boolean };

/**
 * Summarizes a span once across the requests of one conversation, under a lease beside the
 * state: the core's run (`src/lease.rs`, its rules at the file's head) decides; this only
 * carries out the store calls it asks for (each bounded by its `timeoutMs`), the summarizer and
 * the sleeps, on the wall clock (leases are between concurrent requests, whatever the
 * compactor's `now`). `keep`: a summary made without the lease is left beside the state too (a
 * summary asked ahead, which the next request reads there).
 */
export async function leasedSummary(
  store: FileStore,
  path: string,
  summarize: () => Promise<{ text?: string; ok: boolean }>,
  options: { leaseMs: number; waitMs: number; pollMs?: number; keep?: boolean },
): Promise<{ text?: string; ok: boolean; shared: boolean }> {
  const owner = Math.random().toString(36).slice(2) + Date.now().toString(36);
  const run = core(() => new LeaseRun(path, owner, Date.now(), JSON.stringify(options)));
  try {
    for (;;) {
      const io = JSON.parse(run.io()) as LeaseIo;
      if (io.type === 'done') return { ...(io.text !== null ? { text: io.text } : {}), ok: io.text !== null, shared: io.shared };
      if (io.type === 'summarize') {
        const result = await summarize();
        run.handleSummary(result.ok ? result.text : undefined, Date.now());
      } else if (io.type === 'sleep') {
        await new Promise((resolve) => setTimeout(resolve, io.ms));
        run.handleWoke(Date.now());
      } else if (io.type === 'read') {
        const read = await bounded(() => store.read(io.path), io.timeoutMs).then((text) => ({ text: text ?? undefined }), (error: unknown) => ({ error: errorMessage(error) }));
        run.handleRead('text' in read ? read.text : undefined, 'error' in read ? read.error : undefined, Date.now());
      } else {
        const write = io.type === 'write' ? () => Promise.resolve(store.write(io.path, io.text)).then(() => true) : () => writeIf(store, io.path, io.expected, io.text);
        const written = await bounded(write, io.timeoutMs).then((ok) => ({ ok }), (error: unknown) => ({ ok: false, error: errorMessage(error) }));
        run.handleWritten(written.ok, 'error' in written ? written.error : undefined, Date.now());
      }
    }
  } finally {
    run.free();
  }
}
