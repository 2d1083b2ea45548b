/** Machine-readable error codes from the core (src/error.rs) and the host. */
export type CompactorErrorCode =
  | 'malformed_json'
  | 'invalid_message'
  | 'invalid_messages'
  | 'orphan_tool_result'
  | 'invalid_config'
  | 'plan_mismatch'
  | 'unknown_encoding'
  | 'encoding_not_loaded'
  | 'invalid_rank_data'
  | 'invalid_path'
  | 'not_initialized'
  | 'busy'
  | 'context_overflow'
  | 'store_failed'
  | 'state_conflict'
  | 'disposed'
  | 'internal';

/** Every error the library throws. `index` and `field` name the offending message and field. */
export class CompactorError extends Error {
  override readonly name = 'CompactorError';
  readonly code: CompactorErrorCode;
  /** Message index, when the error concerns one message. */
  readonly index?: number;
  /** Field path inside the message (e.g. `content[1].toolCallId`) or the config. */
  readonly field?: string;
  /** Every other detail the core reported. */
  readonly details: Record<string, unknown>;

  constructor(code: CompactorErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.details = details;
    if (typeof details.index === 'number') this.index = details.index;
    if (typeof details.field === 'string') this.field = details.field;
  }
}

/** Converts what the wasm binding throws (a JSON string) into a CompactorError. */
export function fromCore(thrown: unknown): CompactorError {
  // Already typed (the host's own checks, e.g. the codec's, inside a core call).
  if (thrown instanceof CompactorError) return thrown;
  if (typeof thrown === 'string') {
    try {
      const { code, message, ...details } = JSON.parse(thrown) as { code: CompactorErrorCode; message: string };
      return new CompactorError(code, message, details);
    } catch {
      return new CompactorError('internal', thrown);
    }
  }
  // A trap (e.g. `unreachable`) means a bug in the core, not bad input: say so plainly.
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  return new CompactorError('internal', `context-compactor core failed: ${message}`);
}

/** What a thrown value says: an Error's message, else the value as text. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Runs a core call, converting what it throws. */
export function core<T>(call: () => T): T {
  try {
    return call();
  } catch (thrown) {
    throw fromCore(thrown);
  }
}
