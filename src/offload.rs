//! Tier 1: offload large tool results to content-addressed store paths, leaving a preview and
//! directions for reading the rest.

use crate::config::OffloadConfig;
use crate::edit::{is_compacted, output_edit, path_for, preview, replacement, Tokens};
use crate::message::{Message, Part, Role, ToolOutput};
use crate::plan::StoreEdit;

/// Finds every tool result over the threshold.
pub(crate) fn plan(
    messages: &[Message],
    config: &OffloadConfig,
    threshold: u32,
    tokens: &dyn Tokens,
) -> Vec<StoreEdit> {
    let mut actions = Vec::new();
    for (message_index, message) in messages.iter().enumerate() {
        if message.role != Role::Tool {
            continue;
        }
        for (part_index, part) in message.parts().iter().enumerate() {
            let Part::ToolResult(result) = part else {
                continue;
            };
            if config.excluded_tools.iter().any(|t| t == &result.tool_name) {
                continue;
            }
            if matches!(
                result.output,
                ToolOutput::ExecutionDenied { .. } | ToolOutput::Unknown(_)
            ) {
                continue;
            }
            let before = tokens.output(&result.output);
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
            let mut shape = config.clone();
            let replacement = loop {
                let shown = tokens.shown_output(&result.output);
                let candidate =
                    replacement(&result.output, &preview(&content, shown, &path, &shape));
                let fits = tokens.output(&candidate) <= threshold / 2;
                if fits || (shape.preview_head_lines == 0 && shape.preview_tail_lines == 0) {
                    break candidate;
                }
                shape.preview_head_lines /= 2;
                shape.preview_tail_lines /= 2;
                shape.preview_line_chars = (shape.preview_line_chars / 2).max(40);
            };
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
