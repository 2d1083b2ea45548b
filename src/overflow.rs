//! Recognizes a provider's "prompt too long" error, and reads the provider's count and limit
//! from it where the text gives them: one table, in the core, for every host. A host only
//! gathers the texts its exceptions carry (message, code, response body, causes: that is about
//! its own error types) and hands them over; what they mean is decided here.
//!
//! The texts are the providers' own, as their APIs return them:
//!
//! - OpenAI Chat Completions, 400 with `code: "context_length_exceeded"`: "This model's maximum
//!   context length is 128000 tokens. However, your messages resulted in 204308 tokens. Please
//!   reduce the length of the messages." (bytedance/deer-flow#310, webtimemachine/wtm2#579,
//!   chathub-dev/chathub#126 show the body); the older form with a completion: "However, you
//!   requested 4268 tokens (4012 in the messages, 256 in the completion)"
//!   (conghaonet/hao_chatgpt#4). Responses API: "Your input exceeds the context window of this
//!   model".
//! - vLLM's OpenAI server (`serving_engine.py` `_validate_input`): "This model's maximum context
//!   length is 4096 tokens. However, you requested 5000 tokens in the messages, Please reduce the
//!   length of the messages." / "… you requested {n} tokens ({prompt} in the messages, {max} in
//!   the completion)" / "However, your prompt contains at least {n} input tokens".
//! - Anthropic, 400 `invalid_request_error`: "prompt is too long: 219898 tokens > 200000
//!   maximum" (earendil-works/pi#102, stackblitz-labs/bolt.diy#401); 413 `request_too_large`
//!   "Request exceeds the maximum size"; the stop reason `model_context_window_exceeded`.
//! - Google Gemini, 400 INVALID_ARGUMENT: "The input token count (1200293) exceeds the maximum
//!   number of tokens allowed (1048576)." (google-gemini/gemini-cli#6678, #4231).
//! - Mistral: "Prompt contains 300000 tokens, too large for model with 131072 maximum context
//!   length" (earendil-works/pi `packages/ai/src/utils/overflow.ts` and its tests).
//! - llama.cpp server, 400 `exceed_context_size_error` with `n_prompt_tokens` and `n_ctx`: "the
//!   request exceeds the available context size, try increasing it"; older builds: "request
//!   (4476 tokens) exceeds the available context size (4096 tokens)".
//! - Ollama: "prompt too long; exceeded max context length by 4096 tokens"; its embed endpoint
//!   "the input length exceeds the context length" (nano-step/nano-brain#208).
//! - xAI, 400: "This model's maximum prompt length is 131072 but the request contains 136973
//!   tokens." (cline/cline#3120).
//! - Amazon Bedrock, `ValidationException`: "Input is too long for requested model."
//!   (aws-samples/bedrock-chat#95, continuedev/continue#9592; Claude on Bedrock may also say
//!   Anthropic's "prompt is too long").
//! - Hugging Face TGI, 422: "Input validation error: `inputs` tokens + `max_new_tokens` must be
//!   <= 65537. Given: 79993 `inputs` tokens and 1024 `max_new_tokens`"
//!   (bytedance/UI-TARS-desktop#626).
//!
//! Hand-written patterns rather than the `regex` crate: fifteen phrases with numbers in them do
//! not need a regex engine in the wasm core (about 100 kB gzipped).

use serde::Serialize;

/// What an overflow error said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OverflowError {
    /// Which row of the table matched (`openai`, `anthropic`, `google`, `mistral`, `xai`,
    /// `bedrock`, `vllm`, `tgi`, `llama.cpp`, `ollama`, `anthropic-stop-reason`, `generic`).
    pub provider: &'static str,
    /// The provider's count of the refused prompt, when the error gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_tokens: Option<u32>,
    /// The provider's input limit, when the error gives it (for a limit on prompt plus output,
    /// less the output requested).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// The text that matched.
    pub message: String,
}

/// One piece of a pattern, matched case-insensitively.
#[derive(Clone, Copy)]
enum P {
    /// This text.
    Lit(&'static str),
    /// One of these texts.
    Any(&'static [&'static str]),
    /// A number: digits with `,` separators, captured.
    Num,
    /// Up to this many characters of anything, as few as possible.
    Gap(usize),
}

use P::{Any, Gap, Lit, Num};

/// How a row reads the counts from its captures (and from all the texts, for llama.cpp).
#[derive(Clone, Copy)]
enum Read {
    None,
    LimitThenReported,
    ReportedThenLimit,
    /// A window shared by the prompt and the reply's room (the captures' indices): the prompt,
    /// against the window less the room.
    Room {
        window: usize,
        prompt: usize,
        reply: usize,
    },
    LlamaCpp,
}

struct Row {
    provider: &'static str,
    pattern: &'static [P],
    read: Read,
}

/// The table, most specific first.
const TABLE: &[Row] = &[
    Row {
        provider: "openai",
        pattern: &[
            Lit("maximum context length is "),
            Num,
            Lit(" tokens. however, your messages resulted in "),
            Num,
            Lit(" tokens"),
        ],
        read: Read::LimitThenReported,
    },
    Row {
        provider: "vllm",
        pattern: &[
            Lit("maximum context length is "),
            Num,
            Lit(" tokens. however, you requested "),
            Num,
            Lit(" tokens ("),
            Num,
            Lit(" in the messages, "),
            Num,
            Lit(" in the completion)"),
        ],
        // limit, requested, prompt, completion
        read: Read::Room {
            window: 0,
            prompt: 2,
            reply: 3,
        },
    },
    Row {
        provider: "vllm",
        pattern: &[
            Lit("maximum context length is "),
            Num,
            Lit(" tokens. however, "),
            Any(&["you requested ", "your prompt contains at least "]),
            Num,
            Any(&[" input tokens", " tokens"]),
        ],
        read: Read::LimitThenReported,
    },
    Row {
        provider: "anthropic",
        pattern: &[
            Lit("prompt is too long: "),
            Num,
            Lit(" tokens > "),
            Num,
            Lit(" maximum"),
        ],
        read: Read::ReportedThenLimit,
    },
    Row {
        provider: "anthropic",
        pattern: &[
            Lit("input length and `max_tokens` exceed context limit: "),
            Num,
            Lit(" + "),
            Num,
            Lit(" > "),
            Num,
        ],
        read: Read::Room {
            window: 2,
            prompt: 0,
            reply: 1,
        },
    },
    Row {
        provider: "xai",
        pattern: &[
            Lit("maximum prompt length is "),
            Num,
            Lit(" but the request contains "),
            Num,
            Lit(" tokens"),
        ],
        read: Read::LimitThenReported,
    },
    Row {
        provider: "tgi",
        pattern: &[
            Lit("`inputs` tokens + `max_new_tokens` must be <= "),
            Num,
            Lit(". given: "),
            Num,
            Lit(" `inputs` tokens and "),
            Num,
            Lit(" `max_new_tokens`"),
        ],
        read: Read::Room {
            window: 0,
            prompt: 1,
            reply: 2,
        },
    },
    Row {
        provider: "bedrock",
        pattern: &[Lit("input is too long for requested model")],
        read: Read::None,
    },
    Row {
        provider: "google",
        pattern: &[
            Lit("input token count ("),
            Num,
            Lit(") exceeds the maximum number of tokens allowed ("),
            Num,
            Lit(")"),
        ],
        read: Read::ReportedThenLimit,
    },
    Row {
        provider: "mistral",
        pattern: &[
            Lit("prompt contains "),
            Num,
            Lit(" tokens"),
            Gap(200),
            Lit("too large for model with "),
            Num,
            Lit(" maximum context length"),
        ],
        read: Read::ReportedThenLimit,
    },
    Row {
        provider: "llama.cpp",
        pattern: &[Lit("exceeds the available context size")],
        read: Read::LlamaCpp,
    },
    Row {
        provider: "ollama",
        pattern: &[Any(&[
            "prompt too long; exceeded max context length",
            "prompt too long; exceeded context length",
            "input length exceeds the context length",
        ])],
        read: Read::None,
    },
    Row {
        provider: "openai",
        pattern: &[Any(&[
            "context_length_exceeded",
            "exceeds the context window of this model",
        ])],
        read: Read::None,
    },
    Row {
        provider: "anthropic",
        pattern: &[Any(&["request_too_large", "prompt is too long"])],
        read: Read::None,
    },
    Row {
        provider: "anthropic-stop-reason",
        pattern: &[Lit("model_context_window_exceeded")],
        read: Read::None,
    },
    Row {
        provider: "generic",
        pattern: &[Lit("maximum context length is "), Num, Lit(" tokens")],
        read: Read::None,
    },
];

/// Never an overflow, whatever else the text says (a throttle that mentions tokens).
const NOT_OVERFLOW: &[&str] = &["rate limit", "too many requests", "throttl", "quota"];

/// How much of each text is read: a provider's overflow message is short, and a huge response
/// body (an echoed prompt) must not make every failed call slow.
pub const TEXT_LIMIT: usize = 16_384;

/// Whether the texts an error carries (its message, code, response body, causes: `texts`, in
/// the order the host found them) are a provider's "prompt too long" error, and what they say.
/// `status`: the HTTP status, when known (429 and 5xx are never an overflow).
pub fn parse_overflow(texts: &[String], status: Option<u16>) -> Option<OverflowError> {
    if matches!(status, Some(code) if code == 429 || code >= 500) {
        return None;
    }
    let texts: Vec<&str> = texts.iter().map(|t| clip(t)).collect();
    let lowered: Vec<String> = texts.iter().map(|t| t.to_ascii_lowercase()).collect();
    for row in TABLE {
        for (text, lower) in texts.iter().zip(&lowered) {
            if NOT_OVERFLOW.iter().any(|n| lower.contains(n)) {
                continue;
            }
            let Some(numbers) = find(lower, row.pattern) else {
                continue;
            };
            let (reported_tokens, limit) = match row.read {
                Read::None => (None, None),
                Read::LimitThenReported => (numbers[1], numbers[0]),
                Read::ReportedThenLimit => (numbers[0], numbers[1]),
                Read::Room {
                    window,
                    prompt,
                    reply,
                } => {
                    let room = numbers[reply].unwrap_or(0);
                    (
                        numbers[prompt],
                        numbers[window].map(|window| window.saturating_sub(room).max(1)),
                    )
                }
                Read::LlamaCpp => {
                    let all = lowered.join("\n");
                    (
                        field(&all, "\"n_prompt_tokens\"").or_else(|| {
                            first(&all, &[Lit("request ("), Num, Lit(" tokens) exceeds")])
                        }),
                        field(&all, "\"n_ctx\"").or_else(|| {
                            first(
                                &all,
                                &[Lit("available context size ("), Num, Lit(" tokens)")],
                            )
                        }),
                    )
                }
            };
            return Some(OverflowError {
                provider: row.provider,
                reported_tokens,
                limit,
                message: (*text).to_owned(),
            });
        }
    }
    None
}

/// `text` cut to [`TEXT_LIMIT`] bytes, at a character boundary.
fn clip(text: &str) -> &str {
    if text.len() <= TEXT_LIMIT {
        return text;
    }
    let mut end = TEXT_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The first match of `pattern` in `text` (lowercase): the numbers it captured, in order.
fn find(text: &str, pattern: &[P]) -> Option<Vec<Option<u32>>> {
    (0..=text.len())
        .filter(|&i| text.is_char_boundary(i))
        .find_map(|start| at(text, start, pattern))
}

/// The first number `pattern` captures in `text`.
fn first(text: &str, pattern: &[P]) -> Option<u32> {
    find(text, pattern).and_then(|numbers| numbers.into_iter().flatten().next())
}

/// `pattern` matched at `start` of `text`: the numbers captured (a number too large for u32,
/// or zero, is none).
fn at(text: &str, start: usize, pattern: &[P]) -> Option<Vec<Option<u32>>> {
    let mut i = start;
    let mut numbers = Vec::new();
    for (k, piece) in pattern.iter().enumerate() {
        let rest = &text[i..];
        match *piece {
            Lit(lit) => {
                if !rest.starts_with(lit) {
                    return None;
                }
                i += lit.len();
            }
            Any(options) => i += options.iter().find(|o| rest.starts_with(*o))?.len(),
            Num => {
                let len = rest
                    .bytes()
                    .take_while(|b| b.is_ascii_digit() || *b == b',')
                    .count();
                if !rest.as_bytes().first()?.is_ascii_digit() {
                    return None;
                }
                let digits: String = rest[..len].chars().filter(char::is_ascii_digit).collect();
                numbers.push(digits.parse::<u32>().ok().filter(|&n| n > 0));
                i += len;
            }
            Gap(max) => {
                // As few characters as possible: the rest of the pattern at each position.
                let tail = &pattern[k + 1..];
                let mut skipped = 0;
                for (offset, c) in rest.char_indices() {
                    if skipped > max {
                        return None;
                    }
                    if let Some(more) = at(text, i + offset, tail) {
                        numbers.extend(more);
                        return Some(numbers);
                    }
                    let _ = c;
                    skipped += 1;
                }
                return at(text, text.len(), tail).map(|more| {
                    numbers.extend(more);
                    numbers
                });
            }
        }
    }
    Some(numbers)
}

/// The number after `"key"\s*:\s*` in `text`.
fn field(text: &str, key: &str) -> Option<u32> {
    let mut from = 0;
    while let Some(found) = text[from..].find(key) {
        let after = from + found + key.len();
        let rest = text[after..].trim_start();
        if let Some(value) = rest.strip_prefix(':') {
            let value = value.trim_start();
            let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
            if let Some(n) = digits.parse::<u32>().ok().filter(|&n| n > 0) {
                return Some(n);
            }
        }
        from = after;
    }
    None
}

/// Where a model call stands when a host that retries overflows asks what to do
/// ([`overflow_verdict`]). Every host's retry loop (the AI SDK middleware's generate and stream
/// paths, the LangChain middlewares, the OpenAI Agents model, `recover`) asks this, so the
/// rules and the texts of their errors are written once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverflowMoment {
    /// The call failed with an error.
    Refused,
    /// The call answered, stopped at the context window (`model_context_window_exceeded`).
    Cut,
    /// A stream reported an error after content had reached the caller.
    RefusedAfterContent,
    /// A stream stopped at the context window after content had reached the caller.
    CutAfterContent,
    /// `recover` compacted the refused prompt and nothing was left to compact.
    NothingLeft,
}

/// An overflow as a host hands it back ([`parse_overflow`]'s answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverflowReport {
    /// The row of the table that matched.
    pub provider: String,
    /// The provider's count of the refused prompt.
    pub reported_tokens: Option<u32>,
    /// The provider's input limit.
    pub limit: Option<u32>,
    /// The text that matched.
    pub message: String,
}

impl From<&OverflowError> for OverflowReport {
    fn from(error: &OverflowError) -> Self {
        OverflowReport {
            provider: error.provider.to_owned(),
            reported_tokens: error.reported_tokens,
            limit: error.limit,
            message: error.message.clone(),
        }
    }
}

/// A recovery that had nothing left to compact ([`crate::CallDone::overflow`]): the
/// `context_overflow` error a host raises, its `cause` the provider's error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OverflowFailure {
    /// What happened, for the error's message.
    pub message: String,
    /// The error's details.
    pub details: OverflowDetails,
}

impl From<OverflowFailure> for crate::Error {
    fn from(failure: OverflowFailure) -> Self {
        crate::Error::ContextOverflow {
            message: failure.message,
            provider: failure.details.provider,
            reported_tokens: failure.details.reported_tokens,
            limit: failure.details.limit,
            attempts: failure.details.attempts,
        }
    }
}

/// What a host does next ([`overflow_verdict`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum OverflowVerdict {
    /// Not the retry loop's: the error is thrown, the answer returned, as they are.
    AsIs,
    /// Compact the refused prompt harder (`recover` with this `attempt`) and call again.
    Retry {
        /// The attempt the retry is.
        attempt: u32,
    },
    /// Fail with a `context_overflow` error: this message and these details.
    Fail {
        /// What happened, for the error's message.
        message: String,
        /// The error's details.
        details: OverflowDetails,
    },
}

/// The details of a `context_overflow` error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OverflowDetails {
    /// Which row of the overflow table matched.
    pub provider: String,
    /// The provider's count of the refused prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_tokens: Option<u32>,
    /// The provider's input limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Compactions (and retries) made for this model call.
    pub attempts: u32,
}

/// What a host's retry loop does at `moment`: `overflow` is what the call's error (or cut
/// answer) said (`None`: not an overflow), `attempt` the compactions made for this model call so
/// far, `retries` how many it may make (`overflow.retries`).
///
/// - Not an overflow, or no retries allowed: as is (the provider's own error, unchanged).
/// - Refused or cut with retries left: retry, compacted harder.
/// - Refused after the last retry: `context_overflow`, "still refused"; cut after the last
///   retry: the answer as is (it has content).
/// - After content reached the caller (a stream): `context_overflow`, never a retry (the caller
///   would see two answers).
/// - Nothing left to compact: `context_overflow`.
///
/// ```
/// use context_compactor::{overflow_verdict, OverflowMoment, OverflowReport, OverflowVerdict};
/// let said = OverflowReport { provider: "anthropic".into(), reported_tokens: Some(219_898), limit: Some(200_000), message: "prompt is too long".into() };
/// assert_eq!(overflow_verdict(OverflowMoment::Refused, Some(&said), 0, 1), OverflowVerdict::Retry { attempt: 1 });
/// let OverflowVerdict::Fail { message, details } = overflow_verdict(OverflowMoment::Refused, Some(&said), 1, 1) else { panic!() };
/// assert!(message.starts_with("the provider still refused the prompt as too long after 1 compaction and retry"));
/// assert_eq!(details.attempts, 1);
/// ```
pub fn overflow_verdict(
    moment: OverflowMoment,
    overflow: Option<&OverflowReport>,
    attempt: u32,
    retries: u32,
) -> OverflowVerdict {
    let Some(said) = overflow else {
        return OverflowVerdict::AsIs;
    };
    let quoted: String = said.message.chars().take(200).collect();
    let fail = |message: String| OverflowVerdict::Fail {
        message,
        details: OverflowDetails {
            provider: said.provider.clone(),
            reported_tokens: said.reported_tokens,
            limit: said.limit,
            attempts: attempt,
        },
    };
    match moment {
        OverflowMoment::NothingLeft => fail(format!(
            "the provider refused the prompt as too long ({quoted}) and nothing is left to compact"
        )),
        _ if retries == 0 => OverflowVerdict::AsIs,
        OverflowMoment::RefusedAfterContent | OverflowMoment::CutAfterContent => fail(format!(
            "the provider reported the prompt as too long after the stream had started ({quoted}); content had reached the caller, so it was not retried"
        )),
        OverflowMoment::Refused | OverflowMoment::Cut if attempt < retries => OverflowVerdict::Retry { attempt: attempt + 1 },
        OverflowMoment::Cut => OverflowVerdict::AsIs,
        OverflowMoment::Refused => {
            let (s, y) = if attempt == 1 { ("", "y") } else { ("s", "ies") };
            fail(format!(
                "the provider still refused the prompt as too long after {attempt} compaction{s} and retr{y} ({quoted})"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Option<OverflowError> {
        parse_overflow(&[text.to_owned()], None)
    }

    #[test]
    fn each_provider_and_its_counts() {
        let openai = parse("This model's maximum context length is 128000 tokens. However, your messages resulted in 204,308 tokens. Please reduce the length of the messages.").unwrap();
        assert_eq!(
            (openai.provider, openai.reported_tokens, openai.limit),
            ("openai", Some(204_308), Some(128_000))
        );
        let vllm = parse("This model's maximum context length is 4096 tokens. However, you requested 4268 tokens (4012 in the messages, 256 in the completion).").unwrap();
        assert_eq!(
            (vllm.provider, vllm.reported_tokens, vllm.limit),
            ("vllm", Some(4012), Some(3840))
        );
        let vllm = parse("maximum context length is 4096 tokens. However, your prompt contains at least 5000 input tokens").unwrap();
        assert_eq!(
            (vllm.provider, vllm.reported_tokens, vllm.limit),
            ("vllm", Some(5000), Some(4096))
        );
        // The prompt and the reply's room over the window: the prompt must fit in what is left.
        let room = parse("input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again").unwrap();
        assert_eq!(
            (room.provider, room.reported_tokens, room.limit),
            ("anthropic", Some(178_959), Some(136_000))
        );
        let xai = parse(
            "This model's maximum prompt length is 131072 but the request contains 136973 tokens.",
        )
        .unwrap();
        assert_eq!(
            (xai.provider, xai.reported_tokens, xai.limit),
            ("xai", Some(136_973), Some(131_072))
        );
        let tgi = parse("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 65537. Given: 79993 `inputs` tokens and 1024 `max_new_tokens`").unwrap();
        assert_eq!(
            (tgi.provider, tgi.reported_tokens, tgi.limit),
            ("tgi", Some(79_993), Some(64_513))
        );
        let bedrock = parse("An error occurred (ValidationException) when calling the Converse operation: Input is too long for requested model.").unwrap();
        assert_eq!(
            (bedrock.provider, bedrock.reported_tokens, bedrock.limit),
            ("bedrock", None, None)
        );
        let anthropic = parse("prompt is too long: 219898 tokens > 200000 maximum").unwrap();
        assert_eq!(
            (anthropic.reported_tokens, anthropic.limit),
            (Some(219_898), Some(200_000))
        );
        let google = parse("The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).").unwrap();
        assert_eq!(
            (google.provider, google.reported_tokens, google.limit),
            ("google", Some(1_200_293), Some(1_048_576))
        );
        let mistral = parse(
            "Prompt contains 300000 tokens, too large for model with 131072 maximum context length",
        )
        .unwrap();
        assert_eq!(
            (mistral.provider, mistral.reported_tokens, mistral.limit),
            ("mistral", Some(300_000), Some(131_072))
        );
        let llama = parse_overflow(
            &[
                "the request exceeds the available context size, try increasing it".into(),
                r#"{"error":{"n_prompt_tokens": 4476,"n_ctx":4096}}"#.into(),
            ],
            Some(400),
        )
        .unwrap();
        assert_eq!(
            (llama.provider, llama.reported_tokens, llama.limit),
            ("llama.cpp", Some(4476), Some(4096))
        );
        let old = parse("request (4476 tokens) exceeds the available context size (4096 tokens)")
            .unwrap();
        assert_eq!((old.reported_tokens, old.limit), (Some(4476), Some(4096)));
        assert_eq!(
            parse("prompt too long; exceeded max context length by 4096 tokens")
                .unwrap()
                .provider,
            "ollama"
        );
        assert_eq!(parse("context_length_exceeded").unwrap().provider, "openai");
        assert_eq!(
            parse("Request exceeds the maximum size: request_too_large")
                .unwrap()
                .provider,
            "anthropic"
        );
        assert_eq!(
            parse("model_context_window_exceeded").unwrap().provider,
            "anthropic-stop-reason"
        );
    }

    #[test]
    fn throttles_and_server_errors_are_not_overflows() {
        assert_eq!(
            parse("Rate limit reached: 30000 tokens per min. context_length_exceeded"),
            None
        );
        assert_eq!(
            parse_overflow(&["prompt is too long".into()], Some(429)),
            None
        );
        assert_eq!(
            parse_overflow(&["prompt is too long".into()], Some(503)),
            None
        );
        assert_eq!(parse("invalid api key"), None);
        // A mistral gap longer than 200 characters is two errors, not one.
        let far = format!(
            "prompt contains 10 tokens{}too large for model with 5 maximum context length",
            "x".repeat(300)
        );
        assert_eq!(parse(&far), None);
    }

    #[test]
    fn the_verdicts_of_a_retry_loop() {
        let said = OverflowReport {
            provider: "openai".into(),
            reported_tokens: Some(204_308),
            limit: None,
            message: "x".repeat(300),
        };
        let v = |moment, attempt, retries| overflow_verdict(moment, Some(&said), attempt, retries);
        assert_eq!(
            overflow_verdict(OverflowMoment::Refused, None, 0, 1),
            OverflowVerdict::AsIs
        );
        assert_eq!(
            v(OverflowMoment::Refused, 0, 0),
            OverflowVerdict::AsIs,
            "retries off: the provider's error"
        );
        assert_eq!(
            v(OverflowMoment::Refused, 0, 2),
            OverflowVerdict::Retry { attempt: 1 }
        );
        assert_eq!(
            v(OverflowMoment::Cut, 1, 2),
            OverflowVerdict::Retry { attempt: 2 }
        );
        assert_eq!(
            v(OverflowMoment::Cut, 2, 2),
            OverflowVerdict::AsIs,
            "a cut answer after the last retry is returned"
        );
        let OverflowVerdict::Fail { message, details } = v(OverflowMoment::Refused, 2, 2) else {
            panic!("still refused")
        };
        assert_eq!(
            message,
            format!("the provider still refused the prompt as too long after 2 compactions and retries ({})", "x".repeat(200))
        );
        assert_eq!(
            (
                details.provider.as_str(),
                details.reported_tokens,
                details.attempts
            ),
            ("openai", Some(204_308), 2)
        );
        assert!(
            matches!(v(OverflowMoment::CutAfterContent, 0, 1), OverflowVerdict::Fail { message, .. } if message.contains("after the stream had started"))
        );
        assert!(
            matches!(v(OverflowMoment::NothingLeft, 1, 0), OverflowVerdict::Fail { message, .. } if message.ends_with("and nothing is left to compact"))
        );
        let json = serde_json::to_string(&v(OverflowMoment::Refused, 1, 1)).unwrap();
        assert!(json.starts_with(r#"{"verdict":"fail","message":"the provider still refused the prompt as too long after 1 compaction and retry ("#), "{json}");
        assert!(
            json.ends_with(
                r#""details":{"provider":"openai","reportedTokens":204308,"attempts":1}}"#
            ),
            "{json}"
        );
    }
}
