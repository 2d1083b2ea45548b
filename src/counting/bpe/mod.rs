//! Exact byte-pair encoding for OpenAI's `o200k_base` and `cl100k_base`, written for counting.
//!
//! Why our own and not tiktoken-rs (which stays in the tests as the reference): tiktoken-rs
//! parses base64 rank text and compiles a backtracking regex at start-up (~0.4 s in wasm), and
//! embeds both encodings as text (~3 MB gzipped). Here:
//! - ranks come as a compact binary (token lengths, then token bytes in rank order; see
//!   [`RankData`]), so loading is one pass that fills a hash table;
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

use std::borrow::Cow;
use std::collections::BinaryHeap;
use std::sync::{Mutex, OnceLock};

use hashbrown::HashTable;

use crate::counting::Encoding;
use crate::error::Error;

type Rank = u32;
const NONE: Rank = Rank::MAX;
/// Pieces shorter than this merge with tiktoken's quadratic scan (fast for short pieces); longer
/// ones use the heap (tiktoken uses the same cut).
const SMALL_PIECE: usize = 100;
/// The multi-token piece cache is dropped whole past this many entries, and holds no piece
/// longer than `CACHED_PIECE_BYTES` (bounded memory: at most ~13 MB).
const PIECE_CACHE_LIMIT: usize = 100_000;
const CACHED_PIECE_BYTES: usize = 128;

#[inline(always)]
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Counts of multi-token pieces merged before, keyed by the piece's bytes: pieces up to
/// `CACHED_PIECE_BYTES`, at most `PIECE_CACHE_LIMIT` of them (then it starts again). Every BPE
/// here counts through one (the tiktoken encodings and the Hugging Face pair-merging ones).
#[derive(Default)]
pub(crate) struct PieceCache(HashTable<(Box<[u8]>, u32)>);

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
        if let Some((_, n)) = self.0.find(h, |(k, _)| &**k == piece) {
            return *n as usize;
        }
        let n = merge(piece);
        if self.0.len() >= PIECE_CACHE_LIMIT {
            self.0.clear();
        }
        self.0
            .insert_unique(h, (piece.into(), n as u32), |(k, _)| hash(k));
        n
    }
}

/// The rank file format, version 1 (`data/*.ranks`, also shipped to JS):
/// `"CCR1"`, name length (u8), name (UTF-8), token count (u32 LE), one length byte per token,
/// then every token's bytes in rank order.
///
/// Version 2, "by reference" (`data/cl100k_base.ranks`: 85,033 of its 100,256 tokens are o200k
/// tokens): `"CCR2"`, name length (u8), name, token count (u32 LE), base name length (u8), base
/// name, then three byte planes of `count` bytes each: the low, middle and high byte of each
/// token's base rank + 1 (0: not a base token), then for each token that is not, its length
/// (u8) and bytes, in rank order. Planes gzip far better than interleaved ranks (cl100k: 429 kB
/// gzipped as version 1, 282 kB as planes, 316 kB as varints).
pub struct RankData;

impl RankData {
    /// The first four bytes of a rank file.
    pub const MAGIC: &'static [u8; 4] = b"CCR1";

    /// The first four bytes of a rank file that refers to another encoding's tokens.
    pub const MAGIC_REFERENCED: &'static [u8; 4] = b"CCR2";

    /// Serializes tokens (index = rank) to version 2, by reference to `base`'s tokens.
    pub fn write_referenced(
        name: &str,
        tokens: &[Vec<u8>],
        base_name: &str,
        base: &[Vec<u8>],
    ) -> Vec<u8> {
        let index: std::collections::HashMap<&[u8], u32> = base
            .iter()
            .enumerate()
            .map(|(r, t)| (&t[..], r as u32))
            .collect();
        let mut out = Vec::new();
        out.extend_from_slice(Self::MAGIC_REFERENCED);
        out.push(name.len() as u8);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
        out.push(base_name.len() as u8);
        out.extend_from_slice(base_name.as_bytes());
        let refs: Vec<u32> = tokens
            .iter()
            .map(|t| index.get(&t[..]).map_or(0, |&r| r + 1))
            .collect();
        assert!(refs.iter().all(|&r| r < 1 << 24), "base rank past 24 bits");
        for shift in [0, 8, 16] {
            out.extend(refs.iter().map(|&r| (r >> shift) as u8));
        }
        for (token, &r) in tokens.iter().zip(&refs) {
            if r == 0 {
                assert!(
                    !token.is_empty() && token.len() < 256,
                    "token length {}",
                    token.len()
                );
                out.push(token.len() as u8);
                out.extend_from_slice(token);
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

    /// Version 2 resolved to version 1, with `base` (the encoding it names) loaded.
    fn resolve(encoding: Encoding, data: &[u8]) -> Result<Vec<u8>, Error> {
        let bad = |reason: String| Error::InvalidRankData {
            encoding: encoding.as_str().to_owned(),
            reason,
        };
        let truncated = || bad("truncated".into());
        let byte = |at: usize| data.get(at).copied().ok_or_else(truncated);
        let (count, mut at) = Self::header(encoding, data)?;
        let name = encoding.as_str().as_bytes();
        let base_len = byte(at)? as usize;
        let base_name = data.get(at + 1..at + 1 + base_len).ok_or_else(truncated)?;
        at += 1 + base_len;
        let base: Encoding = std::str::from_utf8(base_name)
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| bad("names an unknown base encoding".into()))?;
        if base == encoding {
            return Err(bad("refers to itself".into()));
        }
        let base = get(base)?;
        let planes = data.get(at..at + 3 * count).ok_or_else(truncated)?;
        at += 3 * count;
        // Version 1 written directly: header, lengths, bytes (two buffers, no per-token copy).
        let mut lengths = Vec::with_capacity(count);
        let mut body = Vec::with_capacity(count * 7);
        for i in 0..count {
            let r = planes[i] as u32
                | (planes[count + i] as u32) << 8
                | (planes[2 * count + i] as u32) << 16;
            let token = if r == 0 {
                let len = byte(at)? as usize;
                let token = data.get(at + 1..at + 1 + len).ok_or_else(truncated)?;
                at += 1 + len;
                token
            } else {
                base.token(r - 1)
                    .ok_or_else(|| bad(format!("token {i}: no base token {}", r - 1)))?
            };
            if token.is_empty() || token.len() > 255 {
                return Err(bad(format!("token {i} is empty or longer than 255 bytes")));
            }
            lengths.push(token.len() as u8);
            body.extend_from_slice(token);
        }
        if at != data.len() {
            return Err(bad(format!("{} bytes past the tokens", data.len() - at)));
        }
        let mut out = Vec::with_capacity(9 + name.len() + lengths.len() + body.len());
        out.extend_from_slice(Self::MAGIC);
        out.push(name.len() as u8);
        out.extend_from_slice(name);
        out.extend_from_slice(&(count as u32).to_le_bytes());
        out.extend_from_slice(&lengths);
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Serializes tokens (index = rank) to the rank file format.
    pub fn write(name: &str, tokens: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::with_capacity(tokens.iter().map(|t| t.len() + 1).sum::<usize>() + 64);
        out.extend_from_slice(Self::MAGIC);
        out.push(name.len() as u8);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
        out.extend(tokens.iter().map(|t| {
            assert!(!t.is_empty() && t.len() < 256, "token length {}", t.len());
            t.len() as u8
        }));
        for token in tokens {
            out.extend_from_slice(token);
        }
        out
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
    table: HashTable<Rank>,
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
        if data.len() >= 4 && &data[..4] == RankData::MAGIC_REFERENCED {
            return Self::from_rank_data(encoding, RankData::resolve(encoding, &data)?);
        }
        let bad = |reason: String| Error::InvalidRankData {
            encoding: encoding.as_str().to_owned(),
            reason,
        };
        if data.len() < 9 || &data[..4] != RankData::MAGIC {
            return Err(bad(
                "not a rank file (expected the \"CCR1\" or \"CCR2\" header)".into(),
            ));
        }
        let (count, at) = RankData::header(encoding, &data)?;
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
        let piece_end = match encoding {
            Encoding::O200kBase => pretokenize::o200k_piece,
            Encoding::Cl100kBase => pretokenize::cl100k_piece,
        };
        let bpe =
            Self::build(encoding.as_str().into(), data, offsets, piece_end).map_err(|e| bad(e))?;
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
        let mut table = HashTable::with_capacity(count);
        let mut byte_rank = [NONE; 256];
        for rank in 0..count {
            let token = &data[offsets[rank] as usize..offsets[rank + 1] as usize];
            if token.is_empty() {
                return Err(format!("token {rank} is empty"));
            }
            if token.len() == 1 {
                byte_rank[token[0] as usize] = rank as Rank;
            }
            // Disjoint borrows: the hasher reads `data` and `offsets`, not the table.
            let (data, offsets) = (&data, &offsets);
            let entry = table.entry(
                hash(token),
                |&r| &data[offsets[r as usize] as usize..offsets[r as usize + 1] as usize] == token,
                |&r| hash(&data[offsets[r as usize] as usize..offsets[r as usize + 1] as usize]),
            );
            match entry {
                hashbrown::hash_table::Entry::Occupied(_) => {
                    return Err(format!("token {rank} repeats an earlier token"))
                }
                hashbrown::hash_table::Entry::Vacant(slot) => {
                    slot.insert(rank as Rank);
                }
            }
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
        self.table
            .find(h, |&r| {
                &data[offsets[r as usize] as usize..offsets[r as usize + 1] as usize] == bytes
            })
            .copied()
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
