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

/// The first chat length whose plan (in the call, no background) summarizes.
fn first_lossy(compactor: &Compactor) -> usize {
    (1..200)
        .find(|&n| {
            let plan = compactor.plan(&chat(n)).unwrap();
            plan.actions
                .iter()
                .any(|a| matches!(a, Action::Summarize(_)))
        })
        .expect("a lossy plan")
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

/// A tool-using chat of `turns` turns: each a question, a tool call, its result (under the
/// offload threshold: tier 2's to mask once older than the last `keepToolResults`) and an answer.
fn tool_chat(turns: usize) -> Vec<Message> {
    tool_chat_of(turns, 130, 60)
}

/// [`tool_chat`] with results of `words` words and answers of `answer` words.
fn tool_chat_of(turns: usize, words: usize, answer: usize) -> Vec<Message> {
    let mut values = vec![json!({"role": "system", "content": "You are a research agent."})];
    for t in 0..turns {
        let id = format!("call_{t}");
        values.push(json!({"role": "user", "content": format!("Turn {t}: {}", prose(t, 10))}));
        values.push(json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": id, "toolName": "search", "input": {"q": format!("q{t}")}}]}));
        values.push(json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": id, "toolName": "search", "output": {"type": "text", "value": prose(t + 7, words)}}]}));
        values.push(
            json!({"role": "assistant", "content": format!("Answer {t}: {}", prose(t + 1, answer))}),
        );
    }
    parse_values(&values)
}

#[test]
fn tier_2_inside_the_span_of_a_summary_asked_ahead_keeps_it_and_the_trigger_applies_it() {
    // Found by a user test: at the trigger, tier 2 masked old tool results inside the span of
    // the summary still out; the span no longer read as asked, so the next call asked a longer
    // one, every call after it again, and the call at the trigger waited for a summary of its
    // own (six summarizer calls for two summaries, three seconds blocked each time).
    let mut compactor = gpt4o(WINDOW, |c| c.compaction.keep_tool_results = 2);
    let (turns, plan) = (1..200)
        .find_map(|turns| {
            let plan = compactor
                .plan_with_options(&tool_chat(turns), &background())
                .unwrap();
            plan.ahead.is_some().then_some((turns, plan))
        })
        .expect("a summary asked ahead");
    let ahead = plan.ahead.unwrap();
    let key = ahead.ahead_key.clone().unwrap();
    compactor.ask_ahead(&key, ahead.end);
    // Calls go on while it is out (a summarizer request would fail the test), until tier 2
    // edits inside its span.
    let mut edited_at = None;
    for more in turns..turns + 40 {
        let (managed, _) = run(&mut compactor, tool_chat(more), false);
        let inside = managed.events.iter().any(|e| {
            e.status == context_compactor::EventStatus::Applied && e.message_index < ahead.end
        });
        let state = compactor.state().ahead.clone().expect("still asked");
        assert_eq!(state.key, key, "the same summary, not a longer span");
        if inside {
            assert!(state.at.is_some(), "named as the span reads now");
            edited_at = Some(more);
            break;
        }
    }
    let edited_at = edited_at.expect("tier 2 edited inside the span");
    // The next call finds it (raw history: the record replays the edits): not asked again.
    let plan = compactor
        .plan_with_options(&tool_chat(edited_at + 1), &background())
        .unwrap();
    assert!(plan.ahead.is_none(), "not asked again");
    // Back: the call at the trigger applies it over its span, without asking the summarizer.
    assert!(compactor.offer_summary(&key, "## Session Intent\nMade ahead".into()));
    let applied = (edited_at + 1..edited_at + 40)
        .find_map(|n| {
            let (managed, asked) = run(&mut compactor, tool_chat(n), false);
            assert_eq!(asked, 0);
            managed
                .plan
                .actions
                .iter()
                .any(|a| matches!(a, Action::Summarize(s) if s.ahead_key.as_deref() == Some(key.as_str())))
                .then_some(managed)
        })
        .expect("the summary made ahead applied");
    assert!(support::summary_message(&applied)
        .text()
        .contains("Made ahead"));
    assert!(applied.events.iter().all(|e| !e.blocking), "no call waited");
    assert!(compactor.state().ahead.is_none(), "used");
}

/// A host whose summaries asked ahead come back `delay` calls after they were asked (a
/// summarizer slower than the agent's steps), and that counts the summaries made in a call.
struct SlowSummaries {
    delay: usize,
    calls: usize,
    out: Vec<(String, usize)>,
    asked: usize,
    in_call: usize,
}

impl context_compactor::Host for SlowSummaries {
    fn write(&mut self, _: &str, _: &str) -> Result<(), String> {
        Ok(())
    }
    fn summarize(&mut self, _: &context_compactor::Summarize) -> Result<String, String> {
        self.in_call += 1;
        Ok("## Session Intent\nMade in the call".into())
    }
    fn summarizes_ahead(&mut self) -> bool {
        true
    }
    fn summarize_ahead(&mut self, ahead: &context_compactor::Summarize, _: Option<&str>) {
        self.asked += 1;
        self.out
            .push((ahead.ahead_key.clone().expect("a key"), self.calls));
    }
}

#[test]
fn a_coding_session_whose_summaries_come_back_five_steps_late_waits_for_none_it_asked() {
    // Found by two user tests (a fast agent loop in Node, workerd and Redis-backed instances):
    // with the summarizer slower than a step, the call at the trigger masked tool results inside
    // the span still out, the span no longer read as asked, every later call asked a longer
    // span, and the call at the trigger waited for a summary of its own (six summarizer calls
    // for two summaries). And a call just above `aheadFraction` that tier 2 could bring to its
    // target then, but not after the growth to the trigger, asked nothing.
    let session: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string("tests/fixtures/golden/coding-agent.json").unwrap(),
    )
    .unwrap();
    let all = parse_values(session["messages"].as_array().unwrap());
    let mut compactor = gpt4o(32_000, |_| {});
    let mut host = SlowSummaries {
        delay: 5,
        calls: 0,
        out: Vec::new(),
        asked: 0,
        in_call: 0,
    };
    let (mut history, mut step, mut applied, mut waited) = (Vec::new(), Vec::new(), 0, 0);
    for message in all {
        let ends_step = message.role != context_compactor::Role::Assistant;
        step.push(message);
        if !ends_step || step.len() < 4 {
            continue;
        }
        history.append(&mut step);
        host.calls += 1;
        let (calls, delay) = (host.calls, host.delay);
        for (key, _) in host.out.iter().filter(|(_, at)| calls >= at + delay) {
            compactor.offer_summary(key, "## Session Intent\nMade ahead".into());
        }
        host.out.retain(|(_, at)| calls < at + delay);
        let out = compactor.state().ahead.is_some();
        let managed = compactor.manage(history.clone(), &mut host).unwrap();
        applied += managed.plan.actions.iter().any(
            |a| matches!(a, Action::Summarize(s) if s.ahead_key.is_some() && s.ready.is_some()),
        ) as usize;
        // A call waits only at the hard limit with nothing asked, never while a summary
        // asked ahead is out.
        if managed.events.iter().any(|e| e.blocking) {
            assert!(
                !out,
                "call {calls} waited at {} tokens with a summary out",
                managed.tokens_before
            );
            waited += 1;
        }
    }
    assert_eq!(host.in_call, waited);
    // Under the hard limit no call waits, not even one that found nothing asked.
    assert_eq!(waited, 0, "calls that waited for a summary of their own");
    assert!(applied >= 1, "summaries made ahead applied: {applied}");
    assert!(
        host.asked <= applied + 1,
        "asked {} for {applied} applied: none wasted",
        host.asked
    );
}

#[test]
fn a_step_that_jumps_past_the_trigger_asks_ahead_and_goes_on_until_the_hard_limit() {
    // "A turn waits on the summarizer only when the hard limit comes first": a conversation
    // handed in past the trigger with no summary out (a step that jumped from below
    // `aheadFraction`, a resumed chat) asks the summary in the background and goes on.
    let mut compactor = gpt4o(WINDOW, |_| {});
    let past = first_lossy(&compactor);
    let plan = compactor
        .plan_with_options(&chat(past), &background())
        .unwrap();
    assert!(plan.tokens_before > plan.trigger.compact_at);
    assert!(plan.tokens_before <= plan.trigger.hard_limit);
    assert!(!plan.trigger.tier3);
    assert!(!plan
        .actions
        .iter()
        .any(|a| matches!(a, Action::Summarize(_))));
    assert!(plan
        .notes
        .iter()
        .any(|n| matches!(n, Note::SummaryPending { .. })));
    assert!(
        !plan
            .notes
            .iter()
            .any(|n| matches!(n, Note::TargetNotMet { .. })),
        "the pending summary is the reason: {:?}",
        plan.notes
    );
    let ahead = plan.ahead.expect("asked ahead");
    let key = ahead.ahead_key.clone().unwrap();
    // The span is the one the call would have summarized: the usual recent share is kept.
    let in_call = compactor.plan(&chat(past)).unwrap();
    let span_end = in_call
        .actions
        .iter()
        .find_map(|a| match a {
            Action::Summarize(s) => Some(s.end),
            _ => None,
        })
        .unwrap();
    assert_eq!(ahead.end, span_end);

    // Asked: the next calls go on without asking again; back, the next call applies it.
    compactor.ask_ahead(&key, ahead.end);
    let next = compactor
        .plan_with_options(&chat(past + 1), &background())
        .unwrap();
    assert!(next.ahead.is_none(), "asked once");
    assert!(compactor.offer_summary(&key, "## Session Intent\nMade ahead".into()));
    let (managed, asked) = run(&mut compactor, chat(past + 1), false);
    assert_eq!(asked, 0, "no summarizer in the call");
    assert!(support::summary_message(&managed)
        .text()
        .contains("Made ahead"));
    assert!(managed.events.iter().all(|e| !e.blocking), "no call waited");

    // An ask that failed: the next call past the trigger summarizes itself, and says so.
    let mut failing = gpt4o(WINDOW, |_| {});
    let plan = failing
        .plan_with_options(&chat(past), &background())
        .unwrap();
    let ahead = plan.ahead.unwrap();
    failing.ask_ahead(ahead.ahead_key.as_deref().unwrap(), ahead.end);
    assert!(failing.forget_ahead(ahead.ahead_key.as_deref().unwrap()));
    let (managed, asked) = run(&mut failing, chat(past + 1), true);
    assert_eq!(asked, 1, "summarized in the call");
    assert!(
        managed.events.iter().any(|e| e.blocking),
        "the event says it waited"
    );
    // A summary applied: the next jump asks ahead again.
    let plan = failing
        .plan_with_options(&chat(past + 30), &background())
        .unwrap();
    assert!(
        plan.ahead.is_some() || plan.tokens_before > plan.trigger.hard_limit,
        "{:?}",
        plan.notes
    );
}

#[test]
fn an_app_summary_from_on_pre_compact_is_applied_at_the_trigger_not_asked_ahead() {
    // The hook decides a summary asked ahead at the trigger as one made in the call: its
    // `customSummary` needs no summarizer and is applied now (else it was dropped, and the
    // call went on unsummarized); a cancel asks nothing.
    use context_compactor::{PreCompactDecision, Reply, Request, Session};
    let compactor = gpt4o(WINDOW, |_| {});
    let past = first_lossy(&compactor);
    for (custom, cancel) in [(true, false), (false, false), (false, true)] {
        let mut compactor = gpt4o(WINDOW, |_| {});
        let call = Call {
            background: true,
            ..Call::default()
        };
        let mut session = Session::new(chat(past), call);
        let (mut asked, mut summarized) = (0, 0);
        let managed = loop {
            match session.poll(&mut compactor).unwrap() {
                context_compactor::Poll::Io(ios) => {
                    for io in ios {
                        let reply = match io.request {
                            Request::Write { .. } => Reply::Done,
                            Request::Ask { .. } => {
                                asked += 1;
                                Reply::Decision {
                                    decision: PreCompactDecision {
                                        custom_summary: custom
                                            .then(|| "## Session Intent\nThe app's own.".into()),
                                        cancel,
                                        ..Default::default()
                                    },
                                }
                            }
                            Request::Summarize { .. } => {
                                summarized += 1;
                                Reply::Text {
                                    text: "## Session Intent\nMade in the call".into(),
                                }
                            }
                            Request::Background { .. } => Reply::Done,
                            other => unreachable!("{other:?}"),
                        };
                        session.handle(&mut compactor, io.id, reply).unwrap();
                    }
                }
                context_compactor::Poll::Wait => unreachable!(),
                context_compactor::Poll::Done(managed) => break managed,
            }
        };
        assert_eq!(asked, 1, "the hook is asked at the trigger");
        assert_eq!(summarized, 0, "no summarizer in the call");
        if custom {
            assert!(support::summary_message(&managed)
                .text()
                .contains("The app's own."));
            assert!(managed.plan.ahead.is_none());
            assert!(managed.events.iter().all(|e| !e.blocking));
        } else if cancel {
            assert!(managed.cancelled);
            assert!(managed.plan.ahead.is_none(), "a cancel asks nothing ahead");
        } else {
            assert!(managed.plan.ahead.is_some(), "asked ahead");
            assert!(managed
                .plan
                .notes
                .iter()
                .any(|n| matches!(n, Note::SummaryPending { .. })));
        }
    }
}

#[test]
fn an_app_that_keeps_the_managed_history_never_waits_below_the_hard_limit() {
    // Found by a user test: the app keeps the managed history, so tier 2's masks are in its
    // messages; a summary asked ahead came back, but by the trigger its span, masked since,
    // no longer freed enough, and the call summarized in the call, below the hard limit.
    for (delay, words, answer) in [
        (1, 130, 60),
        (3, 130, 60),
        (1, 400, 4),
        (3, 400, 4),
        (6, 400, 4),
    ] {
        let mut compactor = gpt4o(WINDOW, |c| c.compaction.keep_tool_results = 2);
        let mut host = SlowSummaries {
            delay,
            calls: 0,
            out: Vec::new(),
            asked: 0,
            in_call: 0,
        };
        let (mut history, mut applied) = (tool_chat_of(1, words, answer), 0);
        for turns in 2..120 {
            let previous = tool_chat_of(turns - 1, words, answer).len();
            history.extend(
                tool_chat_of(turns, words, answer)[previous..]
                    .iter()
                    .cloned(),
            );
            host.calls += 1;
            let calls = host.calls;
            for (key, _) in host.out.iter().filter(|(_, at)| calls >= at + delay) {
                compactor.offer_summary(key, "## Session Intent\nMade ahead".into());
            }
            host.out.retain(|(_, at)| calls < at + delay);
            let before = host.in_call;
            let managed = compactor.manage(history, &mut host).unwrap();
            if managed.plan.tokens_before <= managed.plan.trigger.hard_limit {
                assert_eq!(
                    host.in_call, before,
                    "delay {delay}, turn {turns}: summarized in the call at {} tokens (hard limit {})",
                    managed.plan.tokens_before, managed.plan.trigger.hard_limit
                );
            }
            applied += managed
                .plan
                .actions
                .iter()
                .any(|a| matches!(a, Action::Summarize(s) if s.ready.is_some()))
                as usize;
            history = managed.messages;
        }
        assert!(
            applied >= 2,
            "delay {delay}: summaries made ahead applied: {applied} of {}",
            host.asked
        );
    }
}

#[test]
fn the_apps_max_output_tokens_is_room_a_pending_summary_never_takes() {
    // A summary pending lets a call go on unsummarized up to the hard limit (95 %); the reply
    // needs its `maxOutputTokens` too. With 2,000 of an 8,000 window set aside, the hard limit
    // is 6,000: a call past it summarizes in the call instead of going on.
    let plain = gpt4o(WINDOW, |_| {});
    let roomy = gpt4o(WINDOW, |c| c.max_output_tokens = Some(2_000));
    let past = first_lossy(&plain);
    assert_eq!(
        plain.plan(&chat(past)).unwrap().trigger.hard_limit,
        7_600,
        "95 %"
    );
    let plan = roomy.plan(&chat(past)).unwrap();
    assert_eq!(plan.trigger.hard_limit, 6_000, "the window less the reply");
    // The first length past 6,000 tokens: the plain compactor still asks ahead and goes on,
    // the one with room for its reply summarizes now.
    let over = (past..200)
        .find(|&n| {
            let plan = plain.plan(&chat(n)).unwrap();
            plan.tokens_before > 6_000 && plan.tokens_before <= 7_600
        })
        .expect("a length between the two limits");
    let plan = plain.plan_with_options(&chat(over), &background()).unwrap();
    assert!(
        !plan.trigger.tier3 && plan.ahead.is_some(),
        "{:?}",
        plan.notes
    );
    let plan = roomy.plan_with_options(&chat(over), &background()).unwrap();
    assert!(
        plan.trigger.tier3 && plan.ahead.is_none(),
        "{:?}",
        plan.notes
    );
    assert!(plan.tokens_after <= 6_000);
    // No more than a 95 % limit where the reply is small; all of the window is no room at all.
    let small = gpt4o(WINDOW, |c| c.max_output_tokens = Some(100));
    assert_eq!(small.plan(&chat(past)).unwrap().trigger.hard_limit, 7_600);
    let config = context_compactor::Config {
        model: Some("gpt-4o".into()),
        context_window: Some(WINDOW),
        max_output_tokens: Some(WINDOW),
        ..context_compactor::Config::default()
    };
    assert!(matches!(
        Compactor::new(config),
        Err(context_compactor::Error::InvalidConfig { field, .. }) if field == "maxOutputTokens"
    ));
}

/// `chat(turns)` with a system prompt that names the call (a date, a todo list, retrieved
/// memory: what apps put in a system prompt that changes at every call).
fn chat_at(turns: usize, call: usize) -> Vec<Message> {
    let mut messages = chat(turns);
    messages[0] = parse_values(&[json!({"role": "system", "content": format!(
        "You are a helpful research agent. Call {call}; today's todo list has {call} items."
    )})])
    .remove(0);
    messages
}

#[test]
fn a_system_prompt_that_changes_at_every_call_keeps_the_summary_asked_ahead() {
    let mut compactor = gpt4o(WINDOW, |_| {});
    let (turns, _) = first_ahead(&compactor);
    let plan = compactor
        .plan_with_options(&chat_at(turns, 0), &background())
        .unwrap();
    let ahead = plan.ahead.clone().expect("asked ahead");
    let key = ahead.ahead_key.clone().unwrap();
    compactor.ask_ahead(&key, ahead.end);
    // Later calls, each with its own system prompt: not asked again, and the lossy tier waits.
    let mut waiting = None;
    for (call, more) in (turns..turns + 40).enumerate() {
        let plan = compactor
            .plan_with_options(&chat_at(more, call + 1), &background())
            .unwrap();
        assert!(plan.ahead.is_none(), "asked again at call {}", call + 1);
        if plan
            .notes
            .iter()
            .any(|n| matches!(n, Note::SummaryPending { .. }))
        {
            waiting = Some((more, call + 1));
            break;
        }
    }
    let (waiting, call) = waiting.expect("a call past the trigger waited for the summary");
    assert!(compactor.offer_summary(&key, "## Session Intent\nMade ahead".into()));
    let input = chat_at(waiting, call + 1);
    let (managed, asked) = run(&mut compactor, input.clone(), false);
    assert_eq!(asked, 0, "the summary made ahead is the one applied");
    assert!(support::summary_message(&managed)
        .text()
        .contains("Made ahead"));
    // The system prompt is this call's, word for word.
    assert_eq!(managed.messages[0], input[0]);
}
