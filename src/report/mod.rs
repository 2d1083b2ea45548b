//! Session reports: what compaction did to a conversation, model call by model call, as one
//! self-contained HTML page with an SVG chart (tokens before and after compaction per call, the
//! window and the thresholds, each compaction event by kind, prefix breaks, and what went where
//! in the store).
//!
//! Sans-IO like the rest of the crate: [`replay`] drives a [`Compactor`](crate::Compactor) over a
//! recorded session against an in-memory store and returns a [`Report`] (plain data);
//! [`render_html`] turns a report into a string. The CLI (`context-compactor report`) uses both;
//! the npm package renders the report its recorder collects with the same [`render_html`],
//! through the wasm binding, so the page is the same whichever host made it.
//!
//! ```
//! use context_compactor::{parse_messages, report, Compactor, Config};
//!
//! let big: String = (0..6_000).map(|i| format!("line {i}\n")).collect();
//! let session = serde_json::json!([
//!     {"role": "user", "content": "look it up"},
//!     {"role": "assistant", "content": [
//!         {"type": "tool-call", "toolCallId": "c1", "toolName": "search", "input": {}}]},
//!     {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1",
//!         "toolName": "search", "output": {"type": "text", "value": big}}]},
//!     {"role": "assistant", "content": "found it"},
//! ]);
//! let messages = parse_messages(&session.to_string())?;
//! let mut compactor = Compactor::new(Config {
//!     model: Some("gpt-4o".into()),
//!     context_window: Some(16_000),
//!     ..Config::default()
//! })?;
//! let data = report::replay(&mut compactor, &messages)?;
//! assert_eq!(data.calls.len(), 2); // one per assistant message
//! assert!(data.calls[1].tokens_before > 16_000 && data.calls[1].tokens_after < 16_000);
//! assert_eq!(data.store.len(), 1); // the offloaded search result
//! let html = report::render_html(&data);
//! assert!(html.starts_with("<!doctype html>") && html.contains("<svg"));
//! # Ok::<(), context_compactor::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::plan::{Event, EventStatus, Strategy, Trigger};

pub(crate) mod html;
mod replay;

pub use html::{render_chart, render_html, thousands};
pub use replay::{replay, replay_as, replay_with, Host};

/// Everything a session report shows, as plain data (camelCase JSON: the npm package's
/// `ReportData`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Report {
    /// The page's heading (e.g. the session file's name).
    pub title: String,
    /// The model name as configured.
    pub model: String,
    /// The encoding the store table's token counts are in (`o200k_base`, `cl100k_base`).
    pub encoding: String,
    /// The context window the compactor budgets against.
    pub window: u32,
    /// Where the tiers fire.
    pub thresholds: Thresholds,
    /// One entry per model call, in order.
    pub calls: Vec<Call>,
    /// Every file compaction wrote, in the order written.
    pub store: Vec<StoredFile>,
    /// Remarks shown under the heading (e.g. "summaries are the heuristic fallback").
    pub notes: Vec<String>,
}

/// The compactor's thresholds in tokens (a plan's [`Trigger`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Thresholds {
    /// Tier 2 fires above this (85 % of the window by default).
    pub compact_at: u32,
    /// Tier 2 compacts down to this (70 %).
    pub target: u32,
    /// The lossy tier (summarize, truncate) fires above this (95 %).
    pub summarize_at: u32,
}

impl From<&Trigger> for Thresholds {
    fn from(trigger: &Trigger) -> Self {
        Self {
            compact_at: trigger.compact_at,
            target: trigger.target,
            summarize_at: trigger.summarize_at,
        }
    }
}

/// One model call: the prompt as the host had it before compaction, and as it was sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Call {
    /// 1-based call number.
    pub call: u32,
    /// Messages of the recorded session seen before this call (its position in the session).
    pub messages: usize,
    /// Tokens of the conversation handed to the compactor for this call.
    pub tokens_before: u32,
    /// Tokens of the prompt sent (after compaction).
    pub tokens_after: u32,
    /// The prompt does not start with the previous call's prompt: the provider's prompt cache
    /// is invalidated from the first changed message on.
    pub prefix_break: bool,
    /// What compaction did before this call.
    pub events: Vec<CallEvent>,
}

/// One compaction event, as the report shows it: the fields of an [`Event`] it needs (the JS
/// host's `CompactionEvent` objects can be passed as they are; other fields are ignored).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallEvent {
    /// What the action did (`offload`, `mask`, `summarize`, ...).
    pub strategy: Strategy,
    /// Whether it changed the conversation (`applied`, `fallback`) or not.
    pub status: EventStatus,
    /// The first message the action changed, in the prompt as it was before compaction.
    #[serde(default)]
    pub message_index: usize,
    /// The file it wrote (the JSON transcript, for `transcript`).
    #[serde(default)]
    pub path: Option<String>,
    /// Tokens of what it replaced.
    #[serde(default)]
    pub tokens_before: u32,
    /// Tokens of the replacement.
    #[serde(default)]
    pub tokens_after: u32,
    /// `tokens_before - tokens_after` when it changed the conversation, else 0.
    #[serde(default)]
    pub tokens_saved: u32,
    /// Why it failed, or why a summary is the heuristic one.
    #[serde(default)]
    pub error: Option<String>,
}

impl From<&Event> for CallEvent {
    fn from(event: &Event) -> Self {
        Self {
            strategy: event.strategy,
            status: event.status,
            message_index: event.message_index,
            path: event.path.clone(),
            tokens_before: event.tokens_before,
            tokens_after: event.tokens_after,
            tokens_saved: event.tokens_saved,
            error: event.error.clone(),
        }
    }
}

/// A file compaction wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredFile {
    /// Where it is in the store.
    pub path: String,
    /// The action that wrote it (`transcript` for a saved conversation).
    pub strategy: Strategy,
    /// The call before which it was written.
    pub call: u32,
    /// Exact tokens of the content in [`Report::encoding`].
    pub tokens: u32,
    /// Characters (Unicode scalar values) of the content.
    pub chars: u64,
}
