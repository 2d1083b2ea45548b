//! Configuration. Every default is documented where it is defined, with the seed it came from.
//! Unknown keys are rejected (a typo should not silently fall back to a default).

use serde::{Deserialize, Serialize};

use crate::counting::Encoding;
use crate::error::{Error, Result};

/// Everything the planner is configured with. Every field has a default (the seeds'); the JSON
/// form (camelCase, unknown fields rejected) is what the npm package's `CompactorOptions` send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Config {
    /// Model name, looked up in the registry (`gpt-4o`, `claude-sonnet-4-5`, `openai/gpt-4.1`).
    pub model: Option<String>,
    /// Overrides the registry's context window (tokens).
    pub context_window: Option<u32>,
    /// Overrides the registry's max output tokens.
    pub max_output_tokens: Option<u32>,
    /// Overrides the registry's encoding.
    pub encoding: Option<Encoding>,
    /// Tier 1: offloading large tool results.
    pub offload: OffloadConfig,
    /// The preset the other settings started from (see [`Preset`]). In JSON, the fields given
    /// next to `preset` override the preset's values.
    pub preset: Option<Preset>,
    /// Tier 2: reversible edits once the window fills up.
    pub compaction: CompactionConfig,
    /// Tier 3: what happens to older history when reversible edits are not enough.
    pub history: HistoryConfig,
    /// The prompt-cache cost model (see [`crate::CacheConfig`]).
    pub cache: crate::cache::CacheConfig,
    /// Tool definitions sent with every request; they count against the window (SPEC §4).
    pub tools: Vec<ToolDefinition>,
    /// Estimated tokens of an image part (see `tokens::DEFAULT_IMAGE_TOKENS`).
    pub image_tokens: u32,
    /// Estimated tokens of a file part (see `tokens::DEFAULT_FILE_TOKENS`).
    pub file_tokens: u32,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            model: None,
            context_window: None,
            max_output_tokens: None,
            encoding: None,
            offload: OffloadConfig::default(),
            preset: None,
            compaction: CompactionConfig::default(),
            history: HistoryConfig::default(),
            cache: crate::cache::CacheConfig::default(),
            tools: Vec::new(),
            image_tokens: crate::counting::DEFAULT_IMAGE_TOKENS,
            file_tokens: crate::counting::DEFAULT_FILE_TOKENS,
        }
    }
}

/// Tier 1: large tool results go to the store, a preview and the path stay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OffloadConfig {
    /// A tool result above this many tokens is offloaded. 2,000. The seeds say 20,000 (000 and
    /// 002: "Tool result > 20,000 tokens → immediate offload to file"); measured in the arena by
    /// effective cost (cost + the re-reads an agent makes for what it no longer sees, issue 34),
    /// offloading at return time above 2,000 with the head + tail preview (what Strands' `auto`
    /// does above 1,500) cost 6–71 % less on the runs with outputs of 2k–50k tokens, with no
    /// content lost; 20,000 left smart costlier than Strands on 4 of 12 runs. `bench/arena/README.md`.
    pub threshold_tokens: u32,
    /// …or above this fraction of the context window, whichever is smaller, so that one result
    /// can never fill a small window. 0.25.
    pub max_window_fraction: f64,
    /// Preview lines kept from the start (seeds 000/002: "path + 10-line preview").
    pub preview_head_lines: usize,
    /// Preview lines kept from the end (errors and totals usually sit there). 3.
    pub preview_tail_lines: usize,
    /// Preview lines longer than this many characters are cut (a 1 MB single-line JSON would
    /// otherwise make a 1 MB preview). 200.
    pub preview_line_chars: usize,
    /// Tools whose results are not offloaded at `thresholdTokens`: the recovery tools themselves
    /// (their output is already paged from the store), small bookkeeping tools (seed 002) and
    /// file readers, whose output is the file the agent works on. Such a result is still
    /// offloaded over `maxWindowFraction` of the window, so that one read cannot fill it; a
    /// call of a recovery tool's name (`read_file`, `grep`, `ls`) that reads the store (its path
    /// is the root or under the compactor's directories, or a `read_file` that names none) never is.
    pub excluded_tools: Vec<String>,
    /// Directory for offloaded results (seed 002: `/large_tool_results/`; the spec names
    /// `/tool_outputs/`).
    pub path_prefix: String,
    /// A user message text (a string content or a text part) above this many tokens is
    /// offloaded the same way: a pasted log or file is the same problem as a huge tool result.
    /// 50,000 (DeepAgents offloads human messages over 50k tokens), or `maxWindowFraction` of
    /// the window, whichever is smaller; 0 turns it off. The preview and the path stay in the
    /// message, so even the newest user message keeps its meaning and the agent can read the
    /// rest. File parts are not offloaded: their size is an estimate (`fileTokens`).
    pub user_threshold_tokens: u32,
    /// Directory for offloaded user message texts. `/user_messages/`.
    pub user_path_prefix: String,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        Self {
            threshold_tokens: 2_000,
            max_window_fraction: 0.25,
            preview_head_lines: 10,
            preview_tail_lines: 3,
            preview_line_chars: 200,
            excluded_tools: [
                "write_todos",
                "list_skills",
                "read_file",
                "grep",
                "ls",
                "glob",
            ]
            .map(String::from)
            .to_vec(),
            path_prefix: "/tool_outputs/".into(),
            user_threshold_tokens: 50_000,
            user_path_prefix: "/user_messages/".into(),
        }
    }
}

/// Tier 2: reversible edits (input eviction, dedupe, masking) above a fraction of the window,
/// down to a target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CompactionConfig {
    /// Whether tier 2 runs at all (`false` in the `simple` preset). `true`.
    pub enabled: bool,
    /// Tier 2 fires above this fraction of the window. 0.70: the seeds say 85 % ("tool call
    /// compaction / eviction at 85 % of the context window", seeds 000, 001, 002). Measured in
    /// the arena by effective cost (issue 34), with the 2,000-token offload: 0.80 → 0.45 cost
    /// up to 1.4 % more than the cheapest peer on one run, 0.70 → 0.35 at most 0.93 of it on
    /// every run; lower triggers cost less still (0.60 → 0.30: 0.85) but keep fewer of the
    /// outputs the agent quotes later in view, which the arena prices only as re-reads.
    pub trigger_fraction: f64,
    /// …and compacts down to this fraction (hysteresis: 35 % of the window before it fires
    /// again; the seeds name no target). 0.35: deep enough that a break pays for itself and the
    /// next is far away (each step down from 0.60 cost less in the arena).
    pub target_fraction: f64,
    /// An edit that changes an earlier message invalidates the provider's prompt cache after
    /// it; edits saving fewer tokens than this are skipped. 500.
    pub min_saving_tokens: u32,
    /// Tool results among the last K stay verbatim; older ones may be masked. 10 (the
    /// observation window of "The Complexity Trap", 2025).
    pub keep_tool_results: usize,
    /// …while those kept fit in this share of the window, newest first (the newest always
    /// stays). 0.25: ten 15k-token search results would otherwise hold a 128k window that tier 2
    /// can never relieve, and each tier-2 break would buy a few thousand tokens (measured in the
    /// arena's research session: 5 breaks against 3 without it). 1 keeps the last K whatever
    /// their size.
    pub keep_tool_results_fraction: f64,
    /// Tool calls whose file-content arguments are evicted (seeds 000, 002).
    pub evict_input_tools: Vec<String>,
    /// Which string arguments of those calls hold file content (seeds: `content`, `new_text`).
    pub evict_input_fields: Vec<String>,
    /// Characters of the evicted content kept as a preview. 100 (seeds 000, 002).
    pub input_preview_chars: usize,
    /// Tools that read files, for dedupe: an older read of a path read again later becomes
    /// `[Previously read: path]` (seed 001).
    pub read_tools: Vec<String>,
    /// Arguments that name the file a read tool read.
    pub path_fields: Vec<String>,
    /// Store directory for evicted inputs and masked results.
    pub path_prefix: String,
    /// The files being worked on: protected from tier 2 and kept after a summary.
    pub working_files: WorkingFilesConfig,
}

/// Working files: the latest content of the files the agent wrote or edited most recently (its
/// latest read and the writes and edits after it) is never evicted, deduped or masked, and the
/// lossy tier keeps those tool-call/result pairs right after the summary or notice, so the agent
/// does not start its next turn by re-reading them (Claude Code re-attaches the files it read
/// last after it compacts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct WorkingFilesConfig {
    /// How many files, newest first. 1: the file being edited (seed 002's smart strategy keeps
    /// "the current file being edited"; Claude Code re-attaches up to 5). 0: off.
    pub max_files: usize,
    /// Tokens of their content at most, also capped at 10 % of the window; a file that does not
    /// fit ends the list (an older file never displaces a newer one). 20,000. Measured in the
    /// arena (each kept token is paid at every call): one file within 20,000 kept the working
    /// file after 5 of 5 compactions of the coding session at 128k for 1.4 % more than none;
    /// five files within 20,000 kept the same for 3.4 % more; five within 5,000 kept 2 of 5.
    pub max_tokens: u32,
}

impl Default for WorkingFilesConfig {
    fn default() -> Self {
        Self {
            max_files: 1,
            max_tokens: 20_000,
        }
    }
}

impl Default for CompactionConfig {
    fn default() -> Self {
        let strings = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect();
        Self {
            enabled: true,
            trigger_fraction: 0.70,
            target_fraction: 0.35,
            min_saving_tokens: 500,
            keep_tool_results: 10,
            keep_tool_results_fraction: 0.25,
            evict_input_tools: strings(&[
                "write_file",
                "edit_file",
                "create_file",
                "str_replace_editor",
            ]),
            evict_input_fields: strings(&["content", "new_text", "new_string", "file_text"]),
            input_preview_chars: 100,
            read_tools: strings(&["read_file", "open_file", "view_file", "cat"]),
            path_fields: strings(&["path", "file_path", "filePath", "filename"]),
            path_prefix: "/tool_outputs/".into(),
            working_files: WorkingFilesConfig::default(),
        }
    }
}

/// A tool as the model sees it (AI SDK `LanguageModelV2FunctionTool`, OpenAI `function`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// What the model is told the tool does.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON schema of the input (`parameters` in OpenAI's shape).
    #[serde(default, alias = "parameters")]
    pub input_schema: serde_json::Value,
}

/// What the lossy tier does with older messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HistoryStrategy {
    /// The older span becomes one structured summary written by the host's LLM (seed 000,
    /// "LLM summarization at 95 %"; seed 004, priority 3). The default.
    Summarize,
    /// The oldest messages are dropped until the target is met; the system prompt and the
    /// recent messages stay, tool chains stay whole (seed 004, priority 1; seed 001 `simple`).
    Truncate,
    /// The lowest-scoring messages are dropped first (seed 004, priority 2).
    Importance,
    /// Never lose anything: stop after the reversible tiers.
    Off,
}

/// Starting points for the whole configuration (seed 001: "strategy: smart, or simple,
/// aggressive").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// Keep the system prompt and the recent messages, drop the oldest (seed 001 "keep first
    /// and last N messages, drop everything in middle"): offloading stays on, tier 2 is off,
    /// the lossy tier truncates at the 85 % trigger, always keeping the last 10 messages
    /// (seed 004 `keep_recent = 10`).
    Simple,
    /// The defaults: offload above 2,000 tokens, reversible edits at 70 % down to 35 %,
    /// summarization at 85 % keeping 15 % (seeds 000, 001 "recommended", 002; thresholds
    /// re-tuned in the arena on effective cost).
    Smart,
    /// Compact earlier and harder, for small windows or expensive tokens (seed 001 "compress
    /// more aggressively, more caching, use when approaching limits"): offload above 1,000
    /// tokens, tier 2 at 50 % down to 25 %, the last 5 tool results kept, edits saving 100
    /// tokens taken, summarization at 80 % keeping 10 % of the window. In the arena it costs
    /// 0.71–1.00 of smart, with more re-reads and fewer old outputs in view.
    Aggressive,
}

/// Tier 3: the lossy strategies (summarize, truncate, importance) for the older history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// `summarize` (default), `truncate`, `importance` or `off`.
    pub strategy: HistoryStrategy,
    /// The lossy tier fires above this fraction of the window even when tier 2 met its target.
    /// 0.85 (seed 000 says "Summarization > 95 % context window"; DeepAgents summarizes at 85 %):
    /// with counts calibrated by the provider's usage, 0.95 cost more than the cheapest peer on
    /// 4 of the arena's 12 runs, 0.85 on 2. It also fires whenever tier 2 ran and could not
    /// reach the target.
    pub trigger_fraction: f64,
    /// A hook may cancel a compaction, except past this fraction of the window, where the next
    /// request would fail (SPEC §7, no deadlock). 0.95.
    pub hard_limit_fraction: f64,
    /// Summaries made ahead of need, off the critical path (issue 32, `docs/LOOP.md`): above
    /// this fraction of the window, when tier 2 alone could not reach its target once the
    /// conversation has grown to the compaction trigger (what it reaches now, plus the distance
    /// to the trigger: so the lossy tier will fire there), a plan for a host that runs
    /// summaries in the background ([`crate::PlanOptions::background`]) carries the summary it
    /// will need as [`crate::Plan::ahead`]; its span is fixed when asked. The call that reaches
    /// the trigger applies the ready summary without waiting; while it is not ready, the lossy
    /// tier waits until the hard limit, where it summarizes in the call (the plan carries a
    /// `summary-pending` note until then). Its span keeps fewer recent messages by the distance to the compaction
    /// trigger (the conversation grows by about that much before it is applied). `None`: off.
    /// 0.6 (`aggressive`: 0.4), a tenth of the window below the compaction trigger: in the
    /// arena (smart, 18 runs, against summaries in the call) 0.6 left 9 of 62 waiting calls at
    /// 1.02× the effective cost, 0.55 left 5 at 1.06×, 0.65 left 10 at 1.06×.
    pub ahead_fraction: Option<f64>,
    /// The most recent messages kept verbatim, as a share of the window. 0.15 (seed 000 says
    /// "keep recent messages (last ~20 % of context)", DeepAgents keeps 10 %): in the arena
    /// 0.20 met smart's targets on 6 runs and cost 3–8 % more than 0.15, which met them on 8.
    pub keep_recent_fraction: f64,
    /// Keep this many recent messages instead of a token share (seed 004: `keep_recent = 10`).
    pub keep_recent_messages: Option<usize>,
    /// Upper bound of a summary, in tokens; also capped at 10 % of the window. 2,000 (seed 003:
    /// `max_summary_tokens = 2000`).
    pub summary_max_tokens: u32,
    /// Upper bound of the span sent to the summarizer, in tokens; the middle of a longer span
    /// is elided (the transcript keeps it). Default: a quarter of the window (summary prompts
    /// are never cached: measured in the arena, half the window cost 3–4 % more on chat
    /// sessions for a rolling summary whose span is only what came since the last one).
    pub request_max_tokens: Option<u32>,
    /// Each part is cut to this many characters in the summarizer's copy of the span. 2,000
    /// (seed 000 renders the transcript with `content[:2000]`).
    pub request_part_chars: usize,
    /// Instructions added to every summarization (a `compact({instructions})` adds its own).
    pub instructions: Option<String>,
    /// Offer each summary request also as a continuation of the agent's own cached prompt
    /// ([`crate::Continuation`]) when the provider caches prompts and that costs less. `true`.
    pub continuation: bool,
    /// Where transcripts go. `/conversation_history/` (seed 000).
    pub path_prefix: String,
    /// Scores of the importance strategy.
    pub importance: ImportanceConfig,
    /// Plan and todo tools: the latest input of any of them is the agent's live plan, carried
    /// verbatim through every lossy step (a marked section at the end of the summary or notice;
    /// see `docs/API.md`, "Pinned context and the live plan"). `write_todos` (DeepAgents),
    /// `TodoWrite` (Claude Code), `update_plan` (Codex), `TaskCreate`, `TaskUpdate`. Empty: off.
    pub plan_tools: Vec<String>,
    /// Tools whose calls and results are pinned: never offloaded, evicted, deduped, masked,
    /// summarized or dropped (their group is kept after the summary or notice). None by default.
    /// A single message or part is pinned with `providerOptions.contextCompactor.pin = true`.
    pub pinned_tools: Vec<String>,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            strategy: HistoryStrategy::Summarize,
            trigger_fraction: 0.85,
            hard_limit_fraction: 0.95,
            ahead_fraction: Some(0.6),
            keep_recent_fraction: 0.15,
            keep_recent_messages: None,
            summary_max_tokens: 2_000,
            request_max_tokens: None,
            request_part_chars: 2_000,
            instructions: None,
            continuation: true,
            path_prefix: "/conversation_history/".into(),
            importance: ImportanceConfig::default(),
            plan_tools: [
                "write_todos",
                "TodoWrite",
                "update_plan",
                "TaskCreate",
                "TaskUpdate",
            ]
            .map(String::from)
            .to_vec(),
            pinned_tools: Vec::new(),
        }
    }
}

/// Importance scoring (seed 004 `ImportanceStrategy`). A group of messages (a user turn, an
/// assistant reply, a tool call with its results) scores the highest of its messages; the
/// lowest-scoring groups are dropped first, oldest first among equals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ImportanceConfig {
    /// User messages: "they asked for it". 1.0.
    pub user_score: f64,
    /// Assistant text. 0.6; half that for short acknowledgments.
    pub assistant_score: f64,
    /// Tool calls and their results: "part of the workflow". 1.0.
    pub tool_use_score: f64,
    /// Groups scoring below this are dropped whenever the strategy runs. 0.3.
    pub min_score_threshold: f64,
    /// Assistant text shorter than this many characters counts as an acknowledgment. 100.
    pub short_assistant_chars: usize,
}

impl Default for ImportanceConfig {
    fn default() -> Self {
        Self {
            user_score: 1.0,
            assistant_score: 0.6,
            tool_use_score: 1.0,
            min_score_threshold: 0.3,
            short_assistant_chars: 100,
        }
    }
}

/// What a host does where the app leaves its own options out: one set of defaults for every
/// host. The npm and Python packages settle their options through [`host_settings`]
/// (`hostSettings()`, the component's `host-settings`), the native driver ([`crate::AsyncHost`])
/// reads them here, so that no host holds a default of its own.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostDefaults {
    /// How long the summarizer may take (ms) before the heuristic summary is used; a summary
    /// lease holds this and 5 s more. npm `summarizeTimeoutMs`, Python `summarize_timeout`.
    pub summarize_timeout_ms: u64,
    /// How long a store call may take (ms) before it fails as a failing call does. npm
    /// `storeTimeoutMs`, Python `store_timeout`.
    pub store_timeout_ms: u64,
    /// Harder compactions and retries one model call may take after a provider's "prompt too
    /// long" (`overflow.retries`, the LangChain middleware's `overflow_retries`).
    pub overflow_retries: u32,
    /// Summaries made ahead of need, off the critical path, when the app gives a summarizer
    /// (`background`).
    pub background: bool,
}

/// The most an image or file part may be counted (`imageTokens`, `fileTokens`): past every
/// model's window, and far below `u32::MAX`, which a message's sum must not pass.
const MAX_PART_TOKENS: u32 = 10_000_000;

/// The defaults of every host ([`HostDefaults`]).
pub const HOST_DEFAULTS: HostDefaults = HostDefaults {
    summarize_timeout_ms: 120_000,
    store_timeout_ms: 10_000,
    overflow_retries: 1,
    background: true,
};

/// What a host does with the options of its own (beside the core's [`Config`]), settled from
/// what the app gave: [`host_settings`]. Every host reads them here, so none holds a default or
/// a rule of its own.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostSettings {
    /// How long the summarizer (and the `onPreCompact` hook) may take, in ms.
    pub summarize_timeout_ms: f64,
    /// How long a store call may take, in ms; `None`: the store's calls are made directly.
    pub store_timeout_ms: Option<f64>,
    /// Compact-and-retry rounds per model call after a provider's "prompt too long".
    pub overflow_retries: u32,
    /// Whether summaries are made ahead of need, off the critical path.
    pub background: bool,
}

/// [`HostSettings`] from what the app gave a host, as JSON: `summarizeTimeoutMs`,
/// `storeTimeoutMs` (`null`: no bound), `overflow` (`{retries}`) and `background` as the app
/// wrote them (absent where it left them out), and whether it gave a `store`, a `state`, a
/// `statePath` and a `summarize`r (booleans). Each left out is [`HOST_DEFAULTS`]'s; background
/// summaries need a summarizer, and are off by default for a `state` given without `statePath`
/// (a compactor made per request: a summary back after the response would reach no one). A value
/// of the wrong kind is an [`Error::InvalidConfig`] naming the option as the npm package spells
/// it (the Python host respells it).
pub fn host_settings(given: &str) -> Result<HostSettings> {
    use serde_json::Value;
    let bad = |field: &str, message: String| Error::InvalidConfig {
        field: field.into(),
        message,
    };
    let given = match serde_json::from_str::<Value>(given) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(bad("(root)", "expected an object of host options".into())),
        Err(e) => return Err(Error::json("host options", &e)),
    };
    const KNOWN: [&str; 8] = [
        "summarizeTimeoutMs",
        "storeTimeoutMs",
        "overflow",
        "background",
        "store",
        "state",
        "statePath",
        "summarize",
    ];
    if let Some(key) = given.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(bad(key, "unknown host option".into()));
    }
    let gave = |key: &str| given.get(key).and_then(Value::as_bool).unwrap_or(false);
    let duration = |key: &str, default: u64| -> Result<Option<f64>> {
        match given.get(key) {
            None => Ok(Some(default as f64)),
            Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.as_f64().is_some_and(|ms| ms > 0.0 && ms.is_finite()) => {
                Ok(n.as_f64())
            }
            // The value is not echoed: a host may have converted it (Python's seconds).
            Some(_) => Err(bad(key, "expected a positive, finite duration".into())),
        }
    };
    if gave("statePath") && !gave("store") {
        return Err(bad(
            "statePath",
            "needs a store that outlives the compactor (the store option): the default \
             MemoryStore would lose the state"
                .into(),
        ));
    }
    let summarize_timeout_ms = duration("summarizeTimeoutMs", HOST_DEFAULTS.summarize_timeout_ms)?
        .ok_or_else(|| {
            bad(
                "summarizeTimeoutMs",
                "expected a positive, finite duration".into(),
            )
        })?;
    let store_timeout_ms = duration("storeTimeoutMs", HOST_DEFAULTS.store_timeout_ms)?;
    let overflow_retries = match given.get("overflow") {
        None | Some(Value::Null) => HOST_DEFAULTS.overflow_retries,
        Some(Value::Object(overflow)) => {
            if let Some(key) = overflow.keys().find(|k| *k != "retries") {
                return Err(bad(
                    &format!("overflow.{key}"),
                    "unknown option (overflow takes retries)".into(),
                ));
            }
            match overflow.get("retries") {
                None | Some(Value::Null) => HOST_DEFAULTS.overflow_retries,
                Some(Value::Number(n)) if n.as_u64().is_some_and(|r| r <= u64::from(u32::MAX)) => {
                    n.as_u64().unwrap_or_default() as u32
                }
                Some(other) => {
                    return Err(bad(
                        "overflow.retries",
                        format!("expected a whole number >= 0, got {other}"),
                    ))
                }
            }
        }
        Some(other) => {
            return Err(bad(
                "overflow",
                format!("expected an object ({{ retries }}), got {other}"),
            ))
        }
    };
    let per_request = gave("state") && !gave("statePath");
    let background = match given.get("background") {
        None | Some(Value::Null) => HOST_DEFAULTS.background && !per_request,
        Some(Value::Bool(on)) => *on,
        Some(other) => {
            return Err(bad(
                "background",
                format!("expected true or false, got {other}"),
            ))
        }
    } && gave("summarize");
    Ok(HostSettings {
        summarize_timeout_ms,
        store_timeout_ms,
        overflow_retries,
        background,
    })
}

impl Config {
    /// The configuration a preset starts from.
    pub fn preset(preset: Preset) -> Self {
        let mut config = Config {
            preset: Some(preset),
            ..Config::default()
        };
        match preset {
            Preset::Smart => {}
            Preset::Simple => {
                config.compaction.enabled = false;
                config.history.strategy = HistoryStrategy::Truncate;
                // Truncation at seed 001's 85 %, down to 60 %: the smart thresholds were re-tuned
                // for summaries and masks, not for dropping messages.
                config.compaction.trigger_fraction = 0.85;
                config.compaction.target_fraction = 0.60;
                config.history.trigger_fraction = 0.85;
                config.history.keep_recent_messages = Some(10);
            }
            Preset::Aggressive => {
                config.offload.threshold_tokens = 1_000;
                config.compaction.trigger_fraction = 0.50;
                config.history.ahead_fraction = Some(0.4);
                config.compaction.target_fraction = 0.25;
                config.compaction.keep_tool_results = 5;
                config.compaction.min_saving_tokens = 100;
                config.history.trigger_fraction = 0.80;
                config.history.keep_recent_fraction = 0.10;
                config.history.summary_max_tokens = 1_000;
            }
        }
        config
    }

    /// Parses a JSON configuration; errors name the offending field.
    pub fn from_json(json: &str) -> Result<Self> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| Error::json("config", &e))?;
        Self::from_value(value)
    }

    /// Like [`Config::from_json`], from a parsed value. A `preset` key starts from that preset;
    /// the other keys override it field by field.
    pub fn from_value(mut value: serde_json::Value) -> Result<Self> {
        let preset = value.get("preset").filter(|p| !p.is_null()).cloned();
        if let Some(preset) = preset {
            let preset: Preset =
                serde_json::from_value(preset).map_err(|e| Error::InvalidConfig {
                    field: "preset".into(),
                    message: format!(
                        "{} (expected \"simple\", \"smart\" or \"aggressive\")",
                        crate::error::shape_message(&e.to_string())
                    ),
                })?;
            // Through its text, not `to_value`: with numbers kept as written
            // (`arbitrary_precision`), `to_value` costs a number-aware value serializer for every
            // field type in the wasm core.
            let text = serde_json::to_string(&Config::preset(preset)).expect("a config serializes");
            let mut base: serde_json::Value =
                serde_json::from_str(&text).expect("a config serializes as JSON");
            merge(&mut base, std::mem::take(&mut value));
            value = base;
        }
        // An option group given as a list would be read by position (serde reads a struct from
        // a sequence): `offload: [100]` as `offload.thresholdTokens`.
        for (group, inner) in [
            ("offload", None),
            ("compaction", Some("workingFiles")),
            ("cache", None),
            ("history", Some("importance")),
        ] {
            let outer = value.get(group);
            let nested = inner.and_then(|key| Some((key, outer?.get(key)?)));
            for (field, found) in [(group.to_owned(), outer)]
                .into_iter()
                .chain(nested.map(|(key, v)| (format!("{group}.{key}"), Some(v))))
            {
                if found.is_some_and(serde_json::Value::is_array) {
                    return Err(Error::InvalidConfig {
                        field,
                        message: "expected an object of options, got a list".into(),
                    });
                }
            }
        }
        let config: Config = deserialize(value)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every value's range and the relations between them (a target below its trigger,
    /// ...): [`Error::InvalidConfig`] naming the field otherwise.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, message: &str| {
            Err(Error::InvalidConfig {
                field: field.into(),
                message: message.into(),
            })
        };
        if self.context_window == Some(0) {
            return bad("contextWindow", "must be greater than 0");
        }
        // A count past any window would overflow a message's sum.
        for (field, tokens) in [
            ("imageTokens", self.image_tokens),
            ("fileTokens", self.file_tokens),
        ] {
            if tokens > MAX_PART_TOKENS {
                return bad(field, "must be at most 10,000,000 (more than any window)");
            }
        }
        let o = &self.offload;
        if o.threshold_tokens == 0 {
            return bad("offload.thresholdTokens", "must be greater than 0");
        }
        if !(o.max_window_fraction > 0.0 && o.max_window_fraction <= 1.0) {
            return bad("offload.maxWindowFraction", "must be in (0, 1]");
        }
        for (field, prefix) in [
            ("offload.pathPrefix", &o.path_prefix),
            ("compaction.pathPrefix", &self.compaction.path_prefix),
        ] {
            if !prefix.starts_with('/') || !prefix.ends_with('/') || prefix.contains("..") {
                return bad(
                    field,
                    "must be an absolute directory like \"/tool_outputs/\" without \"..\"",
                );
            }
        }
        let c = &self.compaction;
        if !(c.target_fraction > 0.0
            && c.target_fraction <= c.trigger_fraction
            && c.trigger_fraction <= 1.0)
        {
            // The field that is wrong: a trigger past 1 (or not above 0) is the trigger's.
            let trigger = !(c.trigger_fraction > 0.0 && c.trigger_fraction <= 1.0);
            return bad(
                if trigger {
                    "compaction.triggerFraction"
                } else {
                    "compaction.targetFraction"
                },
                "need 0 < targetFraction <= triggerFraction <= 1",
            );
        }
        if !(c.keep_tool_results_fraction > 0.0 && c.keep_tool_results_fraction <= 1.0) {
            return bad(
                "compaction.keepToolResultsFraction",
                "need 0 < keepToolResultsFraction <= 1",
            );
        }
        let h = &self.history;
        let in_unit = |x: f64| x > 0.0 && x <= 1.0;
        if !in_unit(h.trigger_fraction) {
            return bad("history.triggerFraction", "must be in (0, 1]");
        }
        if !in_unit(h.hard_limit_fraction) {
            return bad("history.hardLimitFraction", "must be in (0, 1]");
        }
        if h.ahead_fraction.is_some_and(|a| !(a > 0.0 && a < 1.0)) {
            return bad("history.aheadFraction", "must be in (0, 1), or null (off)");
        }
        if !(h.keep_recent_fraction >= 0.0 && h.keep_recent_fraction < c.target_fraction) {
            return bad(
                "history.keepRecentFraction",
                "must be at least 0 and below compaction.targetFraction",
            );
        }
        if h.summary_max_tokens == 0 {
            return bad("history.summaryMaxTokens", "must be greater than 0");
        }
        if h.request_max_tokens == Some(0) {
            return bad("history.requestMaxTokens", "must be greater than 0");
        }
        if h.request_part_chars == 0 {
            return bad("history.requestPartChars", "must be greater than 0");
        }
        if !h.path_prefix.starts_with('/')
            || !h.path_prefix.ends_with('/')
            || h.path_prefix.contains("..")
        {
            return bad(
                "history.pathPrefix",
                "must be an absolute directory like \"/conversation_history/\" without \"..\"",
            );
        }
        let i = &h.importance;
        for (field, score) in [
            ("history.importance.userScore", i.user_score),
            ("history.importance.assistantScore", i.assistant_score),
            ("history.importance.toolUseScore", i.tool_use_score),
            (
                "history.importance.minScoreThreshold",
                i.min_score_threshold,
            ),
        ] {
            if !score.is_finite() || score < 0.0 {
                return bad(field, "must be a finite number >= 0");
            }
        }
        Ok(())
    }
}

/// Deserializes a configuration section, naming the offending field of any error.
pub(crate) fn deserialize<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    // Owned values throughout: one deserializer per type (the one over `Value`).
    let probe = skeleton(&value);
    serde_json::from_value::<T>(value)
        .map_err(|e| config_error(&probe, &e.to_string(), attempt::<T>))
}

/// A copy of `value` to name where an error lies ([`error_path`]): its structure, with strings
/// cut to their first 64 bytes (a field's type fails, not its content), so that it costs next to
/// nothing beside a part's data (an image, a file) while the value itself is deserialized in
/// place, not copied.
pub(crate) fn skeleton(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) if s.len() > 64 => {
            let mut end = 64;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            Value::String(s[..end].to_owned())
        }
        Value::Array(items) => Value::Array(items.iter().map(skeleton).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), skeleton(v))).collect())
        }
        other => other.clone(),
    }
}

/// `value` without the key or element `step` of the node at `path`.
fn without(
    value: &serde_json::Value,
    path: &[Result<String, usize>],
    step: &Result<String, usize>,
) -> serde_json::Value {
    use serde_json::Value;
    let mut pruned = value.clone();
    let mut at = &mut pruned;
    for s in path {
        at = match (at, s) {
            (Value::Object(map), Ok(key)) => map.get_mut(key.as_str()).expect("on the path"),
            (Value::Array(items), Err(i)) => &mut items[*i],
            _ => unreachable!("the path was walked before"),
        };
    }
    match (at, step) {
        (Value::Object(map), Ok(key)) => {
            map.shift_remove(key.as_str());
        }
        (Value::Array(items), Err(i)) => {
            items.remove(*i);
        }
        _ => unreachable!("steps come from the node"),
    }
    pruned
}

/// The error of a configuration section that did not deserialize (not generic: one copy).
#[inline(never)]
fn config_error(
    probe: &serde_json::Value,
    error: &str,
    attempt: fn(&serde_json::Value) -> std::result::Result<(), String>,
) -> Error {
    let message = crate::error::shape_message(error);
    Error::InvalidConfig {
        field: with_missing(&error_path(probe, attempt), &message, ""),
        message,
    }
}

/// The field an error names: `path` (from [`error_path`], `(root)` for the value itself) under
/// `prefix`, and, when the error is a missing field, that field below it (a missing field has
/// no path of its own: its parent's is found).
pub(crate) fn with_missing(path: &str, message: &str, prefix: &str) -> String {
    let join = |a: &str, b: &str| match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_owned(),
        (_, true) => a.to_owned(),
        _ => format!("{a}.{b}"),
    };
    let path = if path == "(root)" { "" } else { path };
    let field = join(prefix, path);
    match missing_field(message) {
        Some(name) if !path.rsplit('.').next().is_some_and(|last| last == name) => {
            join(&field, name)
        }
        _ if field.is_empty() => "(root)".to_owned(),
        _ => field,
    }
}

/// The name of the field a "missing field `x`" error says is missing.
pub(crate) fn missing_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split('`').next()
}

/// Whether `value` deserializes as a `T`, else the error's text (for [`error_path`]).
pub(crate) fn attempt<T: serde::de::DeserializeOwned>(
    value: &serde_json::Value,
) -> std::result::Result<(), String> {
    serde_json::from_value::<T>(value.clone())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Where in `value` (a [`skeleton`]) the error of `attempt` (a deserialization of the whole value) lies,
/// as `a.b[2].c` (`(root)` for the value itself): followed down from the root, at each object or
/// array the first key or element whose removal lets the value through or leaves only that field
/// missing, else the first whose removal changes the error (serde stops at the first error, so
/// without its source a later one shows). A missing field is named by its parent's path and the
/// message. The same paths `serde_path_to_error` gave, with the one deserializer each type has:
/// that crate compiled a second, wrapped one for every type (8.6 kB of the wasm core, gzipped).
/// Runs only on an error, over small values (a configuration, one message part), and makes at
/// most 256 attempts: past that (a long array) the path stops where the search did.
#[inline(never)]
pub(crate) fn error_path(
    value: &serde_json::Value,
    attempt: fn(&serde_json::Value) -> std::result::Result<(), String>,
) -> String {
    use serde_json::Value;
    const ATTEMPTS: usize = 256;
    // The error as the skeleton gives it (a message may quote a string the skeleton cut).
    let Err(error) = attempt(value) else {
        return "(root)".to_owned();
    };
    let error = error.as_str();
    let mut attempts = 1;
    let mut path: Vec<Result<String, usize>> = Vec::new();
    'down: loop {
        let mut node = value;
        for step in &path {
            node = match (node, step) {
                (Value::Object(map), Ok(key)) => &map[key.as_str()],
                (Value::Array(items), Err(i)) => &items[*i],
                _ => break 'down,
            };
        }
        let steps: Vec<Result<String, usize>> = match node {
            Value::Object(map) => map.keys().cloned().map(Ok).collect(),
            Value::Array(items) => (0..items.len()).map(Err).collect(),
            _ => break,
        };
        // First a step whose removal lets the value through (or only misses that field), then
        // one whose removal changes the error at least (the first error found is the one
        // reported: without it, a later one shows).
        // At most ATTEMPTS deserializations in all (each of a copy of the value): a long array
        // stops the search at its parent rather than costing its length squared.
        if attempts + steps.len() > ATTEMPTS {
            break;
        }
        attempts += steps.len();
        let outcomes: Vec<(Result<String, usize>, std::result::Result<(), String>)> = steps
            .into_iter()
            .map(|step| {
                let outcome = attempt(&without(value, &path, &step));
                (step, outcome)
            })
            .collect();
        let missing = |step: &Result<String, usize>, e: &str| match step {
            Ok(key) => e.starts_with(&format!("missing field `{key}`")),
            Err(_) => false,
        };
        // A field missing here: removing another key only makes that one missing too, which
        // says nothing of where; only a child that can hold the missing field (an object or an
        // array) is followed, and the field is named below it ([`with_missing`]).
        let absent = missing_field(error).is_some();
        let holds = |step: &Result<String, usize>| match (node, step) {
            (Value::Object(map), Ok(key)) => {
                matches!(
                    map.get(key.as_str()),
                    Some(Value::Object(_) | Value::Array(_))
                )
            }
            (Value::Array(items), Err(i)) => {
                matches!(items.get(*i), Some(Value::Object(_) | Value::Array(_)))
            }
            _ => false,
        };
        let culprit = outcomes
            .iter()
            .find(|(step, o)| o.as_ref().err().is_none_or(|e| !absent && missing(step, e)))
            .or_else(|| {
                outcomes.iter().find(|(step, o)| {
                    o.as_ref().err().map(String::as_str) != Some(error) && (!absent || holds(step))
                })
            });
        if let Some((step, _)) = culprit {
            path.push(step.clone());
            continue 'down;
        }
        break;
    }
    if path.is_empty() {
        return "(root)".to_owned();
    }
    let mut out = String::new();
    for step in path {
        match step {
            Ok(key) if out.is_empty() => out.push_str(&key),
            Ok(key) => {
                out.push('.');
                out.push_str(&key);
            }
            Err(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Overlays `over` on `base`: objects merge key by key, anything else replaces.
fn merge(base: &mut serde_json::Value, over: serde_json::Value) {
    match (base, over) {
        (serde_json::Value::Object(base), serde_json::Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    Some(slot) => merge(slot, value),
                    None => {
                        base.insert(key, value);
                    }
                }
            }
        }
        (base, over) => *base = over,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_field_down_objects_and_arrays() {
        let field = |json: serde_json::Value| match Config::from_value(json) {
            Err(Error::InvalidConfig { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            field(serde_json::json!({"offload": {"thresholdTokens": -1}})),
            "offload.thresholdTokens"
        );
        assert_eq!(
            field(
                serde_json::json!({"model": "gpt-4o", "history": {"keepRecentMessages": "x", "summaryMaxTokens": 5}})
            ),
            "history.keepRecentMessages"
        );
        assert_eq!(
            field(serde_json::json!({"contextWindow": "big"})),
            "contextWindow"
        );
        assert_eq!(field(serde_json::json!("smart")), "(root)");

        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Item {
            name: String,
            #[serde(default)]
            size: u32,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct List {
            #[serde(default)]
            items: Vec<Item>,
        }
        let path = |json: serde_json::Value| {
            assert!(serde_json::from_value::<List>(json.clone()).is_err());
            error_path(&skeleton(&json), attempt::<List>)
        };
        let ok = serde_json::json!({"name": "a"});
        // A wrong type, and a required field wrong: both found by their own path.
        assert_eq!(
            path(serde_json::json!({"items": [ok, {"name": "b", "size": "9"}]})),
            "items[1].size"
        );
        assert_eq!(
            path(serde_json::json!({"items": [ok, ok, {"name": 3}]})),
            "items[2].name"
        );
        // A missing field: its parent (the message names the field).
        assert_eq!(
            path(serde_json::json!({"items": [ok, {"size": 1}]})),
            "items[1]"
        );
        // A long array: the search stops at it (bounded work), still naming where to look.
        let mut long = vec![ok.clone(); 5_000];
        long.push(serde_json::json!({"name": 1}));
        let started = std::time::Instant::now();
        assert_eq!(path(serde_json::json!({ "items": long })), "items");
        assert!(started.elapsed().as_secs() < 5, "bounded");
    }

    #[test]
    fn a_group_given_as_a_list_and_a_part_count_past_any_window_are_refused() {
        let field = |json: &str| match Config::from_json(json) {
            Err(Error::InvalidConfig { field, .. }) => field,
            other => panic!("{json}: {other:?}"),
        };
        // serde would read them by position: `[100]` as `offload.thresholdTokens`.
        assert_eq!(field(r#"{"offload":[100]}"#), "offload");
        assert_eq!(field(r#"{"history":["truncate"]}"#), "history");
        assert_eq!(
            field(r#"{"compaction":{"workingFiles":[1]}}"#),
            "compaction.workingFiles"
        );
        assert_eq!(field(r#"{"preset":"simple","cache":[]}"#), "cache");
        assert_eq!(field(r#"{"imageTokens":4294967295}"#), "imageTokens");
        assert_eq!(field(r#"{"fileTokens":10000001}"#), "fileTokens");
        assert!(Config::from_json(r#"{"imageTokens":10000000,"offload":{}}"#).is_ok());
    }

    #[test]
    fn defaults_and_overrides() {
        let c =
            Config::from_json(r#"{"model":"gpt-4o","offload":{"thresholdTokens":500}}"#).unwrap();
        assert_eq!(c.offload.threshold_tokens, 500);
        assert_eq!(c.offload.preview_head_lines, 10);
        assert_eq!(Config::from_json("{}").unwrap(), Config::default());
    }

    #[test]
    fn typos_and_bad_values_are_named() {
        let e = Config::from_json(r#"{"contextWindw": 5}"#).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { message, .. } if message.contains("contextWindw")),
            "{e:?}"
        );
        let e = Config::from_json(r#"{"offload":{"thresholdTokens":"big"}}"#).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { field, .. } if field == "offload.thresholdTokens"),
            "{e:?}"
        );
        let e = Config::from_json(r#"{"contextWindow":0}"#).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { field, .. } if field == "contextWindow"),
            "{e:?}"
        );
        assert!(matches!(
            Config::from_json("{"),
            Err(Error::MalformedJson { .. })
        ));
    }

    #[test]
    fn host_settings_are_the_defaults_the_apps_values_and_one_rule_for_background() {
        let settings = |json: &str| super::host_settings(json);
        let field = |json: &str| match settings(json) {
            Err(Error::InvalidConfig { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let d = settings(r#"{"summarize": true}"#).unwrap();
        assert_eq!(d.summarize_timeout_ms, 120_000.0);
        assert_eq!(d.store_timeout_ms, Some(10_000.0));
        assert_eq!(d.overflow_retries, 1);
        assert!(d.background, "on with a summarizer");
        assert!(
            !settings("{}").unwrap().background,
            "nothing to summarize with"
        );
        // A compactor made per request from the app's state: in the call, unless told.
        assert!(
            !settings(r#"{"summarize": true, "state": true}"#)
                .unwrap()
                .background
        );
        assert!(
            settings(r#"{"summarize": true, "state": true, "statePath": true, "store": true}"#)
                .unwrap()
                .background
        );
        assert!(
            settings(r#"{"summarize": true, "state": true, "background": true}"#)
                .unwrap()
                .background
        );
        assert!(!settings(r#"{"background": true}"#).unwrap().background);
        let given = settings(
            r#"{"summarizeTimeoutMs": 1500.5, "storeTimeoutMs": null, "overflow": {"retries": 3}}"#,
        )
        .unwrap();
        assert_eq!(
            (
                given.summarize_timeout_ms,
                given.store_timeout_ms,
                given.overflow_retries
            ),
            (1500.5, None, 3)
        );
        assert_eq!(field(r#"{"summarizeTimeoutMs": 0}"#), "summarizeTimeoutMs");
        assert_eq!(
            field(r#"{"summarizeTimeoutMs": null}"#),
            "summarizeTimeoutMs"
        );
        assert_eq!(field(r#"{"storeTimeoutMs": "5"}"#), "storeTimeoutMs");
        assert_eq!(
            field(r#"{"overflow": {"retries": -1}}"#),
            "overflow.retries"
        );
        assert_eq!(
            field(r#"{"overflow": {"retries": 1.5}}"#),
            "overflow.retries"
        );
        assert_eq!(field(r#"{"overflow": {"retry": 1}}"#), "overflow.retry");
        assert_eq!(field(r#"{"overflow": 2}"#), "overflow");
        assert_eq!(field(r#"{"background": "yes"}"#), "background");
        assert_eq!(field(r#"{"statePath": true}"#), "statePath");
        assert_eq!(field(r#"{"summarizeTimeout": 5}"#), "summarizeTimeout");
        assert!(matches!(settings("[]"), Err(Error::InvalidConfig { .. })));
        assert!(matches!(settings("{"), Err(Error::MalformedJson { .. })));
    }
}
