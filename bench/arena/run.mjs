// The quality arena: replays long recorded agent sessions through each contender's own context
// management and scores the prompts its model received. `npm run arena` at the repository root
// (bench/arena/README.md says what each figure means).
//
//   node bench/arena/run.mjs [--sessions a,b] [--windows 128000,32000] [--contenders x,y]
//                            [--scale 1] [--out bench/arena/out] [--check]
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { init } from 'context-compactor';
import { CONTENDERS, runOne } from './lib/arena.mjs';
import { clearCounts } from './lib/metrics.mjs';
import { generate, SESSIONS } from './sessions/index.mjs';
import { check } from './lib/check.mjs';
import { markdown } from './lib/report.mjs';

async function main() {
  const { values } = parseArgs({
    options: {
      sessions: { type: 'string', default: Object.keys(SESSIONS).join(',') },
      windows: { type: 'string', default: '128000,32000' },
      contenders: { type: 'string' },
      scale: { type: 'string', default: '1' },
      out: { type: 'string', default: join(dirname(fileURLToPath(import.meta.url)), 'out') },
      check: { type: 'boolean', default: false },
    },
  });
  await init();
  const wanted = values.contenders?.split(',');
  const contenders = wanted ? CONTENDERS.filter((c) => wanted.includes(c.name)) : CONTENDERS;
  const windows = values.windows.split(',').map(Number);
  const scale = Number(values.scale);
  const results = [];
  const sessions = [];
  for (const name of values.sessions.split(',')) {
    const session = generate(name, { scale });
    sessions.push({ name, description: session.description, messages: session.messages.length, needles: session.needles.length, scale });
    for (const window of windows) {
      for (const contender of contenders) {
        const r = await runOne(contender, session, window);
        results.push(r);
        console.error(r.error ? `${name} ${window} ${contender.name}: ERROR ${r.error}` : `${name} ${window} ${contender.name}: ${r.calls} calls, ${r.inputTokens} input tokens, cost ${r.cost}, over ${r.overWindow}, needles ${r.needlesInPrompt}+${r.needlesRecoverable}/${r.needles}, ${r.wallMs} ms`);
      }
      clearCounts();
    }
  }
  const report = { date: new Date().toISOString(), node: process.version, sessions, contenders: contenders.map(({ name, via }) => ({ name, via })), results };
  await mkdir(values.out, { recursive: true });
  await writeFile(join(values.out, 'results.json'), JSON.stringify(report, null, 2) + '\n');
  const md = markdown(report);
  await writeFile(join(values.out, 'results.md'), md);
  console.log(md);
  if (values.check) {
    const failures = check(results);
    for (const f of failures) console.error(`CHECK FAILED: ${f}`);
    if (failures.length) process.exit(1);
    console.error(`arena check: ${results.length} runs within the margins`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
