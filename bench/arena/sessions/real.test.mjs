// node --test bench/arena/sessions/
// The real sessions' converter and derived needles, on hand-made trajectories (always) and on the
// pinned raw files (when their data is on this machine: see real.mjs).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { init, countTokens } from 'context-compactor';
import { modelMessageSchema } from 'ai';
import { available, blobId, CLAUDE_CODE_SYSTEM, convertClaudeCode, INTERRUPTED, convertMiniSweAgent, deriveNeedles, loadReal, REAL, repairRedactedEscapes, sourceText } from './real.mjs';
import { generate, defaultSessions } from './index.mjs';
import { sessionStats, validateShape } from './lib.mjs';

before(async () => {
  await init();
});

const call = (id, command) => ({ id, type: 'function', function: { name: 'bash', arguments: JSON.stringify({ command }) } });
const tool = (id, content) => ({ role: 'tool', tool_call_id: id, content });

/** A small trajectory in mini-swe-agent's tool-calling shape. */
function trajectory() {
  return {
    info: { exit_status: 'Submitted' },
    messages: [
      { role: 'system', content: 'You are a shell agent.' },
      { role: 'user', content: 'Fix the bug.' },
      { role: 'assistant', content: 'Looking around.', tool_calls: [call('c1', 'ls'), call('c2', 'cat a.py')] },
      // results out of call order, as two messages
      tool('c2', 'def f():\n    return 1'),
      tool('c1', 'a.py'),
      { role: 'assistant', content: '', tool_calls: [call('c3', 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat patch.txt')] },
      { role: 'exit', content: 'diff --git a/a.py b/a.py', extra: { exit_status: 'Submitted' } },
    ],
  };
}

test('convertMiniSweAgent: system, task, calls with their recorded ids, results in call order, the exit as the last result', () => {
  const s = convertMiniSweAgent(trajectory());
  assert.equal(s.system, 'You are a shell agent.');
  assert.deepEqual(Object.keys(s.tools), ['bash']);
  assert.deepEqual(
    s.messages.map((m) => m.role),
    ['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant'],
  );
  assert.deepEqual(s.messages[1].content, [
    { type: 'text', text: 'Looking around.' },
    { type: 'tool-call', toolCallId: 'c1', toolName: 'bash', input: { command: 'ls' } },
    { type: 'tool-call', toolCallId: 'c2', toolName: 'bash', input: { command: 'cat a.py' } },
  ]);
  assert.deepEqual(
    s.messages[2].content.map((p) => [p.toolCallId, p.output]),
    [
      ['c1', { type: 'text', value: 'a.py' }],
      ['c2', { type: 'text', value: 'def f():\n    return 1' }],
    ],
  );
  assert.equal(s.messages[3].content.length, 1, 'an empty text is dropped');
  assert.deepEqual(s.messages[4].content[0].output, { type: 'text', value: 'diff --git a/a.py b/a.py' });
  assert.deepEqual(s.messages[5].content, [{ type: 'text', text: '[run ended: Submitted]' }]);
  assert.deepEqual(validateShape({ ...s, needles: [] }), []);
  for (const m of s.messages) assert.ok(modelMessageSchema.safeParse(m).success);
});

test('convertMiniSweAgent refuses a result without a call and calls left without results', () => {
  const t = trajectory();
  t.messages.splice(3, 0, tool('nope', 'x'));
  assert.throws(() => convertMiniSweAgent(t), /unknown call nope/);
  const u = trajectory();
  u.messages.splice(3, 2);
  assert.throws(() => convertMiniSweAgent(u), /without results/);
});

/** A small Claude Code session log: records as Claude Code writes them. */
function claudeCodeLog() {
  const a = (id, block, extra = {}) => ({ type: 'assistant', isSidechain: false, message: { id, role: 'assistant', content: [block] }, ...extra });
  const u = (content, extra = {}) => ({ type: 'user', isSidechain: false, message: { role: 'user', content }, ...extra });
  const result = (id, content) => u([{ type: 'tool_result', tool_use_id: id, content }]);
  return [
    { type: 'summary', summary: 'Earlier work' },
    u('Review the code.'),
    a('m1', { type: 'thinking', thinking: '', signature: 'x' }),
    a('m1', { type: 'text', text: 'Reading both files.' }),
    a('m1', { type: 'tool_use', id: 't1', name: 'Read', input: { file_path: '/a.rs' } }),
    a('m1', { type: 'tool_use', id: 't2', name: 'Read', input: { file_path: '/b.rs', limit: 20 } }),
    result('t2', [{ type: 'text', text: 'fn b() {}' }, { type: 'image', source: {} }]),
    result('t1', 'fn a() {}'),
    { type: 'user', isSidechain: true, message: { role: 'user', content: 'a sub-agent prompt' } },
    { type: 'system', subtype: 'compact_boundary' },
    u('This session is being continued from a previous conversation...', { isCompactSummary: true }),
    a('m2', { type: 'text', text: 'Both fine.' }),
    { type: 'system', subtype: 'turn_duration' },
    u('Commit.'),
    a('m3', { type: 'tool_use', id: 't3', name: 'Bash', input: { command: 'git commit -am x' } }),
  ]
    .map((r) => JSON.stringify(r))
    .join('\n');
}

test('convertClaudeCode: one message per API response, results in call order, Claude Code\'s own summary and side chains out, ends at the last complete turn', () => {
  const s = convertClaudeCode(claudeCodeLog());
  assert.equal(s.system, CLAUDE_CODE_SYSTEM);
  assert.deepEqual(
    s.messages.map((m) => m.role),
    ['user', 'assistant', 'tool', 'assistant'],
    'the last turn stops mid-step (a call without a result): it is left out',
  );
  assert.deepEqual(s.messages[1].content, [
    { type: 'text', text: 'Reading both files.' },
    { type: 'tool-call', toolCallId: 't1', toolName: 'Read', input: { file_path: '/a.rs' } },
    { type: 'tool-call', toolCallId: 't2', toolName: 'Read', input: { file_path: '/b.rs', limit: 20 } },
  ]);
  assert.deepEqual(
    s.messages[2].content.map((p) => [p.toolCallId, p.output.value]),
    [
      ['t1', 'fn a() {}'],
      ['t2', 'fn b() {}\n[image]'],
    ],
  );
  assert.deepEqual(s.messages[3].content, [{ type: 'text', text: 'Both fine.' }]);
  assert.deepEqual(s.tools.Read.inputSchema, { type: 'object', properties: { file_path: { type: 'string' }, limit: { type: 'number' } } });
  assert.deepEqual(Object.keys(s.tools), ['Bash', 'Read'], 'every tool called, sorted');
  assert.deepEqual(validateShape({ ...s, needles: [] }), []);
  for (const m of s.messages) assert.ok(modelMessageSchema.safeParse(m).success);
});

test('convertClaudeCode: a user\'s text right after tool results ends the interrupted turn with one closing text', () => {
  const log = [
    { type: 'user', message: { role: 'user', content: 'Install it.' } },
    { type: 'assistant', message: { id: 'm1', role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'pacman -S glow' } }] } },
    { type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'The user doesn\'t want to proceed with this tool use.' }] } },
    { type: 'user', message: { role: 'user', content: [{ type: 'text', text: '[Request interrupted by user for tool use]' }] } },
    { type: 'user', message: { role: 'user', content: 'Use the terminal viewer.' } },
    { type: 'assistant', message: { id: 'm2', role: 'assistant', content: [{ type: 'text', text: 'Done.' }] } },
  ]
    .map((r) => JSON.stringify(r))
    .join('\n');
  const s = convertClaudeCode(log);
  assert.deepEqual(
    s.messages.map((m) => m.role),
    ['user', 'assistant', 'tool', 'assistant', 'user', 'assistant'],
  );
  assert.deepEqual(s.messages[3].content, [{ type: 'text', text: INTERRUPTED }]);
  assert.equal(s.messages[4].content, '[Request interrupted by user for tool use]\n\nUse the terminal viewer.');
  assert.deepEqual(validateShape({ ...s, needles: [] }), []);
});

test('repairRedactedEscapes: only a line a redaction broke, its lone backslash kept as a character', () => {
  const good = JSON.stringify({ type: 'user', message: { content: 'a\\[REDACTED_IP] stays' } });
  const broken = '{"type":"user","message":{"content":"Claude\\[REDACTED_EMAIL] and \\\\\\[REDACTED_IP]"}}';
  assert.throws(() => JSON.parse(broken));
  const { text, repaired } = repairRedactedEscapes([good, '', broken, ''].join('\n'));
  assert.deepEqual(repaired, [3]);
  const lines = text.split('\n');
  assert.equal(lines[0], good, 'a line that parses is untouched');
  assert.equal(JSON.parse(lines[2]).message.content, 'Claude\\[REDACTED_EMAIL] and \\\\[REDACTED_IP]');
  assert.throws(() => repairRedactedEscapes('{"broken": '), 'other damage still throws');
});

test('deriveNeedles: a line written into a late call, last seen in a tool output long before', () => {
  const line = 'return compute_the_answer(alpha, beta, gamma)';
  const messages = [{ role: 'user', content: 'task' }];
  const step = (k, command, output) => {
    messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `c${k}`, toolName: 'bash', input: { command } }] });
    messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `c${k}`, toolName: 'bash', output: { type: 'text', value: output } }] });
  };
  step(0, 'cat a.py', `def f():\n    ${line}\n`); // tool output at message 2
  for (let k = 1; k <= 15; k++) step(k, `echo step ${k}`, `step ${k} done`);
  step(16, `sed -i 's/x/y/' a.py\n${line}`, 'ok'); // message 33 needs it: 31 messages later
  // the same line written again later: its last occurrence is now that call, not a tool output
  step(17, `printf '%s' '${line}'`, 'ok');
  // a line that only ever came from the user is no needle
  messages[0].content = 'task\nthe_user_wrote_this_line(long_ago, and_it_counts)';
  step(18, 'the_user_wrote_this_line(long_ago, and_it_counts)', 'ok');
  const needles = deriveNeedles(messages, { minGap: 20 });
  assert.deepEqual(needles, [{ id: 'd1', kind: 'tool', derived: true, value: line, messageIndex: 2, neededAt: 33 }]);
  assert.deepEqual(deriveNeedles(messages, { minGap: 40 }), [], 'a gap below minGap is no needle');
});

test('blobId is git\'s blob id', () => {
  const bytes = Buffer.from('hello arena\n');
  const git = execFileSync('git', ['hash-object', '--stdin'], { input: bytes }).toString().trim();
  assert.equal(blobId(bytes), git);
});

test('the default sessions include a real one only when its data is here', () => {
  for (const name of Object.keys(REAL)) assert.equal(defaultSessions().includes(name), available(name));
});

for (const name of Object.keys(REAL)) {
  test(`${name}: the pinned trajectory as an arena session`, { skip: available(name) ? false : `no data for ${name} here (see real.mjs)` }, async (t) => {
    const s = generate(name);

    await t.test('loads deterministically, every message an AI SDK ModelMessage', () => {
      assert.deepEqual(loadReal(name), s);
      assert.deepEqual(validateShape(s), []);
      s.messages.forEach((m, i) => {
        const r = modelMessageSchema.safeParse(m);
        assert.ok(r.success, `message ${i}: ${r.error?.message}`);
      });
    });

    await t.test('keeps every call and output of the main agent, with the recorded ids', () => {
      const text = sourceText(name);
      const raw = [];
      const results = new Map();
      if (REAL[name].format === 'claude-code-jsonl') {
        for (const r of text.split('\n').filter(Boolean).map((l) => JSON.parse(l))) {
          if (r.isSidechain || !Array.isArray(r.message?.content)) continue;
          for (const b of r.message.content) {
            if (b.type === 'tool_use') raw.push(b.id);
            if (b.type === 'tool_result') results.set(b.tool_use_id, typeof b.content === 'string' ? b.content : b.content.map((x) => (x.type === 'text' ? x.text : `[${x.type}]`)).join('\n'));
          }
        }
      } else {
        const traj = JSON.parse(text);
        for (const m of traj.messages) {
          for (const c of m.tool_calls ?? []) raw.push(c.id);
          if (m.role === 'tool') results.set(m.tool_call_id, m.content);
        }
        results.set(raw.at(-1), traj.messages.at(-1).content); // the submit command: its exit record
      }
      const ids = s.messages.flatMap((m) => (m.role === 'assistant' ? m.content.filter((p) => p.type === 'tool-call').map((p) => p.toolCallId) : []));
      assert.equal(new Set(ids).size, ids.length);
      assert.deepEqual(ids, raw.slice(0, ids.length), 'the recorded calls, in order');
      assert.ok(raw.length - ids.length <= 1, `${raw.length - ids.length} calls left out (only a last one without a result may be)`);
      for (const m of s.messages) if (m.role === 'tool') for (const p of m.content) assert.equal(p.output.value, results.get(p.toolCallId), p.toolCallId);
      const st = sessionStats(s, countTokens);
      assert.ok(st.tokens > 60_000, `${st.tokens} tokens: long enough to overflow a 32k window twice over`);
      assert.ok(st.toolCalls > 100, `${st.toolCalls} tool calls`);
    });

    await t.test('derived needles: seen in a tool output, absent until written into a later call', () => {
      const inputs = (p) => Object.values(p.input).filter((v) => typeof v === 'string');
      const texts = s.messages.map((m) => (typeof m.content === 'string' ? m.content : m.content.flatMap((p) => (p.type === 'text' ? [p.text] : p.type === 'tool-call' ? inputs(p) : [p.output.value])).join('\n')));
      for (const n of s.needles) {
        assert.equal(s.messages[n.messageIndex].role, 'tool', n.id);
        assert.ok(texts[n.messageIndex].includes(n.value), `${n.id} in its tool output`);
        for (let k = n.messageIndex + 1; k < n.neededAt; k++) assert.ok(!texts[k].includes(n.value), `${n.id} seen again at ${k}`);
        const step = s.messages[n.neededAt];
        assert.equal(step.role, 'assistant');
        assert.ok(step.content.some((p) => p.type === 'tool-call' && inputs(p).some((v) => v.includes(n.value))), `${n.id} written into the call`);
        assert.ok(n.neededAt - n.messageIndex >= 0.1 * s.messages.length, `${n.id}: gap ${n.neededAt - n.messageIndex}`);
      }
      assert.equal(new Set(s.needles.map((n) => n.messageIndex)).size, s.needles.length, 'one needle per source output');
    });
  });
}
