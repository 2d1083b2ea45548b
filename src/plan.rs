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
    /// The model the plan is for, as the compactor resolved it.
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
    /// What the compaction record put back before planning (the plan's indices refer to the
    /// conversation after it). Non-empty: the host must apply even a plan with no actions.
    #[serde(default)]
    pub replayed: crate::record::Replayed,
    /// A summary to make ahead of need, off the critical path (`history.aheadFraction`, asked
    /// only of a host that runs summaries in the background: [`crate::PlanOptions::background`]).
    /// Not an action: nothing in this plan waits for it. The host sends `ahead.request` to its
    /// summarizer when it can (a promise, the platform's `waitUntil`, idle time), records that
    /// it did ([`crate::Compactor::ask_ahead`]) and hands the text back
    /// ([`crate::Compactor::offer_summary`]); the plan that reaches the lossy trigger applies it
    /// over the same span, so the messages after it stay as they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ahead: Option<Summarize>,
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
    /// The lossy tier fires above this many tokens (95 % of the window by default), or when
    /// tier 2 could not reach the target.
    pub summarize_at: u32,
    /// Whether the lossy tier ran.
    pub tier3: bool,
    /// Past this many tokens a hook's cancel is overridden and a pending summary no longer
    /// waited for: the next request would not fit (`hardLimitFraction` of the window, or the
    /// window less the app's `maxOutputTokens` when lower).
    pub hard_limit: u32,
    /// `true` for a manual compaction (`compact()`).
    pub manual: bool,
    /// Tier 1 only, for a tool result at the moment it returns (`PlanOptions::offload_only`):
    /// not recorded, since the host replaces the output at its source.
    #[serde(default)]
    pub offload_only: bool,
}

impl Plan {
    /// True when there is nothing to do: no action, and the record replayed nothing (a plan
    /// with replayed edits and no actions still changes the conversation on apply).
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty() && self.replayed.is_empty()
    }

    /// True when the predicted conversation fits the window.
    pub fn within_budget(&self) -> bool {
        self.tokens_after <= self.window
    }
}

/// One step for the host. Every action has an `id`; the host answers each with an [`Outcome`]
/// carrying the same id.
///
/// - Store edits ([`Action::Offload`], [`Action::EvictInput`], [`Action::Dedupe`],
///   [`Action::Mask`]): the host MUST write `content` to `path` (overwriting is fine: paths are
///   content-addressed) and answer `written` only once the write is durable. On `written`, apply
///   makes the replacement; on `failed` or no answer, that part stays as it was.
/// - [`Action::SaveTranscript`]: the host MUST write both files and answer `written`. The lossy
///   action that names it runs only if it was written.
/// - [`Action::Summarize`]: the host sends `request` to its LLM and answers `summarized` with the
///   text; with no summarizer, or when the call fails, it answers `failed` and apply uses the
///   plan's heuristic `fallback` summary instead (the event says so).
/// - [`Action::Drop`]: nothing to execute (the host may answer `written` or nothing); apply removes
///   the messages once the transcript is saved.
///
/// Lossy actions come last in a plan; execute actions in order.
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
    /// Tier 3, before anything lossy: the whole conversation as JSON and Markdown.
    SaveTranscript(SaveTranscript),
    /// Tier 3: the older messages become one summary message.
    Summarize(Summarize),
    /// Truncation or importance strategy: messages leave the conversation (their text stays in
    /// the transcript) and one notice names the transcript.
    Drop(Drop),
}

impl Action {
    /// The action's id; the host's [`Outcome`] for it carries the same id.
    pub fn id(&self) -> &str {
        match self {
            Action::Offload(e) | Action::EvictInput(e) | Action::Dedupe(e) | Action::Mask(e) => {
                &e.id
            }
            Action::SaveTranscript(t) => &t.id,
            Action::Summarize(s) => &s.id,
            Action::Drop(d) => &d.id,
        }
    }

    /// The store writes this action needs, as `(path, content)`: a host executes every one of
    /// them and answers `written` only if all succeeded.
    pub fn writes(&self) -> Vec<(&str, &str)> {
        match self {
            Action::SaveTranscript(t) => {
                vec![
                    (t.path.as_str(), t.json.as_str()),
                    (t.readable_path.as_str(), t.markdown.as_str()),
                ]
            }
            Action::Summarize(_) | Action::Drop(_) => Vec::new(),
            _ => self
                .store_edit()
                .map(|e| vec![(e.path.as_str(), e.content.as_str())])
                .unwrap_or_default(),
        }
    }

    /// The strategy the action carries out (a [`Drop`]'s own: truncate or importance).
    pub fn strategy(&self) -> Strategy {
        match self {
            Action::Offload(_) => Strategy::Offload,
            Action::EvictInput(_) => Strategy::EvictInput,
            Action::Dedupe(_) => Strategy::Dedupe,
            Action::Mask(_) => Strategy::Mask,
            Action::SaveTranscript(_) => Strategy::Transcript,
            Action::Summarize(_) => Strategy::Summarize,
            Action::Drop(d) => d.strategy,
        }
    }

    /// The store-then-replace edit of tiers 1 and 2; `None` for tier-3 actions.
    pub fn store_edit(&self) -> Option<&StoreEdit> {
        match self {
            Action::Offload(e) | Action::EvictInput(e) | Action::Dedupe(e) | Action::Mask(e) => {
                Some(e)
            }
            _ => None,
        }
    }

    /// The first message this action changes (`None`: it changes none).
    pub fn first_message(&self) -> Option<usize> {
        match self {
            Action::SaveTranscript(_) => None,
            Action::Summarize(s) => Some(s.start),
            // Every removed message is at or after the notice's place.
            Action::Drop(d) => Some(d.insert_at),
            _ => self.store_edit().map(|e| e.message_index),
        }
    }

    /// Tokens before and after, as planned.
    pub fn tokens(&self) -> (u32, u32) {
        match self {
            Action::SaveTranscript(_) => (0, 0),
            Action::Summarize(s) => (s.tokens_before, s.tokens_after),
            Action::Drop(d) => (d.tokens_before, d.tokens_after),
            _ => self
                .store_edit()
                .map_or((0, 0), |e| (e.tokens_before, e.tokens_after)),
        }
    }
}

/// Saves the conversation as it was given, before a lossy step removes any of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SaveTranscript {
    /// The action's id (`save-transcript`); the lossy action names it as its `transcript`.
    pub id: String,
    /// `/conversation_history/conversation_{hash}.json`: the messages, exactly.
    pub path: String,
    /// The same conversation as Markdown, for people and for `grep`.
    pub readable_path: String,
    /// The messages as pretty-printed JSON, to write at `path` (empty when planned with
    /// [`crate::PlanOptions::defer_transcript`]: render it with [`crate::Compactor::transcript`]).
    pub json: String,
    /// The same conversation as Markdown, to write at `readable_path` (empty when deferred).
    pub markdown: String,
    /// How many messages the transcript holds.
    pub messages: usize,
    /// The lossy step it is saved before (`summarize`, `truncate` or `importance`): what a
    /// host passes to [`crate::Compactor::transcript`] to render a deferred transcript.
    pub lossy_strategy: Strategy,
}

/// Replace `messages[start..end]` with one user message holding the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summarize {
    /// The action's id (`summarize`).
    pub id: String,
    /// The [`SaveTranscript`] action that must be `written` first.
    pub transcript: String,
    /// Where that transcript is; the summary message names it.
    pub transcript_path: String,
    /// First message of the span: an index into the conversation as planned.
    pub start: usize,
    /// End of the span, exclusive.
    pub end: usize,
    /// What to send to the host's LLM. A valid conversation on its own: one user message.
    pub request: SummaryRequest,
    /// The summary this one replaces (rolling), if the span starts with one.
    pub previous_summary: Option<String>,
    /// Custom instructions given for this compaction.
    pub instructions: Option<String>,
    /// Heuristic summary (intent, tools used, files touched) used when the host has no
    /// summarizer or its call fails.
    pub fallback: String,
    /// Tokens of the span's messages as given (before any edit of this plan).
    pub tokens_before: u32,
    /// Predicted, with a summary of `request.maxTokens`.
    pub tokens_after: u32,
    /// Messages of the span kept verbatim after the summary (pinned groups), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep: Vec<usize>,
    /// The live plan carried verbatim at the end of the summary message (the latest plan-tool
    /// input, when the span holds it), starting with `[Current plan, kept verbatim]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// The span's key when the summary is (or was) made ahead of need ([`Plan::ahead`]): the
    /// fingerprint of the conversation up to `end` without its leading system messages, which
    /// the state's [`crate::compactor::Ahead`] names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ahead_key: Option<String>,
    /// The summary made ahead for this span: applied as it is, the summarizer is not asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<String>,
    /// Planned for a host that makes summaries in the background, and made in the call all the
    /// same (none was ready: the hard limit came first, or the conversation jumped past the
    /// trigger): the call waits for the summarizer. Its event says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocking: bool,
}

/// The summarization request, shaped for any chat API (AI SDK `generateText`, OpenAI, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRequest {
    /// The system prompt for the summarizer.
    pub system: String,
    /// The user prompt: template, instructions, previous summary and the span as Markdown.
    pub prompt: String,
    /// `[{role: 'user', content: prompt}]`.
    pub messages: Vec<Message>,
    /// The summary's length limit, in tokens (the prompt asks to stay under it).
    pub max_tokens: u32,
    /// The same request as a continuation of the agent's own prompt, when the prompt cache
    /// makes that cheaper (see [`Continuation`]); a host may send either.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<Continuation>,
}

impl SummaryRequest {
    /// A request whose conversation is the prompt as one user message: valid for every
    /// provider, with no tool calls that would need tool definitions.
    pub fn new(system: impl Into<String>, prompt: String, max_tokens: u32) -> Self {
        Self {
            system: system.into(),
            messages: vec![Message::user(prompt.clone())],
            prompt,
            max_tokens,
            continuation: None,
        }
    }
}

/// A summary request that reads the provider's prompt cache: the agent's own system prompt and
/// tools, unchanged, then messages `[0, end)` of the conversation as planned (a prefix of the
/// prompt the agent last sent, so the provider reads it from its cache), then `instruction` as
/// the last user message. Offered when the cache makes it cheaper than the plain request (its
/// whole span at the full input price): the prefix at the cache-read price plus the instruction.
/// The tools stay attached so that the prefix matches: a summarizer that answers with a tool
/// call instead of text must fall back to the plain request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Continuation {
    /// The prefix is messages `[0, end)` of the conversation as planned.
    pub end: usize,
    /// The last user message: the summary template and the span to summarize.
    pub instruction: String,
    /// Tokens of the prefix (messages, tools and system), read from the cache.
    pub prefix_tokens: u32,
    /// The predicted input cost of this request, in uncached-token equivalents...
    pub cost: u32,
    /// ...and of the plain request.
    pub plain_cost: u32,
}

/// Remove `messages` (indices into the conversation as planned, ascending) and insert `notice`
/// at `insert_at` (an index into the conversation after removal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drop {
    /// The action's id (`truncate` or `drop-by-importance`).
    pub id: String,
    /// [`Strategy::Truncate`] or [`Strategy::Importance`].
    pub strategy: Strategy,
    /// The [`SaveTranscript`] action that must be `written` first.
    pub transcript: String,
    /// Where that transcript is; the notice names it.
    pub transcript_path: String,
    /// The messages to remove: indices into the conversation as planned, ascending.
    pub messages: Vec<usize>,
    /// Where the notice goes: an index into the conversation after removal, at or before every
    /// removed message's index.
    pub insert_at: usize,
    /// The end (exclusive, an index into the conversation as planned) of the span the notice
    /// stands for, when pinned or working-file messages right after the last removed one stay:
    /// the record then knows the step kept them (a later plan keeps them too). Absent: the span
    /// ends after the last removed message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_until: Option<usize>,
    /// The text of the user message inserted: how many messages were removed, and where the
    /// transcript is.
    pub notice: String,
    /// Tokens of the removed messages as given (before any edit of this plan).
    pub tokens_before: u32,
    /// Tokens of the notice message.
    pub tokens_after: u32,
}

/// Store `content` at `path`, then replace one piece of one tool part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoreEdit {
    /// The action's id: its kind, message index and part index (e.g. `offload-3-0`).
    pub id: String,
    /// The message: an index into the conversation as planned.
    pub message_index: usize,
    /// The part within that message (0 for a user message whose content is a string).
    pub part_index: usize,
    /// The tool call that part belongs to (empty for a user message's text).
    pub tool_call_id: String,
    /// That tool call's tool (empty for a user message's text).
    pub tool_name: String,
    /// Content-addressed store path, e.g. `/tool_outputs/search_1f2e3d4c5b6a7988.txt`.
    pub path: String,
    /// The full text to store, byte for byte what the model saw.
    pub content: String,
    /// What replaces it once stored.
    pub replace: Replace,
    /// Tokens of what the edit changes, before it (for an input field: the call's whole input).
    pub tokens_before: u32,
    /// Tokens of the same, after it.
    pub tokens_after: u32,
}

/// The Tier-1 action's payload (kept as a name for readers of older plans).
pub type Offload = StoreEdit;

/// What a [`StoreEdit`] puts in place of the stored content.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Replace {
    /// The tool result's whole `output` becomes `output`.
    Output {
        /// The replacement: a preview, placeholder or pointer naming the stored copy.
        output: ToolOutput,
    },
    /// The string field `field` of the tool call's `input` becomes `value`.
    InputField {
        /// The name of the string field in the call's `input`.
        field: String,
        /// Its new value: a pointer to the stored copy and a short preview.
        value: String,
    },
    /// A user message's text (its string content, or the text part at `partIndex`) becomes
    /// `value`.
    Text {
        /// The new text: a preview and the stored path.
        value: String,
    },
    /// A user message's text file (the file part at `partIndex`, a textual media type) becomes
    /// a text part holding `value`; the stored content is the file's text.
    FileText {
        /// The new text part's text: a preview and the stored path.
        value: String,
    },
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
    /// The prices the model below used (see [`crate::CachePricing`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<crate::cache::CachePricing>,
    /// What the break costs beyond a cache hit, in uncached input tokens
    /// (`tokensInvalidated × (write − read)`, rounded).
    #[serde(default)]
    pub break_cost: u32,
    /// What each later call saves, in uncached input tokens (`tokens saved × read`, rounded).
    #[serde(default)]
    pub saving_per_call: u32,
    /// Calls after which the saving has paid for the break (`None`: no break, or no saving).
    #[serde(default)]
    pub break_even_calls: Option<u32>,
}

/// What the host reports for one action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Outcome {
    /// The action's content is stored.
    Written {
        /// The action's id.
        id: String,
    },
    /// The host could not execute the action; `error` says why.
    Failed {
        /// The action's id.
        id: String,
        /// What went wrong, in the host's words (the event carries it).
        error: String,
    },
    /// The host's LLM summarized a [`Action::Summarize`] request.
    Summarized {
        /// The action's id.
        id: String,
        /// The summary (an empty one falls back to the plan's heuristic summary).
        text: String,
    },
}

impl Outcome {
    /// The id of the action this outcome answers.
    pub fn id(&self) -> &str {
        match self {
            Outcome::Written { id }
            | Outcome::Failed { id, .. }
            | Outcome::Summarized { id, .. } => id,
        }
    }
}

/// A remark attached to a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Note {
    /// The model is not in the registry; a conservative window was assumed.
    UnknownModel {
        /// The model name as configured.
        name: String,
        /// The window assumed, in tokens.
        assumed_window: u32,
        /// The registry's names `name` may be a misspelling of, best first (none for another
        /// model altogether).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        did_you_mean: Vec<String>,
    },
    /// The provider's prompt cache expired since the last call ([`crate::PlanOptions::now`]):
    /// this call writes the whole prompt again whatever the plan does, so tier 2 took the
    /// edits it would otherwise have deferred, and a summary made ahead of need was applied if
    /// it was back. The plan's [`CacheImpact`] costs its break nothing.
    CacheExpired {
        /// Seconds since the last call.
        idle_seconds: u64,
        /// The cache lifetime it passed ([`crate::cache::CacheConfig::lifetime`]).
        lifetime_seconds: u32,
    },
    /// A lossy strategy is planned: the transcript is saved first, but the conversation loses
    /// detail.
    Lossy {
        /// Summarize, truncate or importance.
        strategy: Strategy,
        /// How many messages leave the conversation (summarized or dropped).
        messages: usize,
        /// Where the transcript is saved.
        transcript_path: String,
    },
    /// Compaction ran but could not reach its target.
    TargetNotMet {
        /// Tokens predicted after every action.
        tokens_after: u32,
        /// The target it missed ([`Trigger::target`]).
        target: u32,
        /// Why it could not be met.
        reason: String,
    },
    /// The lossy tier would fire, but the summary it needs was asked ahead of need
    /// ([`Plan::ahead`]) and is not back yet: this call goes on unsummarized rather than wait,
    /// until the prompt passes the hard limit (then the summary is asked in the call).
    SummaryPending {
        /// Tokens predicted for this call's prompt.
        tokens: u32,
        /// The hard limit ([`Trigger::hard_limit`]).
        hard_limit: u32,
    },
    /// The pinned messages (pins and pinned tools, with the groups that keep their tool calls
    /// valid) and the carried plan alone are over the target: no tier may touch them, so the
    /// target cannot be met until they are unpinned.
    PinnedOverBudget {
        /// Tokens of the pinned messages and the carried plan.
        pinned_tokens: u32,
        /// The target they exceed ([`Trigger::target`]).
        target: u32,
    },
    /// The part of every request no tier can shrink (the system prompt, the tool definitions,
    /// pins and the carried plan) is above the lossy trigger: summarizing or dropping would
    /// not get under it, and would run again at every call (the compaction loop users of
    /// other agents report). The lossy tier waits until the request would not fit the
    /// window, or a manual compaction.
    FixedOverTrigger {
        /// Tokens of the fixed part.
        fixed_tokens: u32,
        /// The lossy trigger it exceeds ([`Trigger::summarize_at`]).
        trigger: u32,
        /// What to change.
        reason: String,
    },
    /// The plan answers a provider's "prompt too long" error
    /// ([`crate::Compactor::plan_overflow`]): its thresholds come from `budget_window`.
    Overflow {
        /// The provider's count of the refused prompt, when its error gave one.
        reported_tokens: Option<u32>,
        /// Our count of the same prompt.
        counted_tokens: u32,
        /// The window every threshold of this plan is a fraction of.
        budget_window: u32,
        /// What happened, in words.
        reason: String,
    },
    /// Some actions failed as they were carried out (the store refused a write, ...): the
    /// conversation keeps their content (nothing leaves it unstored), and it is over the
    /// target and over what the plan would have left. Added to the call's plan after the fact (a `manage`/`compact` call's, not
    /// [`crate::Compactor::apply`]'s, whose events say it); the next call plans them again.
    ActionsFailed {
        /// The actions that failed.
        failed: usize,
        /// Tokens of the conversation as it is sent.
        tokens_after: u32,
        /// The target it missed ([`Trigger::target`]).
        target: u32,
        /// What failed, in words (the first failure's error).
        reason: String,
    },
    /// Even after every action the conversation stays over the window.
    OverBudget {
        /// Tokens predicted after every action.
        tokens_after: u32,
        /// The model's context window.
        window: u32,
        /// Why it does not fit.
        reason: String,
    },
}

/// Result of [`crate::Compactor::apply`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    /// The conversation after the record's replay and the applied actions: what to send next.
    pub messages: Vec<Message>,
    /// One per action of the plan, in plan order.
    pub events: Vec<Event>,
    /// Tokens of the conversation before the actions (after the record was replayed).
    pub tokens_before: u32,
    /// Tokens of `messages`.
    pub tokens_after: u32,
}

/// What happened to one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The action's id.
    pub action_id: String,
    /// The action's strategy.
    pub strategy: Strategy,
    /// How it ended.
    pub status: EventStatus,
    /// The first message the action changes, as planned (0 for a transcript).
    pub message_index: usize,
    /// The store path of a store edit; the transcript's path for a transcript or lossy action.
    pub path: Option<String>,
    /// Tokens before, as planned.
    pub tokens_before: u32,
    /// Tokens after: as planned (for a summary, the one applied), or `tokens_before` when
    /// nothing changed.
    pub tokens_after: u32,
    /// `tokens_before - tokens_after`.
    pub tokens_saved: u32,
    /// Files this action wrote (0 when it did not succeed).
    pub files_written: u32,
    /// Why it failed or fell back (the host's error, or the core's reason).
    pub error: Option<String>,
    /// The tool call whose part a store edit changed (`None` for transcripts and lossy steps).
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// That tool call's tool.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// A summary made in the call by a host that makes them in the background
    /// ([`Summarize::blocking`]): this call waited for the summarizer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocking: bool,
    /// The provider's overflow the call recovered from ([`crate::CallRun::recovering`]: a
    /// host's `recover`), on every event of that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overflow: Option<EventOverflow>,
}

/// What a provider's "prompt too long" error said, on the events of the call that recovered
/// from it ([`Event::overflow`]): [`crate::parse_overflow`]'s answer and the attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventOverflow {
    /// Which row of the overflow table matched.
    pub provider: String,
    /// The provider's count of the refused prompt, when its error gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_tokens: Option<u32>,
    /// The provider's input limit, when its error gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The text that matched.
    pub message: String,
    /// Which compaction of the model call this was (1 for the first).
    pub attempt: u32,
}

/// Which technique an action uses; the key of [`crate::Stats::by_strategy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Tier 1: a large tool result or user text moved to the store.
    Offload,
    /// Tier 2: a large file-content argument of a write/edit tool call moved to the store.
    EvictInput,
    /// Tier 2: an older read of a file that is read again later.
    Dedupe,
    /// Tier 2: an older tool result replaced by a placeholder.
    Mask,
    /// Tier 3: the conversation saved before a lossy step.
    Transcript,
    /// Tier 3: older messages replaced by one summary.
    Summarize,
    /// Tier 3: the oldest messages dropped (behind one notice).
    Truncate,
    /// Tier 3: the lowest-scoring messages dropped (behind one notice).
    Importance,
}

/// How an action ended in [`crate::Compactor::apply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventStatus {
    /// Stored, and the conversation now points at the stored copy.
    Applied,
    /// The host reported a failure; the conversation is unchanged there.
    Failed,
    /// The host gave no outcome for this action; the conversation is unchanged there.
    NotExecuted,
    /// The summarizer was missing or failed; the heuristic summary was applied (`error` says
    /// why).
    Fallback,
}

// `Replace` and `Outcome` are internally tagged. serde's derive reads such an enum by buffering
// the whole object in its private `Content` type first, a generic machine of ~40 kB of wasm code
// for these two (and the untagged `tokenizer.json` merges); read through a `serde_json::Value`
// instead, with the derive's messages.

/// The object `value` as a map, its tag `tag` and a reader of its fields.
fn tagged<E: serde::de::Error>(
    value: serde_json::Value,
    tag: &'static str,
    expected: &'static str,
) -> Result<(String, Fields<E>), E> {
    let serde_json::Value::Object(mut map) = value else {
        return Err(E::invalid_type(
            serde::de::Unexpected::Other("a non-object"),
            &expected,
        ));
    };
    match map.remove(tag) {
        Some(serde_json::Value::String(name)) => Ok((name, Fields(map, std::marker::PhantomData))),
        Some(_) => Err(E::invalid_type(
            serde::de::Unexpected::Other("a non-string tag"),
            &"a string",
        )),
        None => Err(E::missing_field(tag)),
    }
}

struct Fields<E>(
    serde_json::Map<String, serde_json::Value>,
    std::marker::PhantomData<E>,
);

impl<E: serde::de::Error> Fields<E> {
    fn string(&mut self, name: &'static str) -> Result<String, E> {
        match self.0.remove(name) {
            Some(serde_json::Value::String(s)) => Ok(s),
            Some(other) => Err(E::invalid_type(unexpected(&other), &"a string")),
            None => Err(E::missing_field(name)),
        }
    }
}

fn unexpected(value: &serde_json::Value) -> serde::de::Unexpected<'_> {
    use serde::de::Unexpected;
    match value {
        serde_json::Value::Null => Unexpected::Unit,
        serde_json::Value::Bool(b) => Unexpected::Bool(*b),
        serde_json::Value::Number(_) => Unexpected::Other("number"),
        serde_json::Value::String(s) => Unexpected::Str(s),
        serde_json::Value::Array(_) => Unexpected::Seq,
        serde_json::Value::Object(_) => Unexpected::Map,
    }
}

impl<'de> Deserialize<'de> for Replace {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let (kind, mut f) = tagged::<D::Error>(
            serde_json::Value::deserialize(d)?,
            "kind",
            "a replacement object",
        )?;
        Ok(match kind.as_str() {
            "output" => Replace::Output {
                output: ToolOutput::deserialize(
                    f.0.remove("output")
                        .ok_or_else(|| D::Error::missing_field("output"))?,
                )
                .map_err(D::Error::custom)?,
            },
            "input-field" => Replace::InputField {
                field: f.string("field")?,
                value: f.string("value")?,
            },
            "text" => Replace::Text {
                value: f.string("value")?,
            },
            "file-text" => Replace::FileText {
                value: f.string("value")?,
            },
            other => {
                return Err(D::Error::unknown_variant(
                    other,
                    &["output", "input-field", "text", "file-text"],
                ))
            }
        })
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let (kind, mut f) = tagged::<D::Error>(
            serde_json::Value::deserialize(d)?,
            "type",
            "an outcome object",
        )?;
        Ok(match kind.as_str() {
            "written" => Outcome::Written {
                id: f.string("id")?,
            },
            "failed" => Outcome::Failed {
                id: f.string("id")?,
                error: f.string("error")?,
            },
            "summarized" => Outcome::Summarized {
                id: f.string("id")?,
                text: f.string("text")?,
            },
            other => {
                return Err(D::Error::unknown_variant(
                    other,
                    &["written", "failed", "summarized"],
                ))
            }
        })
    }
}
