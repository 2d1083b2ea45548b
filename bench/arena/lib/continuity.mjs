// What the agent must find again after a compaction, from the session's own record: the latest
// plan (the input of its last todo-tool call) and the latest content of the file it was working
// on (its latest read or full write, and every edit after it). The arena checks both in the
// first prompt after each compaction.
import { promptContains } from './prompt.mjs';

export const PLAN_TOOLS = new Set(['write_todos', 'TodoWrite', 'update_plan', 'TaskCreate', 'TaskUpdate']);
const READS = new Set(['read_file', 'open_file', 'view_file', 'cat', 'Read']);
const WRITES = new Set(['write_file', 'create_file', 'Write']);
const EDITS = new Set(['edit_file', 'replace_in_file', 'str_replace_editor', 'Edit', 'MultiEdit']);
const PATHS = ['path', 'file_path', 'filePath', 'filename'];
const CONTENT = ['content', 'file_text'];
const EDITED = ['new_string', 'new_text', 'replacement', 'new_str'];

const pathOf = (input) => PATHS.map((f) => input?.[f]).find((v) => typeof v === 'string');
const stringOf = (input, fields) => fields.map((f) => input?.[f]).find((v) => typeof v === 'string');

/** Per message index `i`: the latest plan input (as JSON) and the working file before `i`. */
export function continuity(session) {
  const outputs = new Map();
  for (const m of session.messages) {
    if (m.role !== 'tool') continue;
    for (const p of m.content) if (p.type === 'tool-result') outputs.set(p.toolCallId, p.output?.value);
  }
  const reads = new Map();
  const files = new Map();
  let plan;
  let working;
  const at = [];
  for (const m of session.messages) {
    at.push({ plan, working: working && files.get(working) ? { path: working, pieces: files.get(working) } : undefined });
    if (!Array.isArray(m.content)) continue;
    for (const p of m.content) {
      if (p.type === 'tool-call') {
        const input = typeof p.input === 'string' ? safeParse(p.input) : p.input;
        if (PLAN_TOOLS.has(p.toolName)) plan = JSON.stringify(input);
        const path = pathOf(input);
        if (!path) continue;
        if (READS.has(p.toolName)) reads.set(p.toolCallId, path);
        else if (WRITES.has(p.toolName)) {
          const content = stringOf(input, CONTENT);
          if (content !== undefined) files.set(path, [content]);
          working = path;
        } else if (EDITS.has(p.toolName)) {
          const edits = Array.isArray(input.edits) ? input.edits.map((e) => stringOf(e, EDITED)) : [stringOf(input, EDITED)];
          const pieces = files.get(path);
          if (pieces) pieces.push(...edits.filter((e) => typeof e === 'string' && e.length > 0));
          working = path;
        }
      } else if (p.type === 'tool-result' && reads.has(p.toolCallId)) {
        const value = outputs.get(p.toolCallId);
        if (typeof value === 'string') files.set(reads.get(p.toolCallId), [value]);
      }
    }
  }
  return (index) => at[index] ?? { plan, working: undefined };
}

function safeParse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Whether `text` is in the prompt as it is or JSON-escaped (a tool call's input). */
export function kept(prompt, text) {
  return promptContains(prompt, text) || promptContains(prompt, JSON.stringify(text).slice(1, -1));
}
