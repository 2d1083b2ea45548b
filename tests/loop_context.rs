//! Loop context (seed 003): rolling window, truncation, summary requests driven by a scripted
//! host, prompt sections and budget, persistence.

use context_compactor::loop_context::{
    build_prompt, is_complete, progress_markers, Iteration, LoopConfig, LoopContext, SummaryRequest,
};
use context_compactor::{count_tokens, Encoding, Error};
use serde_json::{json, Value};

const START: u64 = 1_700_000_000_000;

fn iteration(output: &str) -> Iteration {
    Iteration {
        unix_ms: START,
        cli: "claude-code".into(),
        model: "opus".into(),
        prompt: "continue".into(),
        output: output.into(),
        progress_score: 0.5,
        duration_ms: 12_000,
        ..Iteration::default()
    }
}

/// Adds iterations whose output names their number; returns every summary request issued.
fn run(ctx: &mut LoopContext, config: &LoopConfig, count: u32) -> Vec<SummaryRequest> {
    (0..count)
        .filter_map(|_| {
            let n = ctx.total_iterations + 1;
            ctx.add_iteration(iteration(&format!("output of iteration {n}")), config)
        })
        .collect()
}

fn tokens(text: &str) -> usize {
    count_tokens(text, Encoding::O200kBase).unwrap()
}

fn numbers(iterations: &[Iteration]) -> Vec<u32> {
    iterations.iter().map(|it| it.number).collect()
}

/// Words that cost about one token each, distinct enough not to merge.
fn words(prefix: &str, n: usize) -> String {
    (0..n).map(|i| format!("{prefix}{} ", i % 97)).collect()
}

fn section<'a>(prompt: &'a str, heading: &str) -> &'a str {
    let start = prompt
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading} in:\n{prompt}"));
    let rest = &prompt[start..];
    match rest[heading.len()..].find("\n\n# ") {
        Some(end) => &rest[..heading.len() + end],
        None => rest,
    }
}

// --- configuration -------------------------------------------------------------------------

#[test]
fn defaults_follow_seed_003() {
    let config = LoopConfig::default();
    assert_eq!(config.raw_window_size, 5);
    assert_eq!(config.summarize_every, 10);
    assert_eq!(config.max_summary_tokens, 2_000);
    assert_eq!(config.prompt_max_chars, 500);
    assert_eq!(config.output_max_chars, 5_000);
    assert_eq!(config.recent_in_prompt, 3);
    assert_eq!(config.recent_output_chars, 1_000);
    assert_eq!(config.goal_max_tokens, 1_000);
    assert_eq!(config.instructions_max_tokens, 500);
    assert_eq!(config.total_budget_tokens, 50_000);
    assert_eq!(config.validate(), Ok(()));
    assert_eq!(LoopConfig::from_json("{}"), Ok(config.clone()));

    let value = serde_json::to_value(&config).unwrap();
    assert_eq!(value["rawWindowSize"], 5);
    assert_eq!(value["summarizeEvery"], 10);
    assert_eq!(value["totalBudgetTokens"], 50_000);
}

#[test]
fn config_json_overrides_and_errors_name_the_field() {
    let config = LoopConfig::from_json(r#"{"rawWindowSize": 8, "summarizeEvery": 4}"#).unwrap();
    assert_eq!((config.raw_window_size, config.summarize_every), (8, 4));
    assert_eq!(config.output_max_chars, 5_000);

    let field = |json: &str| match LoopConfig::from_json(json) {
        Err(Error::InvalidConfig { field, .. }) => field,
        other => panic!("{json}: expected InvalidConfig, got {other:?}"),
    };
    assert_eq!(field(r#"{"rawWindowSize": 0}"#), "rawWindowSize");
    assert_eq!(field(r#"{"summarizeEvery": 0}"#), "summarizeEvery");
    assert_eq!(field(r#"{"outputMaxChars": 0}"#), "outputMaxChars");
    assert_eq!(field(r#"{"goalMaxTokens": 0}"#), "goalMaxTokens");
    assert_eq!(field(r#"{"recentInPrompt": 6}"#), "recentInPrompt");
    assert_eq!(
        field(r#"{"instructionsMaxTokens": 10}"#),
        "instructionsMaxTokens"
    );
    assert_eq!(field(r#"{"totalBudgetTokens": 700}"#), "totalBudgetTokens");
    assert_eq!(field(r#"{"summarizeEvery": "often"}"#), "summarizeEvery");
    match LoopConfig::from_json(r#"{"rawWindow": 5}"#) {
        Err(Error::InvalidConfig { message, .. }) => {
            assert!(message.contains("rawWindow"), "{message}")
        }
        other => panic!("unknown key accepted: {other:?}"),
    }
    assert!(matches!(
        LoopConfig::from_json("{"),
        Err(Error::MalformedJson { .. })
    ));
}

#[test]
fn validate_catches_values_set_in_rust() {
    let config = LoopConfig {
        raw_window_size: 0,
        ..LoopConfig::default()
    };
    assert!(
        matches!(config.validate(), Err(Error::InvalidConfig { field, .. }) if field == "rawWindowSize")
    );
}

#[test]
fn unvalidated_zeroes_do_not_panic() {
    let config = LoopConfig {
        raw_window_size: 0,
        summarize_every: 0,
        ..LoopConfig::default()
    };
    let mut ctx = LoopContext::new("goal", START);
    assert!(
        run(&mut ctx, &config, 25).is_empty(),
        "summarizeEvery 0 never asks"
    );
    assert_eq!(numbers(&ctx.iterations), [25], "a zero window behaves as 1");
    assert_eq!(ctx.pending.len(), 24);
    assert!(build_prompt(&ctx, &config).contains("## Iteration 25"));
}

// --- window and truncation -----------------------------------------------------------------

#[test]
fn window_keeps_the_last_five_and_queues_the_rest() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    assert!(
        run(&mut ctx, &config, 7).is_empty(),
        "nothing is due before iteration 10"
    );
    assert_eq!(ctx.total_iterations, 7);
    assert_eq!(numbers(&ctx.iterations), [3, 4, 5, 6, 7]);
    assert_eq!(numbers(&ctx.pending), [1, 2]);
    assert_eq!(
        ctx.pending[0].output, "output of iteration 1",
        "pending iterations are kept whole"
    );
}

#[test]
fn numbers_are_assigned_and_current_cli_model_follow_the_latest() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let _ = ctx.add_iteration(
        Iteration {
            number: 42,
            ..iteration("a")
        },
        &config,
    );
    let _ = ctx.add_iteration(
        Iteration {
            cli: "codex".into(),
            model: "gpt-5".into(),
            ..iteration("b")
        },
        &config,
    );
    let _ = ctx.add_iteration(
        Iteration {
            cli: String::new(),
            model: String::new(),
            ..iteration("c")
        },
        &config,
    );
    assert_eq!(numbers(&ctx.iterations), [1, 2, 3]);
    assert_eq!(
        (ctx.current_cli.as_str(), ctx.current_model.as_str()),
        ("codex", "gpt-5")
    );
}

#[test]
fn long_output_and_prompt_are_truncated_and_marked() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let _ = ctx.add_iteration(
        Iteration {
            prompt: "p".repeat(600),
            ..iteration(&"o".repeat(6_000))
        },
        &config,
    );
    let it = &ctx.iterations[0];
    assert_eq!(
        it.output,
        format!("{}…[truncated 1000 chars]", "o".repeat(5_000))
    );
    assert_eq!(it.output_cut_chars, 1_000);
    assert_eq!(
        it.prompt,
        format!("{}…[truncated 100 chars]", "p".repeat(500))
    );
    assert_eq!(it.prompt_cut_chars, 100);

    // Exactly at the limit: untouched.
    let _ = ctx.add_iteration(iteration(&"x".repeat(5_000)), &config);
    assert_eq!(ctx.iterations[1].output.len(), 5_000);
    assert_eq!(ctx.iterations[1].output_cut_chars, 0);
}

#[test]
fn truncation_counts_characters_not_bytes() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    // 4,998 ASCII, then multibyte characters straddling the 5,000-character cut.
    let output = format!("{}é日🦀本語", "a".repeat(4_998));
    let _ = ctx.add_iteration(iteration(&output), &config);
    let stored = &ctx.iterations[0].output;
    assert_eq!(
        stored,
        &format!("{}é日…[truncated 3 chars]", "a".repeat(4_998))
    );
    assert_eq!(ctx.iterations[0].output_cut_chars, 3);

    let prompt = format!("{}🦀🦀", "ü".repeat(499));
    let _ = ctx.add_iteration(
        Iteration {
            prompt,
            ..iteration("ok")
        },
        &config,
    );
    assert_eq!(
        ctx.iterations[1].prompt,
        format!("{}🦀…[truncated 1 chars]", "ü".repeat(499))
    );
}

#[test]
fn empty_output_is_stored_empty_and_noted() {
    let config = LoopConfig {
        summarize_every: 2,
        raw_window_size: 1,
        recent_in_prompt: 1,
        ..LoopConfig::default()
    };
    let mut ctx = LoopContext::new("goal", START);
    assert!(ctx.add_iteration(iteration(""), &config).is_none());
    assert_eq!(ctx.iterations[0].output, "");
    assert!(section(&build_prompt(&ctx, &config), "# Recent Iterations").contains("(no output)"));

    let request = ctx
        .add_iteration(iteration("second"), &config)
        .expect("due at 2");
    assert_eq!((request.from, request.through), (1, 1));
    assert!(
        request.chat.prompt.contains("### Iteration 1\n"),
        "{}",
        request.chat.prompt
    );
    assert!(
        request.chat.prompt.contains("Output:\n(no output)"),
        "{}",
        request.chat.prompt
    );
}

#[test]
fn progress_markers_come_from_the_full_output() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let long = format!(
        "{}\n<progress>login endpoint done</progress>",
        "log line\n".repeat(1_000)
    );
    let _ = ctx.add_iteration(iteration(&long), &config);
    assert_eq!(ctx.iterations[0].progress_markers, ["login endpoint done"]);
    assert!(
        ctx.iterations[0].output_cut_chars > 0,
        "the marker was in the cut part"
    );

    let given = Iteration {
        progress_markers: vec!["host says".into()],
        ..iteration("<progress>x</progress>")
    };
    let _ = ctx.add_iteration(given, &config);
    assert_eq!(ctx.iterations[1].progress_markers, ["host says"]);

    assert_eq!(
        progress_markers(
            "<progress> a </progress> <progress></progress><progress>b</progress><progress>c"
        ),
        ["a", "b"]
    );
    assert!(is_complete("all done <promise>COMPLETE</promise>"));
    assert!(!is_complete("<promise>NOT YET</promise>"));
}

#[test]
fn non_finite_scores_are_stored_as_zero() {
    let mut ctx = LoopContext::new("goal", START);
    let _ = ctx.add_iteration(
        Iteration {
            progress_score: f64::NAN,
            ..iteration("x")
        },
        &LoopConfig::default(),
    );
    assert_eq!(ctx.iterations[0].progress_score, 0.0);
}

// --- summary requests -----------------------------------------------------------------------

#[test]
fn a_summary_is_requested_every_ten_iterations_for_what_left_the_window() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("Add JWT login", START);
    let mut requests = Vec::new();
    for n in 1..=10 {
        let request = ctx.add_iteration(iteration(&format!("output of iteration {n}")), &config);
        assert_eq!(request.is_some(), n == 10, "iteration {n}");
        requests.extend(request);
    }
    let request = &requests[0];
    assert_eq!(
        (request.from, request.through, request.chat.max_tokens),
        (1, 5, 2_000)
    );
    assert!(
        request.id.starts_with("loop-summary-1-5-"),
        "{}",
        request.id
    );
    assert_eq!(
        ctx.summary_in_flight.as_ref().map(|f| f.id.as_str()),
        Some(request.id.as_str())
    );

    let prompt = &request.chat.prompt;
    let order = [
        "## Goal\nAdd JWT login",
        "## Existing Progress Summary\n(none yet",
        "## New Iterations to Incorporate",
        "## Task",
    ];
    let positions: Vec<usize> = order
        .iter()
        .map(|s| {
            prompt
                .find(s)
                .unwrap_or_else(|| panic!("{s} missing:\n{prompt}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{prompt}");
    assert!(prompt.contains("### Iteration 1\n") && prompt.contains("output of iteration 5"));
    assert!(
        !prompt.contains("### Iteration 6"),
        "iterations still in the window are not summarized"
    );
    assert!(
        prompt.contains("Preserves key decisions and findings") && prompt.contains("max 500 words")
    );
    assert!(prompt.contains("iterations 1-5"));
    assert!(
        request.chat.system.contains("failed approaches")
            && request.chat.system.contains("Discard verbose output logs")
    );

    let messages = serde_json::to_value(&request.chat.messages).unwrap();
    assert_eq!(messages, json!([{"role": "user", "content": prompt}]));
}

#[test]
fn no_request_when_nothing_left_the_window() {
    let config = LoopConfig {
        raw_window_size: 20,
        recent_in_prompt: 3,
        ..LoopConfig::default()
    };
    let mut ctx = LoopContext::new("goal", START);
    assert!(
        run(&mut ctx, &config, 20).is_empty(),
        "iterations 10 and 20 have nothing pending"
    );
    assert!(ctx.request_summary(&config).is_none());
    let requests = run(&mut ctx, &config, 10);
    assert_eq!(
        requests
            .iter()
            .map(|r| (r.from, r.through))
            .collect::<Vec<_>>(),
        [(1, 10)]
    );
}

#[test]
fn applied_summary_replaces_pending_and_feeds_the_next_request() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let first = run(&mut ctx, &config, 10).pop().unwrap();
    ctx.apply_summary(&first.id, Ok("  Chose JWT. Steps 1-5 done.\n".into()))
        .unwrap();
    assert_eq!(ctx.summary, "Chose JWT. Steps 1-5 done.");
    assert_eq!(ctx.summarized_through, 5);
    assert!(ctx.pending.is_empty() && ctx.summary_in_flight.is_none());
    assert_eq!(
        numbers(&ctx.iterations),
        [6, 7, 8, 9, 10],
        "the raw window is untouched"
    );

    let second = run(&mut ctx, &config, 10).pop().unwrap();
    assert_eq!((second.from, second.through), (6, 15));
    assert!(second
        .chat
        .prompt
        .contains("## Existing Progress Summary\nChose JWT. Steps 1-5 done."));
    assert!(second.chat.prompt.contains("iterations 1-15"));
}

#[test]
fn failed_summary_keeps_everything_and_retries_at_the_next_interval() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let first = run(&mut ctx, &config, 10).pop().unwrap();
    ctx.apply_summary(&first.id, Err("429 rate limited".into()))
        .unwrap();
    assert_eq!(numbers(&ctx.pending), [1, 2, 3, 4, 5], "nothing lost");
    assert_eq!((ctx.summary.as_str(), ctx.summarized_through), ("", 0));
    assert_eq!(
        (ctx.summary_failures, ctx.last_summary_error.as_deref()),
        (1, Some("429 rate limited"))
    );
    assert!(ctx.summary_in_flight.is_none());

    // Until then, the prompt still tells the agent what those iterations did.
    let prompt = build_prompt(&ctx, &config);
    let earlier = section(&prompt, "# Earlier Iterations (not yet summarized)");
    assert!(
        earlier.contains("- Iteration 1 (score 0.50)") && earlier.contains("- Iteration 5"),
        "{earlier}"
    );
    assert!(!prompt.contains("# Progress Summary"));

    let requests = run(&mut ctx, &config, 10);
    assert_eq!(requests.len(), 1, "one retry, at iteration 20");
    let retry = &requests[0];
    assert_eq!((retry.from, retry.through), (1, 15));
    assert!(
        retry.chat.prompt.contains("### Iteration 1\n")
            && retry.chat.prompt.contains("### Iteration 15\n"),
        "the retry carries the failed batch and the new one"
    );
    ctx.apply_summary(&retry.id, Ok("All of 1-15.".into()))
        .unwrap();
    assert!(ctx.pending.is_empty());
    assert_eq!(
        (
            ctx.summarized_through,
            ctx.summary_failures,
            ctx.last_summary_error.clone()
        ),
        (15, 0, None)
    );
}

#[test]
fn an_empty_summary_counts_as_a_failure() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let first = run(&mut ctx, &config, 10).pop().unwrap();
    ctx.apply_summary(&first.id, Ok(" \n".into())).unwrap();
    assert_eq!(ctx.pending.len(), 5);
    assert_eq!(ctx.summary_failures, 1);
    assert!(ctx.last_summary_error.as_deref().unwrap().contains("empty"));
}

#[test]
fn request_summary_retries_at_once() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let first = run(&mut ctx, &config, 10).pop().unwrap();
    ctx.apply_summary(&first.id, Err("timeout".into())).unwrap();
    let retry = ctx
        .request_summary(&config)
        .expect("pending iterations exist");
    assert_eq!((retry.from, retry.through), (1, 5));
    assert_eq!(retry.id, first.id, "same state, same content-addressed id");
    ctx.apply_summary(&retry.id, Ok("done".into())).unwrap();
    assert_eq!(ctx.summarized_through, 5);
}

#[test]
fn stale_and_unknown_ids_are_typed_errors_and_change_nothing() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let old = run(&mut ctx, &config, 10).pop().unwrap();
    assert!(run(&mut ctx, &config, 2).is_empty());
    let new = ctx.request_summary(&config).unwrap();
    assert_eq!((new.from, new.through), (1, 7));
    assert_ne!(new.id, old.id);

    let before = ctx.clone();
    match ctx.apply_summary(&old.id, Ok("late".into())) {
        Err(Error::PlanMismatch { action_id, message }) => {
            assert_eq!(action_id.as_deref(), Some(old.id.as_str()));
            assert!(
                message.contains("stale") && message.contains(&new.id),
                "{message}"
            );
        }
        other => panic!("stale id accepted: {other:?}"),
    }
    assert_eq!(ctx, before);

    ctx.apply_summary(&new.id, Ok("1-7".into())).unwrap();
    let again = ctx.apply_summary(&new.id, Ok("twice".into()));
    assert!(
        matches!(&again, Err(Error::PlanMismatch { action_id: Some(id), .. }) if *id == new.id),
        "{again:?}"
    );
    assert!(matches!(
        ctx.apply_summary("nope", Err("x".into())),
        Err(Error::PlanMismatch { .. })
    ));
    assert_eq!(ctx.summary, "1-7");
}

#[test]
fn request_ids_are_deterministic_and_content_addressed() {
    let config = LoopConfig::default();
    let (mut a, mut b) = (
        LoopContext::new("goal", START),
        LoopContext::new("goal", START),
    );
    assert_eq!(
        run(&mut a, &config, 10)[0].id,
        run(&mut b, &config, 10)[0].id
    );
    let mut c = LoopContext::new("another goal", START);
    assert_ne!(
        run(&mut c, &config, 10)[0].id,
        a.summary_in_flight.unwrap().id
    );
}

// --- prompt ---------------------------------------------------------------------------------

#[test]
fn first_iteration_has_no_summary_only_the_current_state() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("Ship the feature", START);
    let prompt = build_prompt(&ctx, &config);
    assert!(
        prompt.starts_with("# Goal\nShip the feature\n\n# Current State\n- Total iterations: 0"),
        "{prompt}"
    );
    assert!(prompt.contains("- Current CLI: (none yet)"));
    assert!(!prompt.contains("# Progress Summary") && !prompt.contains("# Recent Iterations"));

    let _ = ctx.add_iteration(iteration("<progress>scaffolded</progress>"), &config);
    let prompt = build_prompt(&ctx, &config);
    let recent = section(&prompt, "# Recent Iterations");
    assert!(recent.starts_with("# Recent Iterations\n## Iteration 1 (claude-code / opus, score 0.50)\nProgress: scaffolded\n"), "{recent}");
    assert!(!prompt.contains("# Progress Summary"));
}

#[test]
fn prompt_has_the_seed_sections_in_order() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("Add JWT login", START);
    let request = run(&mut ctx, &config, 10).pop().unwrap();
    ctx.apply_summary(&request.id, Ok("Chose JWT over sessions.".into()))
        .unwrap();
    let _ = ctx.add_iteration(
        Iteration {
            file_changes: vec!["src/auth.rs".into()],
            cli: "codex".into(),
            ..iteration(&"z".repeat(3_000))
        },
        &config,
    );
    let prompt = build_prompt(&ctx, &config);

    let headings = [
        "# Goal\n",
        "# Progress Summary (iterations 1-5)\n",
        "# Recent Iterations\n",
        "# Current State\n",
        "# Instructions\n",
    ];
    let positions: Vec<usize> = headings
        .iter()
        .map(|h| {
            prompt
                .find(h)
                .unwrap_or_else(|| panic!("{h} missing:\n{prompt}"))
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{prompt}");

    let recent = section(&prompt, "# Recent Iterations");
    assert!(
        !recent.contains("## Iteration 8")
            && recent.contains("## Iteration 9")
            && recent.contains("## Iteration 11"),
        "last 3 only:\n{recent}"
    );
    assert!(recent.contains("Files changed: src/auth.rs"));
    assert!(
        recent.ends_with(&format!("{}…[truncated 2000 chars]", "z".repeat(1_000))),
        "output cut to 1,000 chars"
    );

    let state = section(&prompt, "# Current State");
    assert_eq!(
        state,
        "# Current State\n- Total iterations: 11\n- Current CLI: codex\n- Current model: opus"
    );
    let instructions = section(&prompt, "# Instructions");
    assert!(instructions.contains("`<progress>what you accomplished</progress>`"));
    assert!(instructions.contains("`<promise>COMPLETE</promise>` when goal is fully achieved"));
}

#[test]
fn recent_output_marker_counts_what_the_original_lost() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let _ = ctx.add_iteration(iteration(&"q".repeat(8_000)), &config);
    let recent = section(&build_prompt(&ctx, &config), "# Recent Iterations").to_owned();
    assert!(
        recent.ends_with(&format!("{}…[truncated 7000 chars]", "q".repeat(1_000))),
        "{recent}"
    );
}

#[test]
fn goal_and_summary_are_cut_to_their_token_caps() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new(words("goal", 3_000), START);
    ctx.summary = words("sum", 5_000);
    ctx.summarized_through = 1;
    let prompt = build_prompt(&ctx, &config);
    let goal = section(&prompt, "# Goal\n").trim_start_matches("# Goal\n");
    assert!(
        tokens(goal) <= 1_000 && tokens(goal) > 900,
        "{}",
        tokens(goal)
    );
    assert!(goal.contains("…[truncated "));
    let summary = section(&prompt, "# Progress Summary (iterations 1-1)\n")
        .trim_start_matches("# Progress Summary (iterations 1-1)\n");
    assert!(
        tokens(summary) <= 2_000 && tokens(summary) > 1_900,
        "{}",
        tokens(summary)
    );
}

#[test]
fn over_budget_cuts_older_iterations_then_the_summary() {
    let config = LoopConfig {
        total_budget_tokens: 2_000,
        ..LoopConfig::default()
    };
    let mut ctx = LoopContext::new("Ship it", START);
    for n in 1..=6 {
        let _ = ctx.add_iteration(iteration(&words(&format!("it{n}w"), 400)), &config);
    }
    ctx.summary = words("sum", 1_900);
    ctx.summarized_through = 1;

    let prompt = build_prompt(&ctx, &config);
    assert!(tokens(&prompt) <= 2_000, "{}", tokens(&prompt));
    assert!(!prompt.contains("# Earlier Iterations"), "cut first");
    assert!(
        prompt.contains("## Iteration 6") && !prompt.contains("## Iteration 5"),
        "newest kept, older cut"
    );
    let summary = section(&prompt, "# Progress Summary");
    assert!(
        summary.contains("…[truncated "),
        "summary shortened, not dropped"
    );
    assert!(prompt.starts_with("# Goal\nShip it\n"));
    assert!(prompt.contains("# Current State") && prompt.contains("<promise>COMPLETE</promise>"));
}

#[test]
fn at_the_minimum_budget_only_goal_state_and_instructions_remain() {
    let config = LoopConfig {
        total_budget_tokens: 800,
        ..LoopConfig::default()
    };
    assert_eq!(config.validate(), Ok(()));
    let mut ctx = LoopContext::new(words("goal", 3_000), START);
    run(&mut ctx, &config, 3);
    ctx.summary = words("sum", 3_000);
    ctx.summarized_through = 1;

    let prompt = build_prompt(&ctx, &config);
    assert!(tokens(&prompt) <= 800, "{}", tokens(&prompt));
    assert!(!prompt.contains("# Progress Summary") && !prompt.contains("# Recent Iterations"));
    assert!(
        prompt.starts_with("# Goal\ngoal0 goal1"),
        "the goal is shortened, never dropped"
    );
    assert!(prompt.contains("- Total iterations: 3") && prompt.contains("# Instructions"));
}

#[test]
fn extra_instructions_are_capped() {
    let config = LoopConfig {
        extra_instructions: words("rule", 2_000),
        ..LoopConfig::default()
    };
    let ctx = LoopContext::new("goal", START);
    let instructions = section(&build_prompt(&ctx, &config), "# Instructions").to_owned();
    assert!(
        instructions.contains("<promise>COMPLETE</promise>")
            && instructions.contains("rule0 rule1")
    );
    assert!(tokens(&instructions) <= 500, "{}", tokens(&instructions));
    assert!(
        tokens(&instructions) > 400,
        "uses the room it has: {}",
        tokens(&instructions)
    );
}

// --- persistence ----------------------------------------------------------------------------

#[test]
fn state_round_trips_through_json_in_camel_case() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let failed = run(&mut ctx, &config, 10).pop().unwrap();
    ctx.apply_summary(&failed.id, Err("boom".into())).unwrap();
    let in_flight = run(&mut ctx, &config, 10).pop().unwrap();
    let _ = ctx.add_iteration(
        Iteration {
            file_changes: vec!["a.rs".into()],
            ..iteration("é🦀")
        },
        &config,
    );

    let json = serde_json::to_string(&ctx).unwrap();
    let back: LoopContext = serde_json::from_str(&json).unwrap();
    assert_eq!(back, ctx);
    assert_eq!(build_prompt(&back, &config), build_prompt(&ctx, &config));

    let value: Value = serde_json::from_str(&json).unwrap();
    for key in [
        "goal",
        "startUnixMs",
        "iterations",
        "pending",
        "summary",
        "summarizedThrough",
        "totalIterations",
        "currentCli",
        "currentModel",
        "summaryInFlight",
        "summaryFailures",
        "lastSummaryError",
    ] {
        assert!(value.get(key).is_some(), "{key} missing: {value}");
    }
    assert_eq!(
        value["summaryInFlight"],
        json!({"id": in_flight.id, "from": 1, "through": 15})
    );
    let iteration = &value["iterations"][4];
    for key in [
        "number",
        "unixMs",
        "cli",
        "model",
        "prompt",
        "output",
        "progressScore",
        "progressMarkers",
        "fileChanges",
        "durationMs",
        "promptCutChars",
        "outputCutChars",
    ] {
        assert!(iteration.get(key).is_some(), "{key} missing: {iteration}");
    }

    // The persisted request id still applies after the round trip.
    let mut back = back;
    back.apply_summary(&in_flight.id, Ok("1-15".into()))
        .unwrap();
    assert_eq!(back.summarized_through, 15);
}

#[test]
fn summary_request_serializes_for_a_js_host() {
    let config = LoopConfig::default();
    let mut ctx = LoopContext::new("goal", START);
    let request = run(&mut ctx, &config, 10).pop().unwrap();
    let value = serde_json::to_value(&request).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "from",
            "through",
            "system",
            "prompt",
            "messages",
            "maxTokens"
        ]
    );
    let back: SummaryRequest = serde_json::from_value(value).unwrap();
    assert_eq!(back, request);
}

#[test]
fn iterations_from_json_take_defaults_and_reject_typos() {
    let it: Iteration = serde_json::from_str(r#"{"output": "hi", "unixMs": 5}"#).unwrap();
    assert_eq!((it.output.as_str(), it.unix_ms, it.number), ("hi", 5, 0));
    let typo = serde_json::from_str::<Iteration>(r#"{"ouput": "hi"}"#).unwrap_err();
    assert!(typo.to_string().contains("ouput"), "{typo}");
    let state: LoopContext =
        serde_json::from_str(r#"{"goal": "g", "someFutureField": 1}"#).unwrap();
    assert_eq!(state.goal, "g");
}

#[test]
fn the_pending_list_comes_back_when_cutting_older_iterations_made_room() {
    let mut ctx = LoopContext::new("Ship it", START);
    let unlimited = LoopConfig::default();
    for n in 1..=7 {
        let _ = ctx.add_iteration(iteration(&words(&format!("it{n}w"), 300)), &unlimited);
    }
    assert!(
        !ctx.pending.is_empty(),
        "iterations past the raw window wait for a summary"
    );
    let full = build_prompt(&ctx, &unlimited);
    assert!(full.contains("# Earlier Iterations"));
    // A budget a little under the full prompt: one recent iteration goes, the pending list
    // (a few short lines) fits again and stays in view.
    let config = LoopConfig {
        total_budget_tokens: (tokens(&full) - 20) as u32,
        ..LoopConfig::default()
    };
    let prompt = build_prompt(&ctx, &config);
    assert!(tokens(&prompt) <= config.total_budget_tokens as usize);
    assert!(
        prompt.contains("# Earlier Iterations"),
        "pending iterations hidden although they fit:\n{prompt}"
    );
}
