//! Plans, actions, outcomes and events: the plain data that crosses between core and host.

use serde::{Deserialize, Serialize};

use crate::message::{Message, ToolOutput};
use crate::models::ModelInfo;

/// What the core wants done. Inspect it (dry run), log it, or hand it to a host to execute; then
/// give the outcomes to [`crate::Compactor::apply`].
#[must_use = "a plan does nothing until the host executes its actions and applies the outcomes"]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub model: ModelInfo,
    /// The context window the plan budgets against.
    pub window: u32,
    /// Tokens of the conversation as given.
    pub tokens_before: u32,
    /// Tokens predicted after every action succeeds.
    pub tokens_after: u32,
    /// Actions in execution order. Empty: nothing to do.
    pub actions: Vec<Action>,
    /// Why the plan is what it is (unknown model, over budget, ...).
    pub notes: Vec<Note>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// True when the predicted conversation fits the window.
    pub fn within_budget(&self) -> bool {
        self.tokens_after <= self.window
    }
}

/// One step for the host. Every action has an `id`; the host answers each with an [`Outcome`]
/// carrying the same id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Action {
    /// Tier 1. The host MUST write `content` to `path` in its store (overwriting is fine: the
    /// path is content-addressed) and answer `written` only once the write is durable. On
    /// `written`, apply replaces the tool result's output with `replacement`; on `failed` or no
    /// answer, the output stays as it was.
    Offload(Offload),
}

impl Action {
    pub fn id(&self) -> &str {
        match self {
            Action::Offload(a) => &a.id,
        }
    }

    /// The store writes this action needs, as `(path, content)`: a host executes every one of
    /// them and answers `written` only if all succeeded.
    pub fn writes(&self) -> Vec<(&str, &str)> {
        match self {
            Action::Offload(a) => vec![(a.path.as_str(), a.content.as_str())],
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Offload {
    pub id: String,
    pub message_index: usize,
    pub part_index: usize,
    pub tool_call_id: String,
    pub tool_name: String,
    /// Content-addressed store path, e.g. `/tool_outputs/search_1f2e3d4c5b6a7988.txt`.
    pub path: String,
    /// The full text to store, byte for byte what the model saw.
    pub content: String,
    /// The output that replaces the original once `content` is stored.
    pub replacement: ToolOutput,
    pub tokens_before: u32,
    pub tokens_after: u32,
}

/// What the host reports for one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum Outcome {
    /// The action's content is stored.
    Written { id: String },
    /// The host could not execute the action; `error` says why.
    Failed { id: String, error: String },
}

impl Outcome {
    pub fn id(&self) -> &str {
        match self {
            Outcome::Written { id } | Outcome::Failed { id, .. } => id,
        }
    }
}

/// A remark attached to a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", rename_all_fields = "camelCase")]
#[non_exhaustive]
pub enum Note {
    /// The model is not in the registry; a conservative window was assumed.
    UnknownModel { name: String, assumed_window: u32 },
    /// Even after every action the conversation stays over the window.
    OverBudget { tokens_after: u32, window: u32, reason: String },
}

/// Result of [`crate::Compactor::apply`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    pub messages: Vec<Message>,
    pub events: Vec<Event>,
    pub tokens_before: u32,
    pub tokens_after: u32,
}

/// What happened to one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub action_id: String,
    pub strategy: Strategy,
    pub status: EventStatus,
    pub message_index: usize,
    pub path: Option<String>,
    pub tokens_before: u32,
    pub tokens_after: u32,
    pub tokens_saved: u32,
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    Offload,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventStatus {
    /// Stored, and the conversation now points at the stored copy.
    Applied,
    /// The host reported a failure; the conversation is unchanged there.
    Failed,
    /// The host gave no outcome for this action; the conversation is unchanged there.
    NotExecuted,
}
