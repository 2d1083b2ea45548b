//! The wasm-bindgen binding. It only converts: JSON strings in, JSON strings out, and every
//! error thrown as a JSON string `{"code": ..., "message": ...}` that the TypeScript host turns
//! into a typed `CompactorError`. JSON strings were measured against serde-wasm-bindgen (README,
//! "The wasm boundary"): faster on conversations of many parts, slower on one giant text.

use wasm_bindgen::prelude::*;

use crate::loop_context::{Iteration, LoopConfig, LoopContext};
use crate::{
    parse_messages, parse_messages_at, validate, Action, Compactor, Config, Encoding, Error,
    Message, Outcome, Plan, PlanOptions, State, Strategy,
};

type JsResult<T> = Result<T, JsValue>;

fn throw(error: Error) -> JsValue {
    let mut value = serde_json::to_value(&error).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.insert("message".into(), error.to_string().into());
    }
    JsValue::from_str(&value.to_string())
}

fn parse<T: serde::de::DeserializeOwned>(what: &str, json: &str) -> JsResult<T> {
    serde_json::from_str(json).map_err(|e| {
        let message = crate::error::strip_position(&e.to_string());
        if e.is_syntax() || e.is_eof() {
            throw(Error::json(what, &e))
        } else if matches!(what, "plan" | "outcomes") {
            // A plan or outcomes the core did not produce: a mismatch with what it planned.
            throw(Error::PlanMismatch {
                action_id: None,
                message: format!("{what}: {message}"),
            })
        } else {
            // Host-supplied data (an iteration, a loop context, a state): invalid input.
            throw(Error::InvalidConfig {
                field: what.to_owned(),
                message,
            })
        }
    })
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    // Serializing our own types to a String cannot fail (no non-string map keys, no IO).
    serde_json::to_string(value).unwrap_or_default()
}

/// Exact token count of `text` in an encoding (`o200k_base`, `cl100k_base`) or a tokenizer
/// loaded with `loadTokenizer`.
#[wasm_bindgen(js_name = countTokens)]
pub fn count_tokens(text: &str, encoding: &str) -> JsResult<u32> {
    let n = crate::count_tokens_named(text, encoding).map_err(throw)?;
    Ok(u32::try_from(n).unwrap_or(u32::MAX))
}

#[wasm_bindgen]
extern "C" {
    /// `String.prototype.normalize.call(text, form)`.
    #[wasm_bindgen(js_namespace = ["String", "prototype", "normalize"], js_name = call)]
    fn js_normalize(text: &str, form: &str) -> String;
}

fn host_nfc(text: &str) -> String {
    js_normalize(text, "NFC")
}

/// Builds a tokenizer from a Hugging Face `tokenizer.json` under `name`; returns
/// `{"name","kind","tokens"}` as JSON. Loading a loaded name keeps the first.
#[wasm_bindgen(js_name = loadTokenizer)]
pub fn load_tokenizer(name: &str, json: &str) -> JsResult<String> {
    if name.parse::<Encoding>().is_ok() {
        return Err(throw(Error::InvalidConfig {
            field: "name".into(),
            message: format!("\"{name}\" is an encoding; give the tokenizer another name"),
        }));
    }
    // The wasm build has no NFC tables of its own: the host's NFC serves (Qwen).
    crate::counting::hf::set_nfc(host_nfc);
    let t = crate::counting::hf::load(name, json).map_err(throw)?;
    Ok(serde_json::json!({"name": t.name(), "kind": t.kind(), "tokens": t.len()}).to_string())
}

/// Loads an encoding from rank data (the `CCR1` / `CCR2` formats of `data/*.ranks`). The npm build has no
/// embedded ranks; the host hands them over once. Loading a loaded encoding is a no-op.
#[wasm_bindgen(js_name = loadEncoding)]
pub fn load_encoding(encoding: &str, data: Vec<u8>) -> JsResult<()> {
    let encoding: Encoding = encoding.parse().map_err(throw)?;
    if crate::counting::bpe::is_available(encoding) {
        return Ok(());
    }
    crate::counting::bpe::load(encoding, data)
        .map(|_| ())
        .map_err(throw)
}

/// The tokens of a request broken down per message, part and tool definition (`Breakdown` as
/// JSON), counted with an encoding or a loaded tokenizer.
#[wasm_bindgen(js_name = countBreakdown)]
pub fn count_breakdown(messages_json: &str, tools_json: &str, encoding: &str) -> JsResult<String> {
    let messages = parse_messages(messages_json).map_err(throw)?;
    let tools: Vec<crate::config::ToolDefinition> = parse("tools", tools_json)?;
    let counter = crate::counter_named(encoding).map_err(throw)?;
    Ok(to_json(&counter.breakdown(&messages, &tools)))
}

/// Whether the encoding (or loaded tokenizer) can count now.
#[wasm_bindgen(js_name = encodingLoaded)]
pub fn encoding_loaded(encoding: &str) -> JsResult<bool> {
    Ok(crate::can_count(encoding))
}

/// Forces the encoding's rank tables to load now rather than on first count.
#[wasm_bindgen(js_name = warmUp)]
pub fn warm_up(encoding: &str) -> JsResult<()> {
    count_tokens("warm", encoding).map(|_| ())
}

/// A compactor and the conversation it holds. The host syncs the conversation incrementally
/// (`sync`: keep what is unchanged, append the rest), so a conversation that grew by one message
/// crosses the boundary as one message. Every method that takes `messages_json` uses those
/// messages instead when given, and the held conversation when not.
#[wasm_bindgen]
pub struct WasmCompactor {
    inner: Compactor,
    held: Vec<Message>,
}

impl WasmCompactor {
    fn messages<'a>(&'a self, json: Option<&str>) -> JsResult<std::borrow::Cow<'a, [Message]>> {
        match json {
            Some(json) => Ok(parse_messages(json).map_err(throw)?.into()),
            None => Ok(self.held.as_slice().into()),
        }
    }
}

#[wasm_bindgen]
impl WasmCompactor {
    #[wasm_bindgen(constructor)]
    pub fn new(config_json: &str, state_json: Option<String>) -> JsResult<WasmCompactor> {
        let config = Config::from_json(config_json).map_err(throw)?;
        let state: State = match state_json {
            Some(json) => parse("state", &json)?,
            None => State::default(),
        };
        Ok(WasmCompactor {
            inner: Compactor::with_state(config, state).map_err(throw)?,
            held: Vec::new(),
        })
    }

    /// Holds the first `keep` held messages followed by `appended_json` (an array), and
    /// validates the whole. Returns the number held. On any error nothing is held (the host
    /// syncs in full next time).
    pub fn sync(&mut self, keep: u32, appended_json: &str) -> JsResult<u32> {
        let keep = keep as usize;
        // Taken out: on any error below, nothing is held.
        let mut held = std::mem::take(&mut self.held);
        if keep > held.len() {
            return Err(throw(Error::InvalidMessages {
                message: format!("sync: keep {keep} of {} held messages", held.len()),
            }));
        }
        held.truncate(keep);
        held.extend(parse_messages_at(appended_json, keep).map_err(throw)?);
        validate(&held).map_err(throw)?;
        self.held = held;
        Ok(u32::try_from(self.held.len()).unwrap_or(u32::MAX))
    }

    /// `options_json`: `{trigger?: 'auto' | 'manual', instructions?: string}`. The plan crosses
    /// without its bulk, which the host has or can ask for: transcripts' `json` and `markdown`
    /// are empty (`transcript` renders them) and a summary request's `messages` is empty (it is
    /// `[{role: 'user', content: prompt}]`).
    pub fn plan(
        &self,
        messages_json: Option<String>,
        options_json: Option<String>,
    ) -> JsResult<String> {
        let messages = self.messages(messages_json.as_deref())?;
        let mut options: PlanOptions = match options_json {
            Some(json) => {
                crate::config::deserialize(parse::<serde_json::Value>("plan options", &json)?)
                    .map_err(throw)?
            }
            None => PlanOptions::default(),
        };
        options.defer_transcript = true;
        let mut plan = self
            .inner
            .plan_with_options(&messages, &options)
            .map_err(throw)?;
        for action in &mut plan.actions {
            if let Action::Summarize(s) = action {
                s.request.messages.clear();
            }
        }
        Ok(to_json(&plan))
    }

    /// The transcript (`{id, path, readablePath, json, markdown, messages}`) that a lossy action
    /// of `strategy` (`summarize`, `truncate`, `importance`) saves for the messages.
    pub fn transcript(&self, messages_json: Option<String>, strategy: &str) -> JsResult<String> {
        let messages = self.messages(messages_json.as_deref())?;
        let strategy: Strategy = parse("strategy", &to_json(&strategy))?;
        Ok(to_json(&self.inner.transcript(&messages, strategy)))
    }

    /// Applies outcomes to the messages (a plan whose transcripts changed since gives
    /// `plan_mismatch`). With the held conversation, the result becomes the held one.
    pub fn apply(
        &mut self,
        messages_json: Option<String>,
        plan_json: &str,
        outcomes_json: &str,
    ) -> JsResult<String> {
        let plan: Plan = parse("plan", plan_json)?;
        let outcomes: Vec<Outcome> = parse("outcomes", outcomes_json)?;
        let held = messages_json.is_none();
        let messages = match messages_json {
            Some(json) => parse_messages(&json).map_err(throw)?,
            None => self.held.clone(),
        };
        let applied = self
            .inner
            .apply(messages, &plan, &outcomes)
            .map_err(throw)?;
        let json = to_json(&applied);
        if held {
            self.held = applied.messages;
        }
        Ok(json)
    }

    /// `{tokens, window, fraction}` as JSON.
    pub fn usage(&self, messages_json: Option<String>) -> JsResult<String> {
        let messages = self.messages(messages_json.as_deref())?;
        Ok(to_json(&self.inner.usage(&messages)))
    }

    /// Uncalibrated count, to pair with a later `observeUsage`.
    #[wasm_bindgen(js_name = countRaw)]
    pub fn count_raw(&self, messages_json: Option<String>) -> JsResult<u32> {
        let messages = self.messages(messages_json.as_deref())?;
        Ok(self.inner.count_raw(&messages))
    }

    #[wasm_bindgen(js_name = observeUsage)]
    pub fn observe_usage(&mut self, predicted_raw: u32, actual: u32) {
        self.inner.observe_usage(predicted_raw, actual);
    }

    pub fn state(&self) -> String {
        to_json(self.inner.state())
    }

    pub fn stats(&self) -> String {
        to_json(self.inner.stats())
    }

    pub fn model(&self) -> String {
        to_json(self.inner.model())
    }
}

// ---------------------------------------------------------------------------------------------
// Loop context (seed 003) and prompt segments: stateless, the state travels as JSON.

/// `{context, request}`: the context after adding the iteration, and a summary request if one
/// is due.
#[wasm_bindgen(js_name = loopAddIteration)]
pub fn loop_add_iteration(
    context_json: &str,
    iteration_json: &str,
    config_json: &str,
) -> JsResult<String> {
    let mut context: LoopContext = parse("loop context", context_json)?;
    let iteration: Iteration = parse("iteration", iteration_json)?;
    let config = LoopConfig::from_json(config_json).map_err(throw)?;
    let request = context.add_iteration(iteration, &config);
    Ok(loop_step(&context, request.as_ref()))
}

/// `{context, request}`, as the loop functions that may ask for a summary answer.
fn loop_step(
    context: &LoopContext,
    request: Option<&crate::loop_context::SummaryRequest>,
) -> String {
    to_json(&serde_json::json!({ "context": context, "request": request }))
}

/// A fresh loop context as JSON.
#[wasm_bindgen(js_name = loopNew)]
pub fn loop_new(goal: &str, start_unix_ms: f64) -> String {
    to_json(&LoopContext::new(goal, start_unix_ms.max(0.0) as u64))
}

/// `{context, request}` with a summary request made now (e.g. to retry after a failure).
#[wasm_bindgen(js_name = loopRequestSummary)]
pub fn loop_request_summary(context_json: &str, config_json: &str) -> JsResult<String> {
    let mut context: LoopContext = parse("loop context", context_json)?;
    let config = LoopConfig::from_json(config_json).map_err(throw)?;
    let request = context.request_summary(&config);
    Ok(loop_step(&context, request.as_ref()))
}

/// The context after the host's answer to a summary request: `summary` on success, else
/// `error`.
#[wasm_bindgen(js_name = loopApplySummary)]
pub fn loop_apply_summary(
    context_json: &str,
    id: &str,
    summary: Option<String>,
    error: Option<String>,
) -> JsResult<String> {
    let mut context: LoopContext = parse("loop context", context_json)?;
    let answer = summary.ok_or_else(|| error.unwrap_or_else(|| "no summary".into()));
    context.apply_summary(id, answer).map_err(throw)?;
    Ok(to_json(&context))
}

#[wasm_bindgen(js_name = loopBuildPrompt)]
pub fn loop_build_prompt(context_json: &str, config_json: &str) -> JsResult<String> {
    let context: LoopContext = parse("loop context", context_json)?;
    let config = LoopConfig::from_json(config_json).map_err(throw)?;
    Ok(crate::loop_context::build_prompt(&context, &config))
}

#[wasm_bindgen(js_name = recoverySegment)]
pub fn recovery_segment(offload_prefix: &str, history_prefix: &str) -> String {
    crate::prompts::recovery_segment(offload_prefix, history_prefix)
}

#[wasm_bindgen(js_name = memorySegment)]
pub fn memory_segment(memories_prefix: &str) -> String {
    crate::prompts::memory_segment(memories_prefix)
}

#[wasm_bindgen(js_name = withMemory)]
pub fn with_memory(system: &str, agents_md: Option<String>) -> String {
    crate::prompts::with_memory(system, agents_md.as_deref())
}

mod report;
