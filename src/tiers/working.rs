//! Working files: the files the agent is editing now.
//!
//! The seeds' smart strategy keeps "the current file being edited", and an agent that loses it
//! starts its next turn by reading it again. A working file is one a write or edit tool
//! (`compaction.evictInputTools`) touched; the most recent `workingFiles.maxFiles` of them, newest
//! first, while their content fits `workingFiles.maxTokens` (a file whose write a compaction
//! summarized while keeping its read stays one, after the written ones, so that the next plan
//! keeps what this one kept). What is protected is the file's
//! latest content as the conversation holds it: its latest read (a `compaction.readTools` result)
//! and every write or edit of it after that read (all of them when it was never read).
//!
//! Tier 2 leaves those parts alone (no eviction, dedupe or mask), and the lossy tier keeps their
//! groups, as normal tool-call/result pairs, right after the summary or notice: the agent never
//! has to re-read a file it was working on. Budgets use the family's fixed ratio (never the
//! calibration), so every host shape protects the same parts.

use std::collections::BTreeSet;

use hashbrown::{HashMap, HashSet};

use crate::config::CompactionConfig;
use crate::edit::Tokens;
use crate::message::{Message, Part};

/// The parts that hold the working files' latest content, and the files, newest first.
#[derive(Debug, Default)]
pub(crate) struct WorkingFiles {
    pub parts: HashSet<(usize, usize)>,
    pub files: Vec<String>,
}

impl WorkingFiles {
    /// Message indices that hold a protected part.
    pub(crate) fn messages(&self) -> BTreeSet<usize> {
        self.parts.iter().map(|&(m, _)| m).collect()
    }
}

enum Touch {
    Read,
    Write,
}

/// The working files of `messages` within `budget` tokens (already capped by the window).
/// `kept`: the messages the latest lossy step kept after its summary or notice. A file read
/// there stays a working file although its write is now in the summary: protection that a
/// compaction gave lasts until a newer file displaces it (so planning the compacted
/// conversation again keeps what the compaction kept).
pub(crate) fn working_files(
    messages: &[Message],
    config: &CompactionConfig,
    budget: u32,
    tokens: &dyn Tokens,
    kept: &BTreeSet<usize>,
) -> WorkingFiles {
    let mut out = WorkingFiles::default();
    if config.working_files.max_files == 0 || budget == 0 {
        return out;
    }
    // Every touch of a file, in order: read results and write/edit calls.
    let mut read_calls: HashMap<&str, &str> = HashMap::new();
    let mut touches: Vec<(usize, usize, &str, Touch)> = Vec::new();
    for (m, message) in messages.iter().enumerate() {
        for (p, part) in message.parts().iter().enumerate() {
            match part {
                Part::ToolCall(call) => {
                    let Some(path) = crate::tiers::file_argument(&call.input, &config.path_fields)
                    else {
                        continue;
                    };
                    if config.evict_input_tools.contains(&call.tool_name) {
                        touches.push((m, p, path, Touch::Write));
                    } else if config.read_tools.contains(&call.tool_name) {
                        read_calls.insert(&call.tool_call_id, path);
                    }
                }
                Part::ToolResult(result) => {
                    if let Some(path) = read_calls.get(result.tool_call_id.as_str()) {
                        touches.push((m, p, path, Touch::Read));
                    }
                }
                _ => {}
            }
        }
    }
    // The files written or edited, newest first; then, while there is room, the files read in
    // what the latest compaction kept (whose write it summarized). The kept groups may hold
    // other reads too, so a file with a write in view always comes first.
    let mut files: Vec<&str> = Vec::new();
    for written in [true, false] {
        for (m, _, path, touch) in touches.iter().rev() {
            let counts = match touch {
                Touch::Write => written,
                Touch::Read => !written && kept.contains(m),
            };
            if counts && files.len() < config.working_files.max_files && !files.contains(path) {
                files.push(path);
            }
        }
    }
    let mut spent = 0u32;
    for file in files {
        // The latest read and every write after it.
        let mine: Vec<&(usize, usize, &str, Touch)> =
            touches.iter().filter(|t| t.2 == file).collect();
        let from = mine
            .iter()
            .rposition(|t| matches!(t.3, Touch::Read))
            .unwrap_or(0);
        let parts: Vec<(usize, usize)> = mine[from..].iter().map(|t| (t.0, t.1)).collect();
        let cost: u32 = parts
            .iter()
            .map(|&(m, p)| match &messages[m].parts()[p] {
                Part::ToolResult(r) => tokens.shown_output_at((m, p), &r.output),
                Part::ToolCall(c) => tokens.shown_text(&c.input.to_string()),
                _ => 0,
            })
            .sum();
        if spent.saturating_add(cost) > budget {
            break; // the newest files first: an older one never displaces a newer one
        }
        spent += cost;
        out.parts.extend(parts);
        out.files.push(file.to_owned());
    }
    out
}
