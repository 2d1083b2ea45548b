//! Loop context for autonomous agent loops (seed 003): a rolling window of raw iterations plus
//! an LLM-written summary of everything older, and the prompt that carries both into the next
//! iteration.
//!
//! Sans-IO like the rest of the crate: no clock (timestamps come in on each [`Iteration`]), no
//! LLM. When older iterations are due to be summarized, [`LoopContext::add_iteration`] returns a
//! [`SummaryRequest`]; the host sends it to a cheap model and reports the result with
//! [`LoopContext::apply_summary`]. [`LoopContext`] is plain serde data, so an edge worker can
//! persist it as JSON between requests.
//!
//! ## The host loop
//!
//! ```
//! use context_compactor::loop_context::{build_prompt, Iteration, LoopConfig, LoopContext};
//!
//! let config = LoopConfig::default(); // window 5, summarize every 10 (seed 003)
//! let mut ctx = LoopContext::new("Add JWT login to the API", 1_700_000_000_000);
//! let mut due = None;
//! for i in 0..10u64 {
//!     let prompt = build_prompt(&ctx, &config);
//!     // ... the host runs its agent CLI with `prompt` and captures the output ...
//!     let output = format!("worked on step {i}\n<progress>step {i} done</progress>");
//!     let iteration = Iteration {
//!         unix_ms: 1_700_000_000_000 + i * 60_000,
//!         cli: "claude-code".into(),
//!         model: "opus".into(),
//!         prompt,
//!         output,
//!         ..Iteration::default()
//!     };
//!     if let Some(request) = ctx.add_iteration(iteration, &config) {
//!         due = Some(request);
//!     }
//! }
//!
//! // Iteration 10 asks for a summary of iterations 1-5 (6-10 are still in the raw window).
//! let request = due.expect("a summary is due at iteration 10");
//! assert_eq!((request.from, request.through), (1, 5));
//! // The host sends `request.system` + `request.messages` to its LLM, then reports back.
//! ctx.apply_summary(&request.id, Ok("Chose JWT over sessions. Steps 0-4 done.".into()))?;
//!
//! let prompt = build_prompt(&ctx, &config);
//! assert!(prompt.contains("# Progress Summary (iterations 1-5)\nChose JWT over sessions."));
//! assert!(prompt.contains("## Iteration 10"));
//! # Ok::<(), context_compactor::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::counting::{count_tokens, Encoding};
use crate::error::{Error, Result};

/// The tag the agent wraps each piece of progress in (seed 003 instructions).
pub const PROGRESS_OPEN: &str = "<progress>";
/// Closes [`PROGRESS_OPEN`].
pub const PROGRESS_CLOSE: &str = "</progress>";
/// What the agent prints when the goal is fully achieved (seed 003 instructions).
pub const COMPLETE_PROMISE: &str = "<promise>COMPLETE</promise>";

/// Settings of the loop context. Every default comes from seed 003. Unknown keys are rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LoopConfig {
    /// Iterations kept in full detail (seed 003 `raw_window_size`: 5).
    pub raw_window_size: usize,
    /// A summary is requested every this many iterations (seed 003 `summarize_every`: 10).
    pub summarize_every: u32,
    /// Cap on the summary: the request's `maxTokens`, and the summary is cut to it in the prompt
    /// (seed 003 `max_summary_tokens`: 2,000).
    pub max_summary_tokens: u32,
    /// An iteration's prompt is stored truncated to this many characters (seed 003: 500).
    pub prompt_max_chars: usize,
    /// An iteration's output is stored truncated to this many characters (seed 003: 5,000).
    pub output_max_chars: usize,
    /// The last this many raw iterations appear in the prompt (seed 003: "last 3").
    pub recent_in_prompt: usize,
    /// Output characters shown per recent iteration (seed 003: `output[:1000]`).
    pub recent_output_chars: usize,
    /// The goal is cut to this many tokens (seed 003 token allocation: 1,000).
    pub goal_max_tokens: u32,
    /// The Instructions section is capped at this many tokens (seed 003: 500, "fixed").
    pub instructions_max_tokens: u32,
    /// Host text appended to the fixed instructions, cut so the section fits
    /// `instructions_max_tokens`. Empty by default.
    pub extra_instructions: String,
    /// The whole prompt stays under this many tokens (seed 003: "keep total context under
    /// 50k tokens"). See [`build_prompt`] for what is cut first.
    pub total_budget_tokens: u32,
}

impl Default for LoopConfig {
    fn default() -> Self {
        Self {
            raw_window_size: 5,
            summarize_every: 10,
            max_summary_tokens: 2_000,
            prompt_max_chars: 500,
            output_max_chars: 5_000,
            recent_in_prompt: 3,
            recent_output_chars: 1_000,
            goal_max_tokens: 1_000,
            instructions_max_tokens: 500,
            extra_instructions: String::new(),
            total_budget_tokens: 50_000,
        }
    }
}

/// Tokens kept free for the Current State section and the goal's truncation marker, so that
/// [`build_prompt`] can always get under the budget once everything cuttable is cut.
const STATE_RESERVE_TOKENS: u32 = 300;

impl LoopConfig {
    /// Parses a JSON config (camelCase keys, missing keys take their defaults) and validates it.
    /// Errors name the offending key.
    pub fn from_json(json: &str) -> Result<Self> {
        let value = serde_json::from_str(json).map_err(|e| Error::json("loop config", &e))?;
        let config: LoopConfig = crate::config::deserialize(value)?;
        config.validate()?;
        // The loop's budgets are counted in o200k_base: a build without it loaded fails here,
        // typed, rather than counting wrong later.
        crate::counting::bpe::get(Encoding::O200kBase)?;
        Ok(config)
    }

    /// Rejects values that make no sense. `field` is the camelCase key.
    ///
    /// The core never panics on an unvalidated config either: a zero window behaves as 1, a
    /// zero `summarize_every` never asks for a summary on its own.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, message: String| {
            Err(Error::InvalidConfig {
                field: field.into(),
                message,
            })
        };
        let positive: [(&str, usize); 8] = [
            ("rawWindowSize", self.raw_window_size),
            ("summarizeEvery", self.summarize_every as usize),
            ("maxSummaryTokens", self.max_summary_tokens as usize),
            ("promptMaxChars", self.prompt_max_chars),
            ("outputMaxChars", self.output_max_chars),
            ("recentOutputChars", self.recent_output_chars),
            ("goalMaxTokens", self.goal_max_tokens as usize),
            ("totalBudgetTokens", self.total_budget_tokens as usize),
        ];
        if let Some((field, _)) = positive.iter().find(|(_, value)| *value == 0) {
            return bad(field, "must be greater than 0".into());
        }
        if self.recent_in_prompt > self.raw_window_size {
            return bad(
                "recentInPrompt",
                format!(
                    "{} is more than rawWindowSize ({}): only the raw window can be shown",
                    self.recent_in_prompt, self.raw_window_size
                ),
            );
        }
        let base = tokens(BASE_INSTRUCTIONS) as u32;
        if self.instructions_max_tokens < base {
            return bad(
                "instructionsMaxTokens",
                format!("must be at least {base}, the size of the fixed instructions"),
            );
        }
        let floor = self
            .instructions_max_tokens
            .saturating_add(STATE_RESERVE_TOKENS);
        if self.total_budget_tokens < floor {
            return bad(
                "totalBudgetTokens",
                format!(
                    "must be at least {floor}: instructionsMaxTokens plus {STATE_RESERVE_TOKENS} \
                     for the goal and the current state"
                ),
            );
        }
        Ok(())
    }
}

/// One iteration of the loop, as the host reports it. Every field is optional in JSON; unknown
/// keys are rejected (a typo such as `ouput` would otherwise lose the output silently).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Iteration {
    /// 1-based. Assigned by [`LoopContext::add_iteration`] (total iterations + 1); a value the
    /// host supplies is replaced.
    pub number: u32,
    /// When the iteration ended, Unix milliseconds, from the host's clock.
    pub unix_ms: u64,
    /// The CLI or tool that ran it (`claude-code`, `codex`, ...).
    pub cli: String,
    /// The model it used.
    pub model: String,
    /// The prompt it was given; stored truncated to [`LoopConfig::prompt_max_chars`].
    pub prompt: String,
    /// What it printed; stored truncated to [`LoopConfig::output_max_chars`]. May be empty.
    pub output: String,
    /// The host's progress estimate (0.0-1.0 by convention). A non-finite value is stored as 0.
    pub progress_score: f64,
    /// What the agent reported as progress. Left empty, it is filled from the
    /// `<progress>...</progress>` tags of the full output before truncation.
    pub progress_markers: Vec<String>,
    /// Paths the iteration changed.
    pub file_changes: Vec<String>,
    /// How long it ran, milliseconds.
    pub duration_ms: u64,
    /// Characters cut from `prompt` when it was stored (0: kept whole). Set by `add_iteration`.
    pub prompt_cut_chars: usize,
    /// Characters cut from `output` when it was stored (0: kept whole). Set by `add_iteration`.
    pub output_cut_chars: usize,
}

/// The state of one loop: persist it between iterations (it serializes to camelCase JSON).
/// Unknown keys are ignored, so state written by a newer version still loads.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LoopContext {
    /// What the loop is working toward.
    pub goal: String,
    /// When the loop started, Unix milliseconds.
    pub start_unix_ms: u64,
    /// The raw window: the last [`LoopConfig::raw_window_size`] iterations, oldest first.
    pub iterations: Vec<Iteration>,
    /// Iterations that left the window and are not in `summary` yet, oldest first. They stay
    /// here until a summary covering them is applied: a failed summarization loses nothing.
    pub pending: Vec<Iteration>,
    /// The summary of iterations `1..=summarized_through`. Empty before the first summary.
    pub summary: String,
    /// The last iteration `summary` covers (0: none).
    pub summarized_through: u32,
    /// Iterations added so far.
    pub total_iterations: u32,
    /// The CLI of the latest iteration that named one.
    pub current_cli: String,
    /// The model of the latest iteration that named one.
    pub current_model: String,
    /// The summary request the host is working on, if any. Only its id is accepted by
    /// [`LoopContext::apply_summary`].
    pub summary_in_flight: Option<InFlightSummary>,
    /// Summarizations that failed in a row (reset by a successful one).
    pub summary_failures: u32,
    /// Why the last summarization failed, until one succeeds.
    pub last_summary_error: Option<String>,
}

/// The outstanding summary request, as recorded in the state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InFlightSummary {
    /// The request's id.
    pub id: String,
    /// First pending iteration it covers.
    pub from: u32,
    /// Last pending iteration it covers; the new summary covers `1..=through`.
    pub through: u32,
}

/// Work for the host: summarize `pending` iterations `from..=through` into the existing
/// summary. The host MUST send `system` and `messages` (or `prompt`) to an LLM — seed 003 uses
/// a cheap, fast one — with at most `max_tokens` output, then call
/// [`LoopContext::apply_summary`] with `id` and the text, or with the error if the call failed.
#[must_use = "the summary is only updated when the host runs the request and applies the result"]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRequest {
    /// Content-addressed: the same state asks with the same id.
    pub id: String,
    /// First iteration to incorporate.
    pub from: u32,
    /// Last iteration to incorporate; the new summary covers iterations `1..=through`.
    pub through: u32,
    /// What to send: the system prompt (what to preserve and what to discard, seed 003), the
    /// prompt (goal, existing summary, new iterations, task) as one user message, and the
    /// summary's token cap ([`LoopConfig::max_summary_tokens`]). Flattened in JSON.
    #[serde(flatten)]
    pub chat: crate::plan::SummaryRequest,
}

impl LoopContext {
    /// A fresh loop: no iterations, no summary.
    pub fn new(goal: impl Into<String>, start_unix_ms: u64) -> Self {
        Self {
            goal: goal.into(),
            start_unix_ms,
            ..Self::default()
        }
    }

    /// Records a finished iteration and returns a summary request when one is due.
    ///
    /// The iteration gets the next number; its prompt and output are truncated (char-boundary
    /// safe, ending in `…[truncated N chars]`); the oldest raw iterations beyond the window move
    /// to `pending`. A summary of all pending iterations is requested every
    /// `summarize_every` iterations (10, 20, ...) if anything is pending — not on every
    /// overflow, which would cost an LLM call per iteration. A request issued while another is
    /// in flight supersedes it (the old id becomes stale). After a failure, the next interval
    /// retries with everything still pending; [`LoopContext::request_summary`] retries at once.
    #[must_use = "a returned request must be sent to the host's LLM and applied"]
    pub fn add_iteration(
        &mut self,
        mut iteration: Iteration,
        config: &LoopConfig,
    ) -> Option<SummaryRequest> {
        self.total_iterations = self.total_iterations.saturating_add(1);
        iteration.number = self.total_iterations;
        if !iteration.progress_score.is_finite() {
            // NaN and infinities do not survive a JSON round trip.
            iteration.progress_score = 0.0;
        }
        if iteration.progress_markers.is_empty() {
            // Before truncation: the markers usually sit at the end of a long output.
            iteration.progress_markers = progress_markers(&iteration.output);
        }
        (iteration.prompt, iteration.prompt_cut_chars) =
            truncate_chars(&iteration.prompt, config.prompt_max_chars);
        (iteration.output, iteration.output_cut_chars) =
            truncate_chars(&iteration.output, config.output_max_chars);
        if !iteration.cli.is_empty() {
            self.current_cli.clone_from(&iteration.cli);
        }
        if !iteration.model.is_empty() {
            self.current_model.clone_from(&iteration.model);
        }

        self.iterations.push(iteration);
        let window = config.raw_window_size.max(1);
        let overflow = self.iterations.len().saturating_sub(window);
        self.pending.extend(self.iterations.drain(..overflow));

        let interval = config.summarize_every;
        if interval == 0 || self.total_iterations % interval != 0 {
            return None;
        }
        self.request_summary(config)
    }

    /// Issues a summary request for everything pending now, regardless of the interval (to
    /// retry right after a failure, or to summarize at the end of a loop). `None` when nothing
    /// is pending. Supersedes any request in flight.
    #[must_use = "a returned request must be sent to the host's LLM and applied"]
    pub fn request_summary(&mut self, config: &LoopConfig) -> Option<SummaryRequest> {
        let from = self.pending.first()?.number;
        let through = self.pending.last()?.number;
        let prompt = self.summary_prompt(config, through);
        let id = format!(
            "loop-summary-{from}-{through}-{}",
            crate::hash::short_hex(prompt.as_bytes())
        );
        self.summary_in_flight = Some(InFlightSummary {
            id: id.clone(),
            from,
            through,
        });
        Some(SummaryRequest {
            id,
            from,
            through,
            chat: crate::plan::SummaryRequest::new(
                SUMMARY_SYSTEM,
                prompt,
                config.max_summary_tokens,
            ),
        })
    }

    /// Reports the host's summarization of request `id`: `Ok(text)` replaces the summary and
    /// drops the pending iterations it covers; `Err(error)` (or an empty text, which would wipe
    /// the summary) keeps everything pending for the next interval and records the error.
    ///
    /// Errors with [`Error::PlanMismatch`] when `id` is not the request in flight (stale,
    /// superseded, already applied, or unknown); the state is then unchanged.
    pub fn apply_summary(
        &mut self,
        id: &str,
        result: std::result::Result<String, String>,
    ) -> Result<()> {
        let Some(in_flight) = self.summary_in_flight.take_if(|f| f.id == id) else {
            let message = match &self.summary_in_flight {
                Some(current) => format!(
                    "summary request \"{id}\" is stale: the one in flight is \"{}\"",
                    current.id
                ),
                None => format!("no summary request is in flight (\"{id}\" was never issued or was already applied)"),
            };
            return Err(Error::PlanMismatch {
                action_id: Some(id.to_owned()),
                message,
            });
        };
        let text = match result {
            Ok(text) if !text.trim().is_empty() => text.trim().to_owned(),
            // An empty summary would wipe what the old one knew: treat it as a failure.
            Ok(_) => return self.summary_failed("the summarizer returned an empty summary".into()),
            Err(error) => return self.summary_failed(error),
        };
        self.summary = text;
        self.summarized_through = self.summarized_through.max(in_flight.through);
        self.pending.retain(|it| it.number > in_flight.through);
        self.summary_failures = 0;
        self.last_summary_error = None;
        Ok(())
    }

    /// Keeps everything pending (the next interval retries) and records why.
    fn summary_failed(&mut self, error: String) -> Result<()> {
        self.summary_failures = self.summary_failures.saturating_add(1);
        self.last_summary_error = Some(error);
        Ok(())
    }

    fn summary_prompt(&self, config: &LoopConfig, through: u32) -> String {
        let existing = match self.summary.trim() {
            "" => "(none yet: this is the first summary)",
            summary => summary,
        };
        let iterations: Vec<String> = self.pending.iter().map(summary_entry).collect();
        // Seed 003 asks for "max 500 words" next to a 2,000-token cap: keep that ratio.
        let words = (config.max_summary_tokens / 4).max(1);
        format!(
            "## Goal\n{goal}\n\n\
             ## Existing Progress Summary\n{existing}\n\n\
             ## New Iterations to Incorporate\n{iterations}\n\n\
             ## Task\n\
             Generate an updated progress summary of iterations 1-{through} that:\n\
             1. Preserves key decisions and findings\n\
             2. Notes what approaches worked/failed\n\
             3. Tracks current state and next steps\n\
             4. Is concise (max {words} words)",
            goal = truncate_tokens(self.goal.trim(), config.goal_max_tokens as usize),
            iterations = iterations.join("\n\n"),
        )
    }
}

/// The prompt for the next iteration, under [`LoopConfig::total_budget_tokens`] (o200k_base).
///
/// Sections (seed 003): `# Goal` (cut to `goal_max_tokens`); `# Progress Summary (iterations
/// 1-k)` (cut to `max_summary_tokens`) when there is a summary; `# Earlier Iterations (not yet
/// summarized)`: the `pending` iterations (left the raw window since the last applied summary,
/// or kept by a failed one), one line of progress each, so nothing vanishes from view; `# Recent
/// Iterations`, the last `recent_in_prompt` raw ones with output cut to `recent_output_chars`;
/// `# Current State`; `# Instructions` with the `<progress>` / `<promise>COMPLETE</promise>`
/// protocol. Before the first iteration there is only the goal, the state and the instructions.
///
/// Over budget, cuts in this order until it fits: the recent iterations oldest first, keeping
/// the newest; then the not-yet-summarized lines (restoring the recent iterations that now fit);
/// the summary (shortened, then dropped); the newest iteration; the goal (shortened). Current State and Instructions are never cut; a
/// validated config leaves room for them.
pub fn build_prompt(ctx: &LoopContext, config: &LoopConfig) -> String {
    let goal = Cut::new(ctx.goal.trim(), config.goal_max_tokens as usize);
    let summary = match ctx.summary.trim() {
        "" => None,
        summary => Some(Cut::new(summary, config.max_summary_tokens as usize)),
    };
    let unsummarized = (!ctx.pending.is_empty()).then(|| {
        let lines: Vec<String> = ctx.pending.iter().map(pending_line).collect();
        lines.join("\n")
    });
    let first_recent = ctx.iterations.len().saturating_sub(config.recent_in_prompt);
    let recent = ctx.iterations[first_recent..]
        .iter()
        .map(|it| recent_entry(it, config.recent_output_chars))
        .collect();
    let mut prompt = Prompt {
        goal,
        summary,
        summarized_through: ctx.summarized_through,
        unsummarized,
        recent,
        state: current_state(ctx),
        instructions: instructions(config),
    };
    prompt.fit(config.total_budget_tokens as usize);
    prompt.render()
}

/// The `<progress>...</progress>` contents of an agent's output, trimmed, empty ones skipped.
pub fn progress_markers(output: &str) -> Vec<String> {
    let mut markers = Vec::new();
    let mut rest = output;
    while let Some(start) = rest.find(PROGRESS_OPEN) {
        let after = &rest[start + PROGRESS_OPEN.len()..];
        let Some(end) = after.find(PROGRESS_CLOSE) else {
            break;
        };
        let marker = after[..end].trim();
        if !marker.is_empty() {
            markers.push(marker.to_owned());
        }
        rest = &after[end + PROGRESS_CLOSE.len()..];
    }
    markers
}

/// Whether an agent's output declares the goal achieved ([`COMPLETE_PROMISE`]).
pub fn is_complete(output: &str) -> bool {
    output.contains(COMPLETE_PROMISE)
}

// ---------------------------------------------------------------------------------------------

const SUMMARY_SYSTEM: &str = "You maintain the progress summary of an autonomous coding agent \
working through a loop of iterations toward one goal. The summary replaces the iterations it \
covers, so keep what the next iteration needs:\n\
- key decisions (e.g. \"Chose JWT over sessions\")\n\
- working approaches (e.g. \"Using bcrypt for password hashing\")\n\
- failed approaches (e.g. \"Redis caching caused issues, reverted\")\n\
- the current state (e.g. \"Login endpoint complete, logout pending\")\n\
- next steps (e.g. \"Need to implement refresh tokens\")\n\
Discard verbose output logs, temporary debugging info, repeated error messages and \
implementation details already in the code. Reply with the summary only.";

const BASE_INSTRUCTIONS: &str = "# Instructions\n\
Continue working toward the goal. Output:\n\
- `<progress>what you accomplished</progress>` for progress\n\
- `<promise>COMPLETE</promise>` when goal is fully achieved";

/// Per-line cap for lists (markers, file changes) and names in the prompt: they come from the
/// host unbounded.
const DETAIL_CHARS: usize = 300;
/// A section cut to fewer tokens than this is dropped instead: a stub says nothing.
const MIN_SECTION_TOKENS: usize = 32;

/// The loop's prompts are counted in o200k_base. The public entry points check that it is
/// loaded first (`encoding_not_loaded` otherwise), so the length fallback is never used.
fn tokens(text: &str) -> usize {
    count_tokens(text, Encoding::O200kBase).unwrap_or(text.len())
}

fn marker(cut_chars: usize) -> String {
    format!("…[truncated {cut_chars} chars]")
}

/// Byte offset of the `chars`-th character (the text's length if it has fewer).
fn char_offset(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

/// The first `max_chars` characters followed by a marker, and how many were cut.
fn truncate_chars(text: &str, max_chars: usize) -> (String, usize) {
    let end = char_offset(text, max_chars);
    if end == text.len() {
        return (text.to_owned(), 0);
    }
    let cut = text[end..].chars().count();
    (format!("{}{}", &text[..end], marker(cut)), cut)
}

/// The longest prefix that fits `max_tokens` together with its marker. Below the marker's own
/// size, only the marker is left.
fn truncate_tokens(text: &str, max_tokens: usize) -> String {
    if tokens(text) <= max_tokens {
        return text.to_owned();
    }
    let total = text.chars().count();
    let limit = max_tokens.saturating_sub(tokens(&marker(total)));
    let prefix_fits = |chars: usize| tokens(&text[..char_offset(text, chars)]) <= limit;
    // Binary search on the character count: the prefix's token count grows with its length.
    let (mut lo, mut hi) = (0, total);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if prefix_fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // BPE can merge differently across the seam; back off until the whole thing fits.
    loop {
        let end = char_offset(text, lo);
        let cut = format!("{}{}", &text[..end], marker(total - lo));
        if lo == 0 || tokens(&cut) <= max_tokens {
            return cut;
        }
        lo -= (lo / 50).max(1);
    }
}

/// The last characters of a stored text beyond `max_chars` become a marker counting what the
/// original had past that point (including what was cut when it was stored).
fn excerpt(text: &str, stored_cut: usize, max_chars: usize) -> String {
    if text.trim().is_empty() {
        return "(no output)".to_owned();
    }
    let stored_marker = if stored_cut > 0 {
        marker(stored_cut).chars().count()
    } else {
        0
    };
    let content_chars = text.chars().count().saturating_sub(stored_marker);
    if content_chars <= max_chars {
        return text.to_owned();
    }
    let end = char_offset(text, max_chars);
    let original = content_chars + stored_cut;
    format!("{}{}", &text[..end], marker(original - max_chars))
}

fn one_line(items: &[String], separator: &str) -> String {
    let joined = items.join(separator).replace('\n', " ");
    truncate_chars(&joined, DETAIL_CHARS).0
}

fn score(it: &Iteration) -> String {
    format!("{:.2}", it.progress_score)
}

fn summary_entry(it: &Iteration) -> String {
    let mut entry = format!("### Iteration {}\n", it.number);
    let who = [it.cli.as_str(), it.model.as_str()];
    if who.iter().any(|s| !s.is_empty()) {
        entry += &format!(
            "- CLI / model: {}\n",
            truncate_chars(&who.join(" / "), DETAIL_CHARS).0
        );
    }
    entry += &format!("- Progress score: {}\n", score(it));
    if !it.progress_markers.is_empty() {
        entry += &format!("- Progress: {}\n", one_line(&it.progress_markers, "; "));
    }
    if !it.file_changes.is_empty() {
        entry += &format!("- Files changed: {}\n", one_line(&it.file_changes, ", "));
    }
    entry += &format!("- Duration: {:.1} s\n", it.duration_ms as f64 / 1000.0);
    if !it.prompt.trim().is_empty() {
        entry += &format!("Prompt:\n{}\n", it.prompt);
    }
    let output = if it.output.trim().is_empty() {
        "(no output)"
    } else {
        &it.output
    };
    entry + &format!("Output:\n{output}")
}

fn pending_line(it: &Iteration) -> String {
    let progress = match it.progress_markers.is_empty() {
        true => "(no progress reported)".to_owned(),
        false => one_line(&it.progress_markers, "; "),
    };
    format!(
        "- Iteration {} (score {}): {progress}",
        it.number,
        score(it)
    )
}

fn recent_entry(it: &Iteration, output_chars: usize) -> String {
    let mut header = format!("## Iteration {}", it.number);
    let who: Vec<&str> = [it.cli.as_str(), it.model.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    let who = truncate_chars(&who.join(" / "), DETAIL_CHARS).0;
    header += &match who.is_empty() {
        true => format!(" (score {})", score(it)),
        false => format!(" ({who}, score {})", score(it)),
    };
    let mut entry = header + "\n";
    if !it.progress_markers.is_empty() {
        entry += &format!("Progress: {}\n", one_line(&it.progress_markers, "; "));
    }
    if !it.file_changes.is_empty() {
        entry += &format!("Files changed: {}\n", one_line(&it.file_changes, ", "));
    }
    entry + &excerpt(&it.output, it.output_cut_chars, output_chars)
}

fn current_state(ctx: &LoopContext) -> String {
    let name = |s: &str| match s.trim() {
        "" => "(none yet)".to_owned(),
        s => truncate_chars(s, 100).0,
    };
    format!(
        "# Current State\n- Total iterations: {}\n- Current CLI: {}\n- Current model: {}",
        ctx.total_iterations,
        name(&ctx.current_cli),
        name(&ctx.current_model),
    )
}

fn instructions(config: &LoopConfig) -> String {
    let extra = config.extra_instructions.trim();
    if extra.is_empty() {
        return BASE_INSTRUCTIONS.to_owned();
    }
    // The "\n\n" seam costs about one token; leave two.
    let room =
        (config.instructions_max_tokens as usize).saturating_sub(tokens(BASE_INSTRUCTIONS) + 2);
    if room < MIN_SECTION_TOKENS {
        return BASE_INSTRUCTIONS.to_owned();
    }
    format!("{BASE_INSTRUCTIONS}\n\n{}", truncate_tokens(extra, room))
}

/// The prompt's sections while they are being fitted to the budget.
struct Prompt<'a> {
    goal: Cut<'a>,
    summary: Option<Cut<'a>>,
    summarized_through: u32,
    unsummarized: Option<String>,
    /// Oldest first.
    recent: Vec<String>,
    state: String,
    instructions: String,
}

impl Prompt<'_> {
    fn render(&self) -> String {
        let mut sections = vec![format!("# Goal\n{}", self.goal.text)];
        if let Some(summary) = &self.summary {
            sections.push(format!(
                "# Progress Summary (iterations 1-{})\n{}",
                self.summarized_through, summary.text
            ));
        }
        if let Some(lines) = &self.unsummarized {
            sections.push(format!(
                "# Earlier Iterations (not yet summarized)\n{lines}"
            ));
        }
        if !self.recent.is_empty() {
            sections.push(format!("# Recent Iterations\n{}", self.recent.join("\n\n")));
        }
        sections.push(self.state.clone());
        sections.push(self.instructions.clone());
        sections.join("\n\n")
    }

    fn excess(&self, budget: usize) -> usize {
        tokens(&self.render()).saturating_sub(budget)
    }

    /// Cuts in the documented order until the prompt fits.
    fn fit(&mut self, budget: usize) {
        if self.excess(budget) == 0 {
            return;
        }
        // Older recent iterations go first (the newest stays), so that the one-line list of
        // iterations a failed summary left pending stays in view: they are in no summary yet.
        let mut removed = Vec::new();
        while self.recent.len() > 1 && self.excess(budget) > 0 {
            removed.push(self.recent.remove(0));
        }
        if self.excess(budget) == 0 {
            return;
        }
        // Still over: the pending list goes, and the recent iterations it made room for return.
        self.unsummarized = None;
        while let Some(entry) = removed.pop() {
            self.recent.insert(0, entry);
            if self.excess(budget) > 0 {
                self.recent.remove(0);
                break;
            }
        }
        while self.summary.is_some() {
            let excess = self.excess(budget);
            if excess == 0 {
                return;
            }
            let Some(summary) = &mut self.summary else {
                break;
            };
            if !summary.shrink(excess) || summary.tokens < MIN_SECTION_TOKENS {
                self.summary = None;
            }
        }
        if self.excess(budget) > 0 {
            self.recent.clear();
        }
        loop {
            let excess = self.excess(budget);
            if excess == 0 {
                return;
            }
            // The goal is never dropped: at worst its truncation marker says it was there.
            if !self.goal.shrink(excess) {
                // Nothing left to cut: only a budget that validate() rejects gets here.
                return;
            }
        }
    }
}

/// A section text cut from its source, re-cut from the source each time so that the marker
/// counts what the original lost.
struct Cut<'a> {
    source: &'a str,
    text: String,
    tokens: usize,
}

impl<'a> Cut<'a> {
    fn new(source: &'a str, max_tokens: usize) -> Self {
        let text = truncate_tokens(source, max_tokens);
        Self {
            source,
            tokens: tokens(&text),
            text,
        }
    }

    /// Shortens the text by about `excess` tokens; `false` when it cannot get any shorter.
    fn shrink(&mut self, excess: usize) -> bool {
        // A little slack: the marker and the section seams shift the count.
        let target = self.tokens.saturating_sub(excess + 4);
        let text = truncate_tokens(self.source, target);
        if text.len() >= self.text.len() {
            return false;
        }
        *self = Self {
            source: self.source,
            tokens: tokens(&text),
            text,
        };
        true
    }
}
