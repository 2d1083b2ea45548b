//! Token accounting: exact BPE counts for OpenAI encodings behind a small trait, a cache keyed by
//! content hash, and the documented per-message framing and media estimates.

pub mod bpe;
mod breakdown;
pub mod hf;
pub mod prebuilt;

pub use breakdown::{Breakdown, MessageTokens, PartTokens, ToolsTokens};

use hashbrown::HashMap;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::message::{Content, Message, Part, ToolOutput};

/// A BPE encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// gpt-4o, gpt-4.1, o-series, gpt-5 — and the base of every non-OpenAI estimate.
    O200kBase,
    /// gpt-4, gpt-3.5-turbo.
    Cl100kBase,
}

impl Encoding {
    /// The encoding's tiktoken name: `"o200k_base"` or `"cl100k_base"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
        }
    }
}

impl std::str::FromStr for Encoding {
    type Err = Error;
    fn from_str(name: &str) -> Result<Self, Error> {
        match name {
            "o200k_base" => Ok(Encoding::O200kBase),
            "cl100k_base" => Ok(Encoding::Cl100kBase),
            _ => Err(Error::UnknownEncoding {
                name: name.to_owned(),
            }),
        }
    }
}

/// Counts the tokens of a text. Replaceable: the planner only ever calls this.
pub trait TokenCounter: Send + Sync {
    /// The number of tokens `text` encodes to.
    fn count(&self, text: &str) -> usize;
}

/// Exact counts from this crate's own BPE ([`crate::counting::bpe`]), identical to tiktoken's
/// `encode_ordinary` (special-token text is counted as text).
#[derive(Debug, Clone, Copy)]
pub struct Exact(pub &'static crate::counting::bpe::Bpe);

impl Exact {
    /// The counter for `encoding`; `encoding_not_loaded` when the build has no embedded ranks and
    /// none were loaded.
    pub fn new(encoding: Encoding) -> Result<Self, Error> {
        crate::counting::bpe::get(encoding).map(Exact)
    }
}

impl TokenCounter for Exact {
    fn count(&self, text: &str) -> usize {
        self.0.count(text)
    }
}

/// Exact token count of `text` in `encoding`, uncached.
pub fn count_tokens(text: &str, encoding: Encoding) -> Result<usize, Error> {
    Ok(crate::counting::bpe::get(encoding)?.count(text))
}

/// Exact token count of `text` by name: an [`Encoding`] (`"o200k_base"`, `"cl100k_base"`) or a
/// tokenizer loaded with [`hf::load`] (`"llama3"`, ...). `unknown_encoding` for any other name.
pub fn count_tokens_named(text: &str, name: &str) -> Result<usize, Error> {
    match name.parse::<Encoding>() {
        Ok(encoding) => count_tokens(text, encoding),
        Err(unknown) => hf::get(name)
            .map(|t| t.count(text))
            .ok_or_else(|| not_loaded(name, unknown)),
    }
}

/// A tokenizer that is not loaded: `encoding_not_loaded` for one that ships prebuilt data (load
/// it as an encoding), the given `unknown_encoding` for any other name.
fn not_loaded(name: &str, unknown: Error) -> Error {
    if is_shipped(name) {
        Error::EncodingNotLoaded {
            name: name.to_owned(),
        }
    } else {
        unknown
    }
}

/// Loads data for `name`: an [`Encoding`]'s ranks ([`bpe::RankData`]) or a tokenizer's prebuilt
/// data ([`prebuilt`]). Loading what is loaded keeps the first.
pub fn load_data(name: &str, data: Vec<u8>) -> Result<(), Error> {
    match name.parse::<Encoding>() {
        Ok(encoding) if bpe::is_available(encoding) => Ok(()),
        Ok(encoding) => bpe::load(encoding, data).map(|_| ()),
        Err(_) if data.starts_with(prebuilt::MAGIC) || is_shipped(name) => {
            hf::load_prebuilt(name, &data).map(|_| ())
        }
        Err(unknown) => Err(unknown),
    }
}

/// Whether the npm package ships prebuilt data for the tokenizer `name`.
fn is_shipped(name: &str) -> bool {
    prebuilt::SHIPPED
        .iter()
        .any(|(shipped, ..)| *shipped == name)
}

/// Whether `countTokens(text, name)` works now: an encoding available without loading, or a
/// loaded tokenizer.
pub fn can_count(name: &str) -> bool {
    match name.parse::<Encoding>() {
        Ok(encoding) => bpe::is_available(encoding),
        Err(_) => hf::get(name).is_some(),
    }
}

/// A cached counter by name: an [`Encoding`] or a tokenizer loaded with [`hf::load`].
pub fn counter_named(name: &str) -> Result<CachedCounter, Error> {
    match name.parse::<Encoding>() {
        Ok(encoding) => CachedCounter::new(encoding),
        Err(unknown) => hf::get(name)
            .map(|t| CachedCounter::with_tokenizer(Encoding::O200kBase, Tokenizer(t)))
            .ok_or_else(|| not_loaded(name, unknown)),
    }
}

/// A loaded Hugging Face tokenizer as a [`TokenCounter`] (for [`CachedCounter::with_counter`]
/// or `Compactor::with_counter`).
#[derive(Debug, Clone, Copy)]
pub struct Tokenizer(pub &'static hf::HfTokenizer);

impl TokenCounter for Tokenizer {
    fn count(&self, text: &str) -> usize {
        self.0.count(text)
    }
}

/// Framing a chat API adds around every message (OpenAI cookbook: 3 tokens per message plus the
/// role's one token).
pub const MESSAGE_OVERHEAD: u32 = 4;
/// Tokens that prime the assistant's reply, once per request (OpenAI cookbook).
pub const REPLY_PRIMING: u32 = 3;
/// Framing around each tool call or tool result part (call id, name delimiters).
pub const TOOL_PART_OVERHEAD: u32 = 8;
/// Default estimate for an image part: Anthropic's cost of a ~1.15 megapixel image
/// (width × height / 750); OpenAI charges 765 for a 1024² high-detail image, so this errs high.
pub const DEFAULT_IMAGE_TOKENS: u32 = 1_600;
/// Framing of one tool definition (the `{"type":"function","function":{...}}` wrapper and its
/// keys). An estimate: providers do not publish how they render tools; OpenAI's is close to
/// the JSON of the definition plus about a dozen tokens.
pub const TOOL_DEFINITION_OVERHEAD: u32 = 12;
/// Default estimate for a file part (a PDF page costs 1.5k–3k on Anthropic; one page assumed).
pub const DEFAULT_FILE_TOKENS: u32 = 1_600;
/// A count cache holds at most this many entries (bounded memory; see [`CountCache`]).
const CACHE_LIMIT: usize = 500_000;

/// The raw counts of one message, as a plan reads them (see
/// [`CachedCounter::message_counts`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct MessageCounts {
    /// The message's tokens with its framing.
    pub(crate) total: u32,
    /// Per part: its body (a tool result's output, a tool call's input, a text) and its whole.
    pub(crate) parts: Vec<(u32, u32)>,
}

/// Texts' counts by content hash, in shards with a lock each (threads counting at once rarely
/// wait on one another). Bounded: a shard is dropped whole when it grows past its share of
/// [`CACHE_LIMIT`].
#[derive(Default)]
struct CountCache {
    shards: [Mutex<HashMap<u128, u32>>; SHARDS],
}

/// How many shards a [`CountCache`] has (a power of two).
const SHARDS: usize = 8;

impl CountCache {
    fn shard(&self, key: u128) -> std::sync::MutexGuard<'_, HashMap<u128, u32>> {
        self.shards[(key as usize) & (SHARDS - 1)]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// What a shared [`CountCache`] counts with: one of the built-in encodings, or a loaded
/// tokenizer (they live as long as the process, by address).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Source {
    Encoding(Encoding),
    Tokenizer(usize),
}

/// The count cache every counter of `source` shares: the counts of a text by one encoding (or one
/// loaded tokenizer) never change, so compactors made one after the other in one process (a
/// serverless instance serving a conversation's requests: a new compactor each time, from the
/// saved state) count each text once, not once per compactor.
fn shared_cache(source: Source) -> std::sync::Arc<CountCache> {
    static SHARED: Mutex<Vec<(Source, std::sync::Arc<CountCache>)>> = Mutex::new(Vec::new());
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, cache)) = shared.iter().find(|(s, _)| *s == source) {
        return cache.clone();
    }
    let cache = std::sync::Arc::new(CountCache::default());
    shared.push((source, cache.clone()));
    cache
}

/// A counter with a content-hash cache: re-counting a conversation that grew by k messages
/// tokenizes only those k messages. The exact counters (an encoding, a loaded tokenizer) share
/// their cache process-wide (`shared_cache`); a counter a caller supplies has its own.
pub struct CachedCounter {
    encoding: Encoding,
    counter: Box<dyn TokenCounter>,
    cache: std::sync::Arc<CountCache>,
    /// The estimate for each image part (default 1,600; images are not tokenized as text).
    pub image_tokens: u32,
    /// The estimate for each file part (default 1,600).
    pub file_tokens: u32,
}

impl std::fmt::Debug for CachedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedCounter")
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

impl CachedCounter {
    /// The exact counter for `encoding` (see [`Exact::new`] for the error).
    pub fn new(encoding: Encoding) -> Result<Self, Error> {
        let counter = Box::new(Exact::new(encoding)?);
        Ok(Self::sharing(encoding, counter, Source::Encoding(encoding)))
    }

    /// Uses a host-supplied counter in place of the exact one (with a cache of its own).
    pub fn with_counter(encoding: Encoding, counter: Box<dyn TokenCounter>) -> Self {
        Self {
            encoding,
            counter,
            cache: std::sync::Arc::default(),
            image_tokens: DEFAULT_IMAGE_TOKENS,
            file_tokens: DEFAULT_FILE_TOKENS,
        }
    }

    /// Counts with a loaded tokenizer (`encoding` is the model's, for what it estimates).
    pub(crate) fn with_tokenizer(encoding: Encoding, tokenizer: Tokenizer) -> Self {
        let source = Source::Tokenizer(std::ptr::from_ref(tokenizer.0) as usize);
        Self::sharing(encoding, Box::new(tokenizer), source)
    }

    fn sharing(encoding: Encoding, counter: Box<dyn TokenCounter>, source: Source) -> Self {
        Self {
            cache: shared_cache(source),
            ..Self::with_counter(encoding, counter)
        }
    }

    /// The encoding counts are made with.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Tokens of a text, from the cache when this exact text was counted before.
    pub fn text(&self, text: &str) -> u32 {
        if text.is_empty() {
            return 0;
        }
        self.cached(crate::hash::content_hash(text.as_bytes()), || text.into())
    }

    /// The count under `key` (the content hash of the text), counting `text()` on a miss.
    fn cached<'a>(&self, key: u128, text: impl FnOnce() -> std::borrow::Cow<'a, str>) -> u32 {
        if let Some(&n) = self.cache.shard(key).get(&key) {
            return n;
        }
        // Counted outside the lock: another thread's lookups in the shard do not wait on it.
        let n = u32::try_from(self.counter.count(&text())).unwrap_or(u32::MAX);
        let mut shard = self.cache.shard(key);
        if shard.len() >= CACHE_LIMIT / SHARDS {
            shard.clear();
        }
        shard.insert(key, n);
        n
    }

    /// Number of distinct texts in the cache (shared by the exact counters of one encoding or
    /// tokenizer; for stats and tests).
    pub fn cached_entries(&self) -> usize {
        self.cache
            .shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }

    /// Tokens of one message including its framing.
    pub fn message(&self, message: &Message) -> u32 {
        let body = match &message.content {
            Content::Text(text) => self.text(text),
            Content::Parts(parts) => parts.iter().map(|p| self.part(p)).sum(),
        };
        MESSAGE_OVERHEAD + body
    }

    /// Tokens of a whole request: every message plus the reply priming.
    pub fn messages(&self, messages: &[Message]) -> u32 {
        REPLY_PRIMING + messages.iter().map(|m| self.message(m)).sum::<u32>()
    }

    /// Every count of one message a plan reads: its total (as [`CachedCounter::message`]) and,
    /// per part, its body (a tool result's output, a tool call's input, a text) and its whole
    /// count (as [`CachedCounter::part`]). A plan counts each message once through these.
    pub(crate) fn message_counts(&self, message: &Message) -> MessageCounts {
        match &message.content {
            Content::Text(text) => MessageCounts {
                total: MESSAGE_OVERHEAD + self.text(text),
                parts: Vec::new(),
            },
            Content::Parts(parts) => {
                let parts: Vec<(u32, u32)> = parts.iter().map(|p| self.part_counts(p)).collect();
                MessageCounts {
                    total: parts.iter().fold(MESSAGE_OVERHEAD, |sum, &(_, whole)| {
                        sum.saturating_add(whole)
                    }),
                    parts,
                }
            }
        }
    }

    /// A part's (body, whole) counts: a tool part's whole adds its framing and name.
    fn part_counts(&self, part: &Part) -> (u32, u32) {
        match part {
            Part::ToolCall(call) => {
                let body = self.json(&call.input);
                (body, TOOL_PART_OVERHEAD + self.text(&call.tool_name) + body)
            }
            Part::ToolResult(result) => {
                let body = self.output(&result.output);
                (
                    body,
                    TOOL_PART_OVERHEAD + self.text(&result.tool_name) + body,
                )
            }
            other => {
                let n = self.part(other);
                (n, n)
            }
        }
    }

    /// Tokens of one content part: its text, its tool call's name and input, its tool result's
    /// output, or the image/file estimate; an unknown part as its JSON.
    pub fn part(&self, part: &Part) -> u32 {
        match part {
            Part::Text(p) | Part::Reasoning(p) => self.text(&p.text),
            Part::Image(_) => self.image_tokens,
            // A text file counts as its text (a provider reads it as text); other files by the
            // documented estimate.
            Part::File(file) => self.file(&file.data, &file.media_type),
            Part::ToolCall(_) | Part::ToolResult(_) => self.part_counts(part).1,
            Part::ToolApprovalRequest(_) | Part::ToolApprovalResponse(_) => TOOL_PART_OVERHEAD,
            Part::Unknown(map) => self.text(&serde_json::to_string(map).unwrap_or_default()),
        }
    }

    /// Tokens of a file: its text when a provider reads it as text (a text file, bare or tagged
    /// base64, or inline text), else the image or file estimate.
    fn file(&self, data: &serde_json::Value, media_type: &str) -> u32 {
        match crate::message::file_text(data, media_type) {
            Some(text) => {
                // Keyed by the text's hash in a key space apart from plain texts.
                let key = crate::hash::content_hash(text.as_bytes()) ^ 0x6669_6c65;
                self.cached(key, || text.into())
            }
            None if crate::message::is_image(media_type) => self.image_tokens,
            None => self.file_tokens,
        }
    }

    /// Tokens of tool definitions as a provider serializes them: per tool, a fixed overhead plus
    /// its name, description and JSON schema.
    pub fn tools(&self, tools: &[crate::config::ToolDefinition]) -> u32 {
        tools
            .iter()
            .map(|t| {
                TOOL_DEFINITION_OVERHEAD
                    + self.text(&t.name)
                    + self.text(t.description.as_deref().unwrap_or(""))
                    + if t.input_schema.is_null() {
                        0
                    } else {
                        self.text(&t.input_schema.to_string())
                    }
            })
            .sum()
    }

    /// Tokens of a tool output as the model sees it.
    pub fn output(&self, output: &ToolOutput) -> u32 {
        match output {
            ToolOutput::Text { value, .. } | ToolOutput::ErrorText { value, .. } => {
                self.text(value)
            }
            ToolOutput::Json { value, .. } | ToolOutput::ErrorJson { value, .. } => {
                self.json(value)
            }
            ToolOutput::Content { value, .. } => value
                .iter()
                .map(|item| match item.get("type").and_then(|t| t.as_str()) {
                    Some("text") => {
                        self.text(item.get("text").and_then(|t| t.as_str()).unwrap_or(""))
                    }
                    Some("media")
                    | Some("image-data")
                    | Some("image-url")
                    | Some("image-file-id")
                    | Some("image-file-reference") => self.image_tokens,
                    // A file item (AI SDK 7 `file` with tagged data, 5/6 `file-data`,
                    // `file-url`, `file-id`, `file-reference`) counts as a file part.
                    Some("file" | "file-data" | "file-url" | "file-id" | "file-reference") => {
                        let data = item.get("data").or_else(|| item.get("url"));
                        let media = item.get("mediaType").and_then(|m| m.as_str()).unwrap_or("");
                        self.file(data.unwrap_or(&serde_json::Value::Null), media)
                    }
                    _ => self.text(&item.to_string()),
                })
                .sum(),
            ToolOutput::ExecutionDenied { .. } => self.text(&output.text()) + 4,
            ToolOutput::Unknown(map) => self.text(&serde_json::to_string(map).unwrap_or_default()),
        }
    }

    /// A JSON value as counted inside a tool call (strings bare, everything else serialized).
    pub fn json(&self, value: &serde_json::Value) -> u32 {
        match value {
            serde_json::Value::String(s) => self.text(s),
            // Keyed by its structure: the text is built only when it was never counted.
            other => self.cached(crate::hash::structure_hash(other), || {
                other.to_string().into()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_counts() {
        // Checked against the official tiktoken (tests/fixtures/token-counts.json has the rest).
        assert_eq!(count_tokens("hello world", Encoding::O200kBase), Ok(2));
        assert_eq!(count_tokens("hello world", Encoding::Cl100kBase), Ok(2));
        assert_eq!(count_tokens("", Encoding::O200kBase), Ok(0));
    }

    #[test]
    fn cache_counts_each_text_once() {
        struct Counting(std::sync::atomic::AtomicUsize);
        impl TokenCounter for Counting {
            fn count(&self, text: &str) -> usize {
                self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                text.len()
            }
        }
        let inner = std::sync::Arc::new(Counting(0.into()));
        struct Shared(std::sync::Arc<Counting>);
        impl TokenCounter for Shared {
            fn count(&self, text: &str) -> usize {
                self.0.count(text)
            }
        }
        let counter =
            CachedCounter::with_counter(Encoding::O200kBase, Box::new(Shared(inner.clone())));
        assert_eq!(counter.text("abcd"), 4);
        assert_eq!(counter.text("abcd"), 4);
        assert_eq!(counter.text("xy"), 2);
        assert_eq!(inner.0.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn exact_counters_share_their_cache() {
        let text = "shared across compactors: a text only this test counts";
        let key = crate::hash::content_hash(text.as_bytes());
        let first = CachedCounter::new(Encoding::O200kBase).unwrap();
        let second = CachedCounter::new(Encoding::O200kBase).unwrap();
        let other = CachedCounter::new(Encoding::Cl100kBase).unwrap();
        assert_eq!(
            first.text(text),
            count_tokens(text, Encoding::O200kBase).unwrap() as u32
        );
        assert!(second.cache.shard(key).contains_key(&key));
        assert!(!other.cache.shard(key).contains_key(&key));
        assert_eq!(second.text(text), first.text(text));
        // A counter a caller supplies keeps its own cache: its counts may be anything.
        struct Len;
        impl TokenCounter for Len {
            fn count(&self, text: &str) -> usize {
                text.len()
            }
        }
        let own = CachedCounter::with_counter(Encoding::O200kBase, Box::new(Len));
        assert_eq!(own.text(text), text.len() as u32);
        assert!(!own.cache.shard(key).is_empty() && first.text(text) != text.len() as u32);
    }

    #[test]
    fn unknown_encoding_is_a_typed_error() {
        let e = "p50k".parse::<Encoding>().unwrap_err();
        assert_eq!(
            e,
            Error::UnknownEncoding {
                name: "p50k".into()
            }
        );
    }
}
