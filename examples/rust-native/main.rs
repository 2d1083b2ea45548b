//! The crate used directly from Rust: the host loop of the crate docs (`src/lib.rs`) against a
//! real on-disk store.
//!
//! ```text
//! cargo run --quiet --example rust-native -- [SESSION.json] [--store DIR] [--model M]
//!                                            [--window N] [--fail-summary] [--replay] [--async]
//!                                            [--stateless] [--overflow]
//! ```
//!
//! - `SESSION.json`: `{"messages": [...]}` or a bare array of AI SDK `ModelMessage`s. Default:
//!   the bundled `tests/fixtures/golden/coding-agent.json` (138 messages, ~164k tokens).
//! - `--store DIR`: where the store lives. Default: `$TMPDIR/context-compactor-rust-native`.
//!   Store paths are content-addressed, so re-running overwrites identical files.
//! - `--model` / `--window`: default `gpt-4o` with a 32,000-token window.
//! - `--fail-summary`: the "LLM" fails, so the core applies its heuristic fallback summary.
//! - `--replay`: instead of compacting the whole session once, replay it message by message
//!   and run the host loop before every model call, as an agent would.
//! - `--async`: drive the same loop with `compactor.manage_async(messages, &mut host)` and the
//!   host's `AsyncHost` implementation, as an async app does in its own runtime.
//! - `--stateless`: replay (as `--replay`) as a stateless server does: every turn a new
//!   compactor, loaded from the state the last one saved in the store
//!   (`Compactor::load(config, "/state/compactor.json", &mut host)`), given the raw history; a
//!   long-lived compactor runs beside it, and every turn's prompt must be the same.
//! - `--overflow`: then the provider refuses the result as too long, counting 30 % more than
//!   the compactor (a tokenizer it does not know): `compactor.recover(messages, &overflow, 1,
//!   &mut host)` with what its error said (`parse_overflow`) calibrates from its count and
//!   compacts harder, or says nothing is left (`Error::ContextOverflow`).
//!
//! The host: `compactor.manage(messages, &mut host)`, the core's loop, with a `Host` that writes
//! to the disk store (atomic: temp file, fsync, rename) and answers a summary request with a
//! deterministic summary built from the span (a stand-in for an LLM). Then it checks, and exits 1 if
//! any check fails: every stored file equals what the plan said to write; the stored transcript
//! parses back to the conversation given; the result fits the window; its token count is what
//! `count` says; a re-plan of the result is empty.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, Write as _};
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use context_compactor::{
    messages_from_value, parse_overflow, Action, Applied, AsyncHost, Compactor, Config, Error,
    EventStatus, Host, Message, OverflowReport, Part, Plan, Role, Summarize,
};
use serde_json::Value;

const BUNDLED_NAME: &str = "tests/fixtures/golden/coding-agent.json (bundled)";
const BUNDLED: &str = include_str!("../../tests/fixtures/golden/coding-agent.json");

const USAGE: &str = "usage: rust-native [SESSION.json] [--store DIR] [--model M] [--window N] \
                     [--fail-summary] [--replay] [--async] [--stateless] [--overflow]";

/// Where a stateless replay keeps the compactor's state in the store.
const STATE_PATH: &str = "/state/compactor.json";

struct Args {
    session: Option<PathBuf>,
    store: PathBuf,
    model: String,
    window: u32,
    fail_summary: bool,
    replay: bool,
    /// Drive the loop with `manage_async` and an `AsyncHost` (the same store and summarizer).
    run_async: bool,
    /// Replay with a new compactor per turn, loaded from the state in the store.
    stateless: bool,
    /// Then recover from a provider's overflow error on the result.
    overflow: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        session: None,
        store: std::env::temp_dir().join("context-compactor-rust-native"),
        model: "gpt-4o".into(),
        window: 32_000,
        fail_summary: false,
        replay: false,
        run_async: false,
        stateless: false,
        overflow: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        match arg.as_str() {
            "--store" => args.store = PathBuf::from(value("--store")?),
            "--model" => args.model = value("--model")?,
            "--window" => {
                let v = value("--window")?;
                args.window = v
                    .parse()
                    .map_err(|_| format!("--window: not a number: {v}"))?;
            }
            "--fail-summary" => args.fail_summary = true,
            "--replay" => args.replay = true,
            "--async" => args.run_async = true,
            "--overflow" => args.overflow = true,
            "--stateless" => {
                args.stateless = true;
                args.replay = true;
            }
            "-h" | "--help" => return Err(USAGE.into()),
            flag if flag.starts_with('-') => return Err(format!("unknown flag {flag}\n{USAGE}")),
            path if args.session.is_none() => args.session = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument {extra}\n{USAGE}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    ASYNC.store(args.run_async, std::sync::atomic::Ordering::Relaxed);
    match run(&args) {
        Ok(failures) if failures.is_empty() => ExitCode::SUCCESS,
        Ok(failures) => {
            eprintln!("\n{} check(s) FAILED:", failures.len());
            for failure in &failures {
                eprintln!("  - {failure}");
            }
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("rust-native: error: {error}");
            ExitCode::from(2)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The store: a directory; store paths (`/tool_outputs/x.txt`) are relative to it.

struct DiskStore {
    root: PathBuf,
}

impl DiskStore {
    /// The file for a store path. Only plain components: no `..`, no root escapes.
    fn file(&self, path: &str) -> io::Result<PathBuf> {
        let mut file = self.root.clone();
        let mut parts = 0;
        for component in Path::new(path.trim_start_matches('/')).components() {
            match component {
                Component::Normal(part) => {
                    file.push(part);
                    parts += 1;
                }
                Component::CurDir => {}
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("store path {path:?} leaves the store"),
                    ))
                }
            }
        }
        if parts == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("store path {path:?} names no file"),
            ));
        }
        Ok(file)
    }

    /// Writes durably and atomically: a temp file next to the target, fsync, rename, fsync the
    /// directory. A reader sees the old file or the whole new one, never half of it.
    fn write(&self, path: &str, content: &str) -> io::Result<PathBuf> {
        let file = self.file(path)?;
        let dir = file.parent().expect("a store file has a parent");
        fs::create_dir_all(dir)?;
        let name = file.file_name().expect("a store file has a name");
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let result = (|| {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(content.as_bytes())?;
            f.sync_all()?;
            fs::rename(&tmp, &file)?;
            // Make the rename itself durable (directories can be opened for fsync on Unix).
            if let Ok(d) = fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.map(|()| file)
    }

    fn read(&self, path: &str) -> io::Result<String> {
        fs::read_to_string(self.file(path)?)
    }

    /// `read`, with a missing file as `None`.
    fn read_if_there(&self, path: &str) -> Result<Option<String>, String> {
        match self.read(path) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{path}: {e}")),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The host loop.

/// One file the host wrote: store path, bytes, where it is on disk.
struct Written {
    path: String,
    bytes: usize,
    file: PathBuf,
}

struct Turn {
    plan: Plan,
    applied: Applied,
    written: Vec<Written>,
    /// Stored transcripts read back and compared with the conversation.
    transcripts: usize,
    replan: Plan,
    /// Why the kept state was not saved, if it was not (a stateless replay).
    state_error: Option<String>,
}

/// The app as the core's loop sees it (`context_compactor::Host`): the disk store, and a
/// deterministic stand-in for the LLM (or a failing one, with `--fail-summary`).
struct DiskHost<'a> {
    store: &'a DiskStore,
    /// The conversation as planned, for the stand-in summary of a span.
    messages: &'a [Message],
    fail_summary: bool,
    written: Vec<Written>,
}

impl Host for DiskHost<'_> {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        let file = self
            .store
            .write(path, content)
            .map_err(|e| format!("{path}: {e}"))?;
        self.written.push(Written {
            path: path.to_owned(),
            bytes: content.len(),
            file,
        });
        Ok(())
    }

    fn summarize(&mut self, summary: &Summarize) -> Result<String, String> {
        if self.fail_summary {
            return Err("summarizer unavailable (--fail-summary)".into());
        }
        // The LLM call (`summary.request`): here a deterministic stand-in built from the span.
        Ok(mock_summary(summary, self.messages))
    }

    /// The state a stateless replay keeps (`Compactor::load`). Its saves use the default
    /// `write_if` (read, compare, write): one process writes this store. A store shared by
    /// several processes implements `write_if` with its own compare-and-set.
    fn read(&mut self, path: &str) -> Result<Option<String>, String> {
        self.store.read_if_there(path)
    }
}

/// The same host for an async app (`--async`): an app whose store or LLM client awaits
/// implements `AsyncHost` and awaits `compactor.manage_async(...)` in its own runtime (tokio,
/// smol, ...); here the calls are the disk store's, ready at once.
impl AsyncHost for DiskHost<'_> {
    async fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        Host::write(self, path, content)
    }

    async fn summarize(&mut self, summary: &Summarize) -> Result<String, String> {
        Host::summarize(self, summary)
    }

    async fn read(&mut self, path: &str) -> Result<Option<String>, String> {
        Host::read(self, path)
    }
}

/// `--async`: whether `host_loop` drives `manage_async`.
static ASYNC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A minimal executor for the example (an app uses its runtime's): polls, parks until woken.
fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(value) = future
            .as_mut()
            .poll(&mut std::task::Context::from_waker(&waker))
        {
            return value;
        }
        std::thread::park();
    }
}

/// `manage` (the core's loop: plan → the host's writes, in one batch → the summary, once its
/// transcript is stored → apply) against the disk store → re-plan; the checks go to `failures`.
fn host_loop(
    compactor: &mut Compactor,
    store: &DiskStore,
    messages: Vec<Message>,
    fail_summary: bool,
    failures: &mut Vec<String>,
) -> Result<Turn, context_compactor::Error> {
    // The conversation as the core plans it: the compactions its state records, replayed onto
    // what was given (a summary's span and a transcript are in it). A long-lived compactor is
    // given its last result, which it is already; a stateless request the raw history.
    let planned = compactor.replay(&messages).into_owned();
    let mut host = DiskHost {
        store,
        messages: &planned,
        fail_summary,
        written: Vec::new(),
    };
    let managed = if ASYNC.load(std::sync::atomic::Ordering::Relaxed) {
        block_on(compactor.manage_async(messages.clone(), &mut host))?
    } else {
        compactor.manage(messages.clone(), &mut host)?
    };
    let written = host.written;
    let plan = managed.plan;
    let events = managed.events;
    let state_error = managed.state_error;
    let stored = |id: &str| {
        events
            .iter()
            .any(|e| e.action_id == id && e.files_written > 0)
    };

    // Check the store before apply consumes the conversation: what is on disk is exactly what
    // the plan said to write, and the transcript is the conversation as given.
    let mut transcripts = 0;
    for action in &plan.actions {
        if !stored(action.id()) {
            continue;
        }
        for (path, content) in action.writes() {
            match store.read(path) {
                Ok(stored) if stored == content => {}
                Ok(stored) => failures.push(format!(
                    "{path}: stored {} bytes differ from the plan's {} bytes",
                    stored.len(),
                    content.len()
                )),
                Err(e) => failures.push(format!("{path}: cannot read it back: {e}")),
            }
        }
        if let Action::SaveTranscript(t) = action {
            transcripts += 1;
            let back = store
                .read(&t.path)
                .map_err(|e| e.to_string())
                .and_then(|json| serde_json::from_str::<Value>(&json).map_err(|e| e.to_string()))
                .and_then(|value| messages_from_value(value).map_err(|e| e.to_string()));
            match back {
                Ok(back) if back == planned => {}
                Ok(back) => failures.push(format!(
                    "{}: holds {} messages, not the {} planned",
                    t.path,
                    back.len(),
                    planned.len()
                )),
                Err(e) => failures.push(format!("{}: does not parse back: {e}", t.path)),
            }
        }
    }

    let applied = Applied {
        messages: managed.messages,
        events,
        tokens_before: managed.tokens_before,
        tokens_after: managed.tokens_after,
    };
    let replan = compactor.plan(&applied.messages)?;

    if applied.tokens_after > plan.window {
        failures.push(format!(
            "applied tokens {} exceed the window {}",
            applied.tokens_after, plan.window
        ));
    }
    let counted = compactor.count(&applied.messages);
    if counted != applied.tokens_after {
        failures.push(format!(
            "apply reported {} tokens, count() says {counted}",
            applied.tokens_after
        ));
    }
    if !replan.is_empty() {
        let ids: Vec<&str> = replan.actions.iter().map(Action::id).collect();
        failures.push(format!(
            "re-planning the result fires again: {}",
            ids.join(", ")
        ));
    }
    for event in &applied.events {
        let expected = match event.strategy {
            context_compactor::Strategy::Summarize if fail_summary => EventStatus::Fallback,
            _ => EventStatus::Applied,
        };
        if event.status != expected {
            failures.push(format!(
                "{}: {:?}, expected {:?} ({})",
                event.action_id,
                event.status,
                expected,
                event.error.as_deref().unwrap_or("no error given")
            ));
        }
    }
    Ok(Turn {
        plan,
        applied,
        written,
        transcripts,
        replan,
        state_error,
    })
}

fn first_chars(text: &str, n: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

/// The `## Session Intent` section of a previous summary (rolling summaries keep the intent).
fn previous_intent(previous: &str) -> Option<String> {
    let start = previous.find("## Session Intent")?;
    let body = previous[start..].lines().skip(1);
    let intent: Vec<&str> = body.take_while(|l| !l.starts_with("## ")).collect();
    let intent = intent.join(" ").trim().to_owned();
    (!intent.is_empty()).then_some(intent)
}

fn mock_summary(s: &Summarize, messages: &[Message]) -> String {
    let span = &messages[s.start..s.end.min(messages.len())];
    let intent = s
        .previous_summary
        .as_deref()
        .and_then(previous_intent)
        .or_else(|| {
            span.iter()
                .find(|m| m.role == Role::User)
                .map(|m| first_chars(&m.text(), 240))
        })
        .unwrap_or_else(|| "(no user message in the span)".into());
    let mut tools: BTreeMap<&str, u32> = BTreeMap::new();
    let mut files: BTreeSet<String> = BTreeSet::new();
    let mut errors = 0;
    for part in span.iter().flat_map(Message::parts) {
        match part {
            Part::ToolCall(call) => {
                *tools.entry(call.tool_name.as_str()).or_default() += 1;
                for field in ["path", "file_path", "filePath", "filename"] {
                    if let Some(path) = call.input.get(field).and_then(Value::as_str) {
                        files.insert(path.to_owned());
                    }
                }
            }
            Part::ToolResult(result) if result.output.is_error() => errors += 1,
            _ => {}
        }
    }
    let last_assistant = span
        .iter()
        .rev()
        .filter(|m| m.role == Role::Assistant)
        .map(Message::text)
        .find(|t| !t.trim().is_empty())
        .map_or("(no assistant text)".into(), |t| first_chars(&t, 300));
    let tool_list: Vec<String> = tools.iter().map(|(t, n)| format!("{t} ×{n}")).collect();
    let file_list: Vec<&str> = files.iter().map(String::as_str).take(12).collect();
    format!(
        "## Session Intent\n{intent}\n\n\
         ## Progress\n- {n} messages summarized ({calls} tool calls: {tools}; {errors} tool errors)\n\n\
         ## Key Decisions\n- Last stated by the assistant: {last_assistant}\n\n\
         ## Current State\n- Continues in the messages kept verbatim after this summary.\n\n\
         ## Next Steps\n- Pick up from the most recent messages.\n\n\
         ## Important Details\n- Files touched: {files}{more}\n\
         - Deterministic mock summary (rust-native example, no LLM).",
        n = span.len(),
        calls = tools.values().sum::<u32>(),
        tools = if tool_list.is_empty() { "none".into() } else { tool_list.join(", ") },
        files = if file_list.is_empty() { "none".into() } else { file_list.join(", ") },
        more = if files.len() > 12 { format!(" (+{} more)", files.len() - 12) } else { String::new() },
    )
}

// ---------------------------------------------------------------------------------------------
// Running and reporting.

fn load(args: &Args) -> Result<(String, Vec<Message>), String> {
    let (name, text) = match &args.session {
        Some(path) => (
            path.display().to_string(),
            fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?,
        ),
        None => (BUNDLED_NAME.to_owned(), BUNDLED.to_owned()),
    };
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("{name}: {e}"))?;
    // `parse_messages` takes a bare array; a session file wraps it in {"messages": [...]}.
    let array = match value {
        Value::Object(mut session) => session
            .remove("messages")
            .ok_or(format!("{name}: an object without a `messages` array"))?,
        other => other,
    };
    let messages = messages_from_value(array).map_err(|e| format!("{name}: {e}"))?;
    Ok((name, messages))
}

fn run(args: &Args) -> Result<Vec<String>, String> {
    let (name, messages) = load(args)?;
    let store = DiskStore {
        root: args.store.clone(),
    };
    let mut compactor = Compactor::new(Config {
        model: Some(args.model.clone()),
        context_window: Some(args.window),
        ..Config::default()
    })
    .map_err(|e| e.to_string())?;
    let window = compactor.window();
    let before = compactor.count(&messages);

    println!("Session   {name}: {} messages", messages.len());
    println!(
        "Model     {} ({}), window {} tokens",
        compactor.model().name,
        compactor.model().encoding.as_str(),
        thousands(window)
    );
    println!("Store     {}", store.root.display());
    println!(
        "Summaries {}",
        if args.fail_summary {
            "the LLM fails (--fail-summary): the core's heuristic fallback is applied"
        } else {
            "a deterministic mock summarizer (no LLM)"
        }
    );
    println!(
        "Tokens    before: {} ({} of the window)",
        thousands(before),
        percent(before, window)
    );

    if args.stateless {
        // A new conversation: no state from an earlier run of the example.
        let file = store.file(STATE_PATH).map_err(|e| e.to_string())?;
        if let Err(e) = fs::remove_file(&file) {
            if e.kind() != io::ErrorKind::NotFound {
                return Err(format!("{}: {e}", file.display()));
            }
        }
    }
    let mut failures = Vec::new();
    let mut written = Vec::new();
    let mut transcripts = 0;
    let last = if args.replay {
        replay(
            &mut compactor,
            &store,
            messages,
            args.fail_summary,
            args.stateless,
            &mut failures,
            &mut written,
            &mut transcripts,
        )?
    } else {
        let turn = host_loop(
            &mut compactor,
            &store,
            messages,
            args.fail_summary,
            &mut failures,
        )
        .map_err(|e| e.to_string())?;
        print_turn(&turn);
        written.extend(turn.written);
        transcripts += turn.transcripts;
        turn.applied
    };

    println!(
        "\nTokens    before: {}{} → after: {} ({} of the window, −{})",
        thousands(before),
        if args.replay {
            " (the whole session, unmanaged)"
        } else {
            ""
        },
        thousands(last.tokens_after),
        percent(last.tokens_after, window),
        percent(before.saturating_sub(last.tokens_after), before),
    );
    println!(
        "Result    {} messages; {}",
        last.messages.len(),
        match last
            .messages
            .iter()
            .find(|m| m.text().contains("/conversation_history/"))
        {
            Some(m) => format!("summary/notice message: {:?}", first_chars(&m.text(), 110)),
            None => "no summary message".into(),
        }
    );

    let total: usize = written.iter().map(|w| w.bytes).sum();
    println!("\nFiles written ({}, {}):", written.len(), bytes(total));
    for w in &written {
        println!(
            "  {:<62} {:>10}  {}",
            w.path,
            bytes(w.bytes),
            w.file.display()
        );
    }

    let stats = compactor.stats();
    println!(
        "\nStats     {} compaction(s), {} tokens saved, {} files written, {} actions failed",
        stats.compactions,
        thousands(stats.tokens_saved),
        stats.files_written,
        stats.actions_failed
    );
    for (strategy, s) in &stats.by_strategy {
        println!(
            "  {:<16} {} event(s), {} tokens saved, {} files",
            strategy_name(*strategy),
            s.events,
            thousands(s.tokens_saved),
            s.files_written
        );
    }

    let mut checks = vec![];
    if args.overflow {
        checks.push(recover(
            &mut compactor,
            &store,
            last.messages.clone(),
            &mut failures,
        )?);
    }

    println!("\nChecks");
    checks.extend([
        format!(
            "every stored file equals the plan's content, read back from disk ({} files)",
            written.len()
        ),
        format!("every stored transcript parses back to the conversation it saved ({transcripts})"),
        format!(
            "applied tokens {} <= window {}",
            thousands(last.tokens_after),
            thousands(window)
        ),
        "apply's token count equals count() of the result".into(),
        "re-planning the result is empty (nothing fires again)".into(),
        format!(
            "every action {}",
            if args.fail_summary {
                "applied (summaries as fallback)"
            } else {
                "applied"
            }
        ),
    ]);
    if failures.is_empty() {
        for check in &checks {
            println!("  ok  {check}");
        }
    } else {
        println!("  see the failures below");
    }
    Ok(failures)
}

/// `--overflow`: the provider refuses `messages` as too long, counting 30 % more than the
/// compactor does. `recover` with what its error said: the provider's count calibrates first,
/// then the conversation is compacted harder for the retry (or nothing is left). Returns the
/// check it made.
fn recover(
    compactor: &mut Compactor,
    store: &DiskStore,
    messages: Vec<Message>,
    failures: &mut Vec<String>,
) -> Result<String, String> {
    let ours = compactor.count(&messages);
    let reported = ours * 13 / 10;
    // A deployment that allows less than the model's window (its limit below what it counted):
    // the prompt fits the compactor's window by its count, not the provider's.
    let limit = reported - 1;
    let error = format!(
        "This model's maximum context length is {limit} tokens. However, your messages resulted in \
         {reported} tokens. Please reduce the length of the messages."
    );
    println!("\nOverflow  the provider refused the result: {error:?}");
    let said =
        parse_overflow(&[error], Some(400)).ok_or("the error was not read as an overflow")?;
    let planned = compactor.replay(&messages).into_owned();
    let mut host = DiskHost {
        store,
        messages: &planned,
        fail_summary: false,
        written: Vec::new(),
    };
    match compactor.recover(messages, &OverflowReport::from(&said), 1, &mut host) {
        Ok(managed) => {
            for event in &managed.events {
                println!(
                    "  {:<16} {:?}, saved {} (overflow: {}, attempt {})",
                    strategy_name(event.strategy),
                    event.status,
                    thousands(event.tokens_saved),
                    event
                        .overflow
                        .as_ref()
                        .map_or("none", |o| o.provider.as_str()),
                    event.overflow.as_ref().map_or(0, |o| o.attempt)
                );
            }
            println!(
                "  compacted harder: {} → {} tokens, for the retry",
                thousands(ours),
                thousands(managed.tokens_after)
            );
            if managed.tokens_after >= ours || managed.events.iter().any(|e| e.overflow.is_none()) {
                failures.push("recover: not compacted, or an event without its overflow".into());
            }
        }
        Err(Error::ContextOverflow { message, .. }) => println!("  {message}"),
        Err(e) => return Err(e.to_string()),
    }
    let ratio = compactor
        .state()
        .calibration
        .as_ref()
        .map_or(0.0, |c| c.ratio);
    println!("  calibration: {ratio:.3} of our count (the provider's count over ours)");
    if (ratio - 1.3).abs() > 0.01 {
        failures.push(format!("recover: calibration {ratio:.3}, not 1.3"));
    }
    Ok(format!(
        "recover: the provider's count calibrated ({ratio:.3}), every event says the overflow"
    ))
}

/// Replays the session message by message; before every model call (the next message is the
/// assistant's, or the session ends) the host loop runs on the conversation so far.
#[allow(clippy::too_many_arguments)]
fn replay(
    compactor: &mut Compactor,
    store: &DiskStore,
    original: Vec<Message>,
    fail_summary: bool,
    stateless: bool,
    failures: &mut Vec<String>,
    written: &mut Vec<Written>,
    transcripts: &mut usize,
) -> Result<Applied, String> {
    println!(
        "\nReplay: the host loop runs before each of the assistant's turns; turns with a plan:"
    );
    let mut conversation: Vec<Message> = Vec::new();
    let mut last = None;
    let (mut turns, mut quiet, mut stateless_turns) = (0, 0, 0);
    for (i, message) in original.iter().enumerate() {
        conversation.push(message.clone());
        let next_is_model = original
            .get(i + 1)
            .is_none_or(|m| m.role == Role::Assistant);
        if !next_is_model {
            continue;
        }
        turns += 1;
        let turn = host_loop(
            compactor,
            store,
            std::mem::take(&mut conversation),
            fail_summary,
            failures,
        )
        .map_err(|e| format!("turn at message {i}: {e}"))?;
        if stateless {
            // A stateless server's request: a new compactor from the stored state, the raw
            // history so far. Its prompt must be the long-lived compactor's.
            let mut host = DiskHost {
                store,
                messages: &[],
                fail_summary,
                written: Vec::new(),
            };
            let mut fresh = Compactor::load(compactor.config().clone(), STATE_PATH, &mut host)
                .map_err(|e| format!("turn at message {i}: loading the state: {e}"))?;
            let request = host_loop(
                &mut fresh,
                store,
                original[..=i].to_vec(),
                fail_summary,
                failures,
            )
            .map_err(|e| format!("turn at message {i}, stateless: {e}"))?;
            if request.applied.messages != turn.applied.messages {
                failures.push(format!(
                    "turn at message {i}: the stateless request's prompt differs from the long-lived compactor's"
                ));
            }
            if let Some(error) = &request.state_error {
                failures.push(format!(
                    "turn at message {i}: the state was not saved: {error}"
                ));
            }
            stateless_turns += 1;
        }
        if turn.plan.is_empty() {
            quiet += 1;
        } else {
            println!(
                "  message {i:>3}: {} → {} tokens, {}",
                thousands(turn.applied.tokens_before),
                thousands(turn.applied.tokens_after),
                turn.plan
                    .actions
                    .iter()
                    .map(|a| strategy_name(a.strategy()))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        written.extend(turn.written);
        *transcripts += turn.transcripts;
        conversation = turn.applied.messages.clone();
        last = Some(turn.applied);
    }
    println!("  ({turns} turns; {quiet} needed nothing)");
    if stateless {
        let saved = store
            .read_if_there(STATE_PATH)?
            .map(|text| serde_json::from_str::<Value>(&text).map(|v| v["revision"].clone()));
        println!(
            "  stateless: {stateless_turns} requests, each a new compactor loaded from {STATE_PATH} \
             (revision {} at the end), each prompt the long-lived compactor's",
            match saved {
                Some(Ok(revision)) => revision.to_string(),
                _ => "none".into(),
            }
        );
    }
    last.ok_or_else(|| "the session is empty".into())
}

fn print_turn(turn: &Turn) {
    let plan = &turn.plan;
    println!(
        "\nPlan      {} action(s), predicted {} → {} tokens (tier 2 {}, tier 3 {})",
        plan.actions.len(),
        thousands(plan.tokens_before),
        thousands(plan.tokens_after),
        if plan.trigger.tier2 {
            "ran"
        } else {
            "not needed"
        },
        if plan.trigger.tier3 {
            "ran"
        } else {
            "not needed"
        },
    );
    for (action, event) in plan.actions.iter().zip(&turn.applied.events) {
        let what = match action {
            Action::SaveTranscript(t) => format!("{} messages → {} + .md", t.messages, t.path),
            Action::Summarize(s) => format!(
                "messages {}–{} (0-based) → one summary message naming {}",
                s.start,
                s.end - 1,
                s.transcript_path
            ),
            Action::Drop(d) => format!("{} messages dropped", d.messages.len()),
            other => match other.store_edit() {
                Some(e) => format!(
                    "{} in message {} → {}",
                    e.tool_name, e.message_index, e.path
                ),
                None => String::new(),
            },
        };
        let answered = match (&event.error, event.files_written) {
            (Some(error), _) => format!("failed ({error})"),
            (None, 0) => "summarized".to_owned(),
            (None, _) => "written".to_owned(),
        };
        println!(
            "  {:<16} {what}\n  {:<16} host: {answered}; apply: {:?}, {} → {} tokens, saved {}",
            strategy_name(action.strategy()),
            "",
            event.status,
            thousands(event.tokens_before),
            thousands(event.tokens_after),
            thousands(event.tokens_saved),
        );
    }
    println!(
        "Re-plan   {}",
        if turn.replan.is_empty() {
            "no actions".to_owned()
        } else {
            format!("{} action(s)", turn.replan.actions.len())
        }
    );
}

fn strategy_name(strategy: context_compactor::Strategy) -> String {
    serde_json::to_value(strategy)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

fn thousands(n: impl Into<u64>) -> String {
    let digits = n.into().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn percent(part: u32, whole: u32) -> String {
    format!("{:.1}%", 100.0 * f64::from(part) / f64::from(whole.max(1)))
}

fn bytes(n: usize) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        _ => format!("{:.1} MB", n as f64 / 1e6),
    }
}
