// The arena's sessions: generated deterministically (`SESSIONS`), and real recorded ones
// (`REAL`, `real.mjs`: public trajectories, read from a local mirror of their source).
//
//   node bench/arena/sessions/index.mjs [name] [--scale s] [--out dir] [--stats]
//
// Without --out or --stats it prints the stats. `--out dir` writes `<name>.json` per session.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCoding } from './coding.mjs';
import { generateResearch } from './research.mjs';
import { generateChat } from './chat.mjs';
import { sessionStats } from './lib.mjs';
import { available, loadReal, REAL } from './real.mjs';

export const SESSIONS = {
  'coding-agent': generateCoding,
  'research-agent': generateResearch,
  'long-chat': generateChat,
};

/** Every session's name: the generated ones, then the real ones. */
export const ALL_SESSIONS = [...Object.keys(SESSIONS), ...Object.keys(REAL)];

/** The sessions a run takes by default: the generated ones, and the real ones whose data is here. */
export function defaultSessions() {
  return [...Object.keys(SESSIONS), ...Object.keys(REAL).filter((name) => available(name))];
}

/** `{ name, description, system, tools, messages, needles }` for session `name`;
 * `options.scale` (default 1) scales the number of turns of a generated session (a real one is
 * what it is). */
export function generate(name, options = {}) {
  if (REAL[name]) return loadReal(name);
  const gen = SESSIONS[name];
  if (!gen) throw new Error(`unknown session ${JSON.stringify(name)} (known: ${ALL_SESSIONS.join(', ')})`);
  return gen(options);
}

export { sessionStats };

async function main(argv) {
  const args = { names: [], out: null, stats: false, scale: 1 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out') args.out = argv[++i];
    else if (a === '--stats') args.stats = true;
    else if (a === '--scale') args.scale = Number(argv[++i]);
    else if (a === '--help' || a === '-h') {
      console.log('usage: node bench/arena/sessions/index.mjs [name...] [--scale s] [--out dir] [--stats]');
      return;
    } else if (a.startsWith('--')) throw new Error(`unknown option ${a}`);
    else args.names.push(a);
  }
  if (!(args.scale > 0)) throw new Error('--scale must be a positive number');
  const names = args.names.length ? args.names : defaultSessions();
  for (const n of names) if (!ALL_SESSIONS.includes(n)) throw new Error(`unknown session ${JSON.stringify(n)} (known: ${ALL_SESSIONS.join(', ')})`);
  const wantStats = args.stats || !args.out;
  let countTokens;
  if (wantStats) {
    const cc = await import('context-compactor');
    await cc.init();
    countTokens = cc.countTokens;
  }
  const rows = [];
  for (const name of names) {
    const t0 = performance.now();
    const session = generate(name, { scale: args.scale });
    const ms = performance.now() - t0;
    if (args.out) {
      mkdirSync(args.out, { recursive: true });
      const file = join(args.out, `${name}.json`);
      writeFileSync(file, JSON.stringify(session));
      console.error(`wrote ${file}`);
    }
    if (wantStats) rows.push({ name, ms, ...sessionStats(session, countTokens) });
  }
  if (wantStats) {
    const cols = [
      ['session', (r) => r.name],
      ['messages', (r) => r.messages],
      ['steps', (r) => r.steps],
      ['user turns', (r) => r.userTurns],
      ['tool calls', (r) => r.toolCalls],
      ['tokens', (r) => r.tokens.toLocaleString('en-US')],
      ['largest output', (r) => r.largestOutput.toLocaleString('en-US')],
      ['needles', (r) => r.needles],
      ['repeat reads (same/changed)', (r) => `${r.repeatSame}/${r.repeatChanged}`],
      ['gen ms', (r) => r.ms.toFixed(0)],
    ];
    const cells = rows.map((r) => cols.map(([, f]) => String(f(r))));
    const widths = cols.map(([h], i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
    const line = (vals) => `| ${vals.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join(' | ')} |`;
    console.log(line(cols.map(([h]) => h)));
    console.log(`|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|')}|`);
    for (const c of cells) console.log(line(c));
    if (args.scale !== 1) console.log(`(scale ${args.scale})`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((e) => {
    console.error(e.message);
    process.exit(1);
  });
}
