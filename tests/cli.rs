//! The native CLI, run as a process on a committed fixture: a 29-message coding session with two
//! tool results over 20,000 tokens (tests/fixtures/cli/make-session.py generates it).
#![cfg(feature = "cli")]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_context-compactor");

fn fixture() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cli/session.json"
    )
    .to_owned()
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn run_stdin(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // A child that refuses its flags exits before it reads: the rest of the input is not wanted.
    let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    if let Err(e) = written {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstderr: {}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_str(&stdout(output)).expect("--json prints JSON")
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A temporary file holding `text`, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, text: &str) -> Self {
        let path = std::env::temp_dir().join(format!("cc-cli-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn plan_json() -> Value {
    json(&run(&["plan", &fixture(), "--model", "gpt-4o", "--json"]))
}

fn offloads(plan: &Value) -> Vec<&Value> {
    plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] == "offload")
        .collect()
}

#[test]
fn fixture_is_small_and_has_two_results_over_20k_tokens() {
    let size = std::fs::metadata(fixture()).unwrap().len();
    assert!(size < 300_000, "{size} bytes");
    let stats = json(&run(&["stats", &fixture(), "--model", "gpt-4o", "--json"]));
    assert_eq!(stats["messages"].as_array().unwrap().len(), 29);
    let big: Vec<&Value> = stats["largestParts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["type"] == "tool-result" && p["tokens"].as_u64().unwrap() > 20_000)
        .collect();
    assert_eq!(big.len(), 2, "{big:?}");
}

#[test]
fn plan_json_offloads_the_two_large_results_and_applies_as_predicted() {
    let report = plan_json();
    let plan = &report["plan"];
    let offloads = offloads(plan);
    assert_eq!(offloads.len(), 2, "{:#}", plan["actions"]);
    let tools: Vec<&str> = offloads
        .iter()
        .map(|a| a["toolName"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["bash", "list_issues"]);
    let (before, after) = (
        plan["tokensBefore"].as_u64().unwrap(),
        plan["tokensAfter"].as_u64().unwrap(),
    );
    assert!(after < before, "{after} < {before}");
    assert!(before > 40_000 && after < 5_000, "{before} → {after}");
    assert_eq!(plan["model"]["matched"], "gpt-4o");
    assert_eq!(plan["window"], 128_000);

    let applied = &report["applied"];
    assert_eq!(applied["tokensBefore"], plan["tokensBefore"]);
    assert_eq!(
        applied["tokensAfter"], plan["tokensAfter"],
        "the prediction is exact"
    );
    let events = applied["events"].as_array().unwrap();
    assert_eq!(events.len(), plan["actions"].as_array().unwrap().len());
    assert!(
        events.iter().all(|e| e["status"] == "applied"),
        "{events:?}"
    );
    assert_eq!(
        applied["replanActions"],
        serde_json::json!([]),
        "re-planning is idempotent"
    );
}

#[test]
fn plan_report_names_every_path_and_the_token_counts() {
    let report = plan_json();
    let plan = &report["plan"];
    let text = stdout(&run(&["plan", &fixture(), "--model", "gpt-4o"]));
    for action in offloads(plan) {
        let path = action["path"].as_str().unwrap();
        assert!(path.starts_with("/tool_outputs/"), "{path}");
        assert!(text.contains(path), "{path} missing from:\n{text}");
        assert!(text.contains(action["id"].as_str().unwrap()));
        assert!(
            text.contains(&thousands(action["tokensBefore"].as_u64().unwrap())),
            "{text}"
        );
    }
    let before = thousands(plan["tokensBefore"].as_u64().unwrap());
    let after = thousands(plan["tokensAfter"].as_u64().unwrap());
    assert!(
        text.contains(&format!("{before} → {after} predicted")),
        "{text}"
    );
    assert!(
        text.contains("gpt-4o") && text.contains("128,000") && text.contains("o200k_base"),
        "{text}"
    );
    assert!(
        text.contains("after apply (simulated, all writes succeed)"),
        "{text}"
    );
    assert!(text.contains("re-plan   no new actions"), "{text}");
}

/// The command line of `command` on the fixture: `report` needs somewhere to write.
fn args<'a>(command: &'a str, fixture: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![command, fixture];
    args.extend_from_slice(rest);
    if command == "report" {
        args.push("--json");
    }
    args
}

/// Exit 2 with nothing on stdout; stderr.
fn refused(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(2),
        "stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(output.stdout.is_empty());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn no_model_is_refused_not_guessed() {
    // Issue 35 (8): without --model every command planned against an 8,192-token window and
    // another encoding, without a word.
    let fixture = fixture();
    for command in ["plan", "stats", "report"] {
        for rest in [
            &[][..],
            &["--window", "8192"],
            &["--encoding", "cl100k_base"],
        ] {
            let stderr = refused(&run(&args(command, &fixture, rest)));
            assert!(
                stderr.contains("no model given")
                    && stderr.contains("--model")
                    && stderr.contains("--window N with --encoding"),
                "{command} {rest:?}: {stderr}"
            );
        }
    }
}

#[test]
fn an_unknown_model_is_refused_with_the_registrys_nearest_names() {
    let fixture = fixture();
    for command in ["plan", "stats", "report"] {
        for (model, nearest) in [
            ("gpt4o", "gpt-4o"),
            ("claud-sonnet-4-5", "claude-sonnet-4"),
            ("sonnet", "claude-sonnet-4"),
        ] {
            let stderr = refused(&run(&args(command, &fixture, &["--model", model])));
            assert!(
                stderr.contains(&format!("unknown model \"{model}\" (--model)"))
                    && stderr.contains(&format!("nearest names are {nearest}")),
                "{command} {model}: {stderr}"
            );
        }
    }
    // A model named by the session file or the config is checked the same way.
    let session: Value = serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
    let named = TempFile::new(
        "named.json",
        &serde_json::json!({"model": "gpt-4o-mini", "messages": session["messages"]}).to_string(),
    );
    let typo = TempFile::new(
        "typo.json",
        &serde_json::json!({"model": "gpt4o-mini", "messages": session["messages"]}).to_string(),
    );
    let text = stdout(&run(&["stats", named.path()]));
    assert!(
        text.contains("model     gpt-4o-mini (registry entry gpt-4o-mini), window 128,000"),
        "{text}"
    );
    let stderr = refused(&run(&["stats", typo.path()]));
    assert!(
        stderr.contains("unknown model \"gpt4o-mini\" (the session's `model`)")
            && stderr.contains("nearest names are gpt-4o-mini"),
        "{stderr}"
    );
    let config = TempFile::new("model-config.json", r#"{"model": "gtp-4o"}"#);
    let stderr = refused(&run(&["plan", &fixture, "--config", config.path()]));
    assert!(stderr.contains("(the config's `model`)"), "{stderr}");
}

#[test]
fn a_window_with_an_encoding_plans_a_model_the_registry_does_not_know() {
    let fixture = fixture();
    let described: [(&[&str], &str); 3] = [
        (
            &["--window", "8192", "--encoding", "cl100k_base"],
            "(none given) (not in the registry), window 8,192, encoding cl100k_base",
        ),
        (
            &[
                "--model",
                "my-local-model",
                "--window",
                "32000",
                "--encoding",
                "o200k_base",
            ],
            "my-local-model (not in the registry), window 32,000, encoding o200k_base",
        ),
        // --encoding overrides a known model's too.
        (
            &["--model", "gpt-4o", "--encoding", "cl100k_base"],
            "gpt-4o (registry entry gpt-4o), window 128,000, encoding cl100k_base",
        ),
    ];
    for (rest, model_line) in described {
        for command in ["plan", "stats"] {
            let text = stdout(&run(&args(command, &fixture, rest)));
            assert!(text.contains(model_line), "{command} {rest:?}: {text}");
        }
        stdout(&run(&args("report", &fixture, rest)));
    }
    // An encoding the crate has not is clap's usage error.
    let output = run(&[
        "plan",
        &fixture,
        "--model",
        "gpt-4o",
        "--encoding",
        "p50k_base",
    ]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn a_small_window_is_noted() {
    // At 500 tokens only a summary fits: the transcript is saved first, the CLI (no LLM) uses
    // the heuristic summary, and the result is what was predicted.
    let report = json(&run(&[
        "plan",
        &fixture(),
        "--model",
        "gpt-4o",
        "--window",
        "500",
        "--json",
    ]));
    let notes = report["plan"]["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n["type"] == "lossy"), "{notes:?}");
    let kinds: Vec<&str> = report["plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.last(), Some(&"summarize"), "{kinds:?}");
    let events = report["applied"]["events"].as_array().unwrap();
    assert!(
        events
            .iter()
            .any(|e| e["status"] == "fallback" && e["strategy"] == "summarize"),
        "{events:?}"
    );
    assert!(
        report["applied"]["tokensAfter"].as_u64() <= report["plan"]["tokensAfter"].as_u64(),
        "{report}"
    );
    // At 100 tokens nothing fits: the plan says so.
    let text = stdout(&run(&[
        "plan",
        &fixture(),
        "--model",
        "gpt-4o",
        "--window",
        "100",
    ]));
    assert!(
        text.contains("over budget") && text.contains("summary message"),
        "{text}"
    );
}

#[test]
fn stats_totals_equal_the_plans_tokens_before() {
    let plan = plan_json();
    let stats = json(&run(&["stats", &fixture(), "--model", "gpt-4o", "--json"]));
    assert_eq!(stats["totals"]["tokens"], plan["plan"]["tokensBefore"]);
    assert_eq!(stats["usage"]["tokens"], plan["plan"]["tokensBefore"]);
    assert_eq!(stats["usage"]["window"], 128_000);
    // Per-message counts add up to the total but for the once-per-request reply priming.
    let sum: u64 = stats["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(sum + 3, stats["totals"]["tokens"].as_u64().unwrap());
    let roles: u64 = stats["totals"]["byRole"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(roles, sum);
    let by_tool = &stats["totals"]["byTool"];
    assert_eq!(by_tool["bash"]["count"], 3);
    assert!(by_tool["list_issues"]["tokens"].as_u64().unwrap() > 20_000);
    assert_eq!(stats["largestParts"].as_array().unwrap().len(), 10);

    let text = stdout(&run(&["stats", &fixture(), "--model", "gpt-4o"]));
    let total = thousands(stats["totals"]["tokens"].as_u64().unwrap());
    assert!(
        text.contains(&format!("total     {total} tokens")),
        "{text}"
    );
    assert!(
        text.contains("list_issues") && text.contains("largest parts"),
        "{text}"
    );
}

#[test]
fn stdin_and_bare_arrays_are_accepted() {
    let session: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    let array = session["messages"].to_string();
    let from_stdin = run_stdin(&["plan", "-", "--model", "gpt-4o", "--json"], &array);
    assert_eq!(json(&from_stdin)["plan"], plan_json()["plan"]);
}

#[test]
fn invalid_messages_exit_2_naming_the_message_and_field() {
    let bad = TempFile::new("robot.json", r#"[{"role":"robot","content":"x"}]"#);
    for command in ["plan", "stats"] {
        let output = run(&[command, bad.path()]);
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("message 0") && stderr.contains("`role`"),
            "{stderr}"
        );
        assert!(output.stdout.is_empty());
    }
}

#[test]
fn missing_files_and_malformed_json_exit_2() {
    let output = run(&["plan", "/nonexistent/session.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/session.json"));

    let output = run_stdin(&["stats", "-"], r#"[{"role": "user""#);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("malformed JSON"));

    let output = run_stdin(&["stats", "-"], r#"{"turns": []}"#);
    assert_eq!(output.status.code(), Some(2));

    let config = TempFile::new("config.json", r#"{"offload": {"thresholdTokens": 0}}"#);
    let output = run(&["plan", &fixture(), "--config", config.path()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("offload.thresholdTokens"));
}

#[test]
fn report_replays_a_stateless_host_to_the_same_calls_as_a_long_lived_one() {
    // The compaction record: a new compactor per call from the saved state, sent the raw
    // history, makes the long-lived host's compactions, call for call.
    let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/golden/");
    for (session, window, preset) in [
        ("coding-agent.json", "16000", "smart"),
        ("chat.json", "12000", "smart"),
        ("research-agent.json", "24000", "aggressive"),
    ] {
        let path = format!("{golden}{session}");
        let report = |host: &str| {
            let output = run(&[
                "report", &path, "--model", "gpt-4o", "--window", window, "--preset", preset,
                "--host", host, "--json",
            ]);
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            json(&output)
        };
        let (long_lived, stateless) = (report("long-lived"), report("stateless"));
        let calls = long_lived["calls"].as_array().unwrap();
        assert!(
            calls
                .iter()
                .any(|c| !c["events"].as_array().unwrap().is_empty()),
            "{session}: nothing compacted"
        );
        assert_eq!(long_lived["calls"], stateless["calls"], "{session}");
        assert_eq!(long_lived["store"], stateless["store"], "{session}");
    }
}

#[test]
fn plan_and_stats_count_the_session_files_tools_and_say_what_a_request_adds() {
    // Found by a user test: only `report` read a session file's `tools`; `plan` and `stats`
    // planned 4,000 tokens short, and `stats` called the tool definitions reply priming.
    let tools: Vec<Value> = (0..20)
        .map(|i| serde_json::json!({"name": format!("tool_{i}"), "description": "Reads a file of the repository and returns its lines with numbers.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "The file's path"}}}}))
        .collect();
    let session = serde_json::json!({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], "tools": tools});
    let text = session.to_string();
    let plain = serde_json::json!({"messages": session["messages"]}).to_string();
    let plan = json(&run_stdin(
        &["plan", "-", "--model", "gpt-4o", "--json"],
        &text,
    ));
    let bare = json(&run_stdin(
        &["plan", "-", "--model", "gpt-4o", "--json"],
        &plain,
    ));
    let (with, without) = (
        plan["plan"]["tokensBefore"].as_u64().unwrap(),
        bare["plan"]["tokensBefore"].as_u64().unwrap(),
    );
    assert!(
        with > without + 900,
        "plan counts the tools: {with} against {without}"
    );
    let stats = json(&run_stdin(
        &["stats", "-", "--model", "gpt-4o", "--json"],
        &text,
    ));
    assert_eq!(stats["totals"]["tokens"].as_u64(), Some(with));
    let (defs, priming) = (
        stats["totals"]["toolDefinitions"].as_u64().unwrap(),
        stats["totals"]["replyPriming"].as_u64().unwrap(),
    );
    assert!(defs > 900 && priming == 3, "{defs} {priming}");
    let human = stdout(&run_stdin(&["stats", "-", "--model", "gpt-4o"], &text));
    assert!(
        human.contains(&format!(
            "{} tokens of 20 tool definitions and 3 reply-priming tokens",
            thousands(defs)
        )),
        "{human}"
    );
    // Plan-only flags are refused, as `report` refuses them.
    assert!(refused(&run_stdin(
        &["stats", "-", "--model", "gpt-4o", "--manual"],
        &text
    ))
    .contains("--manual"));
}

#[test]
fn a_lone_surrogate_in_a_session_file_is_read_as_the_library_reads_it() {
    // What JSON.stringify writes for a string cut mid-emoji: the CLI called it malformed JSON.
    let session = r#"[{"role": "user", "content": "cut \ud83d here"}]"#;
    let output = run_stdin(&["stats", "-", "--model", "gpt-4o", "--json"], session);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(json(&output)["totals"]["messages"], 1);
}
