//! # context-compactor
//!
//! A sans-IO context-window manager for LLM apps and agents. The core never touches a file, a
//! clock, the network or an LLM: it takes a conversation (Vercel AI SDK `ModelMessage` shape)
//! and a configuration, and returns a [`Plan`] — plain data saying what to store where and what
//! to replace. A host executes the plan against its own store, reports an [`Outcome`] per action,
//! and [`Compactor::apply`] changes the conversation only where the host succeeded. Nothing
//! leaves the conversation before it is stored.
//!
//! ## serde_json in your build
//!
//! The crate keeps every JSON number byte for byte and every object's key order, so it turns on
//! serde_json's `arbitrary_precision` and `preserve_order` features. Cargo unifies features, so
//! they hold for every crate of the build that uses serde_json: with `arbitrary_precision`, a
//! number under `#[serde(untagged)]` or `#[serde(flatten)]` reaches your deserializer as a map,
//! which an `f64` field refuses (serde_json's own caveat of the feature). Keep such types apart
//! from the compactor (a separate crate of the workspace, or parse them through
//! `serde_json::Value` first).
//!
//! ## The host loop
//!
//! [`Compactor::manage`] runs the whole loop against an app's [`Host`] (its store, its LLM and an
//! `onPreCompact` hook), and [`Session`] is the same loop as a sans-IO state machine for hosts
//! that carry out the IO themselves. By hand, one plan looks like this:
//!
//! ```
//! use std::collections::HashMap;
//! use context_compactor::{parse_messages, Action, Compactor, Config, Outcome};
//!
//! // A conversation with one huge tool result.
//! let huge: String = (0..30_000).map(|i| format!("result line {i}\n")).collect();
//! let json = serde_json::json!([
//!     {"role": "user", "content": "find it"},
//!     {"role": "assistant", "content": [
//!         {"type": "tool-call", "toolCallId": "c1", "toolName": "search", "input": {"q": "it"}}]},
//!     {"role": "tool", "content": [
//!         {"type": "tool-result", "toolCallId": "c1", "toolName": "search",
//!          "output": {"type": "text", "value": huge}}]},
//! ]);
//! let messages = parse_messages(&json.to_string())?;
//!
//! let mut compactor = Compactor::new(Config { model: Some("gpt-4o".into()), ..Config::default() })?;
//! let plan = compactor.plan(&messages)?;
//!
//! // The host executes each action against its store and reports what happened.
//! let mut store: HashMap<String, String> = HashMap::new();
//! let outcomes: Vec<Outcome> = plan.actions.iter().map(|action| match action {
//!     // Every action of this version stores content before replacing it.
//!     action => {
//!         for (path, content) in action.writes() {
//!             store.insert(path.to_owned(), content.to_owned());
//!         }
//!         Outcome::Written { id: action.id().to_owned() }
//!     }
//! }).collect();
//!
//! let applied = compactor.apply(messages, &plan, &outcomes)?;
//! assert!(applied.tokens_after < 2_000 && applied.tokens_before > 100_000);
//! let Action::Offload(offload) = &plan.actions[0] else { unreachable!() };
//! assert_eq!(store[&offload.path], huge);                  // nothing lost
//! assert!(compactor.plan(&applied.messages)?.is_empty());  // idempotent
//! # Ok::<(), context_compactor::Error>(())
//! ```
// No unsafe code — but the Component binding's generated glue (wit-bindgen) is unsafe by nature,
// so that build denies it instead, and the binding's one module allows it.
#![cfg_attr(not(feature = "component"), forbid(unsafe_code))]
#![cfg_attr(feature = "component", deny(unsafe_code))]
#![warn(missing_docs)]

mod cache;
mod call;
mod compactor;
mod config;
mod counting;
mod driver;
mod edit;
mod error;
mod hash;
pub mod lease;
pub mod loop_context;
mod memo;
mod message;
mod models;
mod offload;
mod overflow;
mod plan;
pub mod prompts;
pub mod record;
pub mod recovery;
pub mod report;
mod session;
pub mod stored;
mod tiers;

mod bindings;

pub use cache::{
    anthropic_breakpoints, Breakpoints, CacheConfig, CachePricing, CacheProvider, CacheTtl,
    ANTHROPIC_MAX_BREAKPOINTS,
};
pub use call::{CallCore, CallDone, CallPoll, CallRun, Conflict, Recovery};
pub use compactor::{
    Ahead, Calibration, Compactor, Overflow, PlanOptions, State, Stats, StrategyStats, TriggerKind,
    Usage, UsagePoint,
};
pub use config::{
    host_settings, CompactionConfig, Config, HistoryConfig, HistoryStrategy, HostDefaults,
    HostSettings, ImportanceConfig, OffloadConfig, Preset, ToolDefinition, WorkingFilesConfig,
    HOST_DEFAULTS,
};
pub use counting::bpe;
pub use counting::hf;
pub use counting::prebuilt;
pub use counting::{
    can_count, count_tokens, count_tokens_named, counter_named, load_data, Breakdown,
    CachedCounter, Encoding, Exact, MessageTokens, PartTokens, TokenCounter, Tokenizer,
    ToolsTokens, TOOL_DEFINITION_OVERHEAD,
};
pub use driver::{make_ahead, make_ahead_async, AsyncHost, Host, SummaryLease, Timer, WriteIf};
pub use error::{Error, Result};
pub use message::{
    messages_from_value, parse_json_value, parse_messages, parse_messages_at, validate,
    ApprovalRequest, ApprovalResponse, Content, FilePart, ImagePart, Message, Part, Role, TextPart,
    ToolCall, ToolOutput, ToolResult, MAX_NESTING,
};
pub use models::{
    count_for_model, info as model_info, lookup as lookup_model, nearest as nearest_models, Family,
    ModelCount, ModelInfo, CLAUDE_47_RATIO,
};
pub use offload::{OffloadPoll, OffloadRun, Offloaded};
pub use overflow::{
    overflow_verdict, parse_overflow, OverflowDetails, OverflowError, OverflowFailure,
    OverflowMoment, OverflowReport, OverflowVerdict,
};
pub use plan::{
    Action, Applied, CacheImpact, Continuation, Drop, Event, EventOverflow, EventStatus, Note,
    Offload, Outcome, Plan, Replace, SaveTranscript, StoreEdit, Strategy, Summarize,
    SummaryRequest, Trigger,
};
pub use session::{
    Call, Io, Managed, Poll, PreCompact, PreCompactDecision, Reply, Request, Session, SessionCore,
};
