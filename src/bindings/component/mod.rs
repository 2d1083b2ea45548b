//! The Component Model binding (`wit/context-compactor.wit`, world `core`), built for
//! `wasm32-wasip2` with the `component` feature. Like the wasm-bindgen binding it only converts:
//! the JSON strings pass through `bindings/json.rs` unchanged, and a core [`Error`] becomes the
//! WIT `error` record (`code`, `message`, and the whole error as the npm binding throws it).

use std::cell::RefCell;

use super::json::{self, HeldCompactor};
use crate::Error;

// wit-bindgen's generated glue is `unsafe` by nature (it lifts and lowers through linear
// memory); the crate forbids unsafe code everywhere else.
wit_bindgen::generate!({
    world: "core",
    path: "wit",
});

use exports::context_compactor::core::api;

struct Component;

export!(Component);

fn error(error: Error) -> api::Error {
    let json = json::error_json(&error);
    let code = serde_json::to_value(&error)
        .ok()
        .and_then(|v| v.get("code").and_then(|c| c.as_str()).map(str::to_owned))
        .unwrap_or_default();
    api::Error {
        code,
        message: error.to_string(),
        json,
    }
}

/// The resource behind `compactor`: the held compactor, mutable through `&self` as WIT methods
/// are (a component instance is single-threaded).
pub struct ComponentCompactor(RefCell<HeldCompactor>);

/// The resource behind `tool-run`: one recovery tool call.
pub struct ComponentToolRun(RefCell<crate::recovery::ToolRun>);

impl api::GuestToolRun for ComponentToolRun {
    fn start(name: String, arguments: String, options: String) -> Result<api::ToolRun, api::Error> {
        let run = json::recovery_tool_run(&name, &arguments, &options).map_err(error)?;
        Ok(api::ToolRun::new(ComponentToolRun(RefCell::new(run))))
    }

    fn io(&self) -> String {
        json::recovery_tool_io(&self.0.borrow())
    }

    fn handle_read(&self, text: Option<String>, error: Option<String>) {
        self.0.borrow_mut().handle_read(error.map_or(Ok(text), Err));
    }

    fn handle_list(&self, paths: Vec<String>, error: Option<String>) {
        self.0
            .borrow_mut()
            .handle_list(error.map_or(Ok(paths), Err));
    }
}

/// The resource behind `ahead-run`: a summary asked ahead, made in the background.
pub struct ComponentAheadRun(RefCell<crate::lease::AheadRun>);

impl api::GuestAheadRun for ComponentAheadRun {
    fn start(options: String) -> Result<api::AheadRun, api::Error> {
        let run = json::ahead_run(&options).map_err(error)?;
        Ok(api::AheadRun::new(ComponentAheadRun(RefCell::new(run))))
    }

    fn poll(&self) -> String {
        json::ahead_poll(&mut self.0.borrow_mut())
    }

    fn handle(&self, id: u64, reply: String) -> Result<(), api::Error> {
        json::ahead_handle(&mut self.0.borrow_mut(), id, &reply).map_err(error)
    }
}

impl api::Guest for Component {
    type Compactor = ComponentCompactor;
    type ToolRun = ComponentToolRun;
    type AheadRun = ComponentAheadRun;

    fn count_tokens(text: String, encoding: String) -> Result<u32, api::Error> {
        json::count_tokens(&text, &encoding).map_err(error)
    }

    fn load_encoding(encoding: String, data: Vec<u8>) -> Result<(), api::Error> {
        json::load_encoding(&encoding, data).map_err(error)
    }

    fn load_encoding_base64(encoding: String, data: String) -> Result<(), api::Error> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_bytes())
            .map_err(|e| {
                error(crate::Error::InvalidRankData {
                    encoding: encoding.clone(),
                    reason: format!("the data is not base64: {e}"),
                })
            })?;
        json::load_encoding(&encoding, bytes).map_err(error)
    }

    fn encoding_loaded(encoding: String) -> Result<bool, api::Error> {
        json::encoding_loaded(&encoding).map_err(error)
    }

    fn load_tokenizer(name: String, json: String) -> Result<String, api::Error> {
        json::load_tokenizer(&name, &json).map_err(error)
    }

    fn count_breakdown(
        messages: String,
        tools: String,
        encoding: String,
    ) -> Result<String, api::Error> {
        json::count_breakdown(&messages, &tools, &encoding).map_err(error)
    }

    fn model_info(model: String) -> String {
        json::model_info(&model)
    }

    fn count_model_tokens(text: String, model: String) -> Result<String, api::Error> {
        json::count_model_tokens(&text, &model).map_err(error)
    }

    fn loop_new(goal: String, start_unix_ms: u64) -> String {
        json::loop_new(&goal, start_unix_ms)
    }

    fn loop_add_iteration(
        context: String,
        iteration: String,
        config: String,
    ) -> Result<String, api::Error> {
        json::loop_add_iteration(&context, &iteration, &config).map_err(error)
    }

    fn loop_request_summary(context: String, config: String) -> Result<String, api::Error> {
        json::loop_request_summary(&context, &config).map_err(error)
    }

    fn loop_apply_summary(
        context: String,
        id: String,
        summary: Option<String>,
        failure: Option<String>,
    ) -> Result<String, api::Error> {
        json::loop_apply_summary(&context, &id, summary, failure).map_err(error)
    }

    fn loop_build_prompt(context: String, config: String) -> Result<String, api::Error> {
        json::loop_build_prompt(&context, &config).map_err(error)
    }

    fn render_report(report: String) -> Result<String, api::Error> {
        let report = crate::bindings::report::parse(&report).map_err(error)?;
        Ok(crate::report::render_html(&report))
    }

    fn render_report_chart(report: String) -> Result<String, api::Error> {
        let report = crate::bindings::report::parse(&report).map_err(error)?;
        Ok(crate::report::render_chart(&report))
    }

    fn stored_state(text: Option<String>, path: String) -> Result<String, api::Error> {
        json::stored_state(text.as_deref(), &path).map_err(error)
    }

    fn conversation_hashes(messages: Vec<String>) -> String {
        crate::stored::conversation_hashes(&messages)
    }

    fn lease_path(state_path: String, prompt: String) -> String {
        crate::lease::lease_path(&state_path, &prompt)
    }

    fn ahead_path(state_path: String, key: String) -> String {
        crate::lease::ahead_path(&state_path, &key)
    }

    fn lease_state(text: Option<String>, now: f64) -> String {
        crate::lease::LeaseState::of(text.as_deref(), now).to_json()
    }

    fn recovery_segment(offload_prefix: String, history_prefix: String) -> String {
        crate::prompts::recovery_segment(&offload_prefix, &history_prefix)
    }

    fn recovery_tool_specs(options: String) -> Result<String, api::Error> {
        json::recovery_tools(&options).map_err(error)
    }

    fn parse_overflow(texts: Vec<String>, status: Option<u16>) -> String {
        json::parse_overflow(&texts, status)
    }

    fn overflow_verdict(asked: String) -> Result<String, api::Error> {
        json::overflow_verdict(&asked).map_err(error)
    }

    fn anthropic_breakpoints(system: Vec<bool>, marked: Vec<bool>, max: u32) -> String {
        json::to_json(&crate::anthropic_breakpoints(
            &system,
            &marked,
            max as usize,
        ))
    }

    fn memory_segment(memories_prefix: String) -> String {
        crate::prompts::memory_segment(&memories_prefix)
    }

    fn with_memory(system: String, agents_md: Option<String>) -> String {
        crate::prompts::with_memory(&system, agents_md.as_deref())
    }

    fn host_settings(given: String) -> Result<String, api::Error> {
        crate::host_settings(&given)
            .map(|settings| json::to_json(&settings))
            .map_err(error)
    }
}

impl api::GuestCompactor for ComponentCompactor {
    fn create(config: String, state: Option<String>) -> Result<api::Compactor, api::Error> {
        let inner = HeldCompactor::new(&config, state.as_deref()).map_err(error)?;
        Ok(api::Compactor::new(ComponentCompactor(RefCell::new(inner))))
    }

    fn sync(&self, keep: u32, appended: String) -> Result<u32, api::Error> {
        self.0.borrow_mut().sync(keep, &appended).map_err(error)
    }

    fn plan(
        &self,
        messages: Option<String>,
        options: Option<String>,
    ) -> Result<String, api::Error> {
        self.0
            .borrow()
            .plan(messages.as_deref(), options.as_deref(), false)
            .map_err(error)
    }

    fn transcript(&self, messages: Option<String>, strategy: String) -> Result<String, api::Error> {
        self.0
            .borrow()
            .transcript(messages.as_deref(), &strategy)
            .map_err(error)
    }

    fn apply(
        &self,
        messages: Option<String>,
        plan: String,
        outcomes: String,
    ) -> Result<String, api::Error> {
        self.0
            .borrow_mut()
            .apply(messages.as_deref(), &plan, &outcomes)
            .map_err(error)
    }

    fn planned_prefix(&self, end: u32) -> String {
        self.0.borrow().planned_prefix(end)
    }

    fn session_start(&self, options: Option<String>) -> Result<(), api::Error> {
        self.0
            .borrow_mut()
            .session_start(options.as_deref())
            .map_err(error)
    }

    fn session_poll(&self) -> Result<String, api::Error> {
        self.0.borrow_mut().session_poll(false).map_err(error)
    }

    fn session_handle(&self, id: u64, reply: String) -> Result<(), api::Error> {
        self.0
            .borrow_mut()
            .session_handle(id, &reply)
            .map_err(error)
    }

    fn session_abandon(&self) -> String {
        self.0.borrow_mut().session_abandon()
    }

    fn offload_start(
        &self,
        tool_name: String,
        tool_call_id: String,
        output: String,
        text: bool,
    ) -> Result<u32, api::Error> {
        self.0
            .borrow_mut()
            .offload_start(&tool_name, &tool_call_id, &output, text)
            .map_err(error)
    }

    fn offload_poll(&self, run: u32) -> Result<String, api::Error> {
        self.0.borrow_mut().offload_poll(run).map_err(error)
    }

    fn offload_handle(&self, run: u32, id: u64, reply: String) -> Result<(), api::Error> {
        self.0
            .borrow_mut()
            .offload_handle(run, id, &reply)
            .map_err(error)
    }

    fn offload_drop(&self, run: u32) {
        self.0.borrow_mut().offload_drop(run);
    }

    fn usage(&self, messages: Option<String>) -> Result<String, api::Error> {
        self.0.borrow().usage(messages.as_deref()).map_err(error)
    }

    fn count_raw(&self, messages: Option<String>) -> Result<u32, api::Error> {
        self.0
            .borrow()
            .count_raw(messages.as_deref())
            .map_err(error)
    }

    fn observe_usage(&self, actual: u32, predicted_raw: Option<u32>) {
        self.0.borrow_mut().observe_usage(actual, predicted_raw);
    }

    fn state(&self) -> String {
        self.0.borrow().state()
    }

    fn offer_summary(&self, key: String, text: String) -> bool {
        self.0.borrow_mut().offer_summary(&key, &text)
    }

    fn forget_ahead(&self, key: String) -> bool {
        self.0.borrow_mut().forget_ahead(&key)
    }

    fn persist_at(
        &self,
        path: String,
        text: Option<String>,
        loaded: bool,
        unread: Option<String>,
    ) -> Result<(), api::Error> {
        self.0
            .borrow_mut()
            .persist_at(&path, text.as_deref(), loaded, unread.as_deref())
            .map_err(error)
    }

    fn system_prompt(
        &self,
        base: String,
        memory: Option<bool>,
        agents_md: Option<String>,
    ) -> String {
        self.0
            .borrow()
            .system_prompt(&base, memory, agents_md.as_deref())
    }

    fn persist_later(&self, path: String, load: bool) {
        self.0.borrow_mut().persist_later(&path, load);
    }

    fn stats(&self) -> String {
        self.0.borrow().stats()
    }

    fn model(&self) -> String {
        self.0.borrow().model()
    }
}
