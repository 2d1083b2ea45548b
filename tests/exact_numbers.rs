//! Numbers come back and are stored exactly as the host wrote them (issue 35, class 2): a JSON
//! tool output kept while a sibling result in its message is offloaded, the stored copy of an
//! offloaded JSON output, and the transcript hold each number's own text, byte for byte — the
//! shortest round-trip form `JSON.stringify` prints (`-113.71428571428571`, `1e+21`, `5e-324`,
//! `18446744073709552000`), Python's `json.dumps` forms (`1.0`, `-0.0`, `1e+16`) and integers
//! beyond 64 bits. Before, serde_json parsed floats to the nearest double only approximately
//! (`-113.71428571428571` came back as `-113.71428571428572`) and printed every float its own way.

use context_compactor::{parse_messages, Action, Compactor, Config, Outcome, Part, Strategy};

/// Number texts as hosts write them (JavaScript's `JSON.stringify`, Python's `json.dumps`).
const NUMBERS: &[&str] = &[
    "-113.71428571428571",
    "-99.71428571428571",
    "123456789.12345679",
    "0.30000000000000004",
    "18446744073709552000",
    "1e+21",
    "-1.7976931348623157e+308",
    "5e-324",
    "1.5e-7",
    "0",
    "-0",
    "-0.0",
    "1.0",
    "1e+16",
    "2.5e-3",
    "123456789012345678901234567890",
    "-9223372036854775809",
    "0.1",
    "42",
];

/// A JSON object of the numbers as written, compact (`{"n0":-113.71428571428571,...}`).
fn numbers_object(tag: usize) -> String {
    let fields: Vec<String> = NUMBERS
        .iter()
        .enumerate()
        .map(|(i, n)| format!("\"n{i}\":{n}"))
        .collect();
    format!("{{\"tag\":{tag},{}}}", fields.join(","))
}

/// `JSON.stringify(value, null, 2)` of a `rows` object of `numbers_object`s, built by hand.
fn rows(n: usize) -> (String, String) {
    let compact: Vec<String> = (0..n).map(numbers_object).collect();
    let pretty: Vec<String> = (0..n)
        .map(|tag| {
            let mut fields = vec![format!("      \"tag\": {tag}")];
            fields.extend(
                NUMBERS
                    .iter()
                    .enumerate()
                    .map(|(i, n)| format!("      \"n{i}\": {n}")),
            );
            format!("    {{\n{}\n    }}", fields.join(",\n"))
        })
        .collect();
    (
        format!("{{\"rows\":[{}]}}", compact.join(",")),
        format!("{{\n  \"rows\": [\n{}\n  ]\n}}", pretty.join(",\n")),
    )
}

fn big_text() -> String {
    (0..12_000)
        .map(|i| format!("row {i}: value {} ok\n", (i * 7919) % 10_007))
        .collect()
}

/// An agent turn: three calls answered in one tool message — a huge text, a small JSON output
/// with every kind of number, a large JSON output with the same numbers.
fn conversation() -> (String, String, String) {
    let small = numbers_object(7);
    let (large, large_pretty) = rows(120);
    let text = serde_json::to_string(&big_text()).unwrap();
    let call = |id: &str| {
        format!(
            r#"{{"type":"tool-call","toolCallId":"{id}","toolName":"query","input":{{"limit":0.5,"big":1e+21}}}}"#
        )
    };
    let result = |id: &str, output: String| {
        format!(
            r#"{{"type":"tool-result","toolCallId":"{id}","toolName":"query","output":{output}}}"#
        )
    };
    let json = format!(
        r#"[{{"role":"system","content":"agent"}},{{"role":"user","content":"go"}},{{"role":"assistant","content":[{},{},{}]}},{{"role":"tool","content":[{},{},{}]}}]"#,
        call("c1"),
        call("c2"),
        call("c3"),
        result("c1", format!(r#"{{"type":"text","value":{text}}}"#)),
        result("c2", format!(r#"{{"type":"json","value":{small}}}"#)),
        result("c3", format!(r#"{{"type":"json","value":{large}}}"#)),
    );
    (json, small, large_pretty)
}

fn window(n: u32) -> Config {
    Config {
        model: Some("gpt-4o".into()),
        context_window: Some(n),
        ..Config::default()
    }
}

#[test]
fn a_kept_json_output_keeps_every_number_as_written_when_its_message_is_rebuilt() {
    let (json, small, large_pretty) = conversation();
    let messages = parse_messages(&json).unwrap();
    let mut compactor = Compactor::new(window(16_000)).unwrap();
    let plan = compactor.plan(&messages).unwrap();
    let offloads: Vec<_> = plan
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Offload(o) => Some(o),
            _ => None,
        })
        .collect();
    assert_eq!(offloads.len(), 2, "{:?}", plan.actions);
    // The offloaded JSON output is stored as the host wrote it, pretty-printed.
    let stored = offloads.iter().find(|o| o.path.ends_with(".json")).unwrap();
    assert_eq!(stored.content, large_pretty);
    let outcomes: Vec<Outcome> = offloads
        .iter()
        .map(|o| Outcome::Written { id: o.id.clone() })
        .collect();
    let applied = compactor.apply(messages, &plan, &outcomes).unwrap();
    // The tool message is rebuilt (two of its results now point at stored copies); the kept
    // JSON output comes back with every number's own text.
    let Part::ToolResult(kept) = &applied.messages[3].parts()[1] else {
        panic!("not a tool result")
    };
    let written = serde_json::to_string(&kept.output).unwrap();
    assert_eq!(written, format!(r#"{{"type":"json","value":{small}}}"#));
    let all = serde_json::to_string(&applied.messages).unwrap();
    assert!(
        all.contains(r#""input":{"limit":0.5,"big":1e+21}"#),
        "{all:.400}"
    );
    // And the returned conversation is the input but for the two offloaded outputs.
    let returned: serde_json::Value = serde_json::from_str(&all).unwrap();
    let input: serde_json::Value = serde_json::from_str(&json).unwrap();
    for i in 0..3 {
        assert_eq!(returned[i].to_string(), input[i].to_string(), "message {i}");
    }
    assert_eq!(
        returned[3]["content"][1].to_string(),
        input[3]["content"][1].to_string()
    );
}

#[test]
fn a_transcript_holds_every_number_as_written() {
    let (json, small, _) = conversation();
    let messages = parse_messages(&json).unwrap();
    let compactor = Compactor::new(window(16_000)).unwrap();
    let transcript = compactor.transcript(&messages, Strategy::Truncate);
    for (i, n) in NUMBERS.iter().enumerate() {
        let field = format!("\"n{i}\": {n}\n");
        let field_comma = format!("\"n{i}\": {n},\n");
        assert!(
            transcript.json.contains(&field) || transcript.json.contains(&field_comma),
            "{n} not in the transcript as written"
        );
    }
    // The transcript parses back to the conversation given, number texts included.
    let parsed = parse_messages(&transcript.json).unwrap();
    assert_eq!(
        serde_json::to_string(&parsed).unwrap(),
        serde_json::to_string(&messages).unwrap()
    );
    assert!(serde_json::to_string(&parsed).unwrap().contains(&small));
}

#[test]
fn a_conversation_written_back_is_the_text_it_was_read_from() {
    let (json, _, _) = conversation();
    let messages = parse_messages(&json).unwrap();
    assert_eq!(serde_json::to_string(&messages).unwrap(), json);
}

/// A number that does not fit an integer setting is refused naming the field and what fits
/// (with numbers kept as written, serde_json alone says only "invalid number").
#[test]
fn a_number_that_does_not_fit_an_integer_setting_says_what_fits() {
    for value in ["-1", "1.5", "1e3", "99999999999999999999"] {
        let json = format!(r#"{{"offload": {{"thresholdTokens": {value}}}}}"#);
        match Config::from_json(&json) {
            Err(context_compactor::Error::InvalidConfig { field, message }) => {
                assert_eq!(field, "offload.thresholdTokens", "{value}");
                assert!(
                    message.contains("expected a whole number"),
                    "{value}: {message}"
                );
            }
            other => panic!("{value}: {other:?}"),
        }
    }
    // Fractions read as written.
    let config = Config::from_json(r#"{"history": {"triggerFraction": 0.50}}"#).unwrap();
    assert_eq!(config.history.trigger_fraction, 0.5);
}

/// Every part kind, read the fast way and the precise way (a lone surrogate sends the whole
/// document there), writes its numbers back as read: a tool call's input, an image's or a file's
/// data, every part's other fields. (Read into a `Value` through serde's derive, a number came
/// back in its shortest form: `0.0000015` as `1.5e-6`, `-0` as `0`.)
#[test]
fn every_part_writes_its_numbers_back_as_read() {
    let n = r#"{"small":0.0000015,"neg0":-0,"big":18446744073709552000,"e":1e+21,"f":-113.71428571428571,"list":[0.0000015,1.0]}"#;
    for lone in [false, true] {
        let text = if lone { r#"cut \ud83d"# } else { "whole" };
        let json = format!(
            r#"[{{"role":"user","content":[{{"type":"text","text":"{text}","providerOptions":{n}}},{{"type":"image","image":{n},"mediaType":"image/png","x":{n}}},{{"type":"file","data":{n},"mediaType":"application/json","filename":"a.json","x":{n}}}],"x":{n}}},{{"role":"assistant","content":[{{"type":"reasoning","text":"r","x":{n}}},{{"type":"tool-call","toolCallId":"c","toolName":"t","input":{n},"x":{n}}},{{"type":"tool-approval-request","approvalId":"a","toolCallId":"c","x":{n}}}]}},{{"role":"tool","content":[{{"type":"tool-approval-response","approvalId":"a","approved":true,"x":{n}}},{{"type":"tool-result","toolCallId":"c","toolName":"t","output":{{"type":"json","value":{n},"x":{n}}},"x":{n}}},{{"type":"future-part","x":{n}}}]}}]"#
        );
        let messages = parse_messages(&json).unwrap();
        let expected = json.replace(r"\ud83d", "\u{fffd}");
        assert_eq!(
            serde_json::to_string(&messages).unwrap(),
            expected,
            "lone: {lone}"
        );
    }
}
