// Real recorded agent sessions: public trajectories of real agents on real tasks (mini-swe-agent
// runs on SWE-bench, Claude Code session logs), converted to AI SDK `ModelMessage[]` (main agent
// only). Each source is pinned by repository, commit, path
// and git blob id in `REAL` (and in `real/<name>/SOURCE.md`, with its licence).
//
// The raw files are not committed: what the `fetch` mirror brings stays out of this repository.
// They are read from a local git mirror of the source repository (`git cat-file blob <id>`, so
// the bytes are exactly the pinned blob) or from a local copy in `real/<name>/raw/` (ignored by
// git; checked against the same blob id). `node bench/arena/sessions/real.mjs --extract` writes
// those local copies from the mirror.
//
// Needles are derived from the data, not planted: a line the agent wrote verbatim into a tool
// call, last seen in a tool output long before (`deriveNeedles`) — so the model needed that
// earlier output at that later step.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));

/** Where `fetch` mirrors live (`<dir>/<owner>+<name>/repo` is a bare git directory). */
export const MIRROR_DIRS = ['/work/.mirror'];

const MINI_SWE_AGENT = {
  repository: 'SWE-agent/mini-swe-agent',
  ref: 'refs/pull/816/head',
  commit: 'e5e0fbca1c60561bde25fa473b78717aa4b3f9ec',
  licence: 'MIT (LICENSE.md: "Copyright (c) 2025 Kilian A. Lieret and Carlos E. Jimenez")',
};

const M_CLAUDE = {
  repository: 'M-Thisness/M-Claude',
  ref: 'refs/pull/1/head', // its main branch was rewritten later (a history scrub); these commits live on here
  licence: 'CC0 1.0 Universal (LICENSE: "Creative Commons Legal Code / CC0 1.0 Universal", added in 1b1259bb, 2026-01-01)',
};

/** The real sessions: name → source. `blob` is the git blob id of the raw file. */
export const REAL = {
  'swe-astroid-1333': {
    ...MINI_SWE_AGENT,
    path: 'output/deepseek_chat_dev_rerun/pylint-dev__astroid-1333/pylint-dev__astroid-1333.traj.json',
    blob: '225eb4e73201e17e408c5791208e116f7d861daa',
    bytes: 1_168_847,
    format: 'mini-swe-agent-toolcall',
    description: 'mini-swe-agent 2.2.7 (tool calls, parallel calls allowed) with deepseek-chat on SWE-bench dev pylint-dev__astroid-1333: one task, 188 bash calls, submitted',
  },
  'swe-sqlfluff-1733': {
    ...MINI_SWE_AGENT,
    path: 'output/deepseek_lite_dev_noparallel/sqlfluff__sqlfluff-1733/sqlfluff__sqlfluff-1733.traj.json',
    blob: 'e920635b7d0c9a0504e1070adc0a0b9083f72577',
    bytes: 1_216_630,
    format: 'mini-swe-agent-toolcall',
    description: 'mini-swe-agent 2.2.7 (tool calls, one per step) with deepseek-chat on SWE-bench dev sqlfluff__sqlfluff-1733: one task, 157 bash calls, submitted',
  },
  'claude-code-wallpaper': {
    repository: 'reality2-roycdavies/cosmic-bing-wallpaper',
    ref: 'HEAD',
    commit: 'eb3f5f7afe7eb482f1e989701a47d2fae9746745',
    licence: 'MIT (LICENSE: "Copyright (c) 2026 Roy C. Davies")',
    path: 'docs/transcripts/conversation-part2-refinement.jsonl',
    blob: '91084fc18002ae083d7645d1d1b3dad4497dab50',
    bytes: 2_373_225,
    format: 'claude-code-jsonl',
    description: 'Claude Code (Opus 4.5) with its developer over 45 user turns: code review, fixes, GitHub release, AppImage installer, a system-tray version, systemd autostart; 242 tool calls (Bash, Edit, Read, Write, ...)',
  },
  'claude-code-chat-export': {
    ...M_CLAUDE,
    commit: 'cd08f7d77c1db3d9c8bcf034d000c5f24b113986',
    path: 'CHAT_LOGS/de73bc86-61f0-4c55-98af-c43cf612e3f6.jsonl',
    blob: '429f87a4c65be76210fba36b71200a6346bc8668',
    bytes: 2_004_251,
    format: 'claude-code-jsonl',
    repair: 'redacted-escapes',
    description: 'Claude Code 2.0.76 (Sonnet 4.5) with its user over 25 user turns: exporting Claude Code\'s own chat history, a GitHub repository for it with secret scanning, a GitHub Action rendering the logs as Markdown; 307 tool calls (Bash 217, TodoWrite, Write, Edit, Read, ...)',
  },
  'claude-code-chat-log-action': {
    ...M_CLAUDE,
    commit: 'cd08f7d77c1db3d9c8bcf034d000c5f24b113986',
    path: 'CHAT_LOGS/0d510331-7c2a-45ab-850a-088f3499b4cc.jsonl',
    blob: 'f85b00f84cf34f9bfa8d4200be771443142d3614',
    bytes: 1_413_709,
    format: 'claude-code-jsonl',
    description: 'Claude Code 2.0.76 (Sonnet 4.5) with its user over 15 user turns: the GitHub Action turning raw chat logs into Markdown, leak checks on commit, a chronological log, daily journals, README; 173 tool calls (Bash 96, Edit 38, Read 21, ...)',
  },
  'claude-code-mac-security': {
    ...M_CLAUDE,
    ref: 'refs/heads/main',
    commit: '282843082fa4d0a7dba4eb4394b03dd3b3ce0641',
    path: 'Archives/3af9b1a7-6512-4883-ad18-320658ced099.jsonl',
    blob: '22c9dfd0d786ddedc59d844c6cf1ff333d1050dd',
    bytes: 1_456_331,
    format: 'claude-code-jsonl',
    repair: 'redacted-escapes',
    description: 'Claude Code (Sonnet 4.5) with its user over 10 user turns: syncing the log repository, a performance, security and reliability evaluation of the user\'s Mac (NVMe warning, firewall logging, open ports), then hardening gitleaks and rewriting the repository\'s history to purge secrets; 173 tool calls (Bash 107, TodoWrite 28, Read 18, Write 12, Edit 6, WebSearch 2)',
  },
};

/** The git blob id of `bytes` (what `git hash-object` prints). */
export function blobId(bytes) {
  return createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex');
}

function localCopy(name) {
  return join(HERE, 'real', name, 'raw', REAL[name].path.split('/').pop());
}

function fromMirror(source, dirs) {
  for (const dir of dirs) {
    const gitDir = join(dir, source.repository.replace('/', '+'), 'repo');
    if (!existsSync(gitDir)) continue;
    try {
      return execFileSync('git', ['--git-dir', gitDir, 'cat-file', 'blob', source.blob], { maxBuffer: 64 << 20 });
    } catch {
      // the mirror lacks that blob (an older snapshot): try the next one
    }
  }
  return null;
}

/** The raw bytes of session `name`'s source file, checked against its blob id. */
export function rawFile(name, { mirrors = MIRROR_DIRS } = {}) {
  const source = REAL[name];
  if (!source) throw new Error(`unknown real session ${JSON.stringify(name)}`);
  const local = localCopy(name);
  const bytes = existsSync(local) ? readFileSync(local) : fromMirror(source, mirrors);
  if (!bytes) {
    throw new Error(
      `${name}: raw data not found. It is ${source.repository} ${source.path} at ${source.commit} (${source.ref}, blob ${source.blob}): ` +
        `mirror the repository into ${mirrors.join(' or ')} (the fetch tool), or put the file at ${local}`,
    );
  }
  const id = blobId(bytes);
  if (id !== source.blob) throw new Error(`${name}: raw data has blob id ${id}, expected ${source.blob}`);
  return bytes;
}

/** Whether session `name`'s raw data can be read here. */
export function available(name, options) {
  try {
    rawFile(name, options);
    return true;
  } catch {
    return false;
  }
}

/**
 * The M-Claude logs were published through a secret scanner that rewrote matches in place
 * (`[REDACTED_EMAIL]`, `[REDACTED_IP]`, ...). Where a match took the letter of a JSON escape
 * (`\nname@host`: the `n` matched as part of the address), a lone backslash is left before
 * `[REDACTED_` and the line is no longer JSON. `redacted-escapes` repairs exactly those lines: that
 * backslash becomes an escaped one, so the text keeps it as a character (`name\[REDACTED_EMAIL]`
 * read as `name` + a backslash + the mark). Lines that parse are untouched; a line still broken
 * after it throws. Returns the text and the repaired line numbers (1-based).
 */
export function repairRedactedEscapes(jsonl) {
  const repaired = [];
  const lines = jsonl.split('\n').map((line, i) => {
    if (!line.trim()) return line;
    try {
      JSON.parse(line);
      return line;
    } catch {
      const fixed = line.replace(/(?<!\\)((?:\\\\)*)\\\[REDACTED_/g, '$1\\\\[REDACTED_');
      JSON.parse(fixed); // throws if that was not the damage
      repaired.push(i + 1);
      return fixed;
    }
  });
  return { text: lines.join('\n'), repaired };
}

/** The text a real session converts from: the raw file, repaired where its source says so. */
export function sourceText(name, options) {
  const source = REAL[name];
  const text = rawFile(name, options).toString('utf8');
  if (!source.repair) return text;
  if (source.repair !== 'redacted-escapes') throw new Error(`${name}: unknown repair ${source.repair}`);
  return repairRedactedEscapes(text).text;
}

/** mini-swe-agent's one tool (`BASH_TOOL` in its `actions_toolcall.py`), as an arena tool. */
const BASH = {
  description: 'Execute a bash command',
  inputSchema: { type: 'object', properties: { command: { type: 'string', description: 'The bash command to execute' } }, required: ['command'] },
};

/**
 * A mini-swe-agent trajectory (`messages` in OpenAI chat shape: `tool_calls` on assistant
 * messages, `role: 'tool'` results, a final `role: 'exit'` record) as `{system, tools, messages}`.
 * - the system message becomes `system`; the task (first user message) the first user message;
 * - an assistant message becomes text (when not empty) + one tool-call part per `tool_calls`
 *   entry, with its recorded id and parsed arguments;
 * - consecutive tool messages become one tool message (the AI SDK's shape), one tool-result part
 *   `{type: 'text', value}` each, in call order;
 * - the run ends with the submit command, whose output the agent never saw (it became the
 *   submission): its result is the exit record's content, and one closing assistant text names
 *   the exit status — the only text the converter writes.
 */
export function convertMiniSweAgent(traj) {
  const src = traj.messages;
  const system = src.filter((m) => m.role === 'system').map((m) => m.content).join('\n\n');
  const messages = [];
  const pending = new Map();
  let exit = null;
  for (const m of src) {
    if (m.role === 'system') continue;
    if (m.role === 'user') {
      messages.push({ role: 'user', content: m.content });
    } else if (m.role === 'assistant') {
      const content = [];
      if (typeof m.content === 'string' && m.content.trim()) content.push({ type: 'text', text: m.content });
      for (const c of m.tool_calls ?? []) {
        const input = JSON.parse(c.function.arguments);
        content.push({ type: 'tool-call', toolCallId: c.id, toolName: c.function.name, input });
        pending.set(c.id, c.function.name);
      }
      if (!content.length) throw new Error('an assistant message with neither text nor tool calls');
      messages.push({ role: 'assistant', content });
    } else if (m.role === 'tool') {
      const toolName = pending.get(m.tool_call_id);
      if (!toolName) throw new Error(`a tool result for unknown call ${m.tool_call_id}`);
      pending.delete(m.tool_call_id);
      const part = { type: 'tool-result', toolCallId: m.tool_call_id, toolName, output: { type: 'text', value: m.content } };
      const last = messages.at(-1);
      if (last.role === 'tool') last.content.push(part);
      else messages.push({ role: 'tool', content: [part] });
    } else if (m.role === 'exit') {
      exit = m;
    } else throw new Error(`unexpected role ${m.role}`);
  }
  if (pending.size) {
    if (!exit || pending.size !== 1) throw new Error(`${pending.size} tool calls without results`);
    const [[toolCallId, toolName]] = pending;
    messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName, output: { type: 'text', value: exit.content } }] });
  }
  const status = traj.info?.exit_status ?? exit?.extra?.exit_status ?? 'ended';
  messages.push({ role: 'assistant', content: [{ type: 'text', text: `[run ended: ${status}]` }] });
  // Tool results follow their calls' order within a step.
  for (let i = 1; i < messages.length; i++) {
    if (messages[i].role !== 'tool') continue;
    const order = messages[i - 1].content.filter((p) => p.type === 'tool-call').map((p) => p.toolCallId);
    messages[i].content.sort((a, b) => order.indexOf(a.toolCallId) - order.indexOf(b.toolCallId));
  }
  // Time: each step carries `extra.timestamp` (Unix seconds, the model's answer and the tool's
  // run), but the run has one user message, the task, and no human in the loop: no think time.
  // Consecutive records are at most 86 s (astroid) and 107 s (sqlfluff) apart: the model's own
  // latency and the tool's run, which the arena's clock does not take from the log.
  return { system, tools: { bash: BASH }, messages, thinkSeconds: [0] };
}

/** The text of a Claude Code tool result's `content`: a string, or blocks (text kept, others named). */
function resultText(content) {
  if (typeof content === 'string') return content;
  return (content ?? []).map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n');
}

/** A JSON schema for a tool from the inputs it was called with: each key seen, typed as seen. */
function schemaFromInputs(inputs) {
  const properties = {};
  for (const input of inputs) {
    for (const [key, value] of Object.entries(input)) {
      properties[key] ??= { type: Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value === 'object' ? 'object' : typeof value };
    }
  }
  return { type: 'object', properties };
}

/** The system prompt of a converted Claude Code session: the log does not record Claude Code's. */
export const CLAUDE_CODE_SYSTEM =
  'You are Claude Code, an interactive coding agent working in the user\'s repository with the tools given. (Claude Code\'s own system prompt is not recorded in its session log; this line stands in for it.)';

/** The text that closes a turn the user interrupted after a tool result (the only text `convertClaudeCode` writes). */
export const INTERRUPTED = '[interrupted by the user]';

/**
 * A Claude Code session log (JSONL: one record per line) as `{system, tools, messages}`, main
 * agent only:
 * - records other than `user` / `assistant`, side chains (sub-agents), meta messages and the
 *   summary Claude Code wrote at its own compaction (`isCompactSummary`) are left out: the raw
 *   history is what the user and the tools said, whole, as the app would keep it;
 * - the records of one API response (one per content block, same `message.id`) become one
 *   assistant message: its text blocks joined into one leading text part, one tool-call part per
 *   `tool_use` (recorded ids); thinking blocks are left out (their text is not in the log);
 * - tool results become `tool-result` parts `{type: 'text', value}` (text blocks joined, other
 *   blocks named), consecutive ones one tool message in call order; a user's own text, a user
 *   message;
 * - a user's text right after tool results (the user rejected a call or interrupted the agent)
 *   ends the agent's turn with one assistant text, `INTERRUPTED`, so that every user message
 *   follows a text-only assistant message as an app's history would;
 * - a recording that stops mid-step (a call without its result) ends at its last complete turn.
 * - `thinkSeconds`: for each user message, its record's `timestamp` minus the previous kept
 *   record's (the agent's last response block or tool result): the user's reading, typing and
 *   time away, not the model's own time (the arena's clock prices model calls itself); time
 *   inside a turn (tool runs, permission prompts) is not taken;
 * Tool definitions are derived from the inputs each tool was called with (the log has none), and
 * the system prompt is `CLAUDE_CODE_SYSTEM`.
 */
export function convertClaudeCode(jsonl) {
  const records = jsonl
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => JSON.parse(line));
  const messages = [];
  const inputs = new Map();
  // The think time before each user message: its first record's `timestamp` minus the previous
  // kept record's (the agent's last response block or tool result before it).
  const thinkSeconds = [];
  let previousAt = null;
  let responseId = null;
  for (const r of records) {
    if ((r.type !== 'user' && r.type !== 'assistant') || r.isSidechain || r.isMeta || r.isCompactSummary) continue;
    const content = r.message.content;
    const at = Date.parse(r.timestamp); // NaN without one (a hand-made log): no gap known, 0
    const before = previousAt;
    previousAt = at;
    if (r.type === 'assistant') {
      let m = messages.at(-1);
      if (!(m?.role === 'assistant' && responseId === r.message.id)) {
        m = { role: 'assistant', content: [] };
        messages.push(m);
        responseId = r.message.id;
      }
      for (const b of content) {
        if (b.type === 'text' && b.text.trim()) {
          if (m.content[0]?.type === 'text') m.content[0].text += `\n\n${b.text}`;
          else m.content.unshift({ type: 'text', text: b.text });
        } else if (b.type === 'tool_use') {
          m.content.push({ type: 'tool-call', toolCallId: b.id, toolName: b.name, input: b.input });
          if (!inputs.has(b.name)) inputs.set(b.name, []);
          inputs.get(b.name).push(b.input);
        }
      }
      continue;
    }
    responseId = null;
    const blocks = typeof content === 'string' ? [{ type: 'text', text: content }] : content;
    for (const b of blocks) {
      if (b.type === 'tool_result') {
        const call = messages.findLast((m) => m.role === 'assistant')?.content.find((p) => p.type === 'tool-call' && p.toolCallId === b.tool_use_id);
        if (!call) throw new Error(`a tool result for unknown call ${b.tool_use_id}`);
        const part = { type: 'tool-result', toolCallId: b.tool_use_id, toolName: call.toolName, output: { type: 'text', value: resultText(b.content) } };
        if (messages.at(-1).role === 'tool') messages.at(-1).content.push(part);
        else messages.push({ role: 'tool', content: [part] });
      } else if (b.type === 'text') {
        if (messages.at(-1)?.role === 'user') messages.at(-1).content += `\n\n${b.text}`;
        else {
          // The user stopped the agent mid-step (a rejected call, an interrupt): its turn ends there.
          if (messages.at(-1)?.role === 'tool') messages.push({ role: 'assistant', content: [{ type: 'text', text: INTERRUPTED }] });
          messages.push({ role: 'user', content: b.text });
          thinkSeconds.push(before !== null && Number.isFinite(at - before) ? Math.max(0, Math.round((at - before) / 100) / 10) : 0);
        }
      }
    }
  }
  // Drop responses left empty (thinking only), then end at the last complete turn.
  const kept = messages.filter((m) => m.role !== 'assistant' || m.content.length);
  const complete = (m, next) => m.role === 'assistant' && m.content.every((p) => p.type === 'text') && (!next || next.role === 'user');
  let end = kept.length;
  while (end > 0 && !complete(kept[end - 1], kept[end])) end--;
  const out = kept.slice(0, end);
  for (let i = 1; i < out.length; i++) {
    if (out[i].role !== 'tool') continue;
    const order = out[i - 1].content.filter((p) => p.type === 'tool-call').map((p) => p.toolCallId);
    out[i].content.sort((a, b) => order.indexOf(a.toolCallId) - order.indexOf(b.toolCallId));
  }
  const tools = Object.fromEntries([...inputs].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, seen]) => [name, { description: `Claude Code's ${name} tool`, inputSchema: schemaFromInputs(seen) }]));
  // The kept user messages are the first ones (only assistant messages were dropped, then the end).
  return { system: CLAUDE_CODE_SYSTEM, tools, messages: out, thinkSeconds: thinkSeconds.slice(0, out.filter((m) => m.role === 'user').length) };
}

/** The raw texts of a message (tool-call inputs as their string values, not JSON). */
function rawTexts(m) {
  if (typeof m.content === 'string') return [m.content];
  const out = [];
  for (const p of m.content) {
    if (p.type === 'text') out.push(p.text);
    else if (p.type === 'tool-call') out.push(...Object.values(p.input).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))));
    else if (p.type === 'tool-result') out.push(p.output.value);
  }
  return out;
}

/**
 * Needles derived from the data: lines the agent wrote into a tool call at message `neededAt`
 * (25–200 characters, words with a space between: not a bare path) whose last earlier occurrence is a tool output at
 * message `messageIndex`, at least `minGap` messages before — so at that step the model needed
 * an output it had seen that long ago (it may have seen it before too). One per source message,
 * at most `max`, spread evenly over the candidates.
 */
export function deriveNeedles(messages, { max = 8, minGap = Math.max(20, Math.round(0.1 * messages.length)) } = {}) {
  const texts = messages.map((m) => rawTexts(m).join('\n'));
  const candidates = [];
  const seen = new Set();
  messages.forEach((m, j) => {
    if (m.role !== 'assistant') return;
    for (const p of m.content) {
      if (p.type !== 'tool-call') continue;
      for (const v of Object.values(p.input)) {
        if (typeof v !== 'string') continue;
        for (const raw of v.split('\n')) {
          const line = raw.trim();
          if (line.length < 25 || line.length > 200 || !/[A-Za-z_]{4}/.test(line) || !/\S\s+\S/.test(line) || seen.has(line)) continue;
          let i = j - 1;
          while (i >= 0 && !texts[i].includes(line)) i--;
          if (i < 0 || messages[i].role !== 'tool' || j - i < minGap) continue;
          seen.add(line);
          candidates.push({ value: line, messageIndex: i, neededAt: j });
        }
      }
    }
  });
  const bySource = [];
  const sources = new Set();
  for (const c of candidates) {
    if (sources.has(c.messageIndex)) continue;
    sources.add(c.messageIndex);
    bySource.push(c);
  }
  const pick = bySource.length <= max ? bySource : Array.from({ length: max }, (_, k) => bySource[Math.floor((k * bySource.length) / max)]);
  return pick.map((c, k) => ({ id: `d${k + 1}`, kind: 'tool', derived: true, ...c }));
}

/** `{ name, description, system, tools, messages, thinkSeconds, needles, source }` for real
 * session `name`; `thinkSeconds`: the gap before each user message, from the log's own
 * timestamps (Claude Code), none after the task (mini-swe-agent: no human in the loop). */
export function loadReal(name, options) {
  const source = REAL[name];
  if (!source) throw new Error(`unknown real session ${JSON.stringify(name)}`);
  const text = sourceText(name, options);
  const convert = { 'mini-swe-agent-toolcall': (t) => convertMiniSweAgent(JSON.parse(t)), 'claude-code-jsonl': convertClaudeCode }[source.format];
  if (!convert) throw new Error(`${name}: unknown format ${source.format}`);
  const { system, tools, messages, thinkSeconds } = convert(text);
  return { name, description: source.description, system, tools, messages, thinkSeconds, needles: deriveNeedles(messages), source };
}

async function main(argv) {
  if (argv[0] !== '--extract') {
    console.log('usage: node bench/arena/sessions/real.mjs --extract   # local copies of the raw files from the fetch mirror, under real/<name>/raw/ (git-ignored)');
    return;
  }
  for (const name of Object.keys(REAL)) {
    const bytes = rawFile(name);
    const file = localCopy(name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, bytes);
    console.error(`wrote ${file} (${bytes.length} bytes, blob ${REAL[name].blob})`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((e) => {
    console.error(e.message);
    process.exit(1);
  });
}
