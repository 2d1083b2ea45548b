//! The store-then-replace edit shared by every reversible action: apply (with the check that the
//! conversation still holds what the plan stored), content-addressed paths, and previews.

use serde_json::Value;

use crate::config::OffloadConfig;
use crate::error::{Error, Result};
use crate::hash::push_short_hex;
use crate::message::{Content, Message, Part, ToolOutput, ToolResult};
use crate::plan::{Replace, StoreEdit};

/// Token counts the planners need, scaled for the model.
pub(crate) trait Tokens {
    fn text(&self, text: &str) -> u32;
    fn output(&self, output: &ToolOutput) -> u32;
    /// A JSON value as it is counted inside a tool call.
    fn json(&self, value: &Value) -> u32;
    /// The count a replacement text shows (`… (1,236 tokens)`): scaled by the model family's
    /// fixed ratio, never by calibration, so a rendering depends on its content alone and never
    /// changes once sent (a changed byte would break the provider's cached prefix).
    fn shown_text(&self, text: &str) -> u32;
    /// [`Tokens::shown_text`] for a tool output.
    fn shown_output(&self, output: &ToolOutput) -> u32;
    /// [`Tokens::output`] of the tool result at (message, part) of the planned messages (a
    /// plan has it counted already).
    fn output_at(&self, _at: (usize, usize), output: &ToolOutput) -> u32 {
        self.output(output)
    }
    /// [`Tokens::shown_output`] of the tool result at (message, part).
    fn shown_output_at(&self, _at: (usize, usize), output: &ToolOutput) -> u32 {
        self.shown_output(output)
    }
    /// [`Tokens::json`] of the input of the tool call at (message, part).
    fn json_at(&self, _at: (usize, usize), value: &Value) -> u32 {
        self.json(value)
    }
}

/// The edit that stores a tool result's content and replaces its whole output.
pub(crate) fn output_edit(
    kind: &str,
    (message_index, part_index): (usize, usize),
    result: &ToolResult,
    path: String,
    content: String,
    output: ToolOutput,
    tokens: &dyn Tokens,
) -> StoreEdit {
    StoreEdit {
        id: format!("{kind}-{message_index}-{part_index}"),
        message_index,
        part_index,
        tool_call_id: result.tool_call_id.clone(),
        tool_name: result.tool_name.clone(),
        path,
        content,
        tokens_before: tokens.output_at((message_index, part_index), &result.output),
        tokens_after: tokens.output(&output),
        replace: Replace::Output { output },
    }
}

/// How each kind of replacement text starts. A part that already starts with one of these
/// points at the store; planning it again would only store the pointer.
pub(crate) const OFFLOAD_MARKER: &str = "[Tool output offloaded: ";
pub(crate) const MASK_MARKER: &str = "[Older tool result cleared";
pub(crate) const DEDUPE_MARKER: &str = "[Previously read: ";
pub(crate) const EVICT_MARKER: &str = "[Content written to ";
/// A user message's long text, offloaded.
pub(crate) const USER_TEXT_MARKER: &str = "[Long message text stored: ";

/// True when `text` is a replacement this crate wrote.
pub(crate) fn is_compacted(text: &str) -> bool {
    [
        OFFLOAD_MARKER,
        MASK_MARKER,
        DEDUPE_MARKER,
        EVICT_MARKER,
        USER_TEXT_MARKER,
    ]
    .iter()
    .any(|m| text.starts_with(m))
}

/// Makes the planned replacement, after checking that the part still holds exactly the content
/// the host stored.
pub(crate) fn apply(messages: &mut [Message], edit: &StoreEdit) -> Result<()> {
    let mismatch = |what: &str| Error::PlanMismatch {
        action_id: Some(edit.id.clone()),
        message: format!(
            "message {} part {}: {what} (was the conversation changed between plan and apply?)",
            edit.message_index, edit.part_index
        ),
    };
    let message = messages
        .get_mut(edit.message_index)
        .ok_or_else(|| mismatch("no such message"))?;
    if let (Replace::Text { value }, Content::Text(text)) = (&edit.replace, &mut message.content) {
        if *text != edit.content {
            return Err(mismatch("the text differs from the stored content"));
        }
        *text = value.clone();
        return Ok(());
    }
    let Content::Parts(parts) = &mut message.content else {
        return Err(mismatch("not a message with parts"));
    };
    let part = parts
        .make_mut()
        .get_mut(edit.part_index)
        .ok_or_else(|| mismatch("no such part"))?;
    if let Replace::FileText { value } = &edit.replace {
        let Part::File(file) = &*part else {
            return Err(mismatch("not a file part"));
        };
        if file.text().as_deref() != Some(edit.content.as_str()) {
            return Err(mismatch("the file's text differs from the stored content"));
        }
        *part = file_text_part(value);
        return Ok(());
    }
    match (&edit.replace, part) {
        (Replace::Output { output }, Part::ToolResult(result)) => {
            if result.tool_call_id != edit.tool_call_id {
                return Err(mismatch("toolCallId differs"));
            }
            if result.output.text() != edit.content {
                return Err(mismatch("the tool output differs from the stored content"));
            }
            result.output = output.clone();
        }
        (Replace::InputField { field, value }, Part::ToolCall(call)) => {
            if call.tool_call_id != edit.tool_call_id {
                return Err(mismatch("toolCallId differs"));
            }
            let slot = call
                .input
                .get_mut(field.as_str())
                .ok_or_else(|| mismatch("the input field is gone"))?;
            if slot.as_str() != Some(edit.content.as_str()) {
                return Err(mismatch("the input field differs from the stored content"));
            }
            *slot = Value::String(value.clone());
        }
        (Replace::Text { value }, Part::Text(part)) => {
            if part.text != edit.content {
                return Err(mismatch("the text differs from the stored content"));
            }
            part.text = value.clone();
        }
        _ => return Err(mismatch("the part is not the kind the plan edits")),
    }
    Ok(())
}

/// The text part that takes an offloaded text file's place.
pub(crate) fn file_text_part(value: &str) -> Part {
    Part::Text(crate::message::TextPart {
        text: value.to_owned(),
        extra: Default::default(),
    })
}

/// `{prefix}{tool}_{hash}.{txt|json}`: the same content always lands on the same path.
pub(crate) fn path_for(prefix: &str, tool: &str, content: &str, json: bool) -> String {
    // Built by hand: tier 2 names every candidate at every plan, and `format!` was most of it.
    let mut path = String::with_capacity(prefix.len() + tool.len().min(64) + 22);
    path.push_str(prefix);
    let start = path.len();
    path.extend(tool.chars().take(64).map(|c| {
        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
            c
        } else {
            '_'
        }
    }));
    if path.len() == start {
        path.push_str("tool");
    }
    path.push('_');
    push_short_hex(&mut path, content.as_bytes());
    path.push_str(if json { ".json" } else { ".txt" });
    path
}

/// The text the model sees in place of the offloaded content; `marker` says what it was
/// ([`OFFLOAD_MARKER`] for a tool output, [`USER_TEXT_MARKER`] for a user's text).
pub(crate) fn preview(
    marker: &str,
    content: &str,
    tokens: u32,
    path: &str,
    config: &OffloadConfig,
) -> String {
    let lines: Vec<&str> = content.lines().collect();
    let mut out = format!(
        "{marker}{tokens} tokens, {} lines, {} bytes. Full content: {path}]\n\
         Read it with read_file(path=\"{path}\", offset, limit) or search it with grep(pattern, path=\"{path}\").\n",
        lines.len(),
        content.len()
    );
    let head = config.preview_head_lines.min(lines.len());
    let tail = config.preview_tail_lines.min(lines.len() - head);
    out.push_str(&format!("--- first {head} lines ---\n"));
    for line in &lines[..head] {
        push_line(&mut out, line, config.preview_line_chars);
    }
    let omitted = lines.len() - head - tail;
    if tail > 0 {
        if omitted > 0 {
            out.push_str(&format!(
                "--- {omitted} lines omitted; last {tail} lines ---\n"
            ));
        } else {
            out.push_str(&format!("--- last {tail} lines ---\n"));
        }
        for line in &lines[lines.len() - tail..] {
            push_line(&mut out, line, config.preview_line_chars);
        }
    }
    out.pop(); // the final newline
    out
}

fn push_line(out: &mut String, line: &str, max_chars: usize) {
    match line.char_indices().nth(max_chars) {
        Some((cut, _)) => {
            let rest = line[cut..].chars().count();
            out.push_str(&line[..cut]);
            out.push_str(&format!(" …[+{rest} chars]\n"));
        }
        None => {
            out.push_str(line);
            out.push('\n');
        }
    }
}

/// Keeps the output's kind: errors stay errors, `content` keeps its non-text items (images).
pub(crate) fn replacement(output: &ToolOutput, preview: &str) -> ToolOutput {
    match output {
        ToolOutput::ErrorText { extra, .. } | ToolOutput::ErrorJson { extra, .. } => {
            ToolOutput::ErrorText {
                value: preview.to_owned(),
                extra: extra.clone(),
            }
        }
        ToolOutput::Content { value, extra } => {
            let mut items = vec![serde_json::json!({"type": "text", "text": preview})];
            items.extend(
                value
                    .iter()
                    .filter(|item| item.get("type").and_then(Value::as_str) != Some("text"))
                    .cloned(),
            );
            ToolOutput::Content {
                value: items,
                extra: extra.clone(),
            }
        }
        ToolOutput::Text { extra, .. } | ToolOutput::Json { extra, .. } => ToolOutput::Text {
            value: preview.to_owned(),
            extra: extra.clone(),
        },
        ToolOutput::ExecutionDenied { .. } | ToolOutput::Unknown(_) => output.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_keeps_head_and_tail_and_cuts_long_lines() {
        let config = OffloadConfig::default();
        let content: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let p = preview(
            OFFLOAD_MARKER,
            &content,
            999,
            "/tool_outputs/x.txt",
            &config,
        );
        assert!(p.contains("line 0\n") && p.contains("line 9\n") && !p.contains("line 10\n"));
        assert!(p.contains("87 lines omitted") && p.ends_with("line 99"));
        let long = "x".repeat(10_000);
        let p = preview(OFFLOAD_MARKER, &long, 2_000, "/p", &config);
        assert!(p.contains(" …[+9800 chars]") && p.len() < 600, "{p}");
    }

    #[test]
    fn paths_are_content_addressed_and_safe() {
        let c = OffloadConfig::default();
        let c = &c.path_prefix;
        assert_eq!(
            path_for(c, "web search", "abc", false),
            path_for(c, "web search", "abc", false)
        );
        assert_ne!(
            path_for(c, "s", "abc", false),
            path_for(c, "s", "abd", false)
        );
        let p = path_for(c, "../../etc/passwd", "abc", true);
        assert!(
            p.starts_with("/tool_outputs/______etc_passwd_") && p.ends_with(".json"),
            "{p}"
        );
    }
}
