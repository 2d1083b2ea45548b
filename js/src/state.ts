// The state kept at `statePath`: loaded when a compactor is created, saved with a
// compare-and-set so that two requests of one conversation (a double submit, a retry, two tabs
// on two serverless instances) cannot both save over the same state. The saved JSON is the
// core's state plus two fields of the host's, stripped again on load:
//   revision      1, 2, 3... — each save is the loaded revision + 1
//   conversation  a 32-bit hash of each message of the conversation it was saved for (8 hex
//                 digits a message): a request whose conversation is a strict prefix of that one
//                 is a stale duplicate or retry of an earlier turn, and saves nothing
import { CompactorError } from './errors.js';
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
  /** See the file's head. */
  conversation: string;
}

const HOST_FIELDS = ['revision', 'conversation'] as const;

/** Reads the state at `path`. A file that is not a state is a typed error, not ignored. */
export async function readState(store: FileStore, path: string = DEFAULT_STATE_PATH): Promise<StoredState> {
  const text = (await store.read(path)) ?? null;
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

/**
 * Saves `state` over `base` (what was read, or last saved): written only while the store still
 * holds `base.text` — atomically where the store has `writeIf` with compare-and-set, by read,
 * compare and write elsewhere. Returns what is stored now, or null when another save came
 * first (nothing written: reload, re-apply, save again).
 */
export async function saveStateIf(store: FileStore, path: string, state: CompactorState, base: StoredState, conversation: string): Promise<StoredState | null> {
  const next = { revision: base.revision + 1, conversation };
  const text = JSON.stringify({ ...state, ...next });
  if (!(await writeIf(store, path, base.text, text))) return null;
  return { state, text, ...next };
}

/** The typed error of a save that kept losing the race. */
export function stateConflict(path: string, attempts: number, stored: StoredState): CompactorError {
  return new CompactorError('state_conflict', `the state at ${path} kept changing under this request (${attempts} attempts): other requests of this conversation are saving it`, {
    path,
    attempts,
    revision: stored.revision,
  });
}

/** The `conversation` field of `messages`: FNV-1a of each message's JSON (binary values by
 * their size), 8 hex digits each. */
export function conversationHashes(messages: readonly unknown[]): string {
  const replacer = (_: string, value: unknown): unknown => (ArrayBuffer.isView(value) ? `bin:${value.byteLength}` : value instanceof ArrayBuffer ? `bin:${value.byteLength}` : value);
  let out = '';
  for (const message of messages) {
    const json = JSON.stringify(message, replacer) ?? '';
    let h = 0x811c9dc5;
    for (let i = 0; i < json.length; i++) h = Math.imul(h ^ json.charCodeAt(i), 0x01000193);
    out += (h >>> 0).toString(16).padStart(8, '0');
  }
  return out;
}

/** Whether `conversation` is a strict prefix of the one `stored` was saved for: an earlier
 * turn, whose state must not replace the newer one. */
export function isStale(stored: StoredState, conversation: string): boolean {
  return stored.conversation.length > conversation.length && stored.conversation.startsWith(conversation);
}
