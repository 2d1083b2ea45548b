// End-to-end test of the browser chat in headless Chromium: `node examples/browser-chat/test.mjs`.
// Serves the example and the built package (serve.mjs), opens the page twice in a fresh profile
// (default store = OPFS; then ?backend=indexeddb, with offloading left to manage()), sends 30
// messages through the UI (and the window.chat hook), and checks what the page shows and what the
// store holds. Prints one line per check; exit code 0 when all pass.
//
// Chromium: CHROMIUM_PATH, else /usr/bin/chromium; playwright-core comes from tests/runtimes
// (cd tests/runtimes && npm ci). Needs js/dist (bash scripts/build.sh).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, repoRoot } from './serve.mjs';
import * as mock from './mock.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const outDir = join(here, 'out');
const { chromium } = createRequire(join(repoRoot, 'tests/runtimes/package.json'))('playwright-core');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
// The flags of tests/runtimes/runners/browser.mjs (from TOOLCHAIN.md).
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const WINDOW = 8000;
const TURNS = 30;
const BUDGET_MS = 55_000;

const checks = [];
function check(name, ok, detail = '') {
  checks.push({ name, ok: Boolean(ok), detail: String(detail) });
  return Boolean(ok);
}

const variants = [
  { name: 'default (OPFS, offload when the tool returns)', query: '', backend: 'opfs', mode: 'return', screenshot: 'screenshot.png' },
  { name: 'IndexedDB (offload by manage)', query: '?backend=indexeddb&offload=manage', backend: 'indexeddb', mode: 'manage', screenshot: 'screenshot-indexeddb.png' },
];

const t0 = Date.now();
const watchdog = setTimeout(() => {
  console.error(`FAIL: the test did not finish within ${BUDGET_MS / 1000} s`);
  process.exit(1);
}, BUDGET_MS);
watchdog.unref();

let served;
let context;
const profile = await mkdtemp(join(tmpdir(), 'cc-browser-chat-'));
try {
  await mkdir(outDir, { recursive: true });
  served = await startServer();
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, args: ARGS, timeout: 30_000, viewport: { width: 1280, height: 860 },
  });
  for (const variant of variants) await runVariant(variant);
  const wasm = served.requests.filter((r) => r.path.endsWith('.wasm'));
  check('the .wasm was fetched over http from js/dist', wasm.length >= 1 && wasm.every((r) => r.status === 200), wasm.map((r) => `${r.status} ${r.path}`).join(', '));
} catch (error) {
  check('test ran to the end', false, error?.stack ?? error);
} finally {
  await context?.close().catch(() => {});
  await served?.close();
  await rm(profile, { recursive: true, force: true }).catch(() => {});
}

const failed = checks.filter((c) => !c.ok);
for (const c of checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail ? ` — ${c.detail}` : ''}`);
console.log(`\n${checks.length - failed.length} passed, ${failed.length} failed (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
clearTimeout(watchdog);
// The CLI's report page, in the same Chromium: its own process (it builds and runs the CLI).
console.log('\n--- report.test.mjs');
const reportTest = spawnSync(process.execPath, [join(here, 'report.test.mjs')], { stdio: 'inherit' });
process.exitCode = failed.length === 0 && reportTest.status === 0 ? 0 : 1;

async function runVariant(variant) {
  const tag = (name) => `[${variant.backend}] ${name}`;
  const problems = [];
  const warnings = [];
  const page = await context.newPage();
  try {
    await variantChecks(variant, page, tag, problems, warnings);
  } catch (error) {
    check(tag('variant ran to the end'), false, error?.message ?? error);
  } finally {
    // Page errors fail the test, whatever else happened.
    check(tag('no page errors, console errors or failed requests'), problems.length === 0, [...problems, ...warnings].slice(0, 8).join(' | '));
    await page.close().catch(() => {});
  }
}

async function variantChecks(variant, page, tag, problems, warnings) {
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console.error: ${m.text()}`);
    if (m.type() === 'warning') warnings.push(`console.warning: ${m.text()}`);
  });
  page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`http ${r.status()}: ${r.url()}`); });
  const tv = Date.now();

  await page.goto(served.url + variant.query, { waitUntil: 'load', timeout: 15_000 });
  await page.waitForFunction(() => document.body.dataset.ready === '1' || document.getElementById('error').textContent, null, { timeout: 15_000 });
  const initial = await page.evaluate(() => window.chat?.state());
  if (!check(tag('page starts (wasm loaded, store opened, hook installed)'), initial?.ready, initial ? '' : await page.textContent('#error'))) return;
  check(tag(`store backend is ${variant.backend}`), initial.backend === variant.backend, `reported ${initial.backend}`);
  check(tag('fresh profile: empty store, empty conversation'), initial.paths.length === 0 && initial.turn === 0 && initial.messages === 1, `paths ${initial.paths.length}, turn ${initial.turn}, messages ${initial.messages}`);
  check(tag(`offload mode is ${variant.mode}`), initial.offloadMode === variant.mode, initial.offloadMode);

  // 30 turns: a third through the real form (fill + click), the rest through the hook.
  const prompts = mock.userMessages(TURNS);
  const gauges = [];
  let viaUi = 0;
  let uiEcho = 0;
  for (const [i, text] of prompts.entries()) {
    const turn = i + 1;
    if (i < 4 || i % 3 === 0) {
      viaUi++;
      await page.fill('#msg', text);
      await page.click('#send');
      await page.waitForFunction((n) => document.body.dataset.turns === String(n) && document.body.dataset.busy === '0', turn, { timeout: 10_000 });
      const shown = await page.$$eval('#messages .msg.user', (els) => els.map((e) => e.textContent));
      if (shown.some((s) => s.includes(text))) uiEcho++;
    } else {
      await page.evaluate((t) => window.chat.send(t).then(() => true), text);
    }
    gauges.push({ turn, ...(await page.evaluate(() => {
      const g = document.getElementById('gauge');
      return { used: Number(g.dataset.used), window: Number(g.dataset.window), peak: Number(g.dataset.peak), text: document.getElementById('gauge-used').textContent };
    })) });
  }
  check(tag(`${viaUi} of ${TURNS} messages typed into the form and sent with the button; each shows in the message list`), viaUi >= 10 && uiEcho === viaUi, `${uiEcho}/${viaUi} echoed`);
  const over = gauges.filter((g) => !(g.used > 0 && g.used <= g.window && g.window === WINDOW));
  const maxUsed = Math.max(...gauges.map((g) => g.used));
  const maxPeak = Math.max(...gauges.map((g) => g.peak));
  check(tag(`gauge after every turn: used ≤ window (${WINDOW})`), over.length === 0,
    `max used ${maxUsed}, max before manage ${maxPeak}${over.length ? `; over: ${over.map((g) => `turn ${g.turn}: ${g.used}/${g.window}`).join(', ')}` : ''}`);
  const badText = gauges.filter((g) => g.text !== `${g.used.toLocaleString('en-US')} / ${WINDOW.toLocaleString('en-US')} tokens`);
  check(tag('gauge text shows the same numbers as its bar'), badText.length === 0, badText.slice(0, 2).map((g) => g.text).join(' | '));

  const s = await page.evaluate(() => window.chat.state());
  check(tag(`all ${TURNS} turns ran; the hook's usage agrees with the gauge`), s.turn === TURNS && s.usage.tokens === gauges.at(-1).used && s.usage.window === WINDOW, `turn ${s.turn}, usage ${s.usage.tokens}/${s.usage.window}`);
  const appended = 1 + TURNS * 2 + s.toolCalls.length * 2;
  check(tag('the conversation was compacted (fewer messages in context than were appended)'), s.messages < appended, `${s.messages} in context, ${appended} appended`);

  // The compaction log, as rendered.
  const log = await page.$$eval('#log li[data-strategy]', (els) => els.map((e) => ({ strategy: e.dataset.strategy, status: e.dataset.status, path: e.dataset.path ?? null, text: e.textContent })));
  check(tag('one compaction-log line per onEvent event'), log.length === s.events.length && log.every((l, i) => l.strategy === s.events[i].strategy && l.status === s.events[i].status), `${log.length} lines, ${s.events.length} events`);
  const offloads = log.filter((l) => l.strategy === 'offload' && l.status === 'applied');
  const summaries = log.filter((l) => l.strategy === 'summarize' && (l.status === 'applied' || l.status === 'fallback'));
  check(tag('compaction log shows offload events'), offloads.length >= 1, `${offloads.length} offload lines`);
  check(tag('compaction log shows a summarize event (applied or fallback)'), summaries.length >= 1, summaries.map((l) => l.text).join(' | ') || log.map((l) => `${l.strategy}/${l.status}`).join(', '));
  const incomplete = log.filter((l, i) => !(l.text.includes(l.strategy) && l.text.includes(l.status) && l.text.includes(`saved ${s.events[i].tokensSaved.toLocaleString('en-US')} tokens`) && (!l.path || l.text.includes(l.path))));
  check(tag('each log line names strategy, status, tokens saved and store path'), incomplete.length === 0, incomplete.slice(0, 2).map((l) => l.text).join(' | ') || log[0]?.text);
  const viaExpected = variant.mode === 'return' ? 'offloadToolOutput' : 'manage';
  check(tag(`offloads were made by ${viaExpected}`), s.events.filter((e) => e.strategy === 'offload').every((e) => e.via === viaExpected), s.events.filter((e) => e.strategy === 'offload' && e.via !== viaExpected).map((e) => `#${e.n} via ${e.via}`).join(', '));

  // The store: every listed path reads back; each offloaded file is the exact tool output.
  const files = await page.evaluate(async (paths) => {
    const out = {};
    for (const p of paths) out[p] = await window.chat.read(p);
    return out;
  }, s.paths);
  const unreadable = s.paths.filter((p) => typeof files[p] !== 'string' || files[p].length === 0);
  check(tag(`all ${s.paths.length} stored paths read back (non-empty)`), s.paths.length > 0 && unreadable.length === 0, unreadable.join(', ') || [...new Set(s.paths.map((p) => p.split('/')[1]))].map((d) => `/${d}/: ${s.paths.filter((p) => p.startsWith(`/${d}/`)).length}`).join(', '));
  const expectedCalls = prompts.map((_, i) => i + 1).filter(mock.callsTool);
  const calls = s.toolCalls;
  check(tag(`the mock model called fetch_page on turns ${expectedCalls.join(',')}`), JSON.stringify(calls.map((c) => c.turn)) === JSON.stringify(expectedCalls));
  const mismatched = [];
  for (const call of calls) {
    const url = mock.toolUrl(call.turn, prompts[call.turn - 1]); // computed here, not taken from the page
    const expected = mock.toolOutput(url);
    const stored = call.path ? files[call.path] : undefined;
    if (call.url !== url || stored !== expected) mismatched.push(`turn ${call.turn}: ${call.path ?? 'not offloaded'} ${stored === undefined ? 'missing' : `${stored?.length} vs ${expected.length} chars`}`);
  }
  check(tag(`each fetch_page output (${calls.length}) was offloaded and the stored file equals it exactly`), calls.length > 0 && mismatched.length === 0,
    mismatched.join('; ') || `${calls.map((c) => c.chars).reduce((a, b) => a + b, 0).toLocaleString('en-US')} characters compared`);
  const toolFiles = s.paths.filter((p) => p.startsWith('/tool_outputs/'));
  const offloadPaths = new Set(offloads.map((l) => l.path));
  check(tag('every /tool_outputs/ file was named by an offload line in the log, and vice versa'),
    toolFiles.length === offloadPaths.size && toolFiles.every((p) => offloadPaths.has(p)), `${toolFiles.length} files, ${offloadPaths.size} logged paths`);
  const transcripts = s.paths.filter((p) => p.startsWith('/conversation_history/') && p.endsWith('.json'));
  const badTranscripts = transcripts.filter((p) => { try { JSON.parse(files[p]); return !files[p.replace(/\.json$/, '.md')]; } catch { return true; } });
  check(tag('summaries saved their transcript first (JSON parses, Markdown copy exists, path logged)'),
    transcripts.length >= 1 && badTranscripts.length === 0 && summaries.every((l) => s.paths.includes(l.path)), transcripts.join(', '));
  const savedChat = safeJson(files['/chat/conversation.json']);
  const savedState = safeJson(files['/state/compactor.json']);
  check(tag('conversation and compactor state persisted in the store'), savedChat?.turn === TURNS && savedState?.stats?.compactions >= 1,
    `chat turn ${savedChat?.turn}, state compactions ${savedState?.stats?.compactions}`);

  // The session chart (createReportRecorder + renderReportChart): one point per manage() call,
  // each plotting the recorder's numbers; the last one is what the gauge shows.
  const chart = await page.evaluate(() => {
    const svg = document.querySelector('#report svg#chart');
    const points = (cls) => [...document.querySelectorAll(`#report circle.point.${cls}`)].map((c) => Number(c.dataset.tokens));
    return svg && {
      calls: Number(svg.dataset.calls),
      window: Number(svg.dataset.window),
      after: points('after'),
      before: points('before'),
      markers: [...document.querySelectorAll('#report g.event')].map((g) => ({ call: Number(g.dataset.call), strategy: g.dataset.strategy, count: Number(g.dataset.count) })),
    };
  });
  const recorded = s.report.calls;
  check(tag(`session chart: one call per manage() (${TURNS} turns + ${s.toolCalls.length} tool results)`),
    chart && chart.calls === recorded.length && recorded.length === TURNS + s.toolCalls.length && chart.window === WINDOW, chart ? `${chart.calls} plotted, ${recorded.length} recorded` : 'no chart');
  check(tag('session chart: every point is the recorder\'s number; the last one is the gauge'),
    chart && JSON.stringify(chart.after) === JSON.stringify(recorded.map((c) => c.tokensAfter)) && JSON.stringify(chart.before) === JSON.stringify(recorded.map((c) => c.tokensBefore)) && chart.after.at(-1) === gauges.at(-1).used,
    chart ? `last ${chart.after.at(-1)}, gauge ${gauges.at(-1).used}` : '');
  const plotted = chart ? chart.markers.reduce((n, m) => n + m.count, 0) : 0;
  const recordedEvents = recorded.flatMap((c) => c.events);
  check(tag('session chart: every compaction event is marked on its call (offloads and a summary among them)'),
    plotted === recordedEvents.length && plotted === s.events.length && chart.markers.some((m) => m.strategy === 'offload') && chart.markers.some((m) => m.strategy === 'summarize'),
    `${plotted} marked, ${recordedEvents.length} recorded, ${s.events.length} onEvent events`);
  if (variant.backend === 'opfs') {
    await page.check('#show-chart');
    await page.screenshot({ path: join(outDir, 'screenshot-chart.png') });
    const shotChart = await stat(join(outDir, 'screenshot-chart.png')).catch(() => null);
    check(tag('screenshot of the session chart saved to examples/browser-chat/out/screenshot-chart.png'), shotChart?.size > 10_000, `${shotChart?.size ?? 0} bytes`);
    await page.uncheck('#show-chart');
  }

  await page.screenshot({ path: join(outDir, variant.screenshot) });
  const shot = await stat(join(outDir, variant.screenshot)).catch(() => null);
  check(tag(`screenshot saved to examples/browser-chat/out/${variant.screenshot}`), shot?.size > 10_000, `${shot?.size ?? 0} bytes`);

  // "Show what the model sees": the context view has the summary message and the offload previews.
  await page.check('#show-context');
  const view = await page.$$eval('#messages .msg', (els) => els.map((e) => ({ cls: e.className, text: e.textContent })));
  const summaryShown = view.filter((m) => m.cls.includes('summary'));
  const previews = view.filter((m) => m.cls.includes('tool') && /\/tool_outputs\/fetch_page_/.test(m.text));
  check(tag('"show what the model sees" lists the context: the summary (naming its transcript) and the tool-result previews'),
    view.length === s.messages && summaryShown.length >= 1 && summaries.some((l) => summaryShown[0].text.includes(l.path)) && previews.length >= 1,
    `${view.length} messages, ${summaryShown.length} summary, ${previews.length} previews naming a stored file`);
  if (variant.backend === 'opfs') await page.screenshot({ path: join(outDir, 'screenshot-context.png') });
  await page.uncheck('#show-context');

  // Reload: the conversation, the log and the stats come back from the store.
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => document.body.dataset.ready === '1' || document.getElementById('error').textContent, null, { timeout: 15_000 });
  const again = await page.evaluate(() => window.chat?.state());
  const chartAgain = await page.evaluate(() => Number(document.querySelector('#report svg#chart')?.dataset.calls));
  check(tag('after a reload the session chart comes back with every call'), chartAgain === recorded.length && again?.report.calls.length === recorded.length, `${chartAgain} plotted`);
  const logAgain = await page.$$eval('#log li[data-strategy]', (els) => els.length);
  check(tag('after a reload the conversation, gauge, log and stats come back from the store'),
    again?.backend === variant.backend && again.turn === TURNS && again.messages === s.messages && again.usage.tokens === s.usage.tokens &&
      logAgain === log.length && again.stats.compactions === s.stats.compactions && JSON.stringify(again.paths) === JSON.stringify(s.paths),
    again ? `turn ${again.turn}, ${again.messages} messages, ${again.usage.tokens} tokens, ${logAgain} log lines, ${again.stats.compactions} compactions` : 'no state');

  // Two tabs of one chat saving its state at once: the store's writeIf (an IndexedDB transaction,
  // an OPFS write under a Web Lock) lets exactly one of each round's racers win, across tabs.
  const tab = await context.newPage();
  await tab.goto(page.url(), { waitUntil: 'load' });
  await tab.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 15_000 });
  const rounds = [];
  let held = null;
  for (let round = 0; round < 5; round++) {
    const race = (p, who) => p.evaluate(([expected, who, round]) => Promise.all([0, 1, 2].map((i) => window.chat.writeIf('/race/state.json', expected, `${who}-${round}-${i}`))), [held, who, round]);
    const [a, b] = await Promise.all([race(page, 'a'), race(tab, 'b')]);
    const won = [...a, ...b].filter(Boolean).length;
    held = await page.evaluate(() => window.chat.read('/race/state.json'));
    rounds.push({ won, held });
  }
  await tab.close();
  check(tag('two tabs racing writeIf on one path: exactly one writer wins each round, and the store holds its text'),
    rounds.every((r, i) => r.won === 1 && /^[ab]-\d-\d$/.test(r.held ?? '') && r.held.split('-')[1] === String(i)), JSON.stringify(rounds.map((r) => `${r.won}:${r.held}`)));

  // New chat: the store is emptied and the conversation starts over.
  await page.click('#reset');
  await page.waitForFunction(() => document.body.dataset.turns === '0' && document.querySelectorAll('#log li[data-strategy]').length === 0, null, { timeout: 5000 });
  const cleared = await page.evaluate(() => window.chat.state());
  check(tag('"New chat" empties the store, the log and the conversation'), cleared.paths.length === 0 && cleared.turn === 0 && cleared.messages === 1 && cleared.events.length === 0 && cleared.stats.compactions === 0,
    `paths ${cleared.paths.length}, turn ${cleared.turn}, messages ${cleared.messages}, compactions ${cleared.stats.compactions}`);

  check(tag(`variant finished in ${((Date.now() - tv) / 1000).toFixed(1)} s`), true);
}

function safeJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
