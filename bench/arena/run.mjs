// The quality arena: replays long recorded agent sessions through each contender's own context
// management and scores the prompts its model received. `npm run arena` at the repository root
// (bench/arena/README.md says what each figure means).
//
//   node bench/arena/run.mjs [--sessions a,b] [--windows 128000,32000] [--contenders x,y]
//                            [--scale 1] [--out bench/arena/out] [--check] [--help]
//                            [--compactor-options '{"compaction":{"targetFraction":0.35}}']
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { init } from 'context-compactor';
import { CONTENDERS, runOne } from './lib/arena.mjs';
import { clearCounts, thinkTimeSummary } from './lib/metrics.mjs';
import { ALL_SESSIONS, defaultSessions, generate } from './sessions/index.mjs';
import { check, ratios } from './lib/check.mjs';
import { markdown, x } from './lib/report.mjs';

/** Which context-compactor the run measured: a hash of its built package (`js/dist`), the
 * repository's commit, and whether the core or host had uncommitted changes. */
function build() {
  // The package root: up from its resolved entry to its package.json; then all of its dist/.
  let root = dirname(fileURLToPath(import.meta.resolve('context-compactor')));
  while (!existsSync(join(root, 'package.json')) && dirname(root) !== root) root = dirname(root);
  const dist = join(root, 'dist');
  const hash = createHash('sha256');
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else hash.update(e.name).update(readFileSync(path));
    }
  };
  walk(dist);
  const git = (...args) => {
    try {
      return execFileSync('git', args, { cwd: dirname(fileURLToPath(import.meta.url)), stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
    } catch {
      return '';
    }
  };
  return { dist: hash.digest('hex').slice(0, 12), commit: git('rev-parse', '--short', 'HEAD'), uncommitted: git('status', '--porcelain', '--', '../../src', '../../js/src') !== '' };
}

async function main() {
  const { values } = parseArgs({
    options: {
      sessions: { type: 'string', default: defaultSessions().join(',') },
      windows: { type: 'string', default: '128000,32000' },
      contenders: { type: 'string' },
      scale: { type: 'string', default: '1' },
      out: { type: 'string', default: join(dirname(fileURLToPath(import.meta.url)), 'out') },
      check: { type: 'boolean', default: false },
      'compactor-options': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(
      [
        'usage: node --max-old-space-size=8192 bench/arena/run.mjs [options]',
        '',
        `  --sessions a,b     sessions (default: ${defaultSessions().join(',')})`,
        `                     known: ${ALL_SESSIONS.join(', ')} (real ones need their data: sessions/real.mjs)`,
        '  --windows n,m      context windows in tokens (default 128000,32000)',
        `  --contenders x,y   contenders by name (default all): ${CONTENDERS.map((c) => c.name).join('; ')}`,
        '  --scale s          scale the generated sessions\' turns (default 1)',
        '  --out dir          where results.md and results.json go (default bench/arena/out)',
        '  --check            fail on the CI margins (lib/check.mjs)',
        '  --compactor-options json   createCompactor options for every context-compactor contender',
        '                     (a sweep: \'{"compaction":{"targetFraction":0.35}}\'), recorded in results.json',
      ].join('\n'),
    );
    return;
  }
  await init();
  const measured = build(); // before the runs: the package this process loaded
  const wanted = values.contenders?.split(',');
  for (const name of wanted ?? []) if (!CONTENDERS.some((c) => c.name === name)) throw new Error(`unknown contender ${JSON.stringify(name)} (--help lists them)`);
  const contenders = wanted ? CONTENDERS.filter((c) => wanted.includes(c.name)) : CONTENDERS;
  const windows = values.windows.split(',').map(Number);
  const scale = Number(values.scale);
  let compactorOptions;
  try {
    compactorOptions = values['compactor-options'] === undefined ? undefined : JSON.parse(values['compactor-options']);
  } catch (error) {
    throw new Error(`--compactor-options: not JSON (${error.message})`);
  }
  const results = [];
  const sessions = [];
  for (const name of values.sessions.split(',')) {
    const session = generate(name, { scale });
    sessions.push({ name, description: session.description, messages: session.messages.length, needles: session.needles.length, thinkTime: thinkTimeSummary(session), ...(session.source ? { source: session.source } : { scale }) });
    for (const window of windows) {
      for (const contender of contenders) {
        const r = await runOne(contender, session, window, { compactorOptions });
        results.push(r);
        console.error(r.error ? `${name} ${window} ${contender.name}: ERROR ${r.error}` : `${name} ${window} ${contender.name}: ${r.calls} calls, ${r.inputTokens} input tokens, cost ${r.cost}, re-reads ${r.rereads} (${r.rereadCost}), losses ${r.losses}, cold ${r.coldCalls}, over ${r.overWindow}, needles ${r.needlesInPrompt}+${r.needlesRecoverable}/${r.needles}, ${r.wallMs} ms`);
      }
      clearCounts();
    }
  }
  const report = { date: new Date().toISOString(), node: process.version, build: measured, ...(compactorOptions ? { compactorOptions } : {}), sessions, contenders: contenders.map(({ name, via }) => ({ name, via })), results };
  await mkdir(values.out, { recursive: true });
  await writeFile(join(values.out, 'results.json'), JSON.stringify(report, null, 2) + '\n');
  const md = markdown(report);
  await writeFile(join(values.out, 'results.md'), md);
  console.log(md);
  if (values.check) {
    const failures = check(results);
    for (const r of ratios(results)) console.error(`host shape: ${r.session} ${r.window} ${r.contender} vs ${r.base}: cost ${x(r.cost)}, summarizer calls ${x(r.summarizerCalls)}, prefix breaks ${x(r.prefixBreaks)}`);
    for (const f of failures) console.error(`CHECK FAILED: ${f}`);
    if (failures.length) process.exit(1);
    console.error(`arena check: ${results.length} runs within the margins`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
