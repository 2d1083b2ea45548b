//! Session reports (`context_compactor::report`): the replay's numbers, where events and prefix
//! breaks land, and that the page plots exactly those numbers. The CLI's `report` subcommand is
//! run as a process at the end.

use std::collections::{BTreeMap, HashMap};

use context_compactor::report::{self, Report};
use context_compactor::{
    messages_from_value, Compactor, Config, EventStatus, Message, Role, Strategy,
};
use serde_json::Value;

fn golden(name: &str) -> Vec<Message> {
    let path = format!(
        "{}/tests/fixtures/golden/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut value: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    messages_from_value(value["messages"].take()).unwrap()
}

fn compactor(window: u32, preset: Option<&str>) -> Compactor {
    let mut config = Config {
        model: Some("gpt-4o".into()),
        context_window: Some(window),
        ..Config::default()
    };
    if let Some(preset) = preset {
        config = Config::from_value(serde_json::json!({
            "preset": preset, "model": "gpt-4o", "contextWindow": window
        }))
        .unwrap();
    }
    Compactor::new(config).unwrap()
}

/// The coding-agent fixture in a 16k window: offloads, evictions, masks and summaries.
fn coding_16k() -> (Vec<Message>, Report) {
    let session = golden("coding-agent");
    let report = report::replay(&mut compactor(16_000, None), &session).unwrap();
    (session, report)
}

#[test]
fn a_call_before_every_assistant_message_and_one_for_a_pending_reply() {
    let (session, report) = coding_16k();
    let mut expected: Vec<usize> = session
        .iter()
        .enumerate()
        .filter(|(i, m)| *i > 0 && m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    if session.last().unwrap().role != Role::Assistant {
        expected.push(session.len());
    }
    let got: Vec<usize> = report.calls.iter().map(|c| c.messages).collect();
    assert_eq!(got, expected);
    let numbers: Vec<u32> = report.calls.iter().map(|c| c.call).collect();
    assert_eq!(numbers, (1..=report.calls.len() as u32).collect::<Vec<_>>());
    assert_eq!(report.window, 16_000);
    assert_eq!(report.model, "gpt-4o");
    assert_eq!(report.encoding, "o200k_base");
}

/// The documented host loop, written out independently: each prompt is the previous prompt plus
/// the session's new messages, compacted (plan, store, apply; no summarizer) by one long-lived
/// compactor. Returns, per call, the tokens before, the events and the prompt sent.
fn host_loop(
    session: &[Message],
    window: u32,
    points: &[usize],
) -> Vec<(u32, Vec<report::CallEvent>, Vec<Message>)> {
    use context_compactor::{Action, Outcome};
    let mut compactor = compactor(window, None);
    let mut prompt: Vec<Message> = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for &point in points {
        prompt.extend_from_slice(&session[next..point]);
        next = point;
        let before = compactor.count(&prompt);
        let plan = compactor.plan(&prompt).unwrap();
        let mut events = Vec::new();
        if !plan.is_empty() {
            let outcomes: Vec<Outcome> = plan
                .actions
                .iter()
                .map(|a| match a {
                    Action::Summarize(s) => Outcome::Failed {
                        id: s.id.clone(),
                        error: "no summarizer in the replay: heuristic summary".into(),
                    },
                    other => Outcome::Written {
                        id: other.id().to_owned(),
                    },
                })
                .collect();
            let applied = compactor.apply(prompt, &plan, &outcomes).unwrap();
            events = applied.events.iter().map(report::CallEvent::from).collect();
            prompt = applied.messages;
        }
        out.push((before, events, prompt.clone()));
    }
    out
}

/// Every number the report holds is the host loop's number.
#[test]
fn numbers_are_the_host_loops_numbers() {
    let (session, report) = coding_16k();
    let points: Vec<usize> = report.calls.iter().map(|c| c.messages).collect();
    let compactor = compactor(16_000, None);
    for (call, (before, events, prompt)) in report
        .calls
        .iter()
        .zip(host_loop(&session, 16_000, &points))
    {
        assert_eq!(call.tokens_before, before, "call {}", call.call);
        assert_eq!(call.events, events, "call {}", call.call);
        assert_eq!(
            call.tokens_after,
            compactor.count(&prompt),
            "call {}",
            call.call
        );
        assert!(
            call.tokens_after <= report.window,
            "call {} over the window",
            call.call
        );
    }
}

#[test]
fn events_land_on_the_calls_whose_prompt_they_shrank() {
    let (_, report) = coding_16k();
    let kinds: BTreeMap<Strategy, usize> =
        report
            .calls
            .iter()
            .flat_map(|c| &c.events)
            .fold(BTreeMap::new(), |mut m, e| {
                *m.entry(e.strategy).or_default() += 1;
                m
            });
    for kind in [
        Strategy::Offload,
        Strategy::Mask,
        Strategy::Transcript,
        Strategy::Summarize,
    ] {
        assert!(kinds.contains_key(&kind), "no {kind:?} event: {kinds:?}");
    }
    let mut previous_after = 0;
    for call in &report.calls {
        // Between calls the history only grows; compaction happens only at a call.
        assert!(call.tokens_before >= previous_after, "call {}", call.call);
        let changed = call
            .events
            .iter()
            .any(|e| matches!(e.status, EventStatus::Applied | EventStatus::Fallback));
        if changed {
            assert!(call.tokens_after < call.tokens_before, "call {}", call.call);
        } else {
            assert_eq!(call.tokens_after, call.tokens_before, "call {}", call.call);
        }
        for e in &call.events {
            // No LLM in the replay: every summary is the heuristic fallback.
            let expected = if e.strategy == Strategy::Summarize {
                EventStatus::Fallback
            } else {
                EventStatus::Applied
            };
            assert_eq!(e.status, expected, "call {} {:?}", call.call, e.strategy);
        }
        previous_after = call.tokens_after;
    }
}

/// A prefix break is exactly a call where compaction changed a message the previous prompt
/// already held (a change at the tail, e.g. offloading the newest tool result, keeps the cache).
#[test]
fn prefix_breaks_are_the_calls_that_changed_an_earlier_message() {
    for (name, window) in [
        ("coding-agent", 16_000),
        ("research-agent", 32_000),
        ("chat", 16_000),
    ] {
        let session = golden(name);
        let report = report::replay(&mut compactor(window, None), &session).unwrap();
        assert!(
            report.calls.iter().any(|c| c.prefix_break),
            "{name}: no prefix break"
        );
        assert!(!report.calls[0].prefix_break);
        let points: Vec<usize> = report.calls.iter().map(|c| c.messages).collect();
        let mut previous_len = 0;
        for (call, (_, _, prompt)) in report
            .calls
            .iter()
            .zip(host_loop(&session, window, &points))
        {
            let changed_earlier = call.events.iter().any(|e| {
                matches!(e.status, EventStatus::Applied | EventStatus::Fallback)
                    && e.strategy != Strategy::Transcript
                    && e.message_index < previous_len
            });
            assert_eq!(
                call.prefix_break, changed_earlier,
                "{name} call {}: {:?}",
                call.call, call.events
            );
            previous_len = prompt.len();
        }
    }
}

#[test]
fn the_store_table_lists_every_file_once_with_its_writer() {
    let (_, report) = coding_16k();
    let mut seen = std::collections::HashSet::new();
    for file in &report.store {
        assert!(seen.insert(file.path.clone()), "{} twice", file.path);
        assert!(file.tokens > 0 && file.chars > 0, "{file:?}");
        let call = &report.calls[file.call as usize - 1];
        if file.strategy == Strategy::Transcript {
            assert!(
                file.path.starts_with("/conversation_history/"),
                "{}",
                file.path
            );
            // The JSON transcript is the event's path; the Markdown one is written beside it.
            let json_path = file.path.replace(".md", ".json");
            assert!(
                call.events
                    .iter()
                    .any(|e| e.path.as_deref() == Some(json_path.as_str())),
                "{} not written at call {}",
                file.path,
                file.call
            );
        } else {
            assert!(
                call.events
                    .iter()
                    .any(|e| e.path.as_deref() == Some(file.path.as_str())),
                "{} not written at call {}",
                file.path,
                file.call
            );
        }
    }
    // Every applied event's file is in the table.
    for e in report.calls.iter().flat_map(|c| &c.events) {
        if let (Some(path), EventStatus::Applied) = (&e.path, e.status) {
            assert!(seen.contains(path), "{path} missing from the store table");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The page

/// Attributes of every element whose start tag begins with `prefix` (`<circle class="point after"`).
fn elements(html: &str, prefix: &str) -> Vec<HashMap<String, String>> {
    html.match_indices(prefix)
        .map(|(at, _)| {
            let tag = &html[at..at + html[at..].find('>').unwrap()];
            let mut attrs = HashMap::new();
            let mut rest = tag;
            while let Some(eq) = rest.find("=\"") {
                let name = rest[..eq].rsplit(' ').next().unwrap().to_owned();
                let value_end = rest[eq + 2..].find('"').unwrap();
                attrs.insert(name, rest[eq + 2..eq + 2 + value_end].to_owned());
                rest = &rest[eq + 2 + value_end + 1..];
            }
            attrs
        })
        .collect()
}

fn num(attrs: &HashMap<String, String>, name: &str) -> f64 {
    attrs[name].parse().unwrap()
}

#[test]
fn the_chart_plots_the_replays_numbers() {
    let (_, report) = coding_16k();
    let html = report::render_html(&report);
    let svg = &elements(&html, "<svg id=\"chart\"")[0];
    assert_eq!(num(svg, "data-calls") as usize, report.calls.len());
    assert_eq!(num(svg, "data-window") as u32, report.window);
    let y_max = num(svg, "data-y-max");
    let plot: Vec<f64> = svg["data-plot"]
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    let (top, bottom) = (plot[1], plot[3]);

    for series in ["after", "before"] {
        let points = elements(&html, &format!("<circle class=\"point {series}\""));
        assert_eq!(points.len(), report.calls.len(), "{series}");
        let mut last_x = f64::MIN;
        for (point, call) in points.iter().zip(&report.calls) {
            let tokens = if series == "after" {
                call.tokens_after
            } else {
                call.tokens_before
            };
            assert_eq!(num(point, "data-call") as u32, call.call);
            assert_eq!(
                num(point, "data-tokens") as u32,
                tokens,
                "{series} call {}",
                call.call
            );
            // Drawn where the axis says: y linear in tokens, x increasing with the call.
            let expected_y = bottom - f64::from(tokens).min(y_max) / y_max * (bottom - top);
            assert!(
                (num(point, "cy") - expected_y).abs() < 0.01,
                "{series} call {}",
                call.call
            );
            assert!(num(point, "cx") > last_x);
            last_x = num(point, "cx");
        }
    }
    // The window and the thresholds are lines at their values.
    let lines = elements(&html, "<line class=\"threshold\"");
    let by_name: HashMap<String, u32> = lines
        .iter()
        .map(|l| (l["data-name"].clone(), num(l, "data-tokens") as u32))
        .collect();
    assert_eq!(by_name["window"], report.window);
    assert_eq!(by_name["tier 2"], report.thresholds.compact_at);
    assert_eq!(by_name["target"], report.thresholds.target);
    assert_eq!(by_name["summarize"], report.thresholds.summarize_at);
    // Axis ticks are where the same mapping puts them.
    for tick in elements(&html, "<text class=\"tick\"") {
        let expected = bottom - num(&tick, "data-value") / y_max * (bottom - top);
        assert!((num(&tick, "data-y") - expected).abs() < 0.01);
    }
}

/// A prompt far above the window (a huge tool output arriving) is drawn clipped at the top of
/// the axis, its number kept, instead of flattening the rest of the chart.
#[test]
fn a_prompt_far_above_the_window_is_clipped_at_the_top() {
    let huge: String = (0..20_000).map(|i| format!("row {i}\n")).collect();
    let session = messages_from_value(serde_json::json!([
        {"role": "user", "content": "dump it"},
        {"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "c1", "toolName": "dump", "input": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1",
            "toolName": "dump", "output": {"type": "text", "value": huge}}]},
        {"role": "assistant", "content": "done"},
    ]))
    .unwrap();
    let report = report::replay(&mut compactor(16_000, None), &session).unwrap();
    let big = &report.calls[1];
    assert!(
        big.tokens_before > 3 * 16_000 && big.tokens_after < 16_000,
        "{big:?}"
    );
    let html = report::render_html(&report);
    let svg = &elements(&html, "<svg id=\"chart\"")[0];
    let y_max = num(svg, "data-y-max");
    assert!(
        y_max < f64::from(big.tokens_before) && y_max <= 1.5 * 16_000.0 * 1.3,
        "{y_max}"
    );
    let top = svg["data-plot"]
        .split(' ')
        .nth(1)
        .unwrap()
        .parse::<f64>()
        .unwrap();
    let point = elements(&html, "<circle class=\"point before\"")
        .into_iter()
        .find(|p| p["data-call"] == "2")
        .unwrap();
    assert_eq!(point["data-clipped"], "1");
    assert_eq!(num(&point, "data-tokens") as u32, big.tokens_before);
    assert!((num(&point, "cy") - top).abs() < 0.01);
    assert!(
        html.contains('↑'),
        "a clipped point shows its value above the axis"
    );
}

#[test]
fn event_markers_and_breaks_sit_on_their_calls() {
    let (_, report) = coding_16k();
    let html = report::render_html(&report);
    let mut expected: BTreeMap<(u32, String), usize> = BTreeMap::new();
    for call in &report.calls {
        for e in &call.events {
            let name = serde_json::to_value(e.strategy).unwrap();
            *expected
                .entry((call.call, name.as_str().unwrap().to_owned()))
                .or_default() += 1;
        }
    }
    let markers: BTreeMap<(u32, String), usize> = elements(&html, "<g class=\"event\"")
        .iter()
        .map(|m| {
            (
                (num(m, "data-call") as u32, m["data-strategy"].clone()),
                num(m, "data-count") as usize,
            )
        })
        .collect();
    assert_eq!(markers, expected);
    let breaks: Vec<u32> = elements(&html, "<path class=\"break\"")
        .iter()
        .map(|b| num(b, "data-call") as u32)
        .collect();
    let expected: Vec<u32> = report
        .calls
        .iter()
        .filter(|c| c.prefix_break)
        .map(|c| c.call)
        .collect();
    assert_eq!(breaks, expected);
    // The store table has one row per file, and the events table one per event.
    let events: usize = report.calls.iter().map(|c| c.events.len()).sum();
    assert_eq!(
        elements(&html, "<tr data-call=\"").len(),
        events + report.calls.len()
    );
    for file in &report.store {
        assert!(html.contains(&file.path), "{}", file.path);
    }
}

#[test]
fn the_page_is_self_contained_and_escapes_what_it_shows() {
    let (_, mut report) = coding_16k();
    // Paths and titles come from the session and the store: escaped wherever they are shown.
    report.title = "<script>alert(1)</script> & \"quotes\"".into();
    report.store[0].path = "/tool_outputs/</script><b>x</b>.txt".into();
    let html = report::render_html(&report);
    assert!(!html.contains("<script>alert"), "the title is escaped");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"));
    assert!(html.contains("/tool_outputs/&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;.txt"));
    // Nothing loads from elsewhere: no external script, stylesheet, font, image or link.
    for needle in ["src=", "href=", "@import", "url(", "http://", "https://"] {
        assert!(!html.contains(needle), "{needle}");
    }
    assert!(!html.contains("<script"), "no script at all");
}

#[test]
fn an_empty_session_and_one_without_compaction_render() {
    let report = report::replay(&mut compactor(128_000, None), &[]).unwrap();
    assert!(report.calls.is_empty());
    let html = report::render_html(&report);
    assert!(html.contains("no model calls"));

    let session = messages_from_value(serde_json::json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "bye"},
    ]))
    .unwrap();
    let report = report::replay(&mut compactor(128_000, None), &session).unwrap();
    assert_eq!(report.calls.len(), 2);
    assert!(report
        .calls
        .iter()
        .all(|c| c.events.is_empty() && !c.prefix_break));
    assert!(report::render_html(&report).contains("None: every prompt fitted"));
}

#[test]
fn presets_change_what_happens_not_how_it_is_reported() {
    let session = golden("coding-agent");
    let simple = report::replay(&mut compactor(16_000, Some("simple")), &session).unwrap();
    let kinds: Vec<Strategy> = simple
        .calls
        .iter()
        .flat_map(|c| &c.events)
        .map(|e| e.strategy)
        .collect();
    assert!(kinds.contains(&Strategy::Truncate), "{kinds:?}");
    assert!(!kinds.contains(&Strategy::Summarize), "{kinds:?}");
    let html = report::render_html(&simple);
    assert!(html.contains("data-strategy=\"truncate\""));
    // `simple` keeps the last 10 messages whatever they weigh: in a 16k window some prompts stay
    // over it, and the page says how many.
    let over = simple
        .calls
        .iter()
        .filter(|c| c.tokens_after > 16_000)
        .count();
    assert!(html.contains(&format!(
        "<div class=\"card{}\"><b>{over}</b><span>prompts over the window</span>",
        if over > 0 { " bad" } else { "" }
    )));
}

#[test]
fn a_summarizer_answers_summary_requests() {
    let session = golden("chat");
    let mut asked = 0;
    let report = report::replay_with(&mut compactor(16_000, None), &session, &mut |request| {
        asked += 1;
        assert!(!request.request.prompt.is_empty());
        Some(format!("summary {asked}"))
    })
    .unwrap();
    let summaries: Vec<EventStatus> = report
        .calls
        .iter()
        .flat_map(|c| &c.events)
        .filter(|e| e.strategy == Strategy::Summarize)
        .map(|e| e.status)
        .collect();
    assert_eq!(summaries.len(), asked);
    assert!(summaries.iter().all(|s| *s == EventStatus::Applied));
}

// ---------------------------------------------------------------------------------------------
// The CLI

#[cfg(feature = "cli")]
mod cli {
    use super::*;
    use std::process::Command;

    const BIN: &str = env!("CARGO_BIN_EXE_context-compactor");

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("cc-report-{}-{name}", std::process::id()))
    }

    #[test]
    fn report_writes_the_page_of_the_replay() {
        let fixture = format!(
            "{}/tests/fixtures/golden/coding-agent.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let out = temp("coding.html");
        let run = Command::new(BIN)
            .args(["report", &fixture, "--model", "gpt-4o", "--window", "16000"])
            .arg("--out")
            .arg(&out)
            .arg("--json")
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        let printed: Report = serde_json::from_slice(&run.stdout).unwrap();
        let (_, mut expected) = coding_16k();
        expected.title = "coding-agent.json · smart".into();
        expected
            .notes
            .push("The CLI has no LLM: every summary is the heuristic fallback.".into());
        assert_eq!(printed, expected);
        let html = std::fs::read_to_string(&out).unwrap();
        assert_eq!(html, report::render_html(&expected));
        std::fs::remove_file(out).unwrap();
    }

    #[test]
    fn a_session_object_with_system_and_tools_counts_both() {
        let session = serde_json::json!({
            "system": "You are a careful agent.",
            "tools": {"search": {"description": "Search the web.", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}},
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
            ],
        });
        let path = temp("session.json");
        std::fs::write(&path, session.to_string()).unwrap();
        let run = |args: &[&str]| {
            let output = Command::new(BIN)
                .arg("report")
                .arg(&path)
                .args(args)
                .output()
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            serde_json::from_slice::<Report>(&output.stdout).unwrap()
        };
        let with = run(&["--model", "gpt-4o", "--json"]);
        let bare = report::replay(
            &mut compactor(128_000, None),
            &messages_from_value(session["messages"].clone()).unwrap(),
        )
        .unwrap();
        assert_eq!(with.calls.len(), 1);
        // The system message and the tool definitions both count.
        assert!(with.calls[0].tokens_before > bare.calls[0].tokens_before + 20);
        let out = Command::new(BIN)
            .args(["report", "x.json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--out or --json is required");
        let manual = Command::new(BIN)
            .arg("report")
            .arg(&path)
            .args(["--manual", "--json"])
            .output()
            .unwrap();
        assert_eq!(manual.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&manual.stderr)
            .contains("--manual and --instructions are for `plan`"));
        std::fs::remove_file(path).unwrap();
    }
}
