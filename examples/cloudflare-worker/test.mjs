// node examples/cloudflare-worker/test.mjs — bundles worker.mjs the way wrangler does and runs it
// in workerd (miniflare 4) with an in-memory KV namespace bound as STORE, then drives two
// sessions over HTTP and checks what the worker really did. Prints every check; exit code 0/1.
//
// Needs the built package (js/dist) and tests/runtimes/node_modules (`cd tests/runtimes && npm ci`):
// esbuild and miniflare are taken from there, exactly as tests/runtimes/runners/workerd.mjs uses
// them (conditions workerd, worker, browser; the package's .wasm import kept as a separate
// CompiledWasm module through modulesRules).
import { createRequire } from 'node:module';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MAIN_ENTRY_WASM, bundleWorker, miniflareOptions } from '../../tests/runtimes/runners/bundle.mjs';
import { CONTEXT_WINDOW, FILES, callsTool, sourceFile, toolOutput, userText } from './mock.mjs';

const exampleDir = fileURLToPath(new URL('.', import.meta.url));
const runtimesDir = fileURLToPath(new URL('../../tests/runtimes/', import.meta.url));
const requireRuntimes = createRequire(join(runtimesDir, 'package.json'));

const TURNS_A = 20;
const TURNS_B = 3;
const started = Date.now();
const checks = [];

function check(name, ok, detail = '') {
  checks.push({ name, ok: Boolean(ok) });
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ` — ${detail}` : ''}`);
  return Boolean(ok);
}

/** POST /chat; returns the parsed JSON (throws on a non-200 answer). */
async function chat(mf, session, text) {
  const res = await mf.dispatchFetch(`http://worker/chat?session=${session}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text }),
  });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`POST /chat?session=${session} answered ${res.status}: ${body.slice(0, 500)}`);
  return JSON.parse(body);
}

async function get(mf, route, params) {
  const res = await mf.dispatchFetch(`http://worker${route}?${new URLSearchParams(params)}`);
  return { status: res.status, text: await res.text() };
}

/** Reads a whole stored file back through `/read` (the read_file recovery tool), page by page,
 * and strips read_file's line numbers: returns the original text (or an error string). */
async function readBack(mf, session, path, limit = 120) {
  const lines = [];
  let offset = 0;
  for (let page = 0; page < 1000; page++) {
    const { status, text } = await get(mf, '/read', { session, path, offset: String(offset), limit: String(limit) });
    if (status !== 200) return { error: `${status}: ${text.slice(0, 200)}` };
    const rows = text.split('\n');
    const more = /^… (\d+) more lines: read_file with offset=(\d+)$/.exec(rows.at(-1));
    if (more) rows.pop();
    for (const [i, row] of rows.entries()) {
      const m = /^ *(\d+)\t(.*)$/s.exec(row);
      if (!m || Number(m[1]) !== offset + i + 1) return { error: `unexpected line ${JSON.stringify(row.slice(0, 80))} at offset ${offset + i}` };
      lines.push(m[2]);
    }
    if (!more) return { text: lines.join('\n'), pages: page + 1 };
    offset = Number(more[2]);
  }
  return { error: 'too many pages' };
}

const sum = (events, key) => events.reduce((n, e) => n + (e[key] ?? 0), 0);

let mf;
const outdir = await mkdtemp(join(tmpdir(), 'cc-cf-worker-'));
try {
  // ---- bundle, as wrangler would -------------------------------------------------------------
  let Miniflare;
  try {
    ({ Miniflare } = requireRuntimes('miniflare'));
  } catch (error) {
    throw new Error(`miniflare not found in ${runtimesDir}node_modules: run \`cd tests/runtimes && npm ci\` first (${error.message})`);
  }
  // The same bundling as the workerd runtime test (tests/runtimes/runners/bundle.mjs).
  const wasmFiles = await bundleWorker({ entry: join(exampleDir, 'worker.mjs'), outdir, absWorkingDir: exampleDir });
  const bundled = await readFile(join(outdir, 'worker.js'), 'utf8');
  const kept = wasmFiles.filter((f) => bundled.includes(`"./${basename(f)}"`));
  // The core and o200k_base's data, nothing else: the Workers entry leaves the other data to the
  // app (README, "Frameworks"), so that an upload stays within the Free plan.
  const expected = MAIN_ENTRY_WASM.map((n) => `${n}.wasm`);
  check('bundle keeps the core and o200k_base as separate CompiledWasm imports, and no other .wasm', kept.length === expected.length && expected.every((n) => kept.some((f) => basename(f) === n)), kept.map((f) => basename(f)).join(', ') || `resolved: ${wasmFiles.join(', ') || 'none'}`);

  mf = new Miniflare({ ...miniflareOptions(outdir), kvNamespaces: ['STORE'] }); // KV in memory (no persist option)
  const kv = await mf.getKVNamespace('STORE');
  const kvJson = async (key) => JSON.parse((await kv.get(key)) ?? 'null');

  // ---- session A: 20 stateless requests ------------------------------------------------------
  const responses = [];
  for (let turn = 1; turn <= TURNS_A; turn++) responses.push(await chat(mf, 'A', userText(turn)));
  const over = responses.filter((r) => !(r.usage.tokens <= CONTEXT_WINDOW && r.usage.window === CONTEXT_WINDOW));
  check(`A: all ${TURNS_A} responses have usage.tokens <= window (${CONTEXT_WINDOW})`, over.length === 0,
    `max ${Math.max(...responses.map((r) => r.usage.tokens))} tokens` + (over.length ? `; over: turns ${over.map((r) => r.turn)}` : ''));
  check('A: turn counter carried over (1..20)', responses.every((r, i) => r.turn === i + 1));

  // Stats carry over between stateless requests: each response's stats are the previous ones
  // plus exactly this request's events — only possible if the state was saved and reloaded.
  const bad = [];
  for (const [i, r] of responses.entries()) {
    const prev = i === 0 ? { compactions: 0, filesWritten: 0, tokensSaved: 0 } : responses[i - 1].stats;
    const applied = r.events.filter((e) => e.status === 'applied' || e.status === 'fallback');
    const want = { filesWritten: prev.filesWritten + sum(r.events, 'filesWritten'), tokensSaved: prev.tokensSaved + sum(applied, 'tokensSaved') };
    if (r.stats.filesWritten !== want.filesWritten || r.stats.tokensSaved !== want.tokensSaved || r.stats.compactions < prev.compactions ||
        (applied.length > 0) !== (r.stats.compactions > prev.compactions)) {
      bad.push(`turn ${r.turn}: ${JSON.stringify({ prev: { c: prev.compactions, f: prev.filesWritten, s: prev.tokensSaved }, got: { c: r.stats.compactions, f: r.stats.filesWritten, s: r.stats.tokensSaved }, want, events: r.events.length })}`);
    }
  }
  check('A: stats = previous stats + this request\'s events, on every request (state persisted in KV)', bad.length === 0, bad.slice(0, 3).join('; '));
  const growth = responses.map((r) => r.stats.compactions);
  check('A: stats.compactions keeps growing across requests', growth.every((c, i) => i === 0 || c >= growth[i - 1]) && growth.at(-1) > growth[0] && growth.at(-1) >= TURNS_A / 2,
    `compactions per request: ${growth.join(' ')}`);
  const stateA = await kvJson('sessions/A/state/compactor.json');
  check('A: the saved state in KV holds the last response\'s stats', JSON.stringify(stateA?.stats) === JSON.stringify(responses.at(-1).stats));

  const allEvents = responses.flatMap((r) => r.events.map((e) => ({ ...e, turn: r.turn })));
  const by = (s) => allEvents.filter((e) => e.strategy === s);
  const offloads = by('offload').filter((e) => e.status === 'applied');
  const tier2 = allEvents.filter((e) => ['mask', 'dedupe', 'evict-input'].includes(e.strategy) && e.status === 'applied');
  const summaries = by('summarize');
  check(`A: every tool turn offloaded its output at return time (${TURNS_A / 2} offloads)`, offloads.length === TURNS_A / 2 &&
    responses.every((r) => callsTool(r.turn) === r.events.some((e) => e.strategy === 'offload' && e.status === 'applied')),
  `offload turns: ${offloads.map((e) => e.turn).join(',')}`);
  check('A: tier 2 ran (mask/dedupe/evict-input applied)', tier2.length > 0, `${tier2.length} events: ${[...new Set(tier2.map((e) => `${e.strategy}@${e.turn}`))].join(' ')}`);
  check('A: tier 3 ran with the mock summarizer (transcript + summarize applied, no fallback)',
    summaries.length > 0 && summaries.every((e) => e.status === 'applied') && by('transcript').some((e) => e.status === 'applied'),
    `summaries at turns ${summaries.map((e) => `${e.turn}(${e.status})`).join(',') || 'none'}`);
  check('A: no failed or not-executed events, no state-save errors', allEvents.every((e) => e.status === 'applied' || e.status === 'fallback') && responses.every((r) => !r.stateErrors),
    allEvents.filter((e) => e.status !== 'applied' && e.status !== 'fallback').map((e) => `${e.strategy}@${e.turn}: ${e.status} ${e.error ?? ''}`).slice(0, 3).join('; '));

  // Offloaded content read back through /read (read_file) equals what the mock tool produced.
  const mismatches = [];
  let pages = 0;
  for (const e of offloads) {
    const got = await readBack(mf, 'A', e.path);
    pages += got.pages ?? 0;
    const want = toolOutput(e.turn);
    if (got.text !== want) mismatches.push(`${e.path} (turn ${e.turn}): ${got.error ?? `${got.text.length} chars, want ${want.length}`}`);
  }
  check(`A: /read returns each offloaded output exactly as the tool produced it (${offloads.length} files, ${pages} pages)`, offloads.length > 0 && mismatches.length === 0, mismatches.slice(0, 3).join('; '));
  const convo = (await kv.get('sessions/A/session/messages.json')) ?? '';
  const leaked = offloads.filter((e) => convo.includes(toolOutput(e.turn).split('\n').slice(2, 40).join('\n')));
  check('A: the saved conversation names stored paths, never holds the raw tool outputs', convo.length > 0 && leaked.length === 0 && offloads.some((e) => convo.includes(e.path)),
    `messages.json ${convo.length} chars; ${responses.at(-1).messageCount} messages`);
  check('A: the saved conversation carries the mock summarizer\'s summary', convo.includes('Summary (mock) of turns'));
  // Tier 2 stored what it removed: read back, it is one of the files open_file returned.
  const tier2Bad = [];
  for (const e of tier2) {
    const got = await readBack(mf, 'A', e.path);
    if (!FILES.some((f) => sourceFile(f) === got.text)) tier2Bad.push(`${e.strategy} ${e.path}: ${got.error ?? 'content differs from every open_file output'}`);
  }
  check(`A: /read returns each tier-2 (mask/dedupe) copy exactly (${tier2.length} files)`, tier2.length > 0 && tier2Bad.length === 0, tier2Bad.slice(0, 3).join('; '));
  const transcript = by('transcript').find((e) => e.path);
  const transcriptRead = transcript ? await get(mf, '/read', { session: 'A', path: transcript.path, limit: '5' }) : { status: 0, text: '' };
  check('A: a tier-3 transcript is readable through /read', transcriptRead.status === 200 && /^ *1\t/.test(transcriptRead.text), transcript?.path ?? 'no transcript event');
  const missing = await get(mf, '/read', { session: 'A', path: '/tool_outputs/nope.txt' });
  check('A: /read of a missing path is a 404 with the tool\'s error text', missing.status === 404 && missing.text.startsWith('Error: no file'), missing.text.slice(0, 80));

  // /ls lists the stored paths.
  const lsRoot = await get(mf, '/ls', { session: 'A', path: '/' });
  const rootEntries = lsRoot.text.split('\n');
  // The compactor's state (and its summary leases) is its bookkeeping: left out of what the model lists.
  check('A: /ls / lists the stored directories, the compactor\'s state left out', ['/conversation_history/', '/session/', '/tool_outputs/'].every((d) => rootEntries.includes(d)) && !rootEntries.includes('/state/'), rootEntries.join(' '));
  const lsTools = await get(mf, '/ls', { session: 'A', path: '/tool_outputs/' });
  const listed = lsTools.text.split('\n').sort();
  const offloadPaths = [...new Set(offloads.map((e) => e.path))].sort();
  const storedPaths = [...new Set([...offloadPaths, ...tier2.map((e) => e.path)])].sort();
  check('A: /ls /tool_outputs/ lists exactly the offloaded and tier-2 files', JSON.stringify(listed) === JSON.stringify(storedPaths),
    `${listed.length} listed; ${offloadPaths.length} offloaded + ${storedPaths.length - offloadPaths.length} tier-2 copies (content-addressed)`);

  // ---- session B: independent ----------------------------------------------------------------
  const stateABefore = await kv.get('sessions/A/state/compactor.json');
  const responsesB = [];
  for (let turn = 1; turn <= TURNS_B; turn++) responsesB.push(await chat(mf, 'B', userText(turn)));
  const b1 = responsesB[0];
  check('B: starts at turn 1 with fresh stats (not A\'s)', b1.turn === 1 && b1.stats.filesWritten === sum(b1.events, 'filesWritten') && b1.stats.compactions <= 1 &&
    b1.stats.compactions < responses.at(-1).stats.compactions, `B stats ${JSON.stringify({ c: b1.stats.compactions, f: b1.stats.filesWritten })} vs A ${JSON.stringify({ c: responses.at(-1).stats.compactions, f: responses.at(-1).stats.filesWritten })}`);
  check('B: its own stats carry over between its requests', responsesB.every((r, i) => r.turn === i + 1 && r.usage.tokens <= CONTEXT_WINDOW &&
    (i === 0 || (r.stats.filesWritten === responsesB[i - 1].stats.filesWritten + sum(r.events, 'filesWritten') && r.stats.compactions >= responsesB[i - 1].stats.compactions))) &&
    responsesB.at(-1).stats.compactions > b1.stats.compactions,
  `compactions ${responsesB.map((r) => r.stats.compactions).join(' ')}`);
  check('B: session A\'s state was not touched by B\'s requests', (await kv.get('sessions/A/state/compactor.json')) === stateABefore);
  const bOffload = responsesB[0].events.find((e) => e.strategy === 'offload');
  const ownRead = bOffload ? await readBack(mf, 'B', bOffload.path) : null;
  check('B: its turn-1 offload reads back from B\'s own keys (same content-addressed path as A\'s turn 1)', ownRead?.text === toolOutput(1) &&
    bOffload.path === offloads.find((e) => e.turn === 1)?.path && (await kv.get(`sessions/B${bOffload.path}`)) === toolOutput(1), bOffload?.path ?? 'no offload in B turn 1');
  const lsB = await get(mf, '/ls', { session: 'B', path: '/tool_outputs/' });
  check('B: /ls sees only B\'s files', lsB.text.split('\n').length === responsesB.filter((r) => callsTool(r.turn)).length, lsB.text.replaceAll('\n', ' '));

  // ---- the KV namespace ----------------------------------------------------------------------
  const keys = [];
  let cursor;
  do {
    const page = await kv.list({ ...(cursor ? { cursor } : {}) });
    keys.push(...page.keys.map((k) => k.name));
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
  const outside = keys.filter((k) => !k.startsWith('sessions/A/') && !k.startsWith('sessions/B/'));
  const keysA = keys.filter((k) => k.startsWith('sessions/A/'));
  const keysB = keys.filter((k) => k.startsWith('sessions/B/'));
  check('KV: every key is under sessions/A/ or sessions/B/', keys.length > 0 && outside.length === 0, `${keys.length} keys (${keysA.length} A, ${keysB.length} B)${outside.length ? `; outside: ${outside.slice(0, 5).join(', ')}` : ''}`);
  check('KV: each session has its conversation and compactor state', ['A', 'B'].every((s) => keys.includes(`sessions/${s}/session/messages.json`) && keys.includes(`sessions/${s}/state/compactor.json`)));
  check('KV: session A holds its offloads and transcripts', offloadPaths.every((p) => keysA.includes(`sessions/A${p}`)) && keysA.some((k) => k.startsWith('sessions/A/conversation_history/')));

  // ---- bad input -----------------------------------------------------------------------------
  const badSession = await mf.dispatchFetch('http://worker/chat?session=../x', { method: 'POST', body: '{"text":"hi"}' });
  const badBody = await mf.dispatchFetch('http://worker/chat?session=C', { method: 'POST', body: 'nope' });
  check('bad session id / body are 400s', badSession.status === 400 && badBody.status === 400, `${badSession.status}, ${badBody.status}`);
  await badSession.text();
  await badBody.text();

  // A compact trace of session A, for the eye.
  console.log('\nsession A, per request: turn tokens/window messages  compactions filesWritten  events');
  for (const r of responses) {
    const evs = r.events.map((e) => `${e.strategy}${e.status === 'applied' ? '' : `(${e.status})`}`);
    console.log(`  ${String(r.turn).padStart(2)}  ${String(r.usage.tokens).padStart(5)}/${r.usage.window}  ${String(r.messageCount).padStart(3)}  ${String(r.stats.compactions).padStart(4)} ${String(r.stats.filesWritten).padStart(4)}  ${evs.join(' ')}`);
  }
} catch (error) {
  check('worker builds and answers', false, error instanceof Error ? error.stack : String(error));
} finally {
  await mf?.dispose().catch(() => {});
  await rm(outdir, { recursive: true, force: true });
}

const failed = checks.filter((c) => !c.ok).length;
console.log(`\n${checks.length - failed} passed, ${failed} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exitCode = failed === 0 ? 0 : 1;
