//! The report page: one self-contained HTML document (inline CSS and SVG, no script, font or
//! network request), written as a pure function of the [`Report`].

use std::fmt::Write as _;

use super::CallEvent as Event;
use super::{Call, Report};
use crate::plan::{EventStatus, Strategy};

/// The report as one HTML page, with no script at all. Every plotted point carries its numbers as
/// data attributes (`data-call`, `data-tokens`; event markers `data-strategy`, `data-count`), so
/// tools and tests can read them back. (The report's JSON is not embedded: it cost 1.6 kB of the
/// gzipped core wasm; the CLI prints it with `--json`, the JS recorder returns it from `data()`.)
#[must_use]
pub fn render_html(report: &Report) -> String {
    let mut out = String::with_capacity(64 * 1024 + report.calls.len() * 600);
    let title = if report.title.is_empty() {
        "Session report"
    } else {
        &report.title
    };
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{} · context-compactor report</title>\n<style>{CSS}</style>\n</head>\n<body>\n<main>\n",
        esc(title)
    );
    let _ = writeln!(out, "<h1>{}</h1>", esc(title));
    let _ = writeln!(
        out,
        "<p class=\"sub\">{} · window {} tokens · tier 2 above {}, down to {} · summarize above {}</p>",
        if report.model.is_empty() {
            "(no model)".to_owned()
        } else {
            esc(&report.model)
        },
        thousands(report.window),
        thousands(report.thresholds.compact_at),
        thousands(report.thresholds.target),
        thousands(report.thresholds.summarize_at),
    );
    for note in &report.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(note));
    }
    summary_cards(&mut out, report);
    out.push_str(&render_chart(report));
    events_table(&mut out, report);
    store_table(&mut out, report);
    calls_table(&mut out, report);

    let _ = write!(
        out,
        "<p class=\"foot\">Made by context-compactor. Tokens are the compactor's counts for the model \
         ({}); hover a point or a marker for its numbers.</p>\n</main>\n</body>\n</html>\n",
        esc(&report.encoding),
    );
    out
}

const CSS: &str = "
:root{--ink:#1f2937;--muted:#6b7280;--line:#e5e7eb;--bg:#f8fafc}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}
main{max-width:1280px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:20px;margin:0 0 2px}
h2{font-size:15px;margin:28px 0 8px}
.sub,.note,.foot{color:var(--muted);margin:0 0 4px}
.note{color:#92400e}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(136px,1fr));gap:10px;margin:14px 0}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px 12px}
.card b{display:block;font-size:18px;font-variant-numeric:tabular-nums;white-space:nowrap}
.card span{display:block;color:var(--muted);font-size:12px;line-height:1.3}
.card.bad b{color:#dc2626}
figure{margin:0;background:#fff;border:1px solid var(--line);border-radius:8px;padding:8px}
svg{display:block;width:100%;height:auto;font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line);font-size:13px}
th,td{padding:4px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:#f1f5f9;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.path{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all;min-width:24em}
td.kind{white-space:nowrap}
td small{display:block;color:var(--muted)}
tr.total td{font-weight:600}
.dot{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:6px;vertical-align:-1px}
.st-failed,.st-not-executed{color:#dc2626}.st-fallback{color:#b45309}
details{margin-top:28px}summary{cursor:pointer;font-weight:600}
.empty{color:var(--muted)}
";

// Geometry of the chart, in SVG user units (the SVG scales to the page's width).
const W: f64 = 1200.0;
const LEFT: f64 = 86.0;
const RIGHT: f64 = 1028.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 384.0;
const LANE: f64 = 24.0;
/// The y axis ends near 1.5 windows at most: a prompt above it (before compaction: a huge tool
/// output that arrived) is drawn clipped at the top with its value, instead of flattening the
/// rest of the chart.
const CLIP_HALF_WINDOWS: u32 = 3;

/// Event kinds in the order their lanes are drawn, with their colours.
const KINDS: [(Strategy, &str, &str); 8] = [
    (Strategy::Offload, "offload", "#0891b2"),
    (Strategy::EvictInput, "evict-input", "#d97706"),
    (Strategy::Dedupe, "dedupe", "#65a30d"),
    (Strategy::Mask, "mask", "#4f46e5"),
    (Strategy::Transcript, "transcript", "#64748b"),
    (Strategy::Summarize, "summarize", "#db2777"),
    (Strategy::Truncate, "truncate", "#b91c1c"),
    (Strategy::Importance, "importance", "#92400e"),
];
const BEFORE: &str = "#94a3b8";
const AFTER: &str = "#2563eb";
const BREAK: &str = "#7c3aed";

/// The strategy named `name` (`offload`, `evict-input`, ...).
#[cfg_attr(not(feature = "wasm"), allow(dead_code))]
pub(crate) fn strategy(name: &str) -> Option<Strategy> {
    KINDS
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|(s, _, _)| *s)
}

fn kind_of(strategy: Strategy) -> (&'static str, &'static str) {
    KINDS
        .iter()
        .find(|(s, _, _)| *s == strategy)
        .map_or(("other", "#6b7280"), |(_, name, colour)| (name, colour))
}

/// The chart alone: a `<figure>` holding one `<svg>` (what [`render_html`] shows first), for
/// pages that embed it live. It scales to its container's width.
#[must_use]
pub fn render_chart(report: &Report) -> String {
    let calls = &report.calls;
    let n = calls.len();
    let lanes: Vec<&(Strategy, &str, &str)> = KINDS
        .iter()
        .filter(|(s, _, _)| {
            calls
                .iter()
                .any(|c| c.events.iter().any(|e| e.strategy == *s))
        })
        .collect();
    let lanes_top = BOTTOM + 58.0;
    let height = lanes_top + LANE * (lanes.len() as f64 + 1.0) + 12.0;

    let peak = calls
        .iter()
        .map(|c| c.tokens_before.max(c.tokens_after))
        .max()
        .unwrap_or(0)
        .max(report.window)
        .max(report.thresholds.summarize_at);
    let cap = (report.window.saturating_mul(CLIP_HALF_WINDOWS) / 2).max(1);
    let (y_max, step) = nice_axis(u64::from(peak.min(cap)).max(1) * 104 / 100);
    let (y_max, step) = (y_max as f64, step as f64);
    let y = |v: u32| BOTTOM - (f64::from(v).min(y_max) / y_max) * (BOTTOM - TOP);
    let band = (RIGHT - LEFT) / n.max(1) as f64;
    let x = |call: usize| LEFT + (call as f64 - 0.5) * band;

    let mut s = String::with_capacity(32 * 1024 + n * 500);
    let _ = writeln!(
        s,
        "<figure><svg id=\"chart\" viewBox=\"0 0 {W} {height:.0}\" role=\"img\" \
         aria-label=\"Tokens per model call before and after compaction\" \
         data-calls=\"{n}\" data-window=\"{}\" data-y-max=\"{y_max}\" \
         data-plot=\"{LEFT} {TOP} {RIGHT} {BOTTOM}\">",
        report.window
    );
    legend(&mut s);

    // Grid and y axis.
    s.push_str("<g class=\"y-axis\" font-size=\"12\" fill=\"#6b7280\" text-anchor=\"end\">\n");
    let mut tick = 0.0;
    while tick <= y_max + 0.5 {
        let ty = BOTTOM - tick / y_max * (BOTTOM - TOP);
        let _ = writeln!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{RIGHT}\" y1=\"{ty:.1}\" y2=\"{ty:.1}\" stroke=\"#eef0f3\"/>\
             <text class=\"tick\" data-value=\"{tick}\" data-y=\"{ty:.2}\" x=\"{:.0}\" y=\"{:.1}\">{}</text>",
            LEFT - 8.0,
            ty + 4.0,
            short(tick)
        );
        tick += step;
    }
    let _ = writeln!(
        s,
        "<text x=\"18\" y=\"{:.0}\" transform=\"rotate(-90 18 {:.0})\" text-anchor=\"middle\" \
         font-size=\"13\" fill=\"#374151\">tokens in the prompt</text></g>",
        (TOP + BOTTOM) / 2.0,
        (TOP + BOTTOM) / 2.0
    );

    // X axis.
    let _ = writeln!(
        s,
        "<g class=\"x-axis\" font-size=\"12\" fill=\"#6b7280\" text-anchor=\"middle\">\
         <line x1=\"{LEFT}\" x2=\"{RIGHT}\" y1=\"{BOTTOM}\" y2=\"{BOTTOM}\" stroke=\"#9ca3af\"/>"
    );
    let x_step = nice_int_step(n);
    for call in (1..=n).filter(|&c| c == 1 || c % x_step == 0) {
        let cx = x(call);
        let _ = writeln!(
            s,
            "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{BOTTOM}\" y2=\"{:.0}\" stroke=\"#9ca3af\"/>\
             <text x=\"{cx:.1}\" y=\"{:.0}\">{call}</text>",
            BOTTOM + 5.0,
            BOTTOM + 18.0
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{:.0}\" y=\"{:.0}\" font-size=\"13\" fill=\"#374151\">model call (each point is one prompt sent)</text></g>",
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 38.0
    );

    // Prefix breaks: a faint vertical line through the plot.
    s.push_str("<g class=\"breaks\">\n");
    for c in calls.iter().filter(|c| c.prefix_break) {
        let cx = x(c.call as usize);
        let _ = writeln!(
            s,
            "<line class=\"break-line\" data-call=\"{}\" x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{TOP}\" y2=\"{BOTTOM}\" \
             stroke=\"{BREAK}\" stroke-opacity=\".35\" stroke-dasharray=\"3 3\"/>",
            c.call
        );
    }
    s.push_str("</g>\n");

    // Thresholds, labelled in the right margin (labels pushed apart when they would overlap).
    let mut lines = [
        (report.window, "window", "#dc2626", ""),
        (
            report.thresholds.summarize_at,
            "summarize",
            "#ea580c",
            "7 4",
        ),
        (report.thresholds.compact_at, "tier 2", "#ca8a04", "7 4"),
        (report.thresholds.target, "target", "#16a34a", "2 4"),
    ];
    lines.sort_by_key(|l| std::cmp::Reverse(l.0));
    let mut label_y: Vec<f64> = lines.iter().map(|l| y(l.0) + 4.0).collect();
    for i in 1..label_y.len() {
        label_y[i] = label_y[i].max(label_y[i - 1] + 14.0);
    }
    s.push_str("<g class=\"thresholds\" font-size=\"12\">\n");
    for ((value, name, colour, dash), ly) in lines.iter().zip(label_y) {
        if *value == 0 || *value > y_max as u32 {
            continue;
        }
        let ty = y(*value);
        let _ = writeln!(
            s,
            "<line class=\"threshold\" data-name=\"{name}\" data-tokens=\"{value}\" x1=\"{LEFT}\" x2=\"{RIGHT}\" \
             y1=\"{ty:.1}\" y2=\"{ty:.1}\" stroke=\"{colour}\" stroke-width=\"1.5\" stroke-dasharray=\"{dash}\"/>\
             <text x=\"{:.0}\" y=\"{ly:.1}\" fill=\"{colour}\">{name} {}</text>",
            RIGHT + 8.0,
            thousands(*value)
        );
    }
    s.push_str("</g>\n");

    // What each compaction saved: a bar from the prompt before down to the prompt sent.
    let bar = (band * 0.6).clamp(1.5, 10.0);
    s.push_str("<g class=\"saved\">\n");
    for c in calls.iter().filter(|c| c.tokens_before > c.tokens_after) {
        let cx = x(c.call as usize);
        let _ = writeln!(
            s,
            "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#cbd5e1\" stroke-width=\"{bar:.1}\"/>",
            y(c.tokens_before),
            y(c.tokens_after)
        );
    }
    s.push_str("</g>\n");

    series(&mut s, calls, "before", BEFORE, &x, &y, y_max);
    series(&mut s, calls, "after", AFTER, &x, &y, y_max);

    // Event lanes, then the prefix-break lane.
    let _ = writeln!(
        s,
        "<g class=\"lanes\" font-size=\"12\"><text x=\"{LEFT}\" y=\"{:.0}\" fill=\"#374151\" font-size=\"13\">compaction events before each call (hover for details)</text>",
        lanes_top - 6.0
    );
    for (row, (strategy, name, colour)) in lanes.iter().enumerate() {
        let ly = lanes_top + LANE * row as f64 + LANE / 2.0;
        lane_label(&mut s, ly, name, colour);
        for c in calls {
            let events: Vec<&Event> = c
                .events
                .iter()
                .filter(|e| e.strategy == *strategy)
                .collect();
            if events.is_empty() {
                continue;
            }
            let ok = events
                .iter()
                .any(|e| matches!(e.status, EventStatus::Applied | EventStatus::Fallback));
            let saved: u64 = events.iter().map(|e| u64::from(e.tokens_saved)).sum();
            let r = (4.0 + events.len() as f64).min(8.0);
            let cx = x(c.call as usize);
            let _ = write!(
                s,
                "<g class=\"event\" data-call=\"{}\" data-strategy=\"{name}\" data-count=\"{}\">\
                 <title>call {}: {name} ×{}, saved {} tokens{}</title>\
                 <circle cx=\"{cx:.1}\" cy=\"{ly:.1}\" r=\"{r:.1}\" fill=\"{}\" stroke=\"{colour}\" stroke-width=\"1.5\"/>",
                c.call,
                events.len(),
                c.call,
                events.len(),
                thousands(saved),
                event_details(&events),
                if ok { colour } else { "#fff" },
            );
            if events.len() > 1 && r >= 6.0 {
                let _ = write!(
                    s,
                    "<text x=\"{cx:.1}\" y=\"{:.1}\" font-size=\"9\" fill=\"#fff\" text-anchor=\"middle\">{}</text>",
                    ly + 3.0,
                    events.len()
                );
            }
            s.push_str("</g>\n");
        }
    }
    let ly = lanes_top + LANE * lanes.len() as f64 + LANE / 2.0;
    lane_label(&mut s, ly, "prefix break", BREAK);
    for c in calls.iter().filter(|c| c.prefix_break) {
        let cx = x(c.call as usize);
        let _ = writeln!(
            s,
            "<path class=\"break\" data-call=\"{}\" d=\"M{:.1} {:.1}l5 9h-10z\" fill=\"{BREAK}\">\
             <title>call {}: the prompt no longer starts with the previous one (prompt cache re-read)</title></path>",
            c.call,
            cx,
            ly - 5.0,
            c.call
        );
    }
    if !calls.iter().any(|c| c.prefix_break) {
        let _ = writeln!(
            s,
            "<text x=\"{:.0}\" y=\"{:.1}\" fill=\"#6b7280\">none: every prompt extends the previous one</text>",
            LEFT + 6.0,
            ly + 4.0
        );
    }
    s.push_str("</g>\n");
    if n == 0 {
        let _ = writeln!(
            s,
            "<text x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\" fill=\"#6b7280\">no model calls</text>",
            (LEFT + RIGHT) / 2.0,
            (TOP + BOTTOM) / 2.0
        );
    }
    s.push_str("</svg></figure>\n");
    s
}

fn legend(s: &mut String) {
    s.push_str("<g class=\"legend\" font-size=\"12\" fill=\"#374151\">\n");
    let items: [(&str, &str, &str); 8] = [
        ("sent (after compaction)", AFTER, "line"),
        ("before compaction", BEFORE, "ring"),
        ("saved", "#cbd5e1", "bar"),
        ("window", "#dc2626", "line"),
        ("summarize above", "#ea580c", "dash"),
        ("tier 2 above", "#ca8a04", "dash"),
        ("tier 2 target", "#16a34a", "dot"),
        ("prefix break", BREAK, "break"),
    ];
    let mut lx = LEFT;
    for (label, colour, style) in items {
        let mark = match style {
            "line" => format!("<line x1=\"{lx}\" x2=\"{}\" y1=\"16\" y2=\"16\" stroke=\"{colour}\" stroke-width=\"2.5\"/>", lx + 22.0),
            "dash" => format!("<line x1=\"{lx}\" x2=\"{}\" y1=\"16\" y2=\"16\" stroke=\"{colour}\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>", lx + 22.0),
            "ring" => format!("<circle cx=\"{}\" cy=\"16\" r=\"3.5\" fill=\"#fff\" stroke=\"{colour}\" stroke-width=\"1.5\"/>", lx + 11.0),
            "dot" => format!("<line x1=\"{lx}\" x2=\"{}\" y1=\"16\" y2=\"16\" stroke=\"{colour}\" stroke-width=\"2\" stroke-dasharray=\"2 3\"/>", lx + 22.0),
            "bar" => format!("<rect x=\"{}\" y=\"9\" width=\"8\" height=\"14\" fill=\"{colour}\"/>", lx + 7.0),
            _ => format!("<path d=\"M{} 11l5 9h-10z\" fill=\"{colour}\"/>", lx + 11.0),
        };
        let _ = writeln!(s, "{mark}<text x=\"{}\" y=\"20\">{label}</text>", lx + 28.0);
        lx += 28.0 + label.len() as f64 * 6.6 + 18.0;
    }
    s.push_str("</g>\n");
}

fn lane_label(s: &mut String, ly: f64, name: &str, colour: &str) {
    let _ = writeln!(
        s,
        "<line x1=\"{LEFT}\" x2=\"{RIGHT}\" y1=\"{ly:.1}\" y2=\"{ly:.1}\" stroke=\"#f1f3f6\"/>\
         <text x=\"{:.0}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{colour}\">{name}</text>",
        LEFT - 8.0,
        ly + 4.0
    );
}

/// One series: a point per call, each with its numbers; the prompts sent are joined by a line
/// (the prompts before compaction are not: between two calls the history only grows, and the
/// saved bar already joins each to its prompt sent).
fn series(
    s: &mut String,
    calls: &[Call],
    class: &str,
    colour: &str,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(u32) -> f64,
    y_max: f64,
) {
    let value = |c: &Call| {
        if class == "before" {
            c.tokens_before
        } else {
            c.tokens_after
        }
    };
    let r = if class == "before" { 2.6 } else { 2.8 };
    let _ = writeln!(s, "<g class=\"series-{class}\">");
    if class == "after" {
        s.push_str("<polyline fill=\"none\" stroke=\"");
        s.push_str(colour);
        s.push_str("\" stroke-width=\"2\" points=\"");
        for c in calls {
            let _ = write!(s, "{:.1},{:.1} ", x(c.call as usize), y(value(c)));
        }
        s.push_str("\"/>\n");
    }
    for c in calls {
        let v = value(c);
        let clipped = f64::from(v) > y_max;
        let fill = if class == "before" { "#fff" } else { colour };
        let _ = writeln!(
            s,
            "<circle class=\"point {class}\" data-call=\"{}\" data-tokens=\"{v}\"{} cx=\"{:.2}\" cy=\"{:.2}\" r=\"{r}\" \
             fill=\"{fill}\" stroke=\"{colour}\" stroke-width=\"1.2\"><title>call {} ({} messages of the session): {} → {} tokens{}</title></circle>",
            c.call,
            if clipped { " data-clipped=\"1\"" } else { "" },
            x(c.call as usize),
            y(v),
            c.call,
            c.messages,
            thousands(c.tokens_before),
            thousands(c.tokens_after),
            if clipped { " (above the chart)" } else { "" },
        );
        if clipped {
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.0}\" font-size=\"11\" fill=\"#64748b\" text-anchor=\"middle\">↑{}</text>",
                x(c.call as usize),
                TOP - 6.0,
                short(f64::from(v))
            );
        }
    }
    s.push_str("</g>\n");
}

fn event_details(events: &[&Event]) -> String {
    let mut text = String::new();
    for e in events.iter().take(6) {
        let _ = write!(
            text,
            "\n{} message {}: {} → {}{}",
            status_name(e.status),
            e.message_index,
            thousands(e.tokens_before),
            thousands(e.tokens_after),
            e.path
                .as_deref()
                .map(|p| format!(" {}", esc(p)))
                .unwrap_or_default()
        );
    }
    if events.len() > 6 {
        let _ = write!(text, "\n… {} more", events.len() - 6);
    }
    text
}

fn summary_cards(out: &mut String, report: &Report) {
    let calls = &report.calls;
    let compactions = calls
        .iter()
        .filter(|c| c.events.iter().any(applied))
        .count();
    let events = calls.iter().map(|c| c.events.len()).sum::<usize>();
    let saved: u64 = calls
        .iter()
        .map(|c| u64::from(c.tokens_before.saturating_sub(c.tokens_after)))
        .sum();
    let sent: u64 = calls.iter().map(|c| u64::from(c.tokens_after)).sum();
    let peak = calls.iter().map(|c| c.tokens_after).max().unwrap_or(0);
    let over = calls
        .iter()
        .filter(|c| c.tokens_after > report.window)
        .count();
    let breaks = calls.iter().filter(|c| c.prefix_break).count();
    let stored: u64 = report.store.iter().map(|f| u64::from(f.tokens)).sum();
    out.push_str("<div class=\"cards\">\n");
    let mut card = |value: String, label: &str, bad: bool| {
        let _ = writeln!(
            out,
            "<div class=\"card{}\"><b>{value}</b><span>{label}</span></div>",
            if bad { " bad" } else { "" }
        );
    };
    card(thousands(calls.len() as u64), "model calls", false);
    card(
        format!("{compactions}"),
        &format!("calls that compacted, {events} events"),
        false,
    );
    card(thousands(saved), "tokens saved, all calls", false);
    card(thousands(sent), "tokens sent, all calls", false);
    card(
        thousands(peak),
        &format!(
            "largest prompt, {:.0} % of the window",
            100.0 * f64::from(peak) / f64::from(report.window.max(1))
        ),
        peak > report.window,
    );
    card(format!("{over}"), "prompts over the window", over > 0);
    card(format!("{breaks}"), "prefix breaks", false);
    card(
        thousands(report.store.len() as u64),
        &format!("files stored ({} tokens)", thousands(stored)),
        false,
    );
    out.push_str("</div>\n");
}

fn events_table(out: &mut String, report: &Report) {
    out.push_str("<h2>Compaction events</h2>\n");
    if report.calls.iter().all(|c| c.events.is_empty()) {
        out.push_str("<p class=\"empty\">None: every prompt fitted below the thresholds.</p>\n");
        return;
    }
    out.push_str(
        "<table id=\"events\"><thead><tr><th class=\"n\">call</th><th>kind</th><th>status</th>\
         <th class=\"n\">message</th><th class=\"n\">tokens before</th><th class=\"n\">after</th>\
         <th class=\"n\">saved</th><th>path</th></tr></thead><tbody>\n",
    );
    for c in &report.calls {
        for e in &c.events {
            let (name, colour) = kind_of(e.strategy);
            let _ = writeln!(
                out,
                "<tr data-call=\"{}\" data-strategy=\"{name}\"><td class=\"n\">{}</td>\
                 <td class=\"kind\"><span class=\"dot\" style=\"background:{colour}\"></span>{name}</td>\
                 <td class=\"st-{}\">{}{}</td><td class=\"n\">{}</td>{}<td class=\"path\">{}</td></tr>",
                c.call,
                c.call,
                status_name(e.status),
                status_name(e.status),
                e.error
                    .as_deref()
                    .map(|m| format!("<small>{}</small>", esc(m)))
                    .unwrap_or_default(),
                e.message_index,
                // A transcript replaces nothing: it has no tokens of its own to show.
                if e.strategy == Strategy::Transcript {
                    "<td class=\"n\">–</td><td class=\"n\">–</td><td class=\"n\">–</td>".to_owned()
                } else {
                    format!(
                        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>",
                        thousands(e.tokens_before),
                        thousands(e.tokens_after),
                        thousands(e.tokens_saved)
                    )
                },
                e.path.as_deref().map(esc).unwrap_or_default(),
            );
        }
    }
    out.push_str("</tbody></table>\n");
}

fn store_table(out: &mut String, report: &Report) {
    out.push_str("<h2>What went where in the store</h2>\n");
    if report.store.is_empty() {
        out.push_str("<p class=\"empty\">Nothing was stored.</p>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<table id=\"store\"><thead><tr><th>path</th><th>strategy</th><th class=\"n\">call</th>\
         <th class=\"n\">tokens ({})</th><th class=\"n\">chars</th></tr></thead><tbody>",
        esc(&report.encoding)
    );
    for f in &report.store {
        let (name, colour) = kind_of(f.strategy);
        let _ = writeln!(
            out,
            "<tr><td class=\"path\">{}</td><td class=\"kind\"><span class=\"dot\" style=\"background:{colour}\"></span>{name}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&f.path),
            f.call,
            thousands(f.tokens),
            thousands(f.chars)
        );
    }
    let _ = writeln!(
        out,
        "<tr class=\"total\"><td>{} files</td><td></td><td></td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\
         </tbody></table>",
        report.store.len(),
        thousands(report.store.iter().map(|f| u64::from(f.tokens)).sum::<u64>()),
        thousands(report.store.iter().map(|f| f.chars).sum::<u64>()),
    );
}

fn calls_table(out: &mut String, report: &Report) {
    if report.calls.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<details><summary>Every call ({})</summary>\n<table id=\"calls\"><thead><tr><th class=\"n\">call</th>\
         <th class=\"n\">session messages</th><th class=\"n\">tokens before</th><th class=\"n\">sent</th>\
         <th class=\"n\">of the window</th><th>events</th><th>prefix</th></tr></thead><tbody>",
        report.calls.len()
    );
    for c in &report.calls {
        let mut kinds: Vec<(&str, usize)> = Vec::new();
        for e in &c.events {
            let name = kind_of(e.strategy).0;
            match kinds.iter_mut().find(|(k, _)| *k == name) {
                Some((_, count)) => *count += 1,
                None => kinds.push((name, 1)),
            }
        }
        let kinds: Vec<String> = kinds
            .iter()
            .map(|(k, n)| {
                if *n > 1 {
                    format!("{k} ×{n}")
                } else {
                    (*k).to_owned()
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr data-call=\"{}\" data-before=\"{}\" data-after=\"{}\"><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1} %</td><td>{}</td><td>{}</td></tr>",
            c.call,
            c.tokens_before,
            c.tokens_after,
            c.call,
            c.messages,
            thousands(c.tokens_before),
            thousands(c.tokens_after),
            100.0 * f64::from(c.tokens_after) / f64::from(report.window.max(1)),
            kinds.join(", "),
            if c.prefix_break { "break" } else { "" },
        );
    }
    out.push_str("</tbody></table></details>\n");
}

fn applied(e: &Event) -> bool {
    matches!(e.status, EventStatus::Applied | EventStatus::Fallback)
}

fn status_name(status: EventStatus) -> &'static str {
    match status {
        EventStatus::Applied => "applied",
        EventStatus::Failed => "failed",
        EventStatus::NotExecuted => "not-executed",
        EventStatus::Fallback => "fallback",
    }
}

/// An axis maximum at or above `max` and a round step (1, 2, 2.5 or 5 × 10^k) giving 4–8 ticks.
/// Integer arithmetic: no `powf`/`log10` pulled into the wasm.
fn nice_axis(max: u64) -> (u64, u64) {
    let step = nice_step(max.div_ceil(6), true);
    (max.div_ceil(step) * step, step)
}

/// A whole step between labelled calls, so that about 12 labels fit.
fn nice_int_step(n: usize) -> usize {
    nice_step((n as u64).div_ceil(12), false) as usize
}

/// The smallest of 1, 2, (2.5,) 5 × 10^k at or above `rough` (at least 1).
fn nice_step(rough: u64, quarter: bool) -> u64 {
    let rough = rough.max(1);
    let mut magnitude = 1;
    while magnitude * 10 <= rough {
        magnitude *= 10;
    }
    [2, 4, 5, 10, 20]
        .into_iter()
        .filter(|half| *half != 5 || (quarter && magnitude >= 10))
        .map(|half| half * magnitude / 2)
        .find(|step| *step >= rough)
        .unwrap_or(10 * magnitude)
}

/// `25000` → `25k`, `2500` → `2.5k`.
fn short(v: f64) -> String {
    if v >= 1_000_000.0 {
        format!("{}M", trim(v / 1_000_000.0))
    } else if v >= 1_000.0 {
        format!("{}k", trim(v / 1_000.0))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let text = format!("{v:.1}");
    text.strip_suffix(".0").map_or(text.clone(), str::to_owned)
}

/// `1234567` → `1,234,567` (the report's numbers; the CLI prints them the same way).
pub fn thousands(n: impl Into<u64>) -> String {
    let digits = n.into().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Text escaped for HTML content and attribute values.
fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}
