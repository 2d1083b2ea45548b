//! The native Rust host of the behaviour suite (`python/tests/test_behaviour.py`, issue 31 item
//! 5): runs each scenario through `Compactor::manage` — the core's loop, driven by a blocking
//! [`Host`] — and prints what the npm and Python hosts print for it, so that the suite compares
//! all three byte for byte.
//!
//! ```text
//! cargo run --quiet --example behaviour -- SCENARIOS.json
//! ```
//!
//! A scenario: `{"options": <core config>, "turns": [[message, ...], ...], "summaries"?: [text,
//! ...], "failing_summarizer"?: true, "refuse"?: "/prefix/", "hook"?: <onPreCompact decision>,
//! "times"?: [ms, ...], "state"?: path}` (`times`: each turn's time, the host's clock:
//! `Host::now`; `state`: each turn is two requests at once, each a new compactor loaded from the
//! state at `path`, `Compactor::load`; `second`: a message the second request adds;
//! `as_returned`: each tool result goes through `Compactor::offload_tool_output` first, its
//! events before the turn's; `background`: summaries asked ahead are made after the turn with
//! `make_ahead` and handed back with `Compactor::offer_summary`; `refused`: per turn, the error
//! text of a provider that refused the turn's prompt, recovered with `Compactor::recover`;
//! `save_after`: the long-lived compactor keeps its state at this path, `Compactor::load`, and
//! after each turn takes the provider's count of the prompt, `usage[turn]`, and saves,
//! `Compactor::save_state`).
//! Each turn's messages are appended to the history, which `manage` gets whole (raw), as a
//! stateless-looking long-lived compactor would. Output: `{name: [{prompt, events, files}]}`.

use std::collections::BTreeMap;
use std::process::ExitCode;

use context_compactor::{
    make_ahead, parse_messages, parse_overflow, Compactor, Config, Host, OverflowReport, Plan,
    PreCompact, PreCompactDecision, Summarize, SummaryLease,
};
use serde_json::{json, Value};

struct App {
    files: BTreeMap<String, String>,
    refuse: Option<String>,
    summaries: Vec<String>,
    next: usize,
    failing: bool,
    hook: Option<PreCompactDecision>,
    /// The summary requests' prompts of the current turn.
    asked: Vec<String>,
    /// The current turn's time (the scenario's `times`), if it has them.
    now: Option<u64>,
    /// Requests so far (each lease's owner).
    leases: u32,
    /// Summaries are made ahead of need (the scenario's `background`), and those handed out.
    background: bool,
    ahead: Vec<Summarize>,
}

impl Host for App {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        if self.refuse.as_deref().is_some_and(|p| path.starts_with(p)) {
            return Err("refused".into());
        }
        self.files.insert(path.to_owned(), content.to_owned());
        Ok(())
    }

    fn summarize(&mut self, summary: &Summarize) -> Result<String, String> {
        if self.failing || !self.summaries.is_empty() {
            self.asked.push(summary.request.prompt.clone());
        }
        if self.failing {
            return Err("down".into());
        }
        if self.summaries.is_empty() {
            return Err("no summarizer configured".into());
        }
        let text = self.summaries[self.next % self.summaries.len()].clone();
        self.next += 1;
        Ok(text)
    }

    fn on_pre_compact(&mut self, _info: &PreCompact, _plan: &Plan) -> PreCompactDecision {
        self.hook.clone().unwrap_or_default()
    }

    fn now(&mut self) -> Option<u64> {
        self.now
    }

    fn read(&mut self, path: &str) -> Result<Option<String>, String> {
        Ok(self.files.get(path).cloned())
    }

    fn summarizes_ahead(&mut self) -> bool {
        self.background
    }

    fn summarize_ahead(&mut self, ahead: &Summarize, _state_path: Option<&str>) {
        self.ahead.push(ahead.clone());
    }

    /// With a summarizer, summaries are made under a lease beside a kept state (as the npm
    /// and Python hosts do with `statePath` and `summarize`), each request its own owner.
    fn summary_lease(&mut self) -> Option<SummaryLease> {
        self.leases += 1;
        (self.failing || !self.summaries.is_empty()).then(|| SummaryLease {
            owner: format!("request {}", self.leases),
            summarize_timeout_ms: 120_000.0,
        })
    }
}

fn run(scenario: &Value) -> Result<Value, String> {
    let config = Config::from_json(&scenario["options"].to_string()).map_err(|e| e.to_string())?;
    let mut app = App {
        files: BTreeMap::new(),
        refuse: scenario["refuse"].as_str().map(str::to_owned),
        summaries: scenario["summaries"]
            .as_array()
            .map(|s| {
                s.iter()
                    .filter_map(|t| t.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        next: 0,
        failing: scenario["failing_summarizer"].as_bool() == Some(true),
        hook: match &scenario["hook"] {
            Value::Null => None,
            hook => Some(serde_json::from_value(hook.clone()).map_err(|e| e.to_string())?),
        },
        asked: Vec::new(),
        now: None,
        leases: 0,
        background: scenario["background"].as_bool() == Some(true),
        ahead: Vec::new(),
    };
    let mut compactor = match scenario["save_after"].as_str() {
        Some(path) => Compactor::load(config.clone(), path, &mut app),
        None => Compactor::new(config.clone()),
    }
    .map_err(|e| e.to_string())?;
    let mut history: Vec<Value> = Vec::new();
    let mut turns = Vec::new();
    for (t, turn) in scenario["turns"]
        .as_array()
        .ok_or("turns: expected an array")?
        .iter()
        .enumerate()
    {
        app.now = scenario["times"][t].as_u64();
        let mut turn = turn.as_array().ok_or("a turn: expected an array")?.clone();
        let mut offloaded = Vec::new();
        if scenario["as_returned"].as_bool() == Some(true) {
            // Each tool result as the tool returns it, through `offload_tool_output`.
            for message in turn.iter_mut().filter(|m| m["role"] == "tool") {
                for part in message["content"].as_array_mut().into_iter().flatten() {
                    let output = part["output"]["value"].to_string();
                    let name = part["toolName"].as_str().unwrap_or_default().to_owned();
                    let id = part["toolCallId"].as_str().unwrap_or_default().to_owned();
                    let done = compactor
                        .offload_tool_output(&name, &id, &output, &mut app)
                        .map_err(|e| e.to_string())?;
                    if let Some(preview) = done.preview {
                        part["output"] = json!({"type": "text", "value": preview});
                    }
                    offloaded.extend(done.events);
                }
            }
        }
        history.extend(turn);
        let messages = parse_messages(&Value::Array(history.clone()).to_string())
            .map_err(|e| e.to_string())?;
        let mut error = Value::Null;
        let refused = scenario["refused"][t].as_str();
        let (managed, mut events) = match scenario["state"].as_str() {
            // The provider refused the turn's prompt: recover with its error.
            _ if refused.is_some() => {
                let said = parse_overflow(&[refused.unwrap_or_default().to_owned()], None)
                    .ok_or("refused: not an overflow")?;
                match compactor.recover(messages, &OverflowReport::from(&said), 1, &mut app) {
                    Ok(managed) => (Some(managed), Vec::new()),
                    Err(e) => {
                        let code = serde_json::to_value(&e).unwrap_or(Value::Null)["code"].clone();
                        error = json!([code, e.to_string()]);
                        (None, Vec::new())
                    }
                }
            }
            // Two requests of the turn at once: both load the state before either saves.
            Some(path) => {
                let mut first =
                    Compactor::load(config.clone(), path, &mut app).map_err(|e| e.to_string())?;
                let mut second =
                    Compactor::load(config.clone(), path, &mut app).map_err(|e| e.to_string())?;
                let one = first
                    .manage(messages.clone(), &mut app)
                    .map_err(|e| e.to_string())?;
                let messages = match &scenario["second"] {
                    Value::Null => messages,
                    extra => {
                        let mut more = history.clone();
                        more.push(extra.clone());
                        parse_messages(&Value::Array(more).to_string())
                            .map_err(|e| e.to_string())?
                    }
                };
                let managed = second
                    .manage(messages, &mut app)
                    .map_err(|e| e.to_string())?;
                (Some(managed), one.events)
            }
            None => {
                let managed = compactor
                    .manage(messages.clone(), &mut app)
                    .map_err(|e| e.to_string())?;
                if let Some(usage) = scenario["usage"][t].as_u64() {
                    // The provider's count of the prompt sent, then the app's save.
                    let sent = compactor.count_raw(&managed.messages);
                    compactor.observe_usage(sent, usage as u32);
                    compactor
                        .save_state(&messages, &mut app)
                        .map_err(|e| e.to_string())?;
                }
                // The summaries asked ahead, made before the next turn (the npm and Python
                // hosts' `settled()`).
                for ahead in std::mem::take(&mut app.ahead) {
                    let key = ahead.ahead_key.clone().unwrap_or_default();
                    match make_ahead(&ahead, None, &mut app) {
                        Some(text) => compactor.offer_summary(&key, text),
                        None => compactor.forget_ahead(&key),
                    };
                }
                (Some(managed), offloaded)
            }
        };
        if let Some(managed) = &managed {
            events.extend(managed.events.iter().cloned());
        }
        let events: Vec<Value> = events
            .iter()
            .map(|event| {
                let e = serde_json::to_value(event).unwrap_or(Value::Null);
                let o = &e["overflow"];
                let stamp = match o {
                    Value::Null => Value::Null,
                    _ => json!([o["provider"], o["reportedTokens"], o["attempt"]]),
                };
                json!([
                    e["strategy"],
                    e["status"],
                    e["path"],
                    e["tokensSaved"],
                    stamp
                ])
            })
            .collect();
        let prompt = match &managed {
            Some(managed) => {
                Value::String(serde_json::to_string(&managed.messages).map_err(|e| e.to_string())?)
            }
            None => Value::Null,
        };
        // The long-lived compactor's calibration (none for two requests a turn).
        let calibration = match scenario["state"] {
            Value::Null => serde_json::to_value(compactor.state()).map_err(|e| e.to_string())?
                ["calibration"]
                .clone(),
            _ => Value::Null,
        };
        turns.push(json!({
            "prompt": prompt,
            "events": events,
            "files": app.files,
            "asked": std::mem::take(&mut app.asked),
            "error": error,
            "calibration": calibration,
        }));
    }
    Ok(Value::Array(turns))
}

fn main() -> ExitCode {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: behaviour SCENARIOS.json");
        return ExitCode::from(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("behaviour: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let scenarios: BTreeMap<String, Value> = match serde_json::from_str(&text) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("behaviour: {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = BTreeMap::new();
    for (name, scenario) in &scenarios {
        match run(scenario) {
            Ok(turns) => {
                out.insert(name.clone(), turns);
            }
            Err(e) => {
                eprintln!("behaviour: {name}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("{}", serde_json::to_string(&out).unwrap_or_default());
    ExitCode::SUCCESS
}
