//! The `Compactor`: plans against a model's budget, applies host outcomes, keeps stats and
//! calibration in a serializable state.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::message::{Message, Part};
use crate::models::{self, ModelInfo};
use crate::offload;
use crate::plan::{Action, Applied, CacheImpact, Event, EventStatus, Note, Outcome, Plan, Replace, Trigger};
use crate::tier2;
use crate::tokens::{CachedCounter, TokenCounter};

/// Plans compactions for one model and configuration. Cheap to keep for a whole session: it
/// caches token counts by content hash.
#[derive(Debug)]
pub struct Compactor {
    config: Config,
    model: ModelInfo,
    counter: CachedCounter,
    state: State,
}

/// Everything a compactor learns over a session, as plain data. Persist it (edge workers are
/// stateless per request) and pass it back with [`Compactor::with_state`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct State {
    pub version: u32,
    /// Learned ratio of provider-reported input tokens to our count, for this model.
    pub calibration: Option<Calibration>,
    pub stats: Stats,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Calibration {
    pub model: String,
    pub ratio: f64,
    pub samples: u32,
}

/// Totals over the session (SPEC §9).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Stats {
    /// `apply` calls that changed the conversation.
    pub compactions: u32,
    pub tokens_saved: u64,
    pub files_written: u32,
    pub actions_failed: u32,
    pub by_strategy: BTreeMap<crate::plan::Strategy, StrategyStats>,
    /// Tokens before and after each compaction, oldest first (the last 100).
    pub timeline: Vec<UsagePoint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StrategyStats {
    pub events: u32,
    pub tokens_saved: u64,
    pub files_written: u32,
    pub messages_affected: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsagePoint {
    pub compaction: u32,
    pub tokens_before: u32,
    pub tokens_after: u32,
}

const TIMELINE_LIMIT: usize = 100;
const STATE_VERSION: u32 = 1;

/// How full the window is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub tokens: u32,
    pub window: u32,
    pub fraction: f64,
}

impl Compactor {
    /// A compactor with exact tiktoken counting for the model's encoding.
    pub fn new(config: Config) -> Result<Self> {
        Self::with_state(config, State::default())
    }

    /// Resumes from a state saved with [`Compactor::state`].
    pub fn with_state(config: Config, state: State) -> Result<Self> {
        config.validate()?;
        let model = resolve_model(&config);
        let mut counter = CachedCounter::new(model.encoding);
        counter.image_tokens = config.image_tokens;
        counter.file_tokens = config.file_tokens;
        let mut compactor = Self { config, model, counter, state: State::default() };
        compactor.set_state(state)?;
        Ok(compactor)
    }

    /// Replaces the token counter (e.g. a provider's own tokenizer).
    pub fn with_counter(mut self, counter: Box<dyn TokenCounter>) -> Self {
        let mut cached = CachedCounter::with_counter(self.model.encoding, counter);
        cached.image_tokens = self.config.image_tokens;
        cached.file_tokens = self.config.file_tokens;
        self.counter = cached;
        self
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn model(&self) -> &ModelInfo {
        &self.model
    }

    pub fn window(&self) -> u32 {
        self.model.context_window
    }

    /// Plans the compaction of `messages`. Pure: no IO, same input → same plan.
    pub fn plan(&self, messages: &[Message]) -> Result<Plan> {
        self.plan_with(messages, false)
    }

    /// Plans a manual compaction: tier 2 runs even below its trigger and takes every candidate.
    pub fn plan_manual(&self, messages: &[Message]) -> Result<Plan> {
        self.plan_with(messages, true)
    }

    fn plan_with(&self, messages: &[Message], manual: bool) -> Result<Plan> {
        crate::message::validate(messages)?;
        let window = self.window();
        let raw_before = self.counter.messages(messages);
        let tokens_before = self.scale(raw_before);
        let threshold = self.offload_threshold();
        let mut actions: Vec<Action> =
            offload::plan(messages, &self.config.offload, threshold, &Scaled(self))
                .into_iter()
                .map(Action::Offload)
                .collect();
        // Predict from raw counts and scale once: scaling each action's saving separately would
        // round differently from counting the result.
        let mut predicted_raw = raw_before.saturating_sub(actions.iter().map(|a| self.raw_saving(messages, a)).sum());
        let mut predicted = self.scale(predicted_raw);

        let compaction = &self.config.compaction;
        let compact_at = fraction_of(window, compaction.trigger_fraction);
        let target = fraction_of(window, compaction.target_fraction);
        let tier2 = manual || predicted > compact_at;
        if tier2 {
            let mut taken: tier2::Taken = actions.iter().map(|a| (a.edit().message_index, a.edit().part_index)).collect();
            for candidate in tier2::candidates(messages, compaction, &Scaled(self), &mut taken) {
                // Automatic compaction stops at the target; a manual one takes every
                // reversible edit (the user asked for room).
                if predicted <= target && !manual {
                    break;
                }
                predicted_raw = predicted_raw.saturating_sub(self.raw_saving(messages, &candidate));
                predicted = self.scale(predicted_raw);
                actions.push(candidate);
            }
        }

        let mut notes = Vec::new();
        if self.model.matched.is_none() && self.config.context_window.is_none() {
            notes.push(Note::UnknownModel { name: self.model.name.clone(), assumed_window: window });
        }
        if tier2 && predicted > target {
            notes.push(Note::TargetNotMet {
                tokens_after: predicted,
                target,
                reason: "every reversible edit above the minimum saving is planned; the rest is conversation text \
                         and recent tool results, which only summarization (tier 3, not in this version) can shrink"
                    .into(),
            });
        }
        if predicted > window {
            notes.push(Note::OverBudget {
                tokens_after: predicted,
                window,
                reason: format!("{predicted} tokens remain after every planned edit; see the other notes"),
            });
        }
        let cache = self.cache_impact(messages, &actions);
        Ok(Plan {
            model: self.model.clone(),
            window,
            tokens_before,
            tokens_after: predicted,
            actions,
            notes,
            trigger: Trigger { compact_at, target, tier2 },
            cache,
        })
    }

    /// The unscaled tokens an action removes, counted exactly as `count` will count the result.
    fn raw_saving(&self, messages: &[Message], action: &Action) -> u32 {
        let edit = action.edit();
        let part = messages.get(edit.message_index).and_then(|m| m.parts().get(edit.part_index));
        match (&edit.replace, part) {
            (Replace::Output { output }, Some(Part::ToolResult(result))) => {
                self.counter.output(&result.output).saturating_sub(self.counter.output(output))
            }
            (Replace::InputField { field, value }, Some(Part::ToolCall(call))) => {
                let mut input = call.input.clone();
                input[field.as_str()] = serde_json::Value::String(value.clone());
                self.counter.json(&call.input).saturating_sub(self.counter.json(&input))
            }
            _ => 0,
        }
    }

    fn cache_impact(&self, messages: &[Message], actions: &[Action]) -> CacheImpact {
        let Some(first) = actions.iter().map(|a| a.edit().message_index).min() else {
            return CacheImpact::default();
        };
        let last = messages.len().saturating_sub(1);
        CacheImpact {
            prefix_changing_edits: actions.iter().filter(|a| a.edit().message_index < last).count() as u32,
            first_changed_message: Some(first),
            tokens_invalidated: self.scale(messages[first..].iter().map(|m| self.counter.message(m)).sum()),
        }
    }

    /// Applies the host's outcomes: only actions reported `written` change the conversation.
    pub fn apply(&mut self, mut messages: Vec<Message>, plan: &Plan, outcomes: &[Outcome]) -> Result<Applied> {
        let by_id: HashMap<&str, &Outcome> = outcomes.iter().map(|o| (o.id(), o)).collect();
        if let Some(stray) = outcomes.iter().find(|o| !plan.actions.iter().any(|a| a.id() == o.id())) {
            return Err(Error::PlanMismatch {
                action_id: Some(stray.id().to_owned()),
                message: format!("outcome for \"{}\", which is not an action of this plan", stray.id()),
            });
        }
        let tokens_before = self.count(&messages);
        let mut events = Vec::with_capacity(plan.actions.len());
        for action in &plan.actions {
            let edit = action.edit();
            let (status, error) = match by_id.get(edit.id.as_str()) {
                Some(Outcome::Written { .. }) => {
                    crate::edit::apply(&mut messages, edit)?;
                    (EventStatus::Applied, None)
                }
                Some(Outcome::Failed { error, .. }) => (EventStatus::Failed, Some(error.clone())),
                None => (EventStatus::NotExecuted, None),
            };
            let applied = status == EventStatus::Applied;
            events.push(Event {
                action_id: edit.id.clone(),
                strategy: action.strategy(),
                status,
                message_index: edit.message_index,
                path: Some(edit.path.clone()),
                tokens_before: edit.tokens_before,
                tokens_after: if applied { edit.tokens_after } else { edit.tokens_before },
                tokens_saved: if applied { edit.tokens_before.saturating_sub(edit.tokens_after) } else { 0 },
                error,
            });
        }
        let tokens_after = self.count(&messages);
        self.record(&events, tokens_before, tokens_after);
        Ok(Applied { messages, events, tokens_before, tokens_after })
    }

    /// Tokens of `messages` for this model (exact for OpenAI encodings; estimated and calibrated
    /// for other families).
    pub fn count(&self, messages: &[Message]) -> u32 {
        self.scale(self.counter.messages(messages))
    }

    pub fn usage(&self, messages: &[Message]) -> Usage {
        let tokens = self.count(messages);
        let window = self.window();
        Usage { tokens, window, fraction: f64::from(tokens) / f64::from(window) }
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
        let calibration = self.state.calibration.get_or_insert(Calibration { model, ratio: sample, samples: 0 });
        // Exponential moving average: recent requests matter most, one outlier does not swing it.
        calibration.ratio = if calibration.samples == 0 { sample } else { 0.7 * calibration.ratio + 0.3 * sample };
        calibration.samples += 1;
    }

    /// Our uncalibrated count, the figure to pass back to [`Compactor::observe_usage`].
    pub fn count_raw(&self, messages: &[Message]) -> u32 {
        self.counter.messages(messages)
    }

    pub fn stats(&self) -> &Stats {
        &self.state.stats
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    /// Restores a saved state. A calibration learned for another model is dropped.
    pub fn set_state(&mut self, mut state: State) -> Result<()> {
        if state.version > STATE_VERSION {
            return Err(Error::InvalidConfig {
                field: "state.version".into(),
                message: format!("state version {} is newer than this build ({STATE_VERSION})", state.version),
            });
        }
        state.version = STATE_VERSION;
        if state.calibration.as_ref().is_some_and(|c| c.model != self.model.name) {
            state.calibration = None;
        }
        self.state = state;
        Ok(())
    }

    /// Tool results above this many tokens are offloaded.
    pub fn offload_threshold(&self) -> u32 {
        let fraction = (f64::from(self.window()) * self.config.offload.max_window_fraction) as u32;
        self.config.offload.threshold_tokens.min(fraction.max(1))
    }

    fn scale(&self, raw: u32) -> u32 {
        let ratio = self.state.calibration.as_ref().map_or(self.model.token_ratio, |c| c.ratio);
        if ratio == 1.0 {
            return raw;
        }
        (f64::from(raw) * ratio).ceil() as u32
    }

    fn record(&mut self, events: &[Event], tokens_before: u32, tokens_after: u32) {
        let stats = &mut self.state.stats;
        let applied: Vec<&Event> = events.iter().filter(|e| e.status == EventStatus::Applied).collect();
        stats.actions_failed += events.iter().filter(|e| e.status == EventStatus::Failed).count() as u32;
        if applied.is_empty() {
            return;
        }
        stats.compactions += 1;
        for event in &applied {
            let s = stats.by_strategy.entry(event.strategy).or_default();
            s.events += 1;
            s.tokens_saved += u64::from(event.tokens_saved);
            s.messages_affected += 1;
            if event.path.is_some() {
                s.files_written += 1;
                stats.files_written += 1;
            }
            stats.tokens_saved += u64::from(event.tokens_saved);
        }
        stats.timeline.push(UsagePoint { compaction: stats.compactions, tokens_before, tokens_after });
        if stats.timeline.len() > TIMELINE_LIMIT {
            stats.timeline.remove(0);
        }
    }
}

fn fraction_of(window: u32, fraction: f64) -> u32 {
    (f64::from(window) * fraction) as u32
}

/// The compactor's counts, scaled for the model, as the planners need them.
struct Scaled<'a>(&'a Compactor);

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
    model
}
