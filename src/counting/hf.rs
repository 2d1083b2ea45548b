//! Exact counts for a Hugging Face `tokenizer.json` (the file beside every open-weight model's
//! weights): byte-level BPE (Llama 3, Qwen 2.5 / 3, DeepSeek V3) and SentencePiece-style BPE (Gemma 3, and
//! through its vocabulary Gemini 2.x / 3), counted as the `tokenizers` library's
//! `encode(text, add_special_tokens=False)` does.
//!
//! What is reproduced, step by step:
//! - added tokens (special or not) are cut out of the text first, leftmost-longest, one token
//!   each (as `tokenizers` does with the aho-corasick crate; here a small byte trie, see
//!   `Literals`);
//! - the normalizer: none, `NFC` (Qwen; the `unicode-normalization` crate as in `tokenizers`,
//!   or the host's NFC in the wasm build: [`set_nfc`]), or `Replace(" ", "▁")` (Gemma);
//! - the pre-tokenizer: one of the known Split patterns, each a hand-written linear splitter in
//!   [`pretokenize`](super::bpe::pretokenize) (Llama 3's, Qwen's, DeepSeek V3's three), or none (Gemma: after the
//!   normalizer no `" "` is left for its Split to cut at);
//! - the model: BPE with the file's merges. When the merges are tiktoken's ranks (every two-token
//!   split of a token is a merge, in token-id order, and `ignore_merges` — Llama 3), counting is
//!   [`Bpe::count`]; otherwise each pair merges by its own priority in the merges list, lowest
//!   first, leftmost on a tie (`tokenizers`' `Word::merge_all`), with byte fallback (`<0xNN>`)
//!   for characters a SentencePiece vocabulary lacks.
//!
//! Mistral's `tekken_*.json` (mistral-common's tiktoken-style files) loads through the same entry.
//!
//! Anything else (another pre-tokenizer pattern, WordPiece, Unigram, a continuing-subword
//! prefix, added tokens with strip flags) is a typed `invalid_rank_data` error naming it, never a
//! silent approximation.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Mutex;

use serde::Deserialize;

use super::bpe::{hash, pretokenize, Bpe, PieceCache, PieceEnd};
use crate::error::Error;

/// The Llama 3 Split pattern (cl100k's relative; see [`pretokenize`]).
pub const LLAMA3_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// The Qwen 2 / 2.5 / 3 Split pattern: Llama 3's with single digits.
pub const QWEN2_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Mistral's tekken pattern (`tekken_240718.json`, `tekken_240911.json`).
pub const TEKKEN_PATTERN: &str = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// DeepSeek V3's three Split patterns, in order.
pub const DEEPSEEK_V3_PATTERNS: [&str; 3] = [
    r"\p{N}{1,3}",
    "[\u{4e00}-\u{9fa5}\u{3040}-\u{309f}\u{30a0}-\u{30ff}]+",
    concat!(
        r##"[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^"##,
        "\r\n",
        r"\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[",
        "\r\n",
        r"]*|\s*[",
        "\r\n",
        r"]+|\s+(?!\S)|\s+"
    ),
];

const NONE: u32 = u32::MAX;

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    normalizer: Option<serde_json::Value>,
    pre_tokenizer: Option<serde_json::Value>,
    model: Model,
}

/// Mistral's `tekken_*.json` (mistral-common): tiktoken ranks in base64, one pattern.
#[derive(Deserialize)]
struct Tekken {
    config: TekkenConfig,
    vocab: Vec<TekkenToken>,
}

#[derive(Deserialize)]
struct TekkenConfig {
    pattern: String,
    default_vocab_size: usize,
    default_num_special_tokens: usize,
}

#[derive(Deserialize)]
struct TekkenToken {
    rank: usize,
    token_bytes: String,
}

#[derive(Deserialize)]
struct AddedToken {
    content: String,
    #[serde(default)]
    single_word: bool,
    #[serde(default)]
    lstrip: bool,
    #[serde(default)]
    rstrip: bool,
    #[serde(default)]
    normalized: bool,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type")]
    kind: Option<String>,
    vocab: HashMap<String, u32>,
    #[serde(default)]
    merges: Vec<MergeEntry>,
    #[serde(default)]
    byte_fallback: bool,
    #[serde(default)]
    ignore_merges: bool,
    #[serde(default)]
    fuse_unk: bool,
    unk_token: Option<String>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    dropout: Option<f64>,
}

/// A merge as `tokenizer.json` writes it: `"a b"` (older files) or `["a", "b"]`.
enum MergeEntry {
    Joined(String),
    Pair(String, String),
}

/// Read directly (a derived untagged enum would buffer each of the file's ~150,000 merges in
/// serde's generic `Content` first, and bring that machine's code into the wasm core).
impl<'de> Deserialize<'de> for MergeEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Merge;
        impl<'de> serde::de::Visitor<'de> for Merge {
            type Value = MergeEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a merge: \"a b\" or [\"a\", \"b\"]")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<MergeEntry, E> {
                Ok(MergeEntry::Joined(s.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<MergeEntry, E> {
                Ok(MergeEntry::Joined(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<MergeEntry, A::Error> {
                use serde::de::Error;
                let a: String = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(0, &self))?;
                let b: String = seq
                    .next_element()?
                    .ok_or_else(|| A::Error::invalid_length(1, &self))?;
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(A::Error::invalid_length(3, &self));
                }
                Ok(MergeEntry::Pair(a, b))
            }
        }
        d.deserialize_any(Merge)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Normalizer {
    None,
    Nfc,
    /// `Replace(" ", "▁")`.
    Metaspace,
}

/// How pieces become tokens.
enum Merging {
    /// tiktoken's rule (the merges are the ranks): [`Bpe::count`].
    Ranks,
    /// Each listed pair by its own priority.
    Pairs {
        /// (left id, right id) → (priority, merged id).
        merges: HashMap<u64, (u32, u32)>,
        /// Symbols start as characters (SentencePiece) rather than bytes.
        chars: bool,
        /// The `<0xNN>` token of each byte (byte fallback), `NONE` where there is none.
        byte_tokens: [u32; 256],
        unk: Option<u32>,
        fuse_unk: bool,
        ignore_merges: bool,
        /// Counts of pieces merged before.
        cache: Mutex<PieceCache>,
    },
}

/// A tokenizer built from a `tokenizer.json`.
pub struct HfTokenizer {
    /// Vocabulary (rank = token id), and the pre-tokenizer.
    bpe: Bpe,
    merging: Merging,
    normalizer: Normalizer,
    /// Added tokens, matched leftmost-longest on the raw text.
    added: Option<Literals>,
    /// What the file describes, for messages and `describe()`.
    kind: &'static str,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("name", &self.bpe.name())
            .field("kind", &self.kind)
            .field("tokens", &self.bpe.len())
            .finish_non_exhaustive()
    }
}

/// GPT-2's byte-to-character table, inverted: the byte each vocabulary character stands for.
fn byte_level_decoder() -> HashMap<char, u8> {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32)
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut chars = printable.clone();
    let mut extra = 0;
    for b in 0..256u32 {
        if !printable.contains(&b) {
            printable.push(b);
            chars.push(256 + extra);
            extra += 1;
        }
    }
    printable
        .into_iter()
        .zip(chars)
        .map(|(b, c)| (char::from_u32(c).expect("GPT-2 table"), b as u8))
        .collect()
}

fn contains_type(value: &serde_json::Value, kind: &str) -> bool {
    match value {
        serde_json::Value::Object(map) => {
            map.get("type").and_then(|t| t.as_str()) == Some(kind)
                || map.values().any(|v| contains_type(v, kind))
        }
        serde_json::Value::Array(items) => items.iter().any(|v| contains_type(v, kind)),
        _ => false,
    }
}

/// Every Split regex pattern in a pre-tokenizer.
fn split_patterns(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if map.get("type").and_then(|t| t.as_str()) == Some("Split") {
                if let Some(p) = map
                    .get("pattern")
                    .and_then(|p| p.get("Regex"))
                    .and_then(|r| r.as_str())
                {
                    out.push(p.to_owned());
                }
            }
            map.values().for_each(|v| split_patterns(v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| split_patterns(v, out)),
        _ => {}
    }
}

/// The pre-tokenizers this crate has a linear splitter for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pre {
    /// None at all (SentencePiece-style: after `Replace(" ", "▁")` no space is left to cut at).
    Whole,
    Llama3,
    Qwen2,
    DeepseekV3,
    Tekken,
}

impl Pre {
    /// All of them, by their number in the prebuilt format ([`super::prebuilt`]).
    pub(crate) const ALL: [Pre; 5] = [
        Pre::Whole,
        Pre::Llama3,
        Pre::Qwen2,
        Pre::DeepseekV3,
        Pre::Tekken,
    ];

    fn piece_end(self) -> PieceEnd {
        match self {
            Pre::Whole => pretokenize::whole,
            Pre::Llama3 => pretokenize::llama3_piece,
            Pre::Qwen2 => pretokenize::qwen2_piece,
            Pre::DeepseekV3 => pretokenize::deepseek_v3_piece,
            Pre::Tekken => pretokenize::tekken_piece,
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Pre::Whole => "SentencePiece-style BPE",
            Pre::Llama3 => "byte-level BPE, Llama 3 pattern",
            Pre::Qwen2 => "byte-level BPE, Qwen 2 pattern",
            Pre::DeepseekV3 => "byte-level BPE, DeepSeek V3 patterns",
            Pre::Tekken => "tekken (tiktoken-style BPE), Mistral",
        }
    }
}

/// Everything a tokenizer is built from, whether it came from a `tokenizer.json`, a tekken file
/// or the compact prebuilt data ([`super::prebuilt`]): one construction serves all three.
pub(crate) struct Spec {
    pub(crate) pre: Pre,
    pub(crate) normalizer: Normalizer,
    /// Symbols start as bytes (byte-level BPE) rather than characters (SentencePiece).
    pub(crate) byte_level: bool,
    /// The vocabulary, token id = index, as bytes.
    pub(crate) tokens: Vec<Vec<u8>>,
    /// The merges in priority order as (left id, right id, merged id); `None`: tiktoken's rule
    /// (the ids are the ranks).
    pub(crate) merges: Option<Vec<(u32, u32, u32)>>,
    pub(crate) byte_fallback: bool,
    /// The bytes of the unknown token, looked up in the vocabulary.
    pub(crate) unk: Option<Vec<u8>>,
    pub(crate) fuse_unk: bool,
    pub(crate) ignore_merges: bool,
    /// Added tokens, each counted one wherever it appears in the text.
    pub(crate) added: Vec<String>,
}

impl Spec {
    /// Reads a `tokenizer.json` (or a tekken file) into what the tokenizer is built from.
    pub(crate) fn from_json(name: &str, json: &str) -> Result<Self, Error> {
        let bad = |reason: String| Error::InvalidRankData {
            encoding: name.to_owned(),
            reason,
        };
        let file: File = match serde_json::from_str(json) {
            Ok(file) => file,
            // Not a tokenizer.json: a tekken file has no `model`.
            Err(e) if e.to_string().starts_with("missing field `model`") => {
                return Self::from_tekken(name, json)
            }
            Err(e) => return Err(bad(format!("tokenizer.json does not parse: {e}"))),
        };
        let model = file.model;
        if model.kind.as_deref().is_some_and(|k| k != "BPE") {
            return Err(bad(format!(
                "model type {:?}: only BPE models are supported",
                model.kind.unwrap_or_default()
            )));
        }
        if model
            .continuing_subword_prefix
            .as_deref()
            .is_some_and(|p| !p.is_empty())
            || model
                .end_of_word_suffix
                .as_deref()
                .is_some_and(|p| !p.is_empty())
        {
            return Err(bad(
                "continuing_subword_prefix / end_of_word_suffix are not supported".into(),
            ));
        }
        if model.dropout.is_some_and(|d| d > 0.0) {
            return Err(bad(
                "BPE dropout is random; it cannot be counted exactly".into()
            ));
        }
        let pre = file.pre_tokenizer.unwrap_or(serde_json::Value::Null);
        let norm = file.normalizer.unwrap_or(serde_json::Value::Null);
        let byte_level = contains_type(&pre, "ByteLevel");

        // The normalizer.
        let normalizer = if norm.is_null()
            || (norm.get("type").and_then(|t| t.as_str()) == Some("Sequence")
                && norm
                    .get("normalizers")
                    .and_then(|n| n.as_array())
                    .is_some_and(|n| n.is_empty()))
        {
            Normalizer::None
        } else if norm.get("type").and_then(|t| t.as_str()) == Some("NFC") {
            Normalizer::Nfc
        } else if norm.get("type").and_then(|t| t.as_str()) == Some("Replace")
            && norm.pointer("/pattern/String").and_then(|p| p.as_str()) == Some(" ")
            && norm.get("content").and_then(|c| c.as_str()) == Some("\u{2581}")
        {
            Normalizer::Metaspace
        } else {
            return Err(bad(format!("normalizer not supported: {norm}")));
        };

        // The pre-tokenizer.
        let mut patterns = Vec::new();
        split_patterns(&pre, &mut patterns);
        let pre = if byte_level {
            match patterns.as_slice() {
                [p] if p == LLAMA3_PATTERN => Pre::Llama3,
                [p] if p == QWEN2_PATTERN => Pre::Qwen2,
                [a, b, c] if [a, b, c] == DEEPSEEK_V3_PATTERNS => Pre::DeepseekV3,
                _ => {
                    return Err(bad(format!(
                        "pre-tokenizer not supported (no linear splitter for the Split pattern(s) {patterns:?})"
                    )))
                }
            }
        } else if normalizer == Normalizer::Metaspace
            && (pre.is_null()
                || (pre.get("type").and_then(|t| t.as_str()) == Some("Split")
                    && pre.pointer("/pattern/String").and_then(|p| p.as_str()) == Some(" ")))
        {
            Pre::Whole
        } else {
            return Err(bad(format!("pre-tokenizer not supported: {pre}")));
        };

        // The vocabulary in id order, as bytes.
        let decoder = byte_level.then(byte_level_decoder);
        let n = model.vocab.len();
        let mut by_id: Vec<Option<&str>> = vec![None; n];
        for (token, &id) in &model.vocab {
            let slot = by_id.get_mut(id as usize).ok_or_else(|| {
                bad(format!(
                    "token id {id} is past the vocabulary's {n} entries"
                ))
            })?;
            if slot.replace(token.as_str()).is_some() {
                return Err(bad(format!("token id {id} is given twice")));
            }
        }
        let added_texts: std::collections::HashSet<&str> = file
            .added_tokens
            .iter()
            .map(|t| t.content.as_str())
            .collect();
        let mut tokens = Vec::with_capacity(n);
        for (id, token) in by_id.iter().enumerate() {
            let token = token.ok_or_else(|| bad(format!("token id {id} is missing")))?;
            tokens.push(match &decoder {
                Some(decoder) => match token.chars().map(|c| decoder.get(&c).copied()).collect() {
                    Some(bytes) => bytes,
                    // An added token kept in the vocabulary (DeepSeek's `<｜begin▁of▁sentence｜>`):
                    // found in the text by `added`, never by merging; its text stands for it.
                    None if added_texts.contains(token) => token.as_bytes().to_vec(),
                    None => return Err(bad(format!("token {token:?} is not byte-level"))),
                },
                None => token.as_bytes().to_vec(),
            });
        }

        // The merges, as (left id, right id, merged id).
        let vocab = &model.vocab;
        let mut merges = Vec::with_capacity(model.merges.len());
        for (i, entry) in model.merges.iter().enumerate() {
            let (a, b) = match entry {
                MergeEntry::Joined(s) => s
                    .split_once(' ')
                    .ok_or_else(|| bad(format!("merge {i} ({s:?}) is not \"a b\"")))?,
                MergeEntry::Pair(a, b) => (a.as_str(), b.as_str()),
            };
            let id = |t: &str| {
                vocab
                    .get(t)
                    .copied()
                    .ok_or_else(|| bad(format!("merge {i} names {t:?}, not in the vocabulary")))
            };
            merges.push((id(a)?, id(b)?, id(&format!("{a}{b}"))?));
        }

        // Added tokens: matched on the raw text (normalized ones too when the normalizer leaves
        // them as they are).
        let mut added = Vec::with_capacity(file.added_tokens.len());
        for token in file.added_tokens {
            if token.lstrip || token.rstrip || token.single_word {
                return Err(bad(format!(
                    "added token {:?}: lstrip / rstrip / single_word are not supported",
                    token.content
                )));
            }
            if token.normalized && normalizer != Normalizer::None {
                return Err(bad(format!(
                    "added token {:?} is matched after normalization, which is not supported",
                    token.content
                )));
            }
            if !token.content.is_empty() {
                added.push(token.content);
            }
        }
        Ok(Spec {
            pre,
            normalizer,
            byte_level,
            tokens,
            merges: Some(merges),
            byte_fallback: model.byte_fallback,
            unk: model.unk_token.map(String::into_bytes),
            fuse_unk: model.fuse_unk,
            ignore_merges: model.ignore_merges,
            added,
        })
    }

    /// Mistral's tekken (`tekken_*.json` from mistral-common): tiktoken's BPE on its first
    /// `default_vocab_size - default_num_special_tokens` ranks, its own pattern, no special tokens
    /// in text (as `Tekkenizer.encode`).
    fn from_tekken(name: &str, json: &str) -> Result<Self, Error> {
        use base64::Engine;
        let bad = |reason: String| Error::InvalidRankData {
            encoding: name.to_owned(),
            reason,
        };
        let file: Tekken = serde_json::from_str(json)
            .map_err(|e| bad(format!("neither tokenizer.json nor tekken.json: {e}")))?;
        if file.config.pattern != TEKKEN_PATTERN {
            return Err(bad(format!(
                "tekken pattern not supported: {:?}",
                file.config.pattern
            )));
        }
        let n = file
            .config
            .default_vocab_size
            .checked_sub(file.config.default_num_special_tokens)
            .filter(|&n| n <= file.vocab.len())
            .ok_or_else(|| bad("vocabulary sizes do not add up".into()))?;
        let mut tokens = Vec::with_capacity(n);
        for (i, token) in file.vocab[..n].iter().enumerate() {
            if token.rank != i {
                return Err(bad(format!("vocab entry {i} has rank {}", token.rank)));
            }
            tokens.push(
                base64::engine::general_purpose::STANDARD
                    .decode(&token.token_bytes)
                    .map_err(|e| bad(format!("rank {i}: {e}")))?,
            );
        }
        Ok(Spec {
            pre: Pre::Tekken,
            normalizer: Normalizer::None,
            byte_level: true,
            tokens,
            merges: None,
            byte_fallback: false,
            unk: None,
            fuse_unk: false,
            ignore_merges: true,
            added: Vec::new(),
        })
    }
}

impl HfTokenizer {
    /// Builds the tokenizer `name` from the text of a `tokenizer.json`. What the file holds that
    /// this crate cannot count exactly is an `invalid_rank_data` error that says what.
    pub fn from_json(name: &str, json: &str) -> Result<Self, Error> {
        Self::from_spec(name, Spec::from_json(name, json)?)
    }

    /// Builds the tokenizer `name` from its compact prebuilt data (see [`super::prebuilt`]):
    /// the same tokenizer as from the `tokenizer.json` it was made from. Damaged data, or data
    /// made for another name, is an `invalid_rank_data` error that says what.
    pub fn from_prebuilt(name: &str, data: &[u8]) -> Result<Self, Error> {
        Self::from_spec(name, super::prebuilt::read(name, data)?)
    }

    /// The tokenizer a [`Spec`] describes. When merges are given and they are tiktoken's ranks
    /// (every two-token split of a token is a merge, in token-id order, `ignore_merges` —
    /// Llama 3), counting takes [`Bpe::count`]; otherwise each pair merges by its priority.
    pub(crate) fn from_spec(name: &str, spec: Spec) -> Result<Self, Error> {
        let bad = |reason: String| Error::InvalidRankData {
            encoding: name.to_owned(),
            reason,
        };
        if spec.normalizer == Normalizer::Nfc && !cfg!(feature = "nfc") && HOST_NFC.get().is_none()
        {
            return Err(bad(
                "the NFC normalizer needs the `nfc` feature or `set_nfc`".into(),
            ));
        }
        let mut data = Vec::new();
        let mut offsets = Vec::with_capacity(spec.tokens.len() + 1);
        offsets.push(0u32);
        for token in &spec.tokens {
            data.extend_from_slice(token);
            offsets
                .push(u32::try_from(data.len()).map_err(|_| bad("vocabulary too large".into()))?);
        }
        let bpe = Bpe::build(
            name.to_owned().into(),
            data.into(),
            offsets,
            spec.pre.piece_end(),
        )
        .map_err(bad)?;
        let merging = match &spec.merges {
            None => Merging::Ranks,
            Some(merges) if spec.is_ranks(&bpe, merges) => Merging::Ranks,
            Some(merges) => {
                let n = spec.tokens.len() as u32;
                let mut table = HashMap::with_capacity(merges.len());
                for (priority, &(a, b, merged)) in merges.iter().enumerate() {
                    if a >= n || b >= n || merged >= n {
                        return Err(bad(format!("merge {priority} names a token id past {n}")));
                    }
                    // A pair listed twice keeps its last listing, as `tokenizers`' map does.
                    table.insert(pair_key(a, b), (priority as u32, merged));
                }
                let mut byte_tokens = [NONE; 256];
                if spec.byte_level {
                    for (b, slot) in byte_tokens.iter_mut().enumerate() {
                        *slot = bpe
                            .token_rank(&[b as u8])
                            .ok_or_else(|| bad(format!("byte 0x{b:02x} has no token")))?;
                    }
                } else if spec.byte_fallback {
                    for (b, slot) in byte_tokens.iter_mut().enumerate() {
                        *slot = bpe
                            .token_rank(format!("<0x{b:02X}>").as_bytes())
                            .unwrap_or(NONE);
                    }
                }
                Merging::Pairs {
                    merges: table,
                    chars: !spec.byte_level,
                    byte_tokens,
                    unk: spec.unk.as_deref().and_then(|u| bpe.token_rank(u)),
                    fuse_unk: spec.fuse_unk,
                    ignore_merges: spec.ignore_merges,
                    cache: Mutex::new(PieceCache::default()),
                }
            }
        };
        if matches!(merging, Merging::Ranks) {
            if let Some(b) = (0..=255u8).find(|&b| bpe.token_rank(&[b]).is_none()) {
                return Err(bad(format!("byte 0x{b:02x} has no token")));
            }
        }
        let patterns: Vec<&str> = spec.added.iter().map(String::as_str).collect();
        let added = (!patterns.is_empty()).then(|| Literals::new(&patterns));
        Ok(HfTokenizer {
            bpe,
            merging,
            normalizer: spec.normalizer,
            added,
            kind: spec.pre.kind(),
        })
    }

    /// Whether the merges are the ranks the prebuilt data can leave out (see
    /// [`HfTokenizer::from_spec`]).
    pub(crate) fn counts_by_ranks(&self) -> bool {
        matches!(self.merging, Merging::Ranks)
    }

    /// The tokenizer's name (as loaded).
    pub fn name(&self) -> &str {
        self.bpe.name()
    }

    /// What kind of tokenizer the file describes (`"byte-level BPE, Llama 3 pattern"`, ...).
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Number of vocabulary tokens (added tokens not in the vocabulary excluded).
    pub fn len(&self) -> usize {
        self.bpe.len()
    }

    /// Whether the vocabulary is empty (never for a loaded tokenizer).
    pub fn is_empty(&self) -> bool {
        self.bpe.is_empty()
    }

    /// Exact number of tokens of `text`, as `tokenizers`' `encode(text,
    /// add_special_tokens=False)`: added tokens in the text count one each.
    pub fn count(&self, text: &str) -> usize {
        let Some(added) = &self.added else {
            return self.count_text(text);
        };
        let (mut total, mut at) = (0, 0);
        while let Some((start, end)) = added.find(text.as_bytes(), at) {
            total += self.count_text(&text[at..start]) + 1;
            at = end;
        }
        total + self.count_text(&text[at..])
    }

    /// Tokens of text that holds no added token.
    fn count_text(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let text: Cow<str> = match self.normalizer {
            Normalizer::None => text.into(),
            Normalizer::Nfc => nfc(text),
            Normalizer::Metaspace => text.replace(' ', "\u{2581}").into(),
        };
        match &self.merging {
            Merging::Ranks => self.bpe.count(&text),
            Merging::Pairs {
                ignore_merges,
                cache,
                ..
            } => {
                let piece_end = self.bpe.piece_end();
                let s = text.as_bytes();
                let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
                let (mut i, mut total) = (0, 0);
                while i < s.len() {
                    let end = piece_end(s, i);
                    let piece = &s[i..end];
                    i = end;
                    if *ignore_merges && self.bpe.token_rank(piece).is_some() {
                        total += 1;
                        continue;
                    }
                    total += cache.count(piece, || hash(piece), |p| self.merge_count(p));
                }
                total
            }
        }
    }

    /// The symbols a piece starts as: bytes (byte-level) or characters (SentencePiece), a
    /// character the vocabulary lacks as its `<0xNN>` byte tokens (byte fallback) or `<unk>`.
    fn symbols(&self, piece: &[u8]) -> Vec<u32> {
        let Merging::Pairs {
            chars,
            byte_tokens,
            unk,
            fuse_unk,
            ..
        } = &self.merging
        else {
            unreachable!("symbols() is for pair merging")
        };
        if !chars {
            return piece.iter().map(|&b| byte_tokens[b as usize]).collect();
        }
        let text = std::str::from_utf8(piece).expect("pieces of a &str");
        let mut out = Vec::with_capacity(piece.len());
        for (at, c) in text.char_indices() {
            let bytes = &piece[at..at + c.len_utf8()];
            if let Some(id) = self.bpe.token_rank(bytes) {
                out.push(id);
            } else if bytes.iter().all(|&b| byte_tokens[b as usize] != NONE) {
                out.extend(bytes.iter().map(|&b| byte_tokens[b as usize]));
            } else {
                let id = unk.unwrap_or(NONE);
                if !(*fuse_unk && out.last() == Some(&id)) {
                    out.push(id);
                }
            }
        }
        out
    }

    /// Number of tokens a piece merges into: the listed pair with the lowest priority first,
    /// the leftmost on a tie, until no listed pair is adjacent (`tokenizers`' `merge_all`).
    fn merge_count(&self, piece: &[u8]) -> usize {
        let Merging::Pairs { merges, .. } = &self.merging else {
            unreachable!("merge_count() is for pair merging")
        };
        let mut ids = self.symbols(piece);
        let n = ids.len();
        if n < 2 {
            return n;
        }
        let pair = |a: u32, b: u32| merges.get(&pair_key(a, b)).copied();
        let mut next: Vec<u32> = (1..=n as u32).collect();
        let mut prev: Vec<u32> = (0..n as u32).map(|i| i.wrapping_sub(1)).collect();
        let mut gone = vec![false; n];
        let mut heap = BinaryHeap::with_capacity(n);
        for i in 0..n - 1 {
            if let Some((priority, merged)) = pair(ids[i], ids[i + 1]) {
                heap.push(Reverse((priority, i as u32, merged)));
            }
        }
        let mut alive = n;
        while let Some(Reverse((priority, pos, merged))) = heap.pop() {
            let pos = pos as usize;
            if gone[pos] || next[pos] as usize >= n {
                continue;
            }
            let right = next[pos] as usize;
            if pair(ids[pos], ids[right]) != Some((priority, merged)) {
                continue; // a neighbour changed since this merge was queued
            }
            ids[pos] = merged;
            gone[right] = true;
            next[pos] = next[right];
            if (next[pos] as usize) < n {
                prev[next[pos] as usize] = pos as u32;
            }
            alive -= 1;
            if pos > 0 {
                let left = prev[pos] as usize;
                if let Some((p, m)) = pair(ids[left], ids[pos]) {
                    heap.push(Reverse((p, left as u32, m)));
                }
            }
            if (next[pos] as usize) < n {
                if let Some((p, m)) = pair(ids[pos], ids[next[pos] as usize]) {
                    heap.push(Reverse((p, pos as u32, m)));
                }
            }
        }
        alive
    }
}

impl Spec {
    /// tiktoken's rule holds when every merge's result comes in id order, every two-token split
    /// of every token is a merge (then "merge the adjacent pair whose concatenation has the
    /// lowest rank" is the file's rule), a piece that is a token is that token
    /// (`ignore_merges`), and every byte is a token.
    fn is_ranks(&self, bpe: &Bpe, merges: &[(u32, u32, u32)]) -> bool {
        self.byte_level
            && self.ignore_merges
            && merges.windows(2).all(|w| w[0].2 <= w[1].2)
            && (0..=255u8).all(|b| bpe.token_rank(&[b]).is_some())
            && {
                let mut splits = 0usize;
                for token in &self.tokens {
                    for k in 1..token.len() {
                        if bpe.token_rank(&token[..k]).is_some()
                            && bpe.token_rank(&token[k..]).is_some()
                        {
                            splits += 1;
                        }
                    }
                }
                splits == merges.len()
            }
    }
}

#[inline]
fn pair_key(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

/// The host's NFC (the wasm build, which leaves out the `nfc` feature's tables).
static HOST_NFC: std::sync::OnceLock<fn(&str) -> String> = std::sync::OnceLock::new();

/// Supplies NFC normalization to a build without the `nfc` feature (the wasm binding passes
/// the host's `String.prototype.normalize('NFC')`). The first one given stays.
pub fn set_nfc(normalize: fn(&str) -> String) {
    let _ = HOST_NFC.set(normalize);
}

/// `text` in NFC. Text below U+0300 is NFC already (no character there decomposes, and none
/// composes with another below U+0300), so most text is returned as it is without a lookup.
fn nfc(text: &str) -> Cow<'_, str> {
    if text.chars().all(|c| (c as u32) < 0x300) {
        return text.into();
    }
    #[cfg(feature = "nfc")]
    {
        use unicode_normalization::UnicodeNormalization;
        if unicode_normalization::is_nfc_quick(text.chars())
            == unicode_normalization::IsNormalized::Yes
        {
            return text.into();
        }
        text.nfc().collect::<String>().into()
    }
    #[cfg(not(feature = "nfc"))]
    match HOST_NFC.get() {
        Some(normalize) => normalize(text).into(),
        // Unreachable: a tokenizer with the NFC normalizer is refused at load without one.
        None => text.into(),
    }
}

/// Literal strings (the added tokens) as a byte trie, found leftmost-longest: the earliest
/// start where one matches, the longest one there (what `tokenizers` asks of aho-corasick).
/// Hand-written because that crate added 42 kB gzipped to the wasm core; each start costs at
/// most the longest literal's length, so finding is linear in the text.
struct Literals {
    /// Whether a literal starts with this byte.
    first: [bool; 256],
    /// Each node: its children (byte, node) sorted by byte, and whether a literal ends there.
    nodes: Vec<(Vec<(u8, u32)>, bool)>,
}

impl Literals {
    fn new(literals: &[&str]) -> Self {
        let mut this = Literals {
            first: [false; 256],
            nodes: vec![(Vec::new(), false)],
        };
        for literal in literals {
            let mut node = 0;
            for &b in literal.as_bytes() {
                node = match this.nodes[node].0.binary_search_by_key(&b, |&(c, _)| c) {
                    Ok(i) => this.nodes[node].0[i].1 as usize,
                    Err(i) => {
                        let child = this.nodes.len();
                        this.nodes.push((Vec::new(), false));
                        this.nodes[node].0.insert(i, (b, child as u32));
                        child
                    }
                };
            }
            this.nodes[node].1 = true;
            this.first[literal.as_bytes()[0] as usize] = true;
        }
        this
    }

    /// The next match at or after `from`: (start, end).
    fn find(&self, s: &[u8], from: usize) -> Option<(usize, usize)> {
        (from..s.len())
            .filter(|&i| self.first[s[i] as usize])
            .find_map(|i| self.longest_at(s, i).map(|end| (i, end)))
    }

    fn longest_at(&self, s: &[u8], i: usize) -> Option<usize> {
        let (mut node, mut longest) = (0, None);
        for (j, &b) in s[i..].iter().enumerate() {
            match self.nodes[node].0.binary_search_by_key(&b, |&(c, _)| c) {
                Ok(k) => node = self.nodes[node].0[k].1 as usize,
                Err(_) => break,
            }
            if self.nodes[node].1 {
                longest = Some(i + j + 1);
            }
        }
        longest
    }
}

static LOADED: Mutex<Vec<&'static HfTokenizer>> = Mutex::new(Vec::new());

/// Builds the tokenizer `name` from a `tokenizer.json` and keeps it for [`get`] (for the life of
/// the program). Loading a name that is already loaded keeps the first.
pub fn load(name: &str, json: &str) -> Result<&'static HfTokenizer, Error> {
    keep(name, || HfTokenizer::from_json(name, json))
}

/// Builds the tokenizer `name` from its prebuilt data ([`super::prebuilt`]) and keeps it for
/// [`get`], as [`load`] does.
pub fn load_prebuilt(name: &str, data: &[u8]) -> Result<&'static HfTokenizer, Error> {
    keep(name, || HfTokenizer::from_prebuilt(name, data))
}

fn keep(
    name: &str,
    build: impl FnOnce() -> Result<HfTokenizer, Error>,
) -> Result<&'static HfTokenizer, Error> {
    if let Some(t) = get(name) {
        return Ok(t);
    }
    let tokenizer = build()?;
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = loaded.iter().find(|t| t.name() == name) {
        return Ok(t);
    }
    let t: &'static HfTokenizer = Box::leak(Box::new(tokenizer));
    loaded.push(t);
    Ok(t)
}

/// The tokenizer loaded under `name`, if any.
pub fn get(name: &str) -> Option<&'static HfTokenizer> {
    let loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    loaded.iter().find(|t| t.name() == name).copied()
}
