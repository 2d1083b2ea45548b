//! What the two wasm-bindgen bindings (the core, `wasm/`, and the tokenizer compiler,
//! `compiler.rs`) share: errors thrown as JSON strings, and the host's NFC.

use wasm_bindgen::prelude::*;

use super::json;
use crate::Error;

/// The error as the thrown value: the JSON string the TypeScript host turns into a typed
/// `CompactorError`.
pub(super) fn throw(error: Error) -> JsValue {
    JsValue::from_str(&json::error_json(&error))
}

#[wasm_bindgen]
extern "C" {
    /// `String.prototype.normalize.call(text, form)`.
    #[wasm_bindgen(js_namespace = ["String", "prototype", "normalize"], js_name = call)]
    fn js_normalize(text: &str, form: &str) -> String;
}

/// NFC from the host (`String.prototype.normalize`): the wasm builds have no tables of their
/// own (Qwen's normalizer).
pub(super) fn host_nfc(text: &str) -> String {
    js_normalize(text, "NFC")
}
