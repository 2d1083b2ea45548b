//! Exact byte-pair encoding for OpenAI's `o200k_base` and `cl100k_base`, written for counting.
//!
//! Why our own and not tiktoken-rs (which stays in the tests as the reference): tiktoken-rs
//! parses base64 rank text and compiles a backtracking regex at start-up (~0.4 s in wasm), and
//! embeds both encodings as text (~3 MB gzipped). Here:
//! - ranks come as a compact binary (each token the pair of lower-ranked tokens BPE merged into
//!   it; see [`RankData`]), so loading is one pass that copies bytes and fills a hash table;
//! - the pre-tokenizer is hand-written ([`pretokenize`]), linear, and checked against the
//!   official regexes on millions of strings;
//! - counting allocates nothing for pieces that are one token (most of them) and caches the
//!   counts of the others;
//! - merges follow tiktoken exactly: the lowest-ranked adjacent pair first, the leftmost on a
//!   tie; the quadratic scan for short pieces and a heap for long ones, so no input is
//!   superlinear.

pub mod pretokenize;
pub mod unicode;
mod unicode_table;
mod vocab;

use std::borrow::Cow;
use std::collections::BinaryHeap;
use std::sync::{Mutex, OnceLock};

use hashbrown::HashTable;

use crate::counting::Encoding;
use crate::error::Error;
use vocab::Vocab;

use vocab::Rank;
const NONE: Rank = Rank::MAX;
/// Pieces shorter than this merge with tiktoken's quadratic scan (fast for short pieces); longer
/// ones use the heap (tiktoken uses the same cut).
const SMALL_PIECE: usize = 100;
/// The multi-token piece cache is dropped whole past this many entries or once its pieces hold
/// `PIECE_CACHE_BYTES`, and holds no piece longer than `CACHED_PIECE_BYTES` (bounded memory:
/// at most ~12 MB with the table).
const PIECE_CACHE_LIMIT: usize = 100_000;
const PIECE_CACHE_BYTES: usize = 8 << 20;
const CACHED_PIECE_BYTES: usize = 4096;

/// XXH3-64 of `bytes` (the hash of every token and piece lookup). Inputs up to 16 bytes, most
/// tokens and pieces, take XXH3's own short-input path written out here (seed 0, its default
/// secret), the rest `xxhash_rust`'s: the wasm build is optimized for size (opt-level "s", see
/// scripts/build.sh), where LLVM no longer inlines `xxh3_64` (1.1 kB with its long-input paths)
/// and a call per lookup made loading o200k and counting measurably slower.
/// `short_inputs_hash_as_xxh3` checks every length against the crate.
#[inline(always)]
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    if bytes.len() > 16 {
        return xxhash_rust::xxh3::xxh3_64(bytes);
    }
    let len = bytes.len() as u64;
    let u32_at = |i: usize| u64::from(u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()));
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    match bytes.len() {
        9.. => {
            let lo = u64_at(0) ^ xxh3::FLIP_9TO16.0;
            let hi = u64_at(bytes.len() - 8) ^ xxh3::FLIP_9TO16.1;
            let product = u128::from(lo) * u128::from(hi);
            let acc = len
                .wrapping_add(lo.swap_bytes())
                .wrapping_add(hi)
                .wrapping_add(product as u64 ^ (product >> 64) as u64);
            xxh3::avalanche(acc)
        }
        4.. => {
            let keyed = (u32_at(bytes.len() - 4) + (u32_at(0) << 32)) ^ xxh3::FLIP_4TO8;
            xxh3::strong_avalanche(keyed, len)
        }
        1.. => {
            let (first, middle, last) = (bytes[0], bytes[bytes.len() / 2], bytes[bytes.len() - 1]);
            let combo = u32::from(first) << 16
                | u32::from(middle) << 24
                | u32::from(last)
                | (bytes.len() as u32) << 8;
            xxh3::avalanche_xxh64(u64::from(combo) ^ xxh3::FLIP_1TO3)
        }
        0 => xxh3::avalanche_xxh64(xxh3::FLIP_0),
    }
}

/// XXH3's constants and mixers for inputs up to 16 bytes (xxhash_rust 0.8, `xxh3.rs` and
/// `xxh3_common.rs`; the reference is Yann Collet's xxHash).
mod xxh3 {
    /// The first 72 bytes of XXH3's default secret, all that inputs up to 16 bytes read.
    const SECRET: [u8; 72] = [
        0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad,
        0x1c, 0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3,
        0x67, 0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc,
        0xff, 0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6,
        0x81, 0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb,
    ];

    const fn u32_at(i: usize) -> u64 {
        u32::from_le_bytes([SECRET[i], SECRET[i + 1], SECRET[i + 2], SECRET[i + 3]]) as u64
    }

    const fn u64_at(i: usize) -> u64 {
        u32_at(i) | u32_at(i + 4) << 32
    }

    pub(super) const FLIP_0: u64 = u64_at(56) ^ u64_at(64);
    pub(super) const FLIP_1TO3: u64 = u32_at(0) ^ u32_at(4);
    pub(super) const FLIP_4TO8: u64 = u64_at(8) ^ u64_at(16);
    pub(super) const FLIP_9TO16: (u64, u64) = (u64_at(24) ^ u64_at(32), u64_at(40) ^ u64_at(48));

    #[inline(always)]
    pub(super) fn avalanche(mut v: u64) -> u64 {
        v ^= v >> 37;
        v = v.wrapping_mul(0x1656_6791_9E37_79F9);
        v ^ v >> 32
    }

    #[inline(always)]
    pub(super) fn strong_avalanche(mut v: u64, len: u64) -> u64 {
        v ^= v.rotate_left(49) ^ v.rotate_left(24);
        v = v.wrapping_mul(0x9FB2_1C65_1E98_DF25);
        v ^= (v >> 35).wrapping_add(len);
        v = v.wrapping_mul(0x9FB2_1C65_1E98_DF25);
        v ^ v >> 28
    }

    #[inline(always)]
    pub(super) fn avalanche_xxh64(mut v: u64) -> u64 {
        v ^= v >> 33;
        v = v.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        v ^= v >> 29;
        v = v.wrapping_mul(0x1656_67B1_9E37_79F9);
        v ^ v >> 32
    }
}

/// Counts of multi-token pieces merged before, keyed by the piece's bytes: pieces up to
/// `CACHED_PIECE_BYTES`, at most `PIECE_CACHE_LIMIT` of them (then it starts again). Every BPE
/// here counts through one (the tiktoken encodings and the Hugging Face pair-merging ones).
#[derive(Default)]
pub(crate) struct PieceCache {
    table: HashTable<(Box<[u8]>, u32)>,
    /// Bytes of the pieces held.
    bytes: usize,
}

impl PieceCache {
    /// The count of `piece` (hashed as `h`): remembered, or `merge`d and remembered. A piece
    /// longer than `CACHED_PIECE_BYTES` is merged every time.
    #[inline]
    pub(crate) fn count(
        &mut self,
        piece: &[u8],
        h: impl FnOnce() -> u64,
        merge: impl FnOnce(&[u8]) -> usize,
    ) -> usize {
        if piece.len() > CACHED_PIECE_BYTES {
            return merge(piece);
        }
        let h = h();
        if let Some((_, n)) = self.table.find(h, |(k, _)| &**k == piece) {
            return *n as usize;
        }
        let n = merge(piece);
        if self.table.len() >= PIECE_CACHE_LIMIT || self.bytes + piece.len() > PIECE_CACHE_BYTES {
            self.table.clear();
            self.bytes = 0;
        }
        self.bytes += piece.len();
        self.table
            .insert_unique(h, (piece.into(), n as u32), |(k, _)| hash(k));
        n
    }
}

/// The rank file formats (`data/*.ranks`, also shipped to JS).
///
/// Version 4, `"CCR4"` (what `data/*.ranks` hold): name length (u8), name (UTF-8), token count
/// (u32 LE), base name length (u8; 0: no base) and base name, then one tag byte per token in
/// rank order, then three streams of numbers, then the literals:
/// - tag 1, a *pair*: the token is the concatenation of two tokens of lower rank (BPE made
///   every token of rank ≥ 256 by merging two earlier ones), their ranks in the `left` and
///   `right` streams;
/// - tag 2, a *base token*: the token is the base encoding's token of the rank in the `base`
///   stream (cl100k names o200k: 85,033 of its 100,256 tokens are o200k tokens);
/// - tag 0, a *literal*: its length (u8) and bytes, in the literal stream (the 256 byte tokens).
///
/// Streams in order: `base` (one number per tag 2), `left`, `right` (one per tag 1). Each is
/// coded for gzip, which the npm package's files travel through: a number `x` is `v = x + 1`
/// written as one *symbol byte* (the bit length of `v` and the up to `TOP_BITS` bits below
/// its leading one, see `symbol`) and the rest of `v`'s bits; a stream is its symbol bytes,
/// then the length (u32 LE) and bytes of its other bits, packed most significant first. gzip's
/// Huffman codes the symbol bytes near their entropy and has nothing to gain on the other bits
/// (o200k: 719 kB gzipped as version 3, 678 kB as version 4; see `data/README.md`). Numbers are
/// below 2^19 - 1.
///
/// Version 3, `"CCR3"` (still read): as version 4, with each stream as three byte planes of
/// 24-bit numbers (all low bytes, then all middle bytes, then all high bytes).
///
/// Decoding is one pass in rank order that copies bytes already decoded.
///
/// Version 1, `"CCR1"` (still read): name length, name, token count, one length byte per
/// token, then every token's bytes in rank order.
pub struct RankData;

/// A token as versions 3 and 4 store it.
#[derive(Clone, Copy)]
enum Stored {
    Literal,
    Pair(u32, u32),
    Base(u32),
}

impl RankData {
    /// The first four bytes of a rank file (version 4, what [`RankData::write`] writes).
    pub const MAGIC: &'static [u8; 4] = b"CCR4";

    /// The first four bytes of a version 3 rank file (read, no longer written).
    pub const MAGIC_V3: &'static [u8; 4] = b"CCR3";

    /// The first four bytes of a version 1 rank file (read, no longer written).
    pub const MAGIC_V1: &'static [u8; 4] = b"CCR1";

    /// Serializes tokens (index = rank) to version 4: every token of two bytes or more that is
    /// two lower-ranked tokens end to end is stored as that pair.
    pub fn write(name: &str, tokens: &[Vec<u8>]) -> Vec<u8> {
        Self::write_v4(name, tokens, None)
    }

    /// Serializes tokens (index = rank) to version 4, by reference to `base`'s tokens (named
    /// `base_name`): tokens `base` has are stored as its ranks, the others as pairs or literals.
    pub fn write_referenced(
        name: &str,
        tokens: &[Vec<u8>],
        base_name: &str,
        base: &[Vec<u8>],
    ) -> Vec<u8> {
        Self::write_v4(name, tokens, Some((base_name, base)))
    }

    fn write_v4(name: &str, tokens: &[Vec<u8>], base: Option<(&str, &[Vec<u8>])>) -> Vec<u8> {
        use std::collections::HashMap;
        let index = |tokens: &'_ [Vec<u8>]| -> HashMap<Vec<u8>, u32> {
            tokens
                .iter()
                .enumerate()
                .map(|(r, t)| (t.clone(), r as u32))
                .collect()
        };
        let own = index(tokens);
        let base_index = base.map(|(_, b)| index(b)).unwrap_or_default();
        // Every way to store each token; a token of rank r can be a pair of ranks below r.
        let choices: Vec<Vec<Stored>> = tokens
            .iter()
            .enumerate()
            .map(|(r, t)| {
                assert!(!t.is_empty() && t.len() < 256, "token length {}", t.len());
                if let Some(&b) = base_index.get(t) {
                    return vec![Stored::Base(b)];
                }
                let below = |bytes: &[u8]| own.get(bytes).copied().filter(|&x| (x as usize) < r);
                let pairs: Vec<Stored> = (1..t.len())
                    .filter_map(|k| Some(Stored::Pair(below(&t[..k])?, below(&t[k..])?)))
                    .collect();
                if pairs.is_empty() {
                    vec![Stored::Literal]
                } else {
                    pairs
                }
            })
            .collect();
        // Among a token's pairs (1.9 on average in o200k), pick the one that costs the fewest
        // bits as stored: its parts' symbols at the frequencies the other tokens' picks give
        // them, plus the bits outside the symbols. A few rounds of that, from the longest left
        // part, lower o200k from 682 to 678 kB gzipped (`bench/tokenizers/rank-formats.mjs`; the
        // pick by how often the parts are used, best for version 3, gives 682).
        let mut pick: Vec<Stored> = choices.iter().map(|c| c[c.len() - 1]).collect();
        for _ in 0..6 {
            let (mut left, mut right, mut pairs) = ([0u32; 256], [0u32; 256], 0u32);
            for s in &pick {
                if let Stored::Pair(a, b) = *s {
                    left[symbol(a + 1).0.min(255) as usize] += 1;
                    right[symbol(b + 1).0.min(255) as usize] += 1;
                    pairs += 1;
                }
            }
            let bits = |freq: &[u32; 256], x: u32| {
                let (sym, rest) = symbol(x + 1);
                let p = (f64::from(freq[sym.min(255) as usize]) + 0.5) / f64::from(pairs);
                f64::from(rest) - p.log2()
            };
            let cost = |s: &Stored| match *s {
                Stored::Pair(a, b) => bits(&left, a) + bits(&right, b),
                _ => 0.0,
            };
            for (p, c) in pick.iter_mut().zip(&choices) {
                let mut best = c[0];
                for s in &c[1..] {
                    if cost(s) < cost(&best) {
                        best = *s;
                    }
                }
                *p = best;
            }
        }
        let mut out = Vec::new();
        out.extend_from_slice(Self::MAGIC);
        out.push(name.len() as u8);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
        let base_name = base.map_or("", |(n, _)| n);
        out.push(base_name.len() as u8);
        out.extend_from_slice(base_name.as_bytes());
        out.extend(pick.iter().map(|s| match s {
            Stored::Literal => 0u8,
            Stored::Pair(..) => 1,
            Stored::Base(_) => 2,
        }));
        let stream = |f: &dyn Fn(&Stored) -> Option<u32>| -> Vec<u32> {
            pick.iter().filter_map(f).collect()
        };
        let streams = [
            stream(&|s| {
                if let Stored::Base(b) = *s {
                    Some(b)
                } else {
                    None
                }
            }),
            stream(&|s| {
                if let Stored::Pair(a, _) = *s {
                    Some(a)
                } else {
                    None
                }
            }),
            stream(&|s| {
                if let Stored::Pair(_, b) = *s {
                    Some(b)
                } else {
                    None
                }
            }),
        ];
        for values in &streams {
            write_numbers(values, &mut out);
        }
        for (s, t) in pick.iter().zip(tokens) {
            if let Stored::Literal = s {
                out.push(t.len() as u8);
                out.extend_from_slice(t);
            }
        }
        out
    }

    /// The header both versions share after the magic: the name (which must be `encoding`'s)
    /// and the token count. Returns the count and where the rest starts.
    fn header(encoding: Encoding, data: &[u8]) -> Result<(usize, usize), Error> {
        let bad = |reason: String| Error::InvalidRankData {
            encoding: encoding.as_str().to_owned(),
            reason,
        };
        let truncated = || bad("truncated header".into());
        let name_len = *data.get(4).ok_or_else(truncated)? as usize;
        let name = data.get(5..5 + name_len).ok_or_else(truncated)?;
        if name != encoding.as_str().as_bytes() {
            return Err(bad(format!(
                "the file is for \"{}\"",
                String::from_utf8_lossy(name)
            )));
        }
        let at = 5 + name_len;
        let count = data
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(truncated)?;
        Ok((count, at + 4))
    }

    /// Version 1: the token offsets into `data` itself (its bytes are the tokens end to end).
    fn offsets_v1(encoding: Encoding, data: &[u8]) -> Result<Vec<u32>, Error> {
        let bad = |reason: String| Error::InvalidRankData {
            encoding: encoding.as_str().to_owned(),
            reason,
        };
        let (count, at) = Self::header(encoding, data)?;
        let lengths = data
            .get(at..at + count)
            .ok_or_else(|| bad(format!("truncated: {count} token lengths expected")))?;
        let body = at + count;
        let total: usize = lengths.iter().map(|&l| l as usize).sum();
        if data.len() != body + total {
            return Err(bad(format!(
                "{} bytes of tokens, the lengths say {total}",
                data.len() - body
            )));
        }
        let mut offsets = Vec::with_capacity(count + 1);
        let mut offset = body as u32;
        offsets.push(offset);
        for &len in lengths {
            offset += len as u32;
            offsets.push(offset);
        }
        Ok(offsets)
    }

    /// Version 4 or 3 (`coded`: 4) decoded, in one pass: the tokens end to end and their
    /// offsets. A base encoding it names is loaded first (`get`).
    fn decode(encoding: Encoding, data: &[u8], coded: bool) -> Result<(Vec<u8>, Vec<u32>), Error> {
        let bad = |reason: String| Error::InvalidRankData {
            encoding: encoding.as_str().to_owned(),
            reason,
        };
        let truncated = |what: &str| bad(format!("truncated {what}"));
        let (count, mut at) = Self::header(encoding, data)?;
        let base_len = *data.get(at).ok_or_else(|| truncated("header"))? as usize;
        let base_name = data
            .get(at + 1..at + 1 + base_len)
            .ok_or_else(|| truncated("header"))?;
        at += 1 + base_len;
        let base = match base_len {
            0 => None,
            _ => {
                let base: Encoding = std::str::from_utf8(base_name)
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| bad("names an unknown base encoding".into()))?;
                if base == encoding {
                    return Err(bad("refers to itself".into()));
                }
                Some(get(base)?)
            }
        };
        let tags = data.get(at..at + count).ok_or_else(|| truncated("tags"))?;
        at += count;
        let mut n = [0usize; 3];
        for (r, &tag) in tags.iter().enumerate() {
            *n.get_mut(tag as usize)
                .ok_or_else(|| bad(format!("token {r}: unknown tag {tag}")))? += 1;
        }
        let mut stream = |len: usize, what: &str| {
            let numbers = if coded {
                Numbers::coded(data, &mut at, len)
            } else {
                Numbers::planes(data, &mut at, len)
            };
            numbers.ok_or_else(|| truncated(what))
        };
        let streams = [
            stream(n[2], "base ranks")?,
            stream(n[1], "pair ranks")?,
            stream(n[1], "pair ranks")?,
        ];
        let mut decoder = Decoder {
            streams,
            base,
            literals: &data[at..],
            body: vec![0u8; count * 8 + 264],
            end: 0,
            offsets: Vec::with_capacity(count + 1),
        };
        decoder.offsets.push(0u32);
        for (r, &tag) in tags.iter().enumerate() {
            decoder.token(r, tag).map_err(bad)?;
        }
        let Decoder {
            mut body,
            end,
            offsets,
            literals,
            streams,
            ..
        } = decoder;
        if let Some(rest) = streams.iter().map(Numbers::left_over).find(|&b| b > 0) {
            return Err(bad(format!("{rest} bytes past a stream's numbers")));
        }
        if !literals.is_empty() {
            return Err(bad(format!("{} bytes past the tokens", literals.len())));
        }
        body.truncate(end);
        Ok((body, offsets))
    }
}

/// How many bits of a number version 4 keeps in its symbol byte below the leading one.
const TOP_BITS: u32 = 4;

/// Version 4's symbol byte for `v` (≥ 1) of bit length `e + 1`, and how many bits of `v` stay
/// out of it. Symbols enumerate (`e`, the `min(e, TOP_BITS)` bits below the leading one)
/// densely: 1 + 2 + 4 + 8 symbols for `e` < 4, then 16 for each `e`, so `e` ≤ 19 fits a byte.
fn symbol(v: u32) -> (u32, u32) {
    let e = 31 - v.leading_zeros();
    let top = e.min(TOP_BITS);
    let rest = e - top;
    let offset = if e < TOP_BITS {
        (1 << e) - 1
    } else {
        15 + 16 * (e - TOP_BITS)
    };
    (offset + ((v >> rest) & ((1 << top) - 1)), rest)
}

/// A stream of numbers as version 4 writes it (see [`RankData`]).
fn write_numbers(values: &[u32], out: &mut Vec<u8>) {
    let (mut bits, mut acc, mut have) = (Vec::new(), 0u64, 0u32);
    for &x in values {
        let v = x + 1;
        let (sym, rest) = symbol(v);
        assert!(sym < 256, "rank {x} past version 4's numbers");
        out.push(sym as u8);
        acc = (acc << rest) | u64::from(v & ((1 << rest) - 1));
        have += rest;
        while have >= 8 {
            have -= 8;
            bits.push((acc >> have) as u8);
        }
    }
    if have > 0 {
        bits.push((acc << (8 - have)) as u8);
    }
    out.extend_from_slice(&(bits.len() as u32).to_le_bytes());
    out.extend_from_slice(&bits);
}

/// One stream of numbers, read in order: version 3's byte planes or version 4's symbols and
/// bits.
enum Numbers<'a> {
    Planes {
        planes: [&'a [u8]; 3],
        next: usize,
    },
    Coded {
        symbols: &'a [u8],
        bits: &'a [u8],
        /// The next byte of `bits` to read, and the bits read ahead (the low `have` of `acc`).
        at: usize,
        acc: u64,
        have: u32,
    },
}

impl<'a> Numbers<'a> {
    /// `len` numbers as three byte planes at `data[*at..]`; `None` when truncated.
    fn planes(data: &'a [u8], at: &mut usize, len: usize) -> Option<Self> {
        let planes = data.get(*at..*at + 3 * len)?;
        *at += 3 * len;
        Some(Numbers::Planes {
            planes: [&planes[..len], &planes[len..2 * len], &planes[2 * len..]],
            next: 0,
        })
    }

    /// `len` numbers as symbols and bits at `data[*at..]`; `None` when truncated.
    fn coded(data: &'a [u8], at: &mut usize, len: usize) -> Option<Self> {
        let symbols = data.get(*at..*at + len)?;
        let bits_len = data.get(*at + len..*at + len + 4)?;
        let bits_len = u32::from_le_bytes(bits_len.try_into().ok()?) as usize;
        let start = *at + len + 4;
        let bits = data.get(start..start.checked_add(bits_len)?)?;
        *at = start + bits_len;
        Some(Numbers::Coded {
            symbols,
            bits,
            at: 0,
            acc: 0,
            have: 0,
        })
    }

    /// The next number; `None` past the end.
    #[inline(never)]
    fn next(&mut self) -> Option<usize> {
        match self {
            Numbers::Planes { planes, next } => {
                let i = *next;
                *next += 1;
                let [lo, mid, hi] = planes;
                Some(
                    *lo.get(i)? as usize
                        | (*mid.get(i)? as usize) << 8
                        | (*hi.get(i)? as usize) << 16,
                )
            }
            Numbers::Coded {
                symbols,
                bits,
                at,
                acc,
                have,
            } => {
                let (&sym, rest_symbols) = symbols.split_first()?;
                *symbols = rest_symbols;
                let sym = u32::from(sym);
                let (e, top) = if sym < 15 {
                    let e = 31 - (sym + 1).leading_zeros();
                    (e, sym + 1 - (1 << e))
                } else {
                    (TOP_BITS + (sym - 15) / 16, (sym - 15) % 16)
                };
                let rest = e - e.min(TOP_BITS);
                while *have < rest {
                    *acc = (*acc << 8) | u64::from(*bits.get(*at)?);
                    *at += 1;
                    *have += 8;
                }
                *have -= rest;
                let low = (*acc >> *have) as u32 & ((1 << rest) - 1);
                Some((((1 << e) | (top << rest) | low) - 1) as usize)
            }
        }
    }

    /// Bytes of bits left unread once every number was read (0 in a sound file).
    fn left_over(&self) -> usize {
        match self {
            Numbers::Planes { .. } => 0,
            Numbers::Coded { bits, at, .. } => bits.len() - at,
        }
    }
}

/// Version 3 and 4's decoding state: the tokens end to end in `body[..end]`, with 256 + 8 bytes of
/// room kept past `end`, so that a pair's parts are copied 8 bytes at a time (a part is 3.5
/// bytes on average: one 8-byte move instead of a memcpy call).
struct Decoder<'a> {
    /// `base`, `left` and `right` ranks.
    streams: [Numbers<'a>; 3],
    base: Option<&'static Bpe>,
    literals: &'a [u8],
    body: Vec<u8>,
    end: usize,
    offsets: Vec<u32>,
}

impl Decoder<'_> {
    /// Appends token `r`. Not inlined on purpose: a wasm engine runs a function's first calls
    /// with its baseline compiler and swaps in optimized code for later calls, which a loop
    /// inlined into one call never gets. Measured in Node 20 (first `loadEncoding` of o200k in
    /// a fresh process, three runs each): 15–18 ms, against 20–21 ms with the loop inlined and
    /// 10–12 ms for version 1, which has nothing to decode. Same for [`Bpe::insert`].
    #[inline(never)]
    fn token(&mut self, r: usize, tag: u8) -> Result<(), String> {
        if self.body.len() < self.end + 264 {
            self.body.resize(2 * self.body.len(), 0);
        }
        let start = self.end;
        match tag {
            0 => {
                let (&len, rest) = self.literals.split_first().ok_or("truncated literals")?;
                let token = rest.get(..len as usize).ok_or("truncated literals")?;
                self.body[start..start + token.len()].copy_from_slice(token);
                self.end += token.len();
                self.literals = &rest[len as usize..];
            }
            1 => {
                for side in 1..3 {
                    let part = self.streams[side].next().ok_or("truncated pair ranks")?;
                    if part >= r {
                        return Err(format!("token {r} refers to token {part}"));
                    }
                    let from = self.offsets[part] as usize;
                    let len = self.offsets[part + 1] as usize - from;
                    if self.end - start + len > 255 {
                        return Err(format!("token {r} is longer than 255 bytes"));
                    }
                    // The part ends at or before `start`: the 8-byte moves read only finished
                    // bytes for the `len` that count, and write past `end + len` only bytes
                    // that the next copy overwrites.
                    let mut k = 0;
                    while k < len {
                        let chunk: [u8; 8] = self.body[from + k..from + k + 8].try_into().unwrap();
                        self.body[self.end + k..self.end + k + 8].copy_from_slice(&chunk);
                        k += 8;
                    }
                    self.end += len;
                }
            }
            _ => {
                let x = self.streams[0].next().ok_or("truncated base ranks")?;
                let token = self
                    .base
                    .and_then(|base| base.token(x as Rank))
                    .ok_or_else(|| format!("token {r}: no base token {x}"))?;
                if token.len() > 255 {
                    return Err(format!("token {r} is longer than 255 bytes"));
                }
                self.body[start..start + token.len()].copy_from_slice(token);
                self.end += token.len();
            }
        }
        if self.end == start {
            return Err(format!("token {r} is empty"));
        }
        self.offsets.push(self.end as u32);
        Ok(())
    }
}

/// Where the piece that starts at byte `i` of a text ends (a pre-tokenizer; see [`pretokenize`]).
pub type PieceEnd = fn(&[u8], usize) -> usize;

/// One encoding's vocabulary and pre-tokenizer.
pub struct Bpe {
    name: Cow<'static, str>,
    data: Cow<'static, [u8]>,
    /// Token `r`'s bytes are `data[offsets[r]..offsets[r + 1]]`.
    offsets: Vec<u32>,
    table: Vocab,
    byte_rank: [Rank; 256],
    piece_end: PieceEnd,
    /// Counts of pieces that are more than one token (the warm path).
    cache: Mutex<PieceCache>,
}

impl std::fmt::Debug for Bpe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bpe")
            .field("name", &self.name)
            .field("tokens", &self.len())
            .finish_non_exhaustive()
    }
}

impl Bpe {
    /// Parses rank data (see [`RankData`]) for `encoding`. Checks the header, the name and that
    /// the lengths add up; a damaged file is a typed error, never a panic.
    pub fn from_rank_data(
        encoding: Encoding,
        data: impl Into<Cow<'static, [u8]>>,
    ) -> Result<Self, Error> {
        let data = data.into();
        let bad = |reason: String| Error::InvalidRankData {
            encoding: encoding.as_str().to_owned(),
            reason,
        };
        let (data, offsets) = match data.get(..4) {
            Some(m) if m == RankData::MAGIC || m == RankData::MAGIC_V3 => {
                let (body, offsets) = RankData::decode(encoding, &data, m == RankData::MAGIC)?;
                (Cow::Owned(body), offsets)
            }
            Some(m) if m == RankData::MAGIC_V1 => {
                let offsets = RankData::offsets_v1(encoding, &data)?;
                (data, offsets)
            }
            _ => {
                return Err(bad(
                    "not a rank file (expected the \"CCR4\", \"CCR3\" or \"CCR1\" header)".into(),
                ))
            }
        };
        let piece_end = match encoding {
            Encoding::O200kBase => pretokenize::o200k_piece,
            Encoding::Cl100kBase => pretokenize::cl100k_piece,
        };
        let bpe = Self::build(encoding.as_str().into(), data, offsets, piece_end).map_err(&bad)?;
        if let Some(b) = bpe.byte_rank.iter().position(|&r| r == NONE) {
            return Err(bad(format!("byte 0x{b:02x} has no token")));
        }
        Ok(bpe)
    }

    /// The tables for tokens laid end to end in `data` (token `r` is
    /// `data[offsets[r]..offsets[r + 1]]`), split into pieces by `piece_end`. A byte without a
    /// token of its own is allowed here (SentencePiece vocabularies); [`Bpe::count`] needs them
    /// all.
    pub(crate) fn build(
        name: Cow<'static, str>,
        data: Cow<'static, [u8]>,
        offsets: Vec<u32>,
        piece_end: PieceEnd,
    ) -> Result<Self, String> {
        let count = offsets.len() - 1;
        let mut table = Vocab::with_capacity(count);
        let mut byte_rank = [NONE; 256];
        for rank in 0..count {
            Self::insert(&mut table, &mut byte_rank, &data, &offsets, rank)?;
        }
        Ok(Bpe {
            name,
            data,
            offsets,
            table,
            byte_rank,
            piece_end,
            cache: Mutex::new(PieceCache::default()),
        })
    }

    /// Adds token `rank` to the tables. Not inlined, for the wasm engine's tier-up (see
    /// `Decoder::token`).
    #[inline(never)]
    fn insert(
        table: &mut Vocab,
        byte_rank: &mut [Rank; 256],
        data: &[u8],
        offsets: &[u32],
        rank: usize,
    ) -> Result<(), String> {
        let token = |r: Rank| &data[offsets[r as usize] as usize..offsets[r as usize + 1] as usize];
        let bytes = token(rank as Rank);
        if bytes.is_empty() {
            return Err(format!("token {rank} is empty"));
        }
        if bytes.len() == 1 {
            byte_rank[bytes[0] as usize] = rank as Rank;
        }
        if !table.insert(bytes, rank as Rank, hash(bytes), token) {
            return Err(format!("token {rank} repeats an earlier token"));
        }
        Ok(())
    }

    /// The encoding's or tokenizer's name (`"o200k_base"`, ...).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The rank of one token's bytes (a byte-level token or a SentencePiece piece).
    #[inline]
    pub(crate) fn token_rank(&self, bytes: &[u8]) -> Option<Rank> {
        self.rank_hashed(bytes, hash(bytes))
    }

    /// The splitter this encoding pre-tokenizes with.
    pub(crate) fn piece_end(&self) -> PieceEnd {
        self.piece_end
    }

    /// Number of ordinary tokens.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether there are no tokens (never for a loaded encoding).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of token `rank`.
    pub fn token(&self, rank: Rank) -> Option<&[u8]> {
        let r = rank as usize;
        (r < self.len()).then(|| &self.data[self.offsets[r] as usize..self.offsets[r + 1] as usize])
    }

    #[inline]
    fn rank(&self, bytes: &[u8]) -> Option<Rank> {
        if bytes.len() == 1 {
            return Some(self.byte_rank[bytes[0] as usize]);
        }
        self.rank_hashed(bytes, hash(bytes))
    }

    /// `rank` with the hash already computed (the count path reuses it for its cache).
    #[inline]
    fn rank_hashed(&self, bytes: &[u8], h: u64) -> Option<Rank> {
        let (data, offsets) = (&self.data, &self.offsets);
        self.table.find(bytes, h, |r| {
            &data[offsets[r as usize] as usize..offsets[r as usize + 1] as usize]
        })
    }

    #[inline]
    fn rank_or_none(&self, bytes: &[u8]) -> Rank {
        self.rank(bytes).unwrap_or(NONE)
    }

    /// The pieces the pre-tokenizer splits `text` into.
    pub fn pieces<'a>(&self, text: &'a str) -> impl Iterator<Item = &'a str> {
        pretokenize::split(text, self.piece_end)
    }

    /// Exact number of tokens of `text` (special-token text is counted as text, like tiktoken's
    /// `encode_ordinary`).
    pub fn count(&self, text: &str) -> usize {
        let s = text.as_bytes();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let (mut i, mut total) = (0, 0);
        while i < s.len() {
            let end = (self.piece_end)(s, i);
            let piece = &s[i..end];
            i = end;
            if piece.len() == 1 {
                total += 1;
                continue;
            }
            // One hash serves the vocabulary lookup and the cache of multi-token pieces.
            let h = hash(piece);
            if self.rank_hashed(piece, h).is_some() {
                total += 1;
                continue;
            }
            total += cache.count(piece, || h, |p| self.merge_count(p));
        }
        total
    }

    /// The token ids of `text`, as tiktoken's `encode_ordinary`.
    pub fn encode(&self, text: &str) -> Vec<Rank> {
        let mut out = Vec::new();
        for piece in self.pieces(text) {
            let piece = piece.as_bytes();
            match self.rank(piece) {
                Some(r) => out.push(r),
                None => self.merge(piece, |bytes| out.push(self.rank_or_none(bytes))),
            }
        }
        out
    }

    /// Number of tokens of a piece that is not itself a token.
    fn merge_count(&self, piece: &[u8]) -> usize {
        let mut n = 0;
        self.merge(piece, |_| n += 1);
        n
    }

    /// Splits a piece into its tokens, calling `emit` with each token's bytes in order.
    fn merge(&self, piece: &[u8], emit: impl FnMut(&[u8])) {
        if piece.len() < SMALL_PIECE {
            let mut parts = [(0u32, NONE); SMALL_PIECE + 1];
            self.merge_small(piece, &mut parts, emit);
        } else {
            self.merge_large(piece, emit);
        }
    }

    /// tiktoken's `_byte_pair_merge`: `parts` holds (start, rank of the pair starting there);
    /// each round merges the lowest rank, the leftmost on a tie.
    fn merge_small(&self, piece: &[u8], parts: &mut [(u32, Rank)], mut emit: impl FnMut(&[u8])) {
        let n = piece.len();
        let mut len = 0;
        let mut min = (NONE, 0);
        for i in 0..n - 1 {
            let rank = self.rank_or_none(&piece[i..i + 2]);
            if rank < min.0 {
                min = (rank, i);
            }
            parts[len] = (i as u32, rank);
            len += 1;
        }
        parts[len] = ((n - 1) as u32, NONE);
        parts[len + 1] = (n as u32, NONE);
        len += 2;
        let rank_at = |parts: &[(u32, Rank)], len: usize, i: usize| {
            if i + 3 < len {
                self.rank_or_none(&piece[parts[i].0 as usize..parts[i + 3].0 as usize])
            } else {
                NONE
            }
        };
        while min.0 != NONE {
            let i = min.1;
            if i > 0 {
                parts[i - 1].1 = rank_at(parts, len, i - 1);
            }
            parts[i].1 = rank_at(parts, len, i);
            parts.copy_within(i + 2..len, i + 1);
            len -= 1;
            min = (NONE, 0);
            for (j, &(_, rank)) in parts[..len - 1].iter().enumerate() {
                if rank < min.0 {
                    min = (rank, j);
                }
            }
        }
        for w in parts[..len].windows(2) {
            emit(&piece[w[0].0 as usize..w[1].0 as usize]);
        }
    }

    /// tiktoken's `_byte_pair_merge_large`: the same merges with a heap, O(n log n).
    fn merge_large(&self, piece: &[u8], mut emit: impl FnMut(&[u8])) {
        #[derive(PartialEq, Eq)]
        struct Merge {
            start: usize,
            rank: Rank,
        }
        impl Ord for Merge {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                other
                    .rank
                    .cmp(&self.rank)
                    .then_with(|| other.start.cmp(&self.start))
            }
        }
        impl PartialOrd for Merge {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        struct State {
            prev: usize,
            end: usize,
            next_end: usize,
            next_rank: Rank,
        }
        let n = piece.len();
        let mut state: Vec<State> = (0..n)
            .map(|i| State {
                prev: i.wrapping_sub(1),
                end: i + 1,
                next_end: i + 2,
                next_rank: NONE,
            })
            .collect();
        let mut heap = BinaryHeap::with_capacity(n);
        for i in 0..n - 1 {
            let rank = self.rank_or_none(&piece[i..i + 2]);
            if rank != NONE {
                heap.push(Merge { start: i, rank });
                state[i].next_rank = rank;
            }
        }
        let potential =
            |state: &mut [State], heap: &mut BinaryHeap<Merge>, start: usize, next_end: usize| {
                state[start].next_end = next_end;
                state[start].next_rank = NONE;
                if next_end <= n {
                    let rank = self.rank_or_none(&piece[start..next_end]);
                    if rank != NONE {
                        heap.push(Merge { start, rank });
                        state[start].next_rank = rank;
                    }
                }
            };
        while let Some(left) = heap.pop() {
            if left.rank != state[left.start].next_rank {
                continue; // invalidated since it was pushed
            }
            let left_start = left.start;
            let right_start = state[left_start].end;
            let right_end = state[left_start].next_end;
            let right_next_end = state[right_start].next_end;
            state[left_start].end = right_end;
            potential(&mut state, &mut heap, left_start, right_next_end);
            if right_end < n {
                state[right_end].prev = left_start;
            }
            if left_start > 0 {
                let prev_start = state[left_start].prev;
                potential(&mut state, &mut heap, prev_start, right_end);
            }
            state[right_start].next_rank = NONE;
        }
        let mut i = 0;
        while i < n {
            emit(&piece[i..state[i].end]);
            i = state[i].end;
        }
    }
}

#[cfg(feature = "embedded-ranks")]
fn embedded(encoding: Encoding) -> Option<&'static [u8]> {
    Some(match encoding {
        Encoding::O200kBase => include_bytes!("../../../data/o200k_base.ranks"),
        Encoding::Cl100kBase => include_bytes!("../../../data/cl100k_base.ranks"),
    })
}

#[cfg(not(feature = "embedded-ranks"))]
fn embedded(_: Encoding) -> Option<&'static [u8]> {
    None
}

static LOADED: [OnceLock<Bpe>; 2] = [OnceLock::new(), OnceLock::new()];

fn slot(encoding: Encoding) -> &'static OnceLock<Bpe> {
    &LOADED[match encoding {
        Encoding::O200kBase => 0,
        Encoding::Cl100kBase => 1,
    }]
}

/// The encoding's tables: built from the embedded ranks on first use (feature
/// `embedded-ranks`, on by default), or from data given to [`load`]. Without either, a typed
/// `encoding_not_loaded` error.
pub fn get(encoding: Encoding) -> Result<&'static Bpe, Error> {
    let cell = slot(encoding);
    if let Some(bpe) = cell.get() {
        return Ok(bpe);
    }
    match embedded(encoding) {
        Some(data) => {
            let bpe = Bpe::from_rank_data(encoding, data)?;
            Ok(cell.get_or_init(|| bpe))
        }
        None => Err(Error::EncodingNotLoaded {
            name: encoding.as_str().to_owned(),
        }),
    }
}

/// Loads an encoding from rank data (the lite wasm build ships without embedded ranks).
/// Loading an encoding that is already loaded checks the data and keeps the first.
pub fn load(encoding: Encoding, data: Vec<u8>) -> Result<&'static Bpe, Error> {
    let bpe = Bpe::from_rank_data(encoding, data)?;
    Ok(slot(encoding).get_or_init(|| bpe))
}

/// Whether the encoding can be used now without loading anything.
pub fn is_available(encoding: Encoding) -> bool {
    slot(encoding).get().is_some() || embedded(encoding).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_piece_cache_remembers_long_pieces_within_its_bounds() {
        let mut cache = PieceCache::default();
        let merges = std::cell::Cell::new(0);
        let mut count = |piece: &[u8]| {
            cache.count(
                piece,
                || hash(piece),
                |p| {
                    merges.set(merges.get() + 1);
                    p.len()
                },
            )
        };
        let long = vec![b'a'; CACHED_PIECE_BYTES];
        assert_eq!(
            (count(&long), count(&long)),
            (CACHED_PIECE_BYTES, CACHED_PIECE_BYTES)
        );
        assert_eq!(
            merges.get(),
            1,
            "a piece of CACHED_PIECE_BYTES is merged once"
        );
        let longer = vec![b'a'; CACHED_PIECE_BYTES + 1];
        count(&longer);
        count(&longer);
        assert_eq!(merges.get(), 3, "a longer piece is merged every time");
        // Past its byte budget the cache starts again: the first piece is merged once more.
        for i in 0..PIECE_CACHE_BYTES / CACHED_PIECE_BYTES {
            let mut other = vec![b'b'; CACHED_PIECE_BYTES];
            other[..8].copy_from_slice(&(i as u64).to_le_bytes());
            count(&other);
        }
        let before = merges.get();
        count(&long);
        assert_eq!(merges.get(), before + 1);
        assert!(cache.bytes <= PIECE_CACHE_BYTES);
    }

    /// A small vocabulary shaped like BPE's: the bytes, then merges of earlier tokens, and one
    /// token ("xyz") that no two earlier tokens make.
    fn vocabulary() -> Vec<Vec<u8>> {
        let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
        for t in ["ab", "abc", "cab", "abcab", "xyz", "xyzab"] {
            tokens.push(t.as_bytes().to_vec());
        }
        tokens
    }

    const TAGS_AT: usize = 5 + "o200k_base".len() + 4 + 1;

    /// A version 4 (or, `v3`, version 3) file written by hand: tags, the streams' numbers, the
    /// literals.
    fn handmade(
        base: &str,
        tags: &[u8],
        streams: [&[u32]; 3],
        literals: &[u8],
        v3: bool,
    ) -> Vec<u8> {
        let mut d = if v3 { b"CCR3" } else { b"CCR4" }.to_vec();
        d.extend_from_slice(b"\x0ao200k_base");
        d.extend_from_slice(&(tags.len() as u32).to_le_bytes());
        d.push(base.len() as u8);
        d.extend_from_slice(base.as_bytes());
        d.extend_from_slice(tags);
        for values in streams {
            if v3 {
                for shift in [0, 8, 16] {
                    d.extend(values.iter().map(|&v| (v >> shift) as u8));
                }
            } else {
                write_numbers(values, &mut d);
            }
        }
        d.extend_from_slice(literals);
        d
    }

    #[test]
    fn short_inputs_hash_as_xxh3() {
        let bytes: Vec<u8> = (0..40u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in 0..=24 {
            for start in [0, 3, 16] {
                let input = &bytes[start..start + len];
                assert_eq!(hash(input), xxhash_rust::xxh3::xxh3_64(input), "{input:?}");
            }
        }
        assert_eq!(hash(&[0xff; 16]), xxhash_rust::xxh3::xxh3_64(&[0xff; 16]));
    }

    #[test]
    fn version_4_numbers_round_trip_at_every_bit_length() {
        // Every bit length the symbol byte can name, at its edges, and runs that cross bytes.
        let mut values: Vec<u32> = (0..300).collect();
        for e in 1..19 {
            values.extend([(1u32 << e) - 2, (1 << e) - 1, (1 << e) + 5]);
        }
        values.push((1 << 19) - 2); // the largest: v = 2^19 - 1, symbol 255
        for &x in &values {
            assert!(symbol(x + 1).0 < 256, "{x}");
        }
        let mut data = Vec::new();
        write_numbers(&values, &mut data);
        data.extend_from_slice(b"after");
        let mut at = 0;
        let mut numbers = Numbers::coded(&data, &mut at, values.len()).unwrap();
        let read: Vec<usize> = (0..values.len()).map(|_| numbers.next().unwrap()).collect();
        assert_eq!(read, values.iter().map(|&v| v as usize).collect::<Vec<_>>());
        assert_eq!(numbers.left_over(), 0);
        assert_eq!(&data[at..], b"after");
    }

    #[test]
    fn version_4_round_trips_pairs_and_literals() {
        let tokens = vocabulary();
        let data = RankData::write("o200k_base", &tokens);
        assert_eq!(&data[..4], RankData::MAGIC);
        let (body, offsets) = RankData::decode(Encoding::O200kBase, &data, true).unwrap();
        let decoded: Vec<&[u8]> = offsets
            .windows(2)
            .map(|w| &body[w[0] as usize..w[1] as usize])
            .collect();
        assert_eq!(decoded, tokens.iter().map(|t| &t[..]).collect::<Vec<_>>());
        // The bytes and "xyz" (no two earlier tokens make it) are literals, the rest pairs.
        let tags = &data[TAGS_AT..TAGS_AT + tokens.len()];
        assert_eq!(tags[..256], [0; 256]);
        assert_eq!(tags[256..], [1, 1, 1, 1, 0, 1]);
        let bpe = Bpe::from_rank_data(Encoding::O200kBase, data).unwrap();
        assert_eq!(bpe.token(261), Some(&b"xyzab"[..]));
    }

    #[test]
    fn version_3_is_still_read() {
        // "ab" (256) = a + b, "abc" (257) = ab + c, and the 256 bytes as literals.
        let mut tags = vec![0u8; 256];
        tags.extend([1, 1]);
        let literals: Vec<u8> = (0..=255u8).flat_map(|b| [1, b]).collect();
        let streams: [&[u32]; 3] = [&[], &[97, 256], &[98, 99]];
        for v3 in [true, false] {
            let data = handmade("", &tags, streams, &literals, v3);
            let bpe = Bpe::from_rank_data(Encoding::O200kBase, data).unwrap();
            assert_eq!(bpe.token(256), Some(&b"ab"[..]), "v3: {v3}");
            assert_eq!(bpe.token(257), Some(&b"abc"[..]), "v3: {v3}");
        }
    }

    #[test]
    fn damaged_version_4_is_a_typed_error() {
        let good = RankData::write("o200k_base", &vocabulary());
        let symbols_at = TAGS_AT + 262;
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            (
                "truncated",
                good[..good.len() - 1].to_vec(),
                "truncated literals",
            ),
            (
                "truncated numbers",
                good[..symbols_at + 8].to_vec(),
                "truncated pair ranks",
            ),
            (
                "trailing bytes",
                [&good[..], b"x"].concat(),
                "1 bytes past the tokens",
            ),
            (
                "unknown tag",
                {
                    let mut d = good.clone();
                    d[TAGS_AT + 3] = 7;
                    d
                },
                "token 3: unknown tag 7",
            ),
            (
                "pair refers forward",
                handmade("", &[0, 1], [&[], &[5], &[0]], b"\x01a", false),
                "token 1 refers to token 5",
            ),
            (
                "numbers past their bits",
                {
                    // the left stream's symbol for 2^12: 8 bits of it are missing
                    let mut d = handmade("", &[0, 1], [&[], &[0], &[0]], b"\x01a", false);
                    let at = TAGS_AT + 2 + 4;
                    d[at] = symbol(1 << 12).0 as u8;
                    d
                },
                "truncated pair ranks",
            ),
            (
                "bits left over",
                {
                    let mut d = handmade("", &[0, 1], [&[], &[0], &[0]], b"\x01a", false);
                    let at = TAGS_AT + 2 + 4 + 1;
                    d[at..at + 4].copy_from_slice(&1u32.to_le_bytes());
                    d.insert(at + 4, 0);
                    d
                },
                "1 bytes past a stream's numbers",
            ),
            (
                "base token without a base",
                handmade("", &[0, 2], [&[0], &[], &[]], b"\x01a", false),
                "token 1: no base token 0",
            ),
            (
                "unknown base",
                handmade("x200k_base", &[0], [&[], &[], &[]], b"\x01a", false),
                "unknown base encoding",
            ),
            (
                "its own base",
                handmade("o200k_base", &[0], [&[], &[], &[]], b"\x01a", false),
                "refers to itself",
            ),
            (
                "token past 255 bytes",
                handmade(
                    "",
                    &[0, 1],
                    [&[], &[0], &[0]],
                    &[&[255][..], &[b'a'; 255]].concat(),
                    false,
                ),
                "token 1 is longer than 255 bytes",
            ),
            (
                "empty literal",
                handmade("", &[0], [&[], &[], &[]], b"\x00", false),
                "token 0 is empty",
            ),
        ];
        for (what, data, reason) in cases {
            match RankData::decode(Encoding::O200kBase, &data, true) {
                Err(Error::InvalidRankData {
                    encoding,
                    reason: r,
                }) => {
                    assert_eq!(encoding, "o200k_base", "{what}");
                    assert!(r.contains(reason), "{what}: {r}");
                }
                other => panic!("{what}: {:?}", other.map(|(b, _)| b.len())),
            }
        }
        let err = Bpe::from_rank_data(Encoding::O200kBase, b"CCR2\x0ao200k_base".to_vec());
        assert!(err.unwrap_err().to_string().contains("not a rank file"));
    }
}
