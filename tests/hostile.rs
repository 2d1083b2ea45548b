//! Hostile input on the native path (issue 17): lone UTF-16 surrogate escapes and nesting past
//! `MAX_NESTING` in `parse_messages` give a typed, documented result, never a panic.
//!
//! The expected counts come from the official Python tiktoken 0.14.0 (the oracle of
//! scripts/oracle), which replaces each lone surrogate with U+FFFD before encoding
//! (`text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")` in
//! `tiktoken.core.Encoding.encode`). Regenerate with:
//! `TIKTOKEN_CACHE_DIR=scripts/oracle/.cache/tiktoken scripts/oracle/.venv/bin/python -c
//! 'import tiktoken; print([len(tiktoken.get_encoding(e).encode("cut \ud83d here\nand \ude00 there")) for e in ["o200k_base", "cl100k_base"]])'`
//! (after `scripts/oracle/regen.sh` has set up the venv). js/test/hostile.test.mjs checks the same
//! table through the npm package.

use context_compactor::{
    count_tokens, parse_messages, parse_messages_at, Compactor, Config, Content, Encoding, Error,
    Message, Part, ToolOutput, MAX_NESTING,
};
use serde_json::{json, Value};

/// (name, JSON string literal body with `\u` escapes as JSON.stringify writes them, o200k, cl100k)
const TIKTOKEN_CASES: &[(&str, &str, usize, usize)] = &[
    (
        "lead_at_end",
        r"Tool output cut mid-emoji: party \ud83c",
        9,
        9,
    ),
    ("trail_at_start", r"\udf89 and the rest of the line", 7, 7),
    ("two_leads", r"a\ud83d\ud83db", 3, 3),
    ("trail_then_lead", r"x\ude00\ud83dy", 3, 3),
    ("in_words", r"cut \ud83d here\nand \ude00 there", 7, 7),
    ("cjk_mix", r"日本語\ud83dテキスト", 6, 8),
    ("digits", r"12345\udc0067890", 5, 5),
    ("alone", r"\ud800", 1, 1),
];

fn user(escaped: &str) -> String {
    format!(r#"[{{"role":"user","content":"{escaped}"}}]"#)
}

fn text_of(message: &Message) -> String {
    match &message.content {
        Content::Text(text) => text.clone(),
        other => panic!("expected string content, got {other:?}"),
    }
}

#[test]
fn lone_surrogates_become_u_fffd_and_count_as_tiktoken_counts_them() {
    for &(name, escaped, o200k, cl100k) in TIKTOKEN_CASES {
        let messages = parse_messages(&user(escaped)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = text_of(&messages[0]);
        assert!(text.contains('\u{FFFD}'), "{name}: {text:?}");
        assert_eq!(
            count_tokens(&text, Encoding::O200kBase).unwrap(),
            o200k,
            "{name} o200k"
        );
        assert_eq!(
            count_tokens(&text, Encoding::Cl100kBase).unwrap(),
            cl100k,
            "{name} cl100k"
        );
    }
}

#[test]
fn one_replacement_per_lone_code_unit_pairs_and_escaped_backslashes_untouched() {
    let cases = [
        (r"a\ud83d\ud83db", "a\u{FFFD}\u{FFFD}b"),
        (r"x\ude00\ud83dy", "x\u{FFFD}\u{FFFD}y"),
        // A high surrogate, then a well-formed pair: one replacement, then the emoji.
        (r"\ud83d\ud83d\ude00", "\u{FFFD}😀"),
        // A well-formed escaped pair is an ordinary character.
        (r"ok \ud83d\ude00", "ok 😀"),
        (r"upper \uD83D case", "upper \u{FFFD} case"),
        // An escaped backslash followed by `ud83d` is text, not an escape.
        (r"literal \\ud83d", r"literal \ud83d"),
        (r#"quote \" then \ud83d"#, "quote \" then \u{FFFD}"),
    ];
    for (escaped, want) in cases {
        let messages = parse_messages(&user(escaped)).unwrap();
        assert_eq!(text_of(&messages[0]), want, "{escaped}");
    }
}

#[test]
fn lone_surrogates_anywhere_in_a_conversation() {
    // In keys, tool names and ids, tool-call inputs, JSON outputs, text parts at part
    // boundaries, unknown fields: everything parses, the conversation validates and plans.
    let json = r#"[
        {"role": "system", "content": "agent \udfff"},
        {"role": "user", "content": [{"type": "text", "text": "part one \ud83d"}, {"type": "text", "text": "\ude00 part two"}]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "call\ud800", "toolName": "se\udc00arch",
            "input": {"q\ud83d": ["\ud83d", {"deep": "x\ude00"}]}, "providerOptions": {"x": "\udbff"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "call\ud800", "toolName": "se\udc00arch",
            "output": {"type": "json", "value": {"hits": ["\ud83d cut"]}}}]}
    ]"#;
    let messages = parse_messages(json).unwrap();
    let Part::ToolCall(call) = &messages[2].parts()[0] else {
        panic!()
    };
    assert_eq!(call.tool_call_id, "call\u{FFFD}");
    assert_eq!(call.tool_name, "se\u{FFFD}arch");
    assert_eq!(
        call.input,
        json!({"q\u{FFFD}": ["\u{FFFD}", {"deep": "x\u{FFFD}"}]})
    );
    let Part::ToolResult(result) = &messages[3].parts()[0] else {
        panic!()
    };
    assert_eq!(
        result.tool_call_id, call.tool_call_id,
        "the call and its result still pair up"
    );
    let ToolOutput::Json { value, .. } = &result.output else {
        panic!()
    };
    assert_eq!(value, &json!({"hits": ["\u{FFFD} cut"]}));
    let compactor = Compactor::new(Config::default()).unwrap();
    assert!(compactor.count(&messages) > 0);
    let plan = compactor.plan(&messages).unwrap();
    assert!(plan.tokens_before > 0);
}

#[test]
fn parse_messages_at_keeps_indices_and_other_errors_stay_malformed_json() {
    let messages = parse_messages_at(r#"[{"role":"user","content":"a\ud83d"}]"#, 7).unwrap();
    assert_eq!(text_of(&messages[0]), "a\u{FFFD}");
    // A real syntax error next to a lone surrogate is still reported as malformed JSON.
    let e = parse_messages(r#"[{"role":"user","content":"a\ud83d",, }]"#).unwrap_err();
    assert!(matches!(e, Error::MalformedJson { line: 1, .. }), "{e:?}");
    // A truncated escape is malformed JSON, not repaired.
    let e = parse_messages(r#"[{"role":"user","content":"a\ud8"}]"#).unwrap_err();
    assert!(matches!(e, Error::MalformedJson { .. }), "{e:?}");
    // A lone surrogate in a field of the wrong type: still the typed error for that field.
    let e = parse_messages(r#"[{"role":"r\ud83d","content":"x"}]"#).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidMessage { index: 0, field, .. } if field == "role"),
        "{e:?}"
    );
}

/// A conversation whose message `at` has a tool-call input nested so that the deepest array or
/// object is at `levels` in the document (the messages array is level 1, the input object 5).
fn nested(levels: usize, at: usize) -> String {
    let input_depth = levels - 4;
    let input = format!(
        "{}1{}",
        r#"{"a":"#.repeat(input_depth),
        "}".repeat(input_depth)
    );
    let mut messages = vec![json!({"role": "user", "content": "go"}).to_string(); at];
    messages.push(format!(
        r#"{{"role":"assistant","content":[{{"type":"tool-call","toolCallId":"c","toolName":"t","input":{input}}}]}}"#
    ));
    format!("[{}]", messages.join(","))
}

#[test]
fn nesting_up_to_the_limit_parses() {
    assert_eq!(
        MAX_NESTING, 127,
        "documented in message.rs and js/src/codec.ts"
    );
    let messages = parse_messages(&nested(MAX_NESTING, 0)).unwrap();
    let Part::ToolCall(call) = &messages[0].parts()[0] else {
        panic!()
    };
    let mut depth = 0;
    let mut value = &call.input;
    while let Some(inner) = value.get("a") {
        depth += 1;
        value = inner;
    }
    assert_eq!(
        depth,
        MAX_NESTING - 4,
        "input objects from level 5 to the limit"
    );
    let plan = Compactor::new(Config::default())
        .unwrap()
        .plan(&messages)
        .unwrap();
    assert!(plan.tokens_before > 0);
}

#[test]
fn nesting_past_the_limit_is_a_typed_error_naming_message_and_field() {
    for levels in [MAX_NESTING + 1, 200, 10_000, 1_000_000] {
        let e = parse_messages(&nested(levels, 2)).unwrap_err();
        let Error::InvalidMessage {
            index,
            field,
            message,
        } = &e
        else {
            panic!("{levels}: {e:?}")
        };
        assert_eq!(*index, 2, "{levels}");
        let want = format!("content[0].input{}", ".a".repeat(MAX_NESTING - 4));
        assert_eq!(field, &want, "{levels}");
        assert!(
            message.contains("nested deeper than 127 levels"),
            "{message}"
        );
    }
    // Indices count from `first_index` when a conversation is synced in pieces.
    let e = parse_messages_at(&nested(10_000, 1), 40).unwrap_err();
    assert!(
        matches!(e, Error::InvalidMessage { index: 41, .. }),
        "{e:?}"
    );
    // Deep arrays and deep JSON outputs too, with lone surrogates on the way.
    let deep_array = format!("{}\"\\ud83d\"{}", "[".repeat(5_000), "]".repeat(5_000));
    let json = format!(
        r#"[{{"role":"assistant","content":[{{"type":"tool-call","toolCallId":"c","toolName":"t","input":{{}}}}]}},
            {{"role":"tool","content":[{{"type":"tool-result","toolCallId":"c","toolName":"t","output":{{"type":"json","value":{deep_array}}}}}]}}]"#
    );
    let e = parse_messages(&json).unwrap_err();
    let Error::InvalidMessage {
        index: 1, field, ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert!(
        field.starts_with("content[0].output.value[0][0]"),
        "{field}"
    );
    // Unbalanced hostile text: no panic, some error.
    assert!(parse_messages(&"[".repeat(100_000)).is_err());
    assert!(parse_messages(&format!("[{{\"role\":{}", "{\"\\\"".repeat(50_000))).is_err());
}

#[test]
fn typed_errors_serialize_with_code_index_and_field() {
    let e = parse_messages(&nested(10_000, 0)).unwrap_err();
    let v: Value = serde_json::to_value(&e).unwrap();
    assert_eq!(v["code"], "invalid_message");
    assert_eq!(v["index"], 0);
    assert!(v["field"]
        .as_str()
        .unwrap()
        .starts_with("content[0].input.a"));
}

/// JSON text of UTF-16 `units` as `JSON.stringify` writes it: lone surrogates as `\uXXXX`
/// escapes (upper or lower case hex), everything else as serde_json escapes it.
fn js_json_string(units: &[u16], upper: bool) -> String {
    let mut out = String::from("\"");
    let mut i = 0;
    while i < units.len() {
        let unit = units[i];
        let pair = (0xD800..=0xDBFF).contains(&unit)
            && units
                .get(i + 1)
                .is_some_and(|u| (0xDC00..=0xDFFF).contains(u));
        if pair {
            let c = char::decode_utf16([unit, units[i + 1]])
                .next()
                .unwrap()
                .unwrap();
            out.push(c);
            i += 2;
            continue;
        }
        if (0xD800..=0xDFFF).contains(&unit) {
            out.push_str(&if upper {
                format!("\\u{unit:04X}")
            } else {
                format!("\\u{unit:04x}")
            });
        } else {
            let c = char::from_u32(u32::from(unit)).unwrap();
            let quoted = serde_json::to_string(&c.to_string()).unwrap();
            out.push_str(&quoted[1..quoted.len() - 1]);
        }
        i += 1;
    }
    out.push('"');
    out
}

#[test]
fn random_utf16_with_lone_surrogates_parses_as_from_utf16_lossy() {
    // `String::from_utf16_lossy` replaces each unpaired surrogate with one U+FFFD: the same rule
    // as JS `toWellFormed()` and tiktoken's `decode("utf-16", "replace")`.
    let alphabet: &[u16] = &[
        0x61, 0x20, 0x22, 0x5C, 0x0A, 0x75, 0x64, 0xE9, 0x65E5, 0xFFFD, 0xD83D, 0xDE00, 0xD800,
        0xDBFF, 0xDC00, 0xDFFF,
    ];
    let mut state = 0x9E37_79B9u32;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    for case in 0..3_000 {
        let len = (next() % 24) as usize;
        let units: Vec<u16> = (0..len)
            .map(|_| alphabet[next() as usize % alphabet.len()])
            .collect();
        let upper = case % 2 == 0;
        let json = format!(
            r#"[{{"role":"user","content":{}}}]"#,
            js_json_string(&units, upper)
        );
        let messages = parse_messages(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
        let want = String::from_utf16_lossy(&units);
        assert_eq!(text_of(&messages[0]), want, "{json}");
    }
}

#[test]
fn random_json_like_garbage_never_panics() {
    // Fragments that drive both slow paths (escapes, surrogates, nesting, strings, keys).
    let fragments = [
        "[",
        "]",
        "{",
        "}",
        "\"",
        "\\",
        "\\u",
        "\\ud83d",
        "\\ude00",
        "\\uD800",
        "\\u00",
        ":",
        ",",
        "\"role\"",
        "\"user\"",
        "\"content\"",
        "\"a\":",
        "1",
        "null",
        "é",
        "😀",
        "d83d",
        " ",
    ];
    let mut state = 0x1234_5678u32;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state
    };
    for _ in 0..20_000 {
        let len = (next() % 40) as usize;
        let mut text: String = (0..len)
            .map(|_| fragments[next() as usize % fragments.len()])
            .collect();
        if next() % 4 == 0 {
            text = format!("{}{text}", "[".repeat(130));
        }
        let _ = parse_messages(&text);
        let _ = parse_messages_at(&text, 3);
    }
}
