//! One call of the loop — `manage` (the window filled up) or `compact` (someone asked) — as a
//! sans-IO state machine (docs/LOOP.md, slice 2), in the manner of str0m's `poll_output` /
//! `handle_input`: the core decides, the host only carries out what it is asked.
//!
//! A [`Session`] plans; asks the host's `onPreCompact` hook ([`Request::Ask`]) when tier 2 or 3
//! or a manual compaction is about to run, and judges its answer (a cancel returns the
//! conversation with the earlier compactions replayed, unless the prompt is past the hard limit;
//! custom instructions make a new plan); hands out every store write of the plan in one batch
//! ([`Request::Write`], which a host may run in parallel); asks for a summary
//! ([`Request::Summarize`]) only once its transcript is stored, and once per request text; then
//! applies the outcomes. Nothing blocks and nothing is read from a clock: a host enforces its
//! own timeouts and answers a stalled request with [`Reply::Failed`].
//!
//! [`Compactor::manage`] and [`Compactor::compact`] drive a session against a [`Host`] for
//! native Rust callers (blocking, one request at a time).
//!
//! The example is [`Host`]'s.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use std::borrow::Cow;

use crate::compactor::{Compactor, Overflow, PlanOptions, TriggerKind};
use crate::error::{Error, Result};
use crate::message::Message;
use crate::plan::{
    Action, Applied, Event, Outcome, Plan, Replace, SaveTranscript, Strategy, Summarize,
};

/// What a session was started for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Call {
    /// `auto` (`manage`: the window filled up) or `manual` (`compact`: every tier runs).
    pub trigger: TriggerKind,
    /// Custom instructions for the summary (a `compact({instructions})`).
    pub instructions: Option<String>,
    /// The provider refused the last prompt as too long (a `recover`): compact harder.
    pub overflow: Option<Overflow>,
    /// The host runs summaries in the background ([`PlanOptions::background`]).
    pub background: bool,
    /// The time of the call, by the host's clock ([`PlanOptions::now`]). The host records it
    /// when the call is done ([`Compactor::called_at`]).
    pub now: Option<u64>,
    /// Tier 1 only, nothing recorded ([`PlanOptions::offload_only`]): a tool's output at the
    /// moment it returns ([`crate::OffloadRun`]).
    pub offload_only: bool,
}

impl Call {
    /// The plan options of the call (no extra instructions).
    pub(crate) fn plan_options(&self) -> PlanOptions {
        PlanOptions {
            trigger: self.trigger,
            instructions: self.instructions.clone().filter(|s| !s.trim().is_empty()),
            overflow: self.overflow,
            background: self.background,
            now: self.now,
            offload_only: self.offload_only,
            ..PlanOptions::default()
        }
    }
}

/// What a [`Session`] needs of the compactor it runs on: [`Compactor`] itself, or a binding's
/// compactor that holds the conversation (which plans with what its earlier plans learned, and
/// renders a transcript only when it is written).
pub trait SessionCore {
    /// [`Compactor::plan_with_options`].
    fn plan(&mut self, messages: &[Message], options: &PlanOptions) -> Result<Plan>;
    /// [`Compactor::apply`].
    fn apply(
        &mut self,
        messages: Vec<Message>,
        plan: &Plan,
        outcomes: &[Outcome],
    ) -> Result<Applied>;
    /// [`Compactor::replay`].
    fn replay<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]>;
    /// [`Compactor::transcript`]: the files of a transcript planned with
    /// [`PlanOptions::defer_transcript`].
    fn transcript(&self, messages: &[Message], strategy: Strategy) -> SaveTranscript;
}

impl SessionCore for Compactor {
    fn plan(&mut self, messages: &[Message], options: &PlanOptions) -> Result<Plan> {
        self.plan_with_options(messages, options)
    }
    fn apply(
        &mut self,
        messages: Vec<Message>,
        plan: &Plan,
        outcomes: &[Outcome],
    ) -> Result<Applied> {
        Compactor::apply(self, messages, plan, outcomes)
    }
    fn replay<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        Compactor::replay(self, messages)
    }
    fn transcript(&self, messages: &[Message], strategy: Strategy) -> SaveTranscript {
        Compactor::transcript(self, messages, strategy)
    }
}

/// One IO request of a session: the host carries it out and hands the outcome back with
/// [`Session::handle`] under the same `id`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Io {
    /// Pairs the request with its reply; unique within the session.
    pub id: u64,
    /// What to do.
    pub request: Request,
}

/// What the host is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Request {
    /// Store `content` at `path` (`store.write`). Reply [`Reply::Done`] or [`Reply::Failed`].
    Write {
        /// The store path.
        path: String,
        /// What to store, byte for byte.
        content: String,
        /// `content` is one string of the conversation's (a text tool output, a user's text
        /// file), not text joined from several: a host that keeps the app's original strings
        /// (the npm package's lone surrogates) restores it whole.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        whole: bool,
        /// `content` is the stored copy of the whole output of the tool result at
        /// `[message, part]` of the conversation: a host that keeps the app's own values may
        /// write that value as the app writes it (the Python host's lone surrogates).
        #[serde(skip_serializing_if = "Option::is_none")]
        output: Option<[usize; 2]>,
    },
    /// Summarize with the host's LLM: send `summary.request`. Reply [`Reply::Text`] or
    /// [`Reply::Failed`].
    Summarize {
        /// The plan's summarize action: the request for the LLM, and the span it covers.
        summary: Summarize,
    },
    /// Call the host's `onPreCompact` hook. Reply [`Reply::Decision`].
    Ask {
        /// What the hook is told.
        #[serde(rename = "preCompact")]
        pre_compact: PreCompact,
    },
    /// A call's ([`crate::CallRun`]): hand the core every message of the call's conversation
    /// (a binding's `sync(0, ...)`), then reply [`Reply::Done`]. `rerun`: the compactor was
    /// built again on the stored state after a lost save, and the host's shortcuts onto its
    /// last result no longer hold: the call's own messages.
    Resync {
        /// After a lost save.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        rerun: bool,
    },
    /// A call's: start the summary asked ahead of need (`ahead`, as a plan's [`Plan::ahead`])
    /// off the critical path, then reply [`Reply::Done`]; its text goes back with
    /// [`Compactor::offer_summary`] (or [`Compactor::forget_ahead`]) when it comes.
    Background {
        /// The summary to make.
        ahead: Summarize,
    },
    /// A call's, asked only when a save is due: reply [`Reply::Conversation`] with the call's
    /// messages' [`crate::stored::conversation_hashes`].
    Conversation,
    /// A call's: write `text` at `path` only while the store holds `expected` (`None`:
    /// nothing). Reply [`Reply::Saved`], [`Reply::Refused`] with what the store holds, or
    /// [`Reply::Failed`].
    Save {
        /// The state path.
        path: String,
        /// The text the store must still hold.
        expected: Option<String>,
        /// The text to write.
        text: String,
        /// The longest the host waits for the store (a summary lease's: what is left of its
        /// wait), beside its own store timeout.
        #[serde(rename = "timeoutMs", skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// A summary lease's: read `path`. Reply [`Reply::Read`] or [`Reply::Failed`].
    Read {
        /// The store path.
        path: String,
        /// As [`Request::Save`]'s.
        #[serde(rename = "timeoutMs", skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// A summary lease's: write `text` at `path` (a summary kept beside the state). Reply
    /// [`Reply::Done`] or [`Reply::Failed`].
    Put {
        /// The store path.
        path: String,
        /// The text to write.
        text: String,
        /// As [`Request::Save`]'s.
        #[serde(rename = "timeoutMs", skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// A summary lease's: wait `ms` (another request holds the lease), then reply
    /// [`Reply::Woke`].
    Sleep {
        /// How long.
        ms: u64,
    },
}

/// What the `onPreCompact` hook is told (the plan itself: [`Session::plan`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreCompact {
    /// Why the compaction runs.
    pub trigger: TriggerKind,
    /// Tokens of the conversation now (the earlier compactions replayed).
    pub current_tokens: u32,
    /// Tokens the compaction aims for.
    pub target_tokens: u32,
    /// Messages of the conversation as given.
    pub message_count: usize,
}

/// The `onPreCompact` hook's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PreCompactDecision {
    /// Do not compact (overridden past the hard limit, where the next request would fail).
    pub cancel: bool,
    /// Added to the summary's instructions (the plan is made again with them).
    pub custom_instructions: Option<String>,
    /// Used as the summary instead of asking the summarizer.
    pub custom_summary: Option<String>,
}

/// The host's answer to one [`Io`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Reply {
    /// A write landed.
    Done,
    /// The summarizer's text.
    Text {
        /// The summary.
        text: String,
    },
    /// The hook's decision.
    Decision {
        /// What it decided.
        #[serde(flatten)]
        decision: PreCompactDecision,
    },
    /// The request failed or did not answer in time; `error` says why, in the host's words.
    Failed {
        /// Why.
        error: String,
    },
    /// The call's conversation hashes ([`Request::Conversation`]).
    Conversation {
        /// [`crate::stored::conversation_hashes`] of the call's messages.
        conversation: String,
    },
    /// The state was saved ([`Request::Save`]).
    Saved,
    /// The store refused the save: it holds `current` (`None`: nothing).
    Refused {
        /// What the store holds.
        current: Option<String>,
    },
    /// What the store holds at the path read ([`Request::Read`]; `None`: nothing).
    Read {
        /// The text.
        text: Option<String>,
    },
    /// The sleep is over ([`Request::Sleep`]).
    Woke,
}

/// What [`Session::poll`] gives the host.
#[derive(Debug, Clone, PartialEq)]
pub enum Poll {
    /// Carry these out (in any order, or all at once) and hand each outcome back.
    Io(Vec<Io>),
    /// Waiting for outcomes of requests already handed out.
    Wait,
    /// The call is over.
    Done(Box<Managed>),
}

/// The result of a `manage` or `compact` call.
#[derive(Debug, Clone, PartialEq)]
pub struct Managed {
    /// The conversation to send next.
    pub messages: Vec<Message>,
    /// One per action applied, in plan order (none when nothing was done or it was cancelled).
    pub events: Vec<Event>,
    /// The plan the call carried out (the last one, after custom instructions).
    pub plan: Plan,
    /// `onPreCompact` cancelled: nothing new was applied.
    pub cancelled: bool,
    /// `onPreCompact` cancelled past the hard limit, so the compaction ran anyway.
    pub cancel_overridden: bool,
    /// Tokens of the conversation before the call's actions (the earlier compactions replayed).
    pub tokens_before: u32,
    /// Tokens of `messages`.
    pub tokens_after: u32,
    /// With a kept state ([`Compactor::load`]): why it was not saved (the store failed), or
    /// could not be read. The result is good; the next call tries again.
    pub state_error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Start,
    Asking,
    Writes,
    Writing,
    Summarizing,
    Finished,
}

#[derive(Debug, Clone)]
enum Pending {
    Ask,
    /// One of an action's writes; the action is written when all of them are.
    Write {
        action: String,
    },
    Summarize {
        action: String,
        prompt: String,
    },
}

/// One `manage` or `compact` call on one [`Compactor`] (see the module docs). Start it with
/// [`Session::new`], then alternate [`Session::poll`] and [`Session::handle`] until `poll`
/// returns [`Poll::Done`]. The compactor must not be used for anything else meanwhile.
#[derive(Debug)]
pub struct Session {
    call: Call,
    messages: Vec<Message>,
    plan: Option<Plan>,
    step: Step,
    next_id: u64,
    pending: BTreeMap<u64, Pending>,
    /// Writes of each action not answered yet, and its first failure.
    writes_left: HashMap<String, (usize, Option<String>)>,
    outcomes: Vec<Outcome>,
    custom_summary: Option<String>,
    cancel_overridden: bool,
    /// Summaries made in this call, by request text: a prompt is summarized once per call.
    summaries: HashMap<String, String>,
    /// Summaries waiting for a summary of the same text already asked for.
    twins: Vec<(String, String)>,
    /// The result, once decided (a cancel decides it in `handle`).
    done: Option<Managed>,
}

impl Session {
    /// Starts a call on `messages` (the conversation as the host holds it: raw, or as the
    /// last call returned it). Nothing is planned until the first [`Session::poll`].
    pub fn new(messages: Vec<Message>, call: Call) -> Self {
        Self {
            call,
            messages,
            plan: None,
            step: Step::Start,
            next_id: 0,
            pending: BTreeMap::new(),
            writes_left: HashMap::new(),
            outcomes: Vec::new(),
            custom_summary: None,
            cancel_overridden: false,
            summaries: HashMap::new(),
            twins: Vec::new(),
            done: None,
        }
    }

    /// The conversation the session runs on, until the result takes it.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The conversation the session was started on, when the result did not take it (a
    /// cancelled compaction returns the record replayed onto it): a host that holds the
    /// conversation keeps holding it. Empty otherwise.
    pub fn take_input(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.messages)
    }

    /// The current plan, once the first poll made it (what `onPreCompact` is shown).
    pub fn plan(&self) -> Option<&Plan> {
        self.plan.as_ref()
    }

    /// The next step: IO to carry out, a wait for outcomes, or the result. After `Done`, a
    /// poll is a typed error.
    pub fn poll(&mut self, compactor: &mut dyn SessionCore) -> Result<Poll> {
        loop {
            if !self.pending.is_empty() {
                return Ok(Poll::Wait);
            }
            if let Some(managed) = self.done.take() {
                self.step = Step::Finished;
                return Ok(Poll::Done(Box::new(managed)));
            }
            match self.step {
                Step::Start => {
                    let plan = compactor.plan(&self.messages, &self.options(None))?;
                    // The summary the lossy tier needs, asked ahead rather than made now: the
                    // hook decides it as it would one made in the call.
                    let deferred = plan.ahead.is_some()
                        && plan
                            .notes
                            .iter()
                            .any(|n| matches!(n, crate::Note::SummaryPending { .. }));
                    if !is_work(&plan) && !deferred {
                        let messages = std::mem::take(&mut self.messages);
                        self.done = Some(Managed::unchanged(messages, plan));
                        continue;
                    }
                    let compacting =
                        plan.trigger.tier2 || plan.trigger.tier3 || plan.trigger.manual || deferred;
                    let ask = PreCompact {
                        trigger: self.call.trigger,
                        current_tokens: plan.tokens_before,
                        target_tokens: plan.trigger.target,
                        message_count: self.messages.len(),
                    };
                    self.plan = Some(plan);
                    if compacting {
                        self.step = Step::Asking;
                        return Ok(Poll::Io(vec![
                            self.io(Pending::Ask, Request::Ask { pre_compact: ask })
                        ]));
                    }
                    self.step = Step::Writes;
                }
                Step::Asking => unreachable!("the hook's reply moves the session on"),
                Step::Writes => {
                    self.step = Step::Writing;
                    let writes = self.start_writes(compactor);
                    if !writes.is_empty() {
                        return Ok(Poll::Io(writes));
                    }
                }
                Step::Writing => {
                    self.step = Step::Summarizing;
                    let summaries = self.start_summaries();
                    if !summaries.is_empty() {
                        return Ok(Poll::Io(summaries));
                    }
                }
                Step::Summarizing => {
                    let plan = self.plan.take().expect("a plan");
                    let messages = std::mem::take(&mut self.messages);
                    let applied = compactor.apply(messages, &plan, &self.outcomes)?;
                    let mut plan = plan;
                    if let Some(note) = failed_note(&applied, &plan) {
                        plan.notes.push(note);
                    }
                    self.done = Some(Managed {
                        messages: applied.messages,
                        events: applied.events,
                        plan,
                        cancelled: false,
                        cancel_overridden: self.cancel_overridden,
                        tokens_before: applied.tokens_before,
                        tokens_after: applied.tokens_after,
                        state_error: None,
                    });
                }
                Step::Finished => {
                    return Err(Error::PlanMismatch {
                        action_id: None,
                        message: "poll after the session was done".into(),
                    })
                }
            }
        }
    }

    /// Hands back the outcome of request `id`. An id that is not in flight, or a reply of the
    /// wrong kind, is a typed error (the session is unchanged).
    pub fn handle(&mut self, compactor: &mut dyn SessionCore, id: u64, reply: Reply) -> Result<()> {
        let Some(pending) = self.pending.get(&id) else {
            return Err(Error::PlanMismatch {
                action_id: None,
                message: format!("reply to request {id}, which is not in flight"),
            });
        };
        let mismatch = |wanted: &str| Error::PlanMismatch {
            action_id: None,
            message: format!("reply to request {id}: expected {wanted}"),
        };
        match (pending, reply) {
            (Pending::Ask, Reply::Decision { decision }) => {
                self.pending.remove(&id);
                return self.decide(compactor, decision);
            }
            (Pending::Ask, Reply::Failed { error }) => {
                // A hook that throws decides nothing: the compaction runs as planned.
                let _ = error;
                self.pending.remove(&id);
                return self.decide(compactor, PreCompactDecision::default());
            }
            (Pending::Ask, _) => return Err(mismatch("a decision or a failure")),
            (Pending::Write { action }, reply @ (Reply::Done | Reply::Failed { .. })) => {
                let action = action.clone();
                self.pending.remove(&id);
                let (left, failure) = self
                    .writes_left
                    .get_mut(&action)
                    .expect("an action's writes are counted");
                *left -= 1;
                if let Reply::Failed { error } = reply {
                    failure.get_or_insert(error);
                }
                if *left == 0 {
                    let failure = failure.take();
                    self.writes_left.remove(&action);
                    self.outcomes.push(match failure {
                        None => Outcome::Written { id: action },
                        Some(error) => Outcome::Failed { id: action, error },
                    });
                }
            }
            (Pending::Write { .. }, _) => return Err(mismatch("done or a failure")),
            (
                Pending::Summarize { action, prompt },
                reply @ (Reply::Text { .. } | Reply::Failed { .. }),
            ) => {
                let (action, prompt) = (action.clone(), prompt.clone());
                self.pending.remove(&id);
                match reply {
                    Reply::Text { text } => {
                        self.summaries.insert(prompt.clone(), text.clone());
                        self.outcomes.push(Outcome::Summarized { id: action, text });
                    }
                    Reply::Failed { error } => self.outcomes.push(Outcome::Failed {
                        id: action,
                        error: format!("summarizer failed: {error}"),
                    }),
                    _ => unreachable!(),
                }
                // Actions whose request was the same text share the answer.
                let done = self.summaries.get(&prompt).cloned();
                for (twin, _) in self.twins.iter().filter(|(_, p)| *p == prompt) {
                    self.outcomes.push(match &done {
                        Some(text) => Outcome::Summarized {
                            id: twin.clone(),
                            text: text.clone(),
                        },
                        None => Outcome::Failed {
                            id: twin.clone(),
                            error: "summarizer failed".into(),
                        },
                    });
                }
                self.twins.retain(|(_, p)| *p != prompt);
            }
            (Pending::Summarize { .. }, _) => return Err(mismatch("a text or a failure")),
        }
        Ok(())
    }

    fn options(&self, extra: Option<&str>) -> PlanOptions {
        let instructions = [self.call.instructions.as_deref(), extra]
            .into_iter()
            .flatten()
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>();
        PlanOptions {
            instructions: (!instructions.is_empty()).then(|| instructions.join("\n")),
            ..self.call.plan_options()
        }
    }

    fn decide(
        &mut self,
        compactor: &mut dyn SessionCore,
        decision: PreCompactDecision,
    ) -> Result<()> {
        let plan = self.plan.as_ref().expect("a plan before the hook");
        if decision.cancel {
            // No deadlock: past the hard limit the next request would fail, so compaction runs.
            // `tokens_before` counts the conversation with the record replayed, which is what a
            // cancel returns: the override is judged on the prompt that would be sent.
            if plan.tokens_before <= plan.trigger.hard_limit {
                let messages = compactor.replay(&self.messages).into_owned();
                let mut plan = self.plan.take().expect("a plan");
                // Nothing is asked ahead either.
                plan.ahead = None;
                let tokens = plan.tokens_before;
                self.done = Some(Managed {
                    messages,
                    events: Vec::new(),
                    plan,
                    cancelled: true,
                    cancel_overridden: false,
                    tokens_before: tokens,
                    tokens_after: tokens,
                    state_error: None,
                });
                return Ok(());
            }
            self.cancel_overridden = true;
        }
        let instructions = decision
            .custom_instructions
            .filter(|s| !s.trim().is_empty());
        let custom = decision.custom_summary.filter(|s| !s.trim().is_empty());
        // The app's own summary needs no summarizer: applied now, not asked ahead.
        let now = custom.is_some() && plan.ahead.is_some();
        if instructions.is_some() || now {
            let mut options = self.options(instructions.as_deref());
            options.background &= !now;
            self.plan = Some(compactor.plan(&self.messages, &options)?);
        }
        self.custom_summary = custom;
        self.step = Step::Writes;
        Ok(())
    }

    /// Every write of the plan, in one batch (a deferred transcript rendered now).
    fn start_writes(&mut self, compactor: &dyn SessionCore) -> Vec<Io> {
        let mut plan = self.plan.take().expect("a plan");
        for action in &mut plan.actions {
            if let Action::SaveTranscript(t) = action {
                if t.json.is_empty() && t.markdown.is_empty() {
                    let files = compactor.transcript(&self.messages, t.lossy_strategy);
                    t.json = files.json;
                    t.markdown = files.markdown;
                }
            }
        }
        let mut ios = Vec::new();
        for action in &plan.actions {
            let writes = action.writes();
            if writes.is_empty() {
                continue;
            }
            self.writes_left
                .insert(action.id().to_owned(), (writes.len(), None));
            for (path, content) in writes {
                let pending = Pending::Write {
                    action: action.id().to_owned(),
                };
                let edit = action.store_edit();
                let whole =
                    matches!(edit, Some(e) if matches!(e.replace, Replace::FileText { .. }));
                let output = edit
                    .filter(|e| matches!(e.replace, Replace::Output { .. }))
                    .map(|e| [e.message_index, e.part_index]);
                ios.push(self.io(
                    pending,
                    Request::Write {
                        path: path.to_owned(),
                        content: content.to_owned(),
                        whole,
                        output,
                    },
                ));
            }
        }
        self.plan = Some(plan);
        ios
    }

    /// The summaries whose transcript is stored: a custom summary answers at once, a request
    /// text already asked for in this call waits for that answer.
    fn start_summaries(&mut self) -> Vec<Io> {
        let plan = self.plan.take().expect("a plan");
        let mut ios = Vec::new();
        let mut asked: Vec<String> = Vec::new();
        for action in &plan.actions {
            let Action::Summarize(summary) = action else {
                continue;
            };
            let stored = self
                .outcomes
                .iter()
                .any(|o| matches!(o, Outcome::Written { id } if *id == summary.transcript));
            if !stored {
                continue;
            }
            if let Some(text) = self.custom_summary.as_ref().or(summary.ready.as_ref()) {
                // The hook's own summary, or one made ahead of need: the summarizer is not asked.
                self.outcomes.push(Outcome::Summarized {
                    id: summary.id.clone(),
                    text: text.clone(),
                });
            } else if let Some(text) = self.summaries.get(&summary.request.prompt) {
                self.outcomes.push(Outcome::Summarized {
                    id: summary.id.clone(),
                    text: text.clone(),
                });
            } else if asked.contains(&summary.request.prompt) {
                self.twins
                    .push((summary.id.clone(), summary.request.prompt.clone()));
            } else {
                asked.push(summary.request.prompt.clone());
                let pending = Pending::Summarize {
                    action: summary.id.clone(),
                    prompt: summary.request.prompt.clone(),
                };
                ios.push(self.io(
                    pending,
                    Request::Summarize {
                        summary: summary.clone(),
                    },
                ));
            }
        }
        self.plan = Some(plan);
        ios
    }

    fn io(&mut self, pending: Pending, request: Request) -> Io {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.insert(id, pending);
        Io { id, request }
    }
}

/// The note of a call whose failed actions left the conversation over the target its plan
/// reached (see [`crate::Note::ActionsFailed`]).
fn failed_note(applied: &crate::Applied, plan: &Plan) -> Option<crate::Note> {
    let failed: Vec<&crate::Event> = applied
        .events
        .iter()
        .filter(|e| {
            matches!(
                e.status,
                crate::EventStatus::Failed | crate::EventStatus::NotExecuted
            )
        })
        .collect();
    let target = plan.trigger.target;
    // Only a miss the failures made: over the target a plan reached, or (a call that only
    // offloads, below tier 2, is not aiming at the target) over where tier 2 fires and over
    // what the plan would have left: a failed offload can leave a call far over the window.
    // One that could not reach the target has its `target-not-met` note.
    let missed = (plan.trigger.tier2 || plan.trigger.manual)
        && plan.tokens_after <= target
        && applied.tokens_after > target;
    let left_over = applied.tokens_after > plan.trigger.compact_at.max(plan.tokens_after);
    if failed.is_empty() || !(missed || left_over) {
        return None;
    }
    let first = failed[0];
    Some(crate::Note::ActionsFailed {
        failed: failed.len(),
        tokens_after: applied.tokens_after,
        target,
        reason: format!(
            "{} of {} actions failed ({}: {}): their content stays in the conversation, {} tokens against a target of {}; the next call tries again",
            failed.len(),
            applied.events.len(),
            first.action_id,
            first.error.as_deref().unwrap_or("no reason given"),
            applied.tokens_after,
            target
        ),
    })
}

impl Managed {
    pub(crate) fn unchanged(messages: Vec<Message>, plan: Plan) -> Self {
        let tokens = plan.tokens_before;
        Self {
            messages,
            events: Vec::new(),
            plan,
            cancelled: false,
            cancel_overridden: false,
            tokens_before: tokens,
            tokens_after: tokens,
            state_error: None,
        }
    }
}

/// A plan that changes something: actions, or earlier compactions to replay.
pub(crate) fn is_work(plan: &Plan) -> bool {
    !plan.actions.is_empty() || plan.replayed.edits + plan.replayed.spans > 0
}
