//! Summaries made ahead of need (issue 32, `history.aheadFraction`): a plan for a host that runs
//! summaries in the background carries `ahead`, the span fixed when asked; while it is out the
//! lossy tier waits (a `summary-pending` note) until the hard limit; once the host hands the
//! text back, the plan at the trigger applies it over that span without asking the summarizer.

mod support;

use context_compactor::{Action, Call, Compactor, Message, Note, Plan, PlanOptions};
use serde_json::json;
use support::{gpt4o, parse_values, prose};

const WINDOW: u32 = 8_000;

fn background() -> PlanOptions {
    PlanOptions {
        background: true,
        ..PlanOptions::default()
    }
}

/// A chat of `turns` user turns, each answered at length.
fn chat(turns: usize) -> Vec<Message> {
    let mut values =
        vec![json!({"role": "system", "content": "You are a helpful research agent."})];
    for t in 0..turns {
        values.push(json!({"role": "user", "content": format!("Turn {t}: {}", prose(t, 60))}));
        values.push(
            json!({"role": "assistant", "content": format!("Answer {t}: {}", prose(t + 1, 120))}),
        );
    }
    parse_values(&values)
}

/// The first chat length whose plan asks a summary ahead, and that plan.
fn first_ahead(compactor: &Compactor) -> (usize, Plan) {
    (1..200)
        .find_map(|turns| {
            let plan = compactor
                .plan_with_options(&chat(turns), &background())
                .unwrap();
            plan.ahead.is_some().then_some((turns, plan))
        })
        .expect("a summary asked ahead")
}

/// Runs a session on `messages` for a host that makes summaries in the background; a
/// summarizer request fails the test unless `summarizer` allows it.
fn run(
    compactor: &mut Compactor,
    messages: Vec<Message>,
    summarizer: bool,
) -> (context_compactor::Managed, usize) {
    let call = Call {
        background: true,
        ..Call::default()
    };
    let text = summarizer.then_some("## Session Intent\nMade in the call");
    support::run_session(compactor, messages, call, text)
}

#[test]
fn the_summary_asked_ahead_is_applied_over_its_span_at_the_trigger() {
    let mut compactor = gpt4o(WINDOW, |_| {});
    let (turns, plan) = first_ahead(&compactor);
    let ahead = plan.ahead.clone().unwrap();
    let key = ahead.ahead_key.clone().expect("a key");
    assert!(plan.actions.is_empty(), "asking changes nothing now");
    assert!(plan.tokens_before > (WINDOW as f64 * 0.6) as u32);
    // Without a host that runs summaries in the background, nothing is asked.
    assert!(compactor.plan(&chat(turns)).unwrap().ahead.is_none());

    compactor.ask_ahead(&key, ahead.end);
    // Asked: not asked again; past the trigger the lossy tier waits for it.
    let mut waiting = None;
    for more in turns..turns + 40 {
        let plan = compactor
            .plan_with_options(&chat(more), &background())
            .unwrap();
        assert!(plan.ahead.is_none(), "asked once");
        if plan
            .notes
            .iter()
            .any(|n| matches!(n, Note::SummaryPending { .. }))
        {
            assert!(!plan
                .actions
                .iter()
                .any(|a| matches!(a, Action::Summarize(_))));
            assert!(plan.tokens_before <= plan.trigger.hard_limit);
            waiting = Some(more);
            break;
        }
    }
    let waiting = waiting.expect("a call past the trigger waited for the summary");

    // An empty text is a failed summary: the ask is forgotten, and that is a change to save.
    let mut emptied =
        Compactor::with_state(compactor.config().clone(), compactor.state().clone()).unwrap();
    assert!(emptied.offer_summary(&key, " \n".into()));
    assert!(emptied.state().ahead.is_none());
    // Back: applied over the span it was asked for, without asking the summarizer.
    assert!(!compactor.offer_summary("another key", "x".into()));
    assert!(compactor.offer_summary(&key, "## Session Intent\nMade ahead".into()));
    let (managed, asked) = run(&mut compactor, chat(waiting), false);
    assert_eq!(asked, 0);
    let summarize = managed
        .plan
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Summarize(s) => Some(s),
            _ => None,
        })
        .expect("a summary");
    assert_eq!(summarize.end, ahead.end);
    assert_eq!(summarize.ahead_key.as_deref(), Some(key.as_str()));
    assert!(managed.events.iter().all(|e| !e.blocking), "no call waited");
    let summary = support::summary_message(&managed);
    assert!(summary.text().contains("Made ahead"));
    // The messages after the span are the conversation's, unchanged.
    let input = chat(waiting);
    let after = &managed.messages[managed.messages.len() - (input.len() - ahead.end)..];
    assert_eq!(after, &input[ahead.end..]);
    assert!(compactor.state().ahead.is_none(), "used");
}

#[test]
fn past_the_hard_limit_a_call_summarizes_itself_and_a_changed_prefix_asks_again() {
    let mut compactor = gpt4o(WINDOW, |_| {});
    let (turns, plan) = first_ahead(&compactor);
    let ahead = plan.ahead.unwrap();
    compactor.ask_ahead(ahead.ahead_key.as_deref().unwrap(), ahead.end);
    // Never handed back: the first plan past the hard limit summarizes in the call.
    let over = (turns..turns + 80)
        .find(|&n| {
            let plan = compactor
                .plan_with_options(&chat(n), &background())
                .unwrap();
            plan.trigger.tier3
        })
        .expect("a lossy plan");
    let plan = compactor
        .plan_with_options(&chat(over), &background())
        .unwrap();
    assert!(plan.tokens_before > plan.trigger.hard_limit);
    let (managed, asked) = run(&mut compactor, chat(over), true);
    assert_eq!(asked, 1, "summarized in the call");
    assert!(
        managed
            .events
            .iter()
            .any(|e| e.strategy == context_compactor::Strategy::Summarize && e.blocking),
        "the event says the call waited"
    );
    assert!(managed.tokens_after < managed.tokens_before);

    // A conversation whose start changed no longer fits the span: asked again, another key.
    let mut fresh = gpt4o(WINDOW, |_| {});
    fresh.ask_ahead(ahead.ahead_key.as_deref().unwrap(), ahead.end);
    let mut edited = chat(turns);
    edited[1] = Message::user("Another first question.".into());
    let plan = fresh.plan_with_options(&edited, &background()).unwrap();
    let again = plan.ahead.expect("asked again");
    assert_ne!(again.ahead_key, ahead.ahead_key);
}

#[test]
fn ahead_fraction_null_turns_it_off_and_is_validated() {
    let compactor = gpt4o(WINDOW, |c| c.history.ahead_fraction = None);
    assert!((1..120).all(|turns| compactor
        .plan_with_options(&chat(turns), &background())
        .unwrap()
        .ahead
        .is_none()));
    let config = context_compactor::Config {
        history: context_compactor::HistoryConfig {
            ahead_fraction: Some(1.5),
            ..Default::default()
        },
        ..Default::default()
    };
    let error = Compactor::new(config).err().expect("refused");
    assert!(
        error.to_string().contains("history.aheadFraction"),
        "{error}"
    );
}
