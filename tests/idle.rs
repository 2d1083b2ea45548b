//! Idle-aware prefix breaks (issue 32, item 2): the state records when the last call went out,
//! the host hands in the time of each call (`PlanOptions::now`, the core never reads a clock),
//! and a call made after the provider's cache lifetime, when the whole prompt is written again
//! whatever the plan does, takes the edits a warm cache defers (tier 2 from its target up, every
//! edit it has; a summary made ahead and back). While the cache is warm nothing changes.

mod support;

use context_compactor::{Action, Call, Compactor, Config, Note, Plan, PlanOptions};
use serde_json::json;
use support::{agent_session, gpt4o, parse_values, prose};

const WINDOW: u32 = 16_000;
const T0: u64 = 1_767_600_000_000; // 2026-01-05, ms
const MINUTE: u64 = 60_000;

fn at(now: u64) -> PlanOptions {
    PlanOptions {
        now: Some(now),
        ..PlanOptions::default()
    }
}

/// The first agent session (read_file results tier 2 can mask) above `fraction` of the window.
fn session_above(compactor: &Compactor, fraction: f64) -> Vec<context_compactor::Message> {
    (1..200)
        .map(|turns| parse_values(&agent_session(turns, 120, |_, _| {})))
        .find(|m| compactor.plan(m).unwrap().tokens_before > (f64::from(WINDOW) * fraction) as u32)
        .expect("a long enough session")
}

fn masks(plan: &Plan) -> usize {
    plan.actions
        .iter()
        .filter(|a| a.store_edit().is_some())
        .count()
}

fn expired(plan: &Plan) -> Option<(u64, u32)> {
    plan.notes.iter().find_map(|n| match n {
        Note::CacheExpired {
            idle_seconds,
            lifetime_seconds,
        } => Some((*idle_seconds, *lifetime_seconds)),
        _ => None,
    })
}

#[test]
fn a_call_after_the_cache_expired_takes_the_deferred_edits_and_a_warm_one_changes_nothing() {
    let mut compactor = gpt4o(WINDOW, |_| {});
    // Between tier 2's target (35 %) and its trigger (70 %): a warm call does nothing.
    let messages = session_above(&compactor, 0.5);
    let plain = compactor.plan(&messages).unwrap();
    assert!(plain.tokens_before < (f64::from(WINDOW) * 0.7) as u32);
    assert_eq!(masks(&plain), 0, "under the trigger, nothing");

    // No last call yet: a time alone changes nothing.
    assert_eq!(
        compactor.plan_with_options(&messages, &at(T0)).unwrap(),
        plain
    );
    compactor.called_at(T0);
    // Within gpt-4o's lifetime (10 minutes): the same plan as without a time.
    let warm = compactor
        .plan_with_options(&messages, &at(T0 + 9 * MINUTE))
        .unwrap();
    assert_eq!(warm, plain);

    // The time is kept to the minute: eleven minutes may be ten and a bit since the last call.
    assert_eq!(
        compactor
            .plan_with_options(&messages, &at(T0 + 11 * MINUTE))
            .unwrap(),
        plain
    );
    // Twelve minutes later the cache has expired: tier 2 takes its edits, for nothing.
    let cold = compactor
        .plan_with_options(&messages, &at(T0 + 12 * MINUTE))
        .unwrap();
    assert_eq!(expired(&cold), Some((720, 600)));
    assert!(masks(&cold) > 0, "the deferred masks are taken");
    assert!(cold.trigger.tier2 && !cold.trigger.tier3);
    assert!(cold.tokens_after < plain.tokens_after);
    // The edits are the ones tier 2 takes once it fires (here with its trigger lowered to
    // fire now, the lossy tier off): deferred, not invented.
    let fired = gpt4o(WINDOW, |c| {
        c.compaction.trigger_fraction = 0.4;
        c.history.strategy = context_compactor::HistoryStrategy::Off;
    })
    .plan(&messages)
    .unwrap();
    assert!(fired.trigger.tier2 && masks(&fired) > 0);
    let paths = |p: &Plan| -> Vec<String> {
        p.actions
            .iter()
            .filter_map(|a| a.store_edit().map(|e| e.path.clone()))
            .collect()
    };
    assert!(paths(&fired).iter().all(|p| paths(&cold).contains(p)));
    assert_eq!(cold.cache.break_cost, 0, "the break costs nothing");
    assert!(cold.cache.tokens_invalidated > 0);
    assert!(
        !cold
            .actions
            .iter()
            .any(|a| matches!(a, Action::Summarize(_))),
        "a cold call makes no summary of its own"
    );
}

#[test]
fn below_the_target_without_a_cache_or_with_a_longer_lifetime_nothing_changes() {
    // Under tier 2's target: nothing to take.
    let mut compactor = gpt4o(WINDOW, |_| {});
    let short = session_above(&compactor, 0.1);
    compactor.called_at(T0);
    let plan = compactor
        .plan_with_options(&short, &at(T0 + 120 * MINUTE))
        .unwrap();
    assert_eq!(masks(&plan), 0);

    // A provider without a prompt cache: there is nothing to expire.
    let mut none = gpt4o(WINDOW, |c| {
        c.cache.provider = Some(context_compactor::CacheProvider::None)
    });
    let messages = session_above(&none, 0.5);
    none.called_at(T0);
    let plan = none
        .plan_with_options(&messages, &at(T0 + 120 * MINUTE))
        .unwrap();
    assert!(expired(&plan).is_none() && masks(&plan) == 0);

    // A retention the app asked for (a day): two hours is warm.
    let mut day = gpt4o(WINDOW, |c| c.cache.lifetime_seconds = Some(86_400));
    day.called_at(T0);
    let plan = day
        .plan_with_options(&messages, &at(T0 + 120 * MINUTE))
        .unwrap();
    assert!(expired(&plan).is_none() && masks(&plan) == 0);

    // Anthropic's one-hour cache (`ttl: "1h"`): 61 minutes is warm, 62 cold.
    let claude = |ttl: &str| {
        let config: Config = serde_json::from_value(json!({
            "model": "claude-sonnet-4-5", "contextWindow": WINDOW, "cache": {"ttl": ttl}
        }))
        .unwrap();
        let mut c = Compactor::new(config).unwrap();
        c.called_at(T0);
        c
    };
    let hour = claude("1h");
    assert!(expired(
        &hour
            .plan_with_options(&messages, &at(T0 + 61 * MINUTE))
            .unwrap()
    )
    .is_none());
    let plan = hour
        .plan_with_options(&messages, &at(T0 + 62 * MINUTE))
        .unwrap();
    assert_eq!(expired(&plan), Some((3_720, 3_600)));
    assert!(masks(&plan) > 0);
    // Its default five minutes: seven minutes is cold.
    let five = claude("5m");
    assert_eq!(
        expired(
            &five
                .plan_with_options(&messages, &at(T0 + 7 * MINUTE))
                .unwrap()
        ),
        Some((420, 300))
    );
}

/// Runs a `manage` session at `now` (writes land, a summary request is answered) and records
/// the time, as a host does when the call is done.
fn manage(
    compactor: &mut Compactor,
    messages: Vec<context_compactor::Message>,
    now: u64,
) -> (context_compactor::Managed, usize) {
    let call = Call {
        background: true,
        now: Some(now),
        ..Call::default()
    };
    let done = support::run_session(
        compactor,
        messages,
        call,
        Some("## Session Intent\nMade in the call"),
    );
    compactor.called_at(now);
    done
}

/// A chat of `turns` user turns, each answered at length (no tool results: only a summary
/// can make room).
fn chat(turns: usize) -> Vec<context_compactor::Message> {
    let mut values = vec![json!({"role": "system", "content": "You are a research agent."})];
    for t in 0..turns {
        values.push(json!({"role": "user", "content": format!("Turn {t}: {}", prose(t, 60))}));
        values.push(
            json!({"role": "assistant", "content": format!("Answer {t}: {}", prose(t + 1, 120))}),
        );
    }
    parse_values(&values)
}

#[test]
fn the_time_is_kept_to_the_minute_and_only_with_a_cache() {
    let mut compactor = gpt4o(WINDOW, |_| {});
    assert!(compactor.called_at(T0), "the first time is recorded");
    assert!(
        !compactor.called_at(T0 + 59_000),
        "within a minute: kept as it was"
    );
    assert_eq!(compactor.state().last_call_at, Some(T0));
    assert!(compactor.called_at(T0 + MINUTE));
    assert_eq!(compactor.state().last_call_at, Some(T0 + MINUTE));
    // A clock a minute behind (another instance): recorded too.
    assert!(compactor.called_at(T0));
    let mut none = gpt4o(WINDOW, |c| {
        c.cache.provider = Some(context_compactor::CacheProvider::None)
    });
    assert!(!none.called_at(T0), "no cache: nothing to record");
    assert_eq!(none.state().last_call_at, None);
}

#[test]
fn a_call_records_its_time_and_a_cold_call_applies_a_summary_made_ahead() {
    let mut compactor = gpt4o(WINDOW, |_| {});
    let background = |now| PlanOptions {
        background: true,
        now: Some(now),
        ..PlanOptions::default()
    };
    // The first chat whose plan asks a summary ahead (above 60 %, under the 85 % trigger).
    let (turns, plan) = (1..300)
        .find_map(|t| {
            let plan = compactor
                .plan_with_options(&chat(t), &background(T0))
                .unwrap();
            plan.ahead.is_some().then_some((t, plan))
        })
        .expect("a summary asked ahead");
    let ahead = plan.ahead.unwrap();
    let (managed, asked) = manage(&mut compactor, chat(turns), T0);
    assert_eq!(asked, 0);
    assert_eq!(managed.messages, chat(turns));
    assert_eq!(
        compactor.state().last_call_at,
        Some(T0),
        "the call's time is recorded"
    );
    compactor.ask_ahead(ahead.ahead_key.as_deref().unwrap(), ahead.end);
    assert!(compactor.offer_summary(
        ahead.ahead_key.as_deref().unwrap(),
        "## Session Intent\nMade ahead".into()
    ));

    // Back, and the cache warm: still under the trigger, it waits.
    let next = chat(turns + 1);
    let warm = compactor
        .plan_with_options(&next, &background(T0 + MINUTE))
        .unwrap();
    assert!(
        !warm.trigger.tier3,
        "warm and under the trigger: kept for the trigger"
    );
    // The user came back after an hour: applied now, over its span, without asking.
    let (managed, asked) = manage(&mut compactor, next.clone(), T0 + 61 * MINUTE);
    assert_eq!(asked, 0);
    assert!(expired(&managed.plan).is_some());
    let summary = support::summary_message(&managed);
    assert!(summary.text().contains("Made ahead"));
    assert!(managed.tokens_after < managed.tokens_before);
    assert!(managed.events.iter().all(|e| !e.blocking));
    let after = &managed.messages[managed.messages.len() - (next.len() - ahead.end)..];
    assert_eq!(
        after,
        &next[ahead.end..],
        "the messages after the span are unchanged"
    );
    assert_eq!(compactor.state().last_call_at, Some(T0 + 61 * MINUTE));
    // The state carries the time across a save and load (a stateless host's next request).
    let saved = serde_json::to_string(compactor.state()).unwrap();
    assert!(saved.contains(&format!("\"lastCallAt\":{}", T0 + 61 * MINUTE)));
}
