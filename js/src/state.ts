// The state kept at `statePath`: loaded when a compactor is created, saved with a
// compare-and-set so that two requests of one conversation (a double submit, a retry, two tabs
// on two serverless instances) cannot both save over the same state. The saved JSON is the
// core's state plus two fields of the host's, stripped again on load:
//   revision      1, 2, 3... — each save is the loaded revision + 1
//   messageCount  the longest conversation (messages handed to manage) the state has seen
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
  messageCount: number;
}

const HOST_FIELDS = ['revision', 'messageCount'] as const;

/** Reads the state at `path`. A file that is not a state is a typed error, not ignored. */
export async function readState(store: FileStore, path: string = DEFAULT_STATE_PATH): Promise<StoredState> {
  const text = (await store.read(path)) ?? null;
  if (text === null) return { state: undefined, text: null, revision: 0, messageCount: 0 };
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
  const count = (field: string): number => (Number.isSafeInteger(record[field]) && (record[field] as number) >= 0 ? (record[field] as number) : 0);
  const revision = count('revision');
  const messageCount = count('messageCount');
  for (const field of HOST_FIELDS) delete record[field];
  return { state: record as unknown as CompactorState, text, revision, messageCount };
}

/**
 * Saves `state` over `base` (what was read, or last saved): written only while the store still
 * holds `base.text` — atomically where the store has `writeIf` with compare-and-set, by read,
 * compare and write elsewhere. Returns what is stored now, or null when another save came
 * first (nothing written: reload, re-apply, save again).
 */
export async function saveStateIf(store: FileStore, path: string, state: CompactorState, base: StoredState, messageCount: number): Promise<StoredState | null> {
  const next = { revision: base.revision + 1, messageCount: Math.max(base.messageCount, messageCount) };
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
