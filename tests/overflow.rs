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
