//! The wasm-bindgen binding. It only converts: JSON strings in, JSON strings out, and every
//! error thrown as a JSON string `{"code": ..., "message": ...}` that the TypeScript host turns
//! into a typed `CompactorError`. JSON strings were measured against serde-wasm-bindgen (README,
//! "The wasm boundary"): faster on conversations of many parts, slower on one giant text.

use wasm_bindgen::prelude::*;

use super::host::throw;
use super::json::{self, HeldCompactor};

type JsResult<T> = Result<T, JsValue>;

/// A compactor and the conversation it holds (see `bindings/json.rs`, `HeldCompactor`).
#[wasm_bindgen]
pub struct WasmCompactor(HeldCompactor);

#[wasm_bindgen]
impl WasmCompactor {
    #[wasm_bindgen(constructor)]
    pub fn new(config_json: &str, state_json: Option<String>) -> JsResult<WasmCompactor> {
        HeldCompactor::new(config_json, state_json.as_deref())
            .map(WasmCompactor)
            .map_err(throw)
    }

    /// Holds the first `keep` held messages followed by `appended_json` (an array), and
    /// validates the whole. Returns the number held. On any error nothing is held (the host
    /// syncs in full next time).
    pub fn sync(&mut self, keep: u32, appended_json: &str) -> JsResult<u32> {
        self.0.sync(keep, appended_json).map_err(throw)
    }

    /// Whether the text the last `sync` appended escaped a UTF-16 surrogate (`\udXXX`: how
    /// JSON.stringify writes a lone one), seen by the parse's own scan; `undefined` when it could
    /// not tell (the host then looks itself).
    #[wasm_bindgen(js_name = surrogateEscapes)]
    pub fn surrogate_escapes(&self) -> Option<bool> {
        self.0.surrogate_escapes()
    }

    /// `options_json`: `{trigger?: 'auto' | 'manual', instructions?: string}`. The plan crosses
    /// without its bulk, which the host has or can ask for: transcripts' `json` and `markdown`
    /// are empty (`transcript` renders them), a summary request's `messages` is empty (it is
    /// `[{role: 'user', content: prompt}]`) and so is its `prompt` (`takePrompt` hands it over).
    pub fn plan(
        &self,
        messages_json: Option<String>,
        options_json: Option<String>,
    ) -> JsResult<String> {
        self.0
            .plan(messages_json.as_deref(), options_json.as_deref(), true)
            .map_err(throw)
    }

    /// The last plan's summary request `prompt` as UTF-8 (empty when it has none), once: the
    /// host takes it right after `plan` and decodes it only when it is read.
    #[wasm_bindgen(js_name = takePrompt)]
    pub fn take_prompt(&self) -> Vec<u8> {
        self.0.take_prompt().into_bytes()
    }

    /// The transcript (`{id, path, readablePath, json, markdown, messages}`) that a lossy action
    /// of `strategy` (`summarize`, `truncate`, `importance`) saves for the messages.
    pub fn transcript(&self, messages_json: Option<String>, strategy: &str) -> JsResult<String> {
        self.0
            .transcript(messages_json.as_deref(), strategy)
            .map_err(throw)
    }

    /// Applies outcomes to the messages (a plan whose transcripts changed since gives
    /// `plan_mismatch`). With the held conversation, the result becomes the held one.
    /// `plan_json` is the JSON `plan` returned, unchanged (one of the last 16; not parsed again).
    pub fn apply(
        &mut self,
        messages_json: Option<String>,
        plan_json: &str,
        outcomes_json: &str,
    ) -> JsResult<String> {
        self.0
            .apply(messages_json.as_deref(), plan_json, outcomes_json)
            .map_err(throw)
    }

    /// Starts a `manage` / `compact` call on the held conversation: the core's loop, driven
    /// with `sessionPoll` / `sessionHandle` (docs/LOOP.md). `options_json`: `{trigger?,
    /// instructions?, overflow?: {reportedTokens, limit}}`.
    #[wasm_bindgen(js_name = sessionStart)]
    pub fn session_start(&mut self, options_json: Option<String>) -> JsResult<()> {
        self.0.session_start(options_json.as_deref()).map_err(throw)
    }

    /// The session's next step as JSON: `io` (requests to carry out), `wait`, or `done` (a done
    /// plan's summary prompt waits for `takePrompt`, as `plan`'s does).
    #[wasm_bindgen(js_name = sessionPoll)]
    pub fn session_poll(&mut self) -> JsResult<String> {
        self.0.session_poll(true).map_err(throw)
    }

    /// The changed messages of the last `done` as JSON, once (they cross apart from the rest).
    #[wasm_bindgen(js_name = takeResult)]
    pub fn take_result(&mut self) -> String {
        self.0.take_result()
    }

    /// The content of the session's write request `id`, or its summary request's prompt, as
    /// UTF-8 (the step has it empty), once.
    #[wasm_bindgen(js_name = takeContent)]
    pub fn take_content(&mut self, id: u32) -> Vec<u8> {
        self.0.take_content(u64::from(id)).into_bytes()
    }

    /// Hands back the outcome of the session's request `id` (a reply as JSON).
    #[wasm_bindgen(js_name = sessionHandle)]
    pub fn session_handle(&mut self, id: u32, reply_json: &str) -> JsResult<()> {
        self.0
            .session_handle(u64::from(id), reply_json)
            .map_err(throw)
    }

    /// Starts tier 1 on a tool's output at the moment it returns (`outputJson`; a text output
    /// when `text`): a run driven with `offloadPoll` / `offloadHandle`; its id.
    #[wasm_bindgen(js_name = offloadStart)]
    pub fn offload_start(
        &mut self,
        tool_name: &str,
        tool_call_id: &str,
        output_json: &str,
        text: bool,
    ) -> JsResult<u32> {
        self.0
            .offload_start(tool_name, tool_call_id, output_json, text)
            .map_err(throw)
    }

    /// The offload run's next step, as JSON (`io`, `wait`, or `done` with `preview` and
    /// `events`).
    #[wasm_bindgen(js_name = offloadPoll)]
    pub fn offload_poll(&mut self, run: u32) -> JsResult<String> {
        self.0.offload_poll(run).map_err(throw)
    }

    /// Hands back the outcome of the offload run's request `id` (a reply as JSON).
    #[wasm_bindgen(js_name = offloadHandle)]
    pub fn offload_handle(&mut self, run: u32, id: u32, reply_json: &str) -> JsResult<()> {
        self.0
            .offload_handle(run, u64::from(id), reply_json)
            .map_err(throw)
    }

    /// Forgets an offload run that did not end.
    #[wasm_bindgen(js_name = offloadDrop)]
    pub fn offload_drop(&mut self, run: u32) {
        self.0.offload_drop(run);
    }

    /// Messages `[0, end)` of the held conversation as planned (the compaction record replayed
    /// onto it): the prefix of a summary request's continuation.
    #[wasm_bindgen(js_name = plannedPrefix)]
    pub fn planned_prefix(&self, end: u32) -> String {
        self.0.planned_prefix(end)
    }

    /// `{tokens, window, fraction}` as JSON.
    pub fn usage(&self, messages_json: Option<String>) -> JsResult<String> {
        self.0.usage(messages_json.as_deref()).map_err(throw)
    }

    /// Uncalibrated count, to pair with a later `observeUsage`.
    #[wasm_bindgen(js_name = countRaw)]
    pub fn count_raw(&self, messages_json: Option<String>) -> JsResult<u32> {
        self.0.count_raw(messages_json.as_deref()).map_err(throw)
    }

    /// The provider's reported input tokens of the prompt the last call returned (once: a
    /// second report of it is ignored), or of a prompt we counted `predicted_raw`.
    #[wasm_bindgen(js_name = observeUsage)]
    pub fn observe_usage(&mut self, actual: u32, predicted_raw: Option<u32>) {
        self.0.observe_usage(actual, predicted_raw);
    }

    pub fn state(&self) -> String {
        self.0.state()
    }

    /// The summary asked ahead under `key`; `false` when no longer wanted.
    #[wasm_bindgen(js_name = offerSummary)]
    pub fn offer_summary(&mut self, key: &str, text: &str) -> bool {
        self.0.offer_summary(key, text)
    }

    /// The summary asked ahead under `key` failed.
    #[wasm_bindgen(js_name = forgetAhead)]
    pub fn forget_ahead(&mut self, key: &str) -> bool {
        self.0.forget_ahead(key)
    }

    /// Keeps the state at `path`, which holds `text` (undefined: nothing, or unreadable: then
    /// `unread` says why, until a save lands); `loaded`: the compactor was built from it.
    #[wasm_bindgen(js_name = persistAt)]
    pub fn persist_at(
        &mut self,
        path: &str,
        text: Option<String>,
        loaded: bool,
        unread: Option<String>,
    ) -> JsResult<()> {
        self.0
            .persist_at(path, text.as_deref(), loaded, unread.as_deref())
            .map_err(throw)
    }

    /// `base` with what the agent must know about context management (the recovery segment for
    /// this compactor's paths; the memory protocol and `AGENTS.md` as `memory` and
    /// `agentsMd` say).
    #[wasm_bindgen(js_name = systemPrompt)]
    pub fn system_prompt(
        &self,
        base: &str,
        memory: Option<bool>,
        agents_md: Option<String>,
    ) -> String {
        self.0.system_prompt(base, memory, agents_md.as_deref())
    }

    /// Keeps the state at `path` from the next call, which reads it first (and, with `load`,
    /// is built from it).
    #[wasm_bindgen(js_name = persistLater)]
    pub fn persist_later(&mut self, path: &str, load: bool) {
        self.0.persist_later(path, load);
    }

    pub fn stats(&self) -> String {
        self.0.stats()
    }

    pub fn model(&self) -> String {
        self.0.model()
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
    json::loop_add_iteration(context_json, iteration_json, config_json).map_err(throw)
}

/// A fresh loop context as JSON.
#[wasm_bindgen(js_name = loopNew)]
pub fn loop_new(goal: &str, start_unix_ms: f64) -> String {
    json::loop_new(goal, start_unix_ms.max(0.0) as u64)
}

/// `{context, request}` with a summary request made now (e.g. to retry after a failure).
#[wasm_bindgen(js_name = loopRequestSummary)]
pub fn loop_request_summary(context_json: &str, config_json: &str) -> JsResult<String> {
    json::loop_request_summary(context_json, config_json).map_err(throw)
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
    json::loop_apply_summary(context_json, id, summary, error).map_err(throw)
}

#[wasm_bindgen(js_name = loopBuildPrompt)]
pub fn loop_build_prompt(context_json: &str, config_json: &str) -> JsResult<String> {
    json::loop_build_prompt(context_json, config_json).map_err(throw)
}

#[wasm_bindgen(js_name = recoverySegment)]
pub fn recovery_segment(offload_prefix: &str, history_prefix: &str) -> String {
    crate::prompts::recovery_segment(offload_prefix, history_prefix)
}

/// The recovery tools' specs (`[{name, description, inputSchema}]`) for the options' JSON.
#[wasm_bindgen(js_name = recoveryToolSpecs)]
pub fn recovery_tool_specs(options_json: &str) -> JsResult<String> {
    json::recovery_tools(options_json).map_err(throw)
}

/// One recovery tool call (`crate::recovery::ToolRun`): `io()` says which store call it needs,
/// the host hands the result to `handleRead` or `handleList`, until `io()` is `done`.
#[wasm_bindgen(js_name = RecoveryToolRun)]
pub struct RecoveryToolRun(crate::recovery::ToolRun);

#[wasm_bindgen(js_class = RecoveryToolRun)]
impl RecoveryToolRun {
    /// A call of the tool `name` with the model's arguments (JSON) and the options' JSON.
    #[wasm_bindgen(constructor)]
    pub fn new(name: &str, arguments_json: &str, options_json: &str) -> JsResult<RecoveryToolRun> {
        json::recovery_tool_run(name, arguments_json, options_json)
            .map(RecoveryToolRun)
            .map_err(throw)
    }

    /// `{type: "read", path}`, `{type: "list", prefix}` or `{type: "done", text}`.
    pub fn io(&self) -> String {
        json::recovery_tool_io(&self.0)
    }

    /// The file read (undefined: no file), or the store's error.
    #[wasm_bindgen(js_name = handleRead)]
    pub fn handle_read(&mut self, text: Option<String>, error: Option<String>) {
        self.0.handle_read(error.map_or(Ok(text), Err));
    }

    /// The paths listed, or the store's error.
    #[wasm_bindgen(js_name = handleList)]
    pub fn handle_list(&mut self, paths: Vec<String>, error: Option<String>) {
        self.0.handle_list(error.map_or(Ok(paths), Err));
    }
}

/// A summary asked ahead, made in the background (`crate::lease::AheadRun`): under the lease
/// beside the state when there is one. `poll()` says what it needs in the call's words; the host
/// hands back each outcome (`handle`, with `now`: the wall clock) until `poll()` is `done`.
#[wasm_bindgen(js_name = AheadRun)]
pub struct AheadRun(crate::lease::AheadRun);

#[wasm_bindgen(js_class = AheadRun)]
impl AheadRun {
    /// `{statePath?, key, owner, wall, summarizeTimeoutMs}`.
    #[wasm_bindgen(constructor)]
    pub fn new(options_json: &str) -> JsResult<AheadRun> {
        json::ahead_run(options_json).map(AheadRun).map_err(throw)
    }

    /// `{type: "io", ios}`, `{type: "wait"}` or `{type: "done", text}`.
    pub fn poll(&mut self) -> String {
        json::ahead_poll(&mut self.0)
    }

    /// The reply to request `id` (`{type, ..., now}`).
    pub fn handle(&mut self, id: u32, reply_json: &str) -> JsResult<()> {
        json::ahead_handle(&mut self.0, u64::from(id), reply_json).map_err(throw)
    }
}

/// The state stored at `path` as `text` (undefined: nothing): `{state, revision, conversation}`
/// as JSON (`crate::stored`); a text that is not a saved state throws `invalid_config`.
#[wasm_bindgen(js_name = storedState)]
pub fn stored_state(text: Option<String>, path: &str) -> JsResult<String> {
    json::stored_state(text.as_deref(), path).map_err(throw)
}

/// The `conversation` field for messages whose JSON texts are `messages`.
#[wasm_bindgen(js_name = conversationHashes)]
pub fn conversation_hashes(messages: Vec<String>) -> String {
    crate::stored::conversation_hashes(&messages)
}

/// Where the lease of the summary request `prompt` lives beside the state at `statePath`.
#[wasm_bindgen(js_name = leasePath)]
pub fn lease_path(state_path: &str, prompt: &str) -> String {
    crate::lease::lease_path(state_path, prompt)
}

/// Where a summary asked ahead under `key` waits beside the state at `statePath`.
#[wasm_bindgen(js_name = aheadPath)]
pub fn ahead_path(state_path: &str, key: &str) -> String {
    crate::lease::ahead_path(state_path, key)
}

/// What a lease's text says at `now`: `{summary, held: false}` or `{held}`.
#[wasm_bindgen(js_name = leaseState)]
pub fn lease_state(text: Option<String>, now: f64) -> String {
    crate::lease::LeaseState::of(text.as_deref(), now).to_json()
}

/// Whether the texts an error carries (message, code, response body, causes) are a provider's
/// "prompt too long" error: `{provider, reportedTokens?, limit?, message}` as JSON, or `null`.
/// `status`: the HTTP status, when known.
#[wasm_bindgen(js_name = parseOverflow)]
pub fn parse_overflow(texts: Vec<String>, status: Option<u16>) -> String {
    json::parse_overflow(&texts, status)
}

/// What a host does with its own options (`crate::host_settings`): what the app gave as JSON
/// in, `{summarizeTimeoutMs, storeTimeoutMs, overflowRetries, background}` out.
#[wasm_bindgen(js_name = hostSettings)]
pub fn host_settings(given_json: &str) -> JsResult<String> {
    crate::host_settings(given_json)
        .map(|settings| json::to_json(&settings))
        .map_err(throw)
}

/// What a host's overflow retry loop does next: `{moment, overflow, attempt, retries}` in,
/// `{verdict: "as-is" | "retry" | "fail", attempt?, message?, details?}` out (`src/overflow.rs`).
#[wasm_bindgen(js_name = overflowVerdict)]
pub fn overflow_verdict(asked_json: &str) -> JsResult<String> {
    json::overflow_verdict(asked_json).map_err(throw)
}

/// Where a request's Anthropic cache breakpoints go (`crate::anthropic_breakpoints`): per
/// message, 1 for a system message in `system` and 1 for a breakpoint already set in `marked`;
/// `{add: [index...], remove: [index...]}` as JSON.
#[wasm_bindgen(js_name = anthropicBreakpoints)]
pub fn anthropic_breakpoints(system: &[u8], marked: &[u8], max: u32) -> String {
    let flags = |bytes: &[u8]| bytes.iter().map(|&b| b != 0).collect::<Vec<bool>>();
    json::to_json(&crate::anthropic_breakpoints(
        &flags(system),
        &flags(marked),
        max as usize,
    ))
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
