//! A simulated host for the sans-IO core: an in-memory store, injectable write faults, and the
//! plan → execute → apply loop, written against `Action::id()` and `Action::writes()` only so
//! that every store-backed action kind works unchanged.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use context_compactor::{Action, Applied, Compactor, Message, Outcome, Plan, Result};

/// The host's store: path → content.
pub type Store = BTreeMap<String, String>;

/// Which writes fail.
#[derive(Clone, Debug, Default)]
pub enum Faults {
    /// Every write succeeds.
    #[default]
    None,
    /// A write to a path fails when `hash(seed, path) % 100 < percent`: deterministic per path,
    /// so content-addressed duplicates fail together.
    Seeded { seed: u64, percent: u8 },
    /// Writes to exactly these paths fail.
    Paths(BTreeSet<String>),
    /// Every write fails.
    All,
}

impl Faults {
    pub fn fails(&self, path: &str) -> bool {
        match self {
            Faults::None => false,
            Faults::Seeded { seed, percent } => {
                fnv1a(*seed, path.as_bytes()) % 100 < u64::from(*percent)
            }
            Faults::Paths(paths) => paths.contains(path),
            Faults::All => true,
        }
    }
}

fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ (h >> 29)
}

/// The action's kind as it serializes (`"offload"`, ...), for messages.
pub fn kind(action: &Action) -> String {
    serde_json::to_value(action)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_default()
}

/// The host's LLM for summarize actions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Summarizer {
    /// Answers with a short structured summary that names the span's size.
    #[default]
    Works,
    /// The call fails: the core falls back to its heuristic summary.
    Fails,
    /// Answers with an empty text (the core treats it as a failure).
    Empty,
    /// The host has no summarizer and reports nothing for the action.
    Silent,
}

impl Summarizer {
    pub fn answer(self, action: &context_compactor::Summarize) -> Option<Outcome> {
        let id = action.id.clone();
        match self {
            Summarizer::Works => Some(Outcome::Summarized {
                id,
                text: format!(
                    "## Session Intent\nScripted.\n\n## Progress\nMessages {}..{} covered; request of {} chars.",
                    action.start,
                    action.end,
                    action.request.prompt.len()
                ),
            }),
            Summarizer::Fails => Some(Outcome::Failed { id, error: "scripted summarizer failure".into() }),
            Summarizer::Empty => Some(Outcome::Summarized { id, text: "  ".into() }),
            Summarizer::Silent => None,
        }
    }
}

/// Executes every action of `plan` against `store`: each write is attempted; the action is
/// `written` only if all its writes succeeded, `failed` otherwise. Summaries come from
/// [`Summarizer::Works`]. Other actions without writes get no outcome.
pub fn execute(plan: &Plan, store: &mut Store, faults: &Faults) -> Vec<Outcome> {
    execute_with(plan, store, faults, Summarizer::Works)
}

pub fn execute_with(
    plan: &Plan,
    store: &mut Store,
    faults: &Faults,
    summarizer: Summarizer,
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for action in &plan.actions {
        if let Action::Summarize(s) = action {
            outcomes.extend(summarizer.answer(s));
            continue;
        }
        let writes = action.writes();
        if writes.is_empty() {
            continue;
        }
        let mut failed = Vec::new();
        for (path, content) in writes {
            if faults.fails(path) {
                failed.push(path.to_owned());
            } else {
                store.insert(path.to_owned(), content.to_owned());
            }
        }
        let id = action.id().to_owned();
        outcomes.push(if failed.is_empty() {
            Outcome::Written { id }
        } else {
            Outcome::Failed {
                id,
                error: format!("injected fault writing {}", failed.join(", ")),
            }
        });
    }
    outcomes
}

/// One full host turn.
#[derive(Debug)]
pub struct Driven {
    pub plan: Plan,
    pub applied: Applied,
    pub store: Store,
    pub outcomes: Vec<Outcome>,
}

impl Driven {
    /// True when every action with writes was written.
    /// True when every action was carried out: each write written, each summary answered (a
    /// drop needs no answer).
    pub fn all_written(&self) -> bool {
        self.plan.actions.iter().all(|action| {
            let outcome = self.outcomes.iter().find(|o| o.id() == action.id());
            matches!(action, Action::Drop(_))
                || matches!(
                    outcome,
                    Some(Outcome::Written { .. } | Outcome::Summarized { .. })
                )
        })
    }
}

/// plan → execute (with `faults`, into a fresh store) → apply.
pub fn drive_with(
    compactor: &mut Compactor,
    messages: Vec<Message>,
    faults: &Faults,
) -> Result<Driven> {
    drive_full(compactor, messages, faults, Summarizer::Works)
}

/// plan → execute (with `faults` and `summarizer`, into a fresh store) → apply.
pub fn drive_full(
    compactor: &mut Compactor,
    messages: Vec<Message>,
    faults: &Faults,
    summarizer: Summarizer,
) -> Result<Driven> {
    let mut store = Store::new();
    let plan = compactor.plan(&messages)?;
    let outcomes = execute_with(&plan, &mut store, faults, summarizer);
    let applied = compactor.apply(messages, &plan, &outcomes)?;
    Ok(Driven {
        plan,
        applied,
        store,
        outcomes,
    })
}

/// plan → execute into an existing store → apply.
pub fn drive_into(
    compactor: &mut Compactor,
    messages: Vec<Message>,
    faults: &Faults,
    store: &mut Store,
) -> Result<(Plan, Applied, Vec<Outcome>)> {
    let plan = compactor.plan(&messages)?;
    let outcomes = execute(&plan, store, faults);
    let applied = compactor.apply(messages, &plan, &outcomes)?;
    Ok((plan, applied, outcomes))
}

/// plan → execute → apply with every write succeeding.
pub fn drive(compactor: &mut Compactor, messages: Vec<Message>) -> (Applied, Store, Vec<Outcome>) {
    let driven = drive_with(compactor, messages, &Faults::None).expect("drive");
    (driven.applied, driven.store, driven.outcomes)
}

/// Deterministic filler text: `words` words cycling through a small vocabulary, each tagged
/// with `seed` and its position.
pub fn prose(seed: usize, words: usize) -> String {
    const W: [&str; 8] = [
        "window", "budget", "cache", "parser", "summary", "tool", "result", "plan",
    ];
    (0..words)
        .map(|i| format!("{} {seed}.{i}", W[(i * 5 + seed) % 8]))
        .collect::<Vec<_>>()
        .join(" ")
}

/// system, then `turns` × (user, [`extra`'s messages], assistant `read_file` call, its
/// result, assistant text).
pub fn agent_session(
    turns: usize,
    words: usize,
    mut extra: impl FnMut(usize, &mut Vec<serde_json::Value>),
) -> Vec<serde_json::Value> {
    use serde_json::json;
    let mut out = vec![json!({"role": "system", "content": "You are a coding agent."})];
    for t in 0..turns {
        let id = format!("call_{t}");
        out.push(json!({"role": "user", "content": format!("Step {t}: {}", prose(t, words / 4))}));
        extra(t, &mut out);
        out.push(json!({"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": id, "toolName": "read_file", "input": {"path": format!("/src/m{t}.rs")}}]}));
        out.push(json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": id, "toolName": "read_file", "output": {"type": "text", "value": prose(t + 1, words)}}]}));
        out.push(json!({"role": "assistant", "content": [{"type": "text", "text": prose(t + 2, words / 2)}]}));
    }
    out
}

/// Parses JSON messages (panics on invalid ones: test fixtures are valid).
pub fn parse_values(values: &[serde_json::Value]) -> Vec<Message> {
    context_compactor::parse_messages(&serde_json::Value::Array(values.to_vec()).to_string())
        .unwrap()
}

/// A gpt-4o compactor with a `window`-token window, `f` adjusting the rest.
pub fn gpt4o(window: u32, f: impl FnOnce(&mut context_compactor::Config)) -> Compactor {
    let mut config = context_compactor::Config {
        model: Some("gpt-4o".into()),
        context_window: Some(window),
        ..context_compactor::Config::default()
    };
    f(&mut config);
    Compactor::new(config).unwrap()
}

/// Runs one session of `call` on `messages`: every write lands, the hook decides nothing, a
/// summary request answers `summary` (none: the test fails if one is asked). Returns the result
/// and how many summaries were asked.
pub fn run_session(
    compactor: &mut Compactor,
    messages: Vec<Message>,
    call: context_compactor::Call,
    summary: Option<&str>,
) -> (context_compactor::Managed, usize) {
    use context_compactor::{Poll, Reply, Request, Session};
    let mut session = Session::new(messages, call);
    let mut asked = 0;
    loop {
        match session.poll(compactor).unwrap() {
            Poll::Io(ios) => {
                for io in ios {
                    let reply = match io.request {
                        Request::Write { .. } => Reply::Done,
                        Request::Ask { .. } => Reply::Decision {
                            decision: Default::default(),
                        },
                        Request::Summarize { .. } => {
                            asked += 1;
                            Reply::Text {
                                text: summary.expect("the summarizer was asked").to_owned(),
                            }
                        }
                        other => unreachable!("a session does not ask {other:?}"),
                    };
                    session.handle(compactor, io.id, reply).unwrap();
                }
            }
            Poll::Wait => unreachable!("every request is answered at once"),
            Poll::Done(managed) => return (*managed, asked),
        }
    }
}

/// The summary message a managed call put in the conversation (`[Conversation summary]`).
pub fn summary_message(managed: &context_compactor::Managed) -> &Message {
    managed
        .messages
        .iter()
        .find(|m| m.text().starts_with("[Conversation summary]"))
        .expect("a summary message")
}

/// A conversation with one huge tool result and enough history to summarize in 16k.
pub fn long_build_session() -> Vec<Message> {
    use serde_json::json;
    let mut values = agent_session(14, 500, |_, _| {});
    let huge: String = (0..3_000)
        .map(|i| format!("log line {i}: {}\n", prose(i, 3)))
        .collect();
    values.push(json!({"role": "user", "content": "Run the build."}));
    values.push(json!({"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": "build", "toolName": "run", "input": {"cmd": "make"}}]}));
    values.push(json!({"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "build", "toolName": "run", "output": {"type": "text", "value": huge}}]}));
    parse_values(&values)
}
