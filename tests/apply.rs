//! The core's apply rules, natively: only `written` outcomes change the conversation, outcomes
//! and plans that do not fit are refused, counting calibrates for estimated families.

use context_compactor::{
    parse_messages, Action, Compactor, Config, Error, EventStatus, Message, Outcome, Strategy,
    ToolOutput,
};
use serde_json::json;

fn big(seed: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| format!("{seed} {i}: value {} ok\n", (i * 7919) % 10_007))
        .collect()
}

fn conversation(outputs: &[String]) -> Vec<Message> {
    let mut messages = vec![
        json!({"role": "system", "content": "agent"}),
        json!({"role": "user", "content": "go"}),
    ];
    for (i, value) in outputs.iter().enumerate() {
        messages.push(json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": format!("c{i}"), "toolName": "search", "input": {"i": i}}]}));
        messages.push(json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": format!("c{i}"), "toolName": "search", "output": {"type": "text", "value": value}}]}));
    }
    parse_messages(&serde_json::Value::Array(messages).to_string()).unwrap()
}

fn window(n: u32) -> Config {
    Config {
        model: Some("gpt-4o".into()),
        context_window: Some(n),
        ..Config::default()
    }
}

fn output(messages: &[Message], index: usize) -> &ToolOutput {
    match &messages[index].parts()[0] {
        context_compactor::Part::ToolResult(r) => &r.output,
        other => panic!("not a tool result: {other:?}"),
    }
}

#[test]
fn hundred_k_result_in_a_16k_window_is_offloaded_under_budget() {
    let text = big("row", 12_000);
    let messages = conversation(std::slice::from_ref(&text));
    let mut compactor = Compactor::new(window(16_000)).unwrap();
    let plan = compactor.plan(&messages).unwrap();
    assert!(plan.tokens_before > 100_000, "{}", plan.tokens_before);
    assert!(plan.within_budget() && plan.notes.is_empty(), "{plan:?}");
    let Action::Offload(offload) = &plan.actions[0] else {
        panic!()
    };
    assert_eq!(offload.content, text);
    let outcomes = [Outcome::Written {
        id: offload.id.clone(),
    }];
    let applied = compactor.apply(messages, &plan, &outcomes).unwrap();
    assert_eq!(
        applied.tokens_after, plan.tokens_after,
        "prediction is exact"
    );
    assert!(applied.tokens_after <= 16_000);
    assert!(
        matches!(output(&applied.messages, 3), ToolOutput::Text { value, .. } if value.contains(&offload.path))
    );
}

#[test]
fn only_written_outcomes_remove_content() {
    let messages = conversation(&[big("a", 9_000), big("b", 9_000), big("c", 9_000)]);
    let mut compactor = Compactor::new(window(16_000)).unwrap();
    let plan = compactor.plan(&messages).unwrap();
    let ids: Vec<String> = plan.actions.iter().map(|a| a.id().to_owned()).collect();
    assert_eq!(ids.len(), 3);
    let outcomes = [
        Outcome::Written { id: ids[0].clone() },
        Outcome::Failed {
            id: ids[1].clone(),
            error: "quota".into(),
        },
    ];
    let applied = compactor.apply(messages.clone(), &plan, &outcomes).unwrap();
    let statuses: Vec<EventStatus> = applied.events.iter().map(|e| e.status).collect();
    assert_eq!(
        statuses,
        [
            EventStatus::Applied,
            EventStatus::Failed,
            EventStatus::NotExecuted
        ]
    );
    assert_ne!(output(&applied.messages, 3), output(&messages, 3));
    assert_eq!(
        output(&applied.messages, 5),
        output(&messages, 5),
        "failed write keeps the content"
    );
    assert_eq!(
        output(&applied.messages, 7),
        output(&messages, 7),
        "no outcome keeps the content"
    );
    assert_eq!(applied.events[1].error.as_deref(), Some("quota"));
    assert_eq!(compactor.stats().actions_failed, 1);
    assert_eq!(compactor.stats().files_written, 1);
    // The survivors are planned again, with the same content-addressed paths.
    let again = compactor.plan(&applied.messages).unwrap();
    assert_eq!(again.actions.len(), 2);
    assert_eq!(again.actions[0].id(), ids[1]);
}

#[test]
fn stray_outcomes_and_changed_messages_are_refused() {
    let messages = conversation(&[big("a", 9_000)]);
    let mut compactor = Compactor::new(window(16_000)).unwrap();
    let plan = compactor.plan(&messages).unwrap();
    let err = compactor
        .apply(
            messages.clone(),
            &plan,
            &[Outcome::Written {
                id: "offload-99-0".into(),
            }],
        )
        .unwrap_err();
    assert!(
        matches!(err, Error::PlanMismatch { action_id: Some(ref id), .. } if id == "offload-99-0"),
        "{err:?}"
    );
    let changed = conversation(&[big("z", 9_000)]);
    let written = [Outcome::Written {
        id: plan.actions[0].id().to_owned(),
    }];
    let err = compactor.apply(changed, &plan, &written).unwrap_err();
    assert!(matches!(err, Error::PlanMismatch { .. }), "{err:?}");
    let shorter = messages[..2].to_vec();
    assert!(matches!(
        compactor.apply(shorter, &plan, &written),
        Err(Error::PlanMismatch { .. })
    ));
}

#[test]
fn excluded_tools_and_small_results_stay() {
    let mut messages = conversation(&[big("a", 9_000), "small".into()]);
    if let context_compactor::Content::Parts(parts) = &mut messages[3].content {
        if let context_compactor::Part::ToolResult(r) = &mut parts.make_mut()[0] {
            r.tool_name = "read_file".into();
        }
    }
    // Tier 2 may mask the older, big result (it does not fit the share of the window kept for
    // recent results), but tier 1 never offloads an excluded tool's output.
    let plan = Compactor::new(window(16_000))
        .unwrap()
        .plan(&messages)
        .unwrap();
    assert!(plan
        .actions
        .iter()
        .all(|a| a.strategy() != Strategy::Offload));
    let mut keep_both = window(16_000);
    keep_both.compaction.keep_tool_results_fraction = 1.0;
    let plan = Compactor::new(keep_both).unwrap().plan(&messages).unwrap();
    // Nothing is offloaded; with the conversation over the window, only the lossy tier acts.
    let kinds: Vec<_> = plan.actions.iter().map(|a| a.strategy()).collect();
    assert_eq!(kinds, [Strategy::Transcript, Strategy::Summarize]);
    let mut off = window(16_000);
    off.compaction.keep_tool_results_fraction = 1.0;
    off.history.strategy = context_compactor::HistoryStrategy::Off;
    let plan = Compactor::new(off).unwrap().plan(&messages).unwrap();
    assert!(
        plan.is_empty(),
        "{:?}",
        plan.actions.iter().map(|a| a.id()).collect::<Vec<_>>()
    );
}

/// An excluded tool's result is kept whole (an app's `read_file` reads the file the agent works
/// on) unless it is over `offload.maxWindowFraction` of the window: then it is offloaded as any
/// tool's, so that one read cannot fill the window. A call of a recovery tool's name that reads
/// the store (its path under the compactor's directories or the root, or none) never is: a page
/// of it would be offloaded again. A user's report: a `read_file` tool of 30-60 kB outputs was
/// never offloaded, and 15 of 150 prompts went over a 16k window.
#[test]
fn an_excluded_tools_result_is_offloaded_only_past_its_share_of_the_window() {
    let calls = [
        ("read_file", json!({"path": "src/big.rs"}), true),
        ("read_file", json!({"file_path": "/workspace/big.rs"}), true),
        ("grep", json!({"pattern": "x", "path": "src/"}), true),
        ("glob", json!({"pattern": "**"}), true),
        ("search", json!({"q": "x"}), true),
        (
            "read_file",
            json!({"path": "/tool_outputs/search_1.txt"}),
            false,
        ),
        (
            "read_file",
            json!({"file_path": "/conversation_history/c.json"}),
            false,
        ),
        (
            "read_file",
            json!({"path": "/user_messages/u.txt", "offset": 500}),
            false,
        ),
        (
            "grep",
            json!({"pattern": "x", "path": "/tool_outputs/search_"}),
            false,
        ),
        ("ls", json!({"path": "/tool_outputs"}), false),
        ("ls", json!({"path": "/"}), false),
        // A grep without a path may be the app's over its disk (the compactor's own is bounded
        // by a page).
        ("grep", json!({"pattern": "x"}), true),
        ("read_file", json!({}), false),
    ];
    // About 14,000 tokens: over the 2,000-token threshold everywhere, over a quarter of a
    // 40,000-token window, within a quarter of a 200,000-token one.
    let output = big("line", 2_000);
    for (window_tokens, past_share) in [(40_000, true), (200_000, false)] {
        for (name, input, offloadable) in &calls {
            let messages = parse_messages(
                &json!([
                    {"role": "user", "content": "go"},
                    {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": name, "input": input}]},
                    {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": name, "output": {"type": "text", "value": output}}]},
                ])
                .to_string(),
            )
            .unwrap();
            let plan = Compactor::new(window(window_tokens))
                .unwrap()
                .plan(&messages)
                .unwrap();
            let offloads = plan
                .actions
                .iter()
                .filter(|a| a.strategy() == Strategy::Offload)
                .count();
            let excluded = *name != "search";
            let expected = *offloadable && (past_share || !excluded);
            assert_eq!(
                offloads,
                usize::from(expected),
                "{name} {input} in {window_tokens}"
            );
        }
    }
}

#[test]
fn estimated_families_calibrate_from_observed_usage() {
    let messages = conversation(&["hello there".repeat(50)]);
    let mut compactor = Compactor::new(Config {
        model: Some("claude-sonnet-4-5".into()),
        ..Config::default()
    })
    .unwrap();
    let raw = compactor.count_raw(&messages);
    assert_eq!(
        compactor.count(&messages),
        (f64::from(raw) * 1.20).ceil() as u32,
        "default Anthropic ratio"
    );
    for _ in 0..20 {
        compactor.observe_usage(raw, raw * 13 / 10);
    }
    let calibrated = compactor.count(&messages);
    assert!(
        (calibrated as f64 / raw as f64 - 1.3).abs() < 0.01,
        "{calibrated} vs {raw}"
    );
    compactor.observe_usage(raw, raw * 10); // a misreport is ignored
    assert_eq!(compactor.count(&messages), calibrated);
    let state = compactor.state().clone();
    let resumed = Compactor::with_state(
        Config {
            model: Some("claude-sonnet-4-5".into()),
            ..Config::default()
        },
        state.clone(),
    )
    .unwrap();
    assert_eq!(resumed.count(&messages), calibrated);
    let other = Compactor::with_state(
        Config {
            model: Some("gemini-2.5-pro".into()),
            ..Config::default()
        },
        state,
    )
    .unwrap();
    assert!(
        other.state().calibration.is_none(),
        "calibration is per model"
    );
}

#[test]
fn tool_definitions_count_against_the_window() {
    let messages = conversation(&["small".into()]);
    let plain = Compactor::new(window(16_000)).unwrap();
    let mut with_tools = window(16_000);
    with_tools.tools = serde_json::from_value(json!([
        {"name": "read_file", "description": "Read a file from the workspace, paged by offset and limit.",
         "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
    ]))
    .unwrap();
    let tooled = Compactor::new(with_tools).unwrap();
    let extra = tooled.count(&messages) - plain.count(&messages);
    let schema = r#"{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}"#;
    let expected = context_compactor::TOOL_DEFINITION_OVERHEAD
        + context_compactor::count_tokens("read_file", context_compactor::Encoding::O200kBase)
            .unwrap() as u32
        + context_compactor::count_tokens(
            "Read a file from the workspace, paged by offset and limit.",
            context_compactor::Encoding::O200kBase,
        )
        .unwrap() as u32
        + context_compactor::count_tokens(schema, context_compactor::Encoding::O200kBase).unwrap()
            as u32;
    assert_eq!(extra, expected);
    assert_eq!(
        tooled.plan(&messages).unwrap().tokens_before,
        tooled.count(&messages)
    );
    assert!(
        Config::from_json(r#"{"tools": [{"name": "x", "bogus": 1}]}"#).is_err(),
        "unknown keys in a tool are refused"
    );
}
