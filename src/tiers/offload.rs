//! Tier 1: offload large tool results to content-addressed store paths, leaving a preview and
//! directions for reading the rest.

use crate::config::OffloadConfig;
use crate::edit::{
    is_compacted, output_edit, path_for, preview, replacement, Tokens, OFFLOAD_MARKER,
    USER_TEXT_MARKER,
};
use crate::message::{Content, Message, Part, Role, ToolOutput};
use crate::plan::{Replace, StoreEdit};

/// Where the compactor writes in the store, and the input fields that name a file: a call of a
/// recovery tool's name ([`crate::recovery::TOOL_NAMES`]) reads the store when its path is there.
pub(crate) struct StoreAreas<'a> {
    /// The directories the compactor writes (offloads, user texts, transcripts).
    pub prefixes: [&'a str; 4],
    /// Input fields that name a file (`compaction.pathFields`).
    pub path_fields: &'a [String],
}

impl StoreAreas<'_> {
    /// Whether the call `input` of `tool`, named as a recovery tool, reads the store: its path
    /// (the recovery tools' `path`, or a field that names a file) is the root or in one of the
    /// compactor's directories; or, for `read_file`, it names none (an output offloaded as its
    /// tool returns, whose input is not known). Only a page of `read_file` could come back
    /// whole and be offloaded again; a `grep` or `ls` without a path may be the app's own over
    /// its disk, and the compactor's own are bounded by a page. A path elsewhere
    /// (`src/main.rs`) is the app's own tool of that name, reading its files.
    fn read_by(&self, tool: &str, input: Option<&serde_json::Value>) -> bool {
        let path = input.and_then(|i| {
            i.get("path")
                .and_then(serde_json::Value::as_str)
                .or_else(|| crate::tiers::file_argument(i, self.path_fields))
        });
        match path {
            None => tool == "read_file",
            Some(path) => {
                let dir = format!("{}/", path.trim_end_matches('/'));
                dir == "/" || self.prefixes.iter().any(|p| dir.starts_with(p))
            }
        }
    }
}

/// Finds every tool result over `threshold` and every user text over `user_threshold`; an
/// excluded tool's result only over `cap` (`offload.maxWindowFraction` of the window).
pub(crate) fn plan(
    messages: &[Message],
    config: &OffloadConfig,
    areas: &StoreAreas,
    (tool_threshold, cap, user_threshold): (u32, u32, u32),
    tokens: &dyn Tokens,
) -> Vec<StoreEdit> {
    let mut actions = Vec::new();
    // Each call's input by its id, for the results of tools named as the recovery tools.
    let inputs: std::collections::HashMap<&str, &serde_json::Value> = messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .flat_map(|m| m.parts())
        .filter_map(|p| match p {
            Part::ToolCall(c) if crate::recovery::TOOL_NAMES.contains(&c.tool_name.as_str()) => {
                Some((c.tool_call_id.as_str(), &c.input))
            }
            _ => None,
        })
        .collect();
    for (message_index, message) in messages.iter().enumerate() {
        if message.role == Role::User && user_threshold > 0 {
            actions.extend(user_texts(
                message_index,
                message,
                config,
                user_threshold,
                tokens,
            ));
            continue;
        }
        if message.role != Role::Tool {
            continue;
        }
        for (part_index, part) in message.parts().iter().enumerate() {
            let Part::ToolResult(result) = part else {
                continue;
            };
            // An excluded tool's result stays while it is within `offload.maxWindowFraction` of
            // the window (`cap`): an app's `read_file` is a paged reader of the file the agent
            // works on, kept whole while it cannot fill the window. A recovery tool's read of
            // the store stays whatever its size (a page of it offloaded would be read, and
            // offloaded, again).
            let threshold = if config.excluded_tools.iter().any(|t| t == &result.tool_name) {
                if crate::recovery::TOOL_NAMES.contains(&result.tool_name.as_str())
                    && areas.read_by(
                        &result.tool_name,
                        inputs.get(result.tool_call_id.as_str()).copied(),
                    )
                {
                    continue;
                }
                cap
            } else {
                tool_threshold
            };
            if matches!(
                result.output,
                ToolOutput::ExecutionDenied { .. } | ToolOutput::Unknown(_)
            ) {
                continue;
            }
            let before = tokens.output_at((message_index, part_index), &result.output);
            if before <= threshold {
                continue;
            }
            let content = result.output.text();
            if is_compacted(&content) {
                continue; // already a pointer to the store: offloading it again would loop
            }
            let path = path_for(
                &config.path_prefix,
                &result.tool_name,
                &content,
                result.output.is_json(),
            );
            // The preview must itself stay well under the threshold (small windows, wide lines),
            // or the next plan would offload the preview: halve it until it fits in half.
            let shown = tokens.shown_output_at((message_index, part_index), &result.output);
            let replacement = fitted_preview(config, threshold, |shape| {
                let candidate = replacement(
                    &result.output,
                    &preview(OFFLOAD_MARKER, &content, shown, &path, shape),
                );
                (tokens.output(&candidate), candidate)
            });
            let edit = output_edit(
                "offload",
                (message_index, part_index),
                result,
                path,
                content,
                replacement,
                tokens,
            );
            if edit.tokens_after < edit.tokens_before {
                actions.push(edit);
            }
        }
    }
    actions
}

/// The preview, halved until it takes at most half the threshold (small windows, wide lines),
/// or the next plan would offload the preview. `render` gives a candidate and its tokens.
fn fitted_preview<T>(
    config: &OffloadConfig,
    threshold: u32,
    mut render: impl FnMut(&OffloadConfig) -> (u32, T),
) -> T {
    let mut shape = config.clone();
    loop {
        let (tokens, candidate) = render(&shape);
        if tokens <= threshold / 2
            || (shape.preview_head_lines == 0 && shape.preview_tail_lines == 0)
        {
            return candidate;
        }
        shape.preview_head_lines /= 2;
        shape.preview_tail_lines /= 2;
        shape.preview_line_chars = (shape.preview_line_chars / 2).max(40);
    }
}

/// A user message's texts over the threshold: a pasted log or file goes to the store, its
/// preview and path stay.
fn user_texts(
    message_index: usize,
    message: &Message,
    config: &OffloadConfig,
    threshold: u32,
    tokens: &dyn Tokens,
) -> Vec<StoreEdit> {
    // (part index, the text, the file name when the text is a text file's)
    let texts: Vec<(usize, std::borrow::Cow<str>, Option<&str>)> = match &message.content {
        Content::Text(text) => vec![(0, text.as_str().into(), None)],
        Content::Parts(parts) => parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Part::Text(t) => Some((i, t.text.as_str().into(), None)),
                Part::File(f) => f.text().map(|text| {
                    (
                        i,
                        text.into(),
                        Some(f.filename.as_deref().unwrap_or("file")),
                    )
                }),
                _ => None,
            })
            .collect(),
    };
    let mut out = Vec::new();
    for (part_index, text, file) in texts {
        let text = text.as_ref();
        // A token is at least one byte: a shorter text cannot be over (and is not counted). Our
        // own summaries and notices are never offloaded: they are what replaced the history.
        if text.len() <= threshold as usize
            || is_compacted(text)
            || text.starts_with(crate::tiers::lossy::SUMMARY_MARKER)
            || text.starts_with(crate::tiers::lossy::NOTICE_MARKER)
        {
            continue;
        }
        let before = tokens.text(text);
        if before <= threshold {
            continue;
        }
        let name = file.map_or_else(|| "user_message".to_owned(), |f| format!("user_file_{f}"));
        let path = path_for(&config.user_path_prefix, &name, text, false);
        let shown = tokens.shown_text(text);
        let value = fitted_preview(config, threshold, |shape| {
            let p = preview(USER_TEXT_MARKER, text, shown, &path, shape);
            (tokens.text(&p), p)
        });
        let after = tokens.text(&value);
        if after >= before {
            continue;
        }
        out.push(StoreEdit {
            id: format!("offload-{message_index}-{part_index}"),
            message_index,
            part_index,
            tool_call_id: String::new(),
            tool_name: String::new(),
            path,
            content: text.to_owned(),
            replace: match file {
                Some(_) => Replace::FileText { value },
                None => Replace::Text { value },
            },
            tokens_before: before,
            tokens_after: after,
        });
    }
    out
}
