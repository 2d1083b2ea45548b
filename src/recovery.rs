//! The recovery tools (`read_file`, `grep`, `ls`): what an agent calls to read back what
//! compaction stored. Their names, descriptions, input schemas, limits and every text they answer
//! with live here, once, for every host (docs/LOOP.md, slice 1).
//!
//! Sans-IO like the rest of the crate: a [`ToolRun`] says which store call it needs
//! ([`ToolIo::Read`] a path, [`ToolIo::List`] a prefix), the host makes it and hands the result
//! back, until the run is [`ToolIo::Done`] with the text for the model. A problem (a missing
//! file, a bad argument, a store error such as an invalid path, which the host's store checks)
//! is an `Error: ...` text the model can act on, never an error of the call. A run is plain serde data, so a host may keep it as JSON between steps.
//!
//! ```
//! use context_compactor::recovery::{ToolIo, ToolRun, RecoveryOptions};
//! use serde_json::json;
//!
//! let store = [("/tool_outputs/a.txt", "alpha\nbeta\ngamma")];
//! let mut run = ToolRun::new("read_file", &json!({"path": "/tool_outputs/a.txt", "limit": 2}), &RecoveryOptions::default());
//! let text = loop {
//!     match run.poll() {
//!         ToolIo::Read { path } => run.handle_read(Ok(store.iter().find(|f| f.0 == path).map(|f| f.1.to_owned()))),
//!         ToolIo::List { prefix } => run.handle_list(Ok(store.iter().filter(|f| f.0.starts_with(&prefix)).map(|f| f.0.to_owned()).collect())),
//!         ToolIo::Done { text } => break text,
//!     }
//! };
//! assert_eq!(text, "1\talpha\n2\tbeta\n… 1 more line: read_file with offset=2");
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The recovery tools' names. An app's own tool may have one of them (`read_file` most often):
/// its results are offloaded as any tool's unless its call reads the store (tier 1).
pub const TOOL_NAMES: [&str; 3] = ["read_file", "grep", "ls"];
/// Lines `read_file` returns when no `limit` is given.
pub const DEFAULT_LIMIT: usize = 500;
/// A line over this many characters wraps onto the next line numbers.
pub const MAX_LINE_CHARS: usize = 2_000;
/// `grep` stops after this many matching lines.
pub const MAX_MATCHES: usize = 100;

/// The tools' limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RecoveryOptions {
    /// Lines `read_file` returns when no `limit` is given. Default 500.
    pub default_limit: usize,
    /// A line over this many characters wraps onto the next line numbers (`read_file` and
    /// `grep` number it alike; nothing is cut). Default 2,000.
    pub max_line_chars: usize,
    /// `grep` stops after this many matching lines. Default 100.
    pub max_matches: usize,
    /// A `read_file` page ends before it passes this many characters (at least one line is
    /// shown), so that one page cannot fill a small window; `grep` stops its matches there too. Default: none; a compactor's tools
    /// use [`page_chars_for_window`] (see `context_window`).
    pub max_page_chars: Option<usize>,
    /// The window of the model the tools serve: without `max_page_chars`, a page ends at
    /// [`page_chars_for_window`] of it.
    pub context_window: Option<u32>,
    /// The compactor's state in the store: `ls` and `grep` leave it and its summary leases
    /// (`<statePath>.summaries/`) out, as they are the compactor's bookkeeping, not content for
    /// the model (a `grep` would find every offload's preview in the state's record first).
    /// Default [`crate::stored::DEFAULT_STATE_PATH`].
    pub state_path: String,
}

impl RecoveryOptions {
    /// The page limit in force: `max_page_chars`, else the window's, else none.
    pub fn page_limit(&self) -> Option<usize> {
        self.max_page_chars
            .or(self.context_window.map(page_chars_for_window))
    }

    /// `path` is the compactor's own (its state, a summary lease): not shown by `ls` or `grep`.
    fn hides(&self, path: &str) -> bool {
        path.strip_prefix(self.state_path.as_str())
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(crate::lease::LEASES_DIR))
    }
}

impl Default for RecoveryOptions {
    fn default() -> Self {
        RecoveryOptions {
            default_limit: DEFAULT_LIMIT,
            max_line_chars: MAX_LINE_CHARS,
            max_matches: MAX_MATCHES,
            max_page_chars: None,
            context_window: None,
            state_path: crate::stored::DEFAULT_STATE_PATH.to_owned(),
        }
    }
}

/// The page limit of a compactor's `read_file`: about 10 % of the window (4 characters a
/// token), at least 2,000 characters.
pub fn page_chars_for_window(context_window: u32) -> usize {
    (context_window as usize * 2 / 5).max(2_000)
}

/// A tool as a model sees it: its name, what it does, and the JSON schema of its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// `read_file`, `grep` or `ls`.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON schema of its arguments.
    pub input_schema: Value,
}

/// `read_file`, `grep` and `ls`, in that order.
pub fn tool_specs(options: &RecoveryOptions) -> Vec<ToolSpec> {
    serde_json::from_str(&tool_specs_json(options)).expect("the recovery tools' specs are JSON")
}

/// [`tool_specs`] as JSON text (`[{name, description, inputSchema}]`), written out rather than
/// serialized: what the bindings hand their hosts, without serde's code for these types in the
/// wasm core.
pub fn tool_specs_json(options: &RecoveryOptions) -> String {
    format!(
        r#"[{{"name":"read_file","description":"Read a stored file (offloaded tool output, conversation transcript, memory). Returns numbered lines; page with offset (0-based line) and limit.","inputSchema":{{"type":"object","properties":{{"path":{{"type":"string","description":"Absolute store path, e.g. /tool_outputs/search_ab12.txt"}},"offset":{{"type":"integer","description":"Lines to skip (0-based): to start at line N as numbered by read_file or grep, pass N-1. Default 0."}},"limit":{{"type":"integer","description":"Number of lines. Default {}."}}}},"required":["path"],"additionalProperties":false}}}},{{"name":"grep","description":"Find lines containing a literal text in stored files under a path (default: everything).","inputSchema":{{"type":"object","properties":{{"pattern":{{"type":"string","description":"Literal text to find (case-sensitive)."}},"path":{{"type":"string","description":"A file or directory prefix, e.g. /tool_outputs/. Default /."}}}},"required":["pattern"],"additionalProperties":false}}}},{{"name":"ls","description":"List stored files and directories under a path (default /).","inputSchema":{{"type":"object","properties":{{"path":{{"type":"string","description":"Directory, e.g. /tool_outputs/. Default /."}}}},"additionalProperties":false}}}}]"#,
        options.default_limit
    )
}

/// What a [`ToolRun`] needs next.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ToolIo {
    /// Read the file at `path` (`None`: no such file) and hand it to [`ToolRun::handle_read`].
    Read {
        /// An absolute store path.
        path: String,
    },
    /// List the files under `prefix` and hand them to [`ToolRun::handle_list`].
    List {
        /// A store path prefix.
        prefix: String,
    },
    /// The answer for the model.
    Done {
        /// The tool's result text.
        text: String,
    },
}

impl ToolIo {
    /// As JSON (`{"type": "read", "path"}`, ...), written out rather than serialized (see
    /// [`tool_specs_json`]).
    pub fn to_json(&self) -> String {
        let text = |s: &str| serde_json::to_string(s).unwrap_or_default();
        match self {
            ToolIo::Read { path } => format!(r#"{{"type":"read","path":{}}}"#, text(path)),
            ToolIo::List { prefix } => format!(r#"{{"type":"list","prefix":{}}}"#, text(prefix)),
            ToolIo::Done { text: done } => format!(r#"{{"type":"done","text":{}}}"#, text(done)),
        }
    }
}

/// One call of a recovery tool, from the model's arguments to the text it gets back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRun {
    options: RecoveryOptions,
    step: Step,
}

// Serializable, so a native host may keep a run between steps; the wasm bindings hold it as an
// object instead (its serde code would be about 20 kB of the core, internally tagged 27).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Step {
    Read {
        path: String,
        offset: usize,
        limit: usize,
    },
    GrepList {
        pattern: String,
        path: String,
    },
    GrepFiles {
        pattern: String,
        path: String,
        files: Vec<String>,
        next: usize,
        matches: Vec<String>,
    },
    Ls {
        dir: String,
    },
    Done {
        text: String,
    },
}

impl ToolRun {
    /// A run of the tool `name` with the model's `arguments` (a JSON object).
    pub fn new(name: &str, arguments: &Value, options: &RecoveryOptions) -> ToolRun {
        let step = start(name, arguments, options).unwrap_or_else(|text| Step::Done { text });
        ToolRun {
            options: options.clone(),
            step,
        }
    }

    /// What the run needs now; [`ToolIo::Done`] once it has its answer (again on every call).
    pub fn poll(&self) -> ToolIo {
        match &self.step {
            Step::Read { path, .. } => ToolIo::Read { path: path.clone() },
            Step::GrepList { path, .. } => ToolIo::List {
                prefix: path.clone(),
            },
            Step::GrepFiles { files, next, .. } => ToolIo::Read {
                path: files[*next].clone(),
            },
            Step::Ls { dir } => ToolIo::List {
                prefix: dir.clone(),
            },
            Step::Done { text } => ToolIo::Done { text: text.clone() },
        }
    }

    /// The answer, once [`ToolRun::poll`] says [`ToolIo::Done`].
    pub fn answer(&self) -> Option<&str> {
        match &self.step {
            Step::Done { text } => Some(text),
            _ => None,
        }
    }

    /// The result of the [`ToolIo::Read`] asked for: the file's text, `None` when there is no
    /// file, or the store's error. A result the run did not ask for is ignored.
    pub fn handle_read(&mut self, result: Result<Option<String>, String>) {
        let options = &self.options;
        let step = std::mem::replace(
            &mut self.step,
            Step::Done {
                text: String::new(),
            },
        );
        self.step = match (step, result) {
            (Step::Read { .. } | Step::GrepFiles { .. }, Err(error)) => Step::Done {
                text: format!("Error: {error}"),
            },
            (Step::Read { path, .. }, Ok(None)) => Step::Done {
                text: format!("Error: no file at {path}. Use ls to see what is stored."),
            },
            (Step::Read { offset, limit, .. }, Ok(Some(text))) => Step::Done {
                text: page(&text, offset, limit, options),
            },
            (
                Step::GrepFiles {
                    pattern,
                    path,
                    files,
                    next,
                    mut matches,
                },
                Ok(text),
            ) => {
                let file = &files[next];
                // Numbered as read_file numbers them (a long line wrapped), once a file has a
                // match; a match shows the line where it starts. A line break is never part of
                // a match.
                let text = text.as_deref().unwrap_or_default();
                let mut found = text
                    .match_indices(pattern.as_str())
                    .filter(|_| !pattern.contains('\n'))
                    .peekable();
                if found.peek().is_some() {
                    let numbered = lines(text, options.max_line_chars);
                    let offset = |line: &str| line.as_ptr() as usize - text.as_ptr() as usize;
                    let (mut at, mut last) = (0, None);
                    for (start, _) in found {
                        while at + 1 < numbered.len() && offset(numbered[at + 1]) <= start {
                            at += 1;
                        }
                        if last == Some(at) {
                            continue;
                        }
                        last = Some(at);
                        let line = format!("{file}:{}: {}", at + 1, numbered[at]);
                        // At most `max_matches` lines, and no more characters than a
                        // `read_file` page (the first match is always shown).
                        let over_page = options.page_limit().is_some_and(|max| {
                            let used: usize =
                                matches.iter().map(|m| m.encode_utf16().count() + 1).sum();
                            !matches.is_empty() && used + line.encode_utf16().count() > max
                        });
                        if matches.len() == options.max_matches || over_page {
                            return self.finish(format!(
                                "{}\n… more matches: narrow the path or the pattern",
                                matches.join("\n")
                            ));
                        }
                        matches.push(line);
                    }
                }
                grep_next(pattern, path, files, next + 1, matches)
            }
            (step, _) => step,
        };
    }

    /// The result of the [`ToolIo::List`] asked for: the paths under the prefix, or the store's
    /// error. A result the run did not ask for is ignored.
    pub fn handle_list(&mut self, result: Result<Vec<String>, String>) {
        let result = result.map(|mut files| {
            files.retain(|file| !self.options.hides(file));
            files
        });
        let step = std::mem::replace(
            &mut self.step,
            Step::Done {
                text: String::new(),
            },
        );
        self.step = match (step, result) {
            (Step::GrepList { .. } | Step::Ls { .. }, Err(error)) => Step::Done {
                text: format!("Error: {error}"),
            },
            (Step::GrepList { pattern, path }, Ok(files)) => {
                grep_next(pattern, path, files, 0, Vec::new())
            }
            (Step::Ls { dir }, Ok(files)) => {
                let owned: Vec<String> = files
                    .iter()
                    .filter_map(|file| file.strip_prefix(dir.as_str()).map(|rest| (file, rest)))
                    .map(|(file, rest)| match rest.find('/') {
                        Some(slash) => format!("{dir}{}", &rest[..=slash]),
                        None => file.clone(),
                    })
                    .collect();
                // Sorted as `&String`s: the sort the compaction record already has (a sort of
                // `String`s is another few kB of the wasm core).
                let mut entries: Vec<&String> = owned.iter().collect();
                entries.sort_unstable();
                entries.dedup();
                Step::Done {
                    text: if entries.is_empty() {
                        format!("Nothing stored under {dir}.")
                    } else {
                        entries
                            .iter()
                            .map(|e| e.as_str())
                            .collect::<Vec<&str>>()
                            .join("\n")
                    },
                }
            }
            (step, _) => step,
        };
    }

    fn finish(&mut self, text: String) {
        self.step = Step::Done { text };
    }
}

/// The first step of a call, or the error text for arguments that cannot run.
fn start(name: &str, arguments: &Value, options: &RecoveryOptions) -> Result<Step, String> {
    let Some(args) = arguments.as_object() else {
        return Err(format!("Error: the arguments of {name} must be an object."));
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        match args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            // As the hosts' stores say it (checkPath / check_path).
            Some(other) if key == "path" => {
                Err(format!("Error: invalid store path {other}: not a string"))
            }
            Some(_) => Err(format!("Error: {key} must be a string.")),
        }
    };
    let count = |key: &str, default: usize| -> Result<usize, String> {
        match args.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(value) => value
                .as_u64()
                .or_else(|| {
                    value
                        .as_f64()
                        .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                        .map(|f| f as u64)
                })
                .map(|n| n.min(usize::MAX as u64) as usize)
                .ok_or_else(|| "Error: offset must be >= 0 and limit > 0.".to_owned()),
        }
    };
    match name {
        "read_file" => {
            let path = text("path")?.ok_or("Error: path is required.")?;
            let offset = count("offset", 0)?;
            let limit = count("limit", options.default_limit)?;
            if limit == 0 {
                return Err("Error: offset must be >= 0 and limit > 0.".into());
            }
            Ok(Step::Read {
                path,
                offset,
                limit,
            })
        }
        "grep" => {
            let pattern = text("pattern")?.unwrap_or_default();
            if pattern.is_empty() {
                return Err("Error: pattern is empty.".into());
            }
            let path = text("path")?.unwrap_or_else(|| "/".into());
            Ok(Step::GrepList { pattern, path })
        }
        "ls" => {
            let path = text("path")?.unwrap_or_else(|| "/".into());
            let dir = if path.ends_with('/') {
                path
            } else {
                format!("{path}/")
            };
            Ok(Step::Ls { dir })
        }
        other => Err(format!(
            "Error: no recovery tool named {other:?} (read_file, grep, ls)."
        )),
    }
}

fn grep_next(
    pattern: String,
    path: String,
    files: Vec<String>,
    next: usize,
    matches: Vec<String>,
) -> Step {
    if next < files.len() {
        return Step::GrepFiles {
            pattern,
            path,
            files,
            next,
            matches,
        };
    }
    Step::Done {
        text: if matches.is_empty() {
            format!(
                "No match for {} under {path}.",
                serde_json::to_string(&pattern).unwrap_or_default()
            )
        } else {
            matches.join("\n")
        },
    }
}

/// Lines `offset..offset + limit` of `text` ([`lines`]: a long line continues on the next
/// numbers), numbered from 1, the page ended before it passes `max_page_chars` (at least one
/// line), and a line saying how to read on when lines are left.
fn page(text: &str, offset: usize, limit: usize, options: &RecoveryOptions) -> String {
    let lines = lines(text, options.max_line_chars);
    if offset >= lines.len() && offset > 0 {
        return format!(
            "Error: offset {offset} is past the end ({} lines).",
            lines.len()
        );
    }
    let end = offset.saturating_add(limit).min(lines.len());
    let page = &lines[offset..end];
    let width = (offset + page.len()).to_string().len();
    let max_chars = options.page_limit().unwrap_or(usize::MAX);
    let mut numbered: Vec<String> = Vec::new();
    let mut chars = 0usize;
    for (i, line) in page.iter().enumerate() {
        let text = format!("{:>width$}\t{line}", offset + i + 1);
        // Characters as JavaScript counts them (UTF-16 code units), the unit the limit was set in.
        let len = text.encode_utf16().count();
        if !numbered.is_empty() && chars + len + 1 > max_chars {
            break;
        }
        numbered.push(text);
        chars += len + 1;
    }
    let shown = numbered.len();
    let body = numbered.join("\n");
    let rest = lines.len() - offset - shown;
    if rest > 0 {
        let lines = if rest == 1 { "line" } else { "lines" };
        format!(
            "{body}\n… {rest} more {lines}: read_file with offset={}",
            offset + shown
        )
    } else {
        body
    }
}

/// The lines the tools number: `text`'s, each over `max` characters (UTF-16 code units, as the
/// hosts count them) wrapped onto the next numbers in runs of `max`, never inside a character.
/// Nothing is cut: a minified output or a base64 line reads back whole, page by page, and the
/// pages joined (a wrapped line without its line break) are the file.
fn lines(text: &str, max: usize) -> Vec<&str> {
    let max = max.max(2);
    let mut out = Vec::new();
    for line in text.split('\n') {
        // A line of at most `max` bytes has at most `max` code units.
        if line.len() <= max {
            out.push(line);
            continue;
        }
        let (mut start, mut units) = (0, 0);
        for (at, c) in line.char_indices() {
            if units + c.len_utf16() > max {
                out.push(&line[start..at]);
                (start, units) = (at, 0);
            }
            units += c.len_utf16();
        }
        out.push(&line[start..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(name: &str, args: Value, files: &[(&str, &str)], options: &RecoveryOptions) -> String {
        let mut run = ToolRun::new(name, &args, options);
        for _ in 0..1_000 {
            match run.poll() {
                ToolIo::Read { path } => run.handle_read(Ok(files
                    .iter()
                    .find(|f| f.0 == path)
                    .map(|f| f.1.to_owned()))),
                ToolIo::List { prefix } => run.handle_list(Ok(files
                    .iter()
                    .filter(|f| f.0.starts_with(&prefix))
                    .map(|f| f.0.to_owned())
                    .collect())),
                ToolIo::Done { text } => return text,
            }
        }
        panic!("the run did not end");
    }

    #[test]
    fn read_file_pages_numbers_and_cuts() {
        let text: String = (1..=12).map(|i| format!("line {i}\n")).collect::<String>() + "end";
        let files = [("/a.txt", text.as_str())];
        let o = RecoveryOptions::default();
        assert_eq!(
            run(
                "read_file",
                json!({"path": "/a.txt", "offset": 8, "limit": 2}),
                &files,
                &o
            ),
            " 9\tline 9\n10\tline 10\n… 3 more lines: read_file with offset=10"
        );
        assert_eq!(
            run(
                "read_file",
                json!({"path": "/a.txt", "offset": 12}),
                &files,
                &o
            ),
            "13\tend"
        );
        assert_eq!(
            run(
                "read_file",
                json!({"path": "/a.txt", "offset": 40}),
                &files,
                &o
            ),
            "Error: offset 40 is past the end (13 lines)."
        );
        assert_eq!(
            run("read_file", json!({"path": "/b.txt"}), &files, &o),
            "Error: no file at /b.txt. Use ls to see what is stored."
        );
        assert_eq!(
            run(
                "read_file",
                json!({"path": "/a.txt", "limit": 0}),
                &files,
                &o
            ),
            "Error: offset must be >= 0 and limit > 0."
        );
        assert_eq!(
            run(
                "read_file",
                json!({"path": "/a.txt", "offset": -1}),
                &files,
                &o
            ),
            "Error: offset must be >= 0 and limit > 0."
        );
        // A page ends before it passes the character limit, at least one line shown.
        let small = RecoveryOptions {
            max_page_chars: Some(20),
            ..RecoveryOptions::default()
        };
        assert_eq!(
            run("read_file", json!({"path": "/a.txt"}), &files, &small),
            " 1\tline 1\n 2\tline 2\n… 11 more lines: read_file with offset=2"
        );
        let cut = RecoveryOptions {
            max_line_chars: 3,
            ..RecoveryOptions::default()
        };
        assert_eq!(
            run(
                "read_file",
                json!({"path": "/u.txt"}),
                &[("/u.txt", "a😀bc")],
                &cut
            ),
            "1\ta😀\n2\tbc"
        );
        // A long line wraps onto the next numbers, never inside a character: the pages joined
        // are the line, and grep numbers a match as read_file does.
        let long: String = (0..50).map(|i| format!("{i:02}😀")).collect();
        let files = [("/l.txt", format!("head\n{long}\ntail"))];
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let wrap = RecoveryOptions {
            max_line_chars: 7,
            ..RecoveryOptions::default()
        };
        let mut joined = String::new();
        let mut offset = 1;
        loop {
            let page = run(
                "read_file",
                json!({"path": "/l.txt", "offset": offset, "limit": 4}),
                &files,
                &wrap,
            );
            for line in page.lines().filter(|l| !l.starts_with('…')) {
                let text = line.split_once('\t').unwrap().1;
                assert!(text.encode_utf16().count() <= 7, "{text}");
                if text == "tail" {
                    assert_eq!(joined, long);
                    let found = run("grep", json!({"pattern": "4😀"}), &files, &wrap);
                    // "04😀", "14😀", ... "44😀": each on the line read_file shows it on.
                    let first = found.lines().next().unwrap();
                    let (number, text) = first
                        .trim_start_matches("/l.txt:")
                        .split_once(": ")
                        .unwrap();
                    let page = run(
                        "read_file",
                        json!({"path": "/l.txt", "offset": number.parse::<usize>().unwrap() - 1, "limit": 1}),
                        &files,
                        &wrap,
                    );
                    assert!(
                        page.lines().next().unwrap().ends_with(&format!("\t{text}"))
                            && text.contains("4😀"),
                        "{page} / {text}"
                    );
                    assert_eq!(found.lines().count(), 5, "{found}");
                    return;
                }
                joined.push_str(text);
            }
            offset += 4;
        }
    }

    #[test]
    fn grep_and_ls_walk_the_store() {
        let files = [
            ("/tool_outputs/a.txt", "x needle\ny\nneedle z"),
            ("/tool_outputs/sub/b.txt", "needle"),
            ("/conversation_history/c.md", "none"),
        ];
        let o = RecoveryOptions::default();
        assert_eq!(
            run("grep", json!({"pattern": "needle", "path": "/tool_outputs/"}), &files, &o),
            "/tool_outputs/a.txt:1: x needle\n/tool_outputs/a.txt:3: needle z\n/tool_outputs/sub/b.txt:1: needle"
        );
        let two = RecoveryOptions {
            max_matches: 2,
            ..RecoveryOptions::default()
        };
        assert!(run("grep", json!({"pattern": "needle"}), &files, &two)
            .ends_with("… more matches: narrow the path or the pattern"));
        // A page's characters bound grep's answer as they bound read_file's (the first match is
        // always shown): a Python user's grep answered 26,050 tokens into a 16k window.
        let paged = RecoveryOptions {
            max_page_chars: Some(70),
            ..RecoveryOptions::default()
        };
        assert_eq!(
            run("grep", json!({"pattern": "needle"}), &files, &paged),
            "/tool_outputs/a.txt:1: x needle\n/tool_outputs/a.txt:3: needle z\n… more matches: narrow the path or the pattern"
        );
        let tiny = RecoveryOptions {
            max_page_chars: Some(1),
            ..RecoveryOptions::default()
        };
        assert!(run("grep", json!({"pattern": "needle"}), &files, &tiny)
            .starts_with("/tool_outputs/a.txt:1: x needle\n… more matches"));
        assert_eq!(
            run("grep", json!({"pattern": "q\"x"}), &files, &o),
            "No match for \"q\\\"x\" under /."
        );
        assert_eq!(
            run("grep", json!({"pattern": ""}), &files, &o),
            "Error: pattern is empty."
        );
        assert_eq!(
            run("ls", json!({}), &files, &o),
            "/conversation_history/\n/tool_outputs/"
        );
        assert_eq!(
            run("ls", json!({"path": "/tool_outputs"}), &files, &o),
            "/tool_outputs/a.txt\n/tool_outputs/sub/"
        );
        assert_eq!(
            run("ls", json!({"path": "/none/"}), &files, &o),
            "Nothing stored under /none/."
        );
        assert!(run("rm", json!({}), &files, &o).starts_with("Error: no recovery tool"));
    }

    #[test]
    fn ls_and_grep_leave_the_compactors_state_and_leases_out() {
        let state = r#"{"record":[{"preview":"needle"}]}"#;
        let files = [
            ("/state/compactor.json", state),
            (
                "/state/compactor.json.summaries/ahead-ab.json",
                r#"{"summary":"needle"}"#,
            ),
            ("/state/compactor.jsonl", "needle"),
            ("/tool_outputs/a.txt", "needle"),
        ];
        let o = RecoveryOptions::default();
        assert_eq!(
            run("grep", json!({"pattern": "needle"}), &files, &o),
            "/state/compactor.jsonl:1: needle\n/tool_outputs/a.txt:1: needle"
        );
        assert_eq!(
            run("ls", json!({"path": "/state/"}), &files, &o),
            "/state/compactor.jsonl"
        );
        // Another state path: that one is left out, the default's is content like any other.
        let elsewhere = RecoveryOptions {
            state_path: "/chats/c1/state.json".into(),
            ..RecoveryOptions::default()
        };
        let files = [
            ("/chats/c1/state.json", state),
            ("/state/compactor.json", state),
        ];
        assert_eq!(run("ls", json!({}), &files, &elsewhere), "/state/");
        assert_eq!(
            run(
                "grep",
                json!({"pattern": "needle", "path": "/chats/"}),
                &files,
                &elsewhere
            ),
            "No match for \"needle\" under /chats/."
        );
        // read_file still reads it, asked by its path.
        assert!(run(
            "read_file",
            json!({"path": "/chats/c1/state.json"}),
            &files,
            &elsewhere
        )
        .contains("needle"));
    }

    #[test]
    fn store_errors_are_text_and_a_run_is_plain_data() {
        let mut r = ToolRun::new(
            "read_file",
            &json!({"path": "/a"}),
            &RecoveryOptions::default(),
        );
        let saved: ToolRun = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(saved, r);
        r.handle_list(Ok(vec![])); // not asked for: ignored
        assert_eq!(r.poll(), ToolIo::Read { path: "/a".into() });
        r.handle_read(Err("the store is down".into()));
        assert_eq!(r.answer(), Some("Error: the store is down"));
        assert_eq!(tool_specs(&RecoveryOptions::default()).len(), 3);
        for io in [
            ToolIo::Read {
                path: "/a\"b".into(),
            },
            ToolIo::List { prefix: "/".into() },
            ToolIo::Done {
                text: "x\ny".into(),
            },
        ] {
            assert_eq!(io.to_json(), serde_json::to_string(&io).unwrap());
        }
    }
}
