//! The fast path of message parsing: JSON text straight to [`Message`]s in one pass, without the
//! `serde_json::Value` tree of the whole document that the precise path walks afterwards.
//!
//! It makes exactly the messages the precise path (`messages_at` over a `Value`) makes, and it
//! gives up (`None`) on anything that path would not accept as it is: malformed or too deep
//! JSON, a lone surrogate, a wrong type, a missing field, an unknown role, a duplicate key. The
//! caller then runs the precise path, which names the message and the field of the error (or
//! repairs the text). So valid input is parsed once, and errors stay what they were.
//!
//! The precise path removes known keys from each object with `Map::shift_remove`: the keys left
//! over (a message's or part's `extra`, written back as they are) keep the app's order. This
//! path removes them the same way, from the object's keys kept in a `Vec` in document order
//! ([`Obj`]). (A swap-remove, `Map::remove`, moved the last key into the removed one's place: an
//! untouched part came back with `providerExecuted` before `providerOptions`.)

use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{part_from_value, Content, Message, Part, Role, TextPart, ToolCall, ToolResult};

/// Messages `first_index..` of a JSON array, or `None` when the precise path must look.
pub(super) fn messages(json: &str, first_index: usize) -> Option<Vec<Message>> {
    let mut de = serde_json::Deserializer::from_str(json);
    let messages = de.deserialize_seq(Messages { first_index }).ok()?;
    de.end().ok()?;
    Some(messages)
}

/// Any failure: the precise path will say what it is.
fn fail<E: de::Error>() -> E {
    E::custom("not on the fast path")
}

struct Messages {
    first_index: usize,
}

impl<'de> Visitor<'de> for Messages {
    type Value = Vec<Message>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of messages")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(message) = seq.next_element_seed(MessageSeed {
            index: self.first_index + out.len(),
        })? {
            out.push(message);
        }
        Ok(out)
    }
}

/// An object's keys and values in document order (no key twice).
type Obj<T> = Vec<(String, T)>;

/// The value under `key`, taken out as `Map::shift_remove` takes it: the other keys keep their
/// order.
fn take<T>(obj: &mut Obj<T>, key: &str) -> Option<T> {
    let at = obj.iter().position(|(k, _)| k == key)?;
    Some(obj.remove(at).1)
}

/// What is left of an object, as the map the precise path keeps (its order).
fn map_of(obj: Obj<Value>) -> Map<String, Value> {
    let mut map = Map::new();
    for (key, value) in obj {
        map.insert(key, value);
    }
    map
}

/// The object's entries; `special(key)` says which values `value` parses (the others are
/// `Value`s). A key seen twice gives up (the precise path keeps the last value, where the
/// first was).
fn entries<'de, A: MapAccess<'de>, T>(
    mut map: A,
    mut value: impl FnMut(&str, &mut A) -> Result<T, A::Error>,
) -> Result<Obj<T>, A::Error> {
    let mut obj: Obj<T> = Vec::with_capacity(map.size_hint().unwrap_or(4));
    while let Some(key) = map.next_key::<String>()? {
        if obj.iter().any(|(k, _)| *k == key) {
            return Err(fail());
        }
        let v = value(&key, &mut map)?;
        obj.push((key, v));
    }
    Ok(obj)
}

struct MessageSeed {
    index: usize,
}

/// A message's field: its `content`, parsed on the way, or any other value.
enum Field {
    Content(Content),
    Value(Value),
}

impl<'de> DeserializeSeed<'de> for MessageSeed {
    type Value = Message;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Message, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MessageSeed {
    type Value = Message;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a message")
    }

    #[inline(never)] // see `part`
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Message, A::Error> {
        let index = self.index;
        let mut obj = entries(map, |key, map| match key {
            "content" => map
                .next_value_seed(ContentSeed { index })
                .map(Field::Content),
            _ => map.next_value().map(Field::Value),
        })?;
        let role = match take(&mut obj, "role") {
            Some(Field::Value(Value::String(role))) => match role.as_str() {
                "system" => Role::System,
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "tool" => Role::Tool,
                _ => return Err(fail()),
            },
            _ => return Err(fail()),
        };
        let Some(Field::Content(content)) = take(&mut obj, "content") else {
            return Err(fail());
        };
        let extra = obj
            .into_iter()
            .map(|(key, field)| match field {
                Field::Value(value) => Ok((key, value)),
                Field::Content(_) => Err(fail()),
            })
            .collect::<Result<Obj<Value>, A::Error>>()?;
        Ok(Message {
            role,
            content,
            extra: map_of(extra),
        })
    }
}

struct ContentSeed {
    index: usize,
}

impl<'de> DeserializeSeed<'de> for ContentSeed {
    type Value = Content;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Content, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ContentSeed {
    type Value = Content;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a string or an array of parts")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Content, E> {
        Ok(Content::Text(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Content, E> {
        Ok(Content::Text(text))
    }

    #[inline(never)] // see `part`
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
        let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(2));
        while let Some(obj) = seq.next_element_seed(PartSeed)? {
            let at = (self.index, parts.len());
            parts.push(part(at, obj).ok_or_else(fail)?);
        }
        Ok(Content::Parts(parts.into()))
    }
}

/// A part's entries (any value: the part's type decides what they are).
struct PartSeed;

impl<'de> DeserializeSeed<'de> for PartSeed {
    type Value = Obj<Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Obj<Value>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PartSeed {
    type Value = Obj<Value>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a part")
    }

    #[inline(never)] // see `part`
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<Value>, A::Error> {
        entries(map, |_, map| map.next_value())
    }
}

/// The part the precise path makes of these entries (`part_from_value`), or `None` where it
/// would fail. Text, reasoning, tool calls and tool results (most of any conversation) are made
/// here; the other parts by `part_from_value` itself, from the same map. `(index, i)`: part `i`
/// of message `index`.
///
/// Not inlined (nor are the visitors): the wasm engine compiles a function that runs long again
/// with its optimizing compiler, in the background, in time that grows faster than the function;
/// one function made of the whole parse took 40-150 ms of a 2-core machine's time during a
/// 2,000-message first plan (`node --trace-wasm-compilation-times`), for a parse that runs once.
#[inline(never)]
fn part((index, _): (usize, usize), mut obj: Obj<Value>) -> Option<Part> {
    // No field paths: an error here is only `None`, and the precise path, which parses again,
    // names the field (formatting `content[i].output` for every part was 4 % of a first plan).
    let ty = match obj.iter().find(|(k, _)| k == "type") {
        Some((_, Value::String(ty))) => ty.clone(),
        _ => return None,
    };
    if !matches!(
        ty.as_str(),
        "text" | "reasoning" | "tool-call" | "tool-result"
    ) {
        return part_from_value(index, "", Value::Object(map_of(obj))).ok();
    }
    take(&mut obj, "type");
    Some(match ty.as_str() {
        "text" => Part::Text(text_part(obj)?),
        "reasoning" => Part::Reasoning(text_part(obj)?),
        "tool-call" => {
            let (tool_call_id, tool_name) = call_ids(&mut obj)?;
            let input = shift_take(&mut obj, "input")?;
            Part::ToolCall(ToolCall {
                tool_call_id,
                tool_name,
                input,
                extra: map_of(obj),
            })
        }
        _ => {
            let output = take(&mut obj, "output")?;
            let output = super::output_from_value(index, "", output).ok()?;
            let (tool_call_id, tool_name) = call_ids(&mut obj)?;
            Part::ToolResult(ToolResult {
                tool_call_id,
                tool_name,
                output,
                extra: map_of(obj),
            })
        }
    })
}

/// A derived struct's field: taken out with the others keeping their order (what serde's
/// derive leaves to a flattened `extra`).
fn shift_take(obj: &mut Obj<Value>, key: &str) -> Option<Value> {
    let at = obj.iter().position(|(k, _)| k == key)?;
    Some(obj.remove(at).1)
}

fn shift_string(obj: &mut Obj<Value>, key: &str) -> Option<String> {
    let at = obj.iter().position(|(k, _)| k == key)?;
    if !obj[at].1.is_string() {
        return None;
    }
    match obj.remove(at).1 {
        Value::String(s) => Some(s),
        _ => None,
    }
}

fn text_part(mut obj: Obj<Value>) -> Option<TextPart> {
    let text = shift_string(&mut obj, "text")?;
    Some(TextPart {
        text,
        extra: map_of(obj),
    })
}

/// `toolCallId` and `toolName`, both strings.
fn call_ids(obj: &mut Obj<Value>) -> Option<(String, String)> {
    let ok = |key: &str| obj.iter().any(|(k, v)| k == key && v.is_string());
    if !(ok("toolCallId") && ok("toolName")) {
        return None;
    }
    Some((
        shift_string(obj, "toolCallId")?,
        shift_string(obj, "toolName")?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path makes what the precise path makes, or leaves it to it.
    fn same(json: &str) {
        let precise =
            super::super::messages_at(super::super::parse_json(json, 3).expect("valid JSON"), 3);
        match (messages(json, 3), precise) {
            (Some(fast), Ok(precise)) => {
                assert_eq!(fast, precise, "{json}");
                // And in the same order, written back.
                assert_eq!(
                    serde_json::to_string(&fast).unwrap(),
                    serde_json::to_string(&precise).unwrap()
                );
            }
            (None, _) => {}
            (Some(fast), Err(e)) => panic!("fast path accepted what fails ({e}): {fast:?}"),
        }
    }

    #[test]
    fn makes_what_the_precise_path_makes() {
        for json in [
            r#"[]"#,
            r#"[{"role":"user","content":"hi"}]"#,
            r#"[{"content":"hi","id":"m1","role":"user","providerOptions":{"a":1},"z":null}]"#,
            r#"[{"role":"assistant","content":[{"text":"a","type":"text","x":1,"y":2},{"type":"reasoning","text":"r","providerOptions":{}}]}]"#,
            r#"[{"role":"assistant","content":[{"a":1,"type":"tool-call","input":{"path":"/a"},"toolName":"read","b":2,"toolCallId":"c1","c":3}]},
                {"role":"tool","content":[{"output":{"value":"x","type":"text","p":1},"x":0,"type":"tool-result","toolName":"read","toolCallId":"c1","q":[1]}]}]"#,
            r#"[{"role":"tool","content":[{"type":"tool-result","toolCallId":"c","toolName":"t","output":{"type":"json","value":{"k":[1,2]}}},
                {"type":"tool-result","toolCallId":"c","toolName":"t","output":{"type":"content","value":[{"type":"text","text":"a"}]}},
                {"type":"tool-result","toolCallId":"c","toolName":"t","output":{"type":"execution-denied","reason":"no"}},
                {"type":"tool-result","toolCallId":"c","toolName":"t","output":{"type":"future","v":1}},
                {"type":"tool-approval-response","approvalId":"a","approved":true}]}]"#,
            r#"[{"role":"user","content":[{"type":"image","image":"https://x/y.png"},{"type":"file","data":"aGk=","mediaType":"text/plain"},{"type":"new-part","k":1}]}]"#,
            // What the precise path refuses, or repairs: the fast path leaves it.
            r#"[{"role":"robot","content":"x"}]"#,
            r#"[{"role":"user"}]"#,
            r#"[{"role":"user","content":"a","role":"user"}]"#,
            r#"[{"role":"assistant","content":[{"type":"tool-call","toolCallId":7,"toolName":"t","input":{}}]}]"#,
            r#"[{"role":"assistant","content":[{"type":"tool-call","toolCallId":"c","toolName":"t"}]}]"#,
            r#"[{"role":"assistant","content":[{"type":"text"}]}]"#,
            r#"[{"role":"tool","content":[{"type":"tool-result","toolCallId":"c","toolName":"t","output":{"type":"text","value":3}}]}]"#,
            r#"[{"role":"user","content":[{"text":"no type"}]}]"#,
            r#"[{"role":"user","content":7}]"#,
            r#"[1]"#,
        ] {
            same(json);
        }
    }

    /// The golden sessions (a chat, a coding agent, a research agent): parsed on the fast path,
    /// to the same messages.
    #[test]
    fn parses_real_sessions_once() {
        for name in ["chat", "coding-agent", "research-agent"] {
            let path = format!(
                "{}/tests/fixtures/golden/{name}.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let session: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).expect("fixture")).unwrap();
            let json = serde_json::to_string(&session["messages"]).unwrap();
            let fast = messages(&json, 0).expect("valid sessions take the fast path");
            assert!(fast.len() > 10, "{name}");
            let precise = super::super::messages_from_value(serde_json::from_str(&json).unwrap());
            assert_eq!(Ok(fast), precise, "{name}");
        }
    }

    #[test]
    fn gives_up_on_what_the_precise_path_must_see() {
        for json in [
            r#"{"role":"user","content":"hi"}"#,
            r#"[{"role":"user","content":"hi"}] trailing"#,
            r#"[{"role":"user","content":"\ud83d lone"}]"#,
            r#"[{"role":"user","content":"a","content":"b"}]"#,
            r#"[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]"#,
        ] {
            assert!(messages(json, 0).is_none(), "{json}");
        }
    }
}
