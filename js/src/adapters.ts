// What the framework adapters (`langchain.ts`, `openai-agents.ts`) share: the core's message
// shape, and mapping a compacted conversation back onto the framework's own objects.
import type { Compactor } from './compactor.js';

export type Json = Record<string, unknown>;
export type Part = Json & { type: string };

/** A message in the core's shape (AI SDK `ModelMessage`). */
export interface CoreMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | Part[];
  [key: string]: unknown;
}

/** Throws a `TypeError` naming `entry` unless `compactor` is one. */
export function checkCompactor(entry: string, compactor: Compactor): void {
  if (compactor === null || typeof compactor !== 'object' || typeof compactor.manage !== 'function') {
    throw new TypeError(`${entry}: the first argument must be a compactor (createCompactor(...))`);
  }
}

/** The compacted messages as the framework's objects: each unchanged one is the original
 * (matched in order by its converted form), each changed one `rebuild(message, like)` with the
 * original at its place when the lists are as long (a new one, such as a summary, gets none). */
export function mapBack<T>(compacted: readonly CoreMessage[], originals: readonly T[], converted: readonly CoreMessage[], rebuild: (message: CoreMessage, like: T | undefined) => T): T[] {
  const pending = new Map<string, number[]>();
  converted.forEach((m, i) => {
    const key = JSON.stringify(m);
    pending.set(key, [...(pending.get(key) ?? []), i]);
  });
  const sameLength = compacted.length === originals.length;
  return compacted.map((message, i) => {
    const matches = pending.get(JSON.stringify(message));
    if (matches?.length) return originals[matches.shift()!]!;
    return rebuild(message, sameLength ? originals[i] : undefined);
  });
}

export function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
