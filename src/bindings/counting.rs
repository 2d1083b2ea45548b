//! The counting exports, the same in the core (feature `wasm`) and in the counting-only module
//! (feature `counter`, `context-compactor/tokens`): exact counts of a text or of an AI SDK
//! request, the encodings and prebuilt tokenizers loaded from the host's data.

use wasm_bindgen::prelude::*;

use super::host::{host_nfc, throw};
use super::json;

type JsResult<T> = Result<T, JsValue>;

/// Exact token count of `text` in an encoding (`o200k_base`, `cl100k_base`) or a tokenizer
/// loaded with `loadTokenizer`.
#[wasm_bindgen(js_name = countTokens)]
pub fn count_tokens(text: &str, encoding: &str) -> JsResult<u32> {
    json::count_tokens(text, encoding).map_err(throw)
}

/// `{"name","kind","tokens"}` of the loaded tokenizer `name` (what `loadTokenizer` returns once
/// the compiler's data is loaded).
#[wasm_bindgen(js_name = tokenizerInfo)]
pub fn tokenizer_info(name: &str) -> JsResult<String> {
    json::tokenizer_info(name).map_err(throw)
}

/// Loads an encoding from rank data (the `CCR4`, `CCR3` or `CCR1` format of `data/*.ranks`), or
/// a tokenizer from its prebuilt data (`CCH1`). The npm build has no embedded ranks; the host
/// hands them over once. Loading a loaded one is a no-op.
#[wasm_bindgen(js_name = loadEncoding)]
pub fn load_encoding(encoding: &str, data: Vec<u8>) -> JsResult<()> {
    crate::counting::hf::set_nfc(host_nfc);
    json::load_encoding(encoding, data).map_err(throw)
}

/// The tokens of a request broken down per message, part and tool definition (`Breakdown` as
/// JSON), counted with an encoding or a loaded tokenizer.
#[wasm_bindgen(js_name = countBreakdown)]
pub fn count_breakdown(messages_json: &str, tools_json: &str, encoding: &str) -> JsResult<String> {
    json::count_breakdown(messages_json, tools_json, encoding).map_err(throw)
}

/// Whether the encoding (or loaded tokenizer) can count now.
#[wasm_bindgen(js_name = encodingLoaded)]
pub fn encoding_loaded(encoding: &str) -> JsResult<bool> {
    json::encoding_loaded(encoding).map_err(throw)
}

/// Forces the encoding's rank tables to load now rather than on first count.
#[wasm_bindgen(js_name = warmUp)]
pub fn warm_up(encoding: &str) -> JsResult<()> {
    count_tokens("warm", encoding).map(|_| ())
}

/// The registry's entry for a model (`ModelInfo` as JSON): context window, encoding, the Hugging
/// Face tokenizer that counts it exactly, family and factor; an unknown model gets the defaults.
#[wasm_bindgen(js_name = modelInfo)]
pub fn model_info(model: &str) -> String {
    json::model_info(model)
}

/// `text`'s tokens for a model (`ModelCount` as JSON): exact with its tokenizer when loaded, else
/// its encoding's count times the family factor.
#[wasm_bindgen(js_name = countModelTokens)]
pub fn count_model_tokens(text: &str, model: &str) -> JsResult<String> {
    json::count_model_tokens(text, model).map_err(throw)
}
