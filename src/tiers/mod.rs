//! The compaction tiers, cheapest and most reversible first: offload (tier 1), reversible edits
//! once the window fills up (tier 2), and the lossy tier (tier 3). Pinned content is kept out of
//! every one of them.

pub(crate) mod lossy;
pub(crate) mod offload;
pub(crate) mod pinned;
pub(crate) mod provider;
pub(crate) mod tier2;
pub(crate) mod working;

use serde_json::Value;

/// `input[key]` of a tool call's input. Inputs hold a few keys, and comparing them costs less
/// than hashing the key (serde_json's ordered map hashes with SipHash): every plan looks up the
/// path fields of every call, so this is a linear scan for small objects.
pub(crate) fn input_field<'a>(input: &'a Value, key: &str) -> Option<&'a Value> {
    match input {
        Value::Object(map) if map.len() <= 8 => {
            map.iter().find_map(|(k, v)| (k == key).then_some(v))
        }
        _ => input.get(key),
    }
}

/// The first of `fields` that holds a string in `input`: the file a read or write call names.
pub(crate) fn file_argument<'a>(input: &'a Value, fields: &[String]) -> Option<&'a str> {
    fields
        .iter()
        .find_map(|f| input_field(input, f).and_then(Value::as_str))
}
