//! `context-compactor`: the native CLI over the sans-IO core.
//!
//! ```text
//! context-compactor plan  session.json --model M [--window N] [--config config.json] [--json]
//! context-compactor stats session.json --model M [--window N] [--config config.json] [--json]
//! context-compactor report session.json --model M [--window N] [--preset P] --out report.html [--json]
//! context-compactor plan  session.json --window N --encoding o200k_base   (a model the registry does not know)
//! ```
//!
//! `session.json` is a JSON array of AI SDK `ModelMessage`s or an object with a `messages` array
//! (and optionally a `model` string, used when neither `--model` nor the config names one, a
//! `system` string, put first as the system message, and `tools`, the tool definitions sent with
//! every request: an array or an object by name, as the quality arena's sessions have them); `-`
//! reads standard input.
//!
//! The CLI never guesses the model: it needs a model the registry knows (`--model`, or the
//! config's or the session's `model`), or the window and the encoding given together
//! (`--window` with `--encoding`, or in the config). A model the registry does not know is
//! refused with the registry's nearest names, unless `--window` and `--encoding` describe it. `plan` prints the plan, then runs the crate's host loop against an
//! in-memory store (every write succeeds), applies the outcomes and re-plans. `stats` breaks the
//! token count down by message, role, tool and part. `report` replays the session one model call
//! at a time as an agent host would (`context_compactor::report::replay`) and writes one
//! self-contained HTML page: the tokens of every prompt before and after compaction, the window
//! and thresholds, each compaction event, prefix breaks, and what went where in the store.
//!
//! Exit codes: 0 on success, 2 on any error (unreadable file, malformed JSON, invalid messages or
//! configuration; clap's usage errors are 2 as well). Errors go to stderr, naming the message
//! index and field.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{Read, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use context_compactor::report::thousands;
use context_compactor::{
    lookup_model, messages_from_value, nearest_models, report, Action, CachedCounter, Compactor,
    Config, Content, Encoding, Error, Message, Note, Outcome, Part, Plan, PlanOptions, Role,
    Strategy, ToolDefinition, TriggerKind,
};
use serde_json::{json, Value};

#[derive(Parser)]
#[command(
    name = "context-compactor",
    version,
    about = "Plan and inspect context compaction for AI SDK conversations"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plan a compaction, execute it against an in-memory store, apply it and report.
    Plan(Opts),
    /// Token usage by message, role, tool and part.
    Stats(Opts),
    /// Replay the session call by call and write an HTML report with a chart of every prompt.
    Report(ReportOpts),
}

#[derive(Args)]
struct ReportOpts {
    #[command(flatten)]
    opts: Opts,
    /// Where to write the HTML page (`-`: standard output).
    #[arg(long, required_unless_present = "json")]
    out: Option<PathBuf>,
    /// The page's heading (default: the session file's name and the preset).
    #[arg(long)]
    title: Option<String>,
    /// How the replayed host holds the conversation: `long-lived` (one compactor, the compacted
    /// prompt carried forward; the default) or `stateless` (a new compactor per call from the
    /// saved state, the raw history re-sent). Both send the same prompts.
    #[arg(long, default_value = "long-lived", value_parser = ["long-lived", "stateless"])]
    host: String,
}

#[derive(Args)]
struct Opts {
    /// A JSON array of AI SDK ModelMessages, or {"messages": [...]}; `-` reads stdin.
    session: String,
    /// Model name, looked up in the registry (e.g. gpt-4o, claude-sonnet-4-5). Required unless
    /// the config or the session names one, or --window and --encoding are both given.
    #[arg(long)]
    model: Option<String>,
    /// Context window in tokens (overrides the registry).
    #[arg(long)]
    window: Option<u32>,
    /// Encoding counts are made with, o200k_base or cl100k_base (overrides the registry). With
    /// --window, plans for a model the registry does not know.
    #[arg(long, value_parser = ["o200k_base", "cl100k_base"])]
    encoding: Option<String>,
    /// A JSON configuration file (the crate's `Config`); --model and --window override it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Start from a preset: simple, smart (the default) or aggressive.
    #[arg(long)]
    preset: Option<String>,
    /// Plan a manual compaction (every tier runs, a summary is made).
    #[arg(long)]
    manual: bool,
    /// Custom instructions for the summary.
    #[arg(long)]
    instructions: Option<String>,
    /// Print JSON instead of the readable report.
    #[arg(long)]
    json: bool,
}

/// A failure to report: the crate's typed error, or a file that could not be read.
enum Failure {
    Core(Error),
    Io(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e)
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Core(e) => e.fmt(f),
            Failure::Io(message) => f.write_str(message),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Plan(opts) => run_plan(opts),
        Command::Stats(opts) => run_stats(opts),
        Command::Report(opts) => run_report(opts),
    };
    match result {
        Ok(output) => {
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = std::io::stdout().lock().write_all(output.as_bytes());
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("context-compactor: error: {failure}");
            ExitCode::from(2)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Input

fn read_text(path: &str) -> Result<String, Failure> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::Io(format!("cannot read stdin: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| Failure::Io(format!("cannot read {path}: {e}")))
}

/// The session's messages and the compactor for them: the options, with the session's own
/// `model` and `tools` where the options give none.
fn session_compactor(opts: &Opts) -> Result<(Vec<Message>, Compactor), Failure> {
    let session = load_session_file(&opts.session)?;
    let mut config = config(opts, session.model)?;
    if config.tools.is_empty() {
        config.tools = session.tools;
    }
    Ok((session.messages, Compactor::new(config)?))
}

/// A session file: its messages (with its `system` string first, when it has one), its `model`
/// and its `tools`.
struct Session {
    messages: Vec<Message>,
    model: Option<String>,
    tools: Vec<ToolDefinition>,
}

fn load_session_file(path: &str) -> Result<Session, Failure> {
    let text = read_text(path)?;
    // As the library reads messages: a lone surrogate escape (what JSON.stringify writes for a
    // string cut mid-emoji) is U+FFFD, not malformed JSON.
    let value: Value = context_compactor::parse_json_value(&text, "session")?;
    match value {
        Value::Object(mut session) if session.get("messages").is_some_and(Value::is_array) => {
            let model = session
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let mut messages = session.remove("messages").unwrap_or_default();
            if let (Some(Value::String(system)), Value::Array(list)) =
                (session.get("system"), &mut messages)
            {
                if list.first().and_then(|m| m.get("role")) != Some(&json!("system")) {
                    list.insert(0, json!({"role": "system", "content": system}));
                }
            }
            let tools = match session.remove("tools") {
                Some(Value::Object(by_name)) => by_name
                    .into_iter()
                    .map(|(name, mut def)| {
                        if let Value::Object(map) = &mut def {
                            map.insert("name".into(), Value::String(name));
                        }
                        def
                    })
                    .collect(),
                Some(Value::Array(list)) => list,
                _ => Vec::new(),
            };
            let tools =
                serde_json::from_value(Value::Array(tools)).map_err(|e| Error::InvalidConfig {
                    field: "tools".into(),
                    message: e.to_string(),
                })?;
            Ok(Session {
                messages: messages_from_value(messages)?,
                model,
                tools,
            })
        }
        Value::Object(_) => Err(Error::InvalidMessages {
            message: "expected an array of messages or an object with a `messages` array".into(),
        }
        .into()),
        other => Ok(Session {
            messages: messages_from_value(other)?,
            model: None,
            tools: Vec::new(),
        }),
    }
}

/// The configuration: the file, the preset, then --model (or the session's model), --window and
/// --encoding; refused when it leaves the model to a guess (see [`check_model`]).
fn config(opts: &Opts, session_model: Option<String>) -> Result<Config, Failure> {
    let mut config: Value = match &opts.config {
        Some(path) => serde_json::from_str(&read_text(&path.to_string_lossy())?)
            .map_err(|e| Failure::Io(format!("{}: {e}", path.display())))?,
        None => json!({}),
    };
    if let (Some(preset), Value::Object(map)) = (&opts.preset, &mut config) {
        map.insert("preset".into(), Value::String(preset.clone()));
    }
    let mut config = Config::from_value(config)?;
    let source = if opts.model.is_some() {
        config.model = opts.model.clone();
        "--model"
    } else if config.model.is_some() {
        "the config's `model`"
    } else {
        config.model = session_model;
        "the session's `model`"
    };
    if opts.window.is_some() {
        config.context_window = opts.window;
    }
    if let Some(encoding) = &opts.encoding {
        config.encoding = Some(encoding.parse::<Encoding>()?);
    }
    check_model(&config, source)?;
    Ok(config)
}

/// The CLI does not guess: a model the registry does not know (or none) would be planned against
/// an 8,192-token window and counted with another encoding, without a word. It needs a model
/// the registry knows, or the window and the encoding given together; an unknown name is refused
/// with the registry's nearest names.
fn check_model(config: &Config, source: &str) -> Result<(), Failure> {
    const DESCRIBE: &str =
        "--window N with --encoding o200k_base|cl100k_base for a model the registry does not know";
    let described = config.context_window.is_some() && config.encoding.is_some();
    match config.model.as_deref().filter(|name| !name.trim().is_empty()) {
        Some(name) if lookup_model(name).is_some() || described => Ok(()),
        Some(name) => Err(Failure::Io(format!(
            "unknown model \"{name}\" ({source}): the registry's nearest names are {}; pass one of them with --model, or {DESCRIBE}",
            nearest_models(name, 5).join(", "),
        ))),
        None if described => Ok(()),
        None => Err(Failure::Io(format!(
            "no model given: pass --model NAME (a registry name such as gpt-4o or claude-sonnet-4-5), or {DESCRIBE}",
        ))),
    }
}

// ---------------------------------------------------------------------------------------------
// report

fn run_report(args: &ReportOpts) -> Result<String, Failure> {
    let opts = &args.opts;
    if opts.manual || opts.instructions.is_some() {
        return Err(Failure::Io(
            "report replays automatic compaction call by call: --manual and --instructions are for `plan`".into(),
        ));
    }
    let (messages, mut compactor) = session_compactor(opts)?;
    let host = match args.host.as_str() {
        "stateless" => report::Host::Stateless,
        _ => report::Host::LongLived,
    };
    let mut data = report::replay_as(&mut compactor, &messages, host)?;
    data.title = args.title.clone().unwrap_or_else(|| {
        let name = std::path::Path::new(&opts.session).file_name().map_or_else(
            || opts.session.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
        let preset = opts.preset.as_deref().unwrap_or("smart");
        format!("{name} · {preset}")
    });
    if data
        .calls
        .iter()
        .flat_map(|c| &c.events)
        .any(|e| e.strategy == Strategy::Summarize)
    {
        data.notes
            .push("The CLI has no LLM: every summary is the heuristic fallback.".into());
    }
    let html = report::render_html(&data);
    let mut printed = String::new();
    match args.out.as_deref() {
        Some(path) if path.as_os_str() == "-" => printed = html,
        Some(path) => {
            std::fs::write(path, &html)
                .map_err(|e| Failure::Io(format!("cannot write {}: {e}", path.display())))?;
            if !opts.json {
                let breaks = data.calls.iter().filter(|c| c.prefix_break).count();
                let events: usize = data.calls.iter().map(|c| c.events.len()).sum();
                let peak = data.calls.iter().map(|c| c.tokens_after).max().unwrap_or(0);
                let _ = writeln!(
                    printed,
                    "wrote {} ({}): {} model calls, {} compaction events, {} prefix breaks, largest prompt {} of a {}-token window, {} stored",
                    path.display(),
                    bytes(html.len()),
                    thousands(data.calls.len() as u64),
                    thousands(events as u64),
                    thousands(breaks as u64),
                    thousands(peak),
                    thousands(data.window),
                    plural(data.store.len() as u64, "file"),
                );
            }
        }
        None => {}
    }
    if opts.json {
        printed.push_str(&to_json(&serde_json::to_value(&data).unwrap_or_default()));
    }
    Ok(printed)
}

// ---------------------------------------------------------------------------------------------
// plan

const NO_SUMMARIZER: &str = "the CLI has no LLM: heuristic summary";

fn run_plan(opts: &Opts) -> Result<String, Failure> {
    let (messages, mut compactor) = session_compactor(opts)?;
    let options = PlanOptions {
        trigger: if opts.manual {
            TriggerKind::Manual
        } else {
            TriggerKind::Auto
        },
        instructions: opts.instructions.clone(),
        ..PlanOptions::default()
    };
    let plan = compactor.plan_with_options(&messages, &options)?;

    // The host loop of the crate docs, against an in-memory store: every write succeeds; there
    // is no LLM, so a summary is the core's heuristic fallback.
    let mut store: HashMap<String, String> = HashMap::new();
    let outcomes: Vec<Outcome> = plan
        .actions
        .iter()
        .map(|action| {
            for (path, content) in action.writes() {
                store.insert(path.to_owned(), content.to_owned());
            }
            let id = action.id().to_owned();
            match action {
                Action::Summarize(_) => Outcome::Failed {
                    id,
                    error: NO_SUMMARIZER.into(),
                },
                _ => Outcome::Written { id },
            }
        })
        .collect();
    let applied = compactor.apply(messages, &plan, &outcomes)?;
    let replan = compactor.plan(&applied.messages)?;

    if opts.json {
        let report = json!({
            "plan": plan,
            "applied": {
                "tokensBefore": applied.tokens_before,
                "tokensAfter": applied.tokens_after,
                "events": applied.events,
                "replanActions": replan.actions.iter().map(Action::id).collect::<Vec<_>>(),
            },
        });
        return Ok(to_json(&report));
    }

    let mut out = String::new();
    let model = &plan.model;
    let _ = writeln!(out, "model     {}", model_line(&compactor));
    let _ = writeln!(
        out,
        "tokens    {} → {} predicted ({} → {} of the window)",
        thousands(plan.tokens_before),
        thousands(plan.tokens_after),
        percent(plan.tokens_before, plan.window),
        percent(plan.tokens_after, plan.window),
    );
    let _ = writeln!(
        out,
        "offload   tool results over {} tokens",
        thousands(compactor.offload_threshold())
    );
    let _ = writeln!(
        out,
        "tier 2    {} (fires above {}, compacts to {})",
        if plan.trigger.tier2 {
            "runs"
        } else {
            "not needed"
        },
        thousands(plan.trigger.compact_at),
        thousands(plan.trigger.target),
    );
    let _ = writeln!(
        out,
        "tier 3    {} (fires above {}, or when tier 2 falls short{})",
        match plan.actions.iter().find_map(lossy_line) {
            Some(line) if plan.trigger.tier3 => line,
            _ => "not needed".into(),
        },
        thousands(plan.trigger.summarize_at),
        if plan.trigger.manual {
            "; manual compaction"
        } else {
            ""
        },
    );
    if let Some(first) = plan.cache.first_changed_message {
        let _ = writeln!(
            out,
            "cache     {} to earlier messages; the prompt cache breaks at message {first} ({} tokens re-read uncached)",
            plural(u64::from(plan.cache.prefix_changing_edits), "edit"),
            thousands(plan.cache.tokens_invalidated),
        );
    }
    if model.token_ratio != 1.0 {
        let _ = writeln!(
            out,
            "          (estimated counts for this family: {} × the exact count)",
            model.token_ratio
        );
    }

    let _ = writeln!(out, "\nactions ({})", plan.actions.len());
    if plan.actions.is_empty() {
        let _ = writeln!(out, "  none: nothing to compact");
    }
    let rows: Vec<ActionRow> = plan.actions.iter().map(ActionRow::of).collect();
    let id_width = rows.iter().map(|r| r.id.len()).max().unwrap_or(0);
    let kind_width = rows.iter().map(|r| r.kind.len()).max().unwrap_or(0);
    let tool_width = rows.iter().map(|r| r.tool.len()).max().unwrap_or(0);
    for row in &rows {
        let _ = writeln!(
            out,
            "  {:<id_width$}  {:<kind_width$}  message {:>3}  {:<tool_width$}  {:>8} → {:>6} tokens  writes {}",
            row.id,
            row.kind,
            row.message.map_or("-".to_owned(), |m| m.to_string()),
            row.tool,
            row.tokens_before.map_or("-".to_owned(), thousands),
            row.tokens_after.map_or("-".to_owned(), thousands),
            if row.paths.is_empty() { "nothing".to_owned() } else { row.paths.join(", ") },
        );
    }
    let extra = extra_plan_fields(&plan);
    if !extra.is_empty() {
        let _ = writeln!(out, "\nmore plan fields");
    }
    for (key, value) in extra {
        let _ = writeln!(out, "  {key}: {value}");
    }

    let _ = writeln!(out, "\nnotes");
    if plan.notes.is_empty() {
        let _ = writeln!(out, "  none: the predicted conversation fits the window");
    }
    for note in &plan.notes {
        let _ = writeln!(out, "  {}", note_line(note));
    }

    let _ = writeln!(out, "\nafter apply (simulated, all writes succeed)");
    let stored: usize = store.values().map(String::len).sum();
    let _ = writeln!(
        out,
        "  store     {}, {}",
        plural(store.len() as u64, "file"),
        bytes(stored)
    );
    let _ = writeln!(
        out,
        "  tokens    {} → {} ({} of the window){}",
        thousands(applied.tokens_before),
        thousands(applied.tokens_after),
        percent(applied.tokens_after, plan.window),
        if applied.tokens_after == plan.tokens_after {
            ", as predicted".to_owned()
        } else {
            format!(", predicted {}", thousands(plan.tokens_after))
        },
    );
    for event in &applied.events {
        let status = serde_json::to_value(event.status).ok();
        let _ = writeln!(
            out,
            "  {:<id_width$}  {}, saved {} tokens",
            event.action_id,
            status.as_ref().and_then(Value::as_str).unwrap_or("?"),
            thousands(event.tokens_saved),
        );
    }
    if replan.is_empty() {
        let _ = writeln!(out, "  re-plan   no new actions");
    } else {
        let ids: Vec<&str> = replan.actions.iter().map(Action::id).collect();
        let _ = writeln!(
            out,
            "  re-plan   {} new actions: {}",
            ids.len(),
            ids.join(", ")
        );
    }
    if let Some(summary) = applied.messages.iter().find_map(summary_text) {
        let _ = writeln!(out, "\nsummary message (first lines)");
        for line in summary.lines().take(12) {
            let _ = writeln!(out, "  | {line}");
        }
    }
    Ok(out)
}

/// "summarize messages 2–40 (38 messages)" for a lossy action.
fn lossy_line(action: &Action) -> Option<String> {
    match action {
        Action::Summarize(s) => Some(format!(
            "summarize messages {}–{} (indices, as in the actions below; {} summarized{})",
            s.start,
            s.end - 1,
            plural((s.end - s.start - s.keep.len()) as u64, "message"),
            if s.keep.is_empty() {
                String::new()
            } else {
                format!(", {} kept verbatim after the summary", s.keep.len())
            }
        )),
        Action::Drop(d) => {
            let kind = serde_json::to_value(d.strategy)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            Some(format!(
                "{kind}: drop {}",
                plural(d.messages.len() as u64, "message")
            ))
        }
        _ => None,
    }
}

fn summary_text(message: &Message) -> Option<&str> {
    match &message.content {
        Content::Text(text)
            if message.role == Role::User && text.starts_with("[Conversation summary]") =>
        {
            Some(text)
        }
        _ => None,
    }
}

/// What the report shows of one action, read from its JSON form so that action types added to
/// the crate later are shown too (with whatever of these fields they carry).
struct ActionRow {
    id: String,
    kind: String,
    message: Option<u64>,
    tool: String,
    tokens_before: Option<u64>,
    tokens_after: Option<u64>,
    paths: Vec<String>,
}

impl ActionRow {
    fn of(action: &Action) -> Self {
        let value = serde_json::to_value(action).unwrap_or_default();
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        let number = |key: &str| value.get(key).and_then(Value::as_u64);
        ActionRow {
            id: action.id().to_owned(),
            kind: text("type").unwrap_or_else(|| "?".into()),
            message: number("messageIndex").or_else(|| number("start")),
            tool: text("toolName").unwrap_or_default(),
            tokens_before: number("tokensBefore"),
            tokens_after: number("tokensAfter"),
            paths: action
                .writes()
                .into_iter()
                .map(|(path, _)| path.to_owned())
                .collect(),
        }
    }
}

/// Plan fields this report does not know by name (added to the crate later), as compact JSON.
fn extra_plan_fields(plan: &Plan) -> Vec<(String, String)> {
    const KNOWN: [&str; 8] = [
        "model",
        "window",
        "tokensBefore",
        "tokensAfter",
        "actions",
        "notes",
        "trigger",
        "cache",
    ];
    match serde_json::to_value(plan) {
        Ok(Value::Object(map)) => map
            .into_iter()
            .filter(|(key, _)| !KNOWN.contains(&key.as_str()))
            .map(|(key, value)| (key, value.to_string()))
            .collect(),
        _ => Vec::new(),
    }
}

fn note_line(note: &Note) -> String {
    match note {
        Note::UnknownModel {
            name,
            assumed_window,
            ..
        } => {
            format!(
            "unknown model {}: assumed a window of {} tokens (pass --window or a known --model)",
            if name.is_empty() { "(none given)".to_owned() } else { format!("\"{name}\"") },
            thousands(*assumed_window)
        )
        }
        Note::Lossy {
            strategy,
            messages,
            transcript_path,
        } => format!(
            "lossy: {} {}; the whole conversation is saved first to {transcript_path}",
            serde_json::to_value(strategy)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            plural(*messages as u64, "message"),
        ),
        Note::OverBudget {
            tokens_after,
            window,
            reason,
            ..
        } => format!(
            "over budget: {} tokens after every action, window {}: {reason}",
            thousands(*tokens_after),
            thousands(*window)
        ),
        // A note type added to the crate later: its type and reason, or all of it.
        other => {
            let value = serde_json::to_value(other).unwrap_or_default();
            match (
                value.get("type").and_then(Value::as_str),
                value.get("reason").and_then(Value::as_str),
            ) {
                (Some(kind), Some(reason)) => format!("{kind}: {reason}"),
                _ => value.to_string(),
            }
        }
    }
}

fn model_line(compactor: &Compactor) -> String {
    let model = compactor.model();
    let name = if model.name.is_empty() {
        "(none given)"
    } else {
        &model.name
    };
    let matched = match &model.matched {
        Some(entry) => format!("registry entry {entry}"),
        None => "not in the registry".to_owned(),
    };
    let family = serde_json::to_value(model.family).ok();
    format!(
        "{name} ({matched}), window {}, encoding {}, family {}",
        thousands(compactor.window()),
        model.encoding.as_str(),
        family.as_ref().and_then(Value::as_str).unwrap_or("?"),
    )
}

// ---------------------------------------------------------------------------------------------
// stats

/// One part (or a message's plain string content) with its size and tokens.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PartStats {
    message_index: usize,
    /// `None` for a message whose content is a plain string.
    part_index: Option<usize>,
    #[serde(rename = "type")]
    kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_name: Option<String>,
    bytes: usize,
    tokens: u32,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct MessageStats {
    index: usize,
    role: &'static str,
    tokens: u32,
    summary: String,
    parts: Vec<PartStats>,
}

#[derive(Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Tally {
    count: u32,
    tokens: u64,
}

fn run_stats(opts: &Opts) -> Result<String, Failure> {
    if opts.manual || opts.instructions.is_some() {
        return Err(Failure::Io(
            "stats counts the conversation as it is: --manual and --instructions are for `plan`"
                .into(),
        ));
    }
    let (messages, compactor) = session_compactor(opts)?;

    // Per-message and per-part counts: the compactor's own counter settings, scaled like its
    // totals (exact for OpenAI encodings, estimated for the other families).
    let mut counter = CachedCounter::new(compactor.model().encoding).map_err(Failure::from)?;
    counter.image_tokens = compactor.config().image_tokens;
    counter.file_tokens = compactor.config().file_tokens;
    let ratio = compactor.model().token_ratio;
    let scale = |raw: u32| {
        if ratio == 1.0 {
            raw
        } else {
            (f64::from(raw) * ratio).ceil() as u32
        }
    };

    let per_message: Vec<MessageStats> = messages
        .iter()
        .enumerate()
        .map(|(index, message)| {
            let parts = part_stats(index, message, &counter, &scale);
            MessageStats {
                index,
                role: message.role.as_str(),
                tokens: scale(counter.message(message)),
                summary: summary(&parts),
                parts,
            }
        })
        .collect();

    let total = compactor.count(&messages);
    let usage = compactor.usage(&messages);
    let mut by_role: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut by_tool: BTreeMap<String, Tally> = BTreeMap::new();
    for message in &per_message {
        let role = by_role.entry(message.role).or_default();
        role.count += 1;
        role.tokens += u64::from(message.tokens);
        for part in message.parts.iter().filter(|p| p.kind == "tool-result") {
            let tool = by_tool
                .entry(part.tool_name.clone().unwrap_or_default())
                .or_default();
            tool.count += 1;
            tool.tokens += u64::from(part.tokens);
        }
    }
    let mut largest: Vec<&PartStats> = per_message.iter().flat_map(|m| &m.parts).collect();
    largest.sort_by(|a, b| {
        b.tokens
            .cmp(&a.tokens)
            .then(a.message_index.cmp(&b.message_index))
    });
    largest.truncate(10);
    // What a request adds to its messages: the tool definitions and the reply's priming.
    let request = counter.breakdown(&messages, &compactor.config().tools);
    let (tool_tokens, priming) = (scale(request.tools.total), scale(request.reply_priming));

    if opts.json {
        let report = json!({
            "model": compactor.model(),
            "messages": per_message,
            "totals": { "tokens": total, "messages": messages.len(), "byRole": by_role, "byTool": by_tool, "toolDefinitions": tool_tokens, "replyPriming": priming },
            "largestParts": largest,
            "usage": usage,
        });
        return Ok(to_json(&report));
    }

    let mut out = String::new();
    let _ = writeln!(out, "model     {}", model_line(&compactor));
    let _ = writeln!(out, "\nmessages ({})", messages.len());
    for m in &per_message {
        let _ = writeln!(
            out,
            "  {:>4}  {:<9}  {:>8} tokens  {}",
            m.index,
            m.role,
            thousands(m.tokens),
            m.summary
        );
    }

    let _ = writeln!(out, "\nby role");
    for role in [Role::System, Role::User, Role::Assistant, Role::Tool] {
        if let Some(t) = by_role.get(role.as_str()) {
            let _ = writeln!(
                out,
                "  {:<11}  {:>8} tokens  {}",
                role.as_str(),
                thousands(t.tokens),
                plural(t.count, "message")
            );
        }
    }
    let _ = writeln!(out, "\nby tool (tool results)");
    if by_tool.is_empty() {
        let _ = writeln!(out, "  none");
    }
    let mut tools: Vec<(&String, &Tally)> = by_tool.iter().collect();
    tools.sort_by_key(|(_, t)| std::cmp::Reverse(t.tokens));
    let tool_width = tools
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0)
        .max(11);
    for (name, t) in tools {
        let _ = writeln!(
            out,
            "  {name:<tool_width$}  {:>8} tokens  {}",
            thousands(t.tokens),
            plural(t.count, "result")
        );
    }

    let _ = writeln!(out, "\nlargest parts");
    for p in &largest {
        let place = match p.part_index {
            Some(part) => format!("message {} part {part}", p.message_index),
            None => format!("message {}", p.message_index),
        };
        let _ = writeln!(
            out,
            "  {:>8} tokens  {place:<18}  {}",
            thousands(p.tokens),
            summary(std::slice::from_ref(p))
        );
    }

    let tools = if compactor.config().tools.is_empty() {
        String::new()
    } else {
        format!(
            "{} tokens of {} and ",
            thousands(tool_tokens),
            plural(compactor.config().tools.len() as u64, "tool definition")
        )
    };
    let _ = writeln!(
        out,
        "\ntotal     {} tokens, {} of a {}-token window (with {tools}{} reply-priming tokens per request)",
        thousands(total),
        percent(usage.tokens, usage.window),
        thousands(usage.window),
        priming,
    );
    let ratio = compactor.model().token_ratio;
    if ratio != 1.0 {
        let _ = writeln!(
            out,
            "          (estimated counts for this family: {} × the exact {} count)",
            ratio,
            compactor.model().encoding.as_str()
        );
    }
    Ok(out)
}

fn part_stats(
    index: usize,
    message: &Message,
    counter: &CachedCounter,
    scale: &impl Fn(u32) -> u32,
) -> Vec<PartStats> {
    let parts = match &message.content {
        Content::Text(text) => {
            return vec![PartStats {
                message_index: index,
                part_index: None,
                kind: "text".into(),
                tool_name: None,
                bytes: text.len(),
                tokens: scale(counter.text(text)),
            }]
        }
        Content::Parts(parts) => parts,
    };
    parts
        .iter()
        .enumerate()
        .map(|(part_index, part)| {
            let (tool_name, bytes) = match part {
                Part::Text(p) | Part::Reasoning(p) => (None, p.text.len()),
                Part::ToolCall(call) => {
                    (Some(call.tool_name.clone()), call.input.to_string().len())
                }
                Part::ToolResult(result) => {
                    (Some(result.tool_name.clone()), result.output.text().len())
                }
                other => (None, serde_json::to_string(other).map_or(0, |s| s.len())),
            };
            PartStats {
                message_index: index,
                part_index: Some(part_index),
                kind: part.type_name().to_owned(),
                tool_name,
                bytes,
                tokens: scale(counter.part(part)),
            }
        })
        .collect()
}

/// `text 1.2 KB, tool-call bash (40 B)`.
fn summary(parts: &[PartStats]) -> String {
    parts
        .iter()
        .map(|p| match &p.tool_name {
            Some(tool) => format!("{} {tool} ({})", p.kind, bytes(p.bytes)),
            None => format!("{} {}", p.kind, bytes(p.bytes)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

// ---------------------------------------------------------------------------------------------
// Formatting

fn to_json(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

fn plural(n: impl Into<u64>, word: &str) -> String {
    let n = n.into();
    format!("{} {word}{}", thousands(n), if n == 1 { "" } else { "s" })
}

fn percent(tokens: u32, window: u32) -> String {
    format!(
        "{:.1}%",
        100.0 * f64::from(tokens) / f64::from(window.max(1))
    )
}

fn bytes(n: usize) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{:.1} KB", n as f64 / 1e3),
        _ => format!("{:.1} MB", n as f64 / 1e6),
    }
}
