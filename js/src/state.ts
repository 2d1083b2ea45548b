// The state kept at `statePath`: loaded when a compactor is created, saved with a
// compare-and-set so that two requests of one conversation (a double submit, a retry, two tabs
// on two serverless instances) cannot both save over the same state. The saved JSON is the
// core's state plus two fields of the host's, stripped again on load:
//   revision      1, 2, 3... — each save is the loaded revision + 1
//   conversation  a 32-bit hash of each message of the conversation it was saved for (8 hex
//                 digits a message): a request whose conversation is a strict prefix of that one
//                 is a stale duplicate or retry of an earlier turn, and saves nothing; one whose
//                 conversation neither extends that one nor is a prefix of it is on another
//                 branch (see `branchOf`)
import { CompactorError, errorMessage } from './errors.js';
import { conditionalWrite, writeIf, type FileStore } from './store.js';
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
  /** See the file's head. */
  conversation: string;
  /** Set when the state could not be read (the store failed or did not answer): why. The
   * compactor plans as if nothing were stored, and saves only over nothing (`text` null). */
  unread?: string;
}

const HOST_FIELDS = ['revision', 'conversation'] as const;

/** Reads the state at `path`. A file that is not a state is a typed error, not ignored. */
export async function readState(store: FileStore, path: string = DEFAULT_STATE_PATH): Promise<StoredState> {
  return parseState((await store.read(path)) ?? null, path);
}

/** The state in `text`, as stored at `path` (null: nothing stored). */
export function parseState(text: string | null, path: string): StoredState {
  if (text === null) return { state: undefined, text: null, revision: 0, conversation: '' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CompactorError('invalid_config', `${path} in the store is not a saved compactor state`, { field: 'state', path });
  }
  const record = parsed as Record<string, unknown>;
  const revision = Number.isSafeInteger(record.revision) && (record.revision as number) >= 0 ? (record.revision as number) : 0;
  const conversation = typeof record.conversation === 'string' ? record.conversation : '';
  for (const field of HOST_FIELDS) delete record[field];
  return { state: record as unknown as CompactorState, text, revision, conversation };
}

/** What a compactor starts from when the state could not be read: nothing, saved over nothing. */
export function unreadState(error: unknown): StoredState {
  return { state: undefined, text: null, revision: 0, conversation: '', unread: errorMessage(error) };
}

/**
 * Saves `state` over `base` (what was read, or last saved): written only while the store still
 * holds `base.text` — atomically where the store has `writeIf` with compare-and-set, by read,
 * compare and write elsewhere. Returns what is stored now (`saved`), or, when another save came
 * first (nothing written), the state the store holds instead (`current`, read back once). A
 * store that refused and could not be read back is a `store_failed` error.
 */
export async function saveStateIf(store: FileStore, path: string, state: CompactorState, base: StoredState, conversation: string): Promise<{ saved: StoredState } | { current: StoredState }> {
  const next = { revision: base.revision + 1, conversation };
  const text = JSON.stringify({ ...state, ...next });
  const outcome = await conditionalWrite(store, path, base.text, text);
  if (outcome.written) return { saved: { state, text, ...next } };
  if (!('current' in outcome)) {
    const error = new CompactorError('store_failed', `the save was refused and the state could not be read back: ${errorMessage(outcome.readError)}`, { path, op: 'read' });
    Object.defineProperty(error, 'cause', { value: outcome.readError, enumerable: false, configurable: true, writable: true });
    throw error;
  }
  return { current: parseState(outcome.current ?? null, path) };
}

/**
 * Where a request's conversation stands to the one `stored` was saved for:
 * - `same`: the very conversation (a double submit; its edits are already stored);
 * - `ahead`: it extends that one (a later turn, or nothing is stored);
 * - `stale`: it is a strict prefix of that one (an earlier turn: a slow duplicate, a late retry);
 * - `diverged`: neither — another branch of the conversation (two tabs, a retry that went
 *   another way, an edited message).
 */
export function branchOf(stored: StoredState, conversation: string): 'same' | 'ahead' | 'stale' | 'diverged' {
  if (stored.conversation === conversation) return 'same';
  if (conversation.startsWith(stored.conversation)) return 'ahead';
  if (stored.conversation.startsWith(conversation)) return 'stale';
  return 'diverged';
}

/** The typed error of a save that cannot land: the store kept refusing conditional saves while
 * it still held the state they were conditional on (`refused`: a store that keeps failing), or
 * an explicit `saveState()` over a state another request saved since (`moved`). */
export function stateConflict(path: string, attempts: number, stored: StoredState, why: 'refused' | 'moved'): CompactorError {
  const message =
    why === 'refused'
      ? `the store refused to save the state at ${path} ${attempts} times though it still held the state the save was conditional on (its conditional writes keep failing)`
      : `the state at ${path} changed since this compactor last read or saved it: another request of this conversation saved it`;
  return new CompactorError('state_conflict', message, { path, attempts, revision: stored.revision });
}

/** The `conversation` field of `messages`: FNV-1a of each message's JSON (binary values by
 * their size), 8 hex digits each. */
export function conversationHashes(messages: readonly unknown[]): string {
  const replacer = (_: string, value: unknown): unknown => (ArrayBuffer.isView(value) ? `bin:${value.byteLength}` : value instanceof ArrayBuffer ? `bin:${value.byteLength}` : value);
  let out = '';
  for (const message of messages) {
    out += fnv1a(JSON.stringify(message, replacer) ?? '');
  }
  return out;
}

/** FNV-1a (32-bit) over UTF-16 code units from `basis`, as 8 hex digits. */
function fnv1a(text: string, basis = 0x811c9dc5): string {
  let h = basis;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, '0');
}

/** Whether `conversation` is a strict prefix of the one `stored` was saved for: an earlier
 * turn, whose state must not replace the newer one. */
export function isStale(stored: StoredState, conversation: string): boolean {
  return stored.conversation.length > conversation.length && stored.conversation.startsWith(conversation);
}

/** A summary lease beside the state: `{owner, until}` while one request summarizes a span,
 * `{summary}` once it has. */
interface Lease {
  owner?: string;
  until?: number;
  summary?: string;
}

/** Where the lease of the summary request `prompt` lives: beside the state, named by a 64-bit
 * hash of the prompt (two racing requests of one turn plan the same prompt). */
export function leasePath(statePath: string, prompt: string): string {
  return `${statePath}.summaries/${fnv1a(prompt)}${fnv1a(prompt, 0x01000193 ^ prompt.length)}.json`;
}

const parseLease = (text: string | null): Lease | undefined => {
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    return value && typeof value === 'object' ? (value as Lease) : undefined;
  } catch {
    return undefined;
  }
};

/** What a summary lease's text says: its summary, once made; else whether a request still
 * holds it (`until` in the future). No text, or not a lease: neither. */
export function leaseState(text: string | null): { summary?: string; held: boolean } {
  const lease = parseLease(text);
  if (typeof lease?.summary === 'string') return { summary: lease.summary, held: false };
  return { held: typeof lease?.until === 'number' && lease.until > Date.now() };
}

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

/**
 * Summarizes a span once across the requests of one conversation. The first request to take the
 * lease (a conditional write of `{owner, until}`) calls `summarize` and leaves the summary in
 * the lease; a request that finds another's lease waits for that summary (polling every
 * `pollMs`), and takes the lease over when it expires unfulfilled (a killed request), or asks
 * itself once `waitMs` have passed. A summarizer failure releases the lease.
 *
 * Store errors never fail the summary, and never make a request wait: a lease read or write that
 * fails (rejects or throws) or has not answered by the end of the wait (`waitMs` from the start,
 * at least `pollMs` a call) settles like any failed write — the summary is asked directly and
 * returned. Only a conditional write the store refused (another request took the lease first)
 * is waited on, `pollMs` between reads, `waitMs` in all. The summary left in the lease gets
 * `waitMs` too; then it is left to the store.
 */
export async function leasedSummary(
  store: FileStore,
  path: string,
  summarize: () => Promise<{ text?: string; ok: boolean }>,
  options: { leaseMs: number; waitMs: number; pollMs?: number },
): Promise<{ text?: string; ok: boolean; shared: boolean }> {
  const owner = Math.random().toString(36).slice(2) + Date.now().toString(36);
  const started = Date.now();
  const pollMs = options.pollMs ?? 50;
  const deadline = started + options.waitMs;
  const remaining = (): number => Math.max(deadline - Date.now(), pollMs);
  const direct = async (): Promise<{ text?: string; ok: boolean; shared: boolean }> => ({ ...(await summarize()), shared: false });
  for (;;) {
    let current: string | null;
    try {
      current = (await bounded(() => store.read(path), remaining())) ?? null;
    } catch {
      return direct();
    }
    const lease = leaseState(current);
    if (lease.summary !== undefined) return { text: lease.summary, ok: true, shared: true };
    const expired = !lease.held;
    const waited = Date.now() >= deadline;
    if (!expired && waited) return direct(); // waited long enough for another request's summary
    if (expired) {
      const mine = JSON.stringify({ owner, until: Date.now() + options.leaseMs });
      let taken: boolean;
      try {
        taken = await bounded(() => writeIf(store, path, current, mine), remaining());
      } catch {
        return direct(); // a failed lease write, not another request's lease
      }
      if (taken) {
        const result = await summarize();
        try {
          await bounded(() => writeIf(store, path, mine, JSON.stringify(result.ok ? { summary: result.text } : { owner, until: 0 })), options.waitMs);
        } catch {
          // The summary is applied all the same; a racing request asks again.
        }
        return { ...result, shared: false };
      }
      // Another request took it first: wait for its summary, within the wait.
      if (waited) return direct();
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(pollMs, deadline - Date.now()))));
  }
}
