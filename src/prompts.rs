//! System-prompt segments as plain strings (SPEC §8): how to recover compacted content, the
//! long-term memory protocol (seed 002), and the loaded `/memories/AGENTS.md`.
//!
//! The host appends them to its own system prompt; the core decides nothing here, so these are
//! pure functions of the store prefixes the host configured.
//!
//! ```
//! use context_compactor::prompts::{self, AGENTS_MD_PATH, DEFAULT_HISTORY_PREFIX, DEFAULT_MEMORIES_PREFIX,
//!     DEFAULT_OFFLOAD_PREFIX};
//!
//! let agents_md = Some("- The user prefers pnpm over npm."); // read by the host from AGENTS_MD_PATH
//! let system = format!(
//!     "You are a coding agent.\n\n{}\n\n{}",
//!     prompts::recovery_segment(DEFAULT_OFFLOAD_PREFIX, DEFAULT_HISTORY_PREFIX),
//!     prompts::memory_segment(DEFAULT_MEMORIES_PREFIX),
//! );
//! let system = prompts::with_memory(&system, agents_md);
//! assert!(system.contains("/conversation_history/") && system.contains(AGENTS_MD_PATH));
//! assert!(system.ends_with("- The user prefers pnpm over npm.\n</agent_memory>"));
//! ```

/// Where offloaded tool results, evicted write/edit contents and masked results are stored by
/// default (`offload.pathPrefix` and `compaction.pathPrefix` of the config).
pub const DEFAULT_OFFLOAD_PREFIX: &str = "/tool_outputs/";
/// Where full transcripts are saved before older messages are summarized (seed 000).
pub const DEFAULT_HISTORY_PREFIX: &str = "/conversation_history/";
/// The directory that persists across sessions (seed 002).
pub const DEFAULT_MEMORIES_PREFIX: &str = "/memories/";
/// The memory file loaded into the system prompt at the start of every session (seed 002).
pub const AGENTS_MD_PATH: &str = "/memories/AGENTS.md";

/// Tells the agent what context management does to its conversation and how to get anything
/// back with the recovery tools (`read_file` with offset/limit paging, `grep`, `ls`).
pub fn recovery_segment(offload_prefix: &str, history_prefix: &str) -> String {
    let offload = directory(offload_prefix);
    let history = directory(history_prefix);
    format!(
        "## Context Management

Your conversation is managed automatically to stay within the context window. Nothing is \
deleted: content is saved to files before it leaves the conversation.

1. **Large tool outputs** are saved under `{offload}` and replaced with a preview and the file's path.
2. **File contents** you wrote or edited (write/edit tool inputs) are replaced with a pointer to a \
stored copy under `{offload}`.
3. **Older tool results** are cleared and replaced with a pointer to their stored copy under \
`{offload}`; a file read again later shows `[Previously read: <path>]` at the earlier read.
4. **Long conversations** are summarized; the full transcript is saved under `{history}` first.

**To recover information:**
- `read_file(\"{offload}<file>\")` shows a saved output; page through large files with \
`offset` and `limit` instead of reading them whole.
- `grep(\"keyword\", \"{history}\")` searches past conversation transcripts; \
`grep(\"keyword\", \"{offload}\")` searches saved outputs.
- `ls(\"{history}\")` and `ls(\"{offload}\")` list what was saved.

Re-read a stored copy whenever you need exact content that now shows as a preview, pointer or \
summary: the original is always preserved."
    )
}

/// The long-term memory protocol (seed 002): what persists, when to read it, and what to save.
pub fn memory_segment(memories_prefix: &str) -> String {
    let memories = directory(memories_prefix);
    format!(
        "## Long-term Memory

Files under `{memories}` persist across sessions; everything else is forgotten when this session \
ends. `{memories}AGENTS.md` is your core knowledge: it is loaded into this prompt at the start of \
every session.

**Memory-first protocol:**
1. **Before research**: check `{memories}` (`ls`, `grep`) for relevant prior knowledge.
2. **During work**: consult memory files when uncertain.
3. **After learning**: save what a future session needs to `{memories}`.

**Save** when the user teaches you something they want remembered (preferences, conventions), \
when you learn project facts (commands, structure, patterns), when an important decision is made \
(and why), and lessons learned (what failed, what worked).

**How:** keep `{memories}AGENTS.md` short and high-signal; put details in topic files with \
descriptive names (e.g. `{memories}project-notes.md`) and reference them from AGENTS.md. Update \
or correct an existing entry rather than adding a duplicate; remove what is no longer true. \
Never store secrets: no API keys, passwords, tokens or personal data."
    )
}

/// `system` with the loaded `AGENTS.md` appended under a heading. `None` or blank content
/// leaves `system` unchanged (the file does not exist yet).
pub fn with_memory(system: &str, agents_md: Option<&str>) -> String {
    let Some(content) = agents_md.map(str::trim).filter(|c| !c.is_empty()) else {
        return system.to_owned();
    };
    let block = format!(
        "## Loaded Memory ({AGENTS_MD_PATH})\n\n<agent_memory>\n{content}\n</agent_memory>"
    );
    if system.trim().is_empty() {
        return block;
    }
    format!("{}\n\n{block}", system.trim_end())
}

/// `base` with what an agent must know about context management: the recovery segment (where
/// offloaded content and transcripts are, how to read them back), then the memory protocol
/// when `memory` asks for it or, unless `memory` is `Some(false)`, when the store has
/// `AGENTS.md` (`agents_md`), which is loaded under it. A host's `systemPrompt(base, {memory})`:
/// it reads `AGENTS.md` unless told not to, and hands it in.
pub fn system_prompt(
    base: &str,
    offload_prefix: &str,
    history_prefix: &str,
    memory: Option<bool>,
    agents_md: Option<&str>,
) -> String {
    let recovery = recovery_segment(offload_prefix, history_prefix);
    let mut system = match base.is_empty() {
        true => recovery,
        false => format!(
            "{base}

{recovery}"
        ),
    };
    if memory == Some(false) {
        return system;
    }
    if memory == Some(true) || agents_md.is_some() {
        system = format!(
            "{system}

{}",
            memory_segment(DEFAULT_MEMORIES_PREFIX)
        );
    }
    with_memory(&system, agents_md)
}

/// Prefixes name directories; a missing trailing slash would glue the file name onto the
/// directory name in the examples the model copies.
fn directory(prefix: &str) -> String {
    match prefix.ends_with('/') {
        true => prefix.to_owned(),
        false => format!("{prefix}/"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_names_both_prefixes_and_the_recovery_tools() {
        let text = recovery_segment(DEFAULT_OFFLOAD_PREFIX, DEFAULT_HISTORY_PREFIX);
        assert!(
            text.contains("read_file(\"/tool_outputs/<file>\")"),
            "{text}"
        );
        assert!(
            text.contains("grep(\"keyword\", \"/conversation_history/\")"),
            "{text}"
        );
        assert!(text.contains("ls(\"/conversation_history/\")"), "{text}");
        assert!(text.contains("`offset` and `limit`"), "{text}");
        assert!(text.contains("summarized"), "{text}");
    }

    #[test]
    fn recovery_uses_custom_prefixes_and_adds_the_slash() {
        let text = recovery_segment("/store/out", "/store/history/");
        assert!(text.contains("`/store/out/`"), "{text}");
        assert!(text.contains("ls(\"/store/history/\")"), "{text}");
        assert!(!text.contains(DEFAULT_OFFLOAD_PREFIX), "{text}");
        assert!(!text.contains(DEFAULT_HISTORY_PREFIX), "{text}");
    }

    #[test]
    fn memory_protocol_names_agents_md_and_forbids_secrets() {
        let text = memory_segment(DEFAULT_MEMORIES_PREFIX);
        assert!(text.contains(AGENTS_MD_PATH), "{text}");
        assert!(text.contains("persist across sessions"), "{text}");
        assert!(text.contains("Never store secrets"), "{text}");
        assert!(text.contains("rather than adding a duplicate"), "{text}");

        let custom = memory_segment("/agents/alice/memories");
        assert!(
            custom.contains("`/agents/alice/memories/AGENTS.md`"),
            "{custom}"
        );
        assert!(!custom.contains("`/memories/"), "{custom}");
    }

    #[test]
    fn agents_md_path_lives_under_the_memories_prefix() {
        assert_eq!(
            AGENTS_MD_PATH,
            format!("{DEFAULT_MEMORIES_PREFIX}AGENTS.md")
        );
    }

    #[test]
    fn a_system_prompt_has_the_memory_protocol_when_asked_or_when_there_is_an_agents_md() {
        let plain = system_prompt("Base.", "/out/", "/past/", None, None);
        assert!(plain.starts_with("Base.\n\n## Context Management") && plain.contains("`/out/"));
        assert!(!plain.contains(DEFAULT_MEMORIES_PREFIX));
        let found = system_prompt("Base.", "/out/", "/past/", None, Some("- use cargo"));
        assert!(
            found.contains("## Long-term Memory")
                && found.ends_with("- use cargo\n</agent_memory>")
        );
        let asked = system_prompt("", "/out/", "/past/", Some(true), None);
        assert!(
            asked.starts_with("## Context Management") && asked.contains("## Long-term Memory")
        );
        let off = system_prompt("Base.", "/out/", "/past/", Some(false), Some("- use cargo"));
        assert_eq!(off, plain);
    }

    #[test]
    fn with_memory_appends_agents_md_under_a_heading() {
        let out = with_memory("You are helpful.\n", Some("  prefers tabs\n"));
        assert_eq!(
            out,
            "You are helpful.\n\n## Loaded Memory (/memories/AGENTS.md)\n\n<agent_memory>\nprefers tabs\n</agent_memory>"
        );
        assert!(with_memory("", Some("x")).starts_with("## Loaded Memory"));
    }

    #[test]
    fn with_memory_leaves_the_prompt_alone_without_content() {
        assert_eq!(with_memory("sys", None), "sys");
        assert_eq!(with_memory("sys", Some(" \n ")), "sys");
    }
}
