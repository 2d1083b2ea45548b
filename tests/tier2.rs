//! Tier 2: reversible edits at 85 % of the window, down to the 70 % target, store first.

use std::collections::HashMap;

use context_compactor::{
    parse_messages, Action, Compactor, Config, Message, Note, Outcome, Part, Strategy, ToolOutput,
};
use serde_json::{json, Value};

fn lines(seed: &str, n: usize) -> String {
    (0..n)
        .map(|i| format!("{seed} {i}: let x{i} = compute({});\n", (i * 7919) % 10_007))
        .collect()
}

struct Session(Vec<Value>, usize);

impl Session {
    fn new() -> Self {
        Session(
            vec![
                json!({"role": "system", "content": "coding agent"}),
                json!({"role": "user", "content": "fix the bug"}),
            ],
            0,
        )
    }
    fn call(&mut self, tool: &str, input: Value, output: &str) -> &mut Self {
        self.1 += 1;
        let id = format!("c{}", self.1);
        self.0.push(json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": id, "toolName": tool, "input": input}]}));
        self.0.push(json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": id, "toolName": tool, "output": {"type": "text", "value": output}}]}));
        self
    }
    fn say(&mut self, text: &str) -> &mut Self {
        self.0.push(json!({"role": "user", "content": text}));
        self
    }
    fn messages(&self) -> Vec<Message> {
        parse_messages(&Value::Array(self.0.clone()).to_string()).unwrap()
    }
}

/// Tier 2 alone: the lossy tier is off here (tests/tier3.rs covers it).
fn compactor(window: u32) -> Compactor {
    let mut config = Config {
        model: Some("gpt-4o".into()),
        context_window: Some(window),
        ..Config::default()
    };
    config.history.strategy = context_compactor::HistoryStrategy::Off;
    // Tier 2 alone: long user texts stay (tier 1 would offload them).
    config.offload.user_threshold_tokens = 0;
    Compactor::new(config).unwrap()
}

/// Executes every write in a map and applies.
fn drive(
    c: &mut Compactor,
    messages: Vec<Message>,
    manual: bool,
) -> (
    Vec<Message>,
    HashMap<String, String>,
    context_compactor::Plan,
) {
    let plan = if manual {
        c.plan_manual(&messages).unwrap()
    } else {
        c.plan(&messages).unwrap()
    };
    let mut store = HashMap::new();
    let outcomes: Vec<Outcome> = plan
        .actions
        .iter()
        .map(|a| {
            for (p, t) in a.writes() {
                store.insert(p.to_owned(), t.to_owned());
            }
            Outcome::Written {
                id: a.id().to_owned(),
            }
        })
        .collect();
    let applied = c.apply(messages, &plan, &outcomes).unwrap();
    (applied.messages, store, plan)
}

/// A coding session of ~13.7k tokens: file reads (one file read twice), a big write, a big edit,
/// test runs, all under the 20k offload threshold.
fn coding_session() -> Session {
    let mut s = Session::new();
    s.call(
        "read_file",
        json!({"path": "src/lib.rs"}),
        &lines("lib", 150),
    )
    .call(
        "read_file",
        json!({"path": "src/main.rs"}),
        &lines("main", 100),
    )
    .call(
        "write_file",
        json!({"path": "src/new.rs", "content": lines("new", 120)}),
        "ok",
    )
    .call("run_tests", json!({}), &lines("test", 120))
    .call(
        "edit_file",
        json!({"path": "src/lib.rs", "old_text": "a", "new_text": lines("edit", 80)}),
        "ok",
    )
    .call(
        "read_file",
        json!({"path": "src/lib.rs"}),
        &lines("lib2", 150),
    )
    .say("keep going");
    s
}

#[test]
fn below_the_trigger_tier_2_does_nothing() {
    let messages = coding_session().messages();
    let c = compactor(100_000);
    let plan = c.plan(&messages).unwrap();
    assert!(plan.is_empty() && !plan.trigger.tier2, "{plan:?}");
}

#[test]
fn over_the_trigger_it_evicts_dedupes_and_masks_down_to_the_target_storing_everything() {
    let messages = coding_session().messages();
    // A 55 % target: evictions alone (~3k tokens) are not enough, so the dedupe is needed too.
    let mut config = Config {
        model: Some("gpt-4o".into()),
        context_window: Some(11_000),
        ..Config::default()
    };
    config.compaction.target_fraction = 0.55;
    let mut c = Compactor::new(config).unwrap();
    let before = c.count(&messages);
    assert!(
        before > 9_350 && before < 11_000,
        "fixture drifted: {before} tokens"
    ); // > 85 % of 11k
    let original = messages.clone();
    let (after, store, plan) = drive(&mut c, messages, false);
    let kinds: Vec<Strategy> = plan.actions.iter().map(Action::strategy).collect();
    assert!(kinds.contains(&Strategy::EvictInput), "{kinds:?}");
    assert!(kinds.contains(&Strategy::Dedupe), "{kinds:?}");
    assert!(
        plan.trigger.tier2 && plan.tokens_after <= plan.trigger.target,
        "{:?} {:?}",
        plan.trigger,
        plan.notes
    );
    assert_eq!(c.count(&after), plan.tokens_after, "prediction is exact");
    // Evictions come before dedupes, dedupes before masks; each set oldest first.
    let order: Vec<usize> = kinds.iter().map(|k| *k as usize).collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{kinds:?}");
    // Nothing lost: every edited piece is in the store, and its path is in the new text.
    for action in &plan.actions {
        let edit = action.store_edit().unwrap();
        assert_eq!(store[&edit.path], edit.content);
        assert!(serde_json::to_string(&after[edit.message_index])
            .unwrap()
            .contains(&edit.path));
    }
    // The stale read of src/lib.rs became a pointer; the newest read stays verbatim.
    let stale = text_of(&after[3]);
    assert!(
        stale.starts_with("[Previously read: src/lib.rs."),
        "{stale}"
    );
    assert_eq!(text_of(&after[13]), text_of(&original[13]));
    // The write's content argument is a pointer with a 100-character preview.
    let Part::ToolCall(call) = &after[6].parts()[0] else {
        panic!()
    };
    let pointer = call.input["content"].as_str().unwrap();
    assert!(
        pointer.starts_with("[Content written to src/new.rs (")
            && pointer.contains(&lines("new", 120)[..100]),
        "{pointer}"
    );
    assert_eq!(call.input["path"], "src/new.rs", "other arguments stay");
    // Hysteresis: the next turn does not fire again.
    let mut next = after.clone();
    next.push(
        parse_messages(r#"[{"role":"user","content":"and now?"}]"#)
            .unwrap()
            .remove(0),
    );
    assert!(c.plan(&next).unwrap().is_empty());
}

#[test]
fn cache_impact_is_reported() {
    let messages = coding_session().messages();
    let c = compactor(11_000);
    let plan = c.plan(&messages).unwrap();
    let first = plan
        .actions
        .iter()
        .map(|a| a.store_edit().unwrap().message_index)
        .min()
        .unwrap();
    assert_eq!(plan.cache.first_changed_message, Some(first));
    assert_eq!(
        plan.cache.prefix_changing_edits as usize,
        plan.actions.len()
    );
    assert_eq!(
        plan.cache.tokens_invalidated,
        c.count(&messages[first..]) - 3,
        "everything from the first edit on, without priming"
    );
}

#[test]
fn recent_results_small_edits_and_in_flight_calls_are_left_alone() {
    let mut s = Session::new();
    for i in 0..12 {
        s.call(
            "run_tests",
            json!({"run": i}),
            &lines(&format!("run{i}"), 60),
        );
    }
    s.call("run_tests", json!({}), "tiny");
    // An in-flight write as the last message: its input must stay, whatever its size.
    s.0.push(json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "live", "toolName": "write_file", "input": {"path": "a.rs", "content": lines("live", 200)}}]}));
    let messages = s.messages();
    // The share of the window kept for recent results: half the window holds the last 10 here.
    let mut config = Config {
        model: Some("gpt-4o".into()),
        context_window: Some(20_000),
        ..Config::default()
    };
    config.history.strategy = context_compactor::HistoryStrategy::Off;
    config.compaction.keep_tool_results_fraction = 0.5;
    let mut c = Compactor::new(config.clone()).unwrap();
    let (after, _, plan) = drive(&mut c, messages.clone(), true);
    assert!(
        plan.actions.iter().all(|a| a.strategy() == Strategy::Mask),
        "{plan:?}"
    );
    let masked: Vec<usize> = plan
        .actions
        .iter()
        .map(|a| a.store_edit().unwrap().message_index)
        .collect();
    // 13 results; the last 10 are kept, the "tiny" one is below the minimum saving anyway.
    assert_eq!(masked, vec![3, 5, 7]);
    // With the default share (a quarter of the window), fewer of the last 10 fit: the older of
    // them may be masked too; the newest results stay.
    config.compaction.keep_tool_results_fraction = 0.25;
    let plan = Compactor::new(config)
        .unwrap()
        .plan_manual(&messages)
        .unwrap();
    let masked: Vec<usize> = plan
        .actions
        .iter()
        .map(|a| a.store_edit().unwrap().message_index)
        .collect();
    assert!(
        masked.len() > 3 && masked.starts_with(&[3, 5, 7]),
        "{masked:?} {:?} {:?}",
        plan.trigger,
        plan.notes
    );
    assert!(
        masked.iter().all(|&m| m < 21),
        "the newest results stay: {masked:?}"
    );
    assert_eq!(after.last(), messages.last());
    for m in 9..after.len() {
        assert_eq!(
            after[m], messages[m],
            "message {m} is recent and must stay verbatim"
        );
    }
}

#[test]
fn when_reversible_edits_cannot_reach_the_target_the_plan_says_why() {
    let mut s = Session::new();
    s.say(&lines("chat", 500));
    let messages = s.messages();
    let plan = compactor(6_000).plan(&messages).unwrap();
    assert!(
        plan.notes
            .iter()
            .any(|n| matches!(n, Note::TargetNotMet { .. })),
        "{plan:?}"
    );
    assert!(
        plan.notes
            .iter()
            .any(|n| matches!(n, Note::OverBudget { .. })),
        "{plan:?}"
    );
}

fn text_of(message: &Message) -> String {
    match &message.parts()[0] {
        Part::ToolResult(r) => match &r.output {
            ToolOutput::Text { value, .. } => value.clone(),
            other => other.text(),
        },
        other => panic!("{other:?}"),
    }
}

/// Found by the property tests: a stale read that tier 1 had offloaded in an earlier plan was
/// deduped on the next one (a pointer to a pointer, and new work on an already compacted
/// conversation).
#[test]
fn an_offloaded_stale_read_is_not_deduped_on_the_next_plan() {
    // Wide lines: the offload preview (13 lines) is itself over the 500-token minimum saving.
    let wide: String = (0..400)
        .map(|i| {
            format!(
                "{i} {}\n",
                "fn handler(request: Request) -> Response { budget.check(); } ".repeat(3)
            )
        })
        .collect();
    let mut s = Session::new();
    s.call("read_file", json!({"path": "src/lib.rs"}), &wide)
        .call(
            "read_file",
            json!({"path": "src/lib.rs"}),
            &lines("lib2", 60),
        )
        .say(&lines("chat", 420));
    let mut config = Config {
        model: Some("gpt-4o".into()),
        context_window: Some(8_000),
        ..Config::default()
    };
    config.offload.excluded_tools.clear(); // let tier 1 offload the first read
    config.history.strategy = context_compactor::HistoryStrategy::Off;
    let mut c = Compactor::new(config).unwrap();
    let (after, _, plan) = drive(&mut c, s.messages(), false);
    assert!(
        plan.actions
            .iter()
            .any(|a| a.strategy() == Strategy::Offload),
        "{:?}",
        plan.actions
    );
    let again = c.plan(&after).unwrap();
    assert!(again.is_empty(), "{:?}", again.actions);
}
