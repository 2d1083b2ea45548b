// A long coding-agent session, generated deterministically (no randomness, no clock): the agent
// explores a repository, runs a test suite with huge logs, searches the web, reads files and
// writes a fix: about 130k o200k tokens in 35 messages.

const words = ['cache', 'token', 'request', 'handler', 'retry', 'budget', 'parser', 'window', 'offset', 'stream', 'buffer', 'index'];
const pick = (i, k) => words[(i * 31 + k * 17) % words.length];

function testLog(run, lines) {
  const out = [`$ cargo test --workspace  (run ${run})`, '   Compiling context-service v0.4.2'];
  for (let i = 0; i < lines; i++) {
    const ok = (i * 7 + run) % 53 !== 0;
    out.push(`test ${pick(i, 1)}::${pick(i, 2)}_${pick(i, 3)}_${i} ... ${ok ? 'ok' : 'FAILED'}`);
    if (!ok) out.push(`    thread '${pick(i, 1)}::${pick(i, 2)}_${i}' panicked at src/${pick(i, 4)}.rs:${(i * 13) % 400}:9: assertion failed: budget >= used (left: ${i * 3}, right: ${i * 5})`);
  }
  out.push(`test result: FAILED. ${lines - Math.floor(lines / 53)} passed; ${Math.floor(lines / 53)} failed; finished in 41.${run}s`);
  return out.join('\n');
}

function searchResults(query, n) {
  return JSON.stringify({ query, results: Array.from({ length: n }, (_, i) => ({
    title: `${query}: ${pick(i, 5)} ${pick(i, 6)} in production (part ${i})`,
    url: `https://docs.example.org/${pick(i, 7)}/${i}`,
    snippet: `How ${pick(i, 8)} and ${pick(i, 9)} interact when the ${pick(i, 10)} fills up; see section ${i % 9}. `.repeat(3),
  })) });
}

function sourceFile(name, lines) {
  return Array.from({ length: lines }, (_, i) =>
    i % 12 === 0 ? `// ${name}: ${pick(i, 1)} ${pick(i, 2)} handling` : `    let ${pick(i, 3)}_${i} = ${pick(i, 4)}.${pick(i, 5)}(${i}).await?;`).join('\n');
}

let id = 0;
function call(toolName, input, output) {
  const toolCallId = `call_${String(++id).padStart(3, '0')}`;
  return [
    { role: 'assistant', content: [{ type: 'text', text: `Running ${toolName}.` }, { type: 'tool-call', toolCallId, toolName, input }] },
    { role: 'tool', content: [{ type: 'tool-result', toolCallId, toolName, output: typeof output === 'string' ? { type: 'text', value: output } : { type: 'json', value: output } }] },
  ];
}

export function session() {
  id = 0;
  return [
    { role: 'system', content: 'You are a senior engineer working in the context-service repository. Use tools; keep answers short.' },
    { role: 'user', content: 'The retry budget tests fail intermittently. Find out why and fix it.' },
    ...call('bash', { cmd: 'ls -R src' }, Array.from({ length: 60 }, (_, i) => `src/${pick(i, 1)}/${pick(i, 2)}.rs`).join('\n')),
    ...call('open_file', { path: 'src/retry/budget.rs' }, sourceFile('budget.rs', 400)),
    ...call('run_tests', { filter: '' }, testLog(1, 3_000)),
    { role: 'user', content: 'Anything about this in the tokio or tower docs?' },
    ...call('web_search', { query: 'tower retry budget semantics' }, JSON.parse(searchResults('tower retry budget', 120))),
    ...call('web_search', { query: 'tokio time pause tests flaky' }, searchResults('tokio time pause', 30)),
    ...call('open_file', { path: 'src/retry/policy.rs' }, sourceFile('policy.rs', 300)),
    ...call('run_tests', { filter: 'retry' }, testLog(2, 2_600)),
    ...call('edit_file', { path: 'src/retry/budget.rs', old_text: 'budget >= used', new_text: 'budget.saturating_sub(used) > 0' }, 'Edited src/retry/budget.rs (1 replacement).'),
    ...call('open_file', { path: 'src/retry/budget.rs' }, sourceFile('budget.rs (edited)', 400)),
    ...call('write_file', { path: 'tests/retry_budget_race.rs', content: sourceFile('retry_budget_race.rs', 260) }, 'Wrote tests/retry_budget_race.rs.'),
    ...['saturating_sub', 'Budget::new', 'retry_after', 'tokio::time::pause'].flatMap((q) =>
      call('grep', { pattern: q, path: 'src' }, sourceFile(`grep ${q}`, 90))),
    ...call('run_tests', { filter: 'retry' }, testLog(3, 2_400)),
    { role: 'assistant', content: 'The budget underflowed when two retries raced; it now saturates. Tests pass except two unrelated ones.' },
    { role: 'user', content: 'Great. Summarize what you changed and why.' },
  ];
}
