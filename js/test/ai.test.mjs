// The AI SDK helpers as plain functions: recovery tools over a store (paging, grep, ls, errors
// as text) and the Anthropic breakpoint rules. The SDK-driven runs are in tests/ai-sdk/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANTHROPIC_MAX_BREAKPOINTS, MemoryStore, anthropicCacheControl, init, recoveryTools } from '../dist/entry/node.js';

test('read_file pages with offset/limit and numbers lines; grep and ls find what is stored', async () => {
  const store = new MemoryStore();
  const text = Array.from({ length: 1_200 }, (_, i) => `line ${i + 1}${i === 899 ? ' NEEDLE' : ''}`).join('\n');
  await store.write('/tool_outputs/log.txt', text);
  await store.write('/tool_outputs/deep/x.json', '{"NEEDLE": true}');
  await store.write('/conversation_history/conversation_1.md', '# t');
  // Made before the core is loaded (a module's top level), used after.
  const tools = recoveryTools(store, { maxLineChars: 50 });
  await init();

  const first = await tools.read_file.execute({ path: '/tool_outputs/log.txt' });
  assert.equal(first.split('\n')[0], '  1\tline 1');
  assert.match(first, /700 more lines: read_file with offset=500$/);
  const page = await tools.read_file.execute({ path: '/tool_outputs/log.txt', offset: 898, limit: 3 });
  assert.deepEqual(page.split('\n').slice(0, 3), ['899\tline 899', '900\tline 900 NEEDLE', '901\tline 901']);
  await store.write('/wide.txt', 'x'.repeat(500));
  // A line over maxLineChars wraps onto the next numbers: nothing of it is cut.
  assert.equal(await tools.read_file.execute({ path: '/wide.txt' }), Array.from({ length: 10 }, (_, i) => `${String(i + 1).padStart(2)}\t${'x'.repeat(50)}`).join('\n'));
  assert.match(await tools.read_file.execute({ path: '/tool_outputs/nope.txt' }), /^Error: no file at \/tool_outputs\/nope.txt/);
  assert.match(await tools.read_file.execute({ path: '/tool_outputs/log.txt', offset: 5_000 }), /^Error: offset 5000 is past the end/);
  assert.match(await tools.read_file.execute({ path: '../etc/passwd' }), /^Error: invalid store path/);

  assert.equal(await tools.grep.execute({ pattern: 'NEEDLE' }), '/tool_outputs/deep/x.json:1: {"NEEDLE": true}\n/tool_outputs/log.txt:900: line 900 NEEDLE');
  assert.equal(await tools.grep.execute({ pattern: 'NEEDLE', path: '/tool_outputs/log' }), '/tool_outputs/log.txt:900: line 900 NEEDLE');
  assert.match(await tools.grep.execute({ pattern: 'absent' }), /^No match/);
  const many = await recoveryTools(store, { maxMatches: 5 }).grep.execute({ pattern: 'line' });
  assert.equal(many.split('\n').length, 6);
  assert.match(many, /more matches/);

  assert.equal(await tools.ls.execute({}), '/conversation_history/\n/tool_outputs/\n/wide.txt');
  assert.equal(await tools.ls.execute({ path: '/tool_outputs' }), '/tool_outputs/deep/\n/tool_outputs/log.txt');
  assert.match(await tools.ls.execute({ path: '/memories/' }), /^Nothing stored/);

  // The schemas validate what the model sends.
  assert.equal(tools.read_file.inputSchema.validate({ path: '/a', offset: 1.5 }).success, false);
  assert.equal(tools.read_file.inputSchema.validate({ offset: 1 }).success, false);
  assert.equal(tools.grep.inputSchema.validate({ pattern: 'x', path: '/' }).success, true);
  assert.equal(tools.ls.inputSchema.validate({ extra: 1 }).success, false);
});

test('anthropicCacheControl: system and newest message marked, never more than 4, input untouched', () => {
  const cc = (m) => m.providerOptions?.anthropic?.cacheControl;
  const messages = [
    { role: 'system', content: 'stable' },
    ...Array.from({ length: 10 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `m${i}` })),
  ];
  const once = anthropicCacheControl(messages);
  assert.deepEqual(once.map((m, i) => (cc(m) ? i : -1)).filter((i) => i >= 0), [0, 10]);
  assert.deepEqual(cc(once[10]), { type: 'ephemeral' });
  assert.ok(messages.every((m) => !m.providerOptions), 'the input is not changed');

  // Persisted markers accumulate over steps: the oldest go first, the total stays within 4.
  let history = once;
  for (let step = 0; step < 6; step++) {
    history = anthropicCacheControl([...history, { role: 'user', content: `s${step}`, providerOptions: { anthropic: { other: 1 } } }], { ttl: '1h' });
    const marked = history.map((m, i) => (cc(m) ? i : -1)).filter((i) => i >= 0);
    assert.ok(marked.length <= ANTHROPIC_MAX_BREAKPOINTS, `${marked}`);
    assert.ok(marked.includes(0) && marked.includes(history.length - 1));
    assert.deepEqual(cc(history.at(-1)), { type: 'ephemeral', ttl: '1h' });
    assert.equal(history.at(-1).providerOptions.anthropic.other, 1, 'other provider options kept');
  }
  // With 2 breakpoints left for messages (tools carry the other 2): exactly 2.
  const two = anthropicCacheControl(history, { maxBreakpoints: 2 });
  assert.equal(two.filter(cc).length, 2);
  // A user's own marker on a recent message is kept when there is room.
  const mine = anthropicCacheControl([{ role: 'user', content: 'a', providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } } }, { role: 'assistant', content: 'b' }]);
  assert.equal(mine.filter(cc).length, 2);
});

test('recovery tool limits that are not whole numbers >= 1 are invalid_config naming the option', async () => {
  await init();
  const store = new MemoryStore();
  for (const [option, value] of [['defaultLimit', 0], ['maxLineChars', 0], ['maxMatches', 0], ['maxPageChars', 0], ['maxPageChars', -1], ['maxPageChars', 0.5], ['defaultLimit', -1], ['defaultLimit', 2.5]]) {
    const tools = recoveryTools(store, { [option]: value });
    assert.throws(() => tools.read_file.description, (e) => e.code === 'invalid_config' && e.message.includes(option) && e.message.includes('whole number from 1'), `${option}: ${value}`);
  }
  for (const value of [NaN, -Infinity]) assert.throws(() => recoveryTools(store, { maxPageChars: value }), (e) => e.code === 'invalid_config' && /maxPageChars/.test(e.message), String(value));
  // No page limit at all is fine, and so is 1; a fraction (10 % of a window) is its whole part.
  assert.match(recoveryTools(store, { maxPageChars: Infinity, defaultLimit: 1 }).read_file.description, /read/i);
  await store.write('/a.txt', 'x'.repeat(30));
  const page = await recoveryTools(store, { maxPageChars: 13107.2 }).read_file.execute({ path: '/a.txt' });
  assert.match(page, /x{30}/);
});
