// Re-read accounting (lib/reread.mjs): which earlier outputs a step used, whether a prompt holds
// them, and what a contender pays (a re-read) or loses when it does not.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { countTokens, init } from 'context-compactor';
import { account, detectUses, distinctive, editsPath, fragmentsOf, page, PAGE_BEFORE, PAGE_CHARS, readOf, recoverable, roundTrip, shellEdits, shellRead, visible } from '../lib/reread.mjs';
import { fromAiSdk } from '../lib/prompt.mjs';

await init();

/** A session of bash steps: `steps` is `[command or {text, command, tool, input}, output]`. */
function session(steps, { user = 'Fix the bug.', system = 'You are a shell agent.' } = {}) {
  const messages = [{ role: 'user', content: user }];
  steps.forEach(([step, output], k) => {
    const s = typeof step === 'string' ? { command: step } : step;
    const toolCallId = `c${k}`;
    const content = [];
    if (s.text) content.push({ type: 'text', text: s.text });
    content.push({ type: 'tool-call', toolCallId, toolName: s.tool ?? 'bash', input: s.input ?? { command: s.command } });
    messages.push({ role: 'assistant', content });
    messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName: s.tool ?? 'bash', output: { type: 'text', value: output } }] });
  });
  messages.push({ role: 'assistant', content: [{ type: 'text', text: 'Done.' }] });
  return { name: 't', system, messages };
}

const filler = (k, n = 5) => Array.from({ length: n }, (_, i) => `filler ${k}.${i}`).join('\n');
const SOURCE = ['def build(self, path):', '    if node is None and path is not None:', '        return None', '    raise AstroidBuildingError("Unable to load file {path}")', '}'].join('\n');

test('a quote of an earlier output is a use of that output', () => {
  const s = session([
    ['grep -n build astroid/builder.py', SOURCE],
    ['ls', filler(1)],
    ['pytest -q', filler(2)],
    [{ command: "python - <<'EOF'\nsrc = open('b.py').read()\nsrc = src.replace('if node is None and path is not None:', 'if node is None:')\nEOF" }, 'ok'],
  ]);
  const uses = detectUses(s);
  assert.deepEqual([...uses.keys()], [7]);
  const [use] = uses.get(7);
  assert.equal(use.source, 'c0');
  assert.equal(use.sourceIndex, 2);
  assert.equal(use.rule, 'quote');
  assert.equal(use.whole, false);
  assert.deepEqual(use.fragments, ['if node is None and path is not None:']);
});

test('true negatives: short common lines, lines the agent or the user wrote first, lines of no output', () => {
  const output = ['import os', 'return None', '}', 'x = compute_total(items)', 'the user said: keep the public API stable please'].join('\n');
  const s = session(
    [
      ['cat notes.txt', output],
      ['ls', filler(1)],
      ['pwd', filler(2)],
      // short lines (under 25 characters, and not right after a read), a line of no output
      [{ command: "cat > t.py <<'EOF'\nimport os\nreturn None\n}\nx = compute_total(items)\nprint('a line that no tool ever printed before')\nEOF" }, ''],
      // a line the agent wrote itself before (its own heredoc), printed back by a tool since
      [{ command: "cat > u.py <<'EOF'\n# a comment line that the agent wrote itself\nEOF" }, ''],
      ['cat u.py', '# a comment line that the agent wrote itself'],
      ['ls', filler(3)],
      [{ command: "echo '# a comment line that the agent wrote itself' >> v.py" }, ''],
      // a line the user gave (the task), printed back by a tool
      ['ls', filler(4)],
      [{ command: "echo 'the user said: keep the public API stable please' > w.txt" }, ''],
    ],
    { user: 'Fix it; the user said: keep the public API stable please' },
  );
  assert.deepEqual([...detectUses(s).entries()], []);
  assert.equal(distinctive('return None;'), false);
  assert.equal(distinctive('/usr/lib/python3/site-packages/astroid/builder.py'), false, 'a bare path');
  assert.equal(distinctive('if node is None and path is not None:'), true);
});

test('the call right after a read: a short quote of it, or an edit of that file, uses it', () => {
  const file = ['[Desktop Entry]', 'Name=Bing Wallpaper', 'Icon=preferences-desktop-wallpaper', 'Terminal=false'].join('\n');
  const s = session([
    [{ tool: 'Read', input: { file_path: '/p/app.desktop' } }, file.split('\n').map((l, i) => `${String(i + 1).padStart(6)}→${l}`).join('\n')],
    // right after: an Edit quoting one short line (no space: too bare for an older output)
    [{ tool: 'Edit', input: { file_path: '/p/app.desktop', old_string: 'Icon=preferences-desktop-wallpaper', new_string: 'Icon=bing' } }, 'edited'],
    ["sed -n '1,4p' setup.cfg", 'wrapt>=1.11,<1.14\nsix'],
    // an edit by pattern (the sed pattern is the quote)
    ["sed -i 's/wrapt>=1.11,<1.14/wrapt>=1.11,<3.0/' setup.cfg", ''],
    ["sed -n '300,304p' astroid/modutils.py", SOURCE],
    // an edit by line number: it needs the whole read
    ["sed -i '302d' astroid/modutils.py", ''],
    ['cat patch.txt', SOURCE],
    // overwriting the file just read needs none of it
    ['git diff > patch.txt', ''],
    ['cat astroid/builder.py', SOURCE],
    ['ls', filler(1)],
    // two steps after the read: a short line is no longer a quote of it
    [{ command: 'echo Icon=preferences-desktop-wallpaper', text: 'Name=Bing Wallpaper' }, ''],
  ]);
  const uses = detectUses(s);
  const summary = [...uses.values()].flat().map((u) => [u.step, u.source, u.rule, u.whole, u.fragments]);
  assert.deepEqual(summary, [
    [3, 'c0', 'after-read', false, ['Icon=preferences-desktop-wallpaper']],
    [7, 'c2', 'after-read', false, ['wrapt>=1.11,<1.14']],
    [11, 'c4', 'after-read', true, []],
  ]);
});

test('reads and in-place edits of a shell command', () => {
  assert.equal(shellRead("cd /testbed && sed -n '240,260p' astroid/spec.py"), 'astroid/spec.py');
  assert.equal(shellRead('cat astroid/modutils.py | head -20'), 'astroid/modutils.py');
  assert.equal(shellRead('grep -n "x" astroid/manager.py -B5 -A20'), 'astroid/manager.py');
  assert.equal(shellRead('grep -rn "x" astroid/'), undefined, 'a recursive search is not a read of one file');
  assert.equal(shellRead("cat > t.py << 'EOF'"), undefined, 'a heredoc write');
  assert.equal(shellRead("sed -i 's/a/b/' f.py"), undefined);
  assert.equal(shellEdits("sed -i 's/a/b/' setup.cfg", 'setup.cfg'), true);
  assert.equal(shellEdits("perl -pi -e 's/a/b/' setup.cfg", 'setup.cfg'), true);
  assert.equal(shellEdits('git diff > patch.txt && cat patch.txt', 'patch.txt'), false);
  assert.equal(readOf({ toolName: 'Read', input: { file_path: '/a/b.rs' } }), '/a/b.rs');
  assert.equal(editsPath({ toolName: 'Edit', input: { file_path: '/repo/a/b.rs' } }, 'a/b.rs'), true);
  assert.equal(editsPath({ toolName: 'Write', input: { file_path: '/repo/a/b.rs' } }, 'a/b.rs'), false);
  assert.deepEqual(fragmentsOf("grep -n \"mod_or_pack = os.path.join(directory, \\\"__init__\\\")\" f.py\n  sed -i 's/wrapt>=1.11,<1.14/x/' s"), [
    'grep -n "mod_or_pack = os.path.join(directory, \\"__init__\\")" f.py',
    'mod_or_pack = os.path.join(directory, "__init__")',
    "sed -i 's/wrapt>=1.11,<1.14/x/' s",
    's/wrapt>=1.11,<1.14/x/',
    'wrapt>=1.11,<1.14',
  ]);
});

/** An AI SDK prompt holding `texts` as one tool call and its result each. */
function promptWith(...results) {
  const messages = [{ role: 'user', content: 'Fix it.' }];
  results.forEach((value, k) => {
    messages.push({ role: 'assistant', content: [{ type: 'tool-call', toolCallId: `r${k}`, toolName: 'bash', input: { command: `step ${k}` } }] });
    messages.push({ role: 'tool', content: [{ type: 'tool-result', toolCallId: `r${k}`, toolName: 'bash', output: { type: 'text', value } }] });
  });
  return fromAiSdk(messages);
}

test('visible: the whole output, or every needed fragment, as is or JSON-escaped in a call input', () => {
  const use = { output: SOURCE, fragments: ['raise AstroidBuildingError("Unable to load file {path}")'], whole: false };
  assert.equal(visible(promptWith(SOURCE), use), true);
  assert.equal(visible(promptWith('[preview] raise AstroidBuildingError("Unable to load file {path}") …'), use), true, 'a preview that kept the line');
  assert.equal(visible(promptWith('[cleared]'), use), false);
  const asInput = fromAiSdk([{ role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'x', toolName: 'bash', input: { command: 'raise AstroidBuildingError("Unable to load file {path}")' } }] }]);
  assert.equal(visible(asInput, use), true, 'JSON-escaped inside a tool call');
  assert.equal(visible(promptWith('def build(self, path):'), { ...use, whole: true, fragments: [] }), false, 'a whole use needs the whole output');
});

test('the page a read_file would return: from a few lines before the needed part, at most PAGE_CHARS', () => {
  const output = Array.from({ length: 400 }, (_, i) => `line ${i} of the module`).join('\n');
  const p = page({ output, fragments: ['line 250 of the module'], whole: false });
  assert.deepEqual([p.offset, p.limit], [250 - PAGE_BEFORE, 100]);
  assert.ok(p.text.startsWith(`line ${250 - PAGE_BEFORE} of`) && p.text.includes('line 250 of the module'));
  const wide = page({ output, fragments: ['line 20 of the module', 'line 390 of the module'], whole: false });
  assert.deepEqual([wide.offset, wide.limit], [10, 381], 'widened to the last needed line');
  const long = 'x'.repeat(50_000) + ' the needle line here ' + 'y'.repeat(50_000);
  const q = page({ output: long, fragments: ['the needle line here'], whole: false });
  assert.ok(q.text.length <= PAGE_CHARS && q.text.includes('the needle line here'));
  assert.equal(page({ output, fragments: [], whole: true }).offset, 0);
  const trip = roundTrip({ output, source: 'c9', fragments: ['line 250 of the module'], whole: false }, 1);
  assert.match(trip.pieces[0], /name="read_file">\{"path":"\/reread\/c9","offset":240,"limit":100\}/);
});

test('account: a hidden use is a re-read when stored, a loss when not; a re-read stays until compacted away', () => {
  const use = { source: 'c0', output: SOURCE, fragments: ['raise AstroidBuildingError("Unable to load file {path}")'], whole: false };
  const other = { ...use, source: 'c1', fragments: ['if node is None and path is not None:'] };
  const count = (t) => countTokens(t);
  const R = roundTrip(use, 1).pieces.reduce((n, p) => n + count(p), 0);
  // call 1 sees it; call 2 does not (re-read: an extra call reading 1000 from the cache, R written);
  // call 3 extends the prompt (the page is carried, read at 0.1); call 4 needs it again: covered.
  const calls = [
    { step: 1, tokens: 900, pieces: 5, common: 0, uses: [{ use, visible: true }] },
    { step: 3, tokens: 1000, pieces: 7, common: 5, uses: [{ use, visible: false }] },
    { step: 5, tokens: 1100, pieces: 9, common: 7, uses: [] },
    { step: 7, tokens: 1200, pieces: 11, common: 9, uses: [{ use, visible: false }] },
    // a compaction rewrote the prompt before the page (common 3 < 7): gone; needed again: a second re-read
    { step: 9, tokens: 600, pieces: 5, common: 3, uses: [{ use, visible: false }] },
  ];
  const stored = () => true;
  const r = account(calls, { stored, count });
  assert.equal(r.rereads, 2);
  assert.equal(r.losses, 0);
  const expected = 0.1 * 1000 + 1.25 * R + 0.1 * R + 0.1 * R + 0.1 * 600 + 1.25 * R;
  assert.equal(r.rereadCost, Math.round(expected));
  assert.deepEqual(r.rereadCalls.map((c) => c.call), [2, 5]);
  // nothing stored: each hidden use is a loss, nothing is paid
  const lost = account(calls, { stored: () => false, count });
  assert.deepEqual([lost.rereads, lost.rereadCost, lost.losses], [0, 0, 3]);
  // a store that holds the output JSON-escaped (a transcript) still gives it back
  assert.equal(recoverable(use, (t) => JSON.stringify(SOURCE).includes(t)), true);
  // a rejected call retried for the same step is checked once, as the retry
  const retried = account(
    [
      { step: 3, tokens: 40_000, pieces: 9, common: 0, uses: [{ use: other, visible: false }] },
      { step: 3, tokens: 20_000, pieces: 6, common: 2, uses: [{ use: other, visible: true }] },
    ],
    { stored, count },
  );
  assert.deepEqual([retried.rereads, retried.losses], [0, 0]);
});

test('the arena: no management re-reads nothing; pruneMessages loses what it deleted; the columns add up', async () => {
  const { runOne, CONTENDERS } = await import('../lib/arena.mjs');
  const steps = [['grep -n build astroid/builder.py', SOURCE]];
  for (let k = 1; k < 8; k++) steps.push([`step ${k}`, filler(k, 40)]);
  steps.push([{ command: "python - <<'EOF'\nsrc = src.replace('if node is None and path is not None:', 'if node is None:')\nEOF" }, 'ok']);
  const s = { ...session(steps), tools: { bash: { description: 'Run', inputSchema: { type: 'object', properties: { command: { type: 'string' } } } } }, needles: [] };
  const byName = (n) => CONTENDERS.find((c) => c.name === n);
  const none = await runOne(byName('none'), s, 32_000);
  assert.equal(none.error, undefined, none.error);
  assert.deepEqual([none.uses, none.rereads, none.losses, none.rereadCost, none.effectiveCost], [1, 0, 0, 0, none.cost]);
  const pruned = await runOne(byName('ai-sdk pruneMessages'), s, 32_000);
  assert.deepEqual([pruned.uses, pruned.rereads, pruned.losses, pruned.effectiveCost], [1, 0, 1, pruned.cost]);
  assert.ok(pruned.effectiveCostIfRerun > pruned.cost, 'had it run the tool again, it would have paid');
});
