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
    /// Which tiers ran and why.
    pub trigger: Trigger,
    /// The prompt-cache cost of this plan.
    pub cache: CacheImpact,
}

/// What set the plan off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trigger {
    /// Tier 2 fires above this many tokens (85 % of the window by default).
    pub compact_at: u32,
    /// Tier 2 compacts down to this many tokens (hysteresis).
    pub target: u32,
    /// Whether tier 2 ran (over `compact_at` after tier 1, or a manual compaction).
    pub tier2: bool,
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
/// carrying the same id. Every action of this version is a [`StoreEdit`]: the host MUST write
/// `content` to `path` in its store (overwriting is fine: paths are content-addressed) and
/// answer `written` only once the write is durable. On `written`, apply makes the replacement;
/// on `failed` or no answer, that part of the conversation stays as it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Action {
    /// Tier 1: a tool result over the offload threshold → preview + path.
    Offload(StoreEdit),
    /// Tier 2: a large file-content argument of a write/edit tool call → pointer + 100-character
    /// preview.
    EvictInput(StoreEdit),
    /// Tier 2: an older read of a file that is read again later → `[Previously read: path]`.
    Dedupe(StoreEdit),
    /// Tier 2: a tool result older than the last K → a placeholder pointing at its stored copy.
    Mask(StoreEdit),
}

impl Action {
    pub fn id(&self) -> &str {
        &self.edit().id
    }

    /// The store writes this action needs, as `(path, content)`: a host executes every one of
    /// them and answers `written` only if all succeeded.
    pub fn writes(&self) -> Vec<(&str, &str)> {
        let edit = self.edit();
        vec![(edit.path.as_str(), edit.content.as_str())]
    }

    pub fn strategy(&self) -> Strategy {
        match self {
            Action::Offload(_) => Strategy::Offload,
            Action::EvictInput(_) => Strategy::EvictInput,
            Action::Dedupe(_) => Strategy::Dedupe,
            Action::Mask(_) => Strategy::Mask,
        }
    }

    /// The store-then-replace edit every current action is.
    pub fn edit(&self) -> &StoreEdit {
        match self {
            Action::Offload(e) | Action::EvictInput(e) | Action::Dedupe(e) | Action::Mask(e) => e,
        }
    }
}

/// Store `content` at `path`, then replace one piece of one tool part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreEdit {
    pub id: String,
    pub message_index: usize,
    pub part_index: usize,
    pub tool_call_id: String,
    pub tool_name: String,
    /// Content-addressed store path, e.g. `/tool_outputs/search_1f2e3d4c5b6a7988.txt`.
    pub path: String,
    /// The full text to store, byte for byte what the model saw.
    pub content: String,
    /// What replaces it once stored.
    pub replace: Replace,
    pub tokens_before: u32,
    pub tokens_after: u32,
}

/// The Tier-1 action's payload (kept as a name for readers of older plans).
pub type Offload = StoreEdit;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Replace {
    /// The tool result's whole `output` becomes `output`.
    Output { output: ToolOutput },
    /// The string field `field` of the tool call's `input` becomes `value`.
    InputField { field: String, value: String },
}

/// How a plan changes messages already sent, which invalidates a provider's prompt cache from
/// the first changed message on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheImpact {
    /// Actions that change a message before the last one.
    pub prefix_changing_edits: u32,
    /// The first message the plan changes (`None`: the cached prefix survives).
    pub first_changed_message: Option<usize>,
    /// Tokens from that message to the end, before the plan: what the next call re-reads
    /// uncached.
    pub tokens_invalidated: u32,
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
    /// Tier 2 ran but could not reach its target.
    TargetNotMet { tokens_after: u32, target: u32, reason: String },
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
    EvictInput,
    Dedupe,
    Mask,
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
