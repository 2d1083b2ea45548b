//! Recovery from a provider's "prompt too long" error, natively: `Compactor::plan_overflow`
//! plans as if the conversation were at the provider's count and always compacts below the
//! target; the host's retry then fits where the first call did not.

mod support;

use context_compactor::{parse_messages, Compactor, Config, Message, Note, Overflow, PlanOptions};
use serde_json::{json, Value};
use support::{execute, Faults, Store};

fn prose(seed: usize, words: usize) -> String {
    const W: [&str; 6] = ["window", "budget", "cache", "parser", "summary", "tool"];
    (0..words)
        .map(|i| format!("{} {seed}.{i}", W[(i * 5 + seed) % 6]))
        .collect::<Vec<_>>()
        .join(" ")
}

/// system, then `turns` × (user, assistant tool call, tool result, assistant text).
fn session(turns: usize, words: usize) -> Vec<Message> {
    let mut out = vec![json!({"role": "system", "content": "You are a coding agent."})];
    for t in 0..turns {
        let id = format!("call_{t}");
        out.push(json!({"role": "user", "content": format!("Step {t}: {}", prose(t, words / 4))}));
        out.push(json!({"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": id, "toolName": "read_file", "input": {"path": format!("/src/m{t}.rs")}}]}));
        out.push(json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": id, "toolName": "read_file", "output": {"type": "text", "value": prose(t + 1, words)}}]}));
        out.push(json!({"role": "assistant", "content": [{"type": "text", "text": prose(t + 2, words / 2)}]}));
    }
    parse_messages(&Value::Array(out).to_string()).unwrap()
}

fn compactor(window: u32) -> Compactor {
    Compactor::new(Config {
        model: Some("claude-sonnet-4-5".into()),
        context_window: Some(window),
        ..Config::default()
    })
    .unwrap()
}

#[test]
fn a_reported_overflow_compacts_below_the_providers_limit_where_a_normal_plan_does_nothing() {
    let mut c = compactor(32_000);
    let messages = session(10, 180);
    let ours = c.count(&messages);
    // Under every trigger by our count (tier 2 at 70 % of 32,000): a normal plan does nothing.
    assert!(ours < 22_400, "fixture under the trigger: {ours}");
    assert!(c.plan(&messages).unwrap().is_empty());

    // The provider counted 70 % more and refused it (a closed family's factor too low).
    let reported = ours * 17 / 10;
    assert!(
        reported > 32_000,
        "the provider's count is over its window: {reported}"
    );
    let plan = c.plan_overflow(&messages, Some(reported)).unwrap();
    assert!(!plan.actions.is_empty(), "an overflow plan always compacts");
    assert!(plan.trigger.tier2);
    let budget = plan
        .notes
        .iter()
        .find_map(|n| match n {
            Note::Overflow {
                reported_tokens,
                counted_tokens,
                budget_window,
                ..
            } => {
                assert_eq!(*reported_tokens, Some(reported));
                assert_eq!(*counted_tokens, ours);
                Some(*budget_window)
            }
            _ => None,
        })
        .expect("an overflow note");
    // Every threshold is scaled down by our count over the provider's.
    assert_eq!(
        budget,
        (32_000f64 * f64::from(ours) / f64::from(reported)) as u32
    );
    assert!(plan.trigger.target < (f64::from(budget) * 0.71) as u32);
    assert!(
        plan.tokens_after <= plan.trigger.target,
        "{} > {}",
        plan.tokens_after,
        plan.trigger.target
    );

    // Applied, the conversation is below the target; in the provider's tokens, below its limit.
    let raw = c.count_raw(&messages);
    let mut store = Store::new();
    let outcomes = execute(&plan, &mut store, &Faults::None);
    let applied = c.apply(messages, &plan, &outcomes).unwrap();
    assert!(applied.tokens_after <= plan.trigger.target);
    assert!(u64::from(applied.tokens_after) * u64::from(reported) / u64::from(ours) < 32_000);

    // The host feeds the provider's count to calibration: later plans count like the provider.
    c.observe_usage(raw, reported);
    let calibrated = c.count(&session(10, 180));
    assert!(
        calibrated.abs_diff(reported) <= reported / 100,
        "{calibrated} vs {reported}"
    );
}

#[test]
fn without_a_count_the_plan_still_compacts_and_is_deterministic() {
    let c = compactor(32_000);
    let messages = session(12, 180);
    let a = c.plan_overflow(&messages, None).unwrap();
    let b = c.plan_overflow(&messages, None).unwrap();
    assert_eq!(a, b);
    assert!(!a.actions.is_empty());
    assert!(a.tokens_after < c.count(&messages));
}

#[test]
fn the_providers_limit_below_our_window_is_the_budget() {
    // A local server with a 4,096-token context behind a model the registry gives 32k.
    let c = compactor(32_000);
    let messages = session(4, 400);
    let ours = c.count(&messages);
    let options = PlanOptions {
        overflow: Some(Overflow {
            reported_tokens: Some(ours),
            limit: Some(4_096),
        }),
        ..PlanOptions::default()
    };
    let plan = c.plan_with_options(&messages, &options).unwrap();
    assert!(
        plan.tokens_after <= (4_096f64 * 0.7) as u32 + 1,
        "{}",
        plan.tokens_after
    );
    // Options arrive from JSON as hosts send them.
    let from_json: PlanOptions =
        serde_json::from_value(json!({"overflow": {"reportedTokens": ours, "limit": 4096}}))
            .unwrap();
    assert_eq!(from_json, options);
}

#[test]
fn budget_window_is_never_above_the_window_or_our_count() {
    let o = |r: Option<u32>, l: Option<u32>| Overflow {
        reported_tokens: r,
        limit: l,
    };
    assert_eq!(
        o(Some(200_000), None).budget_window(100_000, 150_000),
        75_000
    );
    assert_eq!(o(None, None).budget_window(100_000, 150_000), 100_000);
    assert!(o(None, None).budget_window(100_000, 50_000) <= 50_000);
    assert_eq!(
        o(Some(5_000), Some(4_096)).budget_window(128_000, 5_000),
        4_096
    );
    assert_eq!(o(Some(0), Some(0)).budget_window(100, 0), 1);
}

/// A blocking host with an in-memory store (its conditional write the default: read, compare,
/// write) and no summarizer (the heuristic summary).
#[derive(Default)]
struct App {
    files: std::collections::BTreeMap<String, String>,
}

impl context_compactor::Host for App {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        self.files.insert(path.to_owned(), content.to_owned());
        Ok(())
    }
    fn read(&mut self, path: &str) -> Result<Option<String>, String> {
        Ok(self.files.get(path).cloned())
    }
    fn summarize(&mut self, _: &context_compactor::Summarize) -> Result<String, String> {
        Err("no summarizer".into())
    }
}

#[test]
fn recover_is_a_call_of_the_core_natively_too() {
    use context_compactor::{parse_overflow, Error, OverflowReport};
    let messages = session(10, 180);
    let mut c = compactor(32_000);
    let ours = c.count(&messages);
    let raw = c.count_raw(&messages);
    let reported = ours * 17 / 10;
    // The provider's own words, read by the core's table.
    let text = format!("prompt is too long: {reported} tokens > 32000 maximum");
    let said = parse_overflow(&[text], Some(400)).expect("an overflow");
    let report = OverflowReport::from(&said);
    assert_eq!(report.reported_tokens, Some(reported));
    let mut app = App::default();
    let managed = c.recover(messages.clone(), &report, 1, &mut app).unwrap();
    // Compacted harder than manage would (which does nothing here), every event stamped.
    assert!(!managed.events.is_empty());
    assert!(
        managed.tokens_after < ours,
        "{} < {ours}",
        managed.tokens_after
    );
    for event in &managed.events {
        let stamp = event.overflow.as_ref().expect("stamped");
        assert_eq!(
            (
                stamp.provider.as_str(),
                stamp.reported_tokens,
                stamp.attempt
            ),
            ("anthropic", Some(reported), 1)
        );
    }
    assert!(
        !app.files.is_empty(),
        "what left the conversation is stored"
    );
    // The provider's count calibrated before the plan: the compactor counts like the provider.
    let calibration = c.state().calibration.clone().expect("calibrated");
    assert_eq!(calibration.samples, 1);
    assert!(c.count(&messages).abs_diff(reported) <= reported / 100);
    assert!(raw > 0);

    // One short message, kept in a store: nothing to compact, the typed error, and the state
    // (its new calibration) saved first.
    let config =
        Config::from_json(r#"{"model":"claude-sonnet-4-5","contextWindow":8000}"#).unwrap();
    let mut app = App::default();
    let mut kept = Compactor::load(config, "/state.json", &mut app).unwrap();
    let short = parse_messages(r#"[{"role":"user","content":"hi there"}]"#).unwrap();
    // The provider's count, twice ours: a calibration sample the state keeps.
    let reported = kept.count_raw(&short) * 2;
    let text = format!("prompt is too long: {reported} tokens > 8000 maximum");
    let said = parse_overflow(&[text], None).expect("an overflow");
    let error = kept
        .recover(short, &OverflowReport::from(&said), 2, &mut app)
        .unwrap_err();
    match &error {
        Error::ContextOverflow {
            message, attempts, ..
        } => {
            assert!(
                message.ends_with("and nothing is left to compact"),
                "{message}"
            );
            assert_eq!(*attempts, 2);
        }
        other => panic!("{other:?}"),
    }
    let stored: Value = serde_json::from_str(&app.files["/state.json"]).unwrap();
    assert!(stored.to_string().contains("calibration"), "{stored}");
}

/// A store whose every write fails.
struct Down;

impl context_compactor::Host for Down {
    fn write(&mut self, _: &str, _: &str) -> Result<(), String> {
        Err("connection refused".into())
    }
    fn read(&mut self, _: &str) -> Result<Option<String>, String> {
        Ok(None)
    }
    fn summarize(&mut self, _: &context_compactor::Summarize) -> Result<String, String> {
        Err("no summarizer".into())
    }
}

#[test]
fn a_recovery_whose_store_failed_says_so_not_that_nothing_is_left() {
    use context_compactor::{parse_overflow, Error, OverflowReport};
    let messages = session(10, 180);
    let mut c = compactor(32_000);
    let reported = c.count(&messages) * 17 / 10;
    let said = parse_overflow(
        &[format!(
            "prompt is too long: {reported} tokens > 32000 maximum"
        )],
        Some(400),
    )
    .expect("an overflow");
    match c
        .recover(messages, &OverflowReport::from(&said), 1, &mut Down)
        .unwrap_err()
    {
        Error::ContextOverflow { message, .. } => {
            assert!(
                message.contains("would have shortened it failed (")
                    && message.contains("connection refused"),
                "{message}"
            );
            assert!(!message.contains("nothing is left"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

/// Calls `from..to` of a lookup tool, each result about 1,500 tokens, as JSON messages.
fn lookups(from: usize, to: usize) -> Vec<Value> {
    let mut values = Vec::new();
    for i in from..to {
        let id = format!("c{i}");
        let output: String = (0..60)
            .map(|j| format!("{i}:{j} lorem ipsum dolor sit amet lorem ipsum dolor sit amet\n"))
            .collect();
        values.push(json!({"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": id, "toolName": "lookup", "input": {"i": i}}]}));
        values.push(json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": id, "toolName": "lookup", "output": {"type": "text", "value": output}}]}));
    }
    values
}

/// A host that hands back an earlier call's compacted conversation (LangChain's agent state,
/// which the middleware's `before_model` updates) while a recovery's prompt goes only to the
/// model: the recovery's summary, over results an earlier call masked, replays onto that
/// compacted conversation. It did not (the masks' edits left the record with the span), and a
/// Python user's agent was refused again at the next step and summarized twice.
#[test]
fn a_recoverys_summary_over_masked_results_replays_onto_the_compacted_history() {
    use context_compactor::{parse_overflow, OverflowReport, State};
    // An agent's lookups of about 1,500 tokens each, one after another.
    let mut values = vec![json!({"role": "user", "content": "Look them all up."})];
    values.extend(lookups(0, 24));
    let raw = parse_messages(&Value::Array(values).to_string()).unwrap();
    // The state the host keeps: the compacted conversation (masks, no summary), in a window
    // where tier 2 masks results and nothing is summarized.
    let (config, mut c, kept, mut app) = (16_000..120_000)
        .step_by(2_000)
        .find_map(|window| {
            let config = Config {
                model: Some("claude-sonnet-4-5".into()),
                context_window: Some(window),
                ..Config::default()
            };
            let mut c = Compactor::new(config.clone()).unwrap();
            let mut app = App::default();
            let compacted = c.manage(raw.clone(), &mut app).unwrap();
            let record = &c.state().record;
            let masked = record.edits.len() > 1 && record.spans.is_empty();
            masked.then_some((config, c, compacted.messages, app))
        })
        .expect("a window where tier 2 masks and nothing is summarized");
    let ours = c.count(&kept);
    let text = format!("prompt is too long: {} tokens > 24000 maximum", ours * 2);
    let report = OverflowReport::from(&parse_overflow(&[text], Some(400)).unwrap());
    let recovered = c.recover(kept.clone(), &report, 1, &mut app).unwrap();
    assert!(recovered
        .events
        .iter()
        .any(|e| e.strategy == context_compactor::Strategy::Summarize));
    // The next call gets the host's state (the compacted conversation): a long-lived compactor
    // and one built from the saved state both replay the summary onto it.
    let state = State::from_json(&c.state_json()).unwrap();
    let mut fresh = Compactor::with_state(config, state).unwrap();
    for (who, plan) in [
        ("long-lived", c.plan(&kept).unwrap()),
        ("from the state", fresh.plan(&kept).unwrap()),
    ] {
        assert_eq!(plan.replayed.spans, 1, "{who}");
        assert_eq!(plan.tokens_before, recovered.tokens_after, "{who}");
    }
}

/// The same host with a summary already in its state (the middleware's earlier compaction): a
/// recovery's summary rolls it up (its span absorbs the earlier one), and still replays onto
/// the state that holds the earlier summary.
#[test]
fn a_recoverys_rolling_summary_replays_onto_a_history_holding_the_summary_it_rolled_up() {
    use context_compactor::{parse_overflow, OverflowReport, State};
    let config = Config {
        model: Some("gpt-4o".into()),
        context_window: Some(32_000),
        ..Config::default()
    };
    let mut c = Compactor::new(config.clone()).unwrap();
    let mut app = App::default();
    let mut values = vec![json!({"role": "user", "content": "Look them all up."})];
    values.extend(lookups(0, 24));
    let raw = parse_messages(&Value::Array(values).to_string()).unwrap();
    // The host's state after a compaction that summarized.
    let state = c.compact(raw, None, &mut app).unwrap().messages;
    assert_eq!(c.state().record.spans.len(), 1);
    let grown: Vec<Message> = state
        .into_iter()
        .chain(parse_messages(&Value::Array(lookups(24, 40)).to_string()).unwrap())
        .collect();
    let ours = c.count(&grown);
    let text = format!("prompt is too long: {} tokens > 32000 maximum", ours * 3);
    let report = OverflowReport::from(&parse_overflow(&[text], Some(400)).unwrap());
    let recovered = c.recover(grown.clone(), &report, 1, &mut app).unwrap();
    let record = &c.state().record;
    assert_eq!(
        record.spans.len(),
        1,
        "the recovery's summary rolled the first one up"
    );
    assert!(!record.spans[0].rolls.is_empty());
    let state = State::from_json(&c.state_json()).unwrap();
    let mut fresh = Compactor::with_state(config, state).unwrap();
    for (who, plan) in [
        ("long-lived", c.plan(&grown).unwrap()),
        ("from the state", fresh.plan(&grown).unwrap()),
    ] {
        assert_eq!(plan.replayed.spans, 1, "{who}");
        assert_eq!(plan.tokens_before, recovered.tokens_after, "{who}");
    }
}
