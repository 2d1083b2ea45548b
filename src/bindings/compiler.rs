//! The tokenizer compiler's wasm-bindgen binding (feature `compiler`): a second wasm module of
//! the npm package, loaded when `loadTokenizer` or `compileTokenizer` first runs. It turns a
//! `tokenizer.json` or tekken file into the prebuilt data (`CCH1`) that the core loads with
//! `loadEncoding`; the core carries none of that parsing.

use wasm_bindgen::prelude::*;

use super::host::{host_nfc, throw};
use super::json;

/// The prebuilt data (`CCH1`) of the tokenizer `name` from its `tokenizer.json` or tekken file.
/// The data refers to o200k_base's tokens: `o200k` is its rank data (`CCR4`), loaded into this
/// module on the first call (later calls may pass it empty: it is not read once loaded).
#[wasm_bindgen(js_name = tokenizerData)]
pub fn tokenizer_data(name: &str, json: &str, o200k: Vec<u8>) -> Result<Vec<u8>, JsValue> {
    crate::counting::hf::set_nfc(host_nfc);
    if !crate::can_count("o200k_base") {
        json::load_encoding("o200k_base", o200k).map_err(throw)?;
    }
    json::tokenizer_data(name, json).map_err(throw)
}
