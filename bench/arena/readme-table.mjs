// The README's arena table from a run's results.json: effective cost (cost, re-reads / losses) per
// session and window for smart, aggressive and the three peers that manage a long agent run, the
// lowest in bold; then the figures the README's paragraph quotes (smart against the cheapest of
// those peers, aggressive against smart, waits, cold calls).
//   node bench/arena/readme-table.mjs /tmp/arena/results.json
import { readFileSync } from 'node:fs';

const report = JSON.parse(readFileSync(process.argv[2] ?? 'bench/arena/out/results.json', 'utf8'));
const COLUMNS = [
  ['smart', 'context-compactor smart'],
  ['aggressive', 'context-compactor aggressive'],
  ['Strands', 'strands auto'],
  ['DeepAgents', 'deepagents'],
  ['LangChain summarization', 'langchain summarization'],
];
const PEERS = ['Strands', 'DeepAgents', 'LangChain summarization'];
const k = (n) => `${Math.round(n / 1000)}k`;
const find = (session, window, contender) => report.results.find((r) => r.session === session && r.window === window && r.contender === contender && !r.error);

const lines = [
  `| session | window | ${COLUMNS.map(([label]) => label).join(' | ')} | lowest effective cost |`,
  `|---|---:|${COLUMNS.map(() => '---:').join('|')}|---|`,
];
const smartVsPeers = [], aggressiveVsSmart = [];
let beaten = 0, runs = 0;
for (const { name } of report.sessions) {
  for (const window of [...new Set(report.results.map((r) => r.window))].sort((a, b) => b - a)) {
    const rows = COLUMNS.map(([label, contender]) => [label, find(name, window, contender)]);
    if (rows.some(([, r]) => !r)) continue;
    const lowest = Math.min(...rows.map(([, r]) => r.effectiveCost));
    const cell = (r) => {
      const text = `${k(r.effectiveCost)} (${k(r.cost)}, ${r.rereads} / ${r.losses})`;
      return r.effectiveCost === lowest ? `**${text}**` : text;
    };
    const best = rows.filter(([, r]) => r.effectiveCost === lowest).map(([label]) => label).join(', ');
    lines.push(`| ${name} | ${window / 1000}k | ${rows.map(([, r]) => cell(r)).join(' | ')} | ${best} |`);
    const by = Object.fromEntries(rows);
    const cheapestPeer = Math.min(...PEERS.map((p) => by[p].effectiveCost));
    smartVsPeers.push(by.smart.effectiveCost / cheapestPeer);
    aggressiveVsSmart.push(by.aggressive.effectiveCost / by.smart.effectiveCost);
    runs++;
    if (by.smart.effectiveCost < cheapestPeer) beaten++;
  }
}
const range = (xs) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`;
console.log(lines.join('\n'));
console.log();
console.log(`smart below the cheapest of ${PEERS.join(', ')} on ${beaten} of ${runs} runs (${range(smartVsPeers)} of it); aggressive ${range(aggressiveVsSmart)} of smart`);
const total = (contender, key) => report.results.filter((r) => r.contender === contender && !r.error).reduce((a, r) => a + (r[key] ?? 0), 0);
for (const [label, contender] of COLUMNS) {
  console.log(`${label}: effective cost ${k(total(contender, 'effectiveCost'))}, calls waited ${total(contender, 'callsWaited')} (${total(contender, 'secondsWaited').toFixed(0)} s), cold calls ${total(contender, 'coldCalls')}, prefix breaks ${total(contender, 'prefixBreaks')}, summarizer calls ${total(contender, 'summarizerCalls')}`);
}
