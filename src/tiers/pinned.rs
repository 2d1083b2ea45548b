//! Pinned context: what no tier may take from the agent.
//!
//! - **Pins.** A message or part with `providerOptions.contextCompactor.pin = true`, or a
//!   tool call or result of a tool named in `history.pinnedTools`, stays verbatim: tiers 1 and 2
//!   leave its parts alone, and the lossy tier keeps its whole group (a tool call with its
//!   results, an approval with its response) right after the summary or notice.
//! - **The live plan.** The latest input of a plan tool (`history.planTools`: `write_todos`,
//!   `TodoWrite`, `update_plan`, `TaskCreate`, `TaskUpdate`) is carried verbatim through every
//!   lossy step: when the span holds it, the summary or notice that replaces the span ends with
//!   a marked section holding the input as JSON. A marked section of the inserted message (and
//!   not a kept tool-call pair) because the plan call often shares its assistant message with
//!   other calls whose results are large, because the section is part of the recorded insert (so
//!   the compaction record replays it byte for byte onto any history), and because a user text
//!   is valid for every provider wherever it lands.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::config::HistoryConfig;
use crate::message::{Content, Message, Part};

/// The `providerOptions` key a host pins a message or part with:
/// `providerOptions: { contextCompactor: { pin: true } }`.
pub const PROVIDER_OPTIONS_KEY: &str = "contextCompactor";

/// How the carried plan section starts (always the last section of a summary or notice).
pub(crate) const PLAN_MARKER: &str = "[Current plan, kept verbatim]";

fn pinned_by_options(extra: &Map<String, Value>) -> bool {
    extra
        .get("providerOptions")
        .and_then(|o| o.get(PROVIDER_OPTIONS_KEY))
        .and_then(|o| o.get("pin"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn part_extra(part: &Part) -> Option<&Map<String, Value>> {
    Some(match part {
        Part::Text(p) | Part::Reasoning(p) => &p.extra,
        Part::Image(p) => &p.extra,
        Part::File(p) => &p.extra,
        Part::ToolCall(p) => &p.extra,
        Part::ToolResult(p) => &p.extra,
        Part::ToolApprovalRequest(p) => &p.extra,
        Part::ToolApprovalResponse(p) => &p.extra,
        Part::Unknown(map) => map,
    })
}

/// Whether a part is pinned: its message or the part itself carries the pin, or it is a call
/// or result of a pinned tool.
pub(crate) fn part_pinned(message: &Message, part: Option<&Part>, config: &HistoryConfig) -> bool {
    if pinned_by_options(&message.extra) {
        return true;
    }
    let Some(part) = part else { return false };
    if part_extra(part).is_some_and(pinned_by_options) {
        return true;
    }
    let tool = match part {
        Part::ToolCall(c) => Some(&c.tool_name),
        Part::ToolResult(r) => Some(&r.tool_name),
        _ => None,
    };
    tool.is_some_and(|t| config.pinned_tools.contains(t))
}

/// Whether any part of a message (or the message) is pinned.
pub(crate) fn message_pinned(message: &Message, config: &HistoryConfig) -> bool {
    if pinned_by_options(&message.extra) {
        return true;
    }
    match &message.content {
        Content::Text(_) => false,
        Content::Parts(parts) => parts.iter().any(|p| part_pinned(message, Some(p), config)),
    }
}

/// Whether the store edit of part `part_index` of message `message_index` touches a pin.
pub(crate) fn edit_pinned(
    messages: &[Message],
    message_index: usize,
    part_index: usize,
    config: &HistoryConfig,
) -> bool {
    messages.get(message_index).is_some_and(|m| {
        let part = m.parts().get(part_index);
        part_pinned(m, part, config)
    })
}

/// Indices of every message in a group (between two cut points of `ok`, see
/// `lossy::boundaries`) that holds a pinned message.
pub(crate) fn pinned_groups(
    messages: &[Message],
    ok: &[bool],
    config: &HistoryConfig,
) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    let mut from = 0;
    for end in 1..=messages.len() {
        if !ok[end] {
            continue;
        }
        if messages[from..end]
            .iter()
            .any(|m| message_pinned(m, config))
        {
            out.extend(from..end);
        }
        from = end;
    }
    out
}

/// The groups (ranges between two cut points of `ok`) that hold one of `messages`, in order.
pub(crate) fn groups_of(ok: &[bool], messages: &BTreeSet<usize>) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for &m in messages {
        if out.last().is_some_and(|g| g.contains(&m)) {
            continue;
        }
        let from = (0..=m).rev().find(|&c| ok[c]).unwrap_or(0);
        let end = (m + 1..ok.len()).find(|&c| ok[c]).unwrap_or(ok.len() - 1);
        out.push(from..end);
    }
    out
}

/// The latest plan: the message that holds it and its section text (`PLAN_MARKER` first). A
/// plan tool call gives a new section; a summary or notice that carries one gives its section
/// as it is, so a plan carried once is carried byte for byte afterwards.
pub(crate) fn latest_plan(
    messages: &[Message],
    config: &HistoryConfig,
    is_marker: impl Fn(&Message) -> bool,
) -> Option<(usize, String)> {
    if config.plan_tools.is_empty() {
        return None;
    }
    for (i, message) in messages.iter().enumerate().rev() {
        if let Some(call) = message.parts().iter().rev().find_map(|p| match p {
            Part::ToolCall(c) if config.plan_tools.contains(&c.tool_name) => Some(c),
            _ => None,
        }) {
            return Some((
                i,
                format!(
                    "{PLAN_MARKER} the latest {} input:\n{}",
                    call.tool_name, call.input
                ),
            ));
        }
        if is_marker(message) {
            if let Some(section) = carried_section(&message.text()) {
                return Some((i, section.to_owned()));
            }
        }
    }
    None
}

/// The plan section a summary or notice carries (its last section).
pub(crate) fn carried_section(text: &str) -> Option<&str> {
    let at = text.rfind(&format!("\n\n{PLAN_MARKER}"))?;
    Some(&text[at + 2..])
}

/// `text` without its carried plan section.
pub(crate) fn without_section(text: &str) -> &str {
    match text.rfind(&format!("\n\n{PLAN_MARKER}")) {
        Some(at) => &text[..at],
        None => text,
    }
}
