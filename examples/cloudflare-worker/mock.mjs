// The deterministic mock agent shared by worker.mjs and test.mjs: no API key, no randomness, no
// clock. Everything here is a pure function of the turn number (and the summary request), so the
// test can compute the exact tool output the worker produced and compare it with what it reads
// back from KV. No imports: this module runs unchanged in workerd and in Node.

export const MODEL = 'gpt-4o';
/** A deliberately small window, so offloads, tier 2 and tier 3 all happen within ~20 turns. */
export const CONTEXT_WINDOW = 8_000;

export const SYSTEM_PROMPT = 'You are a build assistant for the context-service repository. Run the test suite when asked about failures; keep answers short.';

const words = ['cache', 'token', 'request', 'handler', 'retry', 'budget', 'parser', 'window', 'offset', 'stream', 'buffer', 'index', 'ledger', 'quota'];
const pick = (i, k) => words[(i * 31 + k * 17) % words.length];

/** Odd turns (1, 3, 5, ...): the mock model runs the test suite — a large output, offloaded at
 * return time. Even turns: it opens a source file — a medium output that stays in the
 * conversation until tier 2 masks or dedupes it. */
export function callsTool(turn) {
  return turn % 2 === 1;
}

/** The files the mock model opens, in turn. Reading one again makes the older read a dedupe
 * candidate. */
export const FILES = ['src/retry/budget.rs', 'src/retry/policy.rs', 'src/cache/window.rs'];

/** The tool call the mock model makes on `turn`. */
export function toolCall(turn) {
  const toolCallId = `call_${String(turn).padStart(3, '0')}`;
  if (callsTool(turn)) return { toolCallId, toolName: 'run_tests', input: { run: turn, filter: pick(turn, 1) } };
  return { toolCallId, toolName: 'open_file', input: { path: FILES[(turn / 2 - 1) % FILES.length] } };
}

/** The `open_file` output: about 1,100-1,300 o200k tokens, under the offload threshold. The same
 * path always has the same content. */
export function sourceFile(path) {
  const seed = [...path].reduce((n, c) => (n * 31 + c.charCodeAt(0)) % 9973, 7);
  const lines = 70 + (seed % 11);
  return Array.from({ length: lines }, (_, i) =>
    i % 12 === 0
      ? `// ${path}: ${pick(i + seed, 1)} ${pick(i, 2)} handling (section ${i / 12 + 1})`
      : `    let ${pick(i + seed, 3)}_${i} = ${pick(i, 4)}.${pick(i + seed, 5)}(${(i * seed) % 1000}).await?;`).join('\n');
}

/**
 * The `run_tests` output for a run: a test log of 80-110 lines, about 3,300-4,200 o200k tokens
 * (well over the offload threshold of min(20,000, 25 % of 8,000) = 2,000 tokens). Different for
 * every run, so each offload is a new content-addressed file.
 */
export function toolOutput(run) {
  const lines = 80 + ((run * 37) % 31);
  const out = [`$ cargo test --workspace -- ${pick(run, 1)}  (run ${run})`, '   Compiling context-service v0.4.2'];
  let failed = 0;
  for (let i = 0; i < lines; i++) {
    const ok = (i * 7 + run) % 29 !== 0;
    out.push(`test ${pick(i + run, 1)}::${pick(i, 2)}_${pick(i + run, 3)}_${i} ... ${ok ? 'ok' : 'FAILED'} (${(i * 17 + run) % 900} ms; ${pick(i, 5)} ${pick(i, 6)} ${pick(i, 7)} fixture ${pick(i + run, 8)}-${(i * 131 + run * 7) % 10_000}, seed ${(i * 7919 + run) % 100_003}; src/${pick(i, 9)}/${pick(i + run, 10)}_${pick(i, 11)}.rs:${(i * 29 + run) % 700})`);
    if (!ok) {
      failed++;
      out.push(`    thread '${pick(i, 1)}::${pick(i, 2)}_${i}' panicked at src/${pick(i, 4)}.rs:${(i * 13 + run) % 400}:9: assertion failed: budget >= used (left: ${i * 3 + run}, right: ${i * 5})`);
    }
  }
  out.push(`test result: FAILED. ${lines - failed} passed; ${failed} failed; finished in ${run}.${(run * 7) % 10}s`);
  return out.join('\n');
}

/** The user message the test (or a human) sends on `turn`. */
export function userText(turn) {
  const call = toolCall(turn);
  return callsTool(turn)
    ? `Turn ${turn}: the ${call.input.filter} tests are failing again. Run them and tell me what broke.`
    : `Turn ${turn}: open ${call.input.path} and tell me what you would change first, and why.`;
}

/**
 * The mock model's final answer on `turn`: about 250 tokens, so the history grows steadily
 * (the large tool outputs alone are offloaded at once and would not fill the window).
 * `toolResult` is what the model saw from its tool call (for run_tests: the offload preview).
 */
export function answer(turn, toolResult) {
  const call = toolCall(turn);
  const head = call.toolName === 'open_file'
    ? `Turn ${turn}: in ${call.input.path} I would start with the ${pick(turn, 2)} ${pick(turn, 3)} code.`
    : `Turn ${turn}: run ${turn} finished; ${/(\d+) failed/.exec(String(toolResult))?.[1] ?? 'some'} tests failed.${firstPath(toolResult) ? ` The full log is stored at ${firstPath(toolResult)}.` : ''}`;
  const body = Array.from({ length: 9 }, (_, i) =>
    `${i + 1}. The ${pick(turn + i, 1)} ${pick(turn + i, 2)} path reads the ${pick(turn + i, 3)} before the ${pick(turn + i, 4)} is updated, so ${pick(turn + i, 5)} can exceed its budget under load.`);
  return [head, ...body].join('\n');
}

function firstPath(text) {
  return /\/tool_outputs\/[^\s)\]"'`,;]+/.exec(String(text))?.[0];
}

/**
 * The mock `summarize` (tier 3): a deterministic summary built from the request's own text — the
 * user turns it covers and the stored paths it mentions — capped well below `request.maxTokens`.
 */
export function summarize(request) {
  const text = request.messages.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join('\n');
  const turns = [...new Set([...text.matchAll(/Turn (\d+):/g)].map((m) => Number(m[1])))];
  const paths = [...new Set([...text.matchAll(/\/tool_outputs\/[^\s)\]"'`,;\\]+/g)].map((m) => m[0]))];
  const lines = [
    `Summary (mock) of turns ${turns.length > 0 ? `${Math.min(...turns)}-${Math.max(...turns)}` : '(none)'}:`,
    '- The user keeps asking about failing tests in context-service; the assistant ran run_tests and explained the failures.',
    ...(paths.length > 0 ? [`- Full test logs are stored at: ${paths.slice(-8).join(', ')}`] : []),
  ];
  // ~4 characters per token: stay well inside the cap.
  return lines.join('\n').slice(0, Math.max(200, request.maxTokens * 3));
}
