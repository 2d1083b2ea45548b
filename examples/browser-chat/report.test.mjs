// The session report in headless Chromium: `node examples/browser-chat/report.test.mjs` (test.mjs
// runs it after its own checks).
//
// 1. Writes two sessions as JSON into out/: the bundled demo session (examples/demo/session.mjs,
//    gpt-4o in a 28,000-token budget, as scripts/demo.sh runs it) and the quality arena's
//    coding-agent session (bench/arena/sessions, claude-sonnet-4-5 at 32k, as the arena runs it).
// 2. Runs `context-compactor report` on each (cargo, feature cli): the page, and `--json` (the
//    replay's numbers).
// 3. Opens each page from file:// (it is self-contained: any other request fails the test) and
//    checks that the chart renders, that every plotted point carries the replay's number and sits
//    where the y axis puts it, that event and prefix-break markers are on their calls, that the
//    thresholds are at their values and the store table has every file. Screenshots go to out/.
// 4. One renderer for both hosts: the npm package's renderReport on the CLI's data gives the CLI's
//    page byte for byte, and createReportRecorder replaying the demo session through manage()
//    gives the CLI's numbers call for call.
//
// Needs js/dist (bash scripts/build.sh) and playwright-core from tests/runtimes; Chromium at
// CHROMIUM_PATH, else /usr/bin/chromium.
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { MemoryStore, createCompactor, createReportRecorder, init, renderReport } from '../../js/dist/entry/node.js';
import { session as demoSession } from '../demo/session.mjs';
import { generate } from '../../bench/arena/sessions/index.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '..', '..');
const outDir = join(here, 'out');
const { chromium } = createRequire(join(root, 'tests/runtimes/package.json'))('playwright-core');
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const BUDGET_MS = 240_000; // a cold `cargo build` of the CLI included

const checks = [];
function check(name, ok, detail = '') {
  checks.push({ name, ok: Boolean(ok), detail: String(detail) });
  return Boolean(ok);
}
const watchdog = setTimeout(() => {
  console.error(`FAIL: the report test did not finish within ${BUDGET_MS / 1000} s`);
  process.exit(1);
}, BUDGET_MS);
watchdog.unref();
const t0 = Date.now();

const SESSIONS = [
  { name: 'demo', title: 'demo session · smart', args: ['--model', 'gpt-4o', '--window', '28000'], make: () => ({ model: 'gpt-4o', messages: demoSession() }) },
  { name: 'arena-coding-agent', title: 'arena coding-agent · smart', args: ['--model', 'claude-sonnet-4-5', '--window', '32000'], make: () => generate('coding-agent') },
];

let browser;
try {
  await mkdir(outDir, { recursive: true });
  execFileSync('cargo', ['build', '--quiet', '--features', 'cli', '--bin', 'context-compactor'], { cwd: root, stdio: 'inherit' });
  const cli = join(root, 'target', 'debug', 'context-compactor');
  await init();
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS, timeout: 30_000 });
  for (const s of SESSIONS) {
    const sessionPath = join(outDir, `${s.name}.json`);
    await writeFile(sessionPath, JSON.stringify(s.make()));
    const pagePath = join(outDir, `report-${s.name}.html`);
    execFileSync(cli, ['report', sessionPath, ...s.args, '--title', s.title, '--out', pagePath], { cwd: root });
    const data = JSON.parse(execFileSync(cli, ['report', sessionPath, ...s.args, '--title', s.title, '--json'], { cwd: root, maxBuffer: 64 << 20 }).toString());
    const html = await readFile(pagePath, 'utf8');
    const tag = (text) => `[${s.name}] ${text}`;
    check(tag(`the CLI replayed ${data.calls.length} model calls, ${data.calls.flatMap((c) => c.events).length} compaction events`), data.calls.length > 10 && data.calls.some((c) => c.events.length > 0));
    check(tag('renderReport (npm package, wasm) on the CLI\'s data gives the CLI\'s page byte for byte'), renderReport(data) === html, `${html.length} chars`);
    await pageChecks(s, pagePath, data, tag);
  }
  await recorderMatchesCli(join(outDir, 'demo.json'), cli);
} catch (error) {
  check('report test ran to the end', false, error?.stack ?? error);
} finally {
  await browser?.close().catch(() => {});
}

const failed = checks.filter((c) => !c.ok);
for (const c of checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name}${c.detail ? ` — ${c.detail}` : ''}`);
console.log(`\nreport: ${checks.length - failed.length} passed, ${failed.length} failed (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
clearTimeout(watchdog);
process.exitCode = failed.length === 0 ? 0 : 1;

async function pageChecks(s, pagePath, data, tag) {
  const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
  const problems = [];
  const url = pathToFileURL(pagePath).href;
  page.on('request', (r) => { if (r.url() !== url) problems.push(`request: ${r.url()}`); });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console.error: ${m.text()}`); });
  try {
    await page.goto(url, { waitUntil: 'load', timeout: 15_000 });
    const seen = await page.evaluate(() => {
      const svg = document.querySelector('svg#chart');
      if (!svg) return null;
      const box = svg.getBoundingClientRect();
      const attrs = (el) => Object.fromEntries([...el.attributes].map((a) => [a.name, a.value]));
      const all = (selector) => [...document.querySelectorAll(selector)].map(attrs);
      // Where the browser drew each point, in the SVG's own units (checks the layout, not just the markup).
      const plotted = [...document.querySelectorAll('circle.point.after')].map((c) => {
        const r = c.getBoundingClientRect();
        return { x: r.x + r.width / 2 - box.x, y: r.y + r.height / 2 - box.y };
      });
      return {
        box: { width: box.width, height: box.height },
        viewBox: svg.viewBox.baseVal.width,
        svg: attrs(svg),
        after: all('circle.point.after'),
        before: all('circle.point.before'),
        markers: all('g.event'),
        breaks: all('path.break'),
        thresholds: all('line.threshold'),
        ticks: all('text.tick'),
        plotted,
        storeRows: document.querySelectorAll('#store tbody tr:not(.total)').length,
        eventRows: document.querySelectorAll('#events tbody tr').length,
        text: document.body.innerText,
      };
    });
    if (!check(tag('the page shows the chart (an inline SVG, laid out at the page\'s width)'), seen && seen.box.width > 1000 && seen.box.height > 300, seen ? `${Math.round(seen.box.width)}×${Math.round(seen.box.height)} px` : 'no svg#chart')) return;
    const [left, top, right, bottom] = seen.svg['data-plot'].split(' ').map(Number);
    const yMax = Number(seen.svg['data-y-max']);
    const y = (tokens) => bottom - (Math.min(tokens, yMax) / yMax) * (bottom - top);
    const near = (a, b) => Math.abs(a - b) < 0.01;

    const pointsOk = (points, key) => points.length === data.calls.length && points.every((p, i) =>
      Number(p['data-call']) === data.calls[i].call && Number(p['data-tokens']) === data.calls[i][key] && near(Number(p.cy), y(data.calls[i][key])));
    check(tag(`${seen.after.length} points "sent": each is the replay's tokensAfter, drawn at its height`), Number(seen.svg['data-calls']) === data.calls.length && pointsOk(seen.after, 'tokensAfter'),
      `first ${seen.after[0]?.['data-tokens']}, last ${seen.after.at(-1)?.['data-tokens']}`);
    const clipped = seen.before.filter((p) => p['data-clipped'] === '1').length;
    check(tag(`${seen.before.length} points "before compaction": each is the replay's tokensBefore (${clipped} above the axis, drawn at its top)`), pointsOk(seen.before, 'tokensBefore'));
    const scale = seen.box.width / seen.viewBox;
    const drawn = seen.plotted.every((p, i) => Math.abs(p.y / scale - Number(seen.after[i].cy)) < 1 && p.x / scale > left && p.x / scale < right && (i === 0 || p.x > seen.plotted[i - 1].x));
    check(tag('the browser laid the points out where their attributes say, left to right inside the plot'), drawn);
    check(tag('y-axis ticks are where the same scale puts them'), seen.ticks.length >= 4 && seen.ticks.every((t) => near(Number(t['data-y']), y(Number(t['data-value'])))), seen.ticks.map((t) => t['data-value']).join(', '));
    const lines = Object.fromEntries(seen.thresholds.map((l) => [l['data-name'], Number(l['data-tokens'])]));
    check(tag('window and thresholds drawn at their values'), lines.window === data.window && lines['tier 2'] === data.thresholds.compactAt && lines.target === data.thresholds.target && lines.summarize === data.thresholds.summarizeAt &&
      seen.thresholds.every((l) => Math.abs(Number(l.y1) - y(Number(l['data-tokens']))) <= 0.05), JSON.stringify(lines)); // y1 has one decimal

    const expected = new Map();
    for (const c of data.calls) for (const e of c.events) expected.set(`${c.call} ${e.strategy}`, (expected.get(`${c.call} ${e.strategy}`) ?? 0) + 1);
    const markers = new Map(seen.markers.map((m) => [`${m['data-call']} ${m['data-strategy']}`, Number(m['data-count'])]));
    check(tag(`every compaction event is marked on its call by kind (${[...new Set(data.calls.flatMap((c) => c.events.map((e) => e.strategy)))].join(', ')})`),
      markers.size === expected.size && [...expected].every(([k, n]) => markers.get(k) === n), `${seen.markers.length} markers for ${expected.size} call/kind pairs`);
    const breaks = data.calls.filter((c) => c.prefixBreak).map((c) => c.call);
    check(tag(`prefix breaks marked on calls ${breaks.join(', ') || '(none)'}`), JSON.stringify(seen.breaks.map((b) => Number(b['data-call']))) === JSON.stringify(breaks));
    check(tag(`the store table lists the ${data.store.length} stored files and the events table every event`), seen.storeRows === data.store.length && seen.eventRows === data.calls.flatMap((c) => c.events).length && data.store.every((f) => seen.text.includes(f.path)));
    check(tag('self-contained: no request but the page itself, no script error'), problems.length === 0, problems.slice(0, 4).join(' | '));

    const shot = join(outDir, `report-${s.name}.png`);
    await page.screenshot({ path: shot });
    const full = join(outDir, `report-${s.name}-full.png`);
    await page.screenshot({ path: full, fullPage: true });
    const size = (await stat(shot)).size;
    check(tag(`screenshots: ${shot} (the chart), ${full} (the whole page)`), size > 20_000, `${size} bytes`);
  } finally {
    await page.close();
  }
}

/** The JS recorder, driven as an AI SDK 7 app drives prepareStep (the managed prompt carries
 * forward), gives the CLI's numbers. */
async function recorderMatchesCli(sessionPath, cli) {
  const { messages } = JSON.parse(await readFile(sessionPath, 'utf8'));
  const report = createReportRecorder({ title: 'demo session · smart' });
  const compactor = await createCompactor({ model: 'gpt-4o', contextWindow: 28_000, store: new MemoryStore(), onEvent: report.onEvent });
  let held = [];
  let next = 0;
  const points = messages.flatMap((m, i) => (i > 0 && m.role === 'assistant' ? [i] : []));
  if (messages.at(-1).role !== 'assistant') points.push(messages.length);
  for (const point of points) {
    held = [...held, ...messages.slice(next, point)];
    next = point;
    held = (await report.manage(compactor, held)).messages;
  }
  const js = await report.data();
  const cliData = JSON.parse(execFileSync(cli, ['report', sessionPath, '--model', 'gpt-4o', '--window', '28000', '--json'], { cwd: root }).toString());
  const numbers = (d) => d.calls.map((c) => [c.call, c.tokensBefore, c.tokensAfter, c.prefixBreak, c.events.map((e) => [e.strategy, e.status, e.messageIndex, e.path, e.tokensSaved])]);
  check('[demo] createReportRecorder + manage() gives the CLI\'s numbers call for call (tokens, events, breaks)', JSON.stringify(numbers(js)) === JSON.stringify(numbers(cliData)),
    `${js.calls.length} calls; ${js.calls.filter((c) => c.prefixBreak).length} breaks, ${js.calls.flatMap((c) => c.events).length} events`);
  check('[demo] and the same store table', JSON.stringify(js.store) === JSON.stringify(cliData.store), `${js.store.length} files`);
}
