//! The `Compactor`: plans against a model's budget, applies host outcomes, keeps stats and
//! calibration in a serializable state.

use hashbrown::{HashMap, HashSet};
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{Config, HistoryStrategy};
use crate::counting::MessageCounts;
use crate::error::{Error, Result};
use crate::memo::Memo;
use crate::message::{Message, Part};
use crate::models::{self, ModelInfo};
use crate::plan::{
    Action, Applied, CacheImpact, Event, EventStatus, Note, Outcome, Plan, Replace, SaveTranscript,
    Strategy, Trigger,
};
use crate::record::{Record, Replayed};
use crate::tiers::{lossy, provider, working};

use crate::counting::{CachedCounter, TokenCounter};
use crate::tiers::tier2;

/// Plans compactions for one model and configuration. Cheap to keep for a whole session: it
/// caches token counts by content hash.
#[derive(Debug)]
pub struct Compactor {
    config: Config,
    model: ModelInfo,
    counter: CachedCounter,
    /// Raw tokens of the tool definitions sent with every request (`config.tools`).
    tools_raw: u32,
    /// The prompt-cache prices for this model (`config.cache`).
    pricing: crate::cache::CachePricing,
    state: State,
    /// The state path it keeps, and what it knows of the state there
    /// ([`Compactor::persist_at`]): a call saves its state there when it changed.
    persist: Option<crate::stored::Persist>,
    /// A state path to keep, read at the next call, and whether the compactor is built from
    /// what is stored there ([`Compactor::persist_later`]).
    persist_later: Option<(String, bool)>,
    /// The key of the summary asked ahead that this compactor handed out to be made
    /// ([`Compactor::making_ahead`]), until its text or failure comes back.
    making: Option<String>,
    /// The last summary asked ahead failed: the call that reaches the lossy tier summarizes
    /// itself rather than ask again (until a summary is applied).
    ahead_failed: bool,
    /// An unknown model's likely meant names (its note's `didYouMean`), found once: the note is
    /// on every plan.
    did_you_mean: Vec<String>,
}

/// Everything a compactor learns over a session, as plain data. Persist it (edge workers are
/// stateless per request) and pass it back with [`Compactor::with_state`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct State {
    /// Format version of the state (2 in this build); a state from a newer build is refused.
    pub version: u32,
    /// Learned ratio of provider-reported input tokens to our count, for this model.
    pub calibration: Option<Calibration>,
    /// Totals over the session.
    pub stats: Stats,
    /// Every edit applied so far, keyed by the content it replaced (see [`Record`]): planning
    /// replays it onto whatever history it is given, so a host that re-sends the raw history
    /// with this state gets the same compacted prompt as a long-lived one.
    pub record: Record,
    /// The summary asked ahead of need ([`Plan::ahead`]), once the host asked it
    /// ([`Compactor::ask_ahead`]), and its text once back ([`Compactor::offer_summary`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ahead: Option<Ahead>,
    /// When the last model call went out (milliseconds since the Unix epoch, the host's clock:
    /// [`Compactor::called_at`]). A call more than the provider's cache lifetime later finds the
    /// prompt cache expired ([`PlanOptions::now`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_call_at: Option<u64>,
}

impl State {
    /// A saved state from its JSON (the app's `state` option, or a state read from the store):
    /// an object with a `version`, as every saved state has, so that a file that is not one (an
    /// app's own JSON behind a mistyped `statePath`) is refused rather than taken for an empty
    /// state and saved over.
    pub fn from_json(json: &str) -> Result<State> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| Error::json("state", &e))?;
        if !is_saved_state(&value) {
            return Err(Error::InvalidConfig {
                field: "state".into(),
                message: "not a saved compactor state (no `version`): pass what `state()` returned or `saveState` wrote".into(),
            });
        }
        // Through `Value`: the one deserializer the core carries for its types; a field that
        // does not fit is named as the state's (`state.stats`), not as an option.
        crate::config::deserialize(value).map_err(|e| match e {
            Error::InvalidConfig { field, message } => Error::InvalidConfig {
                field: format!("state.{field}"),
                message,
            },
            other => other,
        })
    }
}

/// Whether `value` is a saved state: an object whose `version` is a whole number from 1.
pub(crate) fn is_saved_state(value: &serde_json::Value) -> bool {
    value
        .get("version")
        .and_then(serde_json::Value::as_u64)
        .is_some_and(|v| v >= 1)
}

/// The step of the recorded time of the last call ([`Compactor::called_at`]): one minute.
pub const TIME_STEP_MS: u64 = 60_000;

/// A summary asked ahead of need: the span it covers, named by the conversation up to its end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ahead {
    /// The fingerprint of the (replayed) conversation up to `end`, without the system
    /// messages it starts with (`record::span_hex`): while the conversation starts with the
    /// same messages after its system prompt, the summary still fits. (A state saved before
    /// keys left the system prompt out is still matched by the whole prefix's fingerprint.)
    pub key: String,
    /// The end of the span (exclusive), a message index.
    pub end: usize,
    /// The fingerprint of the span as it reads since this compactor's reversible edits inside
    /// it (tier 2 masks, evicts or offloads there while the summary is out): the same
    /// messages, their content stored, so the summary still fits them. Absent while they read
    /// as when asked (`key`, which stays the summary's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The summary, once the host handed it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
/// The learned correction of our token counts for one model.
pub struct Calibration {
    /// The model it was learned for; a state loaded for another model drops it.
    pub model: String,
    /// Provider-reported input tokens ÷ our raw count, a moving average (each new sample
    /// weighs 0.3).
    pub ratio: f64,
    /// How many reported requests it was learned from.
    pub samples: u32,
}

/// Totals over the session (SPEC §9).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Stats {
    /// `apply` calls that changed the conversation.
    pub compactions: u32,
    /// Tokens saved by applied actions (summaries that fell back included).
    pub tokens_saved: u64,
    /// Store and transcript files written.
    pub files_written: u32,
    /// Actions that ended [`EventStatus::Failed`]: the host reported a failure, or a lossy
    /// action's transcript was not saved.
    pub actions_failed: u32,
    /// The same totals per strategy.
    pub by_strategy: BTreeMap<crate::plan::Strategy, StrategyStats>,
    /// Tokens before and after each compaction, oldest first (the last 100).
    pub timeline: Vec<UsagePoint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
/// Totals over the session for one [`Strategy`].
pub struct StrategyStats {
    /// Actions of this strategy applied (summaries that fell back included).
    pub events: u32,
    /// Tokens those actions saved.
    pub tokens_saved: u64,
    /// Files those actions wrote.
    pub files_written: u32,
    /// One per applied action: a summary or a drop counts once, however many messages it
    /// removed.
    pub messages_affected: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
/// One compaction on the [`Stats::timeline`].
pub struct UsagePoint {
    /// Its number ([`Stats::compactions`] once it was counted).
    pub compaction: u32,
    /// Tokens of the conversation before `apply` changed it (after the record was replayed).
    pub tokens_before: u32,
    /// Tokens of the conversation `apply` returned.
    pub tokens_after: u32,
}

/// What asked for a plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TriggerKind {
    /// The window filled up (the default).
    #[default]
    Auto,
    /// Someone asked (`compact()`): every tier runs regardless of its trigger.
    Manual,
}

/// Options of [`Compactor::plan_with_options`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct PlanOptions {
    /// Automatic (the default), or manual as in [`Compactor::plan_manual`].
    pub trigger: TriggerKind,
    /// Custom instructions for the summary (in addition to `history.instructions`).
    pub instructions: Option<String>,
    /// Tier 1 only: offload what is over the threshold and nothing else, whatever the usage.
    /// For tool results at the moment a tool returns them (the JS host's `wrapTools`), before
    /// they are part of a conversation that could be compacted as a whole.
    pub offload_only: bool,
    /// Leave every transcript's `json` and `markdown` empty; the host renders them with
    /// [`Compactor::transcript`] when it writes them. Planning then costs no copy of the
    /// conversation (the wasm host plans this way: the text stays in the core until written).
    pub defer_transcript: bool,
    /// The provider refused the last prompt as too long: plan as if the conversation were at
    /// the provider's count, against the provider's limit, and always compact below the target
    /// (see [`Compactor::plan_overflow`]).
    pub overflow: Option<Overflow>,
    /// The host runs summaries in the background: a plan above `history.aheadFraction` may
    /// carry [`Plan::ahead`], a summary to make off the critical path (see
    /// [`crate::config::HistoryConfig::ahead_fraction`]).
    pub background: bool,
    /// The time of this call (milliseconds since the Unix epoch, the host's clock; the core
    /// never reads one). When it is more than the provider's cache lifetime
    /// ([`crate::cache::CacheConfig::lifetime`]) after the last call
    /// ([`State::last_call_at`]), the prompt cache has expired: the whole prompt is written
    /// again whatever the plan does, so a break costs nothing. Tier 2 then takes the edits it
    /// would otherwise defer (from its target up, every one it has), and a summary made ahead
    /// of need is applied as soon as it is back ([`crate::plan::Note::CacheExpired`]). While
    /// the cache is warm, or without a time, nothing changes.
    pub now: Option<u64>,
}

/// What a provider's "prompt too long" error said ([`PlanOptions::overflow`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Overflow {
    /// The provider's count of the refused prompt, when its error gave one.
    pub reported_tokens: Option<u32>,
    /// The provider's input limit, when its error gave one (capped at the model's window).
    pub limit: Option<u32>,
}

impl Overflow {
    /// The window to budget against after an overflow of a prompt we counted as `counted`:
    /// the provider's limit scaled by our count over its count (so every threshold is as far
    /// below our count as the limit is below theirs). Without a reported count, the provider's
    /// count is taken as just over its limit (or our count, if larger). Never above `window`
    /// nor above `counted`: the plan always compacts.
    pub fn budget_window(&self, window: u32, counted: u32) -> u32 {
        let limit = self
            .limit
            .filter(|&l| l > 0)
            .map_or(window, |l| l.min(window));
        let reported = self
            .reported_tokens
            .filter(|&r| r > 0)
            .unwrap_or_else(|| counted.max(limit.saturating_add(1)));
        // The provider refused `reported` tokens, so its limit is below that (a count that
        // includes the requested output is treated the same way).
        let limit = limit.min(reported);
        let budget = f64::from(limit) * f64::from(counted.max(1)) / f64::from(reported);
        (budget.floor() as u32).clamp(1, window)
    }
}

const TIMELINE_LIMIT: usize = 100;
/// 2: the compaction record. A build that knows only version 1 refuses a version-2 state rather
/// than drop its record silently.
pub(crate) const STATE_VERSION: u32 = 2;

/// How full the window is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Tokens of the conversation as it would be sent, tool definitions included.
    pub tokens: u32,
    /// The model's context window, in tokens.
    pub window: u32,
    /// `tokens / window` (over 1 when the conversation does not fit).
    pub fraction: f64,
}

impl Compactor {
    /// A compactor with exact counting for the model's encoding (tiktoken's counts).
    pub fn new(config: Config) -> Result<Self> {
        Self::with_state(config, State::default())
    }

    /// Resumes from a state saved with [`Compactor::state`].
    pub fn with_state(config: Config, state: State) -> Result<Self> {
        config.validate()?;
        let model = resolve_model(&config);
        // The reply's room is kept below the hard limit: all of the window leaves no prompt.
        if config
            .max_output_tokens
            .is_some_and(|out| out >= model.context_window)
        {
            return Err(Error::InvalidConfig {
                field: "maxOutputTokens".into(),
                message: format!(
                    "must be below the context window ({} tokens)",
                    model.context_window
                ),
            });
        }
        // A model whose Hugging Face tokenizer is loaded counts with it, exactly.
        let mut counter = match model.loaded_tokenizer() {
            Some(t) => CachedCounter::with_tokenizer(model.encoding, t),
            None => CachedCounter::new(model.encoding)?,
        };
        counter.image_tokens = config.image_tokens;
        counter.file_tokens = config.file_tokens;
        let tools_raw = counter.tools(&config.tools);
        let pricing = config.cache.pricing(&model);
        let did_you_mean = if model.matched.is_none() && config.context_window.is_none() {
            crate::models::suggestions(&model.name, 3)
                .into_iter()
                .map(str::to_owned)
                .collect()
        } else {
            Vec::new()
        };
        let mut compactor = Self {
            config,
            model,
            counter,
            tools_raw,
            pricing,
            state: State::default(),
            persist: None,
            persist_later: None,
            making: None,
            ahead_failed: false,
            did_you_mean,
        };
        compactor.set_state(state)?;
        Ok(compactor)
    }

    /// Replaces the token counter (e.g. a provider's own tokenizer).
    pub fn with_counter(mut self, counter: Box<dyn TokenCounter>) -> Self {
        let mut cached = CachedCounter::with_counter(self.model.encoding, counter);
        cached.image_tokens = self.config.image_tokens;
        cached.file_tokens = self.config.file_tokens;
        self.tools_raw = cached.tools(&self.config.tools);
        self.counter = cached;
        self
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The model it plans for: the registry's entry (or an unknown model's defaults) with the
    /// configuration's overrides.
    pub fn model(&self) -> &ModelInfo {
        &self.model
    }

    /// The context window plans budget against, in tokens.
    pub fn window(&self) -> u32 {
        self.model.context_window
    }

    /// Plans the compaction of `messages`. Pure: no IO, same input → same plan.
    pub fn plan(&self, messages: &[Message]) -> Result<Plan> {
        self.plan_with_options(messages, &PlanOptions::default())
    }

    /// Plans a manual compaction: every tier runs even below its trigger, tier 2 takes every
    /// candidate and the lossy tier runs (a summary, by default).
    pub fn plan_manual(&self, messages: &[Message]) -> Result<Plan> {
        self.plan_with_options(
            messages,
            &PlanOptions {
                trigger: TriggerKind::Manual,
                ..PlanOptions::default()
            },
        )
    }

    /// Plans the recovery from a provider's "prompt too long" error: as if the conversation
    /// were at `reported_tokens` (the provider's count, when its error gave one), every
    /// threshold scaled down by our count over that count, and compacting below the target
    /// whatever the usage. The plan carries a [`Note::Overflow`]. Feed the count to
    /// [`Compactor::observe_usage`] too, so later plans count like the provider.
    pub fn plan_overflow(
        &self,
        messages: &[Message],
        reported_tokens: Option<u32>,
    ) -> Result<Plan> {
        self.plan_with_options(
            messages,
            &PlanOptions {
                overflow: Some(Overflow {
                    reported_tokens,
                    limit: None,
                }),
                ..PlanOptions::default()
            },
        )
    }

    /// Plans with options. The compaction record is replayed first (see [`Compactor::replay`]):
    /// the plan's indices refer to the replayed conversation, and [`Compactor::apply`] replays
    /// the same way before it applies.
    pub fn plan_with_options(&self, messages: &[Message], options: &PlanOptions) -> Result<Plan> {
        crate::message::validate(messages)?;
        self.plan_held(messages, options, &mut Memo::default())
    }

    /// [`Compactor::plan_with_options`] with what earlier plans learned about `messages` (a
    /// binding's held conversation, the same messages at the same positions as far as `memo`
    /// goes). The memo serves when the record leaves the messages as they are, and learns.
    /// `messages` are valid already: the binding validates what it holds when it syncs.
    pub(crate) fn plan_held(
        &self,
        messages: &[Message],
        options: &PlanOptions,
        memo: &mut Memo,
    ) -> Result<Plan> {
        self.plan_held_replayed(messages, options, memo)
            .map(|(plan, _)| plan)
    }

    /// [`Compactor::plan_held`], and the conversation with the record replayed when that
    /// changed it (`None`: as given), for an apply of the same conversation
    /// ([`Compactor::apply_replayed`]).
    pub(crate) fn plan_held_replayed(
        &self,
        messages: &[Message],
        options: &PlanOptions,
        memo: &mut Memo,
    ) -> Result<(Plan, Option<Vec<Message>>)> {
        let (replayed_messages, replayed) = if options.offload_only {
            (std::borrow::Cow::Borrowed(messages), Replayed::default())
        } else {
            self.state
                .record
                .replay_with(messages, &|i, message| memo.prints_of(i, message))
        };
        // Replayed edits made other messages: what is known is about the given ones.
        let mut fresh = Memo::default();
        let memo = match replayed_messages {
            std::borrow::Cow::Borrowed(_) => memo,
            std::borrow::Cow::Owned(_) => &mut fresh,
        };
        memo.count(&replayed_messages, &self.counter);
        let mut plan = self.plan_replayed(&replayed_messages, memo, options)?;
        plan.replayed = replayed;
        plan.trigger.offload_only = options.offload_only;
        let replayed_messages = match replayed_messages {
            std::borrow::Cow::Borrowed(_) => None,
            std::borrow::Cow::Owned(replayed) => Some(replayed),
        };
        Ok((plan, replayed_messages))
    }

    /// `messages` with the compaction record put back: every recorded edit whose part is
    /// there, every recorded span replaced by its summary or notice. Linear in the
    /// conversation; borrowed when nothing matched.
    pub fn replay<'a>(&self, messages: &'a [Message]) -> std::borrow::Cow<'a, [Message]> {
        self.state.record.replay(messages).0
    }

    /// Plans on the replayed `messages`, whose every count is in `memo`.
    fn plan_replayed(
        &self,
        messages: &[Message],
        memo: &Memo,
        options: &PlanOptions,
    ) -> Result<Plan> {
        let counts = memo.counted();
        let manual = options.trigger == TriggerKind::Manual;
        let total = |i: usize| counts[i].total;
        let tokens = Scaled(self, Some(counts));
        let raw_before = self.raw_total_from(messages, total);
        let tokens_before = self.scale(raw_before);
        // After a provider's overflow, every threshold comes from the provider's limit as our
        // counts see it (`Overflow::budget_window`), and tier 2 always runs.
        let overflow = options.overflow.filter(|_| !options.offload_only);
        let window = overflow.map_or(self.window(), |o| {
            o.budget_window(self.window(), tokens_before)
        });
        let thresholds = (
            self.offload_threshold(),
            self.offload_cap(),
            self.user_offload_threshold(),
        );
        // Nothing up to the latest provider compaction item changes (the provider no longer
        // reads it), and no pin.
        let provider_item = provider::latest_item(messages);
        let untouchable = |m: usize, p: usize| {
            provider_item.is_some_and(|c| m <= c)
                || crate::tiers::pinned::edit_pinned(messages, m, p, &self.config.history)
        };
        let mut actions: Vec<Action> = apart::offload(messages, &self.config, thresholds, &tokens)
            .into_iter()
            .filter(|e| !untouchable(e.message_index, e.part_index))
            .map(Action::Offload)
            .collect();
        // Predict from raw counts and scale once: scaling each action's saving separately would
        // round differently from counting the result.
        let mut predicted_raw = raw_before.saturating_sub(
            actions
                .iter()
                .map(|a| self.raw_saving(messages, counts, a))
                .sum(),
        );
        let mut predicted = self.scale(predicted_raw);

        let compaction = &self.config.compaction;
        let history = &self.config.history;
        let working_budget = compaction.working_files.max_tokens.min(window / 10);
        // Only a plan that compacts needs them (not the call under the trigger before each step).
        let working = std::cell::OnceCell::new();
        let working = || {
            working.get_or_init(|| {
                let kept = self.state.record.kept_after_latest(messages);
                working::working_files(messages, compaction, working_budget, &tokens, &kept)
            })
        };
        let compact_at = fraction_of(window, compaction.trigger_fraction);
        let target = fraction_of(window, compaction.target_fraction);
        let summarize_at = fraction_of(window, history.trigger_fraction);
        // The reply needs room too: with the app's `maxOutputTokens`, the prompt never goes on
        // unsummarized (a summary pending) past what leaves it, nor is a cancel honoured there.
        let hard_limit = fraction_of(window, history.hard_limit_fraction)
            .min(window.saturating_sub(self.config.max_output_tokens.unwrap_or(0)));
        // The provider's prompt cache has expired since the last call: a break costs nothing.
        let expired = self
            .cache_expired(options.now)
            .filter(|_| !options.offload_only);
        let cold = expired.is_some();
        // Tier 2's own trigger; with the cache expired it also runs from its target up.
        let tier2_due = manual || overflow.is_some() || predicted > compact_at;
        let tier2 = compaction.enabled
            && !options.offload_only
            && (tier2_due || (cold && predicted > target));
        // A summary made ahead of need (`history.aheadFraction`): the state's, while the
        // conversation still starts with the span it was asked for.
        let ahead_ready = self.state.ahead.as_ref().filter(|a| {
            let want = a.at.as_ref().unwrap_or(&a.key);
            a.end <= messages.len() && {
                let canonical = memo.canonical(messages);
                crate::record::span_hex(messages, &canonical, a.end) == *want
                    // A key from before spans left their system prompt out.
                    || crate::record::conversation_hex_of(canonical[..a.end].iter().copied())
                        == *want
            }
        });
        // A summary may be asked ahead (a host that makes them in the background).
        let may_ask_ahead = history.ahead_fraction.is_some()
            && options.background
            && history.strategy == HistoryStrategy::Summarize
            && !manual
            && overflow.is_none()
            && !options.offload_only;
        let ahead_at = history
            .ahead_fraction
            .filter(|_| may_ask_ahead && ahead_ready.is_none())
            .map(|f| fraction_of(window, f));
        // Below the compaction trigger and above the ahead one, tier 2 runs dry: when it could
        // not reach its target now, the lossy tier will fire at the trigger, so its summary is
        // asked now.
        let dry = !tier2 && compaction.enabled && ahead_at.is_some_and(|a| predicted > a);
        // Tier 2's edits onto `actions`, `predicted_raw` updated: automatic compaction stops at
        // the target, a manual one takes every reversible edit.
        let tier2_edits = |actions: &mut Vec<Action>, predicted_raw: &mut u32| {
            let mut predicted = self.scale(*predicted_raw);
            let mut taken: tier2::Taken = actions
                .iter()
                .filter_map(Action::store_edit)
                .map(|e| (e.message_index, e.part_index))
                .collect();
            let batch = self.config.cache.batches(&self.pricing);
            let mut first_change = actions.iter().filter_map(Action::first_message).min();
            let candidates = apart::tier2(messages, compaction, window, &tokens, &mut taken, memo);
            for candidate in candidates {
                // Pinned parts, the working files and what the provider compacted are never
                // edited.
                if candidate.store_edit().is_some_and(|e| {
                    untouchable(e.message_index, e.part_index)
                        || working().parts.contains(&(e.message_index, e.part_index))
                }) {
                    continue;
                }
                // Automatic compaction stops at the target; a manual one takes every
                // reversible edit (the user asked for room). With a prompt cache, an edit at or
                // after the first message already changed costs no further cache: the break
                // is paid for once, so it buys all the room it can.
                let free = cold
                    || batch
                        && first_change
                            .is_some_and(|f| candidate.first_message().is_some_and(|m| m >= f));
                if predicted <= target && !manual && !free {
                    continue;
                }
                *predicted_raw =
                    predicted_raw.saturating_sub(self.raw_saving(messages, counts, &candidate));
                predicted = self.scale(*predicted_raw);
                first_change = match (first_change, candidate.first_message()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                actions.push(candidate);
            }
        };
        let mut dry_run: Option<(Vec<Action>, u32)> = None;
        if tier2 {
            let before_tier2 = (actions.len(), predicted_raw);
            tier2_edits(&mut actions, &mut predicted_raw);
            predicted = self.scale(predicted_raw);
            // A break that buys too little waits (while the lossy trigger is still far): the
            // next one will batch more.
            let saved = self.scale(before_tier2.1.saturating_sub(predicted_raw));
            let min_break = self.config.cache.min_break_saving(&self.pricing, window);
            if !manual
                && !cold
                && overflow.is_none()
                && saved < min_break
                && self.scale(before_tier2.1) <= summarize_at
            {
                actions.truncate(before_tier2.0);
                predicted_raw = before_tier2.1;
                predicted = self.scale(predicted_raw);
            }
        } else if dry {
            let mut dry_actions = actions.clone();
            let mut dry_raw = predicted_raw;
            tier2_edits(&mut dry_actions, &mut dry_raw);
            // By the trigger the conversation has grown by about the distance to it, in recent
            // messages tier 2 keeps: counted, or a call just above `aheadFraction` that tier 2
            // could bring to its target now asks nothing, and the call at the trigger, which it
            // cannot, waits for a summary of its own.
            let growth = compact_at.saturating_sub(predicted);
            if self.scale(dry_raw).saturating_add(growth) > target {
                dry_run = Some((dry_actions, dry_raw));
            }
        }

        // Raw tokens each message loses to the reversible edits of `actions`.
        let saved_by = |actions: &[Action]| {
            let mut saved = vec![
                0u32;
                if actions.is_empty() {
                    0
                } else {
                    messages.len()
                }
            ];
            for action in actions {
                if let Some(edit) = action.store_edit() {
                    saved[edit.message_index] += self.raw_saving(messages, counts, action);
                }
            }
            saved
        };
        // What no tier can shrink. Above the lossy trigger, a lossy step cannot get under it and
        // would repeat at every call: it waits until the request would not fit at all.
        // Counted after the planned edits: a pinned call whose result is offloaded in this plan
        // takes what is left of it, not what it took before.
        let saved = saved_by(&actions);
        let after_edits = |i: usize| total(i).saturating_sub(saved.get(i).copied().unwrap_or(0));
        let pinned_raw = lossy::pinned_raw(messages, history, &self.counter, after_edits);
        let fixed = self.scale(self.fixed_raw(messages, pinned_raw, after_edits));
        let hopeless = fixed > summarize_at;
        // The lossy tier: past its own trigger, when tier 2 could not reach the target, or
        // (with tier 2 off) past the compaction trigger.
        // With the cache expired, a summary made ahead of need and back is applied now.
        // (Only then: a cold call never makes a summary of its own below the trigger.)
        let ready_now = cold && ahead_ready.is_some_and(|a| a.text.is_some());
        let lossy_due = manual
            || predicted > summarize_at
            || (tier2 && tier2_due && predicted > target)
            || (!compaction.enabled && predicted > compact_at);
        let mut tier3 = history.strategy != HistoryStrategy::Off
            && (!hopeless || manual || overflow.is_some() || predicted > window)
            && !options.offload_only
            && (lossy_due || ready_now);
        // A summary asked ahead and not back yet: the lossy tier waits for it while the prompt
        // is under the hard limit (the call goes on unsummarized instead of waiting).
        let mut notes = Vec::new();
        if tier3
            && !manual
            && overflow.is_none()
            && predicted <= hard_limit
            && ahead_ready.is_some_and(|a| a.text.is_none())
        {
            tier3 = false;
            notes.push(Note::SummaryPending {
                tokens: predicted,
                hard_limit,
            });
        }
        // What the provider drops costs nothing.
        let original = || -> Vec<u32> {
            (0..messages.len())
                .map(|i| {
                    if provider::dropped(messages, provider_item, i) {
                        0
                    } else {
                        total(i)
                    }
                })
                .collect()
        };
        let edited_by = |original: &[u32], saved: &[u32]| -> Vec<u32> {
            original
                .iter()
                .enumerate()
                .map(|(i, &t)| t.saturating_sub(saved.get(i).copied().unwrap_or(0)))
                .collect()
        };
        let lossy_plan = |original: &[u32],
                          edited: &[u32],
                          fixed_cut: Option<usize>,
                          config: &crate::config::HistoryConfig| {
            let inputs = lossy::Inputs {
                messages,
                original,
                edited,
                config,
                path_fields: &compaction.path_fields,
                counter: &self.counter,
                tools_raw: self.tools_raw,
                ratio: self.ratio(),
                fixed_ratio: self.model.token_ratio,
                window,
                target,
                min_saving: compaction.min_saving_tokens,
                manual,
                instructions: options.instructions.as_deref(),
                defer_transcript: options.defer_transcript,
                provider_item,
                working: &working().messages(),
                working_budget,
                cache_read: (history.continuation
                    && self.pricing.provider != crate::cache::CacheProvider::None)
                    .then_some(self.pricing.read),
                memo,
                fixed_cut,
            };
            apart::lossy(&inputs)
        };
        // The lossy step's note, and the kept messages' tokens when they alone are over budget.
        let mut lossy: Option<(Note, Option<u32>)> = None;
        let mut ahead = None;
        // A summary asked ahead: its key names the span as it reads now; what this plan's edits
        // change in it is named when the ask is recorded (`Compactor::ahead_reads`).
        let asked_ahead = |planned: Option<lossy::Planned>| match planned.map(|p| p.action) {
            Some(Action::Summarize(mut s)) => {
                let canonical = memo.canonical(messages);
                s.ahead_key = Some(crate::record::span_hex(messages, &canonical, s.end));
                Some(s)
            }
            _ => None,
        };
        if tier3 {
            let original = original();
            let edited = edited_by(&original, &saved);
            // A ready summary made ahead covers its own span (when that still frees enough);
            // else the span is chosen now and the summary is asked in this call.
            let ready = ahead_ready
                .filter(|a| a.text.is_some() && !manual && overflow.is_none())
                .and_then(|a| Some((a, lossy_plan(&original, &edited, Some(a.end), history)?)))
                .and_then(|(a, mut planned)| {
                    let Action::Summarize(s) = &mut planned.action else {
                        return None;
                    };
                    s.ahead_key = Some(a.key.clone());
                    s.ready = a.text.clone();
                    Some(planned)
                });
            // Made in the call by a host that makes summaries in the background: it waits.
            let in_call = || {
                lossy_plan(&original, &edited, None, history).map(|mut planned| {
                    if let Action::Summarize(s) = &mut planned.action {
                        s.blocking = options.background && !manual;
                    }
                    planned
                })
            };
            // No summary is out (or the one back no longer frees enough over its span: tier 2
            // edited inside it since) and the prompt is under the hard limit: the summary is
            // asked ahead, over the span the call would summarize now, and the call goes on
            // unsummarized (it waits only when the hard limit comes first). Not after an ask
            // that failed: that call summarizes itself.
            let defer = ready.is_none()
                && lossy_due
                && may_ask_ahead
                && predicted <= hard_limit
                && !self.ahead_failed;
            let planned = match ready {
                Some(planned) => Some(planned),
                None if defer => {
                    ahead = asked_ahead(in_call());
                    if ahead.is_some() {
                        notes.push(Note::SummaryPending {
                            tokens: predicted,
                            hard_limit,
                        });
                    }
                    None
                }
                None => lossy_due.then(in_call).flatten(),
            };
            if let Some(planned) = planned {
                // Edits inside the removed messages are moot: the transcript keeps the originals.
                actions.retain(|a| {
                    a.store_edit()
                        .is_none_or(|e| !planned.removed.contains(&e.message_index))
                });
                predicted_raw = crate::counting::REPLY_PRIMING
                    + self.tools_raw
                    + planned.inserted_raw
                    + edited
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !planned.removed.contains(i))
                        .map(|(_, t)| t)
                        .sum::<u32>();
                predicted = self.scale(predicted_raw);
                let note = Note::Lossy {
                    strategy: planned.action.strategy(),
                    messages: planned.removed.len(),
                    transcript_path: planned.transcript.path.clone(),
                };
                lossy = Some((note, planned.kept_over_budget));
                actions.push(Action::SaveTranscript(planned.transcript));
                actions.push(planned.action);
            }
        } else if let Some((dry_actions, _)) = &dry_run {
            // The summary the trigger will need, asked now; its span fixed by its key. The
            // conversation grows by about the distance to the trigger before the summary is
            // applied: the recent messages kept now are fewer by that much, so that about the
            // usual share is kept then.
            let original = original();
            let edited = edited_by(&original, &saved_by(dry_actions));
            let shift = compaction.trigger_fraction - history.ahead_fraction.unwrap_or(0.0);
            let config = crate::config::HistoryConfig {
                keep_recent_fraction: (history.keep_recent_fraction - shift.max(0.0))
                    .max(history.keep_recent_fraction / 3.0),
                ..history.clone()
            };
            ahead = asked_ahead(lossy_plan(&original, &edited, None, &config));
        }

        let pinned_tokens = self.scale(pinned_raw);
        if pinned_tokens > target {
            notes.push(Note::PinnedOverBudget {
                pinned_tokens,
                target,
            });
        }
        if hopeless {
            notes.push(Note::FixedOverTrigger {
                fixed_tokens: fixed,
                trigger: summarize_at,
                reason: format!(
                    "the system prompt, the tool definitions and the pinned content take {fixed} tokens, \
                     over the lossy trigger of {summarize_at}: summarizing the history cannot get under it, so \
                     the lossy tier waits until the request would not fit the window. Shorten the system \
                     prompt or the tools, unpin, or raise history.triggerFraction"
                ),
            });
        }
        if self.model.matched.is_none() && self.config.context_window.is_none() {
            notes.push(Note::UnknownModel {
                name: self.model.name.clone(),
                assumed_window: self.window(),
                did_you_mean: self.did_you_mean.clone(),
            });
        }
        if let Some(idle_seconds) = expired {
            notes.push(Note::CacheExpired {
                idle_seconds,
                lifetime_seconds: self.config.cache.lifetime(&self.pricing),
            });
        }
        if let Some(o) = overflow {
            notes.push(Note::Overflow {
                reported_tokens: o.reported_tokens,
                counted_tokens: tokens_before,
                budget_window: window,
                reason: format!(
                    "the provider refused the prompt as too long ({}); compacting against {window} tokens \
                     (our count of {tokens_before} tokens scaled to the provider's)",
                    o.reported_tokens
                        .map_or("no count given".to_owned(), |r| format!("{r} tokens by its count"))
                ),
            });
        }
        if let Some((note, _)) = &lossy {
            notes.push(note.clone());
        }
        // A summary pending says why the target is not met.
        let pending = notes
            .iter()
            .any(|n| matches!(n, Note::SummaryPending { .. }));
        if (tier2 || tier3) && predicted > target && !pending {
            let reason = match (&lossy, history.strategy) {
                (Some((_, Some(kept))), _) => format!(
                    "the system prompt and the most recent messages, kept verbatim, alone take {kept} tokens \
                     (over the keep budget of {:.0} % of the window)",
                    history.keep_recent_fraction * 100.0
                ),
                (Some(_), _) => match history.keep_recent_messages {
                    Some(n) => format!(
                        "the system prompt and the last {n} messages, kept verbatim (history.keepRecentMessages), \
                         need more than the target"
                    ),
                    None => "the messages kept verbatim (system prompt and recent messages) and the summary or notice \
                             need more than the target"
                        .into(),
                },
                (None, HistoryStrategy::Off) => "every reversible edit above the minimum saving is planned, and the \
                                                 lossy tier is off (history.strategy = \"off\")"
                    .into(),
                (None, _) => "every reversible edit above the minimum saving is planned; nothing older than the \
                              recent messages is left to summarize or drop"
                    .into(),
            };
            notes.push(Note::TargetNotMet {
                tokens_after: predicted,
                target,
                reason,
            });
        }
        let window = self.window();
        if predicted > window {
            notes.push(Note::OverBudget {
                tokens_after: predicted,
                window,
                reason: format!(
                    "{predicted} tokens remain after every planned edit; see the other notes"
                ),
            });
        }
        let cache = self.cache_impact(messages, total, &actions, cold);
        Ok(Plan {
            model: self.model.clone(),
            window,
            tokens_before,
            tokens_after: predicted,
            actions,
            notes,
            trigger: Trigger {
                compact_at,
                target,
                tier2,
                summarize_at,
                tier3: lossy.is_some(),
                hard_limit,
                manual,
                offload_only: false,
            },
            cache,
            replayed: Replayed::default(),
            ahead,
        })
    }

    /// The unscaled tokens an action removes, counted exactly as `count` will count the result.
    /// `counts`: the messages' counts (a tool part's body is read there).
    fn raw_saving(&self, messages: &[Message], counts: &[MessageCounts], action: &Action) -> u32 {
        let Some(edit) = action.store_edit() else {
            return 0;
        };
        let part = messages
            .get(edit.message_index)
            .and_then(|m| m.parts().get(edit.part_index));
        let body = counts
            .get(edit.message_index)
            .and_then(|c| c.parts.get(edit.part_index))
            .map(|&(body, _)| body);
        match (&edit.replace, part) {
            (Replace::Output { output }, Some(Part::ToolResult(result))) => body
                .unwrap_or_else(|| self.counter.output(&result.output))
                .saturating_sub(self.counter.output(output)),
            (Replace::InputField { field, value }, Some(Part::ToolCall(call))) => {
                let mut input = call.input.clone();
                input[field.as_str()] = serde_json::Value::String(value.clone());
                body.unwrap_or_else(|| self.counter.json(&call.input))
                    .saturating_sub(self.counter.json(&input))
            }
            // A text file becomes a text part.
            (Replace::FileText { value }, Some(file @ Part::File(_))) => self
                .counter
                .part(file)
                .saturating_sub(self.counter.text(value)),
            // A user text (string content or text part): counted as its text either way.
            (Replace::Text { value }, _) => self
                .counter
                .text(&edit.content)
                .saturating_sub(self.counter.text(value)),
            _ => 0,
        }
    }

    fn cache_impact(
        &self,
        messages: &[Message],
        total: impl Fn(usize) -> u32,
        actions: &[Action],
        cold: bool,
    ) -> CacheImpact {
        let Some(first) = actions.iter().filter_map(Action::first_message).min() else {
            return CacheImpact::default();
        };
        let last = messages.len().saturating_sub(1);
        let tokens_invalidated =
            self.scale((first.min(messages.len())..messages.len()).map(total).sum());
        let saved: u32 = actions
            .iter()
            .map(|a| {
                let (before, after) = a.tokens();
                before.saturating_sub(after)
            })
            .sum();
        // With the cache expired, the prompt is written again whatever the plan does.
        let break_cost = if cold {
            0.0
        } else {
            self.pricing.break_cost(tokens_invalidated)
        };
        let saving_per_call = self.pricing.saving_per_call(saved);
        CacheImpact {
            prefix_changing_edits: actions
                .iter()
                .filter(|a| a.first_message().is_some_and(|m| m < last))
                .count() as u32,
            first_changed_message: Some(first),
            tokens_invalidated,
            pricing: Some(self.pricing),
            break_cost: break_cost.round() as u32,
            saving_per_call: saving_per_call.round() as u32,
            break_even_calls: (break_cost > 0.0 && saving_per_call > 0.0)
                .then(|| (break_cost / saving_per_call).ceil() as u32),
        }
    }

    /// Applies the host's outcomes: only actions reported `written` (or `summarized`) change
    /// the conversation, and a lossy action only once its transcript is written.
    ///
    /// `messages` is the conversation as given to [`Compactor::plan`] (raw or replayed: the
    /// record is replayed again here). Every applied edit is added to the record.
    pub fn apply(
        &mut self,
        messages: Vec<Message>,
        plan: &Plan,
        outcomes: &[Outcome],
    ) -> Result<Applied> {
        let messages = if plan.trigger.offload_only {
            messages
        } else {
            match self.state.record.replay(&messages).0 {
                std::borrow::Cow::Borrowed(_) => messages,
                std::borrow::Cow::Owned(replayed) => replayed,
            }
        };
        self.apply_replayed(messages, plan, outcomes)
    }

    /// [`Compactor::apply`] on `messages` with the record already replayed onto them (what
    /// [`Compactor::plan_held_replayed`] gave for the same conversation, the record unchanged
    /// since): the replay is not made twice.
    pub(crate) fn apply_replayed(
        &mut self,
        mut messages: Vec<Message>,
        plan: &Plan,
        outcomes: &[Outcome],
    ) -> Result<Applied> {
        let record = !plan.trigger.offload_only;
        let by_id: HashMap<&str, &Outcome> = outcomes.iter().map(|o| (o.id(), o)).collect();
        if let Some(stray) = outcomes
            .iter()
            .find(|o| !plan.actions.iter().any(|a| a.id() == o.id()))
        {
            return Err(Error::PlanMismatch {
                action_id: Some(stray.id().to_owned()),
                message: format!(
                    "outcome for \"{}\", which is not an action of this plan",
                    stray.id()
                ),
            });
        }
        // A lossy step indexes into the conversation as planned: it must be that conversation.
        for action in &plan.actions {
            let Action::SaveTranscript(t) = action else {
                continue;
            };
            if lossy::transcript_path(&messages, &self.config.history) != t.path {
                return Err(Error::PlanMismatch {
                    action_id: Some(t.id.clone()),
                    message: "the conversation differs from the one planned (was it changed between plan and apply?)".into(),
                });
            }
        }
        let tokens_before = self.count(&messages);
        let mut events = Vec::with_capacity(plan.actions.len());
        let mut transcripts: HashMap<&str, std::result::Result<(), String>> = HashMap::new();
        for action in &plan.actions {
            let outcome = by_id.get(action.id()).copied();
            let event = match action {
                Action::SaveTranscript(t) => {
                    let status = self.store_outcome(action, outcome)?;
                    transcripts.insert(
                        &t.id,
                        match &status {
                            (EventStatus::Applied, _) => Ok(()),
                            (_, Some(error)) => Err(error.clone()),
                            _ => Err("the host did not report writing it".into()),
                        },
                    );
                    self.event(action, status, None, Some(t.path.clone()), 2)
                }
                Action::Summarize(s) => match transcripts.get(s.transcript.as_str()) {
                    Some(Ok(())) => {
                        let (status, text, error) = match outcome {
                            Some(Outcome::Summarized { text, .. }) if !text.trim().is_empty() => {
                                (EventStatus::Applied, text.as_str(), None)
                            }
                            Some(Outcome::Summarized { .. }) => (
                                EventStatus::Fallback,
                                s.fallback.as_str(),
                                Some("the summarizer returned an empty summary".to_owned()),
                            ),
                            Some(Outcome::Failed { error, .. }) => (
                                EventStatus::Fallback,
                                s.fallback.as_str(),
                                Some(error.clone()),
                            ),
                            Some(Outcome::Written { .. }) => {
                                return Err(wrong_outcome(&s.id, "summarized or failed"))
                            }
                            None => (EventStatus::NotExecuted, "", None),
                        };
                        if status == EventStatus::NotExecuted {
                            self.event(
                                action,
                                (status, None),
                                None,
                                Some(s.transcript_path.clone()),
                                0,
                            )
                        } else {
                            let text = self.capped_summary(text, s.request.max_tokens);
                            let summary = lossy::summary_message(s, &text);
                            let after = self.scale(self.counter.message(&summary));
                            if s.end > messages.len()
                                || s.keep.iter().any(|k| !(s.start..s.end).contains(k))
                            {
                                return Err(wrong_outcome(&s.id, "a span inside the conversation"));
                            }
                            // Pinned groups of the span stay, right after the summary.
                            let kept: Vec<Message> =
                                s.keep.iter().map(|&k| messages[k].clone()).collect();
                            if record {
                                // A summary made ahead is used (or its span is gone).
                                self.state.ahead = None;
                                self.ahead_failed = false;
                                self.state.record.push_span(
                                    Strategy::Summarize,
                                    &messages[s.start..s.end],
                                    summary.clone(),
                                    s.keep.iter().map(|&k| (k - s.start) as u32).collect(),
                                    s.transcript_path.clone(),
                                );
                            }
                            messages.splice(s.start..s.end, std::iter::once(summary).chain(kept));
                            self.event(
                                action,
                                (status, error),
                                Some(after),
                                Some(s.transcript_path.clone()),
                                0,
                            )
                        }
                    }
                    failed => self.event(
                        action,
                        (EventStatus::Failed, Some(transcript_missing(failed))),
                        None,
                        Some(s.transcript_path.clone()),
                        0,
                    ),
                },
                Action::Drop(d) => match transcripts.get(d.transcript.as_str()) {
                    Some(Ok(())) => {
                        if let Some(Outcome::Failed { error, .. }) = outcome {
                            self.event(
                                action,
                                (EventStatus::Failed, Some(error.clone())),
                                None,
                                Some(d.transcript_path.clone()),
                                0,
                            )
                        } else {
                            let end = d.messages.last().map_or(d.insert_at, |&i| i + 1);
                            let end = d.kept_until.map_or(end, |k| k.max(end));
                            if end > messages.len()
                                || d.messages.first().is_some_and(|&i| i < d.insert_at)
                            {
                                return Err(wrong_outcome(
                                    &d.id,
                                    "messages inside the conversation, after the notice",
                                ));
                            }
                            let notice = Message::user(d.notice.clone());
                            if record {
                                let keep = (d.insert_at..end)
                                    .filter(|i| d.messages.binary_search(i).is_err())
                                    .map(|i| (i - d.insert_at) as u32)
                                    .collect();
                                self.state.record.push_span(
                                    d.strategy,
                                    &messages[d.insert_at..end],
                                    notice.clone(),
                                    keep,
                                    d.transcript_path.clone(),
                                );
                            }
                            let removed: HashSet<usize> = d.messages.iter().copied().collect();
                            let mut index = 0;
                            messages.retain(|_| {
                                index += 1;
                                !removed.contains(&(index - 1))
                            });
                            messages.insert(d.insert_at.min(messages.len()), notice);
                            self.event(
                                action,
                                (EventStatus::Applied, None),
                                None,
                                Some(d.transcript_path.clone()),
                                0,
                            )
                        }
                    }
                    failed => self.event(
                        action,
                        (EventStatus::Failed, Some(transcript_missing(failed))),
                        None,
                        Some(d.transcript_path.clone()),
                        0,
                    ),
                },
                _ => {
                    let edit = action
                        .store_edit()
                        .expect("every other action is a store edit");
                    let status = self.store_outcome(action, outcome)?;
                    if status.0 == EventStatus::Applied {
                        let before = crate::record::edit_fingerprint(&messages, edit);
                        crate::edit::apply(&mut messages, edit)?;
                        let after = crate::record::edit_fingerprint(&messages, edit);
                        if let (true, Some(before), Some(after)) = (record, before, after) {
                            self.state
                                .record
                                .push_edit(edit, action.strategy(), before, after);
                        }
                    }
                    self.event(action, status, None, Some(edit.path.clone()), 1)
                }
            };
            events.push(event);
        }
        // A summary asked ahead whose span this call edited (tier 2 at the trigger, while the
        // summary is out): named as the span reads now (`ahead_reads`).
        if record {
            self.ahead_reads(&messages, &events);
        }
        // Counted again only when something changed it (every change is an applied event).
        let changed = events
            .iter()
            .any(|e| matches!(e.status, EventStatus::Applied | EventStatus::Fallback));
        let tokens_after = if changed {
            self.count(&messages)
        } else {
            tokens_before
        };
        self.record(&events, tokens_before, tokens_after);
        Ok(Applied {
            messages,
            events,
            tokens_before,
            tokens_after,
        })
    }

    /// The status of an action whose only work is store writes.
    fn store_outcome(
        &self,
        action: &Action,
        outcome: Option<&Outcome>,
    ) -> Result<(EventStatus, Option<String>)> {
        Ok(match outcome {
            Some(Outcome::Written { .. }) => (EventStatus::Applied, None),
            Some(Outcome::Failed { error, .. }) => (EventStatus::Failed, Some(error.clone())),
            Some(Outcome::Summarized { .. }) => {
                return Err(wrong_outcome(action.id(), "written or failed"))
            }
            None => (EventStatus::NotExecuted, None),
        })
    }

    fn event(
        &self,
        action: &Action,
        (status, error): (EventStatus, Option<String>),
        tokens_after: Option<u32>,
        path: Option<String>,
        files: u32,
    ) -> Event {
        let (before, planned_after) = action.tokens();
        let changed = matches!(status, EventStatus::Applied | EventStatus::Fallback);
        let after = if changed {
            tokens_after.unwrap_or(planned_after)
        } else {
            before
        };
        Event {
            action_id: action.id().to_owned(),
            strategy: action.strategy(),
            status,
            message_index: action.first_message().unwrap_or(0),
            path,
            tokens_before: before,
            tokens_after: after,
            tokens_saved: before.saturating_sub(after),
            files_written: if status == EventStatus::Applied {
                files
            } else {
                0
            },
            error,
            tool_call_id: action
                .store_edit()
                .filter(|e| !e.tool_call_id.is_empty())
                .map(|e| e.tool_call_id.clone()),
            tool_name: action
                .store_edit()
                .filter(|e| !e.tool_name.is_empty())
                .map(|e| e.tool_name.clone()),
            blocking: changed && matches!(action, Action::Summarize(s) if s.blocking),
            overflow: None,
        }
    }

    /// The transcript files a lossy action of `strategy` saves for `messages` (what a plan's
    /// [`Action::SaveTranscript`] holds). Hosts that keep plans small render it at write time.
    /// `messages` is the conversation as given to the plan (the record is replayed here too).
    pub fn transcript(&self, messages: &[Message], strategy: Strategy) -> SaveTranscript {
        lossy::transcript(
            &self.replay(messages),
            &self.config.history,
            strategy,
            true,
            &Memo::default(),
        )
    }

    /// Our raw count of a request: the messages, the reply priming and the tool definitions.
    /// Raw tokens of what no tier can shrink: reply priming, tools, leading system messages,
    /// pins and the carried plan.
    fn fixed_raw(
        &self,
        messages: &[Message],
        pinned_raw: u32,
        total: impl Fn(usize) -> u32,
    ) -> u32 {
        let system: u32 = (0..messages.len())
            .take_while(|&i| messages[i].role == crate::message::Role::System)
            .map(total)
            .sum();
        crate::counting::REPLY_PRIMING + self.tools_raw + system + pinned_raw
    }

    /// Records that the host asked the summary of [`Plan::ahead`] (it runs in the background):
    /// `key` and `end` are its `ahead_key` and `end`. Later plans do not ask it again while the
    /// conversation starts with its span, and the plan that reaches the lossy trigger waits
    /// for it (until the hard limit) rather than ask another. Persisted with the state.
    pub fn ask_ahead(&mut self, key: &str, end: usize) {
        self.state.ahead = Some(Ahead {
            key: key.to_owned(),
            end,
            at: None,
            text: None,
        });
    }

    /// The span of the summary asked ahead as it reads in `messages`, once `events` (a call's)
    /// applied edits inside it: the same messages, their content stored first, so the summary
    /// still fits them; named as they read now, the next call finds it (else every call would
    /// ask a longer span and wait for none). Nothing when no edit of `events` is inside it.
    pub(crate) fn ahead_reads(&mut self, messages: &[Message], events: &[Event]) {
        let Some(ahead) = self.state.ahead.as_mut() else {
            return;
        };
        let inside = events
            .iter()
            .any(|e| e.status == EventStatus::Applied && e.message_index < ahead.end);
        if inside && ahead.end <= messages.len() {
            let canonical: Vec<u64> = messages[..ahead.end]
                .iter()
                .map(crate::record::canonical_message)
                .collect();
            let now = crate::record::span_hex(messages, &canonical, ahead.end);
            ahead.at = (now != ahead.key).then_some(now);
        }
    }

    /// Hands back the summary asked ahead under `key` ([`crate::Summarize::ahead_key`]). `false` when
    /// the state no longer waits for it (another was asked since, or the span was summarized
    /// in a call): nothing changes. An empty text is refused as a failed summary: the state
    /// forgets the ask, as [`Compactor::forget_ahead`] does, so the lossy tier summarizes in
    /// the call (`true`: the state changed, and is saved).
    pub fn offer_summary(&mut self, key: &str, text: String) -> bool {
        self.made(key);
        match &mut self.state.ahead {
            Some(ahead) if ahead.key == key => {
                if text.trim().is_empty() {
                    self.state.ahead = None;
                    self.ahead_failed = true;
                    return true;
                }
                ahead.text = Some(text);
                true
            }
            _ => false,
        }
    }

    /// Forgets the summary asked ahead under `key` (the summarizer failed): the lossy tier
    /// summarizes in the call that reaches it. `false` when the state did not wait for it.
    pub fn forget_ahead(&mut self, key: &str) -> bool {
        self.made(key);
        if self.state.ahead.as_ref().is_some_and(|a| a.key == key) {
            self.state.ahead = None;
            self.ahead_failed = true;
            return true;
        }
        false
    }

    /// Records that this compactor handed the summary asked ahead under `key` out to be made
    /// (a call's [`crate::Request::Background`]): until its text or failure comes back, a call
    /// does not look for it beside the state ([`Compactor::ahead_to_read`]).
    pub fn making_ahead(&mut self, key: &str) {
        self.making = Some(key.to_owned());
    }

    fn made(&mut self, key: &str) {
        if self.making.as_deref() == Some(key) {
            self.making = None;
        }
    }

    /// The summary asked ahead whose text may be beside the state, to read before a call:
    /// `(key, path)` when a state path is kept and the state asked a summary it holds no text
    /// of, which another request is making (not this compactor: [`Compactor::making_ahead`]).
    pub fn ahead_to_read(&self) -> Option<(String, String)> {
        let path = self.state_path()?;
        let ahead = self.state.ahead.as_ref()?;
        let theirs = ahead.text.is_none() && self.making.as_deref() != Some(ahead.key.as_str());
        theirs.then(|| {
            (
                ahead.key.clone(),
                crate::lease::ahead_path(path, &ahead.key),
            )
        })
    }

    /// What was read at the path of the summary asked ahead under `key` (`None`: nothing
    /// there), at `now` (ms since the epoch, the wall clock: leases are between requests):
    /// still being made (read again before the next call), its summary (offered) or failed
    /// (forgotten: the lossy tier summarizes in the call), by [`crate::lease::AheadRead`].
    pub fn ahead_read(&mut self, key: &str, text: Option<&str>, now: f64) {
        match crate::lease::AheadRead::of(text, now) {
            crate::lease::AheadRead::Wait => {}
            crate::lease::AheadRead::Offer(summary) => {
                self.offer_summary(key, summary);
            }
            crate::lease::AheadRead::Forget => {
                self.forget_ahead(key);
            }
        }
    }

    /// Records that a model call goes out at `now` (milliseconds since the Unix epoch, the
    /// host's clock), for the next call's plan to know whether the provider's prompt cache has
    /// expired since ([`PlanOptions::now`]). Hosts call it after each `manage` / `compact`.
    ///
    /// Kept to the minute (`TIME_STEP_MS`): the time is recorded only when the provider has
    /// a cache and it moved a minute or more from the recorded one, so that a stateless host
    /// saves its state for the time at most once a minute (a KV store's daily write quota), and
    /// every host shape holds the same time. `true` when it recorded (the state changed).
    pub fn called_at(&mut self, now: u64) -> bool {
        let moved = self
            .state
            .last_call_at
            .is_none_or(|last| now.abs_diff(last) >= TIME_STEP_MS);
        let recorded = self.pricing.read < 1.0 && moved;
        if recorded {
            self.state.last_call_at = Some(now);
        }
        recorded
    }

    /// Seconds since the recorded last call when the provider's prompt cache has expired by
    /// `now` ([`PlanOptions::now`]): the recorded time may be up to [`TIME_STEP_MS`] older than
    /// the last call, so the cache has expired for sure only after its lifetime and that step.
    /// `None` while it may be warm, with no cache, or without both times.
    fn cache_expired(&self, now: Option<u64>) -> Option<u64> {
        let (now, last) = (now?, self.state.last_call_at?);
        let idle = now.saturating_sub(last);
        let lifetime = u64::from(self.config.cache.lifetime(&self.pricing)) * 1000;
        (self.pricing.read < 1.0 && idle > lifetime + TIME_STEP_MS).then_some(idle / 1000)
    }

    /// Messages before the latest provider compaction item are not read by the provider and
    /// not counted.
    fn raw_total(&self, messages: &[Message]) -> u32 {
        self.raw_total_from(messages, |i| self.counter.message(&messages[i]))
    }

    /// [`Compactor::raw_total`] with each message's tokens from `total`.
    fn raw_total_from(&self, messages: &[Message], total: impl Fn(usize) -> u32) -> u32 {
        let item = provider::latest_item(messages);
        crate::counting::REPLY_PRIMING
            + self.tools_raw
            + (0..messages.len())
                .filter(|&i| !provider::dropped(messages, item, i))
                .map(total)
                .sum::<u32>()
    }

    /// Tokens of `messages` for this model (exact for OpenAI encodings; estimated and calibrated
    /// for other families).
    pub fn count(&self, messages: &[Message]) -> u32 {
        self.scale(self.raw_total(messages))
    }

    /// How full the window is with `messages` as they would be sent: after the record is
    /// replayed (a raw history counts as its compacted form).
    pub fn usage(&self, messages: &[Message]) -> Usage {
        self.usage_held(messages, &mut Memo::default())
    }

    /// [`Compactor::usage`] with what earlier calls learned about `messages` (see
    /// [`Compactor::plan_held`]).
    pub(crate) fn usage_held(&self, messages: &[Message], memo: &mut Memo) -> Usage {
        let replayed = self.replay(messages);
        let tokens = match replayed {
            std::borrow::Cow::Borrowed(_) => {
                memo.count(messages, &self.counter);
                let counts = memo.counted();
                self.scale(self.raw_total_from(messages, |i| counts[i].total))
            }
            std::borrow::Cow::Owned(_) => self.count(&replayed),
        };
        let window = self.window();
        Usage {
            tokens,
            window,
            fraction: f64::from(tokens) / f64::from(window),
        }
    }

    /// Learns from the provider's reported input tokens for a request we counted as `predicted`
    /// (our count before calibration is applied). Ratios outside [0.5, 3] are ignored as
    /// misreports.
    pub fn observe_usage(&mut self, predicted_raw: u32, actual: u32) {
        if predicted_raw == 0 || actual == 0 {
            return;
        }
        let sample = f64::from(actual) / f64::from(predicted_raw);
        if !(0.5..=3.0).contains(&sample) {
            return;
        }
        let model = self.model.name.clone();
        let calibration = self.state.calibration.get_or_insert(Calibration {
            model,
            ratio: sample,
            samples: 0,
        });
        // Exponential moving average: recent requests matter most, one outlier does not swing it.
        calibration.ratio = if calibration.samples == 0 {
            sample
        } else {
            0.7 * calibration.ratio + 0.3 * sample
        };
        calibration.samples += 1;
    }

    /// Our uncalibrated count, the figure to pass back to [`Compactor::observe_usage`].
    pub fn count_raw(&self, messages: &[Message]) -> u32 {
        self.raw_total(messages)
    }

    /// Totals over the session so far.
    pub fn stats(&self) -> &Stats {
        &self.state.stats
    }

    /// Everything learned so far: persist it and pass it back with [`Compactor::with_state`].
    pub fn state(&self) -> &State {
        &self.state
    }

    /// [`Compactor::state`] as JSON, as it is saved.
    pub fn state_json(&self) -> String {
        // Our own type to a String: cannot fail (no non-string map keys, no IO).
        serde_json::to_string(&self.state).unwrap_or_default()
    }

    /// Keeps this compactor's state at `path` of the host's store, which holds `text` there
    /// (`None`: nothing, or it could not be read, `unread` says why: then the first save is
    /// over nothing). `loaded`: the compactor was built from `text`'s state (else from a state
    /// of the app's, which the next call saves). From then on, every call whose state changed
    /// saves it there with a conditional write ([`crate::CallRun`]). A text that is not a saved
    /// state is an `invalid_config` error naming the path.
    pub fn persist_at(
        &mut self,
        path: &str,
        text: Option<&str>,
        loaded: bool,
        unread: Option<String>,
    ) -> Result<()> {
        self.persist_later = None;
        let state = loaded.then(|| self.state_json());
        let mut persist = crate::stored::Persist::new(path, text, state.as_deref())?;
        persist.unread = unread;
        self.persist = Some(persist);
        Ok(())
    }

    /// `base` with what the agent must know about context management, for this compactor's
    /// store paths ([`crate::prompts::system_prompt`]).
    pub fn system_prompt(
        &self,
        base: &str,
        memory: Option<bool>,
        agents_md: Option<&str>,
    ) -> String {
        crate::prompts::system_prompt(
            base,
            &self.config.offload.path_prefix,
            &self.config.history.path_prefix,
            memory,
            agents_md,
        )
    }

    /// Keeps the state at `path` from the next call, which reads what is stored there first
    /// (a [`crate::Request::Read`] of its own): what the save after it is conditional on, and,
    /// with `load`, the state the compactor is built from ([`Compactor::persist_read`]). For a
    /// host that cannot read before the call (an async store, from a constructor), or a
    /// compactor given its state by the app (not `load`).
    pub fn persist_later(&mut self, path: &str, load: bool) {
        self.persist = None;
        self.persist_later = Some((path.to_owned(), load));
    }

    /// The state path a call must read first, and whether it loads it
    /// ([`Compactor::persist_later`]).
    pub fn persist_pending(&self) -> Option<(&str, bool)> {
        self.persist_later
            .as_ref()
            .map(|(path, load)| (path.as_str(), *load))
    }

    /// What the pending state path holds (`text`; `None`: nothing), or why it could not be read
    /// (`unread`): the compactor keeps it ([`Compactor::persist_at`]), built from it when it
    /// loads it. Text that is not a saved state: kept as unread when not loaded (the compactor
    /// saves only over nothing); when loaded, the `invalid_config` error naming the path, and
    /// the path is read again at the next call. A state to load comes back with its path: the
    /// caller builds the compactor again on the state (`None`: nothing stored;
    /// [`Compactor::rebuild`], with what it holds besides) and keeps the path
    /// ([`Compactor::persist_at`], `loaded`).
    pub fn persist_read(
        &mut self,
        text: Option<&str>,
        unread: Option<String>,
    ) -> Result<Option<(String, Option<String>)>> {
        let Some((path, load)) = self.persist_later.clone() else {
            return Ok(None);
        };
        if load && unread.is_none() {
            let state = crate::stored::Stored::parse(text, &path)?.state;
            return Ok(Some((path, state)));
        }
        if let Err(error) = self.persist_at(&path, text, false, unread) {
            self.persist_at(&path, None, false, Some(error.to_string()))?;
        }
        Ok(None)
    }

    /// The state path kept ([`Compactor::persist_at`]).
    pub fn state_path(&self) -> Option<&str> {
        self.persist.as_ref().map(crate::stored::Persist::path)
    }

    /// The state path kept and what is known of it ([`Compactor::persist_at`]).
    pub fn persist(&mut self) -> Option<&mut crate::stored::Persist> {
        self.persist.as_mut()
    }

    /// Built again on `state` (a lost save's stored state; `None`: nothing stored), keeping
    /// its configuration, counter and state path.
    pub fn rebuild(&mut self, state: Option<&str>) -> Result<()> {
        let state = match state {
            Some(json) => State::from_json(json)?,
            None => State::default(),
        };
        self.set_state(state)?;
        let json = self.state_json();
        if let Some(persist) = self.persist.as_mut() {
            persist.rebuilt(&json);
        }
        Ok(())
    }

    /// Restores a saved state. A calibration learned for another model is dropped.
    pub fn set_state(&mut self, mut state: State) -> Result<()> {
        if state.version > STATE_VERSION {
            return Err(Error::InvalidConfig {
                field: "state.version".into(),
                message: format!(
                    "state version {} is newer than this build ({STATE_VERSION})",
                    state.version
                ),
            });
        }
        state.version = STATE_VERSION;
        if state
            .calibration
            .as_ref()
            .is_some_and(|c| c.model != self.model.name)
        {
            state.calibration = None;
        }
        self.state = state;
        Ok(())
    }

    /// Tool results above this many tokens are offloaded.
    pub fn offload_threshold(&self) -> u32 {
        self.config.offload.threshold_tokens.min(self.offload_cap())
    }

    /// User message texts above this many tokens are offloaded (0: never).
    pub fn user_offload_threshold(&self) -> u32 {
        match self.config.offload.user_threshold_tokens {
            0 => 0,
            threshold => threshold.min(self.offload_cap()),
        }
    }

    /// `offload.maxWindowFraction` of the window: no single text may fill a small window.
    fn offload_cap(&self) -> u32 {
        ((f64::from(self.window()) * self.config.offload.max_window_fraction) as u32).max(1)
    }

    fn ratio(&self) -> f64 {
        self.state
            .calibration
            .as_ref()
            .map_or(self.model.token_ratio, |c| c.ratio)
    }

    fn scale(&self, raw: u32) -> u32 {
        let ratio = self.ratio();
        if ratio == 1.0 {
            return raw;
        }
        (f64::from(raw) * ratio).ceil() as u32
    }

    /// A summary over the `max_tokens` it was asked for (a summarizer that does not honour it)
    /// cut there, at a line or word end, with a note: the plan counted on that size. The cap is
    /// in the family's fixed ratio, not calibration, so every host cuts the same text.
    fn capped_summary<'t>(&self, text: &'t str, max_tokens: u32) -> std::borrow::Cow<'t, str> {
        let cap = lossy::summary_cap_raw(max_tokens, self.model.token_ratio);
        if self.counter.text(text) <= cap {
            return std::borrow::Cow::Borrowed(text);
        }
        let note = format!("\n[… summary cut at {max_tokens} tokens]");
        let budget = cap.saturating_sub(self.counter.text(&note));
        let ends: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
        // The longest prefix within the budget (counts grow with the prefix, near enough).
        let (mut lo, mut hi) = (0usize, ends.len());
        while lo < hi {
            let mid = (lo + hi + 1) / 2;
            if self.counter.text(&text[..ends[mid - 1]]) <= budget {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let mut prefix = if lo == 0 { "" } else { &text[..ends[lo - 1]] };
        if let Some(at) = prefix
            .rfind(['\n', ' '])
            .filter(|&at| at >= prefix.len() * 4 / 5)
        {
            prefix = &prefix[..at];
        }
        std::borrow::Cow::Owned(format!("{}{note}", prefix.trim_end()))
    }

    /// `raw` scaled by the model family's fixed ratio, ignoring calibration: for counts shown in
    /// replacement texts, which must not change as calibration learns.
    fn scale_fixed(&self, raw: u32) -> u32 {
        let ratio = self.model.token_ratio;
        if ratio == 1.0 {
            return raw;
        }
        (f64::from(raw) * ratio).ceil() as u32
    }

    fn record(&mut self, events: &[Event], tokens_before: u32, tokens_after: u32) {
        let stats = &mut self.state.stats;
        let applied: Vec<&Event> = events
            .iter()
            .filter(|e| matches!(e.status, EventStatus::Applied | EventStatus::Fallback))
            .collect();
        stats.actions_failed += events
            .iter()
            .filter(|e| e.status == EventStatus::Failed)
            .count() as u32;
        if applied.is_empty() {
            return;
        }
        stats.compactions += 1;
        for event in &applied {
            let s = stats.by_strategy.entry(event.strategy).or_default();
            s.events += 1;
            s.tokens_saved += u64::from(event.tokens_saved);
            s.messages_affected += 1;
            s.files_written += event.files_written;
            stats.files_written += event.files_written;
            stats.tokens_saved += u64::from(event.tokens_saved);
        }
        stats.timeline.push(UsagePoint {
            compaction: stats.compactions,
            tokens_before,
            tokens_after,
        });
        if stats.timeline.len() > TIMELINE_LIMIT {
            stats.timeline.remove(0);
        }
    }
}

fn wrong_outcome(id: &str, expected: &str) -> Error {
    Error::PlanMismatch {
        action_id: Some(id.to_owned()),
        message: format!("action \"{id}\" expects {expected}"),
    }
}

fn transcript_missing(outcome: Option<&std::result::Result<(), String>>) -> String {
    match outcome {
        Some(Err(error)) => {
            format!("not applied: the transcript was not saved ({error}); nothing was removed")
        }
        _ => "not applied: the plan has no saved transcript for it; nothing was removed".into(),
    }
}

fn fraction_of(window: u32, fraction: f64) -> u32 {
    (f64::from(window) * fraction) as u32
}

/// The compactor's counts, scaled for the model, as the planners need them; with the planned
/// messages' counts, a part's body is read there rather than counted again.
struct Scaled<'a>(&'a Compactor, Option<&'a [MessageCounts]>);

impl Scaled<'_> {
    fn body(&self, (m, p): (usize, usize)) -> Option<u32> {
        self.1?.get(m)?.parts.get(p).map(|&(body, _)| body)
    }
}

impl crate::edit::Tokens for Scaled<'_> {
    fn text(&self, text: &str) -> u32 {
        self.0.scale(self.0.counter.text(text))
    }
    fn output(&self, output: &crate::message::ToolOutput) -> u32 {
        self.0.scale(self.0.counter.output(output))
    }
    fn json(&self, value: &serde_json::Value) -> u32 {
        self.0.scale(self.0.counter.json(value))
    }
    fn shown_text(&self, text: &str) -> u32 {
        self.0.scale_fixed(self.0.counter.text(text))
    }
    fn shown_output(&self, output: &crate::message::ToolOutput) -> u32 {
        self.0.scale_fixed(self.0.counter.output(output))
    }
    fn output_at(&self, at: (usize, usize), output: &crate::message::ToolOutput) -> u32 {
        self.body(at)
            .map_or_else(|| self.output(output), |n| self.0.scale(n))
    }
    fn shown_output_at(&self, at: (usize, usize), output: &crate::message::ToolOutput) -> u32 {
        self.body(at)
            .map_or_else(|| self.shown_output(output), |n| self.0.scale_fixed(n))
    }
    fn json_at(&self, at: (usize, usize), value: &serde_json::Value) -> u32 {
        self.body(at)
            .map_or_else(|| self.json(value), |n| self.0.scale(n))
    }
}

fn resolve_model(config: &Config) -> ModelInfo {
    let name = config.model.clone().unwrap_or_default();
    let mut model = models::lookup(&name).unwrap_or_else(|| models::unknown(&name));
    if let Some(window) = config.context_window {
        model.context_window = window;
    }
    if let Some(max_output) = config.max_output_tokens {
        model.max_output_tokens = max_output;
    }
    if let Some(encoding) = config.encoding {
        model.encoding = encoding;
    }
    // A window given without a known model: count exactly with o200k rather than inflate.
    if model.matched.is_none() && config.context_window.is_some() {
        model.token_ratio = 1.0;
    }
    // Counted exactly by its loaded tokenizer: no factor.
    if model.loaded_tokenizer().is_some() {
        model.token_ratio = 1.0;
    }
    model
}

/// The tiers' planners, each called once per plan, kept out of [`Compactor::plan_replayed`]
/// (where LLVM would inline them all). The wasm engine compiles a function that runs long again
/// with its optimizing compiler, in the background, in time that grows faster than the function:
/// the planner as one function (42 kB of wasm) took 60-140 ms of a 2-core machine's time during
/// every fresh process's first plan (`node --trace-wasm-compilation-times`).
mod apart {
    use crate::config::{CompactionConfig, Config};
    use crate::edit::Tokens;
    use crate::memo::Memo;
    use crate::message::Message;
    use crate::plan::{Action, StoreEdit};
    use crate::tiers::{lossy, offload, tier2};

    #[inline(never)]
    pub(super) fn offload(
        messages: &[Message],
        config: &Config,
        thresholds: (u32, u32, u32),
        tokens: &dyn Tokens,
    ) -> Vec<StoreEdit> {
        let areas = offload::StoreAreas {
            prefixes: [
                &config.offload.path_prefix,
                &config.offload.user_path_prefix,
                &config.compaction.path_prefix,
                &config.history.path_prefix,
            ],
            path_fields: &config.compaction.path_fields,
        };
        offload::plan(messages, &config.offload, &areas, thresholds, tokens)
    }

    #[inline(never)]
    pub(super) fn tier2(
        messages: &[Message],
        config: &CompactionConfig,
        window: u32,
        tokens: &dyn Tokens,
        taken: &mut tier2::Taken,
        memo: &Memo,
    ) -> Vec<Action> {
        tier2::candidates(messages, config, window, tokens, taken, memo)
    }

    #[inline(never)]
    pub(super) fn lossy(inputs: &lossy::Inputs) -> Option<lossy::Planned> {
        lossy::plan(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chat of `turns` answered turns after a system prompt.
    fn chat(turns: usize) -> Vec<Message> {
        let mut values =
            vec![serde_json::json!({"role": "system", "content": "You are a research agent."})];
        for t in 0..turns {
            let words = |n: usize| {
                (0..n)
                    .map(|i| format!("word{t}.{i}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            values.push(serde_json::json!({"role": "user", "content": words(60)}));
            values.push(serde_json::json!({"role": "assistant", "content": words(120)}));
        }
        crate::parse_messages(&serde_json::Value::Array(values).to_string()).unwrap()
    }

    #[test]
    fn a_summary_asked_ahead_under_a_key_of_the_whole_prefix_is_still_found() {
        let config = Config {
            model: Some("gpt-4o".into()),
            context_window: Some(8_000),
            ..Config::default()
        };
        let background = PlanOptions {
            background: true,
            ..PlanOptions::default()
        };
        let compactor = Compactor::new(config).unwrap();
        let (turns, ahead) = (1..200)
            .find_map(|n| {
                let plan = compactor.plan_with_options(&chat(n), &background).unwrap();
                plan.ahead.map(|a| (n, a))
            })
            .expect("a summary asked ahead");
        let messages = chat(turns);
        // The key a state saved before spans left their system prompt out holds.
        let old = crate::record::conversation_hex_of(
            messages[..ahead.end]
                .iter()
                .map(crate::record::canonical_message),
        );
        assert_ne!(Some(&old), ahead.ahead_key.as_ref());
        let asks_again = |key: &str| {
            let mut c =
                Compactor::with_state(compactor.config().clone(), compactor.state().clone())
                    .unwrap();
            c.ask_ahead(key, ahead.end);
            c.plan_with_options(&chat(turns + 1), &background)
                .unwrap()
                .ahead
                .is_some()
        };
        assert!(!asks_again(&old), "the old key is the summary's");
        assert!(
            !asks_again(ahead.ahead_key.as_deref().unwrap()),
            "so is the new one"
        );
        assert!(asks_again("0000000000000000"), "another key is not");
    }
}
