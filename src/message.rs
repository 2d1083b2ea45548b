//! The conversation model: the Vercel AI SDK `ModelMessage` shape.
//!
//! Known parts are typed; unknown part types, unknown output types and unknown fields
//! (`providerOptions`, provider metadata, anything newer than this crate) are preserved as JSON
//! and written back unchanged. Parsing goes through [`parse_messages`] / [`messages_from_value`],
//! which name the message index and the field of every error.
//!
//! Numbers keep their JSON text (serde_json's `arbitrary_precision`): a tool output, an input or
//! any other field is written back, counted and stored with each number as the host wrote it
//! (`-113.71428571428571`, `18446744073709552000`, `1e+21`; only an exponent is written as
//! `e+` or `e-`: `1E5` becomes `1e+5`, as `JSON.stringify` and Python write one), not as the
//! nearest double printed anew.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

mod direct;
#[cfg_attr(not(any(feature = "wasm", feature = "component")), allow(dead_code))]
pub(crate) mod seen;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    /// Who sent it: `system`, `user`, `assistant` or `tool`.
    pub role: Role,
    /// A string, or a list of parts.
    pub content: Content,
    /// Every other field of the message (`providerOptions`, ids, ...), passed through untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A message's role (AI SDK `ModelMessage['role']`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt (instructions); kept first and verbatim.
    System,
    /// The person (or the app on their behalf).
    User,
    /// The model: text, reasoning and tool calls.
    Assistant,
    /// Tool results (and approval responses) for the assistant's calls.
    Tool,
}

impl Role {
    /// The role as it is written in JSON: `"system"`, `"user"`, `"assistant"`, `"tool"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// Message content: a plain string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    /// `content: "..."`.
    Text(String),
    /// `content: [{type: ...}, ...]`.
    Parts(Parts),
}

/// A message's list of parts, shared: a clone of a message shares its parts with the original
/// (a compactor holds each message of a long history several times over: the cache of messages
/// parsed before, the held conversation, the call's input and result), and the first change
/// through [`Parts::make_mut`] copies them if they are shared. Reads through `Deref` as a
/// `Vec<Part>`; serialized as the list.
#[derive(Clone, Default)]
pub struct Parts(std::sync::Arc<Vec<Part>>);

impl Parts {
    /// The parts, to change: copied first when another message shares them.
    pub fn make_mut(&mut self) -> &mut Vec<Part> {
        std::sync::Arc::make_mut(&mut self.0)
    }

    /// Whether `self` and `other` are the very same list (one was cloned from the other and
    /// neither changed since): then they are equal without a look at their parts.
    pub fn shared_with(&self, other: &Parts) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::ops::Deref for Parts {
    type Target = Vec<Part>;
    fn deref(&self) -> &Vec<Part> {
        &self.0
    }
}

impl From<Vec<Part>> for Parts {
    fn from(parts: Vec<Part>) -> Self {
        Parts(std::sync::Arc::new(parts))
    }
}

impl FromIterator<Part> for Parts {
    fn from_iter<I: IntoIterator<Item = Part>>(iter: I) -> Self {
        Parts::from(iter.into_iter().collect::<Vec<Part>>())
    }
}

impl<'a> IntoIterator for &'a Parts {
    type Item = &'a Part;
    type IntoIter = std::slice::Iter<'a, Part>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl PartialEq for Parts {
    fn eq(&self, other: &Parts) -> bool {
        self.shared_with(other) || *self.0 == *other.0
    }
}

impl std::fmt::Debug for Parts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Parts {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// A content part. Serialized with its `type` tag, like the AI SDK.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// `{type: 'text', text}`.
    Text(TextPart),
    /// `{type: 'reasoning', text}`: the model's reasoning, counted like text.
    Reasoning(TextPart),
    /// `{type: 'image', image, mediaType?}`: counted by a fixed estimate.
    Image(ImagePart),
    /// `{type: 'file', data, mediaType, filename?}`: counted by a fixed estimate.
    File(FilePart),
    /// `{type: 'tool-call', toolCallId, toolName, input}` (assistant messages).
    ToolCall(ToolCall),
    /// `{type: 'tool-result', toolCallId, toolName, output}` (tool messages).
    ToolResult(ToolResult),
    /// `{type: 'tool-approval-request', approvalId, toolCallId}` (assistant messages).
    ToolApprovalRequest(ApprovalRequest),
    /// `{type: 'tool-approval-response', approvalId, approved}` (tool messages).
    ToolApprovalResponse(ApprovalResponse),
    /// A part type this crate does not know. Kept whole, counted as its JSON.
    Unknown(Map<String, Value>),
}

/// A text or reasoning part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Every other field (`providerOptions`, ...), passed through untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An image part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImagePart {
    /// base64 string, URL string, or bytes serialized by the host.
    pub image: Value,
    /// `mediaType`, e.g. `image/png`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// Every other field, passed through untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A file part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FilePart {
    /// base64 string, URL string, or bytes serialized by the host.
    pub data: Value,
    /// `mediaType` (IANA), e.g. `application/pdf`.
    pub media_type: String,
    /// The file's name, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Every other field, passed through untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl FilePart {
    /// The file's text, for a textual media type (`text`, `text/*`, JSON, XML, YAML,
    /// JavaScript, CSV) whose data is a base64 string or a base64 `data:` URL of valid UTF-8 —
    /// bare (AI SDK 5 and 6) or tagged `{type: 'data', data}` (AI SDK 7) — or inline text
    /// (`{type: 'text', text}`, any media type): what a provider reads as text. `None` for
    /// binary types, URLs, provider references, bytes the host kept (binary values do not cross
    /// the wasm boundary) and anything that does not decode.
    pub fn text(&self) -> Option<String> {
        file_text(&self.data, &self.media_type)
    }
}

/// Whether a media type is an image's (`image`, `image/*`: AI SDK 7 sends images as files).
pub(crate) fn is_image(media_type: &str) -> bool {
    let media = media_type.trim().to_ascii_lowercase();
    media == "image" || media.starts_with("image/")
}

/// The text of file `data` of `media_type` (see [`FilePart::text`]); also what a tool result's
/// `file` / `file-data` content item holds.
pub(crate) fn file_text(data: &Value, media_type: &str) -> Option<String> {
    use base64::Engine as _;
    let data = match data {
        Value::Object(tagged) => match tagged.get("type").and_then(Value::as_str) {
            Some("text") => {
                return tagged
                    .get("text")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }
            Some("data") => tagged.get("data")?,
            _ => return None,
        },
        data => data,
    };
    let media = media_type.trim().to_ascii_lowercase();
    let textual = media == "text"
        || media.starts_with("text/")
        || ["json", "xml", "yaml", "javascript", "csv", "markdown"]
            .iter()
            .any(|t| media.starts_with("application/") && media.contains(t));
    let Value::String(data) = data else {
        return None;
    };
    if !textual {
        return None;
    }
    let encoded = match data.strip_prefix("data:") {
        Some(url) => url.split_once(";base64,")?.1,
        None if data.contains("://") => return None,
        None => data.as_str(),
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    /// Pairs the call with its result (`toolCallId`).
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The call's arguments (JSON); tier 2 may replace a large string argument by a pointer.
    pub input: Value,
    /// Every other field (`providerExecuted`, `providerOptions`, ...), passed through untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResult {
    /// The call this result answers (`toolCallId`).
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What the tool returned; tiers 1 and 2 may replace it by a preview naming the stored copy.
    pub output: ToolOutput,
    /// Every other field, passed through untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A request for the user to approve a tool call (AI SDK 7); stays with its call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    /// Pairs the request with its response (`approvalId`).
    pub approval_id: String,
    /// The call awaiting approval.
    pub tool_call_id: String,
    /// Every other field, passed through untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The user's answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResponse {
    /// The request this answers (`approvalId`).
    pub approval_id: String,
    /// Whether the call may run.
    pub approved: bool,
    /// Every other field (`reason`, ...), passed through untouched.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The `output` of a tool result (AI SDK `ToolResultOutput`). Each variant's `extra` holds the
/// output's other fields (`providerOptions`, ...), passed through untouched.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutput {
    /// `{type:'text', value}`.
    Text {
        /// The text the tool returned.
        value: String,
        /// Other fields.
        extra: Map<String, Value>,
    },
    /// `{type:'json', value}`.
    Json {
        /// The JSON value the tool returned.
        value: Value,
        /// Other fields.
        extra: Map<String, Value>,
    },
    /// `{type:'error-text', value}`: errors stay errors when offloaded.
    ErrorText {
        /// The error message.
        value: String,
        /// Other fields.
        extra: Map<String, Value>,
    },
    /// `{type:'error-json', value}`.
    ErrorJson {
        /// The error as JSON.
        value: Value,
        /// Other fields.
        extra: Map<String, Value>,
    },
    /// `{type:'content', value:[{type:'text', text}, {type:'media', ...}, ...]}`
    Content {
        /// The content items (text, media, ...), kept as JSON.
        value: Vec<Value>,
        /// Other fields.
        extra: Map<String, Value>,
    },
    /// `{type:'execution-denied', reason?}`: the user denied the call.
    ExecutionDenied {
        /// Every field but `type` (`reason`, ...).
        extra: Map<String, Value>,
    },
    /// An output type this crate does not know: kept whole, counted as its JSON.
    Unknown(Map<String, Value>),
}

impl ToolOutput {
    /// The text a model sees for this output, as stored when offloaded: text values verbatim,
    /// JSON values pretty-printed, the text items of `content` joined by newlines.
    pub fn text(&self) -> String {
        match self {
            ToolOutput::Text { value, .. } | ToolOutput::ErrorText { value, .. } => value.clone(),
            ToolOutput::Json { value, .. } | ToolOutput::ErrorJson { value, .. } => {
                serde_json::to_string_pretty(value).unwrap_or_default()
            }
            ToolOutput::Content { value, .. } => value
                .iter()
                .filter_map(|item| item.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            ToolOutput::ExecutionDenied { extra } => extra
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            ToolOutput::Unknown(map) => serde_json::to_string(map).unwrap_or_default(),
        }
    }

    /// `json` or `error-json`: offloaded as a `.json` file.
    pub fn is_json(&self) -> bool {
        matches!(self, ToolOutput::Json { .. } | ToolOutput::ErrorJson { .. })
    }

    /// `error-text` or `error-json`.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            ToolOutput::ErrorText { .. } | ToolOutput::ErrorJson { .. }
        )
    }

    pub(crate) fn type_name(&self) -> &str {
        match self {
            ToolOutput::Text { .. } => "text",
            ToolOutput::Json { .. } => "json",
            ToolOutput::ErrorText { .. } => "error-text",
            ToolOutput::ErrorJson { .. } => "error-json",
            ToolOutput::Content { .. } => "content",
            ToolOutput::ExecutionDenied { .. } => "execution-denied",
            ToolOutput::Unknown(_) => "",
        }
    }
}

impl Part {
    /// The part's `type` tag (`text`, `tool-call`, ...; an unknown part's own tag, or `""`).
    pub fn type_name(&self) -> &str {
        match self {
            Part::Text(_) => "text",
            Part::Reasoning(_) => "reasoning",
            Part::Image(_) => "image",
            Part::File(_) => "file",
            Part::ToolCall(_) => "tool-call",
            Part::ToolResult(_) => "tool-result",
            Part::ToolApprovalRequest(_) => "tool-approval-request",
            Part::ToolApprovalResponse(_) => "tool-approval-response",
            Part::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl Message {
    /// A user message with string content.
    pub fn user(text: String) -> Self {
        Message {
            role: Role::User,
            content: Content::Text(text),
            extra: Map::new(),
        }
    }

    /// The message's text: a string content, or its text parts joined by newlines (other
    /// parts — tool calls, results, images — are not text).
    pub fn text(&self) -> String {
        match &self.content {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// The parts of this message; a string content is one text part's worth of nothing here.
    pub fn parts(&self) -> &[Part] {
        match &self.content {
            Content::Parts(parts) => parts,
            Content::Text(_) => &[],
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Serialization: the `type` tag goes first, then the part's own fields.

#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    #[serde(rename = "type")]
    ty: &'a str,
    #[serde(flatten)]
    inner: &'a T,
}

fn tagged<S: Serializer, T: Serialize>(s: S, ty: &str, inner: &T) -> Result<S::Ok, S::Error> {
    Tagged { ty, inner }.serialize(s)
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Part::Text(p) | Part::Reasoning(p) => tagged(s, self.type_name(), p),
            Part::Image(p) => tagged(s, "image", p),
            Part::File(p) => tagged(s, "file", p),
            Part::ToolCall(p) => tagged(s, "tool-call", p),
            Part::ToolResult(p) => tagged(s, "tool-result", p),
            Part::ToolApprovalRequest(p) => tagged(s, "tool-approval-request", p),
            Part::ToolApprovalResponse(p) => tagged(s, "tool-approval-response", p),
            Part::Unknown(map) => map.serialize(s),
        }
    }
}

#[derive(Serialize)]
struct ValueOutput<'a, T: Serialize> {
    value: &'a T,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

impl Serialize for ToolOutput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let ty = self.type_name();
        match self {
            ToolOutput::Text { value, extra } | ToolOutput::ErrorText { value, extra } => {
                tagged(s, ty, &ValueOutput { value, extra })
            }
            ToolOutput::Json { value, extra } | ToolOutput::ErrorJson { value, extra } => {
                tagged(s, ty, &ValueOutput { value, extra })
            }
            ToolOutput::Content { value, extra } => tagged(s, ty, &ValueOutput { value, extra }),
            ToolOutput::ExecutionDenied { extra } => tagged(s, ty, extra),
            ToolOutput::Unknown(map) => map.serialize(s),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing, by hand over `serde_json::Value`, so that every error knows its message index and the
// path of the field inside the message.

/// Parses a JSON array of messages and validates it (see [`validate`]).
///
/// Two kinds of real-world text that strict JSON parsing refuses are handled (see
/// [`MAX_NESTING`]): a lone UTF-16 surrogate escape (`"\ud83d"`, what
/// `JSON.stringify` writes for a string cut in the middle of an emoji) becomes U+FFFD, as the
/// official tiktoken does before counting; nesting deeper than [`MAX_NESTING`] is an
/// [`Error::InvalidMessage`] naming the message and the field, not a parse error.
pub fn parse_messages(json: &str) -> Result<Vec<Message>> {
    let messages = parse_messages_at(json, 0)?;
    validate(&messages)?;
    Ok(messages)
}

/// Converts an already-parsed JSON value (an array of messages) and validates it.
pub fn messages_from_value(value: Value) -> Result<Vec<Message>> {
    let messages = messages_at(value, 0)?;
    validate(&messages)?;
    Ok(messages)
}

/// Parses a JSON array of messages that continues a conversation at message `first_index`
/// (errors name indices in the whole conversation). Not validated: tool results may answer
/// calls before `first_index`, so [`validate`] the whole conversation once it is joined.
pub fn parse_messages_at(json: &str, first_index: usize) -> Result<Vec<Message>> {
    // Valid input is parsed once, to messages; anything else goes the precise way (below), which
    // names what is wrong and where.
    if let Some(messages) = direct::messages(json, first_index) {
        return Ok(messages);
    }
    messages_at(parse_json(json, first_index)?, first_index)
}

/// How deep a messages document may nest arrays and objects, the messages array counting as
/// level 1 (a message object is level 2, the `input` of a tool-call part level 5, ...). Deeper
/// input is an [`Error::InvalidMessage`] naming the message index and the field path.
///
/// Why 127: it is what serde_json's default recursion limit (128, which refuses the 128th level)
/// lets through, kept on purpose rather than lifted. Every walk of a `serde_json::Value` (parse,
/// clone, hash, serialize, drop) recurses, in the core and in serde_json itself, and the wasm
/// build runs on a 1 MB stack; 127 levels stay far from it, while real tool inputs nest a few
/// dozen levels at most. The TypeScript host checks the same limit (js/src/codec.ts) for what
/// `JSON.stringify` cannot even serialize.
pub const MAX_NESTING: usize = 127;

/// Parses a messages document as serde_json does, with two repairs on the slow path (only text
/// serde_json refused is looked at again, so valid input pays nothing):
///
/// - **Lone surrogates.** A `\uD800`-`\uDFFF` escape that is not half of a pair cannot be a
///   Rust `String`; each one becomes U+FFFD, one replacement character per lone code unit — what
///   `String.prototype.toWellFormed()` gives and what the official tiktoken encodes (it replaces
///   them the same way before counting), so counts match tiktoken's. The JS host keeps the
///   original strings and restores them in what it returns and stores (js/src/codec.ts); a
///   native caller gets the U+FFFD text.
/// - **Nesting** past [`MAX_NESTING`]: a typed [`Error::InvalidMessage`] (found by an iterative
///   scan, so hostile depth cannot overflow the stack) instead of serde_json's "recursion limit
///   exceeded".
fn parse_json(json: &str, first_index: usize) -> Result<Value> {
    let error = match serde_json::from_str(json) {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    // Same length: a 6-byte `\udXXX` becomes the 6-byte `\ufffd`, so error positions still hold.
    let repaired = replace_lone_surrogates(json);
    let (text, error) = match &repaired {
        Some(fixed) => match serde_json::from_str(fixed) {
            Ok(value) => return Ok(value),
            Err(error) => (fixed.as_str(), error),
        },
        None => (json, error),
    };
    if error.to_string().starts_with("recursion limit exceeded") {
        if let Some(too_deep) = nesting_error(text, first_index) {
            return Err(too_deep);
        }
    }
    Err(Error::json("messages", &error))
}

/// A JSON document (a session file, a request body) read as [`parse_messages`] reads one: a lone
/// surrogate escape (what `JSON.stringify` writes for a string cut mid-emoji) is U+FFFD, not
/// malformed JSON; anything else malformed is [`Error::MalformedJson`] naming `what`.
pub fn parse_json_value(json: &str, what: &str) -> Result<Value> {
    serde_json::from_str(json).or_else(|error| match replace_lone_surrogates(json) {
        Some(fixed) => serde_json::from_str(&fixed).map_err(|e| Error::json(what, &e)),
        None => Err(Error::json(what, &error)),
    })
}

/// `json` with every lone surrogate escape replaced by `\ufffd`, or `None` when it has none.
fn replace_lone_surrogates(json: &str) -> Option<String> {
    let bytes = json.as_bytes();
    // The hex value of a `\uXXXX` escape starting at `at` (the backslash), if it is one.
    let escape = |at: usize| -> Option<u16> {
        let hex = bytes.get(at + 2..at + 6)?;
        if bytes[at] != b'\\' || bytes[at + 1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    };
    let mut out: Option<Vec<u8>> = None;
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let unit = escape(i);
                match unit {
                    Some(0xD800..=0xDBFF) if matches!(escape(i + 6), Some(0xDC00..=0xDFFF)) => {
                        i += 12; // a well-formed pair
                        continue;
                    }
                    Some(0xD800..=0xDFFF) => {
                        let out = out.get_or_insert_with(|| bytes.to_vec());
                        out[i..i + 6].copy_from_slice(b"\\ufffd");
                        i += 6;
                        continue;
                    }
                    _ => i += 1, // any other escape: skip the escaped byte
                }
            }
            _ => {}
        }
        i += 1;
    }
    // Only ASCII bytes of escapes were replaced by ASCII bytes: still UTF-8.
    out.map(|bytes| String::from_utf8(bytes).unwrap_or_default())
}

/// The typed error for the first array or object nested past [`MAX_NESTING`], found without
/// recursion; `None` when nothing is that deep.
fn nesting_error(json: &str, first_index: usize) -> Option<Error> {
    let bytes = json.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'[' | b'{' => {
                if stack.len() + 1 > MAX_NESTING {
                    return Some(too_deep(&stack, first_index));
                }
                stack.push(if bytes[i] == b'[' {
                    Frame::Array(0)
                } else {
                    Frame::Object(None, true)
                });
            }
            b']' | b'}' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(n)) => *n += 1,
                Some(Frame::Object(_, expect_key)) => *expect_key = true,
                None => {}
            },
            b':' => {
                if let Some(Frame::Object(_, expect_key)) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object(key, true)) = stack.last_mut() {
                    let raw = json.get(start..=i.min(bytes.len() - 1)).unwrap_or_default();
                    *key = Some(serde_json::from_str(raw).unwrap_or_else(|_| raw.to_owned()));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A container open during [`nesting_error`]'s scan.
enum Frame {
    Array(usize),
    /// The current key, and whether the next string is a key.
    Object(Option<String>, bool),
}

fn too_deep(stack: &[Frame], first_index: usize) -> Error {
    let index = match stack.first() {
        Some(Frame::Array(n)) => first_index + n,
        _ => first_index,
    };
    // stack[0] is the messages array, stack[1] the message: the path starts at its key.
    let mut field = String::new();
    for (depth, frame) in stack.iter().enumerate().skip(1) {
        match frame {
            Frame::Array(n) => field.push_str(&format!("[{n}]")),
            Frame::Object(key, _) => {
                if depth > 1 {
                    field.push('.');
                }
                field.push_str(key.as_deref().unwrap_or(""));
            }
        }
    }
    Error::InvalidMessage {
        index,
        field,
        message: format!(
            "nested deeper than {MAX_NESTING} levels of arrays and objects (the messages \
             array counting as one); flatten it or send it as a string"
        ),
    }
}

fn messages_at(value: Value, first_index: usize) -> Result<Vec<Message>> {
    let Value::Array(items) = value else {
        return Err(Error::InvalidMessages {
            message: format!("expected an array of messages, got {}", kind(&value)),
        });
    };
    items
        .into_iter()
        .enumerate()
        .map(|(index, item)| message_from_value(first_index + index, item))
        .collect()
}

/// Checks what the types alone cannot: every tool result answers an earlier tool call, and a
/// system message has string content.
pub fn validate(messages: &[Message]) -> Result<()> {
    check(messages, 0, &mut hashbrown::HashSet::new())
}

/// The tool calls of a validated conversation prefix, kept so that a conversation that only
/// grows (a binding's held one) validates what it appended and not the whole again.
#[derive(Debug, Default)]
#[cfg_attr(not(any(feature = "wasm", feature = "component")), allow(dead_code))]
pub(crate) struct CallIds {
    /// Each call id, and the first message that made it.
    first: hashbrown::HashMap<String, usize>,
    /// How many messages from the start are validated (and their calls known).
    len: usize,
}

#[cfg_attr(not(any(feature = "wasm", feature = "component")), allow(dead_code))]
impl CallIds {
    /// Forgets what it knows about messages from `len` on.
    fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.first.retain(|_, at| *at < len);
            self.len = len;
        }
    }

    /// [`validate`] for `messages`, whose first `unchanged` messages are the ones this saw
    /// before: only what it has not validated yet is checked.
    pub(crate) fn validate(&mut self, messages: &[Message], unchanged: usize) -> Result<()> {
        self.truncate(unchanged.min(messages.len()));
        let from = self.len;
        // On an error nothing after `from` is known.
        self.len = 0;
        check(messages, from, &mut self.first)?;
        self.len = messages.len();
        Ok(())
    }
}

/// The tool call ids seen so far, for [`check`].
trait Calls<'a> {
    fn add(&mut self, id: &'a str, index: usize);
    fn has(&self, id: &str) -> bool;
}

impl<'a> Calls<'a> for hashbrown::HashSet<&'a str> {
    fn add(&mut self, id: &'a str, _: usize) {
        self.insert(id);
    }
    fn has(&self, id: &str) -> bool {
        self.contains(id)
    }
}

impl Calls<'_> for hashbrown::HashMap<String, usize> {
    fn add(&mut self, id: &str, index: usize) {
        if !self.contains_key(id) {
            self.insert(id.to_owned(), index);
        }
    }
    fn has(&self, id: &str) -> bool {
        self.contains_key(id)
    }
}

/// [`validate`] from message `from` on, the calls of the messages before it in `calls`.
fn check<'a>(messages: &'a [Message], from: usize, calls: &mut impl Calls<'a>) -> Result<()> {
    for (index, message) in messages.iter().enumerate().skip(from) {
        if message.role == Role::System && !matches!(message.content, Content::Text(_)) {
            return Err(Error::InvalidMessage {
                index,
                field: "content".into(),
                message: "a system message must have string content".into(),
            });
        }
        for (part, p) in message.parts().iter().enumerate() {
            match p {
                Part::ToolCall(call) => calls.add(&call.tool_call_id, index),
                Part::ToolResult(result)
                    if message.role == Role::Tool && !calls.has(&result.tool_call_id) =>
                {
                    return Err(Error::OrphanToolResult {
                        index,
                        part,
                        tool_call_id: result.tool_call_id.clone(),
                    });
                }
                _ => {}
            }
        }
    }
    Ok(())
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn invalid(index: usize, field: impl Into<String>, message: impl Into<String>) -> Error {
    Error::InvalidMessage {
        index,
        field: field.into(),
        message: message.into(),
    }
}

/// Deserializes a typed struct from a JSON object, reporting the failing field as
/// `{prefix}.{path}`.
fn typed<T: serde::de::DeserializeOwned>(
    index: usize,
    prefix: &str,
    map: Map<String, Value>,
) -> Result<T> {
    let value = Value::Object(map);
    let probe = crate::config::skeleton(&value);
    serde_json::from_value(value).map_err(|e| {
        typed_error(
            index,
            prefix,
            &probe,
            &e.to_string(),
            crate::config::attempt::<T>,
        )
    })
}

/// The error of a part that did not deserialize as its type (not generic: one copy).
#[inline(never)]
fn typed_error(
    index: usize,
    prefix: &str,
    probe: &Value,
    error: &str,
    attempt: fn(&Value) -> std::result::Result<(), String>,
) -> Error {
    let inner = crate::config::error_path(probe, attempt);
    let message = crate::error::shape_message(error);
    let field = crate::config::with_missing(&inner, &message, prefix);
    invalid(index, field, message)
}

fn take_object(index: usize, field: &str, value: Value) -> Result<Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        other => Err(invalid(
            index,
            field,
            format!("expected an object, got {}", kind(&other)),
        )),
    }
}

fn type_tag(index: usize, field: &str, map: &Map<String, Value>) -> Result<String> {
    match map.get("type") {
        Some(Value::String(ty)) => Ok(ty.clone()),
        Some(other) => Err(invalid(
            index,
            format!("{field}.type"),
            format!("expected a string, got {}", kind(other)),
        )),
        None => Err(invalid(
            index,
            format!("{field}.type"),
            "missing field `type`",
        )),
    }
}

fn message_from_value(index: usize, value: Value) -> Result<Message> {
    let mut map = take_object(index, "", value).map_err(|_| {
        invalid(
            index,
            "(message)",
            "expected a message object with `role` and `content`",
        )
    })?;
    let role = match map.shift_remove("role") {
        Some(Value::String(role)) => match role.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            _ => {
                return Err(invalid(
                    index,
                    "role",
                    format!("unknown role \"{role}\", expected system, user, assistant or tool"),
                ))
            }
        },
        Some(other) => {
            return Err(invalid(
                index,
                "role",
                format!("expected a string, got {}", kind(&other)),
            ))
        }
        None => return Err(invalid(index, "role", "missing field `role`")),
    };
    let content =
        match map.shift_remove("content") {
            Some(Value::String(text)) => Content::Text(text),
            Some(Value::Array(items)) => Content::Parts(
                items
                    .into_iter()
                    .enumerate()
                    .map(|(i, item)| part_from_value(index, &format!("content[{i}]"), item))
                    .collect::<Result<_>>()?,
            ),
            Some(other) => {
                return Err(invalid(
                    index,
                    "content",
                    format!(
                        "expected a string or an array of parts, got {}",
                        kind(&other)
                    ),
                ))
            }
            // The AI SDK's UI shape (`useChat`'s `{id, role, parts}`) is the likeliest mistake.
            None if map.contains_key("parts") => return Err(invalid(
                index,
                "content",
                "missing field `content`: this looks like a UIMessage (`parts`); the compactor \
                 takes model messages: convert them first with the AI SDK's \
                 `convertToModelMessages`",
            )),
            None => return Err(invalid(index, "content", "missing field `content`")),
        };
    Ok(Message {
        role,
        content,
        extra: map,
    })
}

fn part_from_value(index: usize, field: &str, value: Value) -> Result<Part> {
    let mut map = take_object(index, field, value)?;
    let ty = type_tag(index, field, &map)?;
    if KNOWN_PARTS.contains(&ty.as_str()) {
        map.shift_remove("type");
    }
    // Each part's JSON values (its `extra`, and a call's `input`, an image's or a file's data)
    // are set aside while serde's derive checks the rest, then put back as they came: see
    // `set_aside`.
    Ok(match ty.as_str() {
        "text" | "reasoning" => {
            let aside = set_aside(&mut map, &["text"]);
            let mut part: TextPart = typed(index, field, map)?;
            put_back(aside, &mut part.extra, None);
            if ty == "text" {
                Part::Text(part)
            } else {
                Part::Reasoning(part)
            }
        }
        "image" => {
            let aside = set_aside(&mut map, &["mediaType"]);
            let mut part: ImagePart = typed(index, field, map)?;
            put_back(aside, &mut part.extra, Some(("image", &mut part.image)));
            Part::Image(part)
        }
        "file" => {
            let aside = set_aside(&mut map, &["mediaType", "filename"]);
            let mut part: FilePart = typed(index, field, map)?;
            put_back(aside, &mut part.extra, Some(("data", &mut part.data)));
            Part::File(part)
        }
        "tool-call" => {
            let aside = set_aside(&mut map, &["toolCallId", "toolName"]);
            let mut part: ToolCall = typed(index, field, map)?;
            put_back(aside, &mut part.extra, Some(("input", &mut part.input)));
            Part::ToolCall(part)
        }
        "tool-result" => {
            let output = map.shift_remove("output").ok_or_else(|| {
                invalid(index, format!("{field}.output"), "missing field `output`")
            })?;
            let output = output_from_value(index, &format!("{field}.output"), output)?;
            let aside = set_aside(&mut map, &["toolCallId", "toolName"]);
            let mut result: ToolResultHead = typed(index, field, map)?;
            put_back(aside, &mut result.extra, None);
            Part::ToolResult(ToolResult {
                tool_call_id: result.tool_call_id,
                tool_name: result.tool_name,
                output,
                extra: result.extra,
            })
        }
        "tool-approval-request" => {
            let aside = set_aside(&mut map, &["approvalId", "toolCallId"]);
            let mut part: ApprovalRequest = typed(index, field, map)?;
            put_back(aside, &mut part.extra, None);
            Part::ToolApprovalRequest(part)
        }
        "tool-approval-response" => {
            let aside = set_aside(&mut map, &["approvalId", "approved"]);
            let mut part: ApprovalResponse = typed(index, field, map)?;
            put_back(aside, &mut part.extra, None);
            Part::ToolApprovalResponse(part)
        }
        _ => Part::Unknown(map),
    })
}

/// Takes out of a part's `map` every number, array and object but those of the `typed` fields
/// (whose type serde's derive checks), leaving null in its place. Numbers keep their text
/// (`arbitrary_precision`), but a `Value` read from a `Value` through the derive is rebuilt,
/// number by number, in serde's buffer: there a number gets its shortest form (`0.0000015`
/// became `1.5e-6`, `-0` became `0`), and one past 64 bits is refused ("invalid type: integer
/// as u128"). Those values are any JSON anyway: [`put_back`] returns them untouched.
fn set_aside(map: &mut Map<String, Value>, typed: &[&str]) -> Vec<(String, Value)> {
    map.iter_mut()
        .filter(|(key, value)| {
            !typed.contains(&key.as_str())
                && matches!(value, Value::Number(_) | Value::Array(_) | Value::Object(_))
        })
        .map(|(key, value)| (key.clone(), std::mem::take(value)))
        .collect()
}

/// Puts the values [`set_aside`] took back in the part made without them: in its `field` (a
/// call's `input`, an image's `image`, a file's `data`) or its `extra`, where each key kept its
/// place.
fn put_back(
    aside: Vec<(String, Value)>,
    extra: &mut Map<String, Value>,
    mut field: Option<(&str, &mut Value)>,
) {
    for (key, value) in aside {
        match &mut field {
            Some((name, slot)) if *name == key => **slot = value,
            _ => {
                if let Some(slot) = extra.get_mut(&key) {
                    *slot = value;
                }
            }
        }
    }
}

const KNOWN_PARTS: [&str; 8] = [
    "text",
    "reasoning",
    "image",
    "file",
    "tool-call",
    "tool-result",
    "tool-approval-request",
    "tool-approval-response",
];

/// A tool result without its output, which is parsed separately for a precise error path.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolResultHead {
    tool_call_id: String,
    tool_name: String,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

fn output_from_value(index: usize, field: &str, value: Value) -> Result<ToolOutput> {
    let mut map = take_object(index, field, value)?;
    let ty = type_tag(index, field, &map)?;
    let mut value_of = |want: &str| -> Result<Value> {
        map.shift_remove("value").ok_or_else(|| {
            invalid(
                index,
                format!("{field}.value"),
                format!("missing field `value` ({want})"),
            )
        })
    };
    let string = |v: Value| -> Result<String> {
        match v {
            Value::String(s) => Ok(s),
            other => Err(invalid(
                index,
                format!("{field}.value"),
                format!("expected a string, got {}", kind(&other)),
            )),
        }
    };
    let output = match ty.as_str() {
        "text" => {
            let value = string(value_of("a string")?)?;
            map.shift_remove("type");
            ToolOutput::Text { value, extra: map }
        }
        "error-text" => {
            let value = string(value_of("a string")?)?;
            map.shift_remove("type");
            ToolOutput::ErrorText { value, extra: map }
        }
        "json" => {
            let value = value_of("any JSON value")?;
            map.shift_remove("type");
            ToolOutput::Json { value, extra: map }
        }
        "error-json" => {
            let value = value_of("any JSON value")?;
            map.shift_remove("type");
            ToolOutput::ErrorJson { value, extra: map }
        }
        "content" => {
            let value = match value_of("an array")? {
                Value::Array(items) => items,
                other => {
                    return Err(invalid(
                        index,
                        format!("{field}.value"),
                        format!("expected an array, got {}", kind(&other)),
                    ))
                }
            };
            map.shift_remove("type");
            ToolOutput::Content { value, extra: map }
        }
        "execution-denied" => {
            map.shift_remove("type");
            ToolOutput::ExecutionDenied { extra: map }
        }
        _ => ToolOutput::Unknown(map),
    };
    Ok(output)
}

impl<'de> Deserialize<'de> for Message {
    /// Direct deserialization for native users; errors name the field but not the index
    /// (use [`parse_messages`] for whole conversations).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        message_from_value(0, value).map_err(serde::de::Error::custom)
    }
}

impl<'de> Deserialize<'de> for ToolOutput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        output_from_value(0, "output", value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_every_part_and_unknown_fields() {
        let input = json!([
            {"role": "system", "content": "be brief", "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}},
            {"role": "user", "content": [
                {"type": "text", "text": "hi", "providerOptions": {"x": 1}},
                {"type": "image", "image": "https://example.com/a.png", "mediaType": "image/png"},
                {"type": "file", "data": "aGVsbG8=", "mediaType": "text/plain", "filename": "a.txt"},
                {"type": "future-part", "payload": [1, 2, 3]}
            ]},
            {"role": "assistant", "content": [
                {"type": "reasoning", "text": "hmm"},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "search", "input": {"q": "x"}, "providerExecuted": false},
                {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1"}
            ]},
            {"role": "tool", "content": [
                {"type": "tool-approval-response", "approvalId": "a1", "approved": true, "reason": "ok"},
                {"type": "tool-result", "toolCallId": "c1", "toolName": "search", "output": {"type": "json", "value": {"hits": [1]}}, "providerOptions": {"y": 2}}
            ]},
            {"role": "assistant", "content": "done", "id": "m5"}
        ]);
        let messages = messages_from_value(input.clone()).unwrap();
        assert!(matches!(messages[1].parts()[3], Part::Unknown(_)));
        assert_eq!(serde_json::to_value(&messages).unwrap(), input);
    }

    /// An untouched part, output or message is written back with its keys in the app's order
    /// (fuzz/api: kept-order): the keys besides the typed ones came back permuted by a
    /// swap-remove (`providerExecuted` before `providerOptions`).
    #[test]
    fn extra_keys_keep_their_order_on_both_paths() {
        let json = r#"[{"role":"assistant","content":[{"type":"tool-call","toolCallId":"c1","toolName":"bash","input":{},"providerOptions":{"meta":{"n":1}},"providerExecuted":true,"z":1,"a":2}],"providerOptions":{"p":1},"id":"m1","b":0},{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"bash","output":{"type":"text","value":"v","providerOptions":{"q":1},"z":2,"a":3},"providerOptions":{"y":2},"providerExecuted":true,"z":1}]},{"role":"user","content":[{"type":"text","text":"hi","providerOptions":{"x":1},"z":1,"a":2},{"type":"image","image":"https://e/a.png","mediaType":"image/png","providerOptions":{},"z":1,"a":2},{"type":"tool-approval-response","approvalId":"a1","approved":true,"providerOptions":{},"reason":"ok","z":1}]}]"#;
        let direct = parse_messages(json).unwrap();
        assert_eq!(
            serde_json::to_string(&direct).unwrap(),
            json,
            "the fast path"
        );
        let precise = messages_from_value(serde_json::from_str(json).unwrap()).unwrap();
        assert_eq!(
            serde_json::to_string(&precise).unwrap(),
            json,
            "the precise path"
        );
    }

    #[test]
    fn every_output_type_round_trips() {
        for output in [
            json!({"type": "text", "value": "t"}),
            json!({"type": "error-text", "value": "boom"}),
            json!({"type": "json", "value": [1, {"a": null}]}),
            json!({"type": "error-json", "value": {"code": 3}}),
            json!({"type": "content", "value": [{"type": "text", "text": "a"}, {"type": "media", "data": "AA==", "mediaType": "image/png"}]}),
            json!({"type": "execution-denied", "reason": "user said no"}),
            json!({"type": "brand-new", "value": 1}),
        ] {
            let input = json!([
                {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c", "toolName": "t", "input": {}}]},
                {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c", "toolName": "t", "output": output}]}
            ]);
            let messages = messages_from_value(input.clone()).unwrap();
            assert_eq!(serde_json::to_value(&messages).unwrap(), input);
        }
    }

    /// A conversation validated as it grows, is cut and grows again gives every verdict (and
    /// error) a whole validation gives.
    #[test]
    fn validating_what_was_appended_is_validating_the_whole() {
        let call = |id: &str| json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": id, "toolName": "t", "input": {}}]});
        let result = |id: &str| json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": id, "toolName": "t", "output": {"type": "text", "value": "ok"}}]});
        let all: Vec<Message> = [
            json!({"role": "system", "content": "s"}),
            call("a"),
            result("a"),
            call("b"),
            call("a"),
            result("b"),
            json!({"role": "user", "content": "u"}),
            result("a"),
        ]
        .into_iter()
        .map(|m| message_from_value(0, m).unwrap())
        .collect();
        let orphan = message_from_value(0, result("b")).unwrap();
        let bad_system = message_from_value(
            0,
            json!({"role": "system", "content": [{"type": "text", "text": "x"}]}),
        )
        .unwrap();
        let mut calls = CallIds::default();
        let mut held: Vec<Message> = Vec::new();
        // (messages kept, messages appended from `all` or an invalid one)
        let steps: [(usize, &[Message]); 9] = [
            (0, &all[..3]),
            (3, &all[3..5]),
            (2, &all[3..4]),
            (3, std::slice::from_ref(&orphan)), // b is called at 3: valid
            (2, std::slice::from_ref(&orphan)), // b is called nowhere before: orphan
            (0, &all[..4]),
            (4, &all[4..]),
            (1, std::slice::from_ref(&bad_system)),
            (0, &all),
        ];
        for (keep, appended) in steps {
            held.truncate(keep);
            held.extend_from_slice(appended);
            let whole = validate(&held);
            assert_eq!(
                calls.validate(&held, keep),
                whole,
                "keep {keep}, {} held",
                held.len()
            );
            if whole.is_err() {
                // What a binding does on an error: nothing held, nothing known.
                held.clear();
                calls = CallIds::default();
            }
        }
    }

    fn err(input: Value) -> Error {
        messages_from_value(input).unwrap_err()
    }

    #[test]
    fn errors_name_index_and_field() {
        assert_eq!(
            err(json!([{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}])),
            invalid(
                1,
                "role",
                "unknown role \"robot\", expected system, user, assistant or tool"
            )
        );
        let e = err(
            json!([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "tool-call", "toolName": "t", "input": {}}]}]),
        );
        assert!(
            matches!(&e, Error::InvalidMessage { index: 0, field, .. } if field == "content[1].toolCallId"),
            "{e:?}"
        );
        let e = err(
            json!([{"role": "assistant", "content": [{"type": "tool-call", "toolCallId": 7, "toolName": "t", "input": {}}]}]),
        );
        assert!(
            matches!(&e, Error::InvalidMessage { index: 0, field, .. } if field == "content[0].toolCallId"),
            "{e:?}"
        );
        let e = err(json!([{"role": "user", "content": 5}]));
        assert!(
            matches!(&e, Error::InvalidMessage { index: 0, field, .. } if field == "content"),
            "{e:?}"
        );
        let e = err(json!([{"role": "user", "content": [{"text": "no type"}]}]));
        assert!(
            matches!(&e, Error::InvalidMessage { index: 0, field, .. } if field == "content[0].type"),
            "{e:?}"
        );
        let e = err(json!([
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c", "toolName": "t", "input": {}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c", "toolName": "t", "output": {"type": "text", "value": 3}}]}
        ]));
        assert!(
            matches!(&e, Error::InvalidMessage { index: 1, field, .. } if field == "content[0].output.value"),
            "{e:?}"
        );
        assert!(matches!(
            err(json!({"role": "user"})),
            Error::InvalidMessages { .. }
        ));
        assert!(matches!(
            err(json!([3])),
            Error::InvalidMessage { index: 0, .. }
        ));
        // A UIMessage (`useChat`'s shape) is named as one, with the conversion to make.
        let e =
            err(json!([{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]));
        assert!(
            matches!(&e, Error::InvalidMessage { index: 0, field, message } if field == "content" && message.contains("UIMessage") && message.contains("convertToModelMessages")),
            "{e:?}"
        );
    }

    #[test]
    fn orphan_tool_result_is_refused() {
        let e = err(json!([
            {"role": "user", "content": "hi"},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "ghost", "toolName": "t", "output": {"type": "text", "value": "x"}}]}
        ]));
        assert_eq!(
            e,
            Error::OrphanToolResult {
                index: 1,
                part: 0,
                tool_call_id: "ghost".into()
            }
        );
    }

    #[test]
    fn malformed_json_reports_position() {
        let e = parse_messages("[{\"role\": \"user\",, }]").unwrap_err();
        assert!(matches!(e, Error::MalformedJson { line: 1, .. }), "{e:?}");
    }
}

#[cfg(test)]
mod missing_fields {
    use crate::Error;

    fn field_of(part: &str) -> String {
        let json = format!(r#"[{{"role":"assistant","content":[{part}]}}]"#);
        match crate::parse_messages(&json).unwrap_err() {
            Error::InvalidMessage { field, .. } => field,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn a_missing_field_is_named_itself_not_a_neighbour() {
        // Removing a present key only makes that one missing too: it said nothing of where.
        assert_eq!(
            field_of(r#"{"type":"tool-call","toolCallId":"c1","toolName":"t","args":{}}"#),
            "content[0].input"
        );
        assert_eq!(
            field_of(r#"{"type":"tool-call","toolCallId":"c1","input":{}}"#),
            "content[0].toolName"
        );
        assert_eq!(
            field_of(r#"{"type":"file","data":"aGk="}"#),
            "content[0].mediaType"
        );
        // A type error is still found where it is.
        assert_eq!(
            field_of(r#"{"type":"tool-call","toolCallId":5,"toolName":"t","input":{}}"#),
            "content[0].toolCallId"
        );
        // Below an object: the missing field under the object that lacks it.
        let e = crate::State::from_json(r#"{"version":2,"calibration":{"model":"m","ratio":1.1}}"#)
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { field, .. } if field == "state.calibration.samples"),
            "{e}"
        );
    }
}
