//! SPEC §10 invariants as property tests over generated AI SDK conversations, plus regression
//! tests for the anchor failure classes that apply to tier 1.
//!
//! The simulated host (tests/support) knows actions only through `Action::id()` and
//! `Action::writes()`, so new store-backed action kinds are exercised without changes here.
//!
//! `PROPTEST_CASES=20000 cargo test --release --test invariants` for a long run
//! (scripts/fuzz.sh runs it along with the cargo-fuzz target).

mod support;

use std::collections::{BTreeMap, BTreeSet, HashSet};

use context_compactor::{
    messages_from_value, parse_messages, Action, Compactor, Config, Content, EventStatus,
    HistoryStrategy, Message, Note, OffloadConfig, Outcome, Part, Plan, Preset, Role,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};
use support::{drive, drive_full, drive_into, drive_with, kind, Faults, Store, Summarizer};

// =============================================================================================
// Cheap text: repeated, varied lines from a seed.

const VOCAB: &[&str] = &[
    "the",
    "result",
    "error",
    "value",
    "fn",
    "main()",
    "{",
    "}",
    "return",
    "let",
    "x",
    "=",
    "42",
    "user_id",
    "2024-05-01T12:00:00Z",
    "INFO",
    "WARN",
    "DEBUG",
    "src/lib.rs:120",
    "ok",
    "failed",
    "timeout",
    "null",
    "true",
    "0x7fff",
    "SELECT",
    "*",
    "FROM",
    "rows",
    "http://example.com/a?b=c",
    "café",
    "日本語",
    "🦀",
    "\"quoted\"",
    "\\path\\to",
    "<|endoftext|>",
    "\t",
    "",
    "lorem",
    "ipsum",
    "dolor",
    "sit",
    "amet",
];

#[derive(Debug, Clone)]
struct Blob {
    lines: u32,
    words: u8,
    seed: u32,
    /// 0: newline-terminated lines; 1: one long line; 2: no final newline, some blank lines.
    style: u8,
}

fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    *state >> 33
}

impl Blob {
    fn render(&self) -> String {
        let mut s = u64::from(self.seed) | 1;
        let mut out =
            String::with_capacity(self.lines as usize * (usize::from(self.words) * 6 + 8));
        for i in 0..self.lines {
            if self.style == 2 && lcg(&mut s) % 7 == 0 {
                out.push('\n');
                continue;
            }
            out.push_str(VOCAB[(lcg(&mut s) as usize) % VOCAB.len()]);
            out.push(' ');
            out.push_str(&i.to_string());
            for _ in 0..self.words {
                out.push(' ');
                out.push_str(VOCAB[(lcg(&mut s) as usize) % VOCAB.len()]);
            }
            match self.style {
                1 => out.push(' '),
                2 if i + 1 == self.lines => {}
                _ => out.push('\n'),
            }
        }
        out
    }
}

fn blob_in(lines: std::ops::RangeInclusive<u32>) -> impl Strategy<Value = Blob> {
    (
        lines,
        0u8..16,
        any::<u32>(),
        prop_oneof![6 => Just(0u8), 1 => Just(1u8), 2 => Just(2u8)],
    )
        .prop_map(|(lines, words, seed, style)| Blob {
            lines,
            words,
            seed,
            style,
        })
}

/// Sizes from empty to ~200k tokens, mostly small (debug-mode tokenizing is the cost).
fn blob() -> impl Strategy<Value = Blob> {
    prop_oneof![
        300 => blob_in(0..=3),
        120 => blob_in(0..=80),
        20 => blob_in(80..=1_500),
        1 => blob_in(1_500..=9_000),
    ]
}

fn small_blob() -> impl Strategy<Value = Blob> {
    prop_oneof![4 => blob_in(0..=3), 1 => blob_in(0..=40)]
}

// =============================================================================================
// Conversation specs, rendered to AI SDK ModelMessage JSON.

const TOOLS: &[&str] = &[
    "search",
    "web_fetch",
    "run_shell",
    "read_file",
    "grep",
    "ls",
    "write_todos",
    "glob",
    "write_file",
    "edit_file",
    "cat",
    "fetch page/../x",
    "",
];
const FILES: &[&str] = &["notes.md", "src/lib.rs", "/etc/hosts"];

#[derive(Debug, Clone)]
enum JsonSpec {
    Rows { rows: u32, seed: u32 },
    Str(Blob),
    Scalar(u8),
    Nested(Blob),
}

impl JsonSpec {
    fn render(&self) -> Value {
        match self {
            JsonSpec::Rows { rows, seed } => {
                let mut s = u64::from(*seed) | 1;
                Value::Array(
                    (0..*rows)
                        .map(|i| {
                            json!({"id": i, "name": VOCAB[(lcg(&mut s) as usize) % VOCAB.len()],
                                   "score": (lcg(&mut s) % 10_000) as f64 / 100.0,
                                   "tags": [VOCAB[(lcg(&mut s) as usize) % VOCAB.len()], i % 7], "ok": i % 3 == 0})
                        })
                        .collect(),
                )
            }
            JsonSpec::Str(b) => Value::String(b.render()),
            JsonSpec::Scalar(n) => match n % 4 {
                0 => Value::Null,
                1 => Value::Bool(true),
                2 => json!(12.5),
                _ => json!(-7),
            },
            JsonSpec::Nested(b) => {
                json!({"status": 200, "body": {"text": b.render(), "lines": b.lines}, "empty": {}})
            }
        }
    }
}

fn json_spec() -> impl Strategy<Value = JsonSpec> {
    prop_oneof![
        12 => (0u32..=40, any::<u32>()).prop_map(|(rows, seed)| JsonSpec::Rows { rows, seed }),
        1 => (40u32..=1_500, any::<u32>()).prop_map(|(rows, seed)| JsonSpec::Rows { rows, seed }),
        4 => blob().prop_map(JsonSpec::Str),
        2 => any::<u8>().prop_map(JsonSpec::Scalar),
        3 => blob().prop_map(JsonSpec::Nested),
    ]
}

#[derive(Debug, Clone)]
enum ContentItem {
    Text(Blob),
    Media,
    ImageUrl,
}

#[derive(Debug, Clone)]
enum OutSpec {
    Text(Blob),
    Json(JsonSpec),
    ErrorText(Blob),
    ErrorJson(JsonSpec),
    Content(Vec<ContentItem>),
    Denied(Option<String>),
    Unknown(Blob),
}

fn out_spec() -> impl Strategy<Value = OutSpec> {
    let item = prop_oneof![4 => blob().prop_map(ContentItem::Text), 1 => Just(ContentItem::Media), 1 => Just(ContentItem::ImageUrl)];
    prop_oneof![
        10 => blob().prop_map(OutSpec::Text),
        5 => json_spec().prop_map(OutSpec::Json),
        2 => blob().prop_map(OutSpec::ErrorText),
        2 => json_spec().prop_map(OutSpec::ErrorJson),
        3 => prop::collection::vec(item, 0..4).prop_map(OutSpec::Content),
        1 => prop::option::of("[a-z ]{0,20}").prop_map(OutSpec::Denied),
        1 => small_blob().prop_map(OutSpec::Unknown),
    ]
}

fn provider_options() -> Value {
    json!({"anthropic": {"cacheControl": {"type": "ephemeral"}}})
}

impl OutSpec {
    fn render(&self, opts: bool) -> Value {
        let mut v = match self {
            OutSpec::Text(b) => json!({"type": "text", "value": b.render()}),
            OutSpec::Json(j) => json!({"type": "json", "value": j.render()}),
            OutSpec::ErrorText(b) => json!({"type": "error-text", "value": b.render()}),
            OutSpec::ErrorJson(j) => json!({"type": "error-json", "value": j.render()}),
            OutSpec::Content(items) => {
                json!({"type": "content", "value": items.iter().map(|i| match i {
                ContentItem::Text(b) => json!({"type": "text", "text": b.render()}),
                ContentItem::Media => json!({"type": "media", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "mediaType": "image/png"}),
                ContentItem::ImageUrl => json!({"type": "image-url", "url": "https://example.com/chart.png"}),
            }).collect::<Vec<_>>()})
            }
            OutSpec::Denied(None) => json!({"type": "execution-denied"}),
            OutSpec::Denied(Some(reason)) => json!({"type": "execution-denied", "reason": reason}),
            OutSpec::Unknown(b) => json!({"type": "future-output", "payload": b.render()}),
        };
        if opts {
            v["providerOptions"] = provider_options();
        }
        v
    }
}

#[derive(Debug, Clone)]
struct CallSpec {
    tool: usize,
    file: usize,
    input: Option<Blob>,
    output: OutSpec,
    /// `Some(approved)`: the call asks for approval; a denied call is answered `execution-denied`.
    approval: Option<bool>,
    opts: bool,
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    (
        0..TOOLS.len(),
        0..FILES.len(),
        prop::option::weighted(0.3, blob()),
        out_spec(),
        prop::option::weighted(0.2, any::<bool>()),
        prop::bool::weighted(0.15),
    )
        .prop_map(|(tool, file, input, output, approval, opts)| CallSpec {
            tool,
            file,
            input,
            output,
            approval,
            opts,
        })
}

#[derive(Debug, Clone)]
struct StepSpec {
    reasoning: Option<Blob>,
    text: Option<Blob>,
    /// Parallel tool calls.
    calls: Vec<CallSpec>,
    /// Sort keys giving the order of the results.
    order: Vec<u8>,
    /// Where the results are split across two tool messages (none when 0 or ≥ the part count).
    split: usize,
    string_content: bool,
}

fn step_spec() -> impl Strategy<Value = StepSpec> {
    (
        prop::option::weighted(0.3, small_blob()),
        prop::option::weighted(0.5, blob()),
        prop::collection::vec(call_spec(), 0..=4),
        prop::collection::vec(any::<u8>(), 4..=4),
        0usize..8,
        any::<bool>(),
    )
        .prop_map(
            |(reasoning, text, calls, order, split, string_content)| StepSpec {
                reasoning,
                text,
                calls,
                order,
                split,
                string_content,
            },
        )
}

#[derive(Debug, Clone)]
enum UserPart {
    Text(Blob),
    Image,
    File,
    Unknown,
}

#[derive(Debug, Clone)]
enum UserSpec {
    Str(Blob),
    Parts(Vec<UserPart>),
}

fn user_spec() -> impl Strategy<Value = UserSpec> {
    let part = prop_oneof![
        5 => blob().prop_map(UserPart::Text),
        1 => Just(UserPart::Image),
        1 => Just(UserPart::File),
        1 => Just(UserPart::Unknown),
    ];
    prop_oneof![3 => blob().prop_map(UserSpec::Str), 2 => prop::collection::vec(part, 0..4).prop_map(UserSpec::Parts)]
}

#[derive(Debug, Clone)]
struct ExchangeSpec {
    user: Option<UserSpec>,
    steps: Vec<StepSpec>,
    final_text: Option<Blob>,
}

fn exchange_spec() -> impl Strategy<Value = ExchangeSpec> {
    (
        prop::option::weighted(0.85, user_spec()),
        prop::collection::vec(step_spec(), 1..=3),
        prop::option::of(small_blob()),
    )
        .prop_map(|(user, steps, final_text)| ExchangeSpec {
            user,
            steps,
            final_text,
        })
}

#[derive(Debug, Clone)]
struct ConvSpec {
    system: Option<Blob>,
    exchanges: Vec<ExchangeSpec>,
    /// The last step's tool calls are still running: no results.
    in_flight: bool,
}

fn conv_spec() -> impl Strategy<Value = ConvSpec> {
    (
        prop::option::weighted(0.7, small_blob()),
        prop::collection::vec(exchange_spec(), 1..=4),
        prop::bool::weighted(0.25),
    )
        .prop_map(|(system, exchanges, in_flight)| ConvSpec {
            system,
            exchanges,
            in_flight,
        })
}

impl ConvSpec {
    fn render(&self) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &self.system {
            messages.push(json!({"role": "system", "content": system.render()}));
        }
        let last_exchange = self.exchanges.len() - 1;
        for (ei, exchange) in self.exchanges.iter().enumerate() {
            match &exchange.user {
                Some(UserSpec::Str(b)) => {
                    messages.push(json!({"role": "user", "content": b.render()}))
                }
                Some(UserSpec::Parts(parts)) => {
                    let parts: Vec<Value> = parts
                        .iter()
                        .map(|p| match p {
                            UserPart::Text(b) => json!({"type": "text", "text": b.render()}),
                            UserPart::Image => json!({"type": "image", "image": "https://example.com/cat.png", "mediaType": "image/png"}),
                            UserPart::File => json!({"type": "file", "data": "JVBERi0xLjQK", "mediaType": "application/pdf", "filename": "a.pdf"}),
                            UserPart::Unknown => json!({"type": "future-part", "data": {"x": [1, 2, 3]}}),
                        })
                        .collect();
                    messages.push(json!({"role": "user", "content": parts, "providerOptions": provider_options()}));
                }
                None => {}
            }
            let last_step = exchange.steps.len() - 1;
            for (si, step) in exchange.steps.iter().enumerate() {
                let in_flight = self.in_flight && ei == last_exchange && si == last_step;
                let ids: Vec<String> = (0..step.calls.len())
                    .map(|k| format!("call_{ei}_{si}_{k}"))
                    .collect();
                if step.calls.is_empty() && step.reasoning.is_none() && step.string_content {
                    let text = step.text.as_ref().map(Blob::render).unwrap_or_default();
                    messages.push(json!({"role": "assistant", "content": text}));
                    continue;
                }
                let mut parts = Vec::new();
                if let Some(r) = &step.reasoning {
                    parts.push(json!({"type": "reasoning", "text": r.render()}));
                }
                if let Some(t) = &step.text {
                    parts.push(json!({"type": "text", "text": t.render()}));
                }
                for (call, id) in step.calls.iter().zip(&ids) {
                    let input = match &call.input {
                        Some(b) => json!({"path": FILES[call.file], "content": b.render()}),
                        None if call.file == 0 => json!({"q": "find it", "limit": 10}),
                        None => json!({"path": FILES[call.file]}),
                    };
                    let mut part = json!({"type": "tool-call", "toolCallId": id, "toolName": TOOLS[call.tool], "input": input});
                    if call.opts {
                        part["providerOptions"] = provider_options();
                    }
                    parts.push(part);
                }
                for (call, id) in step.calls.iter().zip(&ids) {
                    if call.approval.is_some() {
                        parts.push(json!({"type": "tool-approval-request", "approvalId": format!("appr_{id}"), "toolCallId": id}));
                    }
                }
                messages.push(json!({"role": "assistant", "content": parts}));
                if step.calls.is_empty() || in_flight {
                    continue;
                }
                let mut answers = Vec::new();
                for (call, id) in step.calls.iter().zip(&ids) {
                    if let Some(approved) = call.approval {
                        answers.push(json!({"type": "tool-approval-response", "approvalId": format!("appr_{id}"), "approved": approved}));
                    }
                }
                let mut order: Vec<usize> = (0..step.calls.len()).collect();
                order.sort_by_key(|&k| (step.order[k], k));
                for k in order {
                    let call = &step.calls[k];
                    let output = match call.approval {
                        Some(false) => OutSpec::Denied(Some("user denied".into())).render(false),
                        _ => call.output.render(call.opts),
                    };
                    answers.push(json!({"type": "tool-result", "toolCallId": ids[k], "toolName": TOOLS[call.tool], "output": output}));
                }
                if step.split > 0 && step.split < answers.len() {
                    let rest = answers.split_off(step.split);
                    messages.push(json!({"role": "tool", "content": answers}));
                    messages.push(json!({"role": "tool", "content": rest}));
                } else {
                    messages.push(json!({"role": "tool", "content": answers}));
                }
            }
            if let Some(t) = &exchange.final_text {
                if !(self.in_flight && ei == last_exchange) {
                    messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": t.render()}]}));
                }
            }
        }
        Value::Array(messages)
    }
}

// =============================================================================================
// Configurations and faults.

const MODELS: &[Option<&str>] = &[
    Some("gpt-4o"),
    Some("gpt-4"),
    Some("claude-sonnet-4-5"),
    Some("mystery-model"),
    None,
];

#[derive(Debug, Clone)]
struct CfgSpec {
    model: usize,
    window: Option<u32>,
    threshold: Option<u32>,
    fraction: Option<f64>,
    preview: Option<(usize, usize, usize)>,
    prefix: bool,
    /// 0 summarize, 1 truncate, 2 importance, 3 off.
    strategy: u8,
    keep_messages: Option<usize>,
    preset: Option<Preset>,
    tools: bool,
}

fn cfg_spec() -> impl Strategy<Value = CfgSpec> {
    (
        0..MODELS.len(),
        prop::option::weighted(0.9, prop_oneof![4_000u32..=16_000, 4_000u32..=200_000]),
        prop::option::weighted(0.3, prop_oneof![1u32..=2_000, 1u32..=20_000]),
        prop::option::weighted(0.15, 0.01f64..=1.0),
        prop::option::weighted(0.2, (0usize..=12, 0usize..=5, 0usize..=300)),
        prop::bool::weighted(0.1),
        prop_oneof![5 => Just(0u8), 2 => Just(1u8), 2 => Just(2u8), 1 => Just(3u8)],
        prop::option::weighted(0.25, 0usize..=12),
        prop::option::weighted(
            0.2,
            prop_oneof![
                Just(Preset::Simple),
                Just(Preset::Smart),
                Just(Preset::Aggressive)
            ],
        ),
        prop::bool::weighted(0.3),
    )
        .prop_map(
            |(
                model,
                window,
                threshold,
                fraction,
                preview,
                prefix,
                strategy,
                keep_messages,
                preset,
                tools,
            )| CfgSpec {
                model,
                window,
                threshold,
                fraction,
                preview,
                prefix,
                strategy,
                keep_messages,
                preset,
                tools,
            },
        )
}

impl CfgSpec {
    fn config(&self) -> Config {
        let mut offload = OffloadConfig::default();
        if let Some(t) = self.threshold {
            offload.threshold_tokens = t;
        }
        if let Some(f) = self.fraction {
            offload.max_window_fraction = f;
        }
        if let Some((head, tail, chars)) = self.preview {
            offload.preview_head_lines = head;
            offload.preview_tail_lines = tail;
            offload.preview_line_chars = chars;
        }
        if self.prefix {
            offload.path_prefix = "/large_tool_results/".into();
        }
        let mut config = self.preset.map(Config::preset).unwrap_or_default();
        if self.threshold.is_some()
            || self.fraction.is_some()
            || self.preview.is_some()
            || self.prefix
        {
            config.offload = offload;
        }
        config.model = MODELS[self.model].map(str::to_owned);
        if self.tools {
            config.tools = serde_json::from_value(json!([
                {"name": "read_file", "description": "Read a file, paged.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}}}},
                {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}
            ]))
            .unwrap();
        }
        config.context_window = self.window;
        if self.preset.is_none() {
            config.history.strategy = match self.strategy {
                0 => HistoryStrategy::Summarize,
                1 => HistoryStrategy::Truncate,
                2 => HistoryStrategy::Importance,
                _ => HistoryStrategy::Off,
            };
            config.history.keep_recent_messages = self.keep_messages;
        }
        config
    }
}

fn faults() -> impl Strategy<Value = Faults> {
    prop_oneof![
        6 => Just(Faults::None),
        3 => (any::<u64>(), 1u8..=99).prop_map(|(seed, percent)| Faults::Seeded { seed, percent }),
        1 => Just(Faults::All),
    ]
}

// =============================================================================================
// Invariant checks.

type Check = Result<(), TestCaseError>;

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

/// Every tool result answers an earlier call (in an assistant message) and sits in a tool
/// message; every call is answered unless it is in the final message (in flight); approval
/// requests sit with their calls and responses follow their requests.
fn check_pairs(messages: &[Message]) -> Check {
    let mut calls: BTreeMap<&str, usize> = BTreeMap::new();
    let mut answered: HashSet<&str> = HashSet::new();
    let mut requests: HashSet<&str> = HashSet::new();
    for (i, m) in messages.iter().enumerate() {
        let here: HashSet<&str> = m
            .parts()
            .iter()
            .filter_map(|p| {
                if let Part::ToolCall(c) = p {
                    Some(c.tool_call_id.as_str())
                } else {
                    None
                }
            })
            .collect();
        for (j, part) in m.parts().iter().enumerate() {
            match part {
                Part::ToolCall(c) => {
                    if m.role != Role::Assistant {
                        return Err(fail(format!(
                            "tool call {} in a {:?} message {i}",
                            c.tool_call_id, m.role
                        )));
                    }
                    calls.insert(&c.tool_call_id, i);
                }
                Part::ToolResult(r) => {
                    if m.role != Role::Tool {
                        return Err(fail(format!(
                            "tool result {} in a {:?} message {i}",
                            r.tool_call_id, m.role
                        )));
                    }
                    if !calls.contains_key(r.tool_call_id.as_str()) {
                        return Err(fail(format!(
                            "orphan tool result {} at message {i} part {j}",
                            r.tool_call_id
                        )));
                    }
                    answered.insert(&r.tool_call_id);
                }
                Part::ToolApprovalRequest(a) => {
                    if !here.contains(a.tool_call_id.as_str()) {
                        return Err(fail(format!(
                            "approval request {} separated from its call",
                            a.approval_id
                        )));
                    }
                    requests.insert(&a.approval_id);
                }
                Part::ToolApprovalResponse(a) if !requests.contains(a.approval_id.as_str()) => {
                    return Err(fail(format!(
                        "approval response {} before its request",
                        a.approval_id
                    )));
                }
                _ => {}
            }
        }
    }
    for (id, &i) in &calls {
        if !answered.contains(id) && i + 1 != messages.len() {
            return Err(fail(format!(
                "tool call {id} at message {i} has no result and is not in flight"
            )));
        }
    }
    Ok(())
}

#[derive(Debug, PartialEq)]
struct Ids {
    calls: Vec<(String, String)>,
    results: Vec<(String, String)>,
    requests: Vec<(String, String)>,
    responses: Vec<(String, bool)>,
}

fn ids(messages: &[Message]) -> Ids {
    let mut ids = Ids {
        calls: vec![],
        results: vec![],
        requests: vec![],
        responses: vec![],
    };
    for part in messages.iter().flat_map(Message::parts) {
        match part {
            Part::ToolCall(c) => ids
                .calls
                .push((c.tool_call_id.clone(), c.tool_name.clone())),
            Part::ToolResult(r) => ids
                .results
                .push((r.tool_call_id.clone(), r.tool_name.clone())),
            Part::ToolApprovalRequest(a) => ids
                .requests
                .push((a.approval_id.clone(), a.tool_call_id.clone())),
            Part::ToolApprovalResponse(a) => {
                ids.responses.push((a.approval_id.clone(), a.approved))
            }
            _ => {}
        }
    }
    ids.calls.sort();
    ids.results.sort();
    ids.requests.sort();
    ids.responses.sort();
    ids
}

/// A stored value matches the original: tool outputs byte for byte (`ToolOutput::text()`),
/// other text may be stored inside a larger file.
fn stored_at_mentioned_path(
    store: &Store,
    new_text: &str,
    originals: &[String],
    exact: bool,
) -> bool {
    store.iter().any(|(path, stored)| {
        new_text.contains(path.as_str())
            && originals.iter().any(|c| {
                if exact {
                    stored == c
                } else {
                    stored == c || stored.contains(c.as_str())
                }
            })
    })
}

fn not_preserved(at: &str, store: &Store, original: &str, new_text: &str) -> TestCaseError {
    let mentioned: Vec<&String> = store
        .keys()
        .filter(|p| new_text.contains(p.as_str()))
        .collect();
    fail(format!(
        "{at}: changed, but no store path in its new text holds the original \
         (paths mentioned: {mentioned:?}; original starts {:?}; new text starts {:?})",
        original.chars().take(80).collect::<String>(),
        new_text.chars().take(200).collect::<String>()
    ))
}

fn json_text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

/// A changed part points (in its new text) at a store path holding its original content.
fn check_preserved(at: &str, original: &Part, new: &Part, store: &Store) -> Check {
    match (original, new) {
        (Part::ToolResult(a), Part::ToolResult(b)) => {
            prop_assert_eq!(
                &a.tool_call_id,
                &b.tool_call_id,
                "{}: toolCallId changed",
                at
            );
            prop_assert_eq!(&a.tool_name, &b.tool_name, "{}: toolName changed", at);
            prop_assert_eq!(&a.extra, &b.extra, "{}: fields changed", at);
            let (original, text) = (a.output.text(), b.output.text());
            if !stored_at_mentioned_path(store, &text, std::slice::from_ref(&original), true) {
                return Err(not_preserved(at, store, &original, &text));
            }
        }
        (Part::ToolCall(a), Part::ToolCall(b)) => {
            prop_assert_eq!(
                &a.tool_call_id,
                &b.tool_call_id,
                "{}: toolCallId changed",
                at
            );
            prop_assert_eq!(&a.tool_name, &b.tool_name, "{}: toolName changed", at);
            prop_assert_eq!(&a.extra, &b.extra, "{}: fields changed", at);
            match (a.input.as_object(), b.input.as_object()) {
                (Some(x), Some(y)) => {
                    let keys = |m: &serde_json::Map<String, Value>| {
                        m.keys().cloned().collect::<BTreeSet<_>>()
                    };
                    prop_assert_eq!(keys(x), keys(y), "{}: input fields changed", at);
                    for (key, old) in x {
                        let new = &y[key];
                        if old != new {
                            let (original, text) = (json_text(old), json_text(new));
                            if !stored_at_mentioned_path(
                                store,
                                &text,
                                std::slice::from_ref(&original),
                                true,
                            ) {
                                return Err(not_preserved(
                                    &format!("{at} input.{key}"),
                                    store,
                                    &original,
                                    &text,
                                ));
                            }
                        }
                    }
                }
                _ => {
                    let originals = [
                        json_text(&a.input),
                        serde_json::to_string_pretty(&a.input).unwrap_or_default(),
                    ];
                    let text = b.input.to_string();
                    if !stored_at_mentioned_path(store, &text, &originals, true) {
                        return Err(not_preserved(at, store, &originals[0], &text));
                    }
                }
            }
        }
        (a, b) => {
            let original = match a {
                Part::Text(t) | Part::Reasoning(t) => t.text.clone(),
                other => serde_json::to_string(other).unwrap_or_default(),
            };
            let text = serde_json::to_string(b).unwrap_or_default();
            if !stored_at_mentioned_path(store, &text, std::slice::from_ref(&original), false) {
                return Err(not_preserved(at, store, &original, &text));
            }
        }
    }
    Ok(())
}

fn check_nothing_lost(before: &[Message], after: &[Message], store: &Store) -> Check {
    for (i, (o, n)) in before.iter().zip(after).enumerate() {
        if o == n {
            continue;
        }
        prop_assert_eq!(&o.extra, &n.extra, "message {} fields changed", i);
        match (&o.content, &n.content) {
            (Content::Parts(op), Content::Parts(np)) if op.len() == np.len() => {
                for (j, (a, b)) in op.iter().zip(np).enumerate() {
                    if a != b {
                        prop_assert_eq!(
                            a.type_name(),
                            b.type_name(),
                            "message {} part {} changed type",
                            i,
                            j
                        );
                        check_preserved(&format!("message {i} part {j}"), a, b, store)?;
                    }
                }
            }
            (Content::Text(a), Content::Text(b)) => {
                let a = Part::Text(context_compactor::TextPart {
                    text: a.clone(),
                    extra: Default::default(),
                });
                let b = Part::Text(context_compactor::TextPart {
                    text: b.clone(),
                    extra: Default::default(),
                });
                check_preserved(&format!("message {i} (string content)"), &a, &b, store)?;
            }
            _ => return Err(fail(format!("message {i}: content shape changed"))),
        }
    }
    Ok(())
}

/// Actions that were not written leave their target untouched.
fn check_failed_untouched(
    before: &[Message],
    after: &[Message],
    plan: &Plan,
    outcomes: &[Outcome],
) -> Check {
    let written: HashSet<&str> = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Written { .. }))
        .map(Outcome::id)
        .collect();
    let index = |a: &context_compactor::Action, key: &str| {
        serde_json::to_value(a)
            .ok()
            .and_then(|v| v.get(key).and_then(Value::as_u64))
            .map(|n| n as usize)
    };
    let written_at: HashSet<(Option<usize>, Option<usize>)> = plan
        .actions
        .iter()
        .filter(|a| written.contains(a.id()))
        .flat_map(|a| {
            [
                (index(a, "messageIndex"), index(a, "partIndex")),
                (index(a, "messageIndex"), None),
            ]
        })
        .collect();
    for action in plan.actions.iter().filter(|a| !written.contains(a.id())) {
        let Some(mi) = index(action, "messageIndex") else {
            continue;
        };
        match index(action, "partIndex") {
            // Another, written action may edit the same part (e.g. another input field).
            Some(pi) if written_at.contains(&(Some(mi), Some(pi))) => {}
            Some(pi) => prop_assert_eq!(
                before[mi].parts().get(pi),
                after[mi].parts().get(pi),
                "{} action {} was not written but its part changed",
                kind(action),
                action.id()
            ),
            None if !written_at.contains(&(Some(mi), None)) => {
                prop_assert_eq!(
                    &before[mi],
                    &after[mi],
                    "action {} was not written but its message changed",
                    action.id()
                )
            }
            None => {}
        }
    }
    Ok(())
}

fn check_case(json: Value, config: Config, faults: &Faults, summarizer: Summarizer) -> Check {
    let messages = messages_from_value(json.clone())
        .map_err(|e| fail(format!("generator made invalid input: {e}")))?;
    // Parsing round-trips the input (unknown parts and fields included).
    prop_assert_eq!(
        serde_json::to_value(&messages).unwrap(),
        json,
        "parse → serialize changed the input"
    );

    let mut compactor =
        Compactor::new(config.clone()).map_err(|e| fail(format!("config refused: {e}")))?;
    let driven = drive_full(&mut compactor, messages.clone(), faults, summarizer)
        .map_err(|e| fail(format!("drive: {e}")))?;
    let (plan, applied, store, outcomes) = (
        &driven.plan,
        &driven.applied,
        &driven.store,
        &driven.outcomes,
    );
    let all_written = driven.all_written();

    // The plan itself.
    let action_ids: HashSet<&str> = plan.actions.iter().map(|a| a.id()).collect();
    prop_assert_eq!(
        action_ids.len(),
        plan.actions.len(),
        "action ids are not unique"
    );
    prop_assert_eq!(
        plan.tokens_before,
        compactor.count(&messages),
        "plan.tokens_before is not the count"
    );
    prop_assert!(
        plan.tokens_after <= plan.tokens_before,
        "plan grows the conversation"
    );
    prop_assert_eq!(applied.tokens_before, plan.tokens_before);
    prop_assert_eq!(applied.events.len(), plan.actions.len());
    let transcript = plan.actions.iter().find_map(|a| match a {
        Action::SaveTranscript(t) => Some(t),
        _ => None,
    });
    let transcript_written = transcript.is_some_and(|t| {
        outcomes
            .iter()
            .any(|o| o.id() == t.id && matches!(o, Outcome::Written { .. }))
    });
    for (action, event) in plan.actions.iter().zip(&applied.events) {
        prop_assert_eq!(&event.action_id, action.id());
        let outcome = outcomes.iter().find(|o| o.id() == action.id());
        let expected = match (action, outcome) {
            (Action::Summarize(_) | Action::Drop(_), _) if !transcript_written => {
                EventStatus::Failed
            }
            (Action::Summarize(_), Some(Outcome::Summarized { .. }))
                if summarizer == Summarizer::Empty =>
            {
                EventStatus::Fallback
            }
            (Action::Summarize(_), Some(Outcome::Failed { .. })) => EventStatus::Fallback,
            (Action::Drop(_), None) => EventStatus::Applied,
            (_, Some(Outcome::Written { .. } | Outcome::Summarized { .. })) => EventStatus::Applied,
            (_, Some(_)) => EventStatus::Failed,
            (_, None) => EventStatus::NotExecuted,
        };
        prop_assert_eq!(event.status, expected, "event status for {}", action.id());
    }
    // A lossy action is planned only after a transcript, and never without one.
    let lossy = plan
        .actions
        .iter()
        .find(|a| matches!(a, Action::Summarize(_) | Action::Drop(_)));
    prop_assert_eq!(
        lossy.is_some(),
        transcript.is_some(),
        "a lossy action comes with exactly one transcript"
    );
    prop_assert_eq!(
        lossy.is_some(),
        plan.trigger.tier3,
        "trigger.tier3 iff a lossy action"
    );
    if let Some(lossy) = lossy {
        prop_assert_eq!(
            plan.actions.last().map(|a| a.id()),
            Some(lossy.id()),
            "the lossy action is not last"
        );
    }
    let lossy_applied = lossy.is_some_and(|a| {
        applied.events.iter().any(|e| {
            e.action_id == a.id()
                && matches!(e.status, EventStatus::Applied | EventStatus::Fallback)
        })
    });

    tally(plan, &applied.events);

    // Valid output.
    let after = &applied.messages;
    check_pairs(after)?;
    if messages.first().is_some_and(|m| m.role == Role::System) {
        prop_assert_eq!(&after[0], &messages[0], "system message changed or moved");
    }
    if lossy_applied {
        check_lossy(&messages, after, lossy.unwrap(), transcript.unwrap(), store)?;
    } else {
        prop_assert_eq!(after.len(), messages.len(), "message count changed");
        let roles = |m: &[Message]| m.iter().map(|m| m.role).collect::<Vec<_>>();
        prop_assert_eq!(roles(after), roles(&messages), "roles changed");
        prop_assert_eq!(
            ids(after),
            ids(&messages),
            "tool call / result / approval ids changed"
        );
        // Nothing lost.
        check_nothing_lost(&messages, after, store)?;
        check_failed_untouched(&messages, after, plan, outcomes)?;
    }
    if matches!(faults, Faults::All) {
        prop_assert_eq!(
            after,
            &messages,
            "every write failed but the conversation changed"
        );
    }

    // Budget and exact accounting.
    prop_assert_eq!(
        applied.tokens_after,
        compactor.count(after),
        "applied.tokens_after is not the count"
    );
    let over_note = plan
        .notes
        .iter()
        .any(|n| matches!(n, Note::OverBudget { .. }));
    prop_assert_eq!(
        over_note,
        plan.tokens_after > plan.window,
        "OverBudget note iff the plan is over the window"
    );
    if all_written && !lossy_applied {
        prop_assert_eq!(
            applied.tokens_after,
            plan.tokens_after,
            "prediction differs from the applied count"
        );
    }
    if all_written {
        // A summary is predicted at its maximum size: the applied count may only be lower.
        prop_assert!(
            applied.tokens_after <= plan.tokens_after,
            "applied {} > predicted {}",
            applied.tokens_after,
            plan.tokens_after
        );
        prop_assert!(
            applied.tokens_after <= plan.window || over_note,
            "silently over budget"
        );
        let target_note = plan
            .notes
            .iter()
            .any(|n| matches!(n, Note::TargetNotMet { .. }));
        if plan.trigger.tier2 || plan.trigger.tier3 {
            prop_assert!(
                applied.tokens_after <= plan.trigger.target || target_note,
                "over target without a note"
            );
        }
    }

    // Recorded: the compaction record brings the original conversation to the applied one
    // (what a stateless host re-sending its raw history relies on).
    prop_assert!(
        compactor.replay(&messages).as_ref() == after.as_slice(),
        "replaying the record onto the original does not give the applied conversation"
    );
    // Deterministic.
    let fresh = Compactor::new(config).unwrap();
    prop_assert_eq!(
        &fresh.plan(&messages).unwrap(),
        plan,
        "re-planning differs (fresh compactor)"
    );

    // Idempotent; and a small new turn re-fires nothing unless it crosses the trigger (a
    // conversation resting just under the trigger may cross it: that is not a re-fire). After a
    // compaction that met its target the rest is at or under the target, far from the trigger.
    if all_written {
        let again = compactor.plan(after).unwrap();
        prop_assert!(
            again.is_empty(),
            "planning the compacted conversation gives work: {:?}",
            again.actions
        );
        let mut next = after.clone();
        next.push(
            messages_from_value(json!([{"role": "user", "content": "thanks, next step"}]))
                .unwrap()
                .remove(0),
        );
        if compactor.count(&next) <= plan.trigger.compact_at.min(plan.trigger.summarize_at) {
            let replan = compactor.plan(&next).unwrap();
            prop_assert!(
                replan.is_empty(),
                "a small new turn under the trigger re-fires compaction: {:?}",
                replan.actions
            );
        }
    }

    // Serde round trips.
    let plan_json = serde_json::to_string(plan).unwrap();
    let back: Plan = serde_json::from_str(&plan_json)
        .map_err(|e| fail(format!("plan does not deserialize: {e}")))?;
    prop_assert_eq!(&back, plan, "plan JSON round trip");
    let outcomes_back: Vec<Outcome> =
        serde_json::from_str(&serde_json::to_string(outcomes).unwrap()).unwrap();
    prop_assert_eq!(&outcomes_back, outcomes);
    let applied_json = serde_json::to_value(after).unwrap();
    let reparsed = messages_from_value(applied_json)
        .map_err(|e| fail(format!("applied messages do not parse back: {e}")))?;
    prop_assert_eq!(&reparsed, after, "applied messages JSON round trip");
    Ok(())
}

/// How often each tier was exercised: `INVARIANT_STATS=1 cargo test --test invariants -- --nocapture`
/// prints a running tally, so a change in the generator that stops reaching a tier shows.
fn tally(plan: &Plan, events: &[context_compactor::Event]) {
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    static COUNTS: [AtomicU32; 7] = [const { AtomicU32::new(0) }; 7];
    let applied = |strategy: context_compactor::Strategy, statuses: &[EventStatus]| {
        events
            .iter()
            .any(|e| e.strategy == strategy && statuses.contains(&e.status))
    };
    use context_compactor::Strategy as S;
    let hits = [
        true,
        plan.trigger.tier2,
        plan.trigger.tier3,
        applied(S::Summarize, &[EventStatus::Applied]),
        applied(S::Summarize, &[EventStatus::Fallback]),
        applied(S::Truncate, &[EventStatus::Applied]),
        applied(S::Importance, &[EventStatus::Applied]),
    ];
    for (count, hit) in COUNTS.iter().zip(hits) {
        if hit {
            count.fetch_add(1, Relaxed);
        }
    }
    let n = COUNTS[0].load(Relaxed);
    if n % 250 == 0 && std::env::var_os("INVARIANT_STATS").is_some() {
        let c: Vec<u32> = COUNTS.iter().map(|c| c.load(Relaxed)).collect();
        eprintln!(
            "cases {} · tier 2 {} · tier 3 {} · summarized {} · fallback summaries {} · truncated {} · dropped by importance {}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6]
        );
    }
}

fn summarizer() -> impl Strategy<Value = Summarizer> {
    prop_oneof![
        6 => Just(Summarizer::Works),
        2 => Just(Summarizer::Fails),
        1 => Just(Summarizer::Empty),
        1 => Just(Summarizer::Silent),
    ]
}

/// After a summary or a drop: the transcript holds the whole conversation as given, the
/// replacement names it, the system prompt and the kept messages are intact (up to reversible
/// edits, which are checked like any other), and no group was split.
fn check_lossy(
    before: &[Message],
    after: &[Message],
    lossy: &Action,
    transcript: &context_compactor::SaveTranscript,
    store: &Store,
) -> Check {
    let saved = store
        .get(&transcript.path)
        .ok_or_else(|| fail("transcript not in the store".into()))?;
    let reparsed =
        parse_messages(saved).map_err(|e| fail(format!("transcript does not parse: {e}")))?;
    prop_assert_eq!(
        &reparsed,
        &before.to_vec(),
        "the transcript is not the conversation as given"
    );
    prop_assert!(
        store.contains_key(&transcript.readable_path),
        "readable transcript missing"
    );
    let (inserted_at, kept): (usize, Vec<Message>) = match lossy {
        // Messages of the span it keeps (pins, working files) follow the summary.
        Action::Summarize(s) => {
            prop_assert_eq!(
                after.len(),
                before.len() - (s.end - s.start) + 1 + s.keep.len(),
                "summary message count"
            );
            prop_assert!(s.keep.iter().all(|i| (s.start..s.end).contains(i)));
            (
                s.start,
                before[..s.start]
                    .iter()
                    .chain(s.keep.iter().map(|&i| &before[i]))
                    .chain(&before[s.end..])
                    .cloned()
                    .collect(),
            )
        }
        Action::Drop(d) => {
            prop_assert_eq!(
                after.len(),
                before.len() - d.messages.len() + 1,
                "drop message count"
            );
            let removed: BTreeSet<usize> = d.messages.iter().copied().collect();
            (
                d.insert_at,
                before
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !removed.contains(i))
                    .map(|(_, m)| m.clone())
                    .collect(),
            )
        }
        _ => unreachable!(),
    };
    let notice = &after[inserted_at];
    prop_assert_eq!(
        notice.role,
        Role::User,
        "the summary or notice is not a user message"
    );
    let Content::Text(text) = &notice.content else {
        return Err(fail("summary/notice is not text".into()));
    };
    prop_assert!(
        text.contains(&transcript.path),
        "the summary or notice does not name the transcript: {}",
        text
    );
    let rest: Vec<Message> = after[..inserted_at]
        .iter()
        .chain(&after[inserted_at + 1..])
        .cloned()
        .collect();
    prop_assert_eq!(rest.len(), kept.len());
    check_nothing_lost(&kept, &rest, store)?;
    prop_assert_eq!(ids(&rest), ids(&kept), "kept messages' ids changed");
    // The newest message (the request in progress) is always kept.
    let last = before.len() - 1;
    let newest_kept = match lossy {
        Action::Summarize(s) => s.end <= last,
        Action::Drop(d) => !d.messages.contains(&last),
        _ => unreachable!(),
    };
    prop_assert!(newest_kept, "the newest message was summarized or dropped");
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        max_shrink_time: 120_000,
        .. ProptestConfig::default()
    })]

    #[test]
    fn invariants_hold(conv in conv_spec(), cfg in cfg_spec(), faults in faults(), summarizer in summarizer()) {
        check_case(conv.render(), cfg.config(), &faults, summarizer)?;
    }
}

// =============================================================================================
// Regression tests: the anchor failure classes that apply to tier 1.

fn lines(seed: &str, n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "{seed} row {i}: status={} latency={}ms\n",
                i % 5,
                (i * 7919) % 1_009
            )
        })
        .collect()
}

fn call(id: &str, tool: &str) -> Value {
    json!({"type": "tool-call", "toolCallId": id, "toolName": tool, "input": {"q": id}})
}

fn result(id: &str, tool: &str, text: &str) -> Value {
    json!({"type": "tool-result", "toolCallId": id, "toolName": tool, "output": {"type": "text", "value": text}})
}

fn parse(json: Value) -> Vec<Message> {
    messages_from_value(json).expect("valid conversation")
}

fn compactor(window: u32) -> Compactor {
    Compactor::new(Config {
        model: Some("gpt-4o".into()),
        context_window: Some(window),
        ..Config::default()
    })
    .unwrap()
}

fn assert_valid_and_preserved(before: &[Message], after: &[Message], store: &Store) {
    check_pairs(after).unwrap();
    assert_eq!(ids(after), ids(before));
    check_nothing_lost(before, after, store).unwrap();
}

/// (a) A conversation ending in an in-flight tool call keeps valid pairs.
#[test]
fn orphans_in_flight_last_call() {
    let messages = parse(json!([
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("c1", "search")]},
        {"role": "tool", "content": [result("c1", "search", &lines("a", 6_000))]},
        {"role": "assistant", "content": [{"type": "text", "text": "more"}, call("c2", "search"), call("c3", "run")]},
    ]));
    let mut c = compactor(16_000);
    let (applied, store, outcomes) = drive(&mut c, messages.clone());
    assert_eq!(outcomes.len(), 1);
    assert_valid_and_preserved(&messages, &applied.messages, &store);
    assert_eq!(
        applied.messages[4], messages[4],
        "the in-flight call is untouched"
    );
}

/// (a) Parallel calls answered in reverse order keep valid pairs.
#[test]
fn orphans_parallel_calls_answered_in_reverse() {
    let messages = parse(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("p1", "search"), call("p2", "web_fetch"), call("p3", "run_shell")]},
        {"role": "tool", "content": [
            result("p3", "run_shell", &lines("c", 4_000)),
            result("p2", "web_fetch", "small"),
            result("p1", "search", &lines("a", 4_000)),
        ]},
        {"role": "assistant", "content": "done"},
    ]));
    let mut c = compactor(16_000);
    let (applied, store, outcomes) = drive(&mut c, messages.clone());
    assert_eq!(outcomes.len(), 2);
    assert_valid_and_preserved(&messages, &applied.messages, &store);
    let order: Vec<&str> = applied.messages[2]
        .parts()
        .iter()
        .map(|p| match p {
            Part::ToolResult(r) => r.tool_call_id.as_str(),
            _ => "?",
        })
        .collect();
    assert_eq!(order, ["p3", "p2", "p1"], "result order kept");
}

/// (a) Results split across two consecutive tool messages keep valid pairs.
#[test]
fn orphans_results_split_across_tool_messages() {
    let messages = parse(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("s1", "search"), call("s2", "search"),
            {"type": "tool-approval-request", "approvalId": "a2", "toolCallId": "s2"}]},
        {"role": "tool", "content": [{"type": "tool-approval-response", "approvalId": "a2", "approved": true},
            result("s2", "search", &lines("b", 5_000))]},
        {"role": "tool", "content": [result("s1", "search", &lines("a", 5_000))]},
        {"role": "assistant", "content": "done"},
    ]));
    let mut c = compactor(16_000);
    let (applied, store, outcomes) = drive(&mut c, messages.clone());
    assert_eq!(outcomes.len(), 2);
    assert_valid_and_preserved(&messages, &applied.messages, &store);
    assert!(applied.tokens_after <= 16_000);
}

/// (b) After a compaction the count is exact, so the next trigger sees real usage.
#[test]
fn trigger_sees_real_usage_after_compaction() {
    let messages = parse(json!([
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("c1", "search"), call("c2", "web_fetch")]},
        {"role": "tool", "content": [
            result("c1", "search", &lines("a", 8_000)),
            {"type": "tool-result", "toolCallId": "c2", "toolName": "web_fetch",
             "output": {"type": "json", "value": (0..2_000).map(|i| json!({"i": i, "v": "x"})).collect::<Vec<_>>()}},
        ]},
    ]));
    for model in ["gpt-4o", "gpt-4"] {
        let config = Config {
            model: Some(model.into()),
            context_window: Some(32_000),
            ..Config::default()
        };
        let mut c = Compactor::new(config.clone()).unwrap();
        let driven = drive_with(&mut c, messages.clone(), &Faults::None).unwrap();
        assert_eq!(driven.plan.actions.len(), 2, "{model}");
        let fresh = Compactor::new(config)
            .unwrap()
            .count(&driven.applied.messages);
        assert_eq!(
            driven.plan.tokens_after, fresh,
            "{model}: predicted count is the real count"
        );
        assert_eq!(driven.applied.tokens_after, fresh, "{model}");
        assert!(
            c.usage(&driven.applied.messages).tokens == fresh && fresh < 32_000 / 4,
            "{model}: {fresh}"
        );
    }
}

/// (b) The prediction is exact for estimated families too: with a token ratio (Anthropic 1.2),
/// `plan.tokens_after` subtracts per-action scaled savings from the scaled total, which rounds
/// differently from scaling the applied conversation (off by one here; by up to one per action).
#[test]
fn prediction_is_exact_with_a_token_ratio() {
    let messages = parse(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("c1", "search"), call("c2", "search")]},
        {"role": "tool", "content": [result("c1", "search", &lines("a", 1_502)), result("c2", "search", &lines("b", 3_005))]},
    ]));
    let config = Config {
        model: Some("claude-sonnet-4-5".into()),
        ..Config::default()
    };
    let mut c = Compactor::new(config.clone()).unwrap();
    let driven = drive_with(&mut c, messages, &Faults::None).unwrap();
    assert_eq!(driven.plan.actions.len(), 2);
    let fresh = Compactor::new(config)
        .unwrap()
        .count(&driven.applied.messages);
    assert_eq!(driven.applied.tokens_after, fresh);
    assert_eq!(
        driven.plan.tokens_after, fresh,
        "predicted count is the real count"
    );
}

/// (c) An offloaded output is not offloaded again: with a small window (threshold 1,000 tokens)
/// a preview of 13 dense 200-character lines is itself over the threshold, and each new plan
/// offloads the previous preview (a preview of a preview), on every turn.
#[test]
fn offloaded_preview_is_not_offloaded_again() {
    let line: String = "日本語テキスト🦀".chars().cycle().take(200).collect();
    let text: String = (0..100).map(|i| format!("{i} {line}\n")).collect();
    let messages = parse(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("c1", "search")]},
        {"role": "tool", "content": [result("c1", "search", &text)]},
        {"role": "user", "content": "next"},
    ]));
    let mut c = compactor(4_000);
    let (applied, _, outcomes) = drive(&mut c, messages);
    assert_eq!(outcomes.len(), 1);
    let again = c.plan(&applied.messages).unwrap();
    assert!(
        again.is_empty(),
        "re-offloads the preview: {:?}",
        again
            .actions
            .iter()
            .map(|a| (a.id(), kind(a)))
            .collect::<Vec<_>>()
    );
}

/// (c) No firing on every turn: small appended turns to a compacted conversation plan nothing.
#[test]
fn no_refire_on_small_turns() {
    let mut messages = parse(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("c1", "search")]},
        {"role": "tool", "content": [result("c1", "search", &lines("a", 9_000))]},
    ]));
    let mut c = compactor(16_000);
    let mut store = Store::new();
    let (plan, applied, _) = drive_into(&mut c, messages, &Faults::None, &mut store).unwrap();
    assert_eq!(plan.actions.len(), 1);
    messages = applied.messages;
    for turn in 0..5 {
        let extra = parse(json!([
            {"role": "assistant", "content": [call(&format!("t{turn}"), "search")]},
            {"role": "tool", "content": [result(&format!("t{turn}"), "search", "3 hits")]},
            {"role": "user", "content": format!("and now step {turn}")},
        ]));
        messages.extend(extra);
        let plan = c.plan(&messages).unwrap();
        assert!(plan.is_empty(), "turn {turn}: {:?}", plan.actions);
        assert_eq!(plan.tokens_after, plan.tokens_before);
    }
    assert_eq!(c.stats().compactions, 1);
}

/// (d) Nothing wiped without a way back: every replaced output names a readable path holding
/// the original, even when some writes fail (those outputs stay whole).
#[test]
fn every_replaced_output_is_readable() {
    let big_json: Vec<Value> = (0..3_000)
        .map(|i| json!({"row": i, "name": format!("n{i}")}))
        .collect();
    let messages = parse(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [call("c1", "search"), call("c2", "api"), call("c3", "shell"), call("c4", "shot")]},
        {"role": "tool", "content": [
            result("c1", "search", &lines("a", 6_000)),
            {"type": "tool-result", "toolCallId": "c2", "toolName": "api", "output": {"type": "json", "value": big_json}},
            {"type": "tool-result", "toolCallId": "c3", "toolName": "shell", "output": {"type": "error-text", "value": lines("e", 6_000)}},
            {"type": "tool-result", "toolCallId": "c4", "toolName": "shot", "output": {"type": "content", "value": [
                {"type": "text", "text": lines("t", 6_000)},
                {"type": "media", "data": "AAAA", "mediaType": "image/png"}]}},
        ]},
    ]));
    let plan = compactor(16_000).plan(&messages).unwrap();
    assert_eq!(plan.actions.len(), 4);
    let fail_path = plan.actions[1].writes()[0].0.to_owned();
    for faults in [Faults::None, Faults::Paths(BTreeSet::from([fail_path]))] {
        let mut c = compactor(16_000);
        let driven = drive_with(&mut c, messages.clone(), &faults).unwrap();
        assert_valid_and_preserved(&messages, &driven.applied.messages, &driven.store);
        let mut replaced = 0;
        for (before, after) in messages[2]
            .parts()
            .iter()
            .zip(driven.applied.messages[2].parts())
        {
            let (Part::ToolResult(b), Part::ToolResult(a)) = (before, after) else {
                panic!()
            };
            if a == b {
                continue;
            }
            replaced += 1;
            let text = a.output.text();
            let start = text
                .find("/tool_outputs/")
                .expect("the replacement names its path");
            let path: String = text[start..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !"]\"),".contains(*c))
                .collect();
            assert_eq!(
                driven.store.get(&path),
                Some(&b.output.text()),
                "{path} holds the original"
            );
        }
        assert_eq!(replaced, if matches!(faults, Faults::None) { 4 } else { 3 });
    }
}

/// Runs a case `invariants_hold` found, on a 4,000-token window with the history strategy
/// `strategy` (as `CfgSpec` numbers them) and `keep_messages`.
fn check_regression(conv: ConvSpec, strategy: u8, keep_messages: Option<usize>) {
    let cfg = CfgSpec {
        model: 0,
        window: Some(4000),
        threshold: None,
        fraction: None,
        preview: None,
        prefix: false,
        strategy,
        keep_messages,
        preset: None,
        tools: false,
    };
    check_case(
        conv.render(),
        cfg.config(),
        &Faults::None,
        Summarizer::Works,
    )
    .unwrap();
}

/// Found by `invariants_hold` in CI: a user text offloaded in the same plan as a drop by
/// importance that keeps it. The span recorded the sketch of its first message as it was then
/// (the offloaded preview, another length), so replaying the record onto the original history
/// found no span and a stateless host got the uncompacted prompt.
#[test]
fn replay_finds_a_span_whose_first_message_was_edited_in_the_same_plan() {
    let blob = |lines, words, seed, style| Blob {
        lines,
        words,
        seed,
        style,
    };
    let call = |tool, output, approval| CallSpec {
        tool,
        file: 0,
        input: None,
        output,
        approval,
        opts: false,
    };
    let conv = ConvSpec {
        system: None,
        exchanges: vec![
            ExchangeSpec {
                user: Some(UserSpec::Str(blob(218, 1, 35572858, 0))),
                steps: vec![StepSpec {
                    reasoning: None,
                    text: Some(blob(306, 4, 3257986708, 1)),
                    calls: vec![],
                    order: vec![0, 0, 0, 0],
                    split: 0,
                    string_content: false,
                }],
                final_text: None,
            },
            ExchangeSpec {
                user: None,
                steps: vec![StepSpec {
                    reasoning: None,
                    text: None,
                    calls: vec![
                        call(3, OutSpec::ErrorText(blob(2, 13, 2945684200, 0)), None),
                        call(0, OutSpec::Text(blob(0, 0, 0, 0)), None),
                        call(0, OutSpec::Text(blob(2, 10, 413075192, 0)), Some(true)),
                    ],
                    order: vec![166, 0, 0, 0],
                    split: 0,
                    string_content: false,
                }],
                final_text: None,
            },
        ],
        in_flight: false,
    };
    check_regression(conv, 2, None);
}

/// Found by `invariants_hold` (seed 505, 6,000 cases): the conversation repeats its first
/// exchange (the same file, an empty reply), the first is summarized, and re-planning the
/// compacted conversation replayed the span onto the repeat. A span whose summary or notice is
/// already in the messages was applied there and is not looked for again.
#[test]
fn a_span_already_applied_is_not_replayed_onto_a_repeat_of_its_messages() {
    let empty = Blob {
        lines: 0,
        words: 0,
        seed: 0,
        style: 0,
    };
    let step = |text: Option<Blob>, calls: Vec<CallSpec>, split| StepSpec {
        reasoning: None,
        text,
        calls,
        order: vec![0, 0, 0, 0],
        split,
        string_content: false,
    };
    let call = |output, approval| CallSpec {
        tool: 0,
        file: 0,
        input: None,
        output,
        approval,
        opts: false,
    };
    let exchange = |user, steps| ExchangeSpec {
        user: Some(user),
        steps,
        final_text: None,
    };
    let denied = || call(OutSpec::Text(empty.clone()), Some(false));
    let conv = ConvSpec {
        system: None,
        exchanges: vec![
            exchange(
                UserSpec::Parts(vec![UserPart::File]),
                vec![step(None, vec![], 0)],
            ),
            exchange(
                UserSpec::Parts(vec![UserPart::File]),
                vec![
                    step(None, vec![], 0),
                    step(None, vec![], 0),
                    step(None, vec![denied()], 1),
                ],
            ),
            exchange(
                UserSpec::Str(empty.clone()),
                vec![
                    step(None, vec![], 0),
                    step(
                        Some(Blob {
                            lines: 80,
                            words: 2,
                            seed: 2510597004,
                            style: 0,
                        }),
                        vec![
                            denied(),
                            call(
                                OutSpec::Content(vec![ContentItem::Media, ContentItem::Media]),
                                None,
                            ),
                            denied(),
                        ],
                        1,
                    ),
                ],
            ),
        ],
        in_flight: false,
    };
    check_regression(conv, 0, Some(11));
}
