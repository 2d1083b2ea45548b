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
use crate::{
    parse_messages, parse_messages_at, Action, Compactor, Config, Error, Message, Outcome, Plan,
    PlanOptions, Result, State, Strategy,
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
    /// The summary request's prompt that the last plan left apart (see [`HeldCompactor::plan`]).
    prompt: std::sync::Mutex<String>,
    /// The last plans made, as JSON and as made, newest last (see [`HeldCompactor::apply`]).
    plans: std::sync::Mutex<std::collections::VecDeque<(String, Plan)>>,
}

/// How many of its latest plans a compactor can apply (a host applies the plan it just made;
/// racing calls may have made a few more in between).
const PLANS_KEPT: usize = 16;

impl HeldCompactor {
    pub(crate) fn new(config_json: &str, state_json: Option<&str>) -> Result<Self> {
        let config = Config::from_json(config_json)?;
        let state: State = match state_json {
            Some(json) => parse("state", json)?,
            None => State::default(),
        };
        Ok(HeldCompactor {
            inner: Compactor::with_state(config, state)?,
            held: Vec::new(),
            calls: CallIds::default(),
            memo: std::sync::Mutex::new(crate::memo::Memo::held()),
            prompt: std::sync::Mutex::default(),
            plans: std::sync::Mutex::default(),
        })
    }

    fn messages<'a>(&'a self, json: Option<&str>) -> Result<Cow<'a, [Message]>> {
        match json {
            Some(json) => Ok(parse_messages(json)?.into()),
            None => Ok(self.held.as_slice().into()),
        }
    }

    /// Messages `[0, end)` of the held conversation as planned (the compaction record replayed
    /// onto it): the prefix of a summary request's continuation.
    pub(crate) fn planned_prefix(&self, end: u32) -> String {
        let planned = self.inner.replay(&self.held);
        let end = (end as usize).min(planned.len());
        to_json(&planned[..end])
    }

    /// Holds the first `keep` held messages followed by `appended_json` (an array), and
    /// validates the whole (the kept messages were validated when they came: only what is
    /// appended is checked). Returns the number held. On any error nothing is held (the host
    /// syncs in full next time).
    pub(crate) fn sync(&mut self, keep: u32, appended_json: &str) -> Result<u32> {
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
        held.extend(parse_messages_at(appended_json, keep)?);
        calls.validate(&held, keep)?;
        self.held = held;
        self.calls = calls;
        // What plans learned about the kept messages stays true.
        memo.truncate(keep);
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
        let messages = self.messages(messages_json)?;
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

    pub(crate) fn observe_usage(&mut self, predicted_raw: u32, actual: u32) {
        self.inner.observe_usage(predicted_raw, actual);
        self.memo
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .rescaled();
    }

    pub(crate) fn state(&self) -> String {
        to_json(self.inner.state())
    }

    pub(crate) fn stats(&self) -> String {
        to_json(self.inner.stats())
    }

    pub(crate) fn model(&self) -> String {
        to_json(self.inner.model())
    }
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
    let options: crate::recovery::RecoveryOptions = parse("recovery tool options", options_json)?;
    Ok(crate::recovery::tool_specs_json(&options))
}

/// A recovery tool call started from the model's arguments (JSON; malformed text is the
/// model's, answered as text by the run) and the options' JSON.
pub(crate) fn recovery_tool_run(
    name: &str,
    arguments_json: &str,
    options_json: &str,
) -> Result<crate::recovery::ToolRun> {
    let options: crate::recovery::RecoveryOptions = parse("recovery tool options", options_json)?;
    let arguments = serde_json::from_str(arguments_json).unwrap_or(serde_json::Value::Null);
    Ok(crate::recovery::ToolRun::new(name, &arguments, &options))
}

/// What `run` needs now, as JSON: `{type: "read", path}`, `{type: "list", prefix}` or `{type:
/// "done", text}`. (The run itself stays in the binding's object: serializing it for the host
/// would cost its deserializer in the wasm core.)
pub(crate) fn recovery_tool_io(run: &crate::recovery::ToolRun) -> String {
    run.poll().to_json()
}
