// The arena's Markdown: one table per session and window, rows in the contenders' order, then
// the host-shape variants against their long-lived preset.
import { effective, ratios, targets } from './check.mjs';
import { CACHE_LIFETIME_S } from './metrics.mjs';

const k = (n) => (n >= 10_000_000 ? `${(n / 1e6).toFixed(1)}M` : n >= 10_000 ? `${Math.round(n / 1000)}k` : String(n));

/** A ratio as `1.23×`. */
export const x = (ratio) => (Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : '∞');

/** `n` per 100 calls, one decimal. */
export const per100 = (n, calls) => (calls ? ((100 * n) / calls).toFixed(1) : '–');

function row(r, none) {
  if (r.error) return `| ${r.contender} | error: ${r.error.replaceAll('|', '/').slice(0, 160)} ||||||||||||||||||`;
  const ratio = none && !none.error ? ` (${((100 * r.cost) / none.cost).toFixed(0)} %)` : '';
  const effRatio = none && !none.error ? ` (${((100 * effective(r)) / effective(none)).toFixed(0)} %)` : '';
  const or = (v, f = String) => (v === undefined ? '–' : f(v));
  const kept = r.needlesInPrompt + r.needlesRecoverable;
  const share = ([ok, of] = [0, 0]) => (of ? `${ok}/${of}` : '–');
  return `| ${r.contender} | ${r.overWindow} / ${r.calls} | ${r.orphanedCalls} | ${k(r.inputTokens)} | ${k(r.largestPrompt)} | ${k(r.cost)}${ratio} | ${or(r.rereads)} | ${or(r.rereadCost, k)} | ${or(r.losses)} | ${k(effective(r))}${effRatio} | ${r.prefixBreaks} | ${per100(r.prefixBreaks, r.calls)} | ${r.summarizerCalls} | ${r.summarizerCost === undefined ? '–' : k(r.summarizerCost)} | ${r.callsWaited === undefined ? '–' : `${r.callsWaited} / ${r.secondsWaited.toFixed(0)} s`} | ${or(r.coldCalls)} | ${share(r.planKept)} | ${share(r.workingFileKept)} | ${kept}/${r.needles} (${r.needlesInPrompt} + ${r.needlesRecoverable}) | ${(r.wallMs / 1000).toFixed(1)} |`;
}

export function markdown(report) {
  const out = [];
  out.push('| contender | over window / calls | orphaned | input tokens | largest prompt | cost (vs none) | re-reads | re-read cost | losses | effective cost (vs none) | prefix breaks | breaks / 100 calls | summarizer calls | summarizer cost | calls waited on a summary / seconds | cold calls | plan kept | working file kept | needles kept (prompt + store) | wall s |');
  const header = out.pop();
  for (const session of report.sessions) {
    for (const window of [...new Set(report.results.filter((r) => r.session === session.name).map((r) => r.window))]) {
      const rows = report.results.filter((r) => r.session === session.name && r.window === window);
      const none = rows.find((r) => r.contender === 'none');
      out.push(`### ${session.name}, ${k(window)} window`, '');
      const t = session.thinkTime;
      const span = (min) => (min >= 120 ? `${(min / 60).toFixed(1)} h` : `${min} min`);
      if (t) out.push(`User think time: ${t.gaps} gaps before user turns, ${span(t.idleMinutes)} in all, ${t.overCacheLifetime} longer than the ${CACHE_LIFETIME_S / 60}-minute cache lifetime (the longest ${t.longestMinutes} min); a main call after one of those (or after any ${CACHE_LIFETIME_S / 60} minutes without a call) is a cold call: its whole prompt written.`, '');
      out.push(header, '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
      for (const r of rows) out.push(row(r, none));
      out.push('');
    }
  }
  const rs = ratios(report.results);
  if (rs.length) {
    out.push('### Host shapes against the long-lived compactor', '', 'Each figure is the variant\'s over the long-lived preset\'s on the same session and window (1.00 = the same); "prompts identical": every main-model prompt the same, byte for byte, or the first call that differs.', '');
    const identical = (i) => (i === undefined ? '–' : i < 0 ? 'yes' : `no, from call ${i}`);
    out.push('| session | window | contender | cost | summarizer calls | prefix breaks | prompts identical |', '|---|---:|---|---:|---:|---:|---|');
    for (const r of rs) out.push(`| ${r.session} | ${k(r.window)} | ${r.contender} | ${x(r.cost)} | ${x(r.summarizerCalls)} | ${x(r.prefixBreaks)} | ${identical(r.firstDifferentCall)} |`);
    out.push('');
  }
  const ts = targets(report.results);
  if (ts.length) {
    const mark = (met) => (met === undefined ? '–' : met ? '✓' : '✗');
    out.push(
      '### Issue 34 targets (reported, not checked)',
      '',
      "smart's effective cost (cost + re-reads) against the cheapest peer's (every contender but none and context-compactor; a loss is not priced) and against the cheapest peer that lost nothing: at or below it, or within 3 % on a shorter run that never compacts (the unmanaged session fits the window; smart neither summarizes nor breaks the prefix); the losses of every context-compactor contender; the host shapes within 5 % of long-lived smart on cost, summarizer calls and prefix breaks.",
      '',
    );
    out.push('| session | window | smart effective cost | cheapest peer (losses) | ≤ | cheapest lossless peer | ≤ | context-compactor losses | host shapes within 5 % |', '|---|---:|---:|---|:-:|---|:-:|---:|:-:|');
    const allow = (t) => (t.allowance === 1 ? '' : ` (≤ ${t.allowance.toFixed(2)}×)`);
    for (const t of ts)
      out.push(
        `| ${t.session} | ${k(t.window)} | ${k(t.effectiveCost)} | ${t.cheapest} ${k(t.cheapestCost)} (${t.cheapestLosses}) | ${mark(t.costMet)}${allow(t)} | ${t.lossless ? `${t.lossless} ${k(t.losslessCost)}` : '–'} | ${mark(t.losslessMet)} | ${t.ourLosses} | ${mark(t.shapesMet)} |`,
      );
    out.push('');
  }
  out.push('Contenders:', '');
  for (const c of report.contenders) out.push(`- **${c.name}**: ${c.via}`);
  const real = report.sessions.filter((x) => x.source);
  if (real.length) {
    out.push('', 'Real sessions:', '');
    for (const x of real) out.push(`- **${x.name}**: ${x.source.repository} \`${x.source.path}\` at ${x.source.commit.slice(0, 8)} (blob ${x.source.blob.slice(0, 8)}; ${x.source.licence})`);
  }
  const b = report.build;
  const built = b ? ` context-compactor build ${b.dist} (commit ${b.commit}${b.uncommitted ? ', with uncommitted changes to src/ or js/src/' : ''}).` : '';
  out.push('', `Node ${report.node}, ${report.date.slice(0, 10)}.${built}`, '');
  return out.join('\n');
}
