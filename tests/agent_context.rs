//! What an agent must not lose (issue 19, build items 3, 4 and 6): the files it is working on,
//! what the provider already compacted, and a lossy tier that does not loop when it cannot
//! help.

mod support;

use context_compactor::{validate, Action, Compactor, Message, Note, Plan};
use serde_json::{json, Value};
use support::{agent_session, execute_with, gpt4o, parse_values, prose, Faults, Store, Summarizer};

const FILE: &str = "src/auth/session.ts";

fn file_body(lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!("export const session{i} = createSession({{ ttl: {i}, scope: 'auth' }});\n")
        })
        .collect()
}

/// `read_file` of FILE (`lines` lines back), as a call and its result.
fn read_pair(out: &mut Vec<Value>, lines: usize) {
    out.push(json!({"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": "read_s", "toolName": "read_file", "input": {"path": FILE}}]}));
    out.push(json!({"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "read_s", "toolName": "read_file",
         "output": {"type": "text", "value": file_body(lines)}}]}));
}

/// `write_file` of FILE (45 lines), as a call and its result.
fn write_pair(out: &mut Vec<Value>) {
    out.push(json!({"role": "assistant", "content": [
        {"type": "tool-call", "toolCallId": "write_s", "toolName": "write_file",
         "input": {"path": FILE, "content": file_body(45)}}]}));
    out.push(json!({"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": "write_s", "toolName": "write_file",
         "output": {"type": "text", "value": "Wrote 45 lines"}}]}));
}

/// The scenario: `read_file src/auth/session.ts` → `write_file` of it → 12 more tool
/// calls (agent_session's own reads of other files, `words` each).
fn working_session(words: usize) -> Vec<Value> {
    agent_session(13, words, |t, out| {
        if t == 0 {
            read_pair(out, 40);
            write_pair(out);
        }
    })
}

fn run(c: &mut Compactor, messages: Vec<Message>, manual: bool) -> (Plan, Vec<Message>) {
    let plan = if manual {
        c.plan_manual(&messages).unwrap()
    } else {
        c.plan(&messages).unwrap()
    };
    let mut store = Store::new();
    let outcomes = execute_with(&plan, &mut store, &Faults::None, Summarizer::Works);
    let applied = c.apply(messages, &plan, &outcomes).unwrap();
    validate(&applied.messages).unwrap();
    (plan, applied.messages)
}

/// A window that puts `messages` at `fraction` of it.
fn window_at(messages: &[Message], fraction: f64) -> u32 {
    let count = gpt4o(1_000_000, |_| {}).count(messages);
    (f64::from(count) / fraction) as u32
}

fn touched(plan: &Plan) -> Vec<String> {
    plan.actions
        .iter()
        .filter_map(Action::store_edit)
        .map(|e| e.tool_call_id.clone())
        .collect()
}

#[test]
fn the_working_file_is_neither_evicted_nor_masked_at_88_percent() {
    let messages = parse_values(&working_session(600));
    let window = window_at(&messages, 0.88);
    // Tier 2 alone (the lossy tier would take the older results with it).
    let tier2_only = |c: &mut context_compactor::Config| {
        c.history.strategy = context_compactor::HistoryStrategy::Off
    };
    let mut c = gpt4o(window, tier2_only);
    let (plan, out) = run(&mut c, messages.clone(), false);
    let edits = touched(&plan);
    assert!(plan.trigger.tier2, "88 % is over the tier-2 trigger");
    assert!(
        edits.iter().any(|id| id.starts_with("call_")),
        "other results are masked: {edits:?}"
    );
    assert!(!edits.contains(&"write_s".to_owned()), "{edits:?}");
    assert!(!edits.contains(&"read_s".to_owned()), "{edits:?}");
    let text = serde_json::to_string(&out).unwrap();
    assert!(text.contains(&serde_json::to_string(&file_body(45)).unwrap()));
    assert!(text.contains(&serde_json::to_string(&file_body(40)).unwrap()));

    // The same conversation with working files off: the write is evicted, the read masked.
    let mut off = gpt4o(window, |c| {
        tier2_only(c);
        c.compaction.working_files.max_files = 0
    });
    let (plan, _) = run(&mut off, messages, false);
    let edits = touched(&plan);
    assert!(edits.contains(&"write_s".to_owned()), "{edits:?}");
    assert!(edits.contains(&"read_s".to_owned()), "{edits:?}");
}

#[test]
fn after_a_summary_the_working_file_pairs_follow_it_verbatim() {
    let messages = parse_values(&working_session(600));
    let mut c = gpt4o(window_at(&messages, 0.9), |_| {});
    let (plan, out) = run(&mut c, messages.clone(), true);
    let Some(Action::Summarize(s)) = plan.actions.last() else {
        panic!("a manual compaction summarizes: {:?}", plan.actions)
    };
    assert!(!s.keep.is_empty(), "the working file's pairs are kept");
    assert!(out[1].text().starts_with("[Conversation summary]"));
    // Right after the summary: the read, then the write, as normal pairs.
    let after = serde_json::to_string(&out[2..6]).unwrap();
    for needle in [
        "read_s",
        "write_s",
        &serde_json::to_string(&file_body(40)).unwrap(),
    ] {
        assert!(after.contains(needle), "{needle} missing after the summary");
    }
    // The other old reads were summarized.
    assert!(!serde_json::to_string(&out).unwrap().contains("\"call_0\""));

    // A budget too small for the file: nothing kept, the pairs are summarized too.
    let mut small = gpt4o(window_at(&messages, 0.9), |c| {
        c.compaction.working_files.max_tokens = 100
    });
    let (plan, out) = run(&mut small, messages, true);
    let Some(Action::Summarize(s)) = plan.actions.last() else {
        panic!()
    };
    assert!(s.keep.is_empty());
    assert!(!serde_json::to_string(&out).unwrap().contains("read_s"));
}

#[test]
fn a_read_that_a_compaction_kept_stays_protected_at_the_next() {
    // Written, then read: only the read is the file's latest content, so the first summary
    // takes the write and keeps the read. The file is still the one being worked on.
    let session = agent_session(13, 600, |t, out| {
        if t == 0 {
            write_pair(out);
            read_pair(out, 45);
        }
    });
    let messages = parse_values(&session);
    let mut c = gpt4o(window_at(&messages, 0.9), |_| {});
    let mut out = messages;
    for round in 0..2 {
        let (plan, next) = run(&mut c, out, true);
        let Some(Action::Summarize(s)) = plan.actions.last() else {
            panic!(
                "round {round}: a manual compaction summarizes: {:?}",
                plan.actions
            )
        };
        assert!(!s.keep.is_empty(), "round {round}: the read's pair is kept");
        let text = serde_json::to_string(&next).unwrap();
        assert!(
            text.contains("\"read_s\""),
            "round {round}: the read is in the prompt"
        );
        assert!(
            !text.contains("\"write_s\""),
            "round {round}: the write is summarized"
        );
        out = next;
    }
}

#[test]
fn a_read_that_a_truncation_kept_right_after_its_notice_stays_protected_at_the_next() {
    // Written, then read, and the span to drop ends with the read: the truncation removes the
    // write and keeps the read right after its notice, past the last removed message. The next
    // plan must know the step kept it (invariants_hold, seed 3002, found it dropped there).
    let session = agent_session(13, 600, |t, out| {
        if t == 0 {
            write_pair(out);
            read_pair(out, 45);
        }
    });
    let messages = parse_values(&session);
    let read_result = messages
        .iter()
        .position(|m| {
            serde_json::to_string(m)
                .unwrap()
                .contains("\"tool-result\",\"toolCallId\":\"read_s\"")
        })
        .expect("the read's result");
    let keep = messages.len() - (read_result + 1);
    let mut c = gpt4o(window_at(&messages, 0.9), |c| {
        c.history.strategy = context_compactor::HistoryStrategy::Truncate;
        c.history.keep_recent_messages = Some(keep);
    });
    let mut out = messages;
    for round in 0..2 {
        let (plan, next) = run(&mut c, out, true);
        let text = serde_json::to_string(&next).unwrap();
        assert!(
            text.contains("\"read_s\""),
            "round {round}: the read is in the prompt ({:?})",
            plan.actions.iter().map(Action::id).collect::<Vec<_>>()
        );
        assert!(
            !text.contains("\"write_s\""),
            "round {round}: the write is dropped"
        );
        if round == 0 {
            let Some(Action::Drop(d)) = plan.actions.last() else {
                panic!("a manual compaction drops: {:?}", plan.actions)
            };
            assert_eq!(d.kept_until, Some(read_result + 1), "{d:?}");
        }
        out = next;
    }
}

#[test]
fn only_the_latest_read_and_the_writes_after_it_are_protected() {
    // Two reads of the file, then an edit: the first read may be deduped, the second and the
    // edit are protected.
    let values = agent_session(13, 600, |t, out| {
        if t == 0 || t == 1 {
            let id = format!("read_s{t}");
            out.push(json!({"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": id, "toolName": "read_file", "input": {"path": FILE}}]}));
            out.push(json!({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": id, "toolName": "read_file",
                 "output": {"type": "text", "value": file_body(40 + t)}}]}));
        }
        if t == 1 {
            out.push(json!({"role": "assistant", "content": [
                {"type": "tool-call", "toolCallId": "edit_s", "toolName": "edit_file",
                 "input": {"file_path": FILE, "old_string": "ttl: 1,", "new_string": prose(7, 300)}}]}));
            out.push(json!({"role": "tool", "content": [
                {"type": "tool-result", "toolCallId": "edit_s", "toolName": "edit_file",
                 "output": {"type": "text", "value": "ok"}}]}));
        }
    });
    // The edit names its file `file_path`, read_file `path`: one file.
    let messages = parse_values(&values);
    let mut c = gpt4o(window_at(&messages, 0.9), |c| {
        c.history.strategy = context_compactor::HistoryStrategy::Off
    });
    let (plan, _) = run(&mut c, messages, false);
    let edits = touched(&plan);
    assert!(plan.trigger.tier2 && !plan.trigger.tier3);
    assert!(edits.contains(&"read_s0".to_owned()), "{edits:?}");
    assert!(!edits.contains(&"read_s1".to_owned()), "{edits:?}");
    assert!(!edits.contains(&"edit_s".to_owned()), "{edits:?}");
}

/// A conversation whose first half the provider already compacted: `item` is the compaction
/// part as the AI SDK 7 provider carries it.
fn provider_session(item: Value) -> Vec<Value> {
    let big = |seed| prose(seed, 9_000);
    let mut values = vec![json!({"role": "system", "content": "You are a coding agent."})];
    for t in 0..3 {
        let id = format!("old_{t}");
        values.push(json!({"role": "user", "content": format!("old step {t}")}));
        values.push(json!({"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": id, "toolName": "search", "input": {"q": t}}]}));
        values.push(json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": id, "toolName": "search", "output": {"type": "text", "value": big(t)}}]}));
    }
    values.push(
        json!({"role": "assistant", "content": [item, {"type": "text", "text": "Continuing."}]}),
    );
    values.extend(agent_session(8, 600, |_, _| {}).into_iter().skip(1));
    values
}

fn anthropic_item() -> Value {
    json!({"type": "text", "text": "Summary of the work so far: three searches, results noted.",
           "providerOptions": {"anthropic": {"type": "compaction", "signature": "EqQBCkYIBxgCKkA"}}})
}

fn openai_item() -> Value {
    json!({"type": "custom", "kind": "openai.compaction",
           "providerOptions": {"openai": {"type": "compaction", "itemId": "cmp_68a1",
                                          "encryptedContent": "gAAAAABoq0zX"}}})
}

#[test]
fn nothing_up_to_a_provider_compaction_item_is_counted_or_changed() {
    for item in [anthropic_item(), openai_item()] {
        let values = provider_session(item.clone());
        let messages = parse_values(&values);
        let at = values.iter().position(|v| v["content"][0] == item).unwrap();
        let c = gpt4o(16_000, |_| {});
        // Counted: the system prompt and everything from the item on.
        let mut read = vec![messages[0].clone()];
        read.extend_from_slice(&messages[at..]);
        assert_eq!(c.count(&messages), c.count(&read));
        assert!(
            c.count(&messages) < c.count(&messages[1..at]),
            "the 27k tokens before the item cost nothing"
        );

        // A manual compaction: offloads, masks and the summary all start after the item.
        let mut c = gpt4o(16_000, |_| {});
        let (plan, out) = run(&mut c, messages.clone(), true);
        for edit in plan.actions.iter().filter_map(Action::store_edit) {
            assert!(edit.message_index > at, "{} touched", edit.id);
        }
        let Some(Action::Summarize(s)) = plan.actions.last() else {
            panic!("{:?}", plan.actions)
        };
        assert!(
            s.start > at,
            "span {}..{} starts after {at}",
            s.start,
            s.end
        );
        // Byte for byte up to and including the item.
        assert_eq!(
            serde_json::to_string(&out[..=at]).unwrap(),
            serde_json::to_string(&messages[..=at]).unwrap()
        );
    }
}

#[test]
fn a_plan_over_a_provider_item_alone_is_a_no_op() {
    // Only huge results before the item, a small tail after it: nothing to do at all.
    let mut values = provider_session(anthropic_item());
    let at = values
        .iter()
        .position(|v| v["content"][0] == anthropic_item())
        .unwrap();
    values.truncate(at + 2);
    let messages = parse_values(&values);
    let c = gpt4o(16_000, |_| {});
    let plan = c.plan(&messages).unwrap();
    assert!(plan.actions.is_empty(), "{:?}", plan.actions);
    assert!(plan.tokens_before < 16_000 / 2);
    // The same text without the provider's mark is ordinary content: offloaded.
    values[at]["content"][0]["providerOptions"] = json!({});
    let plan = c.plan(&parse_values(&values)).unwrap();
    assert!(plan.actions.len() >= 3, "{:?}", plan.actions.len());
}

#[test]
fn a_system_prompt_over_the_trigger_does_not_make_the_lossy_tier_loop() {
    // A 15.5k-token system prompt in a 16k window: over the 95 % trigger on its own.
    let mut values = agent_session(30, 60, |_, _| {});
    values[0] = json!({"role": "system", "content": prose(1, 7_900)});
    let messages = parse_values(&values);
    let mut c = gpt4o(16_000, |_| {});
    assert!(
        c.count(&messages[..1]) > 15_200,
        "{}",
        c.count(&messages[..1])
    );
    // Turn by turn, while the request still fits the window: no summary, one note per plan.
    let mut summaries = 0;
    for end in (3..=26).step_by(5) {
        let (plan, _) = run(&mut c, messages[..end].to_vec(), false);
        summaries += usize::from(matches!(plan.actions.last(), Some(Action::Summarize(_))));
        let notes: Vec<&Note> = plan
            .notes
            .iter()
            .filter(|n| matches!(n, Note::FixedOverTrigger { .. }))
            .collect();
        assert_eq!(notes.len(), 1, "{:?}", plan.notes);
        if plan.tokens_before <= 16_000 {
            assert!(!plan.trigger.tier3, "{end}: {:?}", plan.actions);
        }
    }
    // Once the request would not fit, one lossy step; and a manual compaction always runs.
    let (plan, _) = run(&mut c, messages.clone(), false);
    assert!(plan.tokens_before > 16_000);
    assert!(plan.trigger.tier3);
    let plan = c.plan_manual(&messages).unwrap();
    assert!(plan.trigger.tier3);
    assert!(summaries <= 1);
}

#[test]
fn a_summary_request_reads_the_cache_when_that_costs_less() {
    use context_compactor::{CacheProvider, Config};
    // About 14k tokens: the prompt the agent last sent, in a 16k window.
    let messages = parse_values(&agent_session(7, 200, |_, _| {}));
    let claude = |f: &dyn Fn(&mut Config)| {
        let mut config = Config {
            model: Some("claude-sonnet-4-5".into()),
            context_window: Some(16_000),
            ..Config::default()
        };
        f(&mut config);
        Compactor::new(config).unwrap()
    };
    let summarize = |c: &Compactor| match c.plan_manual(&messages).unwrap().actions.pop() {
        Some(Action::Summarize(s)) => s,
        other => panic!("{other:?}"),
    };
    // Anthropic prices a cache read at 0.1: the continuation is offered.
    let s = summarize(&claude(&|_| {}));
    let k = s.request.continuation.as_ref().expect("a continuation");
    assert_eq!(
        k.end, s.end,
        "the prefix is the conversation up to the span's end"
    );
    assert!(k.cost * 2 < k.plain_cost, "{} vs {}", k.cost, k.plain_cost);
    assert!(k.prefix_tokens > k.plain_cost / 2);
    for needle in [
        "Summarize the conversation above in this structure",
        "## Plan / Todo",
        &format!("Summarize messages {}–{} of it", s.start + 1, s.end),
        "do not call any tool",
    ] {
        assert!(
            k.instruction.contains(needle),
            "{needle}: {}",
            k.instruction
        );
    }
    // The plain request is still there for a host that cannot send the continuation.
    assert!(s.request.prompt.contains("# Conversation (messages"));

    // No prompt cache, or turned off: not offered.
    let none = claude(&|c| c.cache.provider = Some(CacheProvider::None));
    assert!(summarize(&none).request.continuation.is_none());
    let off = claude(&|c| c.history.continuation = false);
    assert!(summarize(&off).request.continuation.is_none());
    // GPT-4o's cache read costs 0.5: 14k tokens of prefix cost more than the plain request
    // (capped at a quarter of the window), so no continuation; at GPT-5's 0.1, one.
    assert!(summarize(&gpt4o(16_000, |_| {}))
        .request
        .continuation
        .is_none());
    let cheap_reads = gpt4o(16_000, |c| c.cache.read_multiplier = Some(0.1));
    assert!(summarize(&cheap_reads).request.continuation.is_some());
}
