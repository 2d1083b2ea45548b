//! Pinned context (issue 19, build item 2): the live plan (the latest input of a plan/todo tool)
//! is carried verbatim through every lossy step, and pinned messages and parts
//! (`providerOptions.contextCompactor.pin`, `history.pinnedTools`) survive every tier.

mod support;

use context_compactor::{validate, Action, Compactor, Config, HistoryStrategy, Message, Note};
use serde_json::{json, Value};
use support::{agent_session, execute_with, gpt4o, parse_values, prose, Faults, Store, Summarizer};

fn todos(version: usize) -> Value {
    json!({"todos": [
        {"content": format!("Refactor the parser (v{version})"), "status": "completed"},
        {"content": format!("Write the cache tests (v{version})"), "status": "in_progress"},
        {"content": "Ship the release notes \"draft\"", "status": "pending"},
    ]})
}

/// [`agent_session`] with a `tool` (plan tool) call pair after the user message of each turn in
/// `plans`.
fn session(turns: usize, words: usize, plans: &[usize], tool: &str) -> Vec<Value> {
    agent_session(turns, words, |t, out| {
        if plans.contains(&t) {
            let pid = format!("plan_{t}");
            out.push(json!({"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": pid, "toolName": tool, "input": todos(t)}]}));
            out.push(json!({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": pid, "toolName": tool, "output": {"type": "text", "value": "Updated todo list"}}]}));
        }
    })
}

fn run(
    c: &mut Compactor,
    messages: Vec<Message>,
    summarizer: Summarizer,
    manual: bool,
) -> (context_compactor::Plan, Vec<Message>, Store) {
    let plan = if manual {
        c.plan_manual(&messages).unwrap()
    } else {
        c.plan(&messages).unwrap()
    };
    let mut store = Store::new();
    let outcomes = execute_with(&plan, &mut store, &Faults::None, summarizer);
    let applied = c.apply(messages, &plan, &outcomes).unwrap();
    validate(&applied.messages).unwrap();
    (plan, applied.messages, store)
}

fn json_of(messages: &[Message]) -> String {
    serde_json::to_string(messages).unwrap()
}

/// The whole conversation as text (what the model reads).
fn texts(messages: &[Message]) -> String {
    messages
        .iter()
        .map(|m| match &m.content {
            context_compactor::Content::Text(t) => t.clone(),
            _ => serde_json::to_string(m).unwrap(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn lossy_kind(plan: &context_compactor::Plan) -> Option<&'static str> {
    plan.actions.iter().find_map(|a| match a {
        Action::Summarize(_) => Some("summarize"),
        Action::Drop(_) => Some("drop"),
        _ => None,
    })
}

#[test]
fn an_early_todo_list_survives_a_forced_summary_verbatim_with_every_summarizer_outcome() {
    let values = session(14, 200, &[0], "write_todos");
    let messages = parse_values(&values);
    let expected = format!("the latest write_todos input:\n{}", todos(0));
    for summarizer in [Summarizer::Works, Summarizer::Fails, Summarizer::Silent] {
        let mut c = gpt4o(16_000, |_| {});
        let (plan, out, _) = run(&mut c, messages.clone(), summarizer, true);
        if summarizer == Summarizer::Silent {
            // No summarizer reported: nothing applied, the plan call is still there.
            assert!(json_of(&out).contains("Refactor the parser (v0)"));
            continue;
        }
        assert_eq!(lossy_kind(&plan), Some("summarize"));
        let Action::Summarize(s) = plan.actions.last().unwrap() else {
            unreachable!()
        };
        assert!(
            s.plan.as_deref().unwrap().ends_with(&expected),
            "{:?}",
            s.plan
        );
        // The plan call itself was summarized away; its input is carried after the summary.
        let summary = out[1].text();
        assert!(summary.starts_with("[Conversation summary]"), "{summary}");
        assert!(
            summary.ends_with(&format!("\n\n[Current plan, kept verbatim] {expected}")),
            "{summary}"
        );
        assert!(!json_of(&out[2..]).contains("plan_0"));
        if summarizer == Summarizer::Fails {
            assert!(
                summary.contains("## Plan / Todo\nThe latest plan is kept verbatim"),
                "{summary}"
            );
        }
        assert!(plan
            .notes
            .iter()
            .all(|n| !matches!(n, Note::PinnedOverBudget { .. })));
    }
}

#[test]
fn the_summarizer_is_asked_for_a_plan_section() {
    let messages = parse_values(&session(14, 200, &[0], "write_todos"));
    let c = gpt4o(16_000, |_| {});
    let plan = c.plan_manual(&messages).unwrap();
    let Action::Summarize(s) = plan.actions.last().unwrap() else {
        panic!()
    };
    assert!(s.request.prompt.contains("## Plan / Todo"));
}

#[test]
fn only_the_latest_plan_is_carried_and_rolling_summaries_carry_it_byte_for_byte() {
    // Plans at turns 0 and 3 (TodoWrite): only v3 is carried; a second summary carries the same
    // section again.
    let values = session(30, 200, &[0, 3], "TodoWrite");
    let mut c = gpt4o(16_000, |_| {});
    let (_, first, _) = run(&mut c, parse_values(&values[..60]), Summarizer::Works, true);
    let summary = first[1].text();
    let section = summary
        .rsplit_once("\n\n[Current plan")
        .map(|(_, s)| format!("[Current plan{s}"))
        .unwrap();
    assert!(
        section.contains("(v3)") && !section.contains("(v0)"),
        "{section}"
    );
    assert_eq!(summary.matches("[Current plan, kept verbatim]").count(), 1);
    // The conversation grows; the next summary rolls the first one up.
    let mut next = first.clone();
    next.extend(parse_values(&values[60..]));
    let (plan, second, _) = run(&mut c, next, Summarizer::Works, true);
    let Action::Summarize(s) = plan.actions.last().unwrap() else {
        panic!()
    };
    assert!(s
        .previous_summary
        .as_deref()
        .is_some_and(|p| !p.contains("[Current plan")));
    let rolled = second[1].text();
    assert!(rolled.ends_with(&format!("\n\n{section}")), "{rolled}");
    assert_eq!(rolled.matches("[Current plan, kept verbatim]").count(), 1);
}

#[test]
fn a_plan_in_the_kept_messages_is_not_carried() {
    // The latest plan is among the recent messages (kept verbatim): nothing carried, and the
    // stale plan of turn 0 is not carried either.
    let values = session(14, 200, &[0, 13], "update_plan");
    let mut c = gpt4o(16_000, |_| {});
    let (plan, out, _) = run(&mut c, parse_values(&values), Summarizer::Fails, true);
    let Action::Summarize(s) = plan.actions.last().unwrap() else {
        panic!()
    };
    assert_eq!(s.plan, None);
    assert!(!out[1].text().contains("[Current plan"));
    assert!(out[1]
        .text()
        .contains("a newer plan is in the messages after this summary"));
    assert!(json_of(&out).contains("(v13)"));
    assert!(!json_of(&out).contains("(v0)"));
}

#[test]
fn truncation_and_importance_carry_the_plan_after_their_notice() {
    let values = session(24, 200, &[1], "write_todos");
    for strategy in [HistoryStrategy::Truncate, HistoryStrategy::Importance] {
        let mut c = gpt4o(12_000, |c| c.history.strategy = strategy);
        let (plan, out, _) = run(&mut c, parse_values(&values), Summarizer::Works, false);
        assert_eq!(lossy_kind(&plan), Some("drop"), "{strategy:?}");
        let all = texts(&out);
        assert!(all.contains("[Earlier messages removed]"));
        assert!(
            all.contains(&format!(
                "[Current plan, kept verbatim] the latest write_todos input:\n{}",
                todos(1)
            )),
            "{strategy:?}: {all}"
        );
        // Planning again is idempotent: no new work, the notice (and plan) stay as they are.
        let again = c.plan(&out).unwrap();
        assert!(lossy_kind(&again).is_none(), "{strategy:?}");
    }
}

/// A session whose turn-2 user message is pinned by `providerOptions`, and whose `search`
/// tool is listed in `history.pinnedTools` (turn 3).
fn pinned_session() -> Vec<Value> {
    let mut values = session(24, 200, &[], "write_todos");
    // Turn t's user message is at 1 + 4t.
    values[1 + 4 * 2] = json!({"role": "user", "content": "Never touch the migrations directory.",
        "providerOptions": {"contextCompactor": {"pin": true}}});
    let i = 1 + 4 * 3 + 1;
    values[i] = json!({"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": "call_3", "toolName": "search", "input": {"query": "auth"}}]});
    values[i + 1] = json!({"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "call_3", "toolName": "search", "output": {"type": "text", "value": prose(77, 600)}}]});
    // A pinned part inside an otherwise ordinary message (turn 4's assistant text).
    values[1 + 4 * 4 + 3] = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Decision: keep the v1 API."},
        {"type": "text", "text": "Pinned: the API key lives in VAULT_PATH.", "providerOptions": {"contextCompactor": {"pin": true}}}]});
    values
}

fn assert_pins_survive(original: &[Message], out: &[Message], what: &str) {
    let out_json = json_of(out);
    for (needle, index) in [
        ("Never touch the migrations directory.", 9),
        ("Pinned: the API key lives in VAULT_PATH.", 20),
    ] {
        assert!(out_json.contains(needle), "{what}: {needle}");
        let message = serde_json::to_string(&original[index]).unwrap();
        assert!(
            out_json.contains(&message),
            "{what}: message {index} verbatim"
        );
    }
    // The pinned tool's call and result, verbatim and in order.
    let call = serde_json::to_string(&original[14]).unwrap();
    let result = serde_json::to_string(&original[15]).unwrap();
    let (c, r) = (out_json.find(&call), out_json.find(&result));
    assert!(
        c.is_some() && r.is_some() && c < r,
        "{what}: search pair kept"
    );
}

#[test]
fn pins_survive_summary_truncation_and_importance() {
    let values = pinned_session();
    let messages = parse_values(&values);
    for strategy in [
        HistoryStrategy::Summarize,
        HistoryStrategy::Truncate,
        HistoryStrategy::Importance,
    ] {
        for manual in [false, true] {
            let mut c = gpt4o(12_000, |c| {
                c.history.strategy = strategy;
                c.history.pinned_tools = vec!["search".into()];
            });
            let (plan, out, _) = run(&mut c, messages.clone(), Summarizer::Fails, manual);
            assert!(lossy_kind(&plan).is_some(), "{strategy:?} manual={manual}");
            assert!(out.len() < messages.len());
            assert_pins_survive(&messages, &out, &format!("{strategy:?} manual={manual}"));
            if strategy == HistoryStrategy::Summarize {
                let Action::Summarize(s) = plan.actions.last().unwrap() else {
                    panic!()
                };
                assert!(s.keep.contains(&9) && s.keep.contains(&14) && s.keep.contains(&15));
                assert!(!s.request.prompt.contains("Never touch the migrations"));
                // The summary says which messages of its span it did not summarize (1-based, as
                // its span), and its fallback counts only those it did.
                let summary = out
                    .iter()
                    .map(Message::text)
                    .find(|t| t.starts_with("[Conversation summary]"))
                    .expect("a summary");
                let kept: Vec<String> = s.keep.iter().map(|k| (k + 1).to_string()).collect();
                assert!(
                    summary.contains(&format!(
                        "were summarized to free context, but for messages {}, kept verbatim right after this summary.",
                        kept.join(", ")
                    )),
                    "{summary}"
                );
                let summarized = s.end - s.start - s.keep.len();
                assert!(
                    summary.contains(&format!("{summarized} messages summarized without an LLM"))
                        || summary.contains(&format!(
                            "{} messages summarized without an LLM",
                            summarized - 1
                        )),
                    "{summary}"
                );
            }
            // A re-plan has no lossy work and the pins are still there.
            let again = c.plan(&out).unwrap();
            assert!(lossy_kind(&again).is_none(), "{strategy:?}: idempotent");
        }
    }
}

#[test]
fn pins_are_never_offloaded_evicted_or_masked() {
    // Large results everywhere: tier 1 and tier 2 take every unpinned one.
    let mut values = pinned_session();
    values.truncate(40);
    // A tool result pinned on the part itself (turn 5's read).
    let unpinned = parse_values(&values);
    values[23]["content"][0]["providerOptions"] = json!({"contextCompactor": {"pin": true}});
    let messages = parse_values(&values);
    let config = |c: &mut Config| {
        c.history.strategy = HistoryStrategy::Off;
        c.offload.threshold_tokens = 300;
        c.compaction.keep_tool_results = 1;
        c.compaction.min_saving_tokens = 10;
    };
    // Without the pins, message 23 and the search result are edited.
    let edited: Vec<usize> = gpt4o(60_000, config)
        .plan_manual(&unpinned)
        .unwrap()
        .actions
        .iter()
        .map(|a| a.store_edit().unwrap().message_index)
        .collect();
    assert!(edited.contains(&23) && edited.contains(&15), "{edited:?}");
    let mut c = gpt4o(60_000, |c| {
        c.history.strategy = HistoryStrategy::Off;
        c.history.pinned_tools = vec!["search".into()];
        c.offload.threshold_tokens = 300;
        c.compaction.keep_tool_results = 1;
        c.compaction.min_saving_tokens = 10;
    });
    let (plan, out, _) = run(&mut c, messages.clone(), Summarizer::Works, true);
    assert!(plan.actions.len() > 3, "{:?}", plan.actions.len());
    for action in &plan.actions {
        let edit = action.store_edit().unwrap();
        assert_ne!(edit.tool_name, "search");
        assert_ne!(edit.message_index, 23);
    }
    assert!(plan
        .actions
        .iter()
        .any(|a| a.strategy() == context_compactor::Strategy::Mask));
    assert_pins_survive(&messages, &out, "tiers 1 and 2");
    assert!(json_of(&out).contains(&serde_json::to_string(&messages[23]).unwrap()));
}

#[test]
fn pins_over_the_target_get_a_typed_note() {
    let mut values = session(6, 200, &[], "write_todos");
    values.insert(
        2,
        json!({"role": "user", "content": prose(5, 4_000), "providerOptions": {"contextCompactor": {"pin": true}}}),
    );
    let messages = parse_values(&values);
    let c = gpt4o(8_000, |_| {});
    let plan = c.plan(&messages).unwrap();
    let note = plan
        .notes
        .iter()
        .find_map(|n| match n {
            Note::PinnedOverBudget {
                pinned_tokens,
                target,
            } => Some((*pinned_tokens, *target)),
            _ => None,
        })
        .expect("a pinned-over-budget note");
    assert!(note.0 > note.1 && note.1 == plan.trigger.target, "{note:?}");
    let json = serde_json::to_value(&plan.notes).unwrap();
    assert!(json
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["type"] == "pinned-over-budget"
            && n["pinnedTokens"].as_u64() == Some(u64::from(note.0))));
    // The pinned message is still not touched by the lossy step.
    let mut c = gpt4o(8_000, |_| {});
    let (_, out, _) = run(&mut c, messages.clone(), Summarizer::Works, true);
    assert!(json_of(&out).contains(&serde_json::to_string(&messages[2]).unwrap()));
}

#[test]
fn config_names_the_plan_and_pinned_tools() {
    let c = Config::from_json(r#"{"history":{"planTools":["my_plan"],"pinnedTools":["search"]}}"#)
        .unwrap();
    assert_eq!(c.history.plan_tools, vec!["my_plan"]);
    assert_eq!(c.history.pinned_tools, vec!["search"]);
    assert!(Config::default()
        .history
        .plan_tools
        .iter()
        .any(|t| t == "write_todos"));
    // With the plan tools off, nothing is carried.
    let messages = parse_values(&session(14, 200, &[0], "write_todos"));
    let mut c = gpt4o(16_000, |c| c.history.plan_tools.clear());
    let (_, out, _) = run(&mut c, messages, Summarizer::Works, true);
    assert!(!texts(&out).contains("[Current plan"));
}
