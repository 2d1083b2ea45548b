//! The compaction record (SPEC §10 "stable across hosts"): generated agent sessions driven call
//! by call through three host shapes must give the model the same prompt, byte for byte:
//! - **long-lived**: one compactor; each call sends the last compacted prompt plus what is new;
//! - **stateless**: a new compactor per call, built from the previous call's state as JSON (what
//!   `statePath` saves), the raw history re-sent;
//! - **fresh objects**: one compactor, the raw history re-sent as newly parsed messages (what the
//!   AI SDK middleware sees).
//!
//! Also: a span is summarized once, replay is idempotent, the record stays bounded.

mod support;

use proptest::prelude::*;
use serde_json::{json, Value};

use context_compactor::{
    messages_from_value, Action, Compactor, Config, HistoryStrategy, Message, Preset, State,
};
use support::{execute_with, Faults, Store, Summarizer};

/// A deterministic agent session: turns of a user request and tool steps with outputs of
/// varied sizes, re-reads of the same files, and file writes.
fn session(seed: u64, turns: usize) -> Vec<Value> {
    session_with(seed, turns, false)
}

/// [`session`], and with `pinned`: a `write_todos` call every other turn (the live plan), the
/// second user message pinned by `providerOptions`, and after turn 3's request an Anthropic
/// compaction block as the AI SDK carries it (the random draws are the same).
fn session_with(seed: u64, turns: usize, pinned: bool) -> Vec<Value> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n.max(1)
    };
    let mut out = vec![json!({"role": "system", "content": "You are a coding agent."})];
    let mut call = 0;
    for turn in 0..turns {
        out.push(json!({"role": "user", "content": format!("Turn {turn}: fix issue {} in module {}.", next(1000), next(50))}));
        if pinned && turn == 1 {
            out.last_mut().unwrap()["providerOptions"] = json!({"contextCompactor": {"pin": true}});
        }
        if pinned && turn == 3 {
            out.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": "Summary of turns 0-2 (the provider's own compaction).",
                 "providerOptions": {"anthropic": {"type": "compaction", "signature": "sig-turn-3"}}},
                {"type": "text", "text": "Continuing with turn 3."}]}));
        }
        if pinned && turn % 2 == 0 {
            let id = format!("todos_{turn}");
            let todos: Vec<Value> = (0..=turn)
                .map(|t| json!({"content": format!("Fix turn {t}'s issue"), "status": if t < turn { "completed" } else { "in_progress" }}))
                .collect();
            out.push(json!({"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": id, "toolName": "write_todos", "input": {"todos": todos}}]}));
            out.push(json!({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": id, "toolName": "write_todos", "output": {"type": "text", "value": format!("Updated todo list ({} items)", turn + 1)}}]}));
        }
        for _ in 0..1 + next(4) {
            call += 1;
            let id = format!("call_{call}");
            let (tool, input, output) = match next(4) {
                0 => {
                    let file = format!("src/file_{}.rs", next(4));
                    let lines = 50 + next(600) as usize;
                    let body: String = (0..lines)
                        .map(|i| format!("fn f{i}() {{ /* {file} {} */ }}\n", next(1_000_000)))
                        .collect();
                    ("read_file", json!({"path": file}), body)
                }
                1 => {
                    let file = format!("src/file_{}.rs", next(4));
                    let content: String = (0..20 + next(300))
                        .map(|i| format!("let x{i} = {};\n", next(99_999)))
                        .collect();
                    (
                        "write_file",
                        json!({"path": file, "content": content}),
                        "ok".to_owned(),
                    )
                }
                2 => {
                    let lines = 10 + next(3_000) as usize;
                    let log: String = (0..lines)
                        .map(|i| {
                            format!(
                                "test t{i} ... {}\n",
                                if next(20) == 0 { "FAILED" } else { "ok" }
                            )
                        })
                        .collect();
                    (
                        "run_tests",
                        json!({"filter": format!("mod{}", next(9))}),
                        log,
                    )
                }
                _ => {
                    let hits: String = (0..5 + next(200))
                        .map(|i| format!("src/m{}.rs:{i}: match {}\n", next(30), next(1000)))
                        .collect();
                    ("grep", json!({"pattern": format!("p{}", next(100))}), hits)
                }
            };
            out.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("Calling {tool}.")},
                {"type": "tool-call", "toolCallId": id, "toolName": tool, "input": input}]}));
            out.push(json!({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": id, "toolName": tool, "output": {"type": "text", "value": output}}]}));
        }
        out.push(json!({"role": "assistant", "content": format!("Done with turn {turn}.")}));
    }
    out
}

/// The indices at which the model is called: before every assistant message.
fn calls(session: &[Value]) -> Vec<usize> {
    (1..session.len())
        .filter(|&i| session[i]["role"] == "assistant")
        .collect()
}

fn parse(values: &[Value]) -> Vec<Message> {
    messages_from_value(Value::Array(values.to_vec())).expect("valid session")
}

fn drive(compactor: &mut Compactor, messages: Vec<Message>, store: &mut Store) -> Vec<Message> {
    let plan = compactor.plan(&messages).expect("plan");
    let outcomes = execute_with(&plan, store, &Faults::None, Summarizer::Works);
    compactor
        .apply(messages, &plan, &outcomes)
        .expect("apply")
        .messages
}

fn prompt_text(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap()
}

/// Where two prompts part, with some context (prompts are long: never print them whole).
fn diff(a: &str, b: &str) -> String {
    let at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let around = |s: &str| {
        let from = s.floor_char_boundary(at.saturating_sub(150));
        let to = s.ceil_char_boundary((at + 150).min(s.len()));
        s[from..to].to_owned()
    };
    format!(
        "lengths {} and {}, first difference at byte {at}:\n  {}\n  {}",
        a.len(),
        b.len(),
        around(a),
        around(b)
    )
}

fn config(window: u32, preset: Preset, strategy: HistoryStrategy) -> Config {
    let mut config = Config::from_json(
        &json!({"model": "gpt-4o", "contextWindow": window, "preset": preset}).to_string(),
    )
    .unwrap();
    config.history.strategy = strategy;
    config
}

/// Drives `session` through the three host shapes; returns each call's prompts and the final
/// states.
fn three_shapes(session: &[Value], config: &Config) -> Result<(Vec<String>, State), TestCaseError> {
    let mut long_lived = Compactor::new(config.clone()).unwrap();
    let mut fresh_objects = Compactor::new(config.clone()).unwrap();
    let mut saved = serde_json::to_string(&State::default()).unwrap();
    let (mut store_a, mut store_b, mut store_c) = (Store::new(), Store::new(), Store::new());
    let mut carried: Vec<Message> = Vec::new();
    let mut carried_upto = 0;
    let mut prompts = Vec::new();
    for (n, &at) in calls(session).iter().enumerate() {
        // Long-lived: the last prompt plus the messages added since.
        let mut input = carried.clone();
        input.extend(parse(&session[carried_upto..at]));
        let a = drive(&mut long_lived, input, &mut store_a);
        carried = a.clone();
        carried_upto = at;
        // Stateless: a new compactor from the saved state, the raw history.
        let state: State = serde_json::from_str(&saved).unwrap();
        let mut stateless = Compactor::with_state(config.clone(), state).unwrap();
        let b = drive(&mut stateless, parse(&session[..at]), &mut store_b);
        saved = serde_json::to_string(stateless.state()).unwrap();
        // Fresh objects: one compactor, the raw history parsed anew.
        let c = drive(&mut fresh_objects, parse(&session[..at]), &mut store_c);
        let (a, b, c) = (prompt_text(&a), prompt_text(&b), prompt_text(&c));
        prop_assert!(
            a == b,
            "call {} (message {}): stateless differs from long-lived: {}",
            n,
            at,
            diff(&a, &b)
        );
        prop_assert!(
            a == c,
            "call {} (message {}): fresh objects differ from long-lived: {}",
            n,
            at,
            diff(&a, &c)
        );
        prompts.push(a);
    }
    prop_assert_eq!(&store_a, &store_b, "the stores differ");
    prop_assert_eq!(
        serde_json::to_string(long_lived.state()).unwrap(),
        saved,
        "the states differ"
    );
    Ok((prompts, long_lived.state().clone()))
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_host_shape_sends_the_same_prompt(
        seed in any::<u64>(),
        turns in 3usize..14,
        window in prop_oneof![Just(8_000u32), Just(16_000), Just(32_000)],
        preset in prop_oneof![Just(Preset::Simple), Just(Preset::Smart), Just(Preset::Aggressive)],
        strategy in prop_oneof![Just(HistoryStrategy::Summarize), Just(HistoryStrategy::Truncate), Just(HistoryStrategy::Importance)],
        pinned in any::<bool>(),
    ) {
        let session = session_with(seed, turns, pinned);
        let mut config = config(window, preset, strategy);
        if pinned {
            // Pinned tools too: a small one (grep's results vary from 5 to 200 lines).
            config.history.pinned_tools = vec!["grep".into()];
        }
        let (prompts, _) = three_shapes(&session, &config)?;
        if pinned {
            // The latest plan and the pinned message are in every prompt, verbatim.
            let pinned_at = session.iter().position(|m| m.get("providerOptions").is_some()).unwrap();
            let pin = serde_json::to_string(&session[pinned_at]["content"]).unwrap();
            for (n, (&at, prompt)) in calls(&session).iter().zip(&prompts).enumerate() {
                if let Some(latest) = session[..at].iter().rev().find_map(|m| {
                    m["content"].as_array().and_then(|parts| parts.iter().find(|p| p["toolName"] == "write_todos" && p["type"] == "tool-call"))
                }) {
                    let input = serde_json::to_string(&latest["input"]).unwrap();
                    let escaped = serde_json::to_string(&input).unwrap();
                    prop_assert!(prompt.contains(&input) || prompt.contains(&escaped[1..escaped.len() - 1]),
                        "call {}: the latest plan is missing", n);
                }
                if at > pinned_at {
                    prop_assert!(prompt.contains(&pin), "call {}: the pinned message is missing", n);
                }
            }
            // Nothing up to the provider's compaction block changes once it is there.
            let mut before_item: Option<Vec<Value>> = None;
            for (n, prompt) in prompts.iter().enumerate() {
                let messages: Vec<Value> = serde_json::from_str(prompt).unwrap();
                let Some(k) = messages.iter().position(|m| m.to_string().contains("sig-turn-3")) else {
                    continue;
                };
                match &before_item {
                    None => before_item = Some(messages[..=k].to_vec()),
                    Some(first) => prop_assert!(first == &messages[..=k], "call {}: changed before the provider's compaction block", n),
                }
            }
            if turns > 4 {
                prop_assert!(before_item.is_some(), "the compaction block is in the prompts");
            }
        }
    }
}

#[test]
fn a_stateless_host_summarizes_each_span_once_and_keeps_its_prefix() {
    let session = session(7, 40);
    let config = config(16_000, Preset::Smart, HistoryStrategy::Summarize);
    let mut saved = State::default();
    let mut store = Store::new();
    let mut summaries = 0;
    let mut previous: Option<String> = None;
    let mut breaks = 0;
    let mut largest_state = 0;
    for &at in &calls(&session) {
        let mut compactor = Compactor::with_state(config.clone(), saved.clone()).unwrap();
        let messages = parse(&session[..at]);
        let plan = compactor.plan(&messages).unwrap();
        // A span already summarized is never sent again: every summary request starts at the
        // previous summary (rolling) or at the first message after the system prompt.
        for action in &plan.actions {
            if let Action::Summarize(s) = action {
                summaries += 1;
                assert!(s.start == 1, "summary span starts at {}", s.start);
            }
        }
        let outcomes = execute_with(&plan, &mut store, &Faults::None, Summarizer::Works);
        let prompt = prompt_text(
            &compactor
                .apply(messages, &plan, &outcomes)
                .unwrap()
                .messages,
        );
        if let Some(previous) = &previous {
            let previous = &previous[..previous.len() - 1]; // the closing bracket
            if !prompt.starts_with(previous) {
                breaks += 1;
            }
        }
        previous = Some(prompt);
        saved = compactor.state().clone();
        largest_state = largest_state.max(serde_json::to_string(&saved).unwrap().len());
    }
    let calls = calls(&session).len();
    assert!(
        summaries >= 1,
        "the session never summarized (calls: {calls})"
    );
    // Without the record every call past the first summary re-summarizes and breaks the prefix.
    assert!(
        summaries * 4 <= calls,
        "{summaries} summaries in {calls} calls"
    );
    assert!(
        breaks * 3 <= calls,
        "{breaks} prefix breaks in {calls} calls"
    );
    // A rolling summary absorbs the record of the one before, unless that one kept messages
    // after it (pins, the working file): then both stay (bounded by the record's 64 spans).
    let absorbable = saved
        .record
        .spans
        .iter()
        .filter(|s| s.keep.is_empty())
        .count();
    assert!(
        absorbable <= 1 && saved.record.spans.len() < summaries,
        "spans recorded: {} ({summaries} summaries) {:?}",
        saved.record.spans.len(),
        saved
            .record
            .spans
            .iter()
            .map(|s| (s.strategy, s.len, s.keep.clone()))
            .collect::<Vec<_>>()
    );
    // Bounded: the record holds what the live conversation needs, not the session.
    assert!(
        largest_state < 64_000,
        "state grew to {largest_state} bytes"
    );
    eprintln!("calls {calls}, summaries {summaries}, prefix breaks {breaks}, largest state {largest_state} bytes");
}

#[test]
fn replay_is_idempotent_and_a_compacted_history_replays_to_itself() {
    let session = session(11, 20);
    let config = config(12_000, Preset::Smart, HistoryStrategy::Summarize);
    let mut compactor = Compactor::new(config).unwrap();
    let mut store = Store::new();
    let mut last = Vec::new();
    for &at in &calls(&session) {
        last = drive(&mut compactor, parse(&session[..at]), &mut store);
    }
    // The compacted prompt replays to itself; the raw history replays to the same prompt.
    assert_eq!(prompt_text(&compactor.replay(&last)), prompt_text(&last));
    let raw = parse(&session[..*calls(&session).last().unwrap()]);
    assert_eq!(prompt_text(&compactor.replay(&raw)), prompt_text(&last));
    assert!(compactor.plan(&last).unwrap().is_empty());
    assert!(
        !compactor.plan(&raw).unwrap().is_empty(),
        "a raw history has replay work"
    );
}

#[test]
fn an_edited_history_is_not_replayed_onto() {
    // The host changed an old tool output: the recorded edit no longer matches, so the part is
    // planned afresh rather than silently replaced by a pointer to other content.
    let session = session(3, 12);
    let config = config(8_000, Preset::Aggressive, HistoryStrategy::Off);
    let mut compactor = Compactor::new(config).unwrap();
    let mut store = Store::new();
    let at = *calls(&session).last().unwrap();
    drive(&mut compactor, parse(&session[..at]), &mut store);
    assert!(!compactor.state().record.edits.is_empty());
    let mut edited = session[..at].to_vec();
    let id = compactor.state().record.edits[0].tool_call_id.clone();
    for message in &mut edited {
        if let Some(parts) = message["content"].as_array_mut() {
            for part in parts {
                if part["toolCallId"] == id.as_str() && part["type"] == "tool-result" {
                    part["output"]["value"] = json!("changed by the host");
                }
            }
        }
    }
    let replayed = compactor.replay(&parse(&edited)).into_owned();
    let text = prompt_text(&replayed);
    assert!(
        text.contains("changed by the host"),
        "the host's edit was overwritten"
    );
}

#[test]
fn a_pasted_log_in_a_user_message_is_offloaded_recorded_and_replayed() {
    let log: String = (0..40_000)
        .map(|i| {
            format!(
                "2026-11-25 10:{:02} INFO worker {i} finished job {}\n",
                i % 60,
                i * 7
            )
        })
        .collect();
    for content in [
        json!(log.clone()),
        json!([{"type": "text", "text": "Here is the log:"}, {"type": "text", "text": log.clone()}]),
    ] {
        let session = vec![
            json!({"role": "system", "content": "You are an SRE agent."}),
            json!({"role": "user", "content": content}),
        ];
        let config = config(128_000, Preset::Smart, HistoryStrategy::Summarize);
        let mut compactor = Compactor::new(config.clone()).unwrap();
        let mut store = Store::new();
        let messages = parse(&session);
        let plan = compactor.plan(&messages).unwrap();
        let Some(Action::Offload(edit)) = plan.actions.first() else {
            panic!("no offload: {:?}", plan.actions)
        };
        assert!(
            edit.tool_call_id.is_empty() && edit.path.starts_with("/user_messages/user_message_")
        );
        let outcomes = execute_with(&plan, &mut store, &Faults::None, Summarizer::Works);
        let applied = compactor.apply(messages.clone(), &plan, &outcomes).unwrap();
        // Stored byte for byte; the newest user message keeps a preview and the path.
        assert_eq!(store[&edit.path], log);
        let text = applied.messages[1].text();
        assert!(
            text.contains(&edit.path) && text.contains("worker 0 finished") && text.len() < 5_000,
            "{text}"
        );
        assert!(applied.tokens_after < 3_000, "{}", applied.tokens_after);
        assert_eq!(applied.events[0].tool_call_id, None);
        // Recorded: a new compactor with the state replays it onto the raw message.
        let state: State =
            serde_json::from_str(&serde_json::to_string(compactor.state()).unwrap()).unwrap();
        let stateless = Compactor::with_state(config, state).unwrap();
        assert_eq!(
            prompt_text(&stateless.replay(&messages)),
            prompt_text(&applied.messages)
        );
        assert!(stateless.plan(&messages).unwrap().actions.is_empty());
        assert!(
            compactor.plan(&applied.messages).unwrap().is_empty(),
            "idempotent"
        );
    }
}

/// A user text just over `offload.userThresholdTokens` and dense in tokens (digits and dots: 232
/// bytes, 120 tokens) is offloaded for a preview with fewer tokens but more bytes (329). Replay
/// once looked only at user texts at least as long as the shortest preview, so a host that
/// re-sends the raw history (a new compactor per request, fresh objects, the middleware) missed
/// the edit: it planned another conversation than the long-lived compactor, and its summary
/// named another transcript (fuzz/api class `host-shape`, seeds sess37-e:109, sess37-f:278).
#[test]
fn a_user_text_shorter_than_its_preview_replays_in_every_host_shape() {
    let dense: String = (0..60).map(|i| format!("{}.", i * 7919 % 1000)).collect();
    let mut config = config(8_000, Preset::Smart, HistoryStrategy::Summarize);
    config.offload.user_threshold_tokens = 100;
    let messages = parse(&[
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": dense.clone()}),
    ]);
    let mut compactor = Compactor::new(config.clone()).unwrap();
    let plan = compactor.plan(&messages).unwrap();
    let Some(Action::Offload(edit)) = plan.actions.first() else {
        panic!("no offload: {:?}", plan.actions)
    };
    let context_compactor::Replace::Text { value } = &edit.replace else {
        panic!("not a text replacement: {:?}", edit.replace)
    };
    assert!(
        value.len() > dense.len(),
        "the premise: a preview longer than the text"
    );
    let mut store = Store::new();
    let outcomes = execute_with(&plan, &mut store, &Faults::None, Summarizer::Works);
    let applied = compactor.apply(messages.clone(), &plan, &outcomes).unwrap();
    let stateless = Compactor::with_state(config.clone(), compactor.state().clone()).unwrap();
    assert_eq!(
        prompt_text(&stateless.replay(&messages)),
        prompt_text(&applied.messages),
        "the raw message replays to its preview"
    );
    assert!(stateless.plan(&messages).unwrap().actions.is_empty());
    // A session whose first request is that text, summarized later: the same prompts (and so
    // the same transcript names), stores and states in every host shape.
    let mut session = session(11, 14);
    session[1]["content"] = json!(dense);
    let (prompts, _) = three_shapes(&session, &config).unwrap();
    assert!(
        prompts
            .iter()
            .any(|p| p.contains("/conversation_history/conversation_")),
        "a summary names its transcript"
    );
}

#[test]
fn a_large_text_file_in_a_user_message_is_counted_as_text_offloaded_and_replayed() {
    use base64::Engine as _;
    let csv: String = (0..30_000)
        .map(|i| {
            format!(
                "{i},order-{},{}.{:02},shipped\n",
                i * 31 % 997,
                i % 500,
                i % 100
            )
        })
        .collect();
    let data = base64::engine::general_purpose::STANDARD.encode(csv.as_bytes());
    let session = vec![
        json!({"role": "system", "content": "You are an analyst."}),
        json!({"role": "user", "content": [
            {"type": "text", "text": "Which orders were shipped twice?"},
            {"type": "file", "mediaType": "text/csv", "filename": "orders.csv", "data": data}]}),
    ];
    let config = config(128_000, Preset::Smart, HistoryStrategy::Summarize);
    let mut compactor = Compactor::new(config.clone()).unwrap();
    let messages = parse(&session);
    // Counted as its text, not as the 1,600-token estimate of a binary file.
    let tokens = context_compactor::count_tokens(&csv, context_compactor::Encoding::O200kBase)
        .unwrap() as u32;
    assert!(
        compactor.count(&messages) > tokens,
        "{} vs {tokens}",
        compactor.count(&messages)
    );
    let plan = compactor.plan(&messages).unwrap();
    let Some(Action::Offload(edit)) = plan.actions.first() else {
        panic!("no offload: {:?}", plan.notes)
    };
    assert!(
        edit.path
            .starts_with("/user_messages/user_file_orders_csv_"),
        "{}",
        edit.path
    );
    let mut store = Store::new();
    let outcomes = execute_with(&plan, &mut store, &Faults::None, Summarizer::Works);
    let applied = compactor.apply(messages.clone(), &plan, &outcomes).unwrap();
    assert_eq!(store[&edit.path], csv, "the file's text, byte for byte");
    let text = applied.messages[1].text();
    assert!(
        text.starts_with("Which orders") && text.contains(&edit.path) && text.contains("0,order-0"),
        "{text}"
    );
    assert!(applied.tokens_after < 3_000);
    let stateless = Compactor::with_state(config, compactor.state().clone()).unwrap();
    assert_eq!(
        prompt_text(&stateless.replay(&messages)),
        prompt_text(&applied.messages)
    );
    assert!(compactor.plan(&applied.messages).unwrap().is_empty());
}

#[test]
fn a_carried_plan_and_kept_pins_replay_onto_the_raw_history() {
    // The generator's pinned sessions do exercise both: a plan carried after a summary or
    // notice, and pinned messages kept inside a recorded span.
    for strategy in [
        HistoryStrategy::Summarize,
        HistoryStrategy::Truncate,
        HistoryStrategy::Importance,
    ] {
        let session = session_with(7, 30, true);
        let mut config = config(16_000, Preset::Smart, strategy);
        config.history.pinned_tools = vec!["grep".into()];
        let (prompts, state) = three_shapes(&session, &config).unwrap();
        assert!(
            prompts
                .iter()
                .any(|p| p.contains("[Current plan, kept verbatim] the latest write_todos input")),
            "{strategy:?}: no plan carried"
        );
        assert!(
            state.record.spans.iter().any(|s| !s.keep.is_empty()),
            "{strategy:?}: no pins kept"
        );
    }
}
