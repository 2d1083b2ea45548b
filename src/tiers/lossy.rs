//! Tier 3, the lossy tier: summarize the older span, or drop messages (truncation, importance).
//! Always preceded by a transcript save of the whole conversation, so nothing is lost: the
//! transcript has every byte, and the summary or notice that replaces the span names it.
//!
//! The span never splits a group: a tool call stays with its results and an approval request
//! with its response, the leading system messages stay first, and the most recent messages
//! (a share of the window, or a count) stay verbatim.

use hashbrown::HashMap;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::config::{HistoryConfig, HistoryStrategy, ImportanceConfig};
use crate::counting::CachedCounter;
use crate::memo::Memo;
use crate::message::{Content, Message, Part, Role};
use crate::plan::{
    Action, Continuation, Drop, SaveTranscript, Strategy, Summarize, SummaryRequest,
};

/// How a summary message starts; a span that starts with one carries it forward (rolling).
pub(crate) const SUMMARY_MARKER: &str = "[Conversation summary]";
/// How the notice of a truncation starts.
pub(crate) const NOTICE_MARKER: &str = "[Earlier messages removed]";

/// What the lossy tier needs from the compactor.
pub(crate) struct Inputs<'a> {
    pub messages: &'a [Message],
    /// Raw tokens of each message as given.
    pub original: &'a [u32],
    /// Raw tokens of each message once the reversible edits already planned are applied.
    pub edited: &'a [u32],
    pub config: &'a HistoryConfig,
    pub path_fields: &'a [String],
    pub counter: &'a CachedCounter,
    /// Raw tokens of the tool definitions (sent with every request).
    pub tools_raw: u32,
    /// Model tokens per raw token (calibration or family ratio).
    pub ratio: f64,
    /// The family's fixed ratio, without calibration: a summary is cut at its `max_tokens` by it
    /// ([`summary_cap_raw`]).
    pub fixed_ratio: f64,
    pub window: u32,
    pub target: u32,
    pub min_saving: u32,
    pub manual: bool,
    pub instructions: Option<&'a str>,
    /// Leave the transcript's `json` and `markdown` empty (see `PlanOptions::defer_transcript`).
    pub defer_transcript: bool,
    /// The message holding the latest provider compaction item: the span starts after it.
    pub provider_item: Option<usize>,
    /// Messages holding the working files' latest content: their groups are kept, each while
    /// it fits `working_budget` (a group may hold other large calls).
    pub working: &'a BTreeSet<usize>,
    /// The working files' token budget (model tokens).
    pub working_budget: u32,
    /// The price of a cached input token (a multiple of an uncached one), when the provider
    /// caches prompts and `history.continuation` is on: summary requests may read the cache.
    pub cache_read: Option<f64>,
    /// What is known about each message (for `messages`).
    pub memo: &'a Memo,
    /// The span ends here (a summary made ahead of need covers it): the plan is `None` when
    /// that is not a group boundary after the start and before the last group.
    pub fixed_cut: Option<usize>,
}

/// The lossy part of a plan.
pub(crate) struct Planned {
    pub transcript: SaveTranscript,
    pub action: Action,
    /// Messages that leave the conversation (planned edits inside them are moot).
    pub removed: BTreeSet<usize>,
    /// Raw tokens of the message inserted in their place (a summary counts at its maximum).
    pub inserted_raw: u32,
    /// Set when the kept messages alone are over the keep budget.
    pub kept_over_budget: Option<u32>,
}

impl Inputs<'_> {
    fn scale(&self, raw: u32) -> u32 {
        if self.ratio == 1.0 {
            return raw;
        }
        (f64::from(raw) * self.ratio).ceil() as u32
    }

    /// `tails[i]`: the tokens of the messages from `i` on (as edited), for every `i`.
    fn tails(&self) -> Vec<u32> {
        let mut tails = vec![0u32; self.edited.len() + 1];
        for (i, tokens) in self.edited.iter().enumerate().rev() {
            tails[i] = tails[i + 1] + tokens;
        }
        tails
    }
}

/// Plans the lossy step, or `None` when there is nothing older than the kept messages to lose.
pub(crate) fn plan(inputs: &Inputs) -> Option<Planned> {
    let messages = inputs.messages;
    let config = inputs.config;
    if config.strategy == HistoryStrategy::Off {
        return None;
    }
    let ok = boundaries(messages);
    // Computed once: the cut below looks at the tail from every candidate message.
    let tails = inputs.tails();
    let system = messages
        .iter()
        .take_while(|m| m.role == Role::System)
        .count();
    // Nothing up to the provider's own compaction item is lost again (nor the item).
    let start = match inputs.provider_item {
        Some(c) => (c + 1..=messages.len()).find(|&i| ok[i])?.max(system),
        None => system,
    };
    // Keep at least the last group (the request in progress).
    let last_group = (start + 1..messages.len()).rev().find(|&c| ok[c])?;
    let (cut, kept_over_budget) = match (inputs.fixed_cut, config.keep_recent_messages) {
        (Some(cut), _) => {
            if !(cut > start && cut <= last_group && ok[cut]) {
                return None;
            }
            (cut, None)
        }
        (None, Some(keep)) => {
            let limit = messages.len().saturating_sub(keep).min(last_group);
            ((start + 1..=limit).rev().find(|&c| ok[c])?, None)
        }
        (None, None) => {
            let mut budget = (f64::from(inputs.window) * config.keep_recent_fraction) as u32;
            if inputs.manual {
                // Asked for room: keep that share of what there is, not of the whole window.
                let total = inputs.scale(tails[start]);
                budget = budget.min((f64::from(total) * config.keep_recent_fraction) as u32);
            }
            match (start + 1..=last_group).find(|&c| ok[c] && inputs.scale(tails[c]) <= budget) {
                Some(c) => (c, None),
                None => (last_group, Some(inputs.scale(tails[last_group]))),
            }
        }
    };
    let span = start..cut;
    // Pinned groups and the working files' stay (after the summary or notice); only markers
    // left to lose: no work.
    let mut pinned = crate::tiers::pinned::pinned_groups(messages, &ok, config);
    for group in crate::tiers::pinned::groups_of(&ok, inputs.working) {
        let tokens: u32 = group.clone().map(|i| inputs.edited[i]).sum();
        if inputs.scale(tokens) <= inputs.working_budget {
            pinned.extend(group);
        }
    }
    let only_markers = span
        .clone()
        .filter(|i| !pinned.contains(i))
        .all(|i| is_marker(&messages[i]));
    if span.is_empty() || only_markers {
        return None;
    }
    // The live plan, when the span holds its latest version outside a pin.
    let plan = crate::tiers::pinned::latest_plan(messages, config, is_marker)
        .filter(|(i, _)| span.contains(i) && !pinned.contains(i));
    let pins = Pins {
        groups: &pinned,
        plan: plan.as_ref().map(|(i, s)| (*i, s.as_str())),
    };
    let transcript = transcript(
        messages,
        config,
        strategy_of(config.strategy),
        !inputs.defer_transcript,
        inputs.memo,
    );
    let planned = match config.strategy {
        HistoryStrategy::Off => return None,
        HistoryStrategy::Summarize => summarize(inputs, span, &transcript, &pins)?,
        HistoryStrategy::Truncate | HistoryStrategy::Importance => {
            drop(inputs, span, &ok, &transcript, &pins)?
        }
    };
    let (action, removed, inserted_raw) = planned;
    Some(Planned {
        transcript,
        action,
        removed,
        inserted_raw,
        kept_over_budget,
    })
}

/// What the lossy step must not lose: pinned groups (message indices) and the live plan (the
/// message that holds it and the section to carry).
struct Pins<'a> {
    groups: &'a BTreeSet<usize>,
    plan: Option<(usize, &'a str)>,
}

/// Raw tokens of what no tier may touch: the pinned groups and the latest plan's section.
pub(crate) fn pinned_raw(
    messages: &[Message],
    config: &HistoryConfig,
    counter: &CachedCounter,
    total: impl Fn(usize) -> u32,
) -> u32 {
    let any_pin = !config.pinned_tools.is_empty()
        || messages
            .iter()
            .any(|m| crate::tiers::pinned::message_pinned(m, config));
    let groups = if any_pin {
        crate::tiers::pinned::pinned_groups(messages, &boundaries(messages), config)
    } else {
        BTreeSet::new()
    };
    let plan = crate::tiers::pinned::latest_plan(messages, config, is_marker)
        .filter(|(i, _)| !groups.contains(i))
        .map_or(0, |(_, section)| counter.text(&section));
    groups.iter().map(|&i| total(i)).sum::<u32>() + plan
}

fn strategy_of(strategy: HistoryStrategy) -> Strategy {
    match strategy {
        HistoryStrategy::Truncate => Strategy::Truncate,
        HistoryStrategy::Importance => Strategy::Importance,
        HistoryStrategy::Summarize | HistoryStrategy::Off => Strategy::Summarize,
    }
}

/// `ok[c]`: the conversation may be cut before message `c` without separating a tool call from
/// its result or an approval request from its response.
pub(crate) fn boundaries(messages: &[Message]) -> Vec<bool> {
    let mut answered: HashMap<&str, usize> = HashMap::new();
    let mut approved: HashMap<&str, usize> = HashMap::new();
    for (i, message) in messages.iter().enumerate() {
        for part in message.parts() {
            match part {
                Part::ToolResult(r) => {
                    answered.insert(&r.tool_call_id, i);
                }
                Part::ToolApprovalResponse(a) => {
                    approved.insert(&a.approval_id, i);
                }
                _ => {}
            }
        }
    }
    let mut ok = vec![false; messages.len() + 1];
    ok[0] = true;
    let mut reach = 0;
    for (i, message) in messages.iter().enumerate() {
        for part in message.parts() {
            let answer = match part {
                Part::ToolCall(c) => answered.get(c.tool_call_id.as_str()),
                Part::ToolApprovalRequest(r) => approved.get(r.approval_id.as_str()),
                _ => None,
            };
            reach = reach.max(answer.copied().unwrap_or(0));
        }
        ok[i + 1] = reach <= i
            && messages
                .get(i + 1)
                .is_none_or(|next| next.role != Role::Tool);
    }
    ok
}

fn is_marker(message: &Message) -> bool {
    marker_text(message).is_some()
}

fn marker_text(message: &Message) -> Option<&str> {
    let Content::Text(text) = &message.content else {
        return None;
    };
    (message.role == Role::User
        && (text.starts_with(SUMMARY_MARKER) || text.starts_with(NOTICE_MARKER)))
    .then_some(text)
}

/// The summary a span carries forward: the body of a summary message at its start.
fn previous_summary(messages: &[Message]) -> Option<String> {
    let text = marker_text(messages.first()?)?;
    if !text.starts_with(SUMMARY_MARKER) {
        return None;
    }
    let body = text.split_once("\n\n").map_or("", |(_, body)| body);
    Some(crate::tiers::pinned::without_section(body).to_owned())
}

pub(crate) fn transcript(
    messages: &[Message],
    config: &HistoryConfig,
    strategy: Strategy,
    full: bool,
    memo: &Memo,
) -> SaveTranscript {
    let json = full.then(|| serde_json::to_string_pretty(messages).expect("messages serialize"));
    let path = path_for(
        config,
        &crate::record::conversation_hex_of(memo.canonical(messages)),
    );
    let readable_path = readable_path(&path);
    let (json, markdown) = match json {
        Some(json) => {
            let mut markdown = format!(
                "# Conversation transcript\n\n{} messages, saved before {} (JSON: `{path}`).\n",
                messages.len(),
                match strategy {
                    Strategy::Summarize => "summarization",
                    _ => "older messages were removed",
                }
            );
            for (i, message) in messages.iter().enumerate() {
                markdown.push('\n');
                markdown.push_str(&render(i, message, None));
            }
            (json, markdown)
        }
        None => (String::new(), String::new()),
    };
    SaveTranscript {
        id: "save-transcript".into(),
        path,
        readable_path,
        json,
        markdown,
        messages: messages.len(),
        lossy_strategy: strategy,
    }
}

/// `{prefix}conversation_{hash}.json`, content-addressed by the messages' fingerprints (their
/// meaning, as the compaction record sees it: key order, `providerOptions`, and a string
/// content against one text part do not change it). So the same conversation gets the same
/// path, and the summary that names it the same text, whether a host sends `ModelMessage`s or
/// the AI SDK's normalized prompt (the middleware).
pub(crate) fn transcript_path(messages: &[Message], config: &HistoryConfig) -> String {
    path_for(config, &crate::record::conversation_hex(messages))
}

fn path_for(config: &HistoryConfig, hash: &str) -> String {
    format!("{}conversation_{hash}.json", config.path_prefix)
}

/// Raw tokens a summary asked for at most `max_tokens` is cut at ([`crate::Compactor::apply`]),
/// by the family's fixed ratio `token_ratio`: not calibration, so every host cuts the same
/// text; the plan counts the summary at this size.
pub(crate) fn summary_cap_raw(max_tokens: u32, token_ratio: f64) -> u32 {
    (f64::from(max_tokens) / token_ratio).floor() as u32
}

/// One message as Markdown. `cap`: cut each part to this many characters.
fn render(index: usize, message: &Message, cap: Option<usize>) -> String {
    let mut out = String::with_capacity(256);
    let _ = writeln!(out, "## {} · {}", index + 1, message.role.as_str());
    // Written straight into `out` (a plan renders hundreds of messages for its request).
    let heading = |out: &mut String, parts: [&str; 3]| {
        out.push_str("### ");
        out.push_str(parts[0]);
        if !parts[1].is_empty() || !parts[2].is_empty() {
            out.push(' ');
            out.push_str(parts[1]);
            out.push_str(" · ");
            out.push_str(parts[2]);
        }
        out.push('\n');
    };
    let body = |out: &mut String, text: &str| {
        push_cut(out, text, cap);
        out.push('\n');
    };
    let push = |out: &mut String, heading: Option<String>, text: &str| {
        if let Some(h) = heading {
            let _ = writeln!(out, "### {h}");
        }
        body(out, text);
    };
    match &message.content {
        Content::Text(text) => push(&mut out, None, text),
        Content::Parts(parts) => {
            for part in parts {
                match part {
                    Part::Text(p) => push(&mut out, None, &p.text),
                    Part::Reasoning(p) => push(&mut out, Some("reasoning".into()), &p.text),
                    Part::Image(_) => push(&mut out, None, "[image]"),
                    Part::File(f) => push(
                        &mut out,
                        None,
                        &format!("[file {}]", f.filename.as_deref().unwrap_or(&f.media_type)),
                    ),
                    Part::ToolCall(c) => {
                        heading(&mut out, ["tool-call", &c.tool_name, &c.tool_call_id]);
                        body(&mut out, &c.input.to_string());
                    }
                    Part::ToolResult(r) => {
                        let kind = if r.output.is_error() {
                            "tool-error"
                        } else {
                            "tool-result"
                        };
                        heading(&mut out, [kind, &r.tool_name, &r.tool_call_id]);
                        body(&mut out, &r.output.text());
                    }
                    Part::ToolApprovalRequest(a) => push(
                        &mut out,
                        None,
                        &format!(
                            "[approval requested for {} ({})]",
                            a.tool_call_id, a.approval_id
                        ),
                    ),
                    Part::ToolApprovalResponse(a) => push(
                        &mut out,
                        None,
                        &format!(
                            "[approval {}: {}]",
                            a.approval_id,
                            if a.approved { "approved" } else { "denied" }
                        ),
                    ),
                    Part::Unknown(map) => push(
                        &mut out,
                        Some(part.type_name().to_owned()),
                        &serde_json::Value::Object(map.clone()).to_string(),
                    ),
                }
            }
        }
    }
    out
}

/// How far past its cap a cut text may run to keep a path whole (a store path is at most
/// 1,024 characters, ours under 100).
const PATH_SLACK: usize = 256;

/// `text` cut to `cap` characters (see [`push_cut`]).
fn cut(text: &str, cap: Option<usize>) -> String {
    let mut out = String::new();
    push_cut(&mut out, text, cap);
    out
}

/// Appends `text` cut to `cap` characters (on a char boundary), saying how much was cut. A
/// path (a run of path characters holding a `/`, at most 1,024 long: a store path the agent may
/// read back) is not cut in two: the cut moves to its end (up to [`PATH_SLACK`] bytes further)
/// or else to its start.
fn push_cut(out: &mut String, text: &str, cap: Option<usize>) {
    match cap.and_then(|cap| text.char_indices().nth(cap)) {
        Some((at, _)) => {
            let path_char =
                |c: char| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.');
            let start = text[..at].rfind(|c: char| !path_char(c)).map_or(0, |i| {
                i + text[i..].chars().next().map_or(1, char::len_utf8)
            });
            let end = text[at..]
                .find(|c: char| !path_char(c))
                .map_or(text.len(), |i| at + i);
            let run = &text[start..end];
            let path = start < at && run.contains('/') && run.len() <= 1_024;
            let at = match path {
                true if end - at <= PATH_SLACK => end,
                true => start,
                false => at,
            };
            if at == text.len() {
                out.push_str(text);
                return;
            }
            out.push_str(&text[..at]);
            let _ = write!(
                out,
                " …[+{} chars in the transcript]",
                text[at..].chars().count()
            );
        }
        None => out.push_str(text),
    }
}

// ---------------------------------------------------------------------------------------------
// Summarize

const SYSTEM: &str = "You summarize the earlier part of a conversation between a user and an AI agent, so that the \
agent can continue the work with a fresh context window. Be concise, but keep every fact needed to continue: goals, \
decisions and their reasons, file paths, names, identifiers, values, commands, errors and their fixes, and what \
remains to be done. Write only the summary, in the requested structure.";

const TEMPLATE: &str = "Summarize the conversation below in this structure:

## Session Intent
What is the user trying to accomplish?

## Progress
What has been completed? What artifacts were created or changed?

## Key Decisions
What important decisions were made, and why?

## Current State
Where did the work stop?

## Plan / Todo
The agent's plan or todo list: each item and its status. (The latest plan-tool input is attached \
verbatim after this summary; say here what was done on it.)

## Next Steps
What remains to be done?

## Important Details
Specific values, paths, names, commands and configurations that must be remembered.";

type Lossy = (Action, BTreeSet<usize>, u32);

fn summarize(
    inputs: &Inputs,
    span: std::ops::Range<usize>,
    transcript: &SaveTranscript,
    pins: &Pins,
) -> Option<Lossy> {
    let messages = inputs.messages;
    let keep: Vec<usize> = span.clone().filter(|i| pins.groups.contains(i)).collect();
    let plan = pins.plan.map(|(_, section)| section.to_owned());
    let config = inputs.config;
    let max_tokens = config.summary_max_tokens.min((inputs.window / 10).max(1));
    let previous = previous_summary(&messages[span.clone()]);
    let body_start = span.start + usize::from(previous.is_some());
    let instructions = join_instructions(config.instructions.as_deref(), inputs.instructions);

    let fallback = fallback(
        inputs,
        body_start..span.end,
        previous.as_deref(),
        transcript,
        max_tokens,
        pins,
    );
    let header = summary_header(span.start, span.end, &keep, &transcript.path);
    let header_raw = inputs.counter.message(&Message::user(format!(
        "{header}\n\n\n\n{}",
        plan.as_deref().unwrap_or("")
    )));
    // A summary is at most `max_tokens` (the host passes it to its LLM), cut there as apply
    // cuts it (by the family's ratio, not calibration: the same text in every host), or the
    // fallback, which may not shrink that far in a tiny window.
    let inserted_raw = header_raw
        + summary_cap_raw(max_tokens, inputs.fixed_ratio).max(inputs.counter.text(&fallback));
    let removed: BTreeSet<usize> = span.clone().filter(|i| !keep.contains(i)).collect();
    let before: u32 = removed.iter().map(|&i| inputs.original[i]).sum();
    if !inputs.manual && inputs.scale(before) < inputs.scale(inserted_raw) + inputs.min_saving {
        return None;
    }

    let mut prompt = TEMPLATE.to_owned();
    let _ = write!(prompt, "\n\nStay under {max_tokens} tokens.");
    if previous.is_some() {
        prompt.push_str(
            " The conversation already had a summary of what came before it (\"Previous summary\" below): \
             merge it into the new summary, keeping what still matters.",
        );
    }
    if let Some(instructions) = &instructions {
        let _ = write!(prompt, "\n\nAdditional instructions: {instructions}");
    }
    if let Some(previous) = &previous {
        let _ = write!(prompt, "\n\n# Previous summary\n\n{previous}");
    }
    let _ = write!(
        prompt,
        "\n\n# Conversation (messages {}–{} of {})\n\n",
        body_start + 1,
        span.end,
        messages.len(),
    );
    // The plain request's tokens: its header and the rendered messages as counted (the
    // joined span is not counted again).
    let (rendered, rendered_raw) = request_span(inputs, body_start..span.end, pins.groups);
    let plain_raw = inputs.counter.text(SYSTEM) + inputs.counter.text(&prompt) + rendered_raw;
    prompt.push_str(&rendered);
    let mut request = SummaryRequest::new(SYSTEM, prompt, max_tokens);
    request.continuation = continuation(
        inputs,
        &request,
        plain_raw,
        &span,
        previous.is_some(),
        instructions.as_deref(),
    );
    let action = Action::Summarize(Summarize {
        id: "summarize".into(),
        transcript: transcript.id.clone(),
        transcript_path: transcript.path.clone(),
        start: span.start,
        end: span.end,
        request,
        previous_summary: previous,
        instructions,
        fallback,
        tokens_before: inputs.scale(before),
        tokens_after: inputs.scale(inserted_raw),
        keep,
        plan,
        ahead_key: None,
        ready: None,
        blocking: false,
    });
    Some((action, removed, inserted_raw))
}

/// The request as a continuation of the agent's cached prompt, when that costs less: the prefix
/// (what was sent before, read at `cache_read`) and the instruction, against the plain request
/// at the full price.
fn continuation(
    inputs: &Inputs,
    plain: &SummaryRequest,
    plain_raw: u32,
    span: &std::ops::Range<usize>,
    rolling: bool,
    instructions: Option<&str>,
) -> Option<Continuation> {
    let read = inputs.cache_read?;
    let mut instruction = TEMPLATE.replacen(
        "Summarize the conversation below",
        "Summarize the conversation above",
        1,
    );
    let _ = write!(
        instruction,
        "\n\nSummarize messages {}–{} of it{}. Stay under {} tokens. Answer with the summary \
         only: do not call any tool.",
        span.start + 1,
        span.end,
        if rolling {
            " (the first is the summary of what came before them: merge it into the new \
             summary, keeping what still matters)"
        } else {
            ""
        },
        plain.max_tokens,
    );
    if let Some(instructions) = instructions {
        let _ = write!(instruction, "\n\nAdditional instructions: {instructions}");
    }
    let counter = inputs.counter;
    let prefix_raw = crate::counting::REPLY_PRIMING
        + inputs.tools_raw
        + inputs.original[..span.end].iter().sum::<u32>();
    let instruction_raw = counter.message(&Message::user(instruction.clone()));
    let cost = (f64::from(prefix_raw) * read).ceil() as u32 + instruction_raw;
    (cost < plain_raw).then(|| Continuation {
        end: span.end,
        instruction,
        prefix_tokens: inputs.scale(prefix_raw),
        cost: inputs.scale(cost),
        plain_cost: inputs.scale(plain_raw),
    })
}

fn join_instructions(configured: Option<&str>, given: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = [configured, given]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

fn summary_header(start: usize, end: usize, keep: &[usize], transcript_path: &str) -> String {
    let readable = readable_path(transcript_path);
    // Messages of the span kept verbatim (pinned, the working files) follow the summary: said,
    // 1-based as the span is, so the model does not take them for summarized.
    let kept = match keep.len() {
        0 => String::new(),
        1..=6 => format!(
            ", but for {} {}, kept verbatim right after this summary",
            if keep.len() == 1 {
                "message"
            } else {
                "messages"
            },
            keep.iter()
                .map(|k| (k + 1).to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        n => format!(", but for {n} of them, kept verbatim right after this summary"),
    };
    format!(
        "{SUMMARY_MARKER} Messages {}–{end} were summarized to free context{kept}. Full transcript: \
         {transcript_path} (readable: {readable}); read_file or grep it to recover details.",
        start + 1,
    )
}

fn readable_path(json_path: &str) -> String {
    format!(
        "{}.md",
        json_path.strip_suffix(".json").unwrap_or(json_path)
    )
}

/// The summary message that replaces the span.
pub(crate) fn summary_message(action: &Summarize, summary: &str) -> Message {
    let header = summary_header(
        action.start,
        action.end,
        &action.keep,
        &action.transcript_path,
    );
    let mut text = format!("{header}\n\n{}", summary.trim());
    if let Some(plan) = &action.plan {
        let _ = write!(text, "\n\n{plan}");
    }
    Message::user(text)
}

/// The span as the summarizer sees it: each part cut to `requestPartChars`, and the middle
/// elided when the whole is over `requestMaxTokens`.
/// The span as the summarizer reads it, and the raw tokens of the rendered messages it holds.
/// Messages are rendered and counted only as far as the budget reaches from each end (a span
/// far over the budget costs the budget, not the span).
fn request_span(
    inputs: &Inputs,
    span: std::ops::Range<usize>,
    kept: &BTreeSet<usize>,
) -> (String, u32) {
    let config = inputs.config;
    let budget = config.request_max_tokens.unwrap_or(inputs.window / 4);
    let order: Vec<usize> = span.filter(|i| !kept.contains(i)).collect();
    // The k-th message of `order` rendered and counted once (and kept for the next plan when
    // the memo outlives this one); its scaled tokens.
    let cap = config.request_part_chars;
    let mut rendered = inputs.memo.rendered(inputs.messages.len());
    let mut make = |k: usize| -> u32 {
        let i = order[k];
        let (_, raw) = rendered.get(i, cap, || {
            let text = render(i, &inputs.messages[i], Some(cap));
            let raw = inputs.counter.text(&text);
            (text, raw)
        });
        inputs.scale(raw)
    };
    // Everything, when it fits; else the start (the intent) and the end (the latest state), the
    // middle elided.
    let mut used = 0u32;
    let mut fits = true;
    for k in 0..order.len() {
        used += make(k);
        if used > budget {
            fits = false;
            break;
        }
    }
    let (head, tail) = if fits {
        (order.len(), order.len())
    } else {
        let (mut head, mut used) = (0, 0);
        while head < order.len() && used + make(head) <= budget / 2 {
            used += make(head);
            head += 1;
        }
        let mut tail = order.len();
        while tail > head && used + make(tail - 1) <= budget {
            used += make(tail - 1);
            tail -= 1;
        }
        (head, tail)
    };
    let text = |range: std::ops::Range<usize>| {
        order[range]
            .iter()
            .map(|&i| rendered.text(i))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let raw: u32 = order[..head]
        .iter()
        .chain(&order[tail..])
        .map(|&i| rendered.raw(i))
        .sum();
    if fits {
        return (text(0..order.len()), raw);
    }
    let mut out = text(0..head);
    let _ = write!(
        out,
        "\n… {} messages omitted here to fit the summarizer; the transcript has them …\n\n",
        tail - head
    );
    out.push_str(&text(tail..order.len()));
    (out, raw)
}

/// A summary made without an LLM (seed 000's heuristic): intent from the first user message,
/// the tools used, the files touched, the latest request, and the previous summary; cut to fit
/// `max_tokens`.
fn fallback(
    inputs: &Inputs,
    span: std::ops::Range<usize>,
    previous: Option<&str>,
    transcript: &SaveTranscript,
    max_tokens: u32,
    pins: &Pins,
) -> String {
    // The span's plan calls: the fallback says where the latest plan went.
    let plan_calls: Vec<&str> = inputs.messages[span.clone()]
        .iter()
        .flat_map(Message::parts)
        .filter_map(|p| match p {
            Part::ToolCall(c) if inputs.config.plan_tools.contains(&c.tool_name) => {
                Some(c.tool_name.as_str())
            }
            _ => None,
        })
        .collect();
    let plan_line = match (pins.plan, plan_calls.last()) {
        (Some(_), _) => Some(
            "The latest plan is kept verbatim at the end of this message (\"[Current plan, kept verbatim]\"); \
             keep it up to date with the plan tool."
                .to_owned(),
        ),
        (None, Some(tool)) => Some(format!(
            "{} {tool} calls here; a newer plan is in the messages after this summary.",
            plan_calls.len()
        )),
        (None, None) => None,
    };
    let messages = &inputs.messages[span.clone()];
    let user_texts: Vec<String> = messages
        .iter()
        .filter(|m| m.role == Role::User)
        .map(Message::text)
        .collect();
    let mut tools: BTreeMap<&str, u32> = BTreeMap::new();
    let mut files: Vec<&str> = Vec::new();
    for part in messages.iter().flat_map(Message::parts) {
        let Part::ToolCall(call) = part else { continue };
        *tools.entry(call.tool_name.as_str()).or_default() += 1;
        for field in inputs.path_fields {
            if let Some(path) =
                crate::tiers::input_field(&call.input, field).and_then(serde_json::Value::as_str)
            {
                if !files.contains(&path) {
                    files.push(path);
                }
            }
        }
    }
    let tools_line = if tools.is_empty() {
        "None".to_owned()
    } else {
        tools
            .iter()
            .map(|(name, n)| format!("{name} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let build = |chars: usize| {
        let mut out = format!(
            "## Session Intent\n{}\n\n## Progress\n{} messages summarized without an LLM; {} tool calls.\n\n## Tools Used\n{}\n\n## Files Touched\n{}\n",
            cut(user_texts.first().map_or("Unknown", String::as_str), Some(chars)),
            span.clone().filter(|i| !pins.groups.contains(i)).count(),
            tools.values().sum::<u32>(),
            cut(&tools_line, Some(chars)),
            if files.is_empty() { "None".to_owned() } else { cut(&files.join("\n"), Some(chars * 2)) },
        );
        if let Some(line) = &plan_line {
            let _ = write!(out, "\n## Plan / Todo\n{line}\n");
        }
        if user_texts.len() > 1 {
            let _ = write!(
                out,
                "\n## Latest Request\n{}\n",
                cut(user_texts.last().map_or("", String::as_str), Some(chars))
            );
        }
        if let Some(previous) = previous {
            let _ = write!(
                out,
                "\n## Earlier Summary\n{}\n",
                cut(previous, Some(chars * 4))
            );
        }
        let _ = write!(
            out,
            "\n## Note\nAutomatic summary (no LLM). The full conversation is saved at {}.",
            transcript.path
        );
        out
    };
    let mut chars = 500;
    loop {
        let text = build(chars);
        if chars <= 16 || inputs.scale(inputs.counter.text(&text)) <= max_tokens {
            return text;
        }
        chars /= 2;
    }
}

// ---------------------------------------------------------------------------------------------
// Truncate and importance

fn drop(
    inputs: &Inputs,
    span: std::ops::Range<usize>,
    ok: &[bool],
    transcript: &SaveTranscript,
    pins: &Pins,
) -> Option<Lossy> {
    let config = inputs.config;
    let strategy = strategy_of(config.strategy);
    // Whole groups inside the span; earlier notices and summaries are always replaced.
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    let mut from = span.start;
    for (c, _) in ok
        .iter()
        .enumerate()
        .take(span.end + 1)
        .skip(span.start + 1)
        .filter(|(_, &boundary)| boundary)
    {
        groups.push(from..c);
        from = c;
    }
    let order: Vec<(usize, f64)> = match strategy {
        Strategy::Importance => {
            let mut scored: Vec<(usize, f64)> = groups
                .iter()
                .enumerate()
                .map(|(g, r)| (g, score(&inputs.messages[r.clone()], &config.importance)))
                .collect();
            scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            scored
        }
        _ => groups.iter().enumerate().map(|(g, _)| (g, 0.0)).collect(),
    };
    let total: u32 =
        crate::counting::REPLY_PRIMING + inputs.tools_raw + inputs.edited.iter().sum::<u32>();
    let mut removed: BTreeSet<usize> = BTreeSet::new();
    let mut saved = 0u32;
    let with_plan = |text: String, removed: &BTreeSet<usize>| match pins.plan {
        Some((at, section)) if removed.contains(&at) => format!("{text}\n\n{section}"),
        _ => text,
    };
    let notice_raw = |removed: &BTreeSet<usize>| {
        let mut estimate = removed.clone();
        estimate.extend(pins.plan.map(|(at, _)| at));
        inputs.counter.message(&Message::user(with_plan(
            notice(removed.len(), strategy, transcript),
            &estimate,
        )))
    };
    for (g, score) in order {
        let range = &groups[g];
        let group_is_marker = inputs.messages[range.clone()].iter().all(is_marker);
        let under_target = inputs.scale(total - saved + notice_raw(&removed)) <= inputs.target;
        let noise =
            strategy == Strategy::Importance && score < config.importance.min_score_threshold;
        if under_target && !group_is_marker && !noise && !inputs.manual {
            if strategy == Strategy::Truncate {
                break;
            }
            continue;
        }
        if score.is_infinite() || range.clone().any(|i| pins.groups.contains(&i)) {
            continue;
        }
        for i in range.clone() {
            removed.insert(i);
            saved += inputs.edited[i];
        }
    }
    // Only markers removed (or nothing): no new work.
    if removed.iter().all(|&i| is_marker(&inputs.messages[i])) {
        return None;
    }
    let notice_text = with_plan(notice(removed.len(), strategy, transcript), &removed);
    let inserted_raw = inputs.counter.message(&Message::user(notice_text.clone()));
    let before: u32 = removed.iter().map(|&i| inputs.original[i]).sum();
    if !inputs.manual && inputs.scale(before) < inputs.scale(inserted_raw) + inputs.min_saving {
        return None;
    }
    // Pinned groups right after the last removed message stay after the notice, as the step's.
    let last = removed.last().map_or(span.start, |&i| i + 1);
    let kept_until = (last..span.end)
        .take_while(|i| pins.groups.contains(i))
        .last()
        .map(|i| i + 1);
    let action = Action::Drop(Drop {
        id: strategy_id(strategy).into(),
        strategy,
        transcript: transcript.id.clone(),
        transcript_path: transcript.path.clone(),
        messages: removed.iter().copied().collect(),
        insert_at: span.start,
        kept_until,
        notice: notice_text,
        tokens_before: inputs.scale(before),
        tokens_after: inputs.scale(inserted_raw),
    });
    Some((action, removed, inserted_raw))
}

fn strategy_id(strategy: Strategy) -> &'static str {
    match strategy {
        Strategy::Importance => "drop-by-importance",
        _ => "truncate",
    }
}

fn notice(count: usize, strategy: Strategy, transcript: &SaveTranscript) -> String {
    let how = match strategy {
        Strategy::Importance => "the least important earlier messages",
        _ => "the oldest messages",
    };
    format!(
        "{NOTICE_MARKER} {count} messages ({how}) were removed to fit the context window. The full conversation is \
         saved at {} (readable: {}); read_file or grep it to recover details.",
        transcript.path, transcript.readable_path
    )
}

/// Seed 004's heuristics: a group scores the highest of its messages.
fn score(messages: &[Message], config: &ImportanceConfig) -> f64 {
    messages
        .iter()
        .map(|m| match m.role {
            Role::System => f64::INFINITY,
            Role::User if is_marker(m) => 0.0,
            Role::User => config.user_score,
            Role::Tool => config.tool_use_score,
            Role::Assistant if m.parts().iter().any(|p| matches!(p, Part::ToolCall(_))) => {
                config.tool_use_score
            }
            Role::Assistant => {
                let chars = m.text().chars().count();
                if chars < config.short_assistant_chars {
                    config.assistant_score * 0.5
                } else {
                    config.assistant_score
                }
            }
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn a_cut_never_splits_a_store_path() {
        let path = "/conversation_history/conversation_c592fa0123456789.json";
        let text = format!("The full conversation is saved at {path}. More text follows here.");
        let inside = text.find(path).unwrap() + 20;
        // The cut moves to the path's end (a period after it counts as a path character).
        let kept = cut(&text, Some(inside));
        assert!(
            kept.starts_with(&format!("The full conversation is saved at {path}.")),
            "{kept}"
        );
        // A JSON blob without spaces is no path: cut where it was.
        let json = format!(
            "{{\"url\":\"https://example.com/a\",\"v\":\"{}\"}}",
            "x".repeat(300)
        );
        assert!(cut(&json, Some(200)).starts_with(&json[..200]));
        assert!(kept.ends_with("chars in the transcript]"), "{kept}");
        // A cut before the path or after it is where it was.
        assert_eq!(
            cut(&text, Some(10)),
            format!(
                "The full c …[+{} chars in the transcript]",
                text.chars().count() - 10
            )
        );
        assert_eq!(cut(&text, Some(1_000)), text);
        // A path too long to keep goes whole: the cut moves to its start.
        let long = format!("see /{} end", "a".repeat(600));
        assert!(
            cut(&long, Some(100)).starts_with("see  …[+"),
            "{}",
            cut(&long, Some(100))
        );
        // Past 1,024 characters it is no path: cut where it was.
        let huge = format!("see /{} end", "a".repeat(2_000));
        assert!(cut(&huge, Some(100)).starts_with(&huge[..100]));
        // Multi-byte text around the cut stays on char boundaries.
        let wide = format!("é{}", "ü".repeat(50));
        assert!(cut(&wide, Some(10)).starts_with(&format!("é{}", "ü".repeat(9))));
    }
}
