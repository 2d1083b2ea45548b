//! What every binding does the same way: JSON strings in, JSON strings out, the core's
//! [`Error`] out on failure. The wasm-bindgen binding (`wasm/`) and the Component Model binding
//! (`component/`) each wrap these in a few lines that turn an [`Error`] into their host's error
//! (a thrown JSON string, a WIT `error` record) — both carrying [`error_json`], so a plan, a
//! count or an error is the same text whichever host asked. The tokenizer compiler
//! (`compiler.rs`) uses only [`error_json`] and [`tokenizer_data`].
#![cfg_attr(not(any(feature = "wasm", feature = "component")), allow(dead_code))]

use std::borrow::Cow;

use crate::loop_context::{Iteration, LoopConfig, LoopContext};
use crate::message::CallIds;
use crate::plan::{Applied, Event, SaveTranscript};
use crate::session::is_work;
use crate::{
    parse_messages, Action, Call, CallCore, CallDone, CallPoll, CallRun, Compactor, Config, Error,
    Io, Message, Outcome, Plan, PlanOptions, Reply, Result, SessionCore, State, Strategy,
};

/// The error as a JSON object: its fields (`code`, and `field`, `index`, ... by kind) and the
/// human `message`.
pub(crate) fn error_json(error: &Error) -> String {
    // Through its text, not `to_value` (see `loop_step`).
    let mut value: serde_json::Value = serde_json::to_string(error)
        .and_then(|text| serde_json::from_str(&text))
        .unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("message".into(), error.to_string().into());
    }
    value.to_string()
}

/// Parses host-supplied JSON: malformed text is `malformed_json`; a plan or outcomes of the
/// wrong shape is `plan_mismatch` (the core did not produce them); anything else of the wrong
/// shape is `invalid_config` naming `what`.
///
/// Through `serde_json::Value`, so that a type's deserializer is the one over a `Value` (which
/// the messages and the config need anyway), not a second one over the text: a smaller wasm core
/// (these inputs are small: a state, outcomes, a loop context).
pub(crate) fn parse<T: serde::de::DeserializeOwned>(what: &str, json: &str) -> Result<T> {
    serde_json::from_str::<serde_json::Value>(json)
        .and_then(serde_json::from_value)
        .map_err(|e| {
            let message = crate::error::shape_message(&e.to_string());
            if e.is_syntax() || e.is_eof() {
                Error::json(what, &e)
            } else if matches!(what, "plan" | "outcomes") {
                // A plan or outcomes the core did not produce: a mismatch with what it planned.
                Error::PlanMismatch {
                    action_id: None,
                    message: format!("{what}: {message}"),
                }
            } else {
                // Host-supplied data (an iteration, a loop context, a state): invalid input.
                Error::InvalidConfig {
                    field: what.to_owned(),
                    message,
                }
            }
        })
}

pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    // Serializing our own types to a String cannot fail (no non-string map keys, no IO).
    serde_json::to_string(value).unwrap_or_default()
}

/// Exact token count of `text` in an encoding (`o200k_base`, `cl100k_base`) or a loaded
/// tokenizer.
pub(crate) fn count_tokens(text: &str, encoding: &str) -> Result<u32> {
    Ok(u32::try_from(crate::count_tokens_named(text, encoding)?).unwrap_or(u32::MAX))
}

/// The registry's entry for a model (`ModelInfo`) as JSON; an unknown model gets the defaults.
#[cfg(any(feature = "wasm", feature = "component", feature = "counter"))]
pub(crate) fn model_info(name: &str) -> String {
    to_json(&crate::model_info(name))
}

/// `text`'s tokens for a model (`ModelCount`) as JSON.
#[cfg(any(feature = "wasm", feature = "component", feature = "counter"))]
pub(crate) fn count_model_tokens(text: &str, model: &str) -> Result<String> {
    Ok(to_json(&crate::count_for_model(text, model)?))
}

/// Builds a tokenizer from a Hugging Face `tokenizer.json` under `name`; returns
/// `{"name","kind","tokens"}` as JSON. Loading a loaded name keeps the first.
#[cfg(feature = "component")]
pub(crate) fn load_tokenizer(name: &str, json: &str) -> Result<String> {
    if name.parse::<crate::Encoding>().is_ok() {
        return Err(encoding_name(name));
    }
    crate::counting::hf::load(name, json)?;
    tokenizer_info(name)
}

fn encoding_name(name: &str) -> Error {
    Error::InvalidConfig {
        field: "name".into(),
        message: format!("\"{name}\" is an encoding; give the tokenizer another name"),
    }
}

/// `{"name","kind","tokens"}` of the loaded tokenizer `name` as JSON.
#[cfg(any(feature = "wasm", feature = "component", feature = "counter"))]
pub(crate) fn tokenizer_info(name: &str) -> Result<String> {
    if name.parse::<crate::Encoding>().is_ok() {
        return Err(encoding_name(name));
    }
    let t = crate::counting::hf::get(name).ok_or_else(|| Error::EncodingNotLoaded {
        name: name.to_owned(),
    })?;
    Ok(serde_json::json!({"name": t.name(), "kind": t.kind(), "tokens": t.len()}).to_string())
}

/// The tokens of a request broken down per message, part and tool definition (`Breakdown` as
/// JSON), counted with an encoding or a loaded tokenizer.
pub(crate) fn count_breakdown(
    messages_json: &str,
    tools_json: &str,
    encoding: &str,
) -> Result<String> {
    let messages = parse_messages(messages_json)?;
    let tools: Vec<crate::config::ToolDefinition> = parse("tools", tools_json)?;
    let counter = crate::counter_named(encoding)?;
    Ok(to_json(&counter.breakdown(&messages, &tools)))
}

/// Loads an encoding from rank data (the `CCR4`, `CCR3` or `CCR1` format of `data/*.ranks`) or a
/// tokenizer from its prebuilt data (`CCH1`, `counting::prebuilt`). Loading a loaded one is a
/// no-op.
pub(crate) fn load_encoding(encoding: &str, data: Vec<u8>) -> Result<()> {
    crate::counting::load_data(encoding, data)
}

/// The prebuilt data (`CCH1`) of a tokenizer from its `tokenizer.json` or tekken file (npm's
/// `compileTokenizer` and `loadTokenizer`, through the compiler module; the Component does not
/// offer it).
#[cfg(feature = "compiler")]
pub(crate) fn tokenizer_data(name: &str, json: &str) -> Result<Vec<u8>> {
    if name.parse::<crate::Encoding>().is_ok() {
        return Err(encoding_name(name));
    }
    crate::counting::prebuilt::write(name, json)
}

/// Whether the encoding (or loaded tokenizer) can count now.
pub(crate) fn encoding_loaded(encoding: &str) -> Result<bool> {
    Ok(crate::can_count(encoding))
}

/// A compactor and the conversation it holds. The host syncs the conversation incrementally
/// (`sync`: keep what is unchanged, append the rest), so a conversation that grew by one message
/// crosses the boundary as one message. Every method that takes `messages_json` uses those
/// messages instead when given, and the held conversation when not.
pub(crate) struct HeldCompactor {
    inner: Compactor,
    held: Vec<Message>,
    /// The tool calls of the held messages validated so far (a sync validates what it appends).
    calls: CallIds,
    /// What plans learned about the held messages (kept while they are).
    memo: std::sync::Mutex<crate::memo::Memo>,
    /// What plans learned about the conversation of the call under way, and its tool calls,
    /// taken with the held messages ([`CallCore::take_held`]): a sync, `usage` or `plan` while
    /// the call runs is about another conversation, in `memo` and `calls`. Back there when the
    /// call is done.
    run_known: Option<(crate::memo::Memo, CallIds)>,
    /// The summary request's prompt that the last plan left apart (see [`HeldCompactor::plan`]).
    prompt: std::sync::Mutex<String>,
    /// The messages (JSON) of the last session's result, left apart (see `session_poll`).
    result: String,
    /// The conversation the session's apply was given: the result's messages that equal one of
    /// it cross as its index ([`as_given`]).
    given: Vec<Message>,
    /// Whether the text the last sync appended escaped a UTF-16 surrogate (`None`: unknown).
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    surrogates: Option<bool>,
    /// The session's write contents and summary prompts left apart, by request id (see
    /// `session_poll`).
    contents: hashbrown::HashMap<u64, String>,
    /// The last plans made, as JSON and as made, newest last (see [`HeldCompactor::apply`]).
    plans: std::sync::Mutex<std::collections::VecDeque<(String, Plan)>>,
    /// The `manage` / `compact` call under way on the held conversation, which holds it until
    /// it is done (see [`HeldCompactor::session_start`]): the core's loop ([`CallRun`]).
    run: Option<CallRun>,
    /// The session's last plan replayed the record onto its conversation: the result (`None`:
    /// as given), for the session's apply of the same conversation. Forgotten whenever the
    /// conversation or the record may have changed otherwise (a sync, a new call, a rebuild, an
    /// apply).
    replayed: Option<Option<Vec<Message>>>,
    /// Tool outputs on their way to the model (`offload_start`), by run id: several may be
    /// under way at once (a step's parallel tool calls), beside a call.
    offloads: hashbrown::HashMap<u32, crate::OffloadRun>,
    /// The id of the next offload run.
    next_offload: u32,
    /// The uncalibrated count of the prompt the last call returned: what the provider's report
    /// of it calibrates against, once ([`HeldCompactor::observe_usage`]).
    sent_raw: Option<u32>,
}

/// The held compactor as a session sees it: plans learn into the memo, transcripts are
/// rendered when written, and an apply forgets what was learned.
impl SessionCore for HeldCompactor {
    fn plan(&mut self, messages: &[Message], options: &PlanOptions) -> Result<Plan> {
        let options = PlanOptions {
            defer_transcript: true,
            ..options.clone()
        };
        let memo = call_memo(&mut self.run_known, &mut self.memo);
        let (plan, replayed) = self.inner.plan_held_replayed(messages, &options, memo)?;
        // The session applies to these very messages, the record unchanged: its apply takes
        // the replay made here (forgotten by whatever else changes the conversation or record).
        self.replayed = (!options.offload_only).then_some(replayed);
        Ok(plan)
    }
    fn apply(
        &mut self,
        messages: Vec<Message>,
        plan: &Plan,
        outcomes: &[Outcome],
    ) -> Result<Applied> {
        // The conversation given stays for the result's crossing (`as_given`): a call's result
        // is mostly messages it left as they were, which cross as indices.
        let applied = match self.replayed.take() {
            Some(Some(replayed)) if !plan.trigger.offload_only => {
                self.given = messages;
                self.inner.apply_replayed(replayed, plan, outcomes)?
            }
            Some(None) if !plan.trigger.offload_only => {
                self.given = messages.clone();
                self.inner.apply_replayed(messages, plan, outcomes)?
            }
            _ if !plan.trigger.offload_only => {
                self.given = messages.clone();
                self.inner.apply(messages, plan, outcomes)?
            }
            _ => self.inner.apply(messages, plan, outcomes)?,
        };
        let memo = call_memo(&mut self.run_known, &mut self.memo);
        memo.rescaled();
        memo.truncate(0);
        Ok(applied)
    }
    fn replay<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        self.inner.replay(messages)
    }
    fn transcript(&self, messages: &[Message], strategy: Strategy) -> SaveTranscript {
        self.inner.transcript(messages, strategy)
    }
}

/// What plans learned about the conversation a session plans: the call's (`run_known`), or the
/// held one's (`memo`) when no call took it.
fn call_memo<'a>(
    run_known: &'a mut Option<(crate::memo::Memo, CallIds)>,
    memo: &'a mut std::sync::Mutex<crate::memo::Memo>,
) -> &'a mut crate::memo::Memo {
    match run_known {
        Some((memo, _)) => memo,
        None => memo.get_mut().unwrap_or_else(|e| e.into_inner()),
    }
}

/// ... and runs a call on the conversation it holds.
impl CallCore for HeldCompactor {
    fn compactor(&mut self) -> &mut Compactor {
        &mut self.inner
    }
    fn plan_held(&mut self, options: &PlanOptions) -> Result<Plan> {
        let options = PlanOptions {
            defer_transcript: true,
            ..options.clone()
        };
        let memo = self.memo.get_mut().unwrap_or_else(|e| e.into_inner());
        self.inner.plan_held(&self.held, &options, memo)
    }
    fn take_held(&mut self) -> Vec<Message> {
        let memo = self.memo.get_mut().unwrap_or_else(|e| e.into_inner());
        let memo = std::mem::replace(memo, crate::memo::Memo::held());
        self.run_known = Some((memo, std::mem::take(&mut self.calls)));
        std::mem::take(&mut self.held)
    }
    fn rebuild(&mut self, state: Option<&str>) -> Result<()> {
        HeldCompactor::rebuild(self, state)
    }
    fn observe_refused(&mut self, reported: u32) {
        // The prompt the provider refused: the conversation as the record makes it (a host that
        // sends the raw history sent the compacted one).
        let raw = self.inner.count_raw(&SessionCore::replay(self, &self.held));
        self.observe_usage(reported, Some(raw));
    }
}

/// What [`HeldCompactor::session_poll`] hands the host.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum SessionPoll<'a> {
    /// Carry these out and hand each outcome back; `plan` is the plan an `ask` shows the hook.
    Io {
        ios: Vec<Io>,
        #[serde(skip_serializing_if = "Option::is_none")]
        plan: Option<&'a Plan>,
    },
    Wait,
    /// The call is over. `messages` is absent when the conversation is as given (the host has
    /// it), and otherwise crosses as [`as_given`] writes it; the plan crosses without its bulk,
    /// as [`HeldCompactor::plan`]'s does.
    #[serde(rename_all = "camelCase")]
    Done {
        /// The conversation differs from the one given (applied, or a cancel that replayed).
        changed: bool,
        /// The plan's work was applied: the result is the conversation the core holds now.
        applied: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        messages: Option<Vec<Given<'a>>>,
        events: &'a [Event],
        plan: &'a Plan,
        cancelled: bool,
        cancel_overridden: bool,
        tokens_before: u32,
        tokens_after: u32,
        /// A save that failed, or a state that could not be read.
        #[serde(skip_serializing_if = "Option::is_none")]
        state_error: Option<&'a str>,
        /// The store kept refusing the state's saves (the host's `state_conflict`).
        #[serde(skip_serializing_if = "Option::is_none")]
        conflict: Option<&'a crate::Conflict>,
        /// A recovery that had nothing left to compact: the host's `context_overflow`.
        #[serde(skip_serializing_if = "Option::is_none")]
        overflow: Option<&'a crate::OverflowFailure>,
    },
}

/// One message of a call's result as it crosses to the host ([`as_given`]).
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Given<'a> {
    /// The index of the message of the call's input that this one equals: the host hands back
    /// its own object, so not one byte of a message the call left as it was changes, and
    /// nothing of it is written, copied or decoded.
    At(usize),
    /// A message the call made or changed.
    Made(&'a Message),
}

/// `output` as it crosses: each message equal to one of `input` (in order: each at or after
/// the one before it, each used once) as that one's index, the others whole. Most are the next
/// one of `input`; past a message the call changed or made, a cheap sketch of each message (its
/// role, part kinds, text lengths and tool call ids, made when first needed) keeps the search to
/// the messages that may be equal.
fn as_given<'a>(input: &[Message], output: &'a [Message]) -> Vec<Given<'a>> {
    let mut sketches: Vec<Option<u64>> = vec![None; input.len()];
    let mut from = 0;
    output
        .iter()
        .map(|message| {
            let found = if input.get(from) == Some(message) {
                Some(from)
            } else {
                let m = crate::record::sketch(message);
                (from..input.len()).find(|&i| {
                    *sketches[i].get_or_insert_with(|| crate::record::sketch(&input[i])) == m
                        && input[i] == *message
                })
            };
            match found {
                Some(i) => {
                    from = i + 1;
                    Given::At(i)
                }
                None => Given::Made(message),
            }
        })
        .collect()
}

/// How many of its latest plans a compactor can apply (a host applies the plan it just made;
/// racing calls may have made a few more in between).
const PLANS_KEPT: usize = 16;

impl HeldCompactor {
    pub(crate) fn new(config_json: &str, state_json: Option<&str>) -> Result<Self> {
        let config = Config::from_json(config_json)?;
        let state = match state_json {
            Some(json) => State::from_json(json)?,
            None => State::default(),
        };
        Ok(HeldCompactor {
            inner: Compactor::with_state(config, state)?,
            held: Vec::new(),
            calls: CallIds::default(),
            memo: std::sync::Mutex::new(crate::memo::Memo::held()),
            run_known: None,
            prompt: std::sync::Mutex::default(),
            result: String::new(),
            given: Vec::new(),
            surrogates: None,
            contents: hashbrown::HashMap::new(),
            plans: std::sync::Mutex::default(),
            run: None,
            replayed: None,
            offloads: hashbrown::HashMap::new(),
            next_offload: 0,
            sent_raw: None,
        })
    }

    /// [`Compactor::persist_at`].
    pub(crate) fn persist_at(
        &mut self,
        path: &str,
        text: Option<&str>,
        loaded: bool,
        unread: Option<&str>,
    ) -> Result<()> {
        self.inner
            .persist_at(path, text, loaded, unread.map(str::to_owned))
    }

    /// [`Compactor::system_prompt`].
    pub(crate) fn system_prompt(
        &self,
        base: &str,
        memory: Option<bool>,
        agents_md: Option<&str>,
    ) -> String {
        self.inner.system_prompt(base, memory, agents_md)
    }

    /// [`Compactor::persist_later`].
    pub(crate) fn persist_later(&mut self, path: &str, load: bool) {
        self.inner.persist_later(path, load);
    }

    fn messages<'a>(&'a self, json: Option<&str>) -> Result<Cow<'a, [Message]>> {
        match json {
            Some(json) => Ok(parse_messages(json)?.into()),
            None => Ok(self.held.as_slice().into()),
        }
    }

    /// The conversation a plan's bulk is rendered from (continuations, transcripts): the
    /// call's while one is under way (its session's, then its result), else the held one.
    fn planned(&self) -> &[Message] {
        self.run
            .as_ref()
            .and_then(CallRun::held)
            .unwrap_or(&self.held)
    }

    /// Messages `[0, end)` of the held conversation as planned (the compaction record replayed
    /// onto it): the prefix of a summary request's continuation.
    pub(crate) fn planned_prefix(&self, end: u32) -> String {
        let planned = self.inner.replay(self.planned());
        let end = (end as usize).min(planned.len());
        to_json(&planned[..end])
    }

    /// Holds the first `keep` held messages followed by `appended_json` (an array), and
    /// validates the whole (the kept messages were validated when they came: only what is
    /// appended is checked). Returns the number held. On any error nothing is held (the host
    /// syncs in full next time).
    pub(crate) fn sync(&mut self, keep: u32, appended_json: &str) -> Result<u32> {
        self.replayed = None;
        let keep = keep as usize;
        // Taken out: on any error below, nothing is held (and nothing known about it).
        let mut held = std::mem::take(&mut self.held);
        let mut calls = std::mem::take(&mut self.calls);
        let mut memo = std::mem::replace(
            self.memo.get_mut().unwrap_or_else(|e| e.into_inner()),
            crate::memo::Memo::held(),
        );
        if keep > held.len() {
            return Err(Error::InvalidMessages {
                message: format!("sync: keep {keep} of {} held messages", held.len()),
            });
        }
        held.truncate(keep);
        // Messages this instance parsed before (a stateless route's new compactor is handed a
        // history it has mostly seen) are not parsed again (`message::seen`).
        let parsed = crate::message::seen::parse_noting_surrogates(appended_json, keep)?;
        self.surrogates = parsed.surrogates;
        held.extend(parsed.messages);
        calls.validate(&held, keep)?;
        self.held = held;
        self.calls = calls;
        // What plans learned about the kept messages stays true; the appended ones' part
        // fingerprints come from the seen cache.
        memo.truncate(keep);
        memo.give_prints(keep, parsed.prints);
        *self.memo.get_mut().unwrap_or_else(|e| e.into_inner()) = memo;
        Ok(u32::try_from(self.held.len()).unwrap_or(u32::MAX))
    }

    /// `options_json`: `{trigger?: 'auto' | 'manual', instructions?: string}`. The plan crosses
    /// without its bulk, which the host has or can ask for: transcripts' `json` and `markdown`
    /// are empty (`transcript` renders them) and a summary request's `messages` is empty (it is
    /// `[{role: 'user', content: prompt}]`). With `prompt_apart`, the summary request's `prompt`
    /// (the span as the summarizer reads it: most of a summarizing plan, 100 kB and more) is
    /// empty too and kept for [`HeldCompactor::take_prompt`], so that a host decodes it only
    /// when it is read.
    pub(crate) fn plan(
        &self,
        messages_json: Option<&str>,
        options_json: Option<&str>,
        prompt_apart: bool,
    ) -> Result<String> {
        let messages = self.messages(messages_json)?;
        let mut options: PlanOptions = match options_json {
            Some(json) => {
                crate::config::deserialize(parse::<serde_json::Value>("plan options", json)?)?
            }
            None => PlanOptions::default(),
        };
        options.defer_transcript = true;
        let mut prompt = self.prompt.lock().unwrap_or_else(|e| e.into_inner());
        prompt.clear();
        let mut plan = match messages_json {
            Some(_) => self.inner.plan_with_options(&messages, &options)?,
            None => {
                let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
                self.inner.plan_held(&self.held, &options, &mut memo)?
            }
        };
        for action in &mut plan.actions {
            if let Action::Summarize(s) = action {
                s.request.messages.clear();
                if prompt_apart {
                    *prompt = std::mem::take(&mut s.request.prompt);
                }
            }
        }
        if let Some(ahead) = &mut plan.ahead {
            ahead.request.messages.clear();
        }
        let json = to_json(&plan);
        let mut plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        if plans.len() == PLANS_KEPT {
            plans.pop_front();
        }
        plans.push_back((json.clone(), plan));
        Ok(json)
    }

    /// The plan this compactor made as `json` (one of its last [`PLANS_KEPT`]). A host hands
    /// back the JSON it was given, so the plan is not parsed again: faster, and the wasm core
    /// carries no deserializer for plans (28 kB gzipped). Any other JSON is `plan_mismatch`.
    fn made(&self, json: &str) -> Result<Plan> {
        let plans = self.plans.lock().unwrap_or_else(|e| e.into_inner());
        match plans.iter().rev().find(|(made, _)| made == json) {
            Some((_, plan)) => Ok(plan.clone()),
            None => Err(Error::PlanMismatch {
                action_id: None,
                message: format!(
                    "plan: not one of the last {PLANS_KEPT} plans this compactor made (apply the plan JSON it returned, unchanged, or plan again)"
                ),
            }),
        }
    }

    /// The summary request's prompt that the last plan left apart (empty when it had none),
    /// once: it is not kept after.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))] // the Component's plans keep it in
    pub(crate) fn take_prompt(&self) -> String {
        std::mem::take(&mut *self.prompt.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The transcript (`{id, path, readablePath, json, markdown, messages}`) that a lossy action
    /// of `strategy` (`summarize`, `truncate`, `importance`) saves for the messages.
    pub(crate) fn transcript(&self, messages_json: Option<&str>, strategy: &str) -> Result<String> {
        let messages: Cow<'_, [Message]> = match messages_json {
            Some(json) => parse_messages(json)?.into(),
            None => self.planned().into(),
        };
        let strategy: Strategy = parse("strategy", &to_json(&strategy))?;
        Ok(to_json(&self.inner.transcript(&messages, strategy)))
    }

    /// Applies outcomes to the messages (a plan whose transcripts changed since gives
    /// `plan_mismatch`). With the held conversation, the result becomes the held one.
    pub(crate) fn apply(
        &mut self,
        messages_json: Option<&str>,
        plan_json: &str,
        outcomes_json: &str,
    ) -> Result<String> {
        self.replayed = None;
        let plan = self.made(plan_json)?;
        let outcomes: Vec<Outcome> = parse("outcomes", outcomes_json)?;
        let held = messages_json.is_none();
        let messages = match messages_json {
            Some(json) => parse_messages(json)?,
            None => self.held.clone(),
        };
        let applied = self.inner.apply(messages, &plan, &outcomes)?;
        let json = to_json(&applied);
        let memo = self.memo.get_mut().unwrap_or_else(|e| e.into_inner());
        // The state changed (the record, perhaps the calibration).
        memo.rescaled();
        if held {
            self.held = applied.messages;
            memo.truncate(0);
            self.calls = CallIds::default();
        }
        Ok(json)
    }

    /// Starts a `manage` (`{"trigger": "auto"}`) or `compact` (`{"trigger": "manual",
    /// "instructions"}`) call on the held conversation, `{"overflow": {reportedTokens, limit}}`
    /// after a provider's overflow: the core's loop (`Session`), which the host drives with
    /// [`HeldCompactor::session_poll`] and [`HeldCompactor::session_handle`]. The session holds
    /// the conversation until it is done; a call still under way is abandoned.
    ///
    /// The call's own options beside the session's: `partial` (only part of the conversation
    /// crossed for this call: a dry plan says whether there is work, and a `resync` request
    /// asks for the rest then), `conversation` (its hashes, for the state's save) and `save`
    /// (the call only saves the state, asked by the app: [`CallRun::save_state`]).
    pub(crate) fn session_start(&mut self, options_json: Option<&str>) -> Result<()> {
        let mut options = match options_json {
            Some(json) => parse::<serde_json::Value>("session options", json)?,
            None => serde_json::Value::Object(serde_json::Map::new()),
        };
        let (partial, conversation, lease, save, overflow) = match options.as_object_mut() {
            Some(o) => (
                o.shift_remove("partial"),
                o.shift_remove("conversation"),
                o.shift_remove("lease"),
                o.shift_remove("save"),
                o.shift_remove("overflow"),
            ),
            None => (None, None, None, None, None),
        };
        let call: Call = crate::config::deserialize(options)?;
        let recovery = overflow.map(|o| recovery(&o)).transpose()?;
        self.session_end();
        self.replayed = None;
        self.given = Vec::new();
        self.contents.clear();
        let partial = partial.as_ref().and_then(serde_json::Value::as_bool) == Some(true);
        let conversation = conversation
            .as_ref()
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        if save.as_ref().and_then(serde_json::Value::as_bool) == Some(true) {
            self.run = Some(CallRun::save_state());
            return Ok(());
        }
        let mut run = CallRun::new(call, partial, conversation);
        if let Some(lease) = lease {
            let Some((owner, timeout, wall)) = lease_fields(&lease) else {
                return Err(Error::InvalidConfig {
                    field: "lease".into(),
                    message: "session options: lease needs owner (a string), summarizeTimeoutMs and wall (numbers)".into(),
                });
            };
            run = run.leased(owner.to_owned(), timeout, wall);
        }
        if let Some(recovery) = recovery {
            run = run.recovering(recovery);
        }
        self.run = Some(run);
        Ok(())
    }

    /// Ends the call under way, if any: the held conversation is the one it holds (the one it
    /// was given, or its result once made).
    fn session_end(&mut self) {
        let Some(run) = self.run.take() else {
            return;
        };
        let known = self.run_known.take();
        if let Some(messages) = run.into_held() {
            if self.held.is_empty() {
                self.held = messages;
                self.calls = known.map(|(_, calls)| calls).unwrap_or_default();
            }
            self.memo
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .truncate(0);
        }
    }

    /// Built again on `state` (a lost save's stored state, `None`: nothing stored): holds no
    /// conversation and nothing learned about one, keeps its state path.
    fn rebuild(&mut self, state: Option<&str>) -> Result<()> {
        self.replayed = None;
        self.inner.rebuild(state)?;
        self.held.clear();
        self.calls = CallIds::default();
        *self.memo.get_mut().unwrap_or_else(|e| e.into_inner()) = crate::memo::Memo::held();
        if let Some(known) = &mut self.run_known {
            *known = (crate::memo::Memo::held(), CallIds::default());
        }
        self.plans
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.result.clear();
        Ok(())
    }

    /// The call's next step as JSON: `{"type": "io", "ios": [{id, request}], "plan"?}`,
    /// `{"type": "wait"}`, or `{"type": "done", "messages"?, "events", "plan", "cancelled",
    /// "cancelOverridden", "tokensBefore", "tokensAfter", "stateError"?, "conflict"?}` (then
    /// the held conversation is the result). With `apart`, a write's `content` and a summary
    /// request's `prompt` wait for `take_content` (the step has them empty), a done plan's
    /// summary prompt for `take_prompt` and the changed messages for `take_result` (a host
    /// decodes them on their own: a transcript escaped inside the step's JSON cost a first
    /// compaction more than its plan).
    pub(crate) fn session_poll(&mut self, apart: bool) -> Result<String> {
        let Some(mut run) = self.run.take() else {
            return Err(Error::PlanMismatch {
                action_id: None,
                message: "session: no manage or compact call under way (start one first)".into(),
            });
        };
        let polled = run.poll(self);
        let polled = match polled {
            Ok(CallPoll::Done(done)) => {
                let save_only = run.saves_only();
                return Ok(self.done(*done, apart, save_only));
            }
            Ok(polled) => polled,
            Err(error) => {
                self.run = Some(run);
                self.session_end();
                return Err(error);
            }
        };
        let json = match polled {
            CallPoll::Io(mut ios) => {
                for io in &mut ios {
                    // Apart, the bulk crosses as UTF-8 (`take_content`), not escaped in the step.
                    let bulk = match &mut io.request {
                        crate::Request::Summarize { summary } => {
                            summary.request.messages.clear();
                            &mut summary.request.prompt
                        }
                        crate::Request::Write { content, .. } => content,
                        crate::Request::Background { ahead } => {
                            ahead.request.messages.clear();
                            continue;
                        }
                        _ => continue,
                    };
                    if apart {
                        self.contents.insert(io.id, std::mem::take(bulk));
                    }
                }
                let asks = ios
                    .iter()
                    .any(|io| matches!(io.request, crate::Request::Ask { .. }));
                let plan = match run.plan() {
                    Some(plan) if asks => Some(stripped(&self.prompt, plan.clone(), false)),
                    _ => None,
                };
                to_json(&SessionPoll::Io {
                    ios,
                    plan: plan.as_ref(),
                })
            }
            _ => to_json(&SessionPoll::Wait),
        };
        self.run = Some(run);
        Ok(json)
    }

    /// The call's done step (see [`HeldCompactor::session_poll`]); the held conversation is
    /// its result.
    fn done(&mut self, done: CallDone, apart: bool, save_only: bool) -> String {
        let CallDone {
            managed,
            dry,
            input,
            state_error,
            conflict,
            overflow,
        } = done;
        // A plan of no work leaves the conversation as given (a dry plan: as held); a cancel
        // leaves it as given but for the recorded edits it put back.
        if !save_only {
            // The prompt the app sends now (a dry plan's: the conversation held).
            let sent = if dry { &self.held } else { &managed.messages };
            self.sent_raw = Some(self.inner.count_raw(sent));
        }
        let work = is_work(&managed.plan);
        let applied = work && !managed.cancelled;
        let changed = applied || (managed.cancelled && !managed.plan.replayed.is_empty());
        let plan = stripped(&self.prompt, managed.plan, apart);
        let given = std::mem::take(&mut self.given);
        let messages = changed.then(|| {
            let given = if managed.cancelled { &input } else { &given };
            as_given(given, &managed.messages)
        });
        self.result.clear();
        if apart {
            if let Some(messages) = &messages {
                self.result = to_json(messages);
            }
        }
        let json = to_json(&SessionPoll::Done {
            changed,
            applied,
            messages: if apart { None } else { messages },
            events: &managed.events,
            plan: &plan,
            cancelled: managed.cancelled,
            cancel_overridden: managed.cancel_overridden,
            tokens_before: managed.tokens_before,
            tokens_after: managed.tokens_after,
            state_error: state_error.as_deref(),
            conflict: conflict.as_ref(),
            overflow: overflow.as_ref(),
        });
        if !dry {
            self.held = if managed.cancelled {
                input
            } else {
                managed.messages
            };
            // What was learned about the call's conversation is the held one's again (an
            // apply left nothing of it).
            if let Some((memo, calls)) = self.run_known.take() {
                *self.memo.get_mut().unwrap_or_else(|e| e.into_inner()) = memo;
                self.calls = calls;
            }
        }
        if work || managed.cancelled {
            self.calls = CallIds::default();
        }
        json
    }

    /// The content of the session's write request `id`, or its summary request's prompt, that
    /// `session_poll` with `apart` left out of the step (empty then), once.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn take_content(&mut self, id: u64) -> String {
        self.contents.remove(&id).unwrap_or_default()
    }

    /// Whether the text the last `sync` appended escaped a UTF-16 surrogate (`\udXXX`, as
    /// JSON.stringify writes a lone one), or `None` when its parse could not tell.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn surrogate_escapes(&self) -> Option<bool> {
        self.surrogates
    }

    /// The messages of the last session's result as JSON (`session_poll` with `apart`), once.
    #[cfg_attr(not(feature = "wasm"), allow(dead_code))]
    pub(crate) fn take_result(&mut self) -> String {
        std::mem::take(&mut self.result)
    }

    /// Hands back the outcome (`reply_json`: `{"type": "done"}`, `{"type": "text", "text"}`,
    /// `{"type": "decision", "cancel"?, "customInstructions"?, "customSummary"?}` or
    /// `{"type": "failed", "error"}`) of the session's request `id`.
    pub(crate) fn session_handle(&mut self, id: u64, reply_json: &str) -> Result<()> {
        let (reply, now) = reply(reply_json)?;
        let Some(mut run) = self.run.take() else {
            return Err(Error::PlanMismatch {
                action_id: None,
                message: format!("reply to request {id}: no manage or compact call under way"),
            });
        };
        let handled = run.handle(self, id, reply, now);
        self.run = Some(run);
        if let Err(Error::PlanMismatch { .. }) = handled {
            return handled;
        }
        if handled.is_err() {
            self.session_end();
        }
        handled
    }

    /// Ends the call under way before it is done (the host's task was cancelled): the store
    /// writes that release its summary leases, as JSON `[{id, request}]` (see
    /// [`CallRun::abandon`]). The held conversation is left as it was before the call; nothing
    /// is saved.
    #[cfg_attr(not(feature = "component"), allow(dead_code))]
    pub(crate) fn session_abandon(&mut self) -> String {
        let releases = self.run.as_mut().map(CallRun::abandon).unwrap_or_default();
        self.session_end();
        to_json(&releases)
    }

    /// Starts tier 1 on a tool's output at the moment it returns (`crate::OffloadRun`):
    /// `output_json` is the output, a text one when `text`. Returns the run's id, for
    /// [`HeldCompactor::offload_poll`] and [`HeldCompactor::offload_handle`].
    pub(crate) fn offload_start(
        &mut self,
        tool_name: &str,
        tool_call_id: &str,
        output_json: &str,
        text: bool,
    ) -> Result<u32> {
        let run = crate::OffloadRun::new(tool_name, tool_call_id, output_json, text)?;
        let id = self.next_offload;
        self.next_offload = self.next_offload.wrapping_add(1);
        self.offloads.insert(id, run);
        Ok(id)
    }

    /// The offload run's next step as JSON: `{"type": "io", "ios": [{id, request}]}` (store
    /// writes, their content inline), `{"type": "wait"}`, or `{"type": "done", "preview":
    /// string | null, "events"}` (the run is then forgotten, as it is on any error).
    pub(crate) fn offload_poll(&mut self, run: u32) -> Result<String> {
        let mut offload = self.offload(run)?;
        let polled = offload.poll(&mut self.inner);
        Ok(match polled {
            Ok(crate::OffloadPoll::Io(ios)) => {
                self.offloads.insert(run, offload);
                format!(r#"{{"type":"io","ios":{}}}"#, to_json(&ios))
            }
            Ok(crate::OffloadPoll::Wait) => {
                self.offloads.insert(run, offload);
                r#"{"type":"wait"}"#.to_owned()
            }
            Ok(crate::OffloadPoll::Done(offloaded)) => {
                // As an apply: what plans learned is scaled again.
                self.replayed = None;
                self.rescaled();
                let json = to_json(&offloaded);
                format!(r#"{{"type":"done",{}"#, &json[1..])
            }
            Err(e) => return Err(e),
        })
    }

    /// Hands back the outcome of the offload run's request `id` (as `session_handle`'s).
    pub(crate) fn offload_handle(&mut self, run: u32, id: u64, reply_json: &str) -> Result<()> {
        let (reply, _) = reply(reply_json)?;
        let mut offload = self.offload(run)?;
        let handled = offload.handle(&mut self.inner, id, reply);
        self.offloads.insert(run, offload);
        handled
    }

    /// Forgets an offload run (a host's run that failed before it was done).
    pub(crate) fn offload_drop(&mut self, run: u32) {
        self.offloads.remove(&run);
    }

    fn offload(&mut self, run: u32) -> Result<crate::OffloadRun> {
        self.offloads
            .remove(&run)
            .ok_or_else(|| Error::PlanMismatch {
                action_id: None,
                message: format!("offload run {run} is not under way"),
            })
    }

    /// `{tokens, window, fraction}` as JSON.
    pub(crate) fn usage(&self, messages_json: Option<&str>) -> Result<String> {
        let usage = match messages_json {
            Some(json) => self.inner.usage(&parse_messages(json)?),
            None => {
                let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
                self.inner.usage_held(&self.held, &mut memo)
            }
        };
        Ok(to_json(&usage))
    }

    /// Uncalibrated count, to pair with a later `observe_usage`.
    pub(crate) fn count_raw(&self, messages_json: Option<&str>) -> Result<u32> {
        let messages = self.messages(messages_json)?;
        Ok(self.inner.count_raw(&messages))
    }

    /// The provider's reported input tokens, `actual`, of the prompt the last call returned
    /// (one sample per prompt: a second report of it is ignored), or of a prompt whose
    /// [`HeldCompactor::count_raw`] was `predicted_raw`.
    pub(crate) fn observe_usage(&mut self, actual: u32, predicted_raw: Option<u32>) {
        let Some(raw) = predicted_raw.or_else(|| self.sent_raw.take()) else {
            return;
        };
        self.inner.observe_usage(raw, actual);
        self.rescaled();
    }

    /// Forgets what plans learned in scaled tokens (the calibration changed), about the held
    /// conversation and the call's.
    fn rescaled(&mut self) {
        self.memo
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .rescaled();
        if let Some((memo, _)) = &mut self.run_known {
            memo.rescaled();
        }
    }

    pub(crate) fn state(&self) -> String {
        to_json(self.inner.state())
    }

    /// [`Compactor::offer_summary`].
    pub(crate) fn offer_summary(&mut self, key: &str, text: &str) -> bool {
        self.inner.offer_summary(key, text.to_owned())
    }

    /// [`Compactor::forget_ahead`].
    pub(crate) fn forget_ahead(&mut self, key: &str) -> bool {
        self.inner.forget_ahead(key)
    }

    pub(crate) fn stats(&self) -> String {
        to_json(self.inner.stats())
    }

    pub(crate) fn model(&self) -> String {
        to_json(self.inner.model())
    }
}

/// A `recover` call's `overflow` session option: `parse_overflow`'s answer (`provider`,
/// `message`, `reportedTokens`?, `limit`?) and the `attempt` (default 1).
fn recovery(value: &serde_json::Value) -> Result<crate::Recovery> {
    let invalid = |message: &str| Error::InvalidConfig {
        field: "overflow".into(),
        message: format!("session options: overflow {message}"),
    };
    let count = |key: &str| match value.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| invalid(&format!("{key}: expected a whole number of tokens or null"))),
    };
    let text = |key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| invalid(&format!("needs {key} (parse-overflow's answer)")))
    };
    let attempt = match value.get("attempt") {
        None => 1,
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| invalid("attempt: expected a whole number"))?,
    };
    Ok(crate::Recovery {
        report: crate::OverflowReport {
            provider: text("provider")?,
            reported_tokens: count("reportedTokens")?,
            limit: count("limit")?,
            message: text("message")?,
        },
        attempt,
    })
}

/// `overflow_verdict` of `{"moment", "overflow", "attempt", "retries"}` as JSON (`overflow`:
/// `parse_overflow`'s answer, or null), its answer as JSON.
pub(crate) fn overflow_verdict(asked_json: &str) -> Result<String> {
    // Read from a `Value`, as `reply` is: derived deserializers for these few fields cost the
    // wasm core about 20 kB.
    let asked: serde_json::Value = parse("overflow verdict", asked_json)?;
    let bad = |message: &str| Error::InvalidConfig {
        field: "overflow".into(),
        message: format!("overflow verdict: {message}"),
    };
    let moment = match asked.get("moment").and_then(|m| m.as_str()) {
        Some("refused") => crate::OverflowMoment::Refused,
        Some("cut") => crate::OverflowMoment::Cut,
        Some("refused-after-content") => crate::OverflowMoment::RefusedAfterContent,
        Some("cut-after-content") => crate::OverflowMoment::CutAfterContent,
        Some("nothing-left") => crate::OverflowMoment::NothingLeft,
        _ => return Err(bad("moment: expected refused, cut, refused-after-content, cut-after-content or nothing-left")),
    };
    // Counts past u32 (a host's `retries: 2 ** 32`) saturate: as many as asked, in effect.
    let whole = |key: &str| {
        asked
            .get(key)
            .and_then(|v| v.as_u64())
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
            .ok_or_else(|| bad(&format!("{key}: expected a whole number >= 0")))
    };
    let overflow = match asked.get("overflow") {
        None | Some(serde_json::Value::Null) => None,
        Some(said) if !said.is_object() => {
            return Err(bad(
                "overflow: expected parse-overflow's answer (an object) or null",
            ))
        }
        Some(said) => {
            let count = |key: &str| {
                said.get(key)
                    .and_then(|v| v.as_u64())
                    .and_then(|n| u32::try_from(n).ok())
            };
            Some(crate::OverflowReport {
                provider: said
                    .get("provider")
                    .and_then(|v| v.as_str())
                    .unwrap_or("generic")
                    .to_owned(),
                reported_tokens: count("reportedTokens"),
                limit: count("limit"),
                message: said
                    .get("message")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned(),
            })
        }
    };
    Ok(to_json(&crate::overflow_verdict(
        moment,
        overflow.as_ref(),
        whole("attempt")?,
        whole("retries")?,
    )))
}

/// `parse_overflow` of the texts an error carries, as JSON (`null`: not an overflow).
pub(crate) fn parse_overflow(texts: &[String], status: Option<u16>) -> String {
    to_json(&crate::parse_overflow(texts, status))
}

/// A session's reply from its JSON (by hand from a `Value`: the derived deserializer of the
/// tagged, flattened [`Reply`] would add to the wasm core what `Value` already does), and the
/// wall clock it says (`now`, ms since the epoch), if any.
fn reply(json: &str) -> Result<(Reply, Option<f64>)> {
    let value: serde_json::Value = parse("reply", json)?;
    let now = value.get("now").and_then(serde_json::Value::as_f64);
    Ok((reply_of(&value)?, now))
}

fn reply_of(value: &serde_json::Value) -> Result<Reply> {
    let text = |key: &str| value.get(key).and_then(|v| v.as_str()).map(str::to_owned);
    let bad = |message: String| Error::PlanMismatch {
        action_id: None,
        message: format!("reply: {message}"),
    };
    match value.get("type").and_then(|t| t.as_str()) {
        Some("done") => Ok(Reply::Done),
        Some("text") => text("text")
            .map(|text| Reply::Text { text })
            .ok_or_else(|| bad("a text reply needs \"text\", a string".into())),
        Some("failed") => Ok(Reply::Failed {
            error: text("error").unwrap_or_else(|| "failed".into()),
        }),
        Some("decision") => Ok(Reply::Decision {
            decision: decision(value)?,
        }),
        Some("conversation") => text("conversation")
            .map(|conversation| Reply::Conversation { conversation })
            .ok_or_else(|| bad("a conversation reply needs \"conversation\", a string".into())),
        Some("saved") => Ok(Reply::Saved),
        Some("refused") => Ok(Reply::Refused {
            current: text("current"),
        }),
        Some("read") => Ok(Reply::Read { text: text("text") }),
        Some("woke") => Ok(Reply::Woke),
        other => Err(bad(format!(
            "type {}: expected done, text, decision, failed, conversation, saved, refused, read or woke",
            other.map_or_else(|| "missing".to_owned(), |t| format!("\"{t}\""))
        ))),
    }
}

/// The `onPreCompact` hook's answer, as the host hands it on (every host the same): `cancel`
/// true or false, `customInstructions` and `customSummary` strings, each absent or null when not
/// given. Anything else is the app's mistake, a typed `invalid_config` naming the field, rather
/// than read one way by one host and another by the next (`1` or `"no"` as a cancel).
fn decision(value: &serde_json::Value) -> Result<crate::PreCompactDecision> {
    let field = |key: &str| value.get(key).filter(|v| !v.is_null());
    let invalid = |key: &str, expected: &str, got: &serde_json::Value| Error::InvalidConfig {
        field: format!("onPreCompact.{key}"),
        message: format!("onPreCompact returned {key}: {got}, expected {expected}"),
    };
    let string = |key: &str| match field(key) {
        None => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(invalid(key, "a string", other)),
    };
    let cancel = match field("cancel") {
        None => false,
        Some(serde_json::Value::Bool(b)) => *b,
        Some(other) => return Err(invalid("cancel", "true or false", other)),
    };
    Ok(crate::PreCompactDecision {
        cancel,
        custom_instructions: string("customInstructions")?,
        custom_summary: string("customSummary")?,
    })
}

/// A plan as it crosses to the host: transcripts without their files, a summary request
/// without its messages and, with `prompt_apart`, without its prompt (see `plan`).
fn stripped(prompt: &std::sync::Mutex<String>, mut plan: Plan, prompt_apart: bool) -> Plan {
    let mut prompt = prompt.lock().unwrap_or_else(|e| e.into_inner());
    prompt.clear();
    for action in &mut plan.actions {
        match action {
            Action::Summarize(s) => {
                s.request.messages.clear();
                if prompt_apart {
                    *prompt = std::mem::take(&mut s.request.prompt);
                }
            }
            Action::SaveTranscript(t) => {
                t.json.clear();
                t.markdown.clear();
            }
            _ => {}
        }
    }
    if let Some(ahead) = &mut plan.ahead {
        ahead.request.messages.clear();
    }
    plan
}

// ---------------------------------------------------------------------------------------------
// Loop context (seed 003): stateless, the state travels as JSON.

/// `{context, request}`: the context after adding the iteration, and a summary request if one
/// is due.
pub(crate) fn loop_add_iteration(
    context_json: &str,
    iteration_json: &str,
    config_json: &str,
) -> Result<String> {
    let mut context: LoopContext = parse("loop context", context_json)?;
    let iteration: Iteration = parse("iteration", iteration_json)?;
    let config = LoopConfig::from_json(config_json)?;
    let request = context.add_iteration(iteration, &config);
    Ok(loop_step(&context, request.as_ref()))
}

/// `{context, request}`, as the loop functions that may ask for a summary answer.
fn loop_step(
    context: &LoopContext,
    request: Option<&crate::loop_context::SummaryRequest>,
) -> String {
    // A struct, not `json!` (a `serde_json::Value` built field by field): with numbers kept as
    // written (`arbitrary_precision`), every type serialized into a `Value` costs a copy of
    // serde_json's number-aware value serializer in the wasm core.
    #[derive(serde::Serialize)]
    struct Step<'a> {
        context: &'a LoopContext,
        request: Option<&'a crate::loop_context::SummaryRequest>,
    }
    to_json(&Step { context, request })
}

/// A fresh loop context as JSON.
pub(crate) fn loop_new(goal: &str, start_unix_ms: u64) -> String {
    to_json(&LoopContext::new(goal, start_unix_ms))
}

/// `{context, request}` with a summary request made now (e.g. to retry after a failure).
pub(crate) fn loop_request_summary(context_json: &str, config_json: &str) -> Result<String> {
    let mut context: LoopContext = parse("loop context", context_json)?;
    let config = LoopConfig::from_json(config_json)?;
    let request = context.request_summary(&config);
    Ok(loop_step(&context, request.as_ref()))
}

/// The context after the host's answer to a summary request: `summary` on success, else
/// `error`.
pub(crate) fn loop_apply_summary(
    context_json: &str,
    id: &str,
    summary: Option<String>,
    error: Option<String>,
) -> Result<String> {
    let mut context: LoopContext = parse("loop context", context_json)?;
    let answer = summary.ok_or_else(|| error.unwrap_or_else(|| "no summary".into()));
    context.apply_summary(id, answer)?;
    Ok(to_json(&context))
}

/// The loop's prompt for the next iteration.
pub(crate) fn loop_build_prompt(context_json: &str, config_json: &str) -> Result<String> {
    let context: LoopContext = parse("loop context", context_json)?;
    let config = LoopConfig::from_json(config_json)?;
    Ok(crate::loop_context::build_prompt(&context, &config))
}

/// The recovery tools' specs (`[{name, description, inputSchema}]`) for `options`
/// ([`crate::recovery::RecoveryOptions`] as JSON).
pub(crate) fn recovery_tools(options_json: &str) -> Result<String> {
    Ok(crate::recovery::tool_specs_json(&recovery_options(
        options_json,
    )?))
}

/// The recovery tools' options: a count that is not a whole number >= 1 is an
/// [`Error::InvalidConfig`] naming it (`defaultLimit: -1`, or 0: every `read_file` without a
/// `limit` would be refused), not a number serde cannot read.
fn recovery_options(options_json: &str) -> Result<crate::recovery::RecoveryOptions> {
    let mut value = serde_json::from_str::<serde_json::Value>(options_json)
        .map_err(|e| Error::json("recovery tool options", &e))?;
    // A page limit is often a share of a window (10 %: a fraction): its whole part, in every
    // host.
    if let Some(page) = value.get_mut("maxPageChars") {
        if let Some(chars) = page
            .as_f64()
            .filter(|c| (1.0..=f64::from(u32::MAX)).contains(c) && page.as_u64().is_none())
        {
            *page = serde_json::Value::from(chars.floor() as u64);
        }
    }
    for (key, v) in value.as_object().into_iter().flatten() {
        let count = matches!(
            key.as_str(),
            "defaultLimit" | "maxLineChars" | "maxMatches" | "maxPageChars" | "contextWindow"
        );
        if count && !v.is_null() && v.as_u64().is_none_or(|n| n == 0 || n > u64::from(u32::MAX)) {
            return Err(Error::InvalidConfig {
                field: key.clone(),
                message: format!("expected a whole number from 1 to {}, got {v}", u32::MAX),
            });
        }
    }
    if let Some(path) = value.get("statePath") {
        let invalid = |message: String| Error::InvalidConfig {
            field: "statePath".into(),
            message,
        };
        let path = path
            .as_str()
            .ok_or_else(|| invalid(format!("expected a store path, got {path}")))?;
        crate::stored::check_state_path(path).map_err(|e| match e {
            Error::InvalidConfig { message, .. } => invalid(message),
            other => other,
        })?;
    }
    parse("recovery tool options", &value.to_string())
}

/// A recovery tool call started from the model's arguments (JSON; malformed text is the
/// model's, answered as text by the run) and the options' JSON.
pub(crate) fn recovery_tool_run(
    name: &str,
    arguments_json: &str,
    options_json: &str,
) -> Result<crate::recovery::ToolRun> {
    let options = recovery_options(options_json)?;
    let arguments = serde_json::from_str(arguments_json).unwrap_or(serde_json::Value::Null);
    Ok(crate::recovery::ToolRun::new(name, &arguments, &options))
}

/// What `run` needs now, as JSON: `{type: "read", path}`, `{type: "list", prefix}` or `{type:
/// "done", text}`. (The run itself stays in the binding's object: serializing it for the host
/// would cost its deserializer in the wasm core.)
pub(crate) fn recovery_tool_io(run: &crate::recovery::ToolRun) -> String {
    run.poll().to_json()
}

/// The lease fields a host sends with a call (`lease`) or a background summary, as both hosts
/// write them: `{owner, summarizeTimeoutMs, wall}` → the request's owner, the summarizer's time
/// and the wall clock (ms), or `None` when one is missing or of another type.
fn lease_fields(value: &serde_json::Value) -> Option<(&str, f64, f64)> {
    let number = |key: &str| value.get(key).and_then(serde_json::Value::as_f64);
    let owner = value.get("owner").and_then(serde_json::Value::as_str)?;
    Some((owner, number("summarizeTimeoutMs")?, number("wall")?))
}

/// A summary asked ahead, made in the background ([`crate::lease::AheadRun`]), from its JSON
/// options: `{statePath?, key, owner, wall, summarizeTimeoutMs}`.
pub(crate) fn ahead_run(options_json: &str) -> Result<crate::lease::AheadRun> {
    let value: serde_json::Value = parse("background summary options", options_json)?;
    let text = |key: &str| value.get(key).and_then(serde_json::Value::as_str);
    let (Some(key), Some((owner, timeout, wall))) = (text("key"), lease_fields(&value)) else {
        return Err(Error::InvalidConfig {
            field: "background".into(),
            message: "background summary options: key and owner (strings), wall and summarizeTimeoutMs (numbers) are needed".into(),
        });
    };
    Ok(crate::lease::AheadRun::new(
        text("statePath"),
        key,
        owner,
        wall,
        timeout,
    ))
}

/// What a background summary needs next, as JSON: `{"type": "io", "ios": [{id, request}]}` in
/// the call's words (`read`, `save`, `put`, `sleep`; `summarize`: the host's summary asked
/// ahead), `{"type": "wait"}`, or `{"type": "done", "text": string | null}`.
pub(crate) fn ahead_poll(run: &mut crate::lease::AheadRun) -> String {
    match run.poll() {
        crate::lease::AheadPoll::Io(id, request) => {
            let request =
                request.map_or_else(|| r#"{"type":"summarize"}"#.to_owned(), |r| to_json(&r));
            format!(r#"{{"type":"io","ios":[{{"id":{id},"request":{request}}}]}}"#)
        }
        crate::lease::AheadPoll::Wait => r#"{"type":"wait"}"#.to_owned(),
        crate::lease::AheadPoll::Done(text) => format!(
            r#"{{"type":"done","text":{}}}"#,
            text.map_or_else(|| "null".to_owned(), |t| to_json(&t))
        ),
    }
}

/// The reply (as [`HeldCompactor::session_handle`]'s, with `now`) to a background summary's
/// request `id`.
pub(crate) fn ahead_handle(
    run: &mut crate::lease::AheadRun,
    id: u64,
    reply_json: &str,
) -> Result<()> {
    let (reply, now) = reply(reply_json)?;
    let now = now.ok_or_else(|| Error::PlanMismatch {
        action_id: None,
        message: format!(
            "reply to request {id}: a background summary's reply says the wall clock (now)"
        ),
    })?;
    run.handle(id, reply, now)
}

/// The state stored at `path` as `text`, as JSON: `{"state": <the core's state, or null>,
/// "revision", "conversation"}` (`crate::stored::Stored`; the host keeps the text it read).
pub(crate) fn stored_state(text: Option<&str>, path: &str) -> Result<String> {
    let stored = crate::stored::Stored::parse(text, path)?;
    Ok(format!(
        r#"{{"state":{},"revision":{},"conversation":{}}}"#,
        stored.state.as_deref().unwrap_or("null"),
        stored.revision,
        serde_json::to_string(&stored.conversation).unwrap_or_default()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_crosses_with_indices_for_the_messages_left_as_they_were() {
        let m = |json: serde_json::Value| parse_messages(&format!("[{json}]")).unwrap().remove(0);
        let user = |text: &str| m(serde_json::json!({"role": "user", "content": text}));
        let input = vec![
            user("a"),
            user("b"),
            user("same"),
            user("c"),
            user("same"),
            user("d"),
        ];
        // A summary and an edited message first; then the first "same" at or after the last
        // match (the second "same" was dropped), "d" past the dropped ones, and a copy of "a"
        // after them, which is not looked for behind "d": it crosses whole.
        let output = vec![
            user("summary"),
            user("same, edited"),
            user("same"),
            user("d"),
            user("a"),
        ];
        let given = serde_json::to_value(as_given(&input, &output)).unwrap();
        assert_eq!(
            given,
            serde_json::json!([
                {"role": "user", "content": "summary"},
                {"role": "user", "content": "same, edited"},
                2,
                5,
                {"role": "user", "content": "a"}
            ])
        );
        let all = as_given(&input, &input);
        assert_eq!(
            serde_json::to_value(all).unwrap(),
            serde_json::json!([0, 1, 2, 3, 4, 5])
        );
        assert_eq!(
            serde_json::to_value(as_given(&[], &output[..1])).unwrap()[0]["content"],
            "summary"
        );
    }

    /// A read whose long output is offloaded in a 16k window.
    fn long_read() -> String {
        let output = "line of a long tool output\n".repeat(3_000);
        serde_json::json!([
            {"role": "user", "content": "read it"},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "read", "input": {}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "read", "output": {"type": "text", "value": output}}]},
        ])
        .to_string()
    }

    /// A `save` request carried out on `stored`: a compare-and-set.
    fn save_over(
        stored: &std::cell::RefCell<Option<String>>,
        request: &serde_json::Value,
    ) -> String {
        let mut stored = stored.borrow_mut();
        if request["expected"].as_str() != stored.as_deref() {
            return serde_json::json!({"type": "refused", "current": *stored}).to_string();
        }
        *stored = Some(request["text"].as_str().unwrap().to_owned());
        r#"{"type":"saved"}"#.into()
    }

    /// Drives one call to its end: each request answered by `answer` (the request's JSON and
    /// id), the steps' request types in order, and the done step.
    fn drive(
        held: &mut HeldCompactor,
        options: &str,
        mut answer: impl FnMut(&mut HeldCompactor, &serde_json::Value) -> String,
    ) -> (Vec<String>, serde_json::Value) {
        held.session_start(Some(options)).unwrap();
        let mut kinds = Vec::new();
        loop {
            let step: serde_json::Value =
                serde_json::from_str(&held.session_poll(false).unwrap()).unwrap();
            if step["type"] == "done" {
                return (kinds, step);
            }
            for io in step["ios"].as_array().unwrap() {
                kinds.push(io["request"]["type"].as_str().unwrap().to_owned());
                let reply = answer(held, &io["request"]);
                held.session_handle(io["id"].as_u64().unwrap(), &reply)
                    .unwrap();
            }
        }
    }

    #[test]
    fn a_call_plans_dry_on_part_of_a_conversation_and_saves_its_state_as_the_core_rules() {
        let conversation = long_read();
        let config = r#"{"model":"gpt-4o","contextWindow":16000}"#;
        let mut held = HeldCompactor::new(config, None).unwrap();
        held.persist_at("/s.json", None, true, None).unwrap();
        let stored = std::cell::RefCell::new(None::<String>);
        let store = |held: &mut HeldCompactor, request: &serde_json::Value| -> String {
            match request["type"].as_str().unwrap() {
                "write" => r#"{"type":"done"}"#.into(),
                "conversation" => {
                    // While the call ends, a continuation's prefix (`planned_prefix`) is the
                    // call's conversation, not an empty one (the host builds the summary asked
                    // ahead then).
                    let prefix = held.planned_prefix(3);
                    assert!(prefix.contains("tool-result"), "{prefix}");
                    r#"{"type":"conversation","conversation":"aaaaaaaa"}"#.into()
                }
                "resync" => {
                    held.sync(0, &conversation).unwrap();
                    r#"{"type":"done"}"#.into()
                }
                "save" => save_over(&stored, request),
                other => panic!("unexpected {other}"),
            }
        };
        // A first call on the whole conversation: an offload, the time, then one save.
        held.sync(0, &conversation).unwrap();
        let (kinds, done) = drive(&mut held, r#"{"now":1767268800000}"#, store);
        assert_eq!(kinds, ["write", "conversation", "save"]);
        assert_eq!(
            (done["changed"].as_bool(), done.get("stateError")),
            (Some(true), None)
        );
        let first = stored.borrow().clone().unwrap();
        assert!(
            first.contains(r#""revision":1"#) && first.contains(r#""conversation":"aaaaaaaa""#)
        );
        // The same conversation held, the same minute: a dry plan, no work, nothing to save.
        let (kinds, done) = drive(&mut held, r#"{"now":1767268810000,"partial":true}"#, store);
        assert!(kinds.is_empty(), "{kinds:?}");
        assert_eq!(done["changed"].as_bool(), Some(false));
        // Another request saved first (revision 2, the same conversation): the call is run
        // again on its state once the host resyncs, then saved over it.
        let theirs = first.replace(r#""revision":1"#, r#""revision":2"#);
        *stored.borrow_mut() = Some(theirs.clone());
        let (kinds, done) = drive(&mut held, r#"{"now":1767268900000,"partial":true}"#, store);
        assert_eq!(kinds, ["conversation", "save", "resync", "save"]);
        assert_eq!(done.get("conflict"), None);
        let saved = stored.borrow().clone().unwrap();
        assert!(saved.contains(r#""revision":3"#), "{saved}");
        // A rerun makes no write and asks no summary twice: a new compactor whose save loses to
        // a state that lacks its offload plans the offload again, and the core answers that
        // write itself (the store got it in the first round).
        let mut fresh = HeldCompactor::new(config, None).unwrap();
        fresh.persist_at("/s.json", None, true, None).unwrap();
        let empty = HeldCompactor::new(config, None).unwrap().state();
        *stored.borrow_mut() = Some(crate::stored::next_text(&empty, 0, "aaaaaaaa").unwrap());
        fresh.sync(0, &conversation).unwrap();
        let (kinds, done) = drive(&mut fresh, r#"{"now":1767268800000}"#, store);
        assert_eq!(kinds, ["write", "conversation", "save", "resync", "save"]);
        assert_eq!(done["events"].as_array().map(Vec::len), Some(1));
        assert!(stored
            .borrow()
            .as_deref()
            .unwrap()
            .contains(r#""revision":2"#));
        // A store that keeps refusing over the very text it holds: a conflict, said on the step.
        let stubborn = |held: &mut HeldCompactor, request: &serde_json::Value| -> String {
            match request["type"].as_str().unwrap() {
                "save" => serde_json::json!({"type": "refused", "current": request["expected"]})
                    .to_string(),
                "resync" => {
                    held.sync(0, &conversation).unwrap();
                    r#"{"type":"done"}"#.into()
                }
                _ => r#"{"type":"conversation","conversation":"aaaaaaaa"}"#.into(),
            }
        };
        let (kinds, done) = drive(
            &mut held,
            r#"{"now":1767269000000,"partial":true}"#,
            stubborn,
        );
        assert_eq!(
            kinds.iter().filter(|k| *k == "save").count(),
            5,
            "{kinds:?}"
        );
        assert_eq!(done["conflict"]["attempts"].as_u64(), Some(5));
        assert!(done["conflict"]["message"]
            .as_str()
            .unwrap()
            .contains("/s.json"));
        // A save that fails is said on the result; the call still answers.
        let failing = |_: &mut HeldCompactor, request: &serde_json::Value| -> String {
            match request["type"].as_str().unwrap() {
                "save" => r#"{"type":"failed","error":"the disk is full"}"#.into(),
                _ => r#"{"type":"conversation","conversation":"aaaaaaaa"}"#.into(),
            }
        };
        held.sync(0, &conversation).unwrap();
        let (_, done) = drive(&mut held, r#"{"now":1767269100000}"#, failing);
        assert_eq!(
            done["stateError"].as_str(),
            Some("state not saved to /s.json: the disk is full")
        );
        // A reply of the wrong kind to the call's own request is a typed error.
        held.sync(0, &conversation).unwrap();
        held.session_start(Some(r#"{"now":1767269200000}"#))
            .unwrap();
        let mut id = None;
        while id.is_none() {
            let step: serde_json::Value =
                serde_json::from_str(&held.session_poll(false).unwrap()).unwrap();
            for io in step["ios"].as_array().unwrap() {
                if io["request"]["type"] == "conversation" {
                    id = io["id"].as_u64();
                } else {
                    held.session_handle(io["id"].as_u64().unwrap(), r#"{"type":"done"}"#)
                        .unwrap();
                }
            }
        }
        let wrong = held.session_handle(id.unwrap(), r#"{"type":"done"}"#);
        assert!(wrong
            .unwrap_err()
            .to_string()
            .contains("expected the conversation's hashes"));
    }

    #[test]
    fn a_state_loaded_at_the_next_call_builds_the_compactor_from_it_before_it_plans() {
        let conversation = long_read();
        let config = r#"{"model":"gpt-4o","contextWindow":16000}"#;
        // Another request's state: one compaction (the offload of this very conversation).
        let mut theirs = HeldCompactor::new(config, None).unwrap();
        theirs.sync(0, &conversation).unwrap();
        drive(&mut theirs, "{}", |_, _| r#"{"type":"done"}"#.into());
        let stored = crate::stored::next_text(&theirs.state(), 0, "aaaaaaaa").unwrap();
        let compactions = |held: &HeldCompactor| -> u64 {
            let state: serde_json::Value = serde_json::from_str(&held.state()).unwrap();
            state["stats"]["compactions"].as_u64().unwrap()
        };
        let mut held = HeldCompactor::new(config, None).unwrap();
        held.persist_later("/s.json", true);
        held.sync(0, &conversation).unwrap();
        let (kinds, done) =
            drive(
                &mut held,
                r#"{"now":1767268800000}"#,
                |held, request| match request["type"].as_str().unwrap() {
                    "read" => serde_json::json!({"type": "read", "text": stored}).to_string(),
                    "resync" => {
                        held.sync(0, &conversation).unwrap();
                        r#"{"type":"done"}"#.into()
                    }
                    "conversation" => r#"{"type":"conversation","conversation":"aaaaaaaa"}"#.into(),
                    "save" => {
                        assert_eq!(request["expected"].as_str(), Some(stored.as_str()));
                        r#"{"type":"saved"}"#.into()
                    }
                    other => panic!("unexpected {other}"),
                },
            );
        // Read, built from it, the conversation sent again; the recorded offload replays, so
        // nothing is written again, and the call's time is saved over what was read.
        assert_eq!(kinds, ["read", "resync", "conversation", "save"]);
        assert_eq!(done["changed"].as_bool(), Some(true));
        assert_eq!(compactions(&held), 1, "the stored stats, loaded");
        // Text that is not a state: the call's typed error naming the path, at every call.
        let mut bad = HeldCompactor::new(config, None).unwrap();
        bad.persist_later("/s.json", true);
        for _ in 0..2 {
            bad.sync(0, &conversation).unwrap();
            bad.session_start(Some("{}")).unwrap();
            let step: serde_json::Value =
                serde_json::from_str(&bad.session_poll(false).unwrap()).unwrap();
            let id = step["ios"][0]["id"].as_u64().unwrap();
            let error = bad
                .session_handle(id, r#"{"type":"read","text":"not a state"}"#)
                .unwrap_err();
            assert!(
                matches!(&error, Error::InvalidConfig { .. })
                    && error.to_string().contains("/s.json"),
                "{error}"
            );
        }
    }

    #[test]
    fn the_prompt_a_call_returned_is_calibrated_against_once_and_an_overflow_count_first() {
        let conversation = long_read();
        let config = r#"{"model":"claude-sonnet-4-5","contextWindow":16000}"#;
        let samples = |held: &HeldCompactor| -> u64 {
            let state: serde_json::Value = serde_json::from_str(&held.state()).unwrap();
            state["calibration"]["samples"].as_u64().unwrap_or(0)
        };
        let mut held = HeldCompactor::new(config, None).unwrap();
        // No call yet: no prompt to pair a report with.
        held.observe_usage(1000, None);
        assert_eq!(samples(&held), 0);
        held.sync(0, &conversation).unwrap();
        let (_, done) = drive(&mut held, "{}", |_, _| r#"{"type":"done"}"#.into());
        assert_eq!(done["applied"].as_bool(), Some(true));
        let sent = held.count_raw(None).unwrap();
        held.observe_usage(sent + sent / 10, None);
        assert_eq!(samples(&held), 1);
        // The same prompt reported again (onStepFinish, then the next prepareStep): ignored.
        held.observe_usage(sent + sent / 10, None);
        assert_eq!(samples(&held), 1);
        // A count of a prompt the app counted itself is always a sample.
        held.observe_usage(sent, Some(sent));
        assert_eq!(samples(&held), 2);
        // A call after the provider refused the prompt: its count calibrates before the plan.
        let (_, done) = drive(
            &mut held,
            &format!(
                r#"{{"overflow":{{"provider":"anthropic","message":"prompt is too long","reportedTokens":{},"limit":null,"attempt":2}}}}"#,
                sent * 2
            ),
            |_, _| r#"{"type":"done"}"#.into(),
        );
        assert_eq!(samples(&held), 3);
        assert_eq!(done["applied"].as_bool(), Some(false), "{done}");
        // Nothing left to compact: the core's verdict, for the host to raise.
        let failure = &done["overflow"];
        assert!(
            failure["message"]
                .as_str()
                .is_some_and(|m| m.ends_with("and nothing is left to compact")),
            "{done}"
        );
        assert_eq!(failure["details"]["provider"], "anthropic");
        assert_eq!(failure["details"]["attempts"], 2);
        // A call that is no recovery carries none.
        let (_, done) = drive(&mut held, "{}", |_, _| r#"{"type":"done"}"#.into());
        assert!(done.get("overflow").is_none(), "{done}");
        // An overflow option that is not parse-overflow's answer: a typed error naming it.
        for bad in [
            r#"{"overflow":{"reportedTokens":5}}"#,
            r#"{"overflow":{"provider":"openai","message":"x","reportedTokens":-1}}"#,
            r#"{"overflow":{"provider":"openai","message":"x","attempt":"1"}}"#,
        ] {
            let error = held.session_start(Some(bad)).unwrap_err();
            assert!(
                matches!(&error, Error::InvalidConfig { field, .. } if field == "overflow"),
                "{bad}: {error:?}"
            );
        }
    }

    #[test]
    fn a_state_kept_from_the_next_call_is_read_first_and_an_explicit_save_is_a_call() {
        let conversation = long_read();
        let config = r#"{"model":"gpt-4o","contextWindow":16000}"#;
        let mut held = HeldCompactor::new(config, None).unwrap();
        held.persist_later("/s.json", false);
        let other = HeldCompactor::new(config, None).unwrap().state();
        let theirs = crate::stored::next_text(&other, 4, "bbbbbbbb").unwrap();
        let stored = std::cell::RefCell::new(Some(theirs));
        let store = |_: &mut HeldCompactor, request: &serde_json::Value| -> String {
            match request["type"].as_str().unwrap() {
                "read" => {
                    assert_eq!(request["path"], "/s.json");
                    serde_json::json!({"type": "read", "text": *stored.borrow()}).to_string()
                }
                "write" => r#"{"type":"done"}"#.into(),
                "conversation" => r#"{"type":"conversation","conversation":"aaaaaaaa"}"#.into(),
                "save" => save_over(&stored, request),
                "resync" => r#"{"type":"done"}"#.into(),
                other => panic!("unexpected {other}"),
            }
        };
        // The first call reads the state before it plans, and its save is conditional on it.
        held.sync(0, &conversation).unwrap();
        let (kinds, done) = drive(&mut held, r#"{"now":1767268800000}"#, store);
        assert_eq!(kinds, ["read", "write", "conversation", "save"]);
        assert_eq!(done.get("stateError"), None);
        let first = stored.borrow().clone().unwrap();
        assert!(first.contains(r#""revision":6"#), "{first}");
        // An explicit save is a call of its own: saved even though nothing changed, and the
        // conversation it was saved for is asked again.
        let (kinds, done) = drive(&mut held, r#"{"save":true}"#, store);
        assert_eq!(kinds, ["conversation", "save"]);
        assert_eq!(
            (done["changed"].as_bool(), done.get("stateError")),
            (Some(false), None)
        );
        assert!(stored
            .borrow()
            .as_deref()
            .unwrap()
            .contains(r#""revision":7"#));
        // One another request beat takes that request's state, writes nothing over it, and
        // asks for the conversation again (the rebuilt core holds none).
        let beaten = first.replace(r#""revision":6"#, r#""revision":9"#);
        *stored.borrow_mut() = Some(beaten.clone());
        let (kinds, done) = drive(&mut held, r#"{"save":true}"#, store);
        assert_eq!(kinds, ["conversation", "save", "resync"]);
        assert_eq!((done.get("conflict"), done.get("stateError")), (None, None));
        assert_eq!(stored.borrow().as_deref(), Some(beaten.as_str()));
        let (kinds, _) = drive(&mut held, r#"{"save":true}"#, store);
        assert_eq!(kinds, ["conversation", "save"]);
        assert!(stored
            .borrow()
            .as_deref()
            .unwrap()
            .contains(r#""revision":10"#));
        // A state path whose read fails, or holds no state: kept as unread (said on the
        // result), the save made only over nothing.
        for answer in [
            r#"{"type":"failed","error":"the disk is gone"}"#,
            r#"{"type":"read","text":"not json"}"#,
        ] {
            let mut fresh = HeldCompactor::new(config, None).unwrap();
            fresh.persist_later("/s.json", false);
            fresh.sync(0, &conversation).unwrap();
            let saves = std::cell::RefCell::new(Vec::new());
            let (kinds, done) =
                drive(
                    &mut fresh,
                    r#"{"now":1767268800000}"#,
                    |_, request| match request["type"].as_str().unwrap() {
                        "read" => answer.into(),
                        "save" => {
                            saves.borrow_mut().push(request["expected"].clone());
                            r#"{"type":"saved"}"#.into()
                        }
                        "conversation" => {
                            r#"{"type":"conversation","conversation":"aaaaaaaa"}"#.into()
                        }
                        _ => r#"{"type":"done"}"#.into(),
                    },
                );
            assert_eq!(kinds[0], "read");
            assert_eq!(*saves.borrow(), [serde_json::Value::Null], "{answer}");
            assert_eq!(done.get("stateError"), None, "{answer}: the save landed");
        }
    }

    /// 24 questions and their answers, plain text, as JSON.
    fn sky_chat() -> String {
        let chat: Vec<serde_json::Value> = (0..24)
            .flat_map(|i| {
                let text = "why is the sky blue? ".repeat(20);
                [
                    serde_json::json!({"role": "user", "content": format!("q{i}: {text}")}),
                    serde_json::json!({"role": "assistant", "content": format!("a{i}: {text}")}),
                ]
            })
            .collect();
        serde_json::Value::from(chat).to_string()
    }

    /// A compactor holding the sky chat with its state at `/s.json`, and the options of a
    /// manual call whose summaries are leased by `me` (wall clock 1000).
    fn leased_sky() -> (HeldCompactor, &'static str) {
        let mut held =
            HeldCompactor::new(r#"{"model":"gpt-4o","contextWindow":16000}"#, None).unwrap();
        held.persist_at("/s.json", None, true, None).unwrap();
        held.sync(0, &sky_chat()).unwrap();
        let options =
            r#"{"trigger":"manual","lease":{"owner":"me","summarizeTimeoutMs":1000,"wall":1000}}"#;
        (held, options)
    }

    /// A call dropped while its summary is out under a lease (a cancelled task: a client that
    /// went away) says the write that releases the lease; a Python user's retry waited out the
    /// lease, 127 s, without it. Nothing else is written, and the compactor takes a new call.
    #[test]
    fn an_abandoned_call_releases_the_summary_lease_it_holds() {
        let (mut held, options) = leased_sky();
        // Nothing under way: nothing to release.
        assert_eq!(held.session_abandon(), "[]");
        held.session_start(Some(options)).unwrap();
        let mut lease = None;
        'summary: loop {
            let step: serde_json::Value =
                serde_json::from_str(&held.session_poll(false).unwrap()).unwrap();
            for io in step["ios"].as_array().expect("requests before the summary") {
                let request = &io["request"];
                let reply = match request["type"].as_str().unwrap() {
                    "summarize" => break 'summary,
                    "ask" => serde_json::json!({"type": "decision"}),
                    "write" => serde_json::json!({"type": "done"}),
                    "read" => serde_json::json!({"type": "read", "text": null}),
                    "save" => {
                        lease = Some(request["text"].as_str().unwrap().to_owned());
                        serde_json::json!({"type": "saved"})
                    }
                    other => panic!("unexpected {other}"),
                };
                let mut reply = reply;
                reply["now"] = serde_json::json!(2000);
                held.session_handle(io["id"].as_u64().unwrap(), &reply.to_string())
                    .unwrap();
            }
        }
        let lease = lease.expect("the lease taken");
        let releases: serde_json::Value = serde_json::from_str(&held.session_abandon()).unwrap();
        let releases = releases.as_array().unwrap();
        assert_eq!(releases.len(), 1, "{releases:?}");
        let release = &releases[0]["request"];
        assert_eq!(release["type"], "save");
        assert!(release["path"]
            .as_str()
            .unwrap()
            .starts_with("/s.json.summaries/"));
        assert_eq!(release["expected"].as_str(), Some(lease.as_str()));
        assert_ne!(release["text"].as_str(), Some(lease.as_str()));
        assert!(held.session_poll(false).is_err(), "the call is over");
        assert_eq!(held.session_abandon(), "[]");
        // The compactor takes the next call.
        let (kinds, _) = drive(&mut held, r#"{"trigger":"auto"}"#, |_, _| {
            r#"{"type":"done","now":3000}"#.to_owned()
        });
        assert!(!kinds.contains(&"summarize".to_owned()), "{kinds:?}");
    }

    #[test]
    fn a_leased_call_asks_for_its_summary_lease_in_the_calls_words() {
        let (mut held, options) = leased_sky();
        let chat = sky_chat();
        let config = r#"{"model":"gpt-4o","contextWindow":16000}"#;
        let leases = std::cell::RefCell::new(Vec::new());
        let (kinds, done) = drive(&mut held, options, |_, request| {
            let reply = match request["type"].as_str().unwrap() {
                "write" | "put" => serde_json::json!({"type": "done"}),
                "read" => serde_json::json!({"type": "read", "text": null}),
                "save" => {
                    if request["path"] != "/s.json" {
                        leases
                            .borrow_mut()
                            .push(request["text"].as_str().unwrap().to_owned());
                    }
                    serde_json::json!({"type": "saved"})
                }
                "summarize" => {
                    serde_json::json!({"type": "text", "text": "## Session Intent\nsky"})
                }
                "conversation" => serde_json::json!({"type": "conversation", "conversation": "c"}),
                "ask" => serde_json::json!({"type": "decision"}),
                other => panic!("unexpected {other}"),
            };
            let mut reply = reply;
            reply["now"] = serde_json::json!(2000);
            reply.to_string()
        });
        // The hook, the transcript's two files, then the lease read, taken, the summary, the
        // summary left in the lease; then the state's save.
        assert_eq!(
            kinds,
            [
                "ask",
                "write",
                "write",
                "read",
                "save",
                "summarize",
                "save",
                "conversation",
                "save"
            ]
        );
        assert_eq!(
            *leases.borrow(),
            [
                // taken at the read's time, 2000, for the summarizer's 1000 ms and 5 s more
                r#"{"owner":"me","until":8000}"#.to_owned(),
                "{\"summary\":\"## Session Intent\\nsky\"}".to_owned()
            ]
        );
        assert_eq!(done["changed"].as_bool(), Some(true));
        // A reply to a lease's request that does not say the wall clock is a typed error.
        let mut held = HeldCompactor::new(config, None).unwrap();
        held.persist_at("/s.json", None, true, None).unwrap();
        held.sync(0, &chat).unwrap();
        held.session_start(Some(options)).unwrap();
        let read = 'read: loop {
            let step: serde_json::Value =
                serde_json::from_str(&held.session_poll(false).unwrap()).unwrap();
            for io in step["ios"]
                .as_array()
                .expect("requests before the lease's read")
            {
                if io["request"]["type"] == "read" {
                    break 'read io["id"].as_u64().unwrap();
                }
                let reply = match io["request"]["type"].as_str().unwrap() {
                    "ask" => r#"{"type":"decision"}"#,
                    _ => r#"{"type":"done","now":2000}"#,
                };
                held.session_handle(io["id"].as_u64().unwrap(), reply)
                    .unwrap();
            }
        };
        let error = held
            .session_handle(read, r#"{"type":"read","text":null}"#)
            .unwrap_err();
        assert!(error.to_string().contains("wall clock"), "{error}");
    }

    #[test]
    fn a_sync_while_a_call_runs_leaves_the_calls_conversation_as_it_was() {
        // A conversation whose state records a summary (its replay reads each message's part
        // fingerprints), compacted again by hand; while the hook is asked, the app syncs
        // another conversation (npm: `usage(other)` while `compact` awaits the hook), then
        // answers with instructions, so the call plans again: on its own conversation.
        let chat = sky_chat();
        let other = serde_json::Value::from(vec![
            serde_json::json!({"role": "assistant", "content": []});
            60
        ])
        .to_string();
        let config = r#"{"model":"gpt-4o","contextWindow":16000}"#;
        let other = other.as_str();
        let answer = |interleave: bool| {
            move |held: &mut HeldCompactor, request: &serde_json::Value| -> String {
                match request["type"].as_str().unwrap() {
                    "summarize" => {
                        serde_json::json!({"type": "text", "text": "## Session Intent\nsky"})
                            .to_string()
                    }
                    "ask" => {
                        if interleave {
                            held.sync(0, other).unwrap();
                        }
                        r#"{"type":"decision","customInstructions":"the sky"}"#.into()
                    }
                    _ => r#"{"type":"done"}"#.into(),
                }
            }
        };
        let mut first = HeldCompactor::new(config, None).unwrap();
        first.sync(0, &chat).unwrap();
        drive(&mut first, r#"{"trigger":"manual"}"#, answer(false));
        let state = first.state();
        let run = |interleave: bool| {
            let mut held = HeldCompactor::new(config, Some(&state)).unwrap();
            held.sync(0, &chat).unwrap();
            let (kinds, mut done) = drive(&mut held, r#"{"trigger":"manual"}"#, answer(interleave));
            done["plan"]["notes"] = serde_json::Value::Null;
            (kinds, done, held.planned().len())
        };
        let (kinds, done, held) = run(true);
        assert!(kinds.contains(&"ask".to_owned()), "{kinds:?}");
        assert_eq!(done["plan"]["replayed"]["spans"], 1, "{done}");
        assert_eq!((kinds, done, held), run(false));
    }

    #[test]
    fn a_session_leaves_write_contents_apart() {
        let conversation = long_read();
        let step = |apart: bool| {
            let mut held =
                HeldCompactor::new(r#"{"model":"gpt-4o","contextWindow":16000}"#, None).unwrap();
            held.sync(0, &conversation).unwrap();
            held.session_start(None).unwrap();
            let step: serde_json::Value =
                serde_json::from_str(&held.session_poll(apart).unwrap()).unwrap();
            let write = step["ios"]
                .as_array()
                .unwrap()
                .iter()
                .find(|io| io["request"]["type"] == "write")
                .cloned()
                .unwrap();
            let id = write["id"].as_u64().unwrap();
            let inline = write["request"]["content"].as_str().unwrap().to_owned();
            (inline, held.take_content(id), held.take_content(id))
        };
        let (inline, taken, again) = step(false);
        assert!(inline.contains("line of a long tool output") && taken.is_empty());
        let (empty, apart, again_apart) = step(true);
        assert_eq!((empty.as_str(), apart.as_str()), ("", inline.as_str()));
        assert!(again.is_empty() && again_apart.is_empty(), "taken once");
    }

    #[test]
    fn an_overflow_verdict_asked_with_bad_input_is_a_typed_error() {
        let ask = |json: &str| overflow_verdict(json);
        let said = r#"{"provider":"anthropic","reportedTokens":219898,"limit":200000,"message":"prompt is too long"}"#;
        assert_eq!(
            ask(&format!(
                r#"{{"moment":"refused","overflow":{said},"attempt":0,"retries":1}}"#
            ))
            .unwrap(),
            r#"{"verdict":"retry","attempt":1}"#
        );
        // A host's retries past u32 saturate.
        assert_eq!(
            ask(&format!(
                r#"{{"moment":"refused","overflow":{said},"attempt":1,"retries":4294967296}}"#
            ))
            .unwrap(),
            r#"{"verdict":"retry","attempt":2}"#
        );
        for bad in [
            r#"{"moment":"refused","overflow":"nope","attempt":0,"retries":1}"#,
            r#"{"moment":"sideways","overflow":null,"attempt":0,"retries":1}"#,
            r#"{"moment":"refused","overflow":null,"attempt":1.5,"retries":1}"#,
            r#"{"moment":"refused","overflow":null,"attempt":-1,"retries":1}"#,
            r#"[]"#,
            r#"not json"#,
        ] {
            let error = ask(bad).expect_err(bad);
            assert!(
                matches!(
                    error,
                    Error::InvalidConfig { .. } | Error::MalformedJson { .. }
                ),
                "{bad}: {error:?}"
            );
        }
    }

    #[test]
    fn an_on_pre_compact_answer_is_read_strictly() {
        let read = |json: &str| reply(json).map(|(reply, _)| reply);
        assert_eq!(
            read(r#"{"type":"decision","cancel":true,"customInstructions":null}"#).unwrap(),
            Reply::Decision {
                decision: crate::PreCompactDecision {
                    cancel: true,
                    custom_instructions: None,
                    custom_summary: None
                }
            }
        );
        for (bad, field) in [
            (r#"{"type":"decision","cancel":1}"#, "onPreCompact.cancel"),
            (
                r#"{"type":"decision","cancel":"no"}"#,
                "onPreCompact.cancel",
            ),
            (
                r#"{"type":"decision","customSummary":5}"#,
                "onPreCompact.customSummary",
            ),
        ] {
            match read(bad) {
                Err(Error::InvalidConfig { field: f, .. }) => assert_eq!(f, field, "{bad}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_recovery_tool_count_that_is_no_whole_number_is_named_not_malformed_json() {
        for (options, field) in [
            (r#"{"defaultLimit": -1}"#, "defaultLimit"),
            (r#"{"defaultLimit": 1.5}"#, "defaultLimit"),
            (r#"{"maxLineChars": "x"}"#, "maxLineChars"),
        ] {
            match recovery_tool_run("read_file", "{}", options) {
                Err(Error::InvalidConfig { field: named, .. }) => assert_eq!(named, field),
                other => panic!("{options}: {other:?}"),
            }
        }
        assert!(recovery_tools(r#"{"defaultLimit": 20, "maxPageChars": null}"#).is_ok());
        // A page limit's fraction (a share of a window) is floored; below 1 it is refused.
        assert_eq!(
            recovery_options(r#"{"maxPageChars": 12800.9}"#)
                .unwrap()
                .max_page_chars,
            Some(12800)
        );
        for options in [
            r#"{"maxPageChars": 0.5}"#,
            r#"{"maxPageChars": -3.5}"#,
            r#"{"maxPageChars": 1e300}"#,
            r#"{"statePath": "state.json"}"#,
            r#"{"statePath": null}"#,
        ] {
            assert!(
                matches!(recovery_options(options), Err(Error::InvalidConfig { field, message }) if options.contains(field.as_str()) && !message.contains("18446744073709551615")),
                "{options}"
            );
        }
        assert!(matches!(
            recovery_tools("{"),
            Err(Error::MalformedJson { .. })
        ));
    }
}
