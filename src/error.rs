//! Typed errors. Every error that concerns the conversation names the message index and the
//! field (a JSON-path-like string such as `content[1].toolCallId`).

use serde::Serialize;

/// Everything that can go wrong in the core. Serializes as `{ "code": "...", ... }` so hosts can
/// branch on `code` without parsing messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(
    tag = "code",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum Error {
    /// The input is not JSON at all (the text could not be parsed).
    #[error("malformed JSON in {what} at line {line}, column {column}: {message}")]
    MalformedJson {
        /// What was being parsed (`messages`, `config`, ...).
        what: String,
        /// 1-based line of the error in the text.
        line: usize,
        /// 1-based column of the error in the text.
        column: usize,
        /// The parser's message, without its position.
        message: String,
    },

    /// A message does not have the AI SDK `ModelMessage` shape.
    #[error("message {index}: invalid `{field}`: {message}")]
    InvalidMessage {
        /// The message's index in the conversation.
        index: usize,
        /// The offending field, e.g. `content[1].toolCallId`.
        field: String,
        /// What is wrong with it.
        message: String,
    },

    /// The messages value itself is not an array.
    #[error("messages: {message}")]
    InvalidMessages {
        /// What is wrong with it.
        message: String,
    },

    /// A `tool-result` whose `toolCallId` no earlier assistant `tool-call` carries. Providers
    /// reject such conversations with a 400, so we refuse them up front.
    #[error("message {index}: `content[{part}].toolCallId` \"{tool_call_id}\" has no matching tool-call in an earlier assistant message")]
    OrphanToolResult {
        /// The tool message's index.
        index: usize,
        /// The part's index in that message's content.
        part: usize,
        /// The `toolCallId` no call carries.
        tool_call_id: String,
    },

    /// A configuration value is missing, of the wrong type, or out of range.
    #[error("config: invalid `{field}`: {message}")]
    InvalidConfig {
        /// The option, e.g. `offload.thresholdTokens`.
        field: String,
        /// What is wrong with it.
        message: String,
    },

    /// Outcomes or a plan given to `apply` do not fit the plan or the messages.
    #[error("apply: {message}")]
    PlanMismatch {
        /// The action concerned, when there is one.
        action_id: Option<String>,
        /// What does not fit.
        message: String,
    },

    /// An encoding name the counter does not know.
    #[error(
        "unknown encoding \"{name}\": the encodings are o200k_base and cl100k_base, the prebuilt \
         tokenizers {}; any other Hugging Face tokenizer loads from its tokenizer.json (loadTokenizer)",
        crate::counting::prebuilt::SHIPPED.map(|(n, ..)| n).join(", ")
    )]
    UnknownEncoding {
        /// The name given.
        name: String,
    },

    /// The build has no embedded rank data for this encoding and none was loaded (the lite
    /// package: call `loadEncoding`).
    #[error(
        "encoding \"{name}\" is not loaded yet: load its data first with loadEncoding(\"{name}\") (the npm \
         package's full entry also loads it with init({{ encodings: [\"{name}\"] }}); its lite entry only \
         with loadEncoding)"
    )]
    EncodingNotLoaded {
        /// The encoding (`o200k_base` or `cl100k_base`).
        name: String,
    },

    /// A store call failed or did not answer in time where nothing can stand in for it (an
    /// explicit save: [`crate::Compactor::save_state`]): `op` on `path`, in the store's words.
    #[error("{message}")]
    StoreFailed {
        /// The path.
        path: String,
        /// The store call (`write`).
        op: String,
        /// What happened, with the path.
        message: String,
    },

    /// The store kept refusing the state's save at `path`: other requests of the conversation
    /// keep saving it (or the store refuses saves it should take).
    #[error("{message}")]
    StateConflict {
        /// The state path.
        path: String,
        /// What happened, with the path.
        message: String,
        /// The refused saves.
        attempts: u32,
        /// The revision the store holds.
        revision: u64,
    },

    /// The provider refused the prompt as too long and the compactor could not make it
    /// shorter: a recovery ([`crate::Compactor::recover`]) with nothing left to compact.
    #[error("{message}")]
    ContextOverflow {
        /// What happened, quoting the provider.
        message: String,
        /// Which row of the overflow table matched.
        provider: String,
        /// The provider's count of the refused prompt, when its error gave one.
        reported_tokens: Option<u32>,
        /// The provider's input limit, when its error gave one.
        limit: Option<u32>,
        /// Compactions made for the model call.
        attempts: u32,
    },

    /// Rank data given to `loadEncoding` is damaged or for another encoding.
    #[error("rank data for \"{encoding}\": {reason}")]
    InvalidRankData {
        /// The encoding the data was given for.
        encoding: String,
        /// What is wrong with the data.
        reason: String,
    },
}

impl Error {
    pub(crate) fn json(what: &str, e: &serde_json::Error) -> Self {
        Error::MalformedJson {
            what: what.to_owned(),
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        }
    }
}

/// serde_json appends " at line L column C" to its messages; we report those as fields.
pub(crate) fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// [`strip_position`] for a value of the wrong shape (not malformed JSON). serde_json keeps each
/// number's text (`arbitrary_precision`: numbers come back and are stored as written), and a
/// number that does not fit the integer it is read into (a sign, a fraction, an exponent, too
/// many digits) fails as a bare "invalid number": say what fits (every integer the core reads is
/// unsigned).
pub(crate) fn shape_message(message: &str) -> String {
    let message = strip_position(message);
    if message == "invalid number" {
        return "invalid number: expected a whole number from 0 (no sign, fraction or exponent) \
                small enough for the field"
            .to_owned();
    }
    message
}

/// `std::result::Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
