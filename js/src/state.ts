// The state kept at `statePath`: loaded when a compactor is created, saved with a
// compare-and-set so that two requests of one conversation (a double submit, a retry, two tabs
// on two serverless instances) cannot both save over the same state. What the saved text holds
// (the core's state, a revision, the conversation it was saved for), when a save is due and
// what a lost save means are the core's (`src/stored.rs` `Persist`), as are the summary leases
// beside it (`src/lease.rs`); this module reads the state, hashes the app's messages and
// carries out the store calls the core's loop asks for.
import { CompactorError, core, errorMessage } from './errors.js';
import {
  aheadPath as coreAheadPath,
  conversationHashes as coreConversationHashes,
  leasePath as coreLeasePath,
  storedState,
} from './wasm/context_compactor.js';
import { conditionalWrite, type FileStore } from './store.js';
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

/** What a store call that has not answered within a request's `timeoutMs` rejects with. */
class StoreTimeout extends Error {}

/** `op()` (a store call; a synchronous throw rejects), or a rejection once `ms` have passed. A
 * call left running is not awaited again: its late rejection is caught here. */
function bounded<T>(op: () => T | PromiseLike<T>, ms: number | undefined): Promise<T> {
  const call = new Promise<T>((resolve) => resolve(op()));
  if (ms === undefined) return call;
  let timer: ReturnType<typeof setTimeout> | undefined;
  call.catch(() => undefined);
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeout(`no answer from the store within ${ms} ms`)), ms);
  });
  return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
}

/** A store call or sleep the core's loop asks for around a summary (its lease: `src/lease.rs`)
 * or the state's save (`timeoutMs`: what is left of a lease's wait, beside the store's own). */
export type StoreRequest =
  | { type: 'read'; path: string; timeoutMs?: number }
  | { type: 'save'; path: string; expected: string | null; text: string; timeoutMs?: number }
  | { type: 'put'; path: string; text: string; timeoutMs?: number }
  | { type: 'sleep'; ms: number };

/** How a `StoreRequest` went, in the loop's words. */
export type StoreReply = { type: 'read'; text: string | null } | { type: 'saved' } | { type: 'refused'; current: string | null } | { type: 'done' } | { type: 'woke' } | { type: 'failed'; error: string };

/** Carries out `request` against `store`: never throws, a failure is a reply. */
export async function storeRequest(store: FileStore, request: StoreRequest): Promise<StoreReply> {
  try {
    switch (request.type) {
      case 'sleep':
        await new Promise((resolve) => setTimeout(resolve, request.ms));
        return { type: 'woke' };
      case 'read':
        return { type: 'read', text: (await bounded(() => store.read(request.path), request.timeoutMs)) ?? null };
      case 'put':
        await bounded(() => store.write(request.path, request.text), request.timeoutMs);
        return { type: 'done' };
      case 'save': {
        const outcome = await bounded(() => conditionalWrite(store, request.path, request.expected, request.text), request.timeoutMs);
        if (outcome.written) return { type: 'saved' };
        if ('current' in outcome) return { type: 'refused', current: outcome.current ?? null };
        return { type: 'failed', error: `the save was refused and the state could not be read back: ${errorMessage(outcome.readError)}` };
      }
    }
  } catch (error) {
    return { type: 'failed', error: errorMessage(error) };
  }
}
