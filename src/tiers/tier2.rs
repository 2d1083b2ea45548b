//! Tier 2: reversible edits once the window fills up. Every candidate stores what it removes
//! first (a [`StoreEdit`]), so the agent can read it back:
//! - input eviction: the file-content argument of a write/edit call becomes a pointer and a
//!   100-character preview (the file itself holds the content; the store keeps a copy);
//! - dedupe: an older read of a file that is read again later becomes `[Previously read: …]`;
//! - masking: tool results older than the last K become a placeholder naming their stored copy.
//!
//! Candidates come oldest first within each kind; the compactor takes them until the target is
//! met.

use hashbrown::{HashMap, HashSet};

use serde_json::Value;

use crate::config::CompactionConfig;
use crate::edit::{
    is_compacted, output_edit, path_for, Tokens, DEDUPE_MARKER, EVICT_MARKER, MASK_MARKER,
};
use crate::memo::Memo;
use crate::message::{Message, Part, Role, ToolOutput, ToolResult};
use crate::plan::{Action, Replace, StoreEdit};

/// Parts (message, part) an earlier tier already edits.
pub(crate) type Taken = HashSet<(usize, usize)>;

/// All tier-2 candidates in preference order: evictions, then dedupes, then masks.
pub(crate) fn candidates(
    messages: &[Message],
    config: &CompactionConfig,
    window: u32,
    tokens: &dyn Tokens,
    taken: &mut Taken,
    memo: &Memo,
) -> Vec<Action> {
    let mut out = evictions(messages, config, tokens);
    out.extend(dedupes(messages, config, tokens, taken));
    let keep_budget = if config.keep_tool_results_fraction >= 1.0 {
        u32::MAX
    } else {
        (f64::from(window) * config.keep_tool_results_fraction) as u32
    };
    out.extend(masks(messages, config, keep_budget, tokens, taken, memo));
    out.retain(|a| {
        let (before, after) = a.tokens();
        before.saturating_sub(after) >= config.min_saving_tokens.max(1)
    });
    out
}

fn evictions(messages: &[Message], config: &CompactionConfig, tokens: &dyn Tokens) -> Vec<Action> {
    let mut out = Vec::new();
    // A call with no result yet may still be executing from these very messages: leave it.
    let answered: HashSet<&str> = messages
        .iter()
        .flat_map(|m| m.parts())
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some(r.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    for (message_index, message) in messages.iter().enumerate() {
        if message.role != Role::Assistant {
            continue;
        }
        for (part_index, part) in message.parts().iter().enumerate() {
            let Part::ToolCall(call) = part else { continue };
            if !config.evict_input_tools.contains(&call.tool_name)
                || !answered.contains(call.tool_call_id.as_str())
            {
                continue;
            }
            let file = crate::tiers::file_argument(&call.input, &config.path_fields)
                .unwrap_or("(unknown path)");
            for field in &config.evict_input_fields {
                let Some(Value::String(content)) = crate::tiers::input_field(&call.input, field)
                else {
                    continue;
                };
                if is_compacted(content) {
                    continue; // already evicted
                }
                let path = path_for(
                    &config.path_prefix,
                    &format!("{}_{field}", call.tool_name),
                    content,
                    false,
                );
                let value = format!(
                    "{EVICT_MARKER}{file} ({} tokens); copy stored at {path}. Preview: {}…]",
                    tokens.shown_text(content),
                    preview_chars(content, config.input_preview_chars)
                );
                // A call is counted as its input's JSON (escaped newlines and quotes tokenize
                // differently from the raw text), so the saving is measured on that.
                let mut evicted = call.input.clone();
                evicted[field.as_str()] = Value::String(value.clone());
                let before = tokens.json_at((message_index, part_index), &call.input);
                let after = tokens.json(&evicted);
                out.push(Action::EvictInput(StoreEdit {
                    id: format!("evict-input-{message_index}-{part_index}-{field}"),
                    message_index,
                    part_index,
                    tool_call_id: call.tool_call_id.clone(),
                    tool_name: call.tool_name.clone(),
                    path,
                    content: content.clone(),
                    replace: Replace::InputField {
                        field: field.clone(),
                        value,
                    },
                    tokens_before: before,
                    tokens_after: after,
                }));
            }
        }
    }
    out
}

fn dedupes(
    messages: &[Message],
    config: &CompactionConfig,
    tokens: &dyn Tokens,
    taken: &mut Taken,
) -> Vec<Action> {
    // Which file each read call read.
    let mut file_of: HashMap<&str, &str> = HashMap::new();
    for message in messages {
        for part in message.parts() {
            if let Part::ToolCall(call) = part {
                if config.read_tools.contains(&call.tool_name) {
                    if let Some(file) =
                        crate::tiers::file_argument(&call.input, &config.path_fields)
                    {
                        file_of.insert(&call.tool_call_id, file);
                    }
                }
            }
        }
    }
    // Every read result, in order, grouped by file; all but the last of a group are stale.
    let mut reads: Vec<(usize, usize, &str)> = Vec::new();
    for (message_index, message) in messages.iter().enumerate() {
        for (part_index, part) in message.parts().iter().enumerate() {
            if let Part::ToolResult(result) = part {
                if let Some(file) = file_of.get(result.tool_call_id.as_str()) {
                    reads.push((message_index, part_index, file));
                }
            }
        }
    }
    let mut last_read: HashMap<&str, (usize, usize)> = HashMap::new();
    for &(m, p, file) in &reads {
        last_read.insert(file, (m, p));
    }
    let mut out = Vec::new();
    for &(m, p, file) in &reads {
        if last_read[file] == (m, p) || taken.contains(&(m, p)) {
            continue;
        }
        let Part::ToolResult(result) = &messages[m].parts()[p] else {
            continue;
        };
        if !matches!(
            result.output,
            ToolOutput::Text { .. } | ToolOutput::Json { .. }
        ) {
            continue; // errors and denials are not file contents
        }
        let content = result.output.text();
        if is_compacted(&content) {
            continue; // already a pointer (e.g. offloaded by tier 1 in an earlier plan)
        }
        let path = path_for(
            &config.path_prefix,
            &result.tool_name,
            &content,
            result.output.is_json(),
        );
        let output = ToolOutput::Text {
            value: format!("{DEDUPE_MARKER}{file}. A later read of the same file follows; this earlier copy is stored at {path}]"),
            extra: Default::default(),
        };
        taken.insert((m, p));
        out.push(Action::Dedupe(output_edit(
            "dedupe",
            (m, p),
            result,
            path,
            content,
            output,
            tokens,
        )));
    }
    out
}

fn masks(
    messages: &[Message],
    config: &CompactionConfig,
    keep_budget: u32,
    tokens: &dyn Tokens,
    taken: &mut Taken,
    memo: &Memo,
) -> Vec<Action> {
    let results: Vec<(usize, usize)> = messages
        .iter()
        .enumerate()
        .flat_map(|(m, message)| {
            message
                .parts()
                .iter()
                .enumerate()
                .filter_map(move |(p, part)| matches!(part, Part::ToolResult(_)).then_some((m, p)))
        })
        .collect();
    let mut older = results.len().saturating_sub(config.keep_tool_results);
    // Of the last K, keep (newest first) only what fits the budget; the newest always stays.
    let mut kept = 0u32;
    for i in (older..results.len()).rev() {
        let (m, p) = results[i];
        let Part::ToolResult(result) = &messages[m].parts()[p] else {
            continue;
        };
        // A result an earlier tier edits now, or that already points at the store, is a small
        // preview: it does not count (and a re-plan of the compacted conversation draws the
        // same line, or one further back: planning stays idempotent).
        if taken.contains(&(m, p)) || is_compacted(&result.output.text()) {
            continue;
        }
        kept = kept.saturating_add(tokens.output_at((m, p), &result.output));
        if kept > keep_budget && i + 1 < results.len() {
            older = i + 1;
            break;
        }
    }
    let mut out = Vec::new();
    for &(m, p) in &results[..older] {
        if taken.contains(&(m, p)) {
            continue;
        }
        let Part::ToolResult(result) = &messages[m].parts()[p] else {
            continue;
        };
        if matches!(
            result.output,
            ToolOutput::ExecutionDenied { .. } | ToolOutput::Unknown(_)
        ) {
            continue;
        }
        // The same part gets the same mask at every plan of a held conversation; one saving
        // under the minimum is left out here (as `candidates` would) without being copied.
        let Some(edit) = memo.mask(
            (m, p),
            || mask(config, (m, p), result, tokens),
            |e| e.tokens_before.saturating_sub(e.tokens_after) >= config.min_saving_tokens.max(1),
        ) else {
            continue;
        };
        taken.insert((m, p));
        out.extend(edit.map(Action::Mask));
    }
    out
}

/// The mask of one tool result, or `None` when it already points at the store.
fn mask(
    config: &CompactionConfig,
    (m, p): (usize, usize),
    result: &ToolResult,
    tokens: &dyn Tokens,
) -> Option<StoreEdit> {
    let content = result.output.text();
    if is_compacted(&content) {
        return None;
    }
    let shown = tokens.shown_output_at((m, p), &result.output);
    let path = path_for(
        &config.path_prefix,
        &result.tool_name,
        &content,
        result.output.is_json(),
    );
    let text = format!(
        "{MASK_MARKER} to save context ({shown} tokens). Stored at {path}; read it with read_file(path=\"{path}\", offset, limit).]"
    );
    // An error stays an error (as text), other outputs keep their shape.
    let output = crate::edit::replacement(&result.output, &text);
    Some(output_edit(
        "mask",
        (m, p),
        result,
        path,
        content,
        output,
        tokens,
    ))
}

fn preview_chars(text: &str, n: usize) -> &str {
    match text.char_indices().nth(n) {
        Some((cut, _)) => &text[..cut],
        None => text,
    }
}
