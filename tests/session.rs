//! The loop in the core (issue 31, docs/LOOP.md slice 2): a `Session` asks for IO as data and
//! makes every decision a host used to make — writes in one batch, a summary only once its
//! transcript is stored and once per request text, `onPreCompact`'s cancel (and its override
//! past the hard limit), custom instructions and summaries — and `Compactor::manage` drives it
//! for native Rust apps.

mod support;

use std::collections::BTreeSet;

use context_compactor::{
    Compactor, EventStatus, Host, Io, Message, Plan, Poll, PreCompact, PreCompactDecision, Reply,
    Request, Session, Strategy, Summarize,
};
use serde_json::json;
use support::{agent_session, execute_with, gpt4o, parse_values, prose, Faults, Store, Summarizer};

/// A native app: a map store whose writes to `failing` paths fail, a scripted summarizer, and
/// a hook answering `decision`; it logs every call in order.
#[derive(Default)]
struct App {
    store: Store,
    failing: BTreeSet<String>,
    fail_transcripts: bool,
    decision: PreCompactDecision,
    log: Vec<String>,
    asked: Vec<PreCompact>,
}

impl Host for App {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        self.log.push(format!("write {path}"));
        if self.failing.contains(path)
            || (self.fail_transcripts && path.starts_with("/conversation_history/"))
        {
            return Err(format!("disk full at {path}"));
        }
        self.store.insert(path.to_owned(), content.to_owned());
        Ok(())
    }
    fn summarize(&mut self, summary: &Summarize) -> Result<String, String> {
        self.log.push("summarize".into());
        Ok(format!(
            "## Session Intent\nScripted summary of {} characters.",
            summary.request.prompt.len()
        ))
    }
    fn on_pre_compact(&mut self, info: &PreCompact, _plan: &Plan) -> PreCompactDecision {
        self.log.push("ask".into());
        self.asked.push(info.clone());
        self.decision.clone()
    }
}

fn long() -> Vec<Message> {
    support::long_build_session()
}

fn compactor() -> Compactor {
    gpt4o(16_000, |_| {})
}

#[test]
fn manage_gives_what_plan_execute_apply_gives_a_host_that_does_it_by_hand() {
    let messages = long();
    let mut by_hand = compactor();
    let plan = by_hand.plan(&messages).unwrap();
    assert!(plan.trigger.tier3, "the fixture reaches the summary");
    let mut store = Store::new();
    let outcomes = execute_with(&plan, &mut store, &Faults::None, Summarizer::Fails);
    let expected = by_hand.apply(messages.clone(), &plan, &outcomes).unwrap();

    // The same with the loop in the core (a summarizer that fails: the heuristic summary).
    struct NoLlm(Store);
    impl Host for NoLlm {
        fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
            self.0.insert(path.to_owned(), content.to_owned());
            Ok(())
        }
    }
    let mut app = NoLlm(Store::new());
    let mut looped = compactor();
    let managed = looped.manage(messages, &mut app).unwrap();
    assert_eq!(managed.messages, expected.messages);
    assert_eq!(
        (managed.tokens_before, managed.tokens_after),
        (expected.tokens_before, expected.tokens_after)
    );
    // The same events, but for the summarizer's error in each host's words.
    let words = |events: &[context_compactor::Event]| {
        events
            .iter()
            .map(|e| context_compactor::Event {
                error: None,
                ..e.clone()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(words(&managed.events), words(&expected.events));
    let fallback = managed
        .events
        .iter()
        .find(|e| e.strategy == Strategy::Summarize)
        .unwrap();
    assert_eq!(fallback.status, EventStatus::Fallback);
    assert_eq!(
        fallback.error.as_deref(),
        Some("summarizer failed: no summarizer configured")
    );
    assert_eq!(app.0, store, "the same files, byte for byte");
    assert_eq!(looped.state(), by_hand.state(), "the same record and stats");
    assert!(!managed.cancelled && !managed.cancel_overridden);
}

#[test]
fn writes_come_out_in_one_batch_and_the_summary_only_after_its_transcript_is_stored() {
    let mut c = compactor();
    let mut session = Session::new(long(), Default::default());
    let Poll::Io(ask) = session.poll(&mut c).unwrap() else {
        panic!("the hook first")
    };
    assert!(matches!(
        &ask[..],
        [Io {
            request: Request::Ask { .. },
            ..
        }]
    ));
    assert_eq!(
        session.poll(&mut c).unwrap(),
        Poll::Wait,
        "nothing more until the hook answers"
    );
    session
        .handle(
            &mut c,
            ask[0].id,
            Reply::Decision {
                decision: PreCompactDecision::default(),
            },
        )
        .unwrap();

    let Poll::Io(writes) = session.poll(&mut c).unwrap() else {
        panic!("the writes")
    };
    let plan = session.plan().unwrap().clone();
    let expected: usize = plan.actions.iter().map(|a| a.writes().len()).sum();
    assert_eq!(writes.len(), expected, "every write of the plan at once");
    assert!(writes
        .iter()
        .all(|io| matches!(io.request, Request::Write { .. })));
    // Answered out of order: the last first.
    for io in writes.iter().rev() {
        assert_eq!(session.poll(&mut c).unwrap(), Poll::Wait);
        session.handle(&mut c, io.id, Reply::Done).unwrap();
    }
    let Poll::Io(summaries) = session.poll(&mut c).unwrap() else {
        panic!("then the summary")
    };
    let [Io {
        id,
        request: Request::Summarize { summary },
    }] = &summaries[..]
    else {
        panic!("{summaries:?}")
    };
    assert!(summary.request.prompt.contains("Step 0"), "the span's text");
    assert_eq!(summary.start, 1, "after the system prompt");
    session
        .handle(
            &mut c,
            *id,
            Reply::Text {
                text: "## Session Intent\nFix the build.".into(),
            },
        )
        .unwrap();
    let Poll::Done(managed) = session.poll(&mut c).unwrap() else {
        panic!("done")
    };
    let summary = managed
        .events
        .iter()
        .find(|e| e.strategy == Strategy::Summarize)
        .unwrap();
    assert_eq!(summary.status, EventStatus::Applied);
    assert!(managed
        .messages
        .iter()
        .any(|m| serde_json::to_string(m).unwrap().contains("Fix the build.")));
    // Over: a poll or a reply now is a typed error.
    assert!(session.poll(&mut c).is_err());
    assert!(session.handle(&mut c, *id, Reply::Done).is_err());
}

#[test]
fn a_transcript_that_is_not_stored_gets_no_summary_request_and_nothing_lossy_applies() {
    let mut app = App {
        fail_transcripts: true,
        ..App::default()
    };
    let mut c = compactor();
    let messages = long();
    let managed = c.manage(messages.clone(), &mut app).unwrap();
    assert!(
        !app.log.contains(&"summarize".to_string()),
        "no LLM call for a span that cannot be applied: {:?}",
        app.log
    );
    let transcript = managed
        .events
        .iter()
        .find(|e| e.strategy == Strategy::Transcript)
        .unwrap();
    assert_eq!(transcript.status, EventStatus::Failed);
    assert!(
        transcript
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("disk full"),
        "{transcript:?}"
    );
    // Every message of the span is still there (the offload of the build log applied).
    for m in &messages[1..messages.len() - 1] {
        assert!(managed.messages.contains(m), "lost {m:?}");
    }
    assert!(app
        .store
        .keys()
        .all(|p| !p.starts_with("/conversation_history/")));
    // Over its target, the result says why (README: "budget or a note saying why").
    assert!(managed.tokens_after > managed.plan.trigger.target);
    let note = managed
        .plan
        .notes
        .iter()
        .find_map(|n| match n {
            context_compactor::Note::ActionsFailed {
                failed,
                tokens_after,
                target,
                reason,
            } => Some((*failed, *tokens_after, *target, reason.clone())),
            _ => None,
        })
        .expect("an actions-failed note");
    assert_eq!(note.1, managed.tokens_after);
    assert_eq!(note.2, managed.plan.trigger.target);
    assert_eq!(
        note.0,
        managed
            .events
            .iter()
            .filter(|e| e.status == EventStatus::Failed)
            .count()
    );
    assert!(note.3.contains("disk full"), "{}", note.3);
    // The same call with a store that works: no such note.
    let managed = compactor().manage(messages, &mut App::default()).unwrap();
    assert!(!managed
        .plan
        .notes
        .iter()
        .any(|n| matches!(n, context_compactor::Note::ActionsFailed { .. })));
}

#[test]
fn a_failed_write_leaves_its_output_whole_and_the_event_names_the_error() {
    let mut c = compactor();
    let messages = long();
    let plan = c.plan(&messages).unwrap();
    let offload = plan
        .actions
        .iter()
        .find(|a| a.id().starts_with("offload"))
        .unwrap();
    let (path, _) = offload.writes()[0];
    let mut app = App {
        failing: [path.to_owned()].into(),
        ..App::default()
    };
    let managed = c.manage(messages.clone(), &mut app).unwrap();
    let event = managed
        .events
        .iter()
        .find(|e| e.action_id == offload.id())
        .unwrap();
    assert_eq!(event.status, EventStatus::Failed);
    assert!(event
        .error
        .as_deref()
        .unwrap()
        .contains(&format!("disk full at {path}")));
    assert!(!app.store.contains_key(path));
    let build = messages.last().unwrap();
    assert!(
        managed.messages.contains(build),
        "the build log stays whole"
    );
}

#[test]
fn a_cancel_returns_the_conversation_with_earlier_compactions_and_is_overridden_past_the_hard_limit(
) {
    // First a compaction that lands, so the record has something to replay.
    let mut c = compactor();
    let mut app = App::default();
    let first = c.manage(long(), &mut app).unwrap();
    assert!(!first.events.is_empty());

    // The raw history grows (a stateless host re-sends it) past tier 2's trigger, under the
    // hard limit: the hook cancels.
    let mut raw = long();
    let mut t = 0;
    while c.count(&c.replay(&raw)) <= first.plan.trigger.compact_at {
        let id = format!("more_{t}");
        raw.extend(parse_values(&[
            json!({"role": "user", "content": format!("Next {t}.")}),
            json!({"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": id, "toolName": "read_file", "input": {"path": format!("/n{t}")}}]}),
            json!({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": id, "toolName": "read_file", "output": {"type": "text", "value": prose(t, 300)}}]}),
        ]));
        t += 1;
    }
    let expected_prompt = c.replay(&raw).into_owned();
    let mut app = App {
        decision: PreCompactDecision {
            cancel: true,
            ..Default::default()
        },
        ..App::default()
    };
    let managed = c.manage(raw.clone(), &mut app).unwrap();
    if managed.plan.tokens_before <= managed.plan.trigger.hard_limit {
        assert!(managed.cancelled);
        assert!(managed.events.is_empty());
        assert_eq!(
            managed.messages, expected_prompt,
            "the earlier summary and offload replayed, nothing new"
        );
        assert!(app.store.is_empty(), "nothing written");
    } else {
        panic!(
            "fixture: under the hard limit ({} > {})",
            managed.plan.tokens_before, managed.plan.trigger.hard_limit
        );
    }

    // Past the hard limit the same cancel is overridden.
    let mut huge = raw;
    huge.extend(parse_values(&[
        json!({"role": "user", "content": prose(7, 9_000)}),
    ]));
    let mut app = App {
        decision: PreCompactDecision {
            cancel: true,
            ..Default::default()
        },
        ..App::default()
    };
    let managed = c.manage(huge, &mut app).unwrap();
    assert!(managed.plan.tokens_before > managed.plan.trigger.hard_limit);
    assert!(managed.cancel_overridden && !managed.cancelled);
    assert!(c.count(&managed.messages) <= managed.plan.trigger.hard_limit);
}

#[test]
fn custom_instructions_make_a_new_plan_and_a_custom_summary_asks_no_llm() {
    let mut app = App {
        decision: PreCompactDecision {
            custom_instructions: Some("Keep the API names.".into()),
            custom_summary: Some("## Session Intent\nThe app's own summary.".into()),
            ..Default::default()
        },
        ..App::default()
    };
    let mut c = compactor();
    let managed = c.manage(long(), &mut app).unwrap();
    assert_eq!(app.asked.len(), 1);
    assert_eq!(app.asked[0].message_count, long().len());
    let summarize = managed.plan.actions.iter().find_map(|a| match a {
        context_compactor::Action::Summarize(s) => Some(s),
        _ => None,
    });
    assert!(
        summarize
            .unwrap()
            .request
            .prompt
            .contains("Keep the API names."),
        "planned again with the instructions"
    );
    assert!(!app.log.contains(&"summarize".to_string()));
    assert!(managed.messages.iter().any(|m| serde_json::to_string(m)
        .unwrap()
        .contains("The app's own summary.")));
}

#[test]
fn compact_runs_below_every_trigger_with_its_instructions() {
    let messages = parse_values(&agent_session(6, 80, |_, _| {}));
    let mut c = compactor();
    let mut app = App::default();
    let managed = c.manage(messages.clone(), &mut app).unwrap();
    assert!(
        managed.events.is_empty() && app.log.is_empty(),
        "under every trigger: nothing asked"
    );
    assert_eq!(managed.messages, messages);
    let compacted = c
        .compact(messages, Some("Name every file.".into()), &mut app)
        .unwrap();
    assert_eq!(app.asked[0].trigger, context_compactor::TriggerKind::Manual);
    assert!(app.log.contains(&"summarize".to_string()));
    let summarize = compacted.plan.actions.iter().find_map(|a| match a {
        context_compactor::Action::Summarize(s) => Some(s),
        _ => None,
    });
    assert!(summarize
        .unwrap()
        .request
        .prompt
        .contains("Name every file."));
}

#[test]
fn replies_that_do_not_fit_are_typed_errors_and_change_nothing() {
    let mut c = compactor();
    let mut session = Session::new(long(), Default::default());
    let Poll::Io(ask) = session.poll(&mut c).unwrap() else {
        panic!()
    };
    let id = ask[0].id;
    assert!(
        session.handle(&mut c, id + 100, Reply::Done).is_err(),
        "not in flight"
    );
    let wrong = session
        .handle(&mut c, id, Reply::Text { text: "x".into() })
        .unwrap_err();
    assert!(wrong.to_string().contains("expected a decision"), "{wrong}");
    // Still waiting for the hook; a hook that failed lets the compaction run as planned.
    assert_eq!(session.poll(&mut c).unwrap(), Poll::Wait);
    session
        .handle(
            &mut c,
            id,
            Reply::Failed {
                error: "hook threw".into(),
            },
        )
        .unwrap();
    assert!(
        matches!(session.poll(&mut c).unwrap(), Poll::Io(ref w) if w.iter().all(|io| matches!(io.request, Request::Write { .. })))
    );
}

#[test]
fn requests_and_replies_cross_as_json() {
    let io = Io {
        id: 3,
        request: Request::Write {
            path: "/p".into(),
            content: "c".into(),
            whole: false,
            output: None,
        },
    };
    assert_eq!(
        serde_json::to_value(&io).unwrap(),
        json!({"id": 3, "request": {"type": "write", "path": "/p", "content": "c"}})
    );
    let reply: Reply = serde_json::from_value(
        json!({"type": "decision", "cancel": true, "customInstructions": "k"}),
    )
    .unwrap();
    assert_eq!(
        reply,
        Reply::Decision {
            decision: PreCompactDecision {
                cancel: true,
                custom_instructions: Some("k".into()),
                custom_summary: None
            }
        }
    );
    let reply: Reply =
        serde_json::from_value(json!({"type": "failed", "error": "timeout after 500 ms"})).unwrap();
    assert_eq!(
        reply,
        Reply::Failed {
            error: "timeout after 500 ms".into()
        }
    );
}

/// A call that only offloads (tier 2 and 3 do not fire: the offload was to bring it under tier
/// 2's trigger) and whose offload fails: over the trigger, it says so (`actions-failed`); a
/// user's Rust agent over a failing store got 69,123 tokens in a 16,000-token window with no
/// note. Under the trigger, where it was anyway, it does not.
#[test]
fn a_failed_offload_below_tier_2_says_so_only_when_it_leaves_the_call_over_the_trigger() {
    let messages = long();
    for over_trigger in [true, false] {
        let (mut c, plan) = (16_000..400_000)
            .step_by(2_000)
            .map(|w| {
                let c = gpt4o(w, |_| {});
                let plan = c.plan(&messages).unwrap();
                (c, plan)
            })
            .find(|(_, p)| {
                !p.trigger.tier2
                    && !p.trigger.tier3
                    && p.tokens_before > p.trigger.target
                    && (p.tokens_before > p.trigger.compact_at) == over_trigger
                    && p.actions.iter().any(|a| a.id().starts_with("offload"))
            })
            .expect("a window where the call only offloads, over tier 2's target");
        let mut app = App {
            failing: plan
                .actions
                .iter()
                .flat_map(|a| a.writes())
                .map(|(p, _)| p.to_string())
                .collect(),
            ..App::default()
        };
        let managed = c.manage(messages.clone(), &mut app).unwrap();
        assert!(managed
            .events
            .iter()
            .any(|e| e.status == EventStatus::Failed));
        assert_eq!(managed.tokens_after, managed.tokens_before);
        let noted = managed.plan.notes.iter().find_map(|n| match n {
            context_compactor::Note::ActionsFailed { tokens_after, .. } => Some(*tokens_after),
            _ => None,
        });
        assert_eq!(
            noted,
            over_trigger.then_some(managed.tokens_after),
            "{over_trigger}: {:?}",
            managed.plan.notes
        );
    }
}
