//! Configuration. Every default is documented where it is defined, with the seed it came from.
//! Unknown keys are rejected (a typo should not silently fall back to a default).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::tokens::Encoding;

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
    /// Tier 2: reversible edits once the window fills up.
    pub compaction: CompactionConfig,
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
            compaction: CompactionConfig::default(),
            image_tokens: crate::tokens::DEFAULT_IMAGE_TOKENS,
            file_tokens: crate::tokens::DEFAULT_FILE_TOKENS,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct OffloadConfig {
    /// A tool result above this many tokens is offloaded. 20,000 (seeds 000 and 002: "Tool
    /// result > 20,000 tokens → immediate offload to file").
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
    /// Tools whose results are never offloaded: the recovery tools themselves (their output is
    /// already paged from the store) and small bookkeeping tools (seed 002).
    pub excluded_tools: Vec<String>,
    /// Directory for offloaded results (seed 002: `/large_tool_results/`; the spec names
    /// `/tool_outputs/`).
    pub path_prefix: String,
}

impl Default for OffloadConfig {
    fn default() -> Self {
        Self {
            threshold_tokens: 20_000,
            max_window_fraction: 0.25,
            preview_head_lines: 10,
            preview_tail_lines: 3,
            preview_line_chars: 200,
            excluded_tools: ["write_todos", "list_skills", "read_file", "grep", "ls", "glob"]
                .map(String::from)
                .to_vec(),
            path_prefix: "/tool_outputs/".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CompactionConfig {
    /// Tier 2 fires above this fraction of the window. 0.85 (seeds 000, 001, 002: "tool call
    /// compaction / eviction at 85 % of the context window").
    pub trigger_fraction: f64,
    /// …and compacts down to this fraction (hysteresis: 15 % of growth before it fires again;
    /// our choice, the seeds name no target).
    pub target_fraction: f64,
    /// An edit that changes an earlier message invalidates the provider's prompt cache after
    /// it; edits saving fewer tokens than this are skipped. 500.
    pub min_saving_tokens: u32,
    /// Tool results among the last K stay verbatim; older ones may be masked. 10 (the
    /// observation window of "The Complexity Trap", 2025).
    pub keep_tool_results: usize,
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
}

impl Default for CompactionConfig {
    fn default() -> Self {
        let strings = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect();
        Self {
            trigger_fraction: 0.85,
            target_fraction: 0.70,
            min_saving_tokens: 500,
            keep_tool_results: 10,
            evict_input_tools: strings(&["write_file", "edit_file", "create_file", "str_replace_editor"]),
            evict_input_fields: strings(&["content", "new_text", "new_string", "file_text"]),
            input_preview_chars: 100,
            read_tools: strings(&["read_file", "open_file", "view_file", "cat"]),
            path_fields: strings(&["path", "file_path", "filePath", "filename"]),
            path_prefix: "/tool_outputs/".into(),
        }
    }
}

impl Config {
    /// Parses a JSON configuration; errors name the offending field.
    pub fn from_json(json: &str) -> Result<Self> {
        let mut de = serde_json::Deserializer::from_str(json);
        let config: Config = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let inner = e.inner();
            if inner.is_syntax() || inner.is_eof() {
                return Error::json("config", inner);
            }
            Error::InvalidConfig {
                field: match e.path().to_string().as_str() {
                    "." => "(root)".to_owned(),
                    path => path.to_owned(),
                },
                message: crate::error::strip_position(&inner.to_string()),
            }
        })?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, message: &str| {
            Err(Error::InvalidConfig { field: field.into(), message: message.into() })
        };
        if self.context_window == Some(0) {
            return bad("contextWindow", "must be greater than 0");
        }
        let o = &self.offload;
        if o.threshold_tokens == 0 {
            return bad("offload.thresholdTokens", "must be greater than 0");
        }
        if !(o.max_window_fraction > 0.0 && o.max_window_fraction <= 1.0) {
            return bad("offload.maxWindowFraction", "must be in (0, 1]");
        }
        for (field, prefix) in [("offload.pathPrefix", &o.path_prefix), ("compaction.pathPrefix", &self.compaction.path_prefix)] {
            if !prefix.starts_with('/') || !prefix.ends_with('/') || prefix.contains("..") {
                return bad(field, "must be an absolute directory like \"/tool_outputs/\" without \"..\"");
            }
        }
        let c = &self.compaction;
        if !(c.target_fraction > 0.0 && c.target_fraction <= c.trigger_fraction && c.trigger_fraction <= 1.0) {
            return bad("compaction.targetFraction", "need 0 < targetFraction <= triggerFraction <= 1");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let c = Config::from_json(r#"{"model":"gpt-4o","offload":{"thresholdTokens":500}}"#).unwrap();
        assert_eq!(c.offload.threshold_tokens, 500);
        assert_eq!(c.offload.preview_head_lines, 10);
        assert_eq!(Config::from_json("{}").unwrap(), Config::default());
    }

    #[test]
    fn typos_and_bad_values_are_named() {
        let e = Config::from_json(r#"{"contextWindw": 5}"#).unwrap_err();
        assert!(matches!(&e, Error::InvalidConfig { message, .. } if message.contains("contextWindw")), "{e:?}");
        let e = Config::from_json(r#"{"offload":{"thresholdTokens":"big"}}"#).unwrap_err();
        assert!(matches!(&e, Error::InvalidConfig { field, .. } if field == "offload.thresholdTokens"), "{e:?}");
        let e = Config::from_json(r#"{"contextWindow":0}"#).unwrap_err();
        assert!(matches!(&e, Error::InvalidConfig { field, .. } if field == "contextWindow"), "{e:?}");
        assert!(matches!(Config::from_json("{"), Err(Error::MalformedJson { .. })));
    }
}
