//! Provider-side compaction: what the provider itself already compacted.
//!
//! Anthropic's `compaction` block and OpenAI's Responses `compaction` item stand for everything
//! before them: the provider reads the conversation from the latest such item on (and the
//! system prompt), and drops the rest. As the AI SDK 7 providers carry them in a `ModelMessage`
//! (`@ai-sdk/anthropic` 4.0, `@ai-sdk/openai` 4.0):
//!
//! - Anthropic: an assistant text part with `providerOptions.anthropic.type = "compaction"`
//!   (the block's summary as its text, an optional `signature`);
//! - OpenAI: an assistant part `{ type: "custom", kind: "openai.compaction" }` with
//!   `providerOptions.openai.{ type: "compaction", itemId, encryptedContent }`.
//!
//! So the compactor counts only what the provider will read, and never offloads, evicts, masks,
//! summarizes or drops the item or anything before it: the item stays byte for byte, and the
//! messages before it cost nothing to keep.

use serde_json::{Map, Value};

use crate::message::{Message, Part, Role};

fn is_compaction_item(part: &Part) -> bool {
    let options = |extra: &Map<String, Value>, provider: &str| {
        extra
            .get("providerOptions")
            .and_then(|o| o.get(provider))
            .and_then(|o| o.get("type"))
            .and_then(Value::as_str)
            == Some("compaction")
    };
    match part {
        Part::Text(text) => options(&text.extra, "anthropic"),
        Part::Unknown(map) => {
            map.get("type").and_then(Value::as_str) == Some("custom")
                && (map.get("kind").and_then(Value::as_str) == Some("openai.compaction")
                    || options(map, "openai"))
        }
        _ => false,
    }
}

/// The index of the latest message that holds a provider compaction item.
pub(crate) fn latest_item(messages: &[Message]) -> Option<usize> {
    messages
        .iter()
        .rposition(|m| m.role == Role::Assistant && m.parts().iter().any(is_compaction_item))
}

/// Whether the provider drops message `index` (before the latest compaction item `item`; the
/// system prompt is always read).
pub(crate) fn dropped(messages: &[Message], item: Option<usize>, index: usize) -> bool {
    item.is_some_and(|c| index < c && messages[index].role != Role::System)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: serde_json::Value) -> Vec<Message> {
        crate::message::parse_messages(&json.to_string()).unwrap()
    }

    #[test]
    fn finds_both_providers_items_as_the_ai_sdk_carries_them() {
        let messages = parse(serde_json::json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "old"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "summary of before",
                 "providerOptions": {"anthropic": {"type": "compaction", "signature": "sig"}}}]},
            {"role": "user", "content": "new"},
            {"role": "assistant", "content": [
                {"type": "custom", "kind": "openai.compaction",
                 "providerOptions": {"openai": {"type": "compaction", "itemId": "cmp_1",
                                                "encryptedContent": "gAAA"}}}]},
            {"role": "user", "content": "newest"},
        ]));
        assert_eq!(latest_item(&messages), Some(4));
        assert_eq!(latest_item(&messages[..4]), Some(2));
        assert!(latest_item(&messages[..2]).is_none());
        let item = latest_item(&messages);
        let kept: Vec<bool> = (0..messages.len())
            .map(|i| dropped(&messages, item, i))
            .collect();
        assert_eq!(kept, [false, true, true, true, false, false]);
    }

    #[test]
    fn ordinary_text_and_other_provider_options_are_not_items() {
        let messages = parse(serde_json::json!([
            {"role": "assistant", "content": [
                {"type": "text", "text": "x", "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}},
                {"type": "custom", "kind": "other.thing"}]},
            {"role": "user", "content": [
                {"type": "text", "text": "x", "providerOptions": {"anthropic": {"type": "compaction"}}}]},
        ]));
        assert!(latest_item(&messages).is_none());
    }
}
