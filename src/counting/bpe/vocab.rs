//! The vocabulary's hash table: token bytes → rank, the lookup behind every piece counted and
//! every pair tried during a merge.
//!
//! Why not `hashbrown`'s `HashTable` (which the piece cache still uses): its `find` calls the
//! key comparison through a `dyn FnMut` (to keep its code small), one indirect call per
//! candidate, and its entries here were ranks only, so each comparison read the token's bytes
//! through `offsets` and `data`, two dependent reads from megabyte-sized arrays. This table is
//! open addressing with linear probing and a tag byte per slot (7 bits of the hash): a probe
//! reads tags, contiguous, and compares an entry only when its tag matches. Each entry holds the
//! token's length and first 8 bytes, so tokens of 8 bytes or fewer (nearly every word with its
//! space) compare without leaving the table.

/// Rank of a token (index in the vocabulary).
pub(super) type Rank = u32;

/// Token bytes → rank, for a vocabulary of known size (it never grows).
pub(super) struct Vocab {
    /// 0: empty; else `0x80 | top 7 bits of the hash`.
    tags: Box<[u8]>,
    /// Slot `i`'s token: its first 8 bytes (`head`) at `2 i`, its rank and length
    /// (`rank | len << 32`) at `2 i + 1`. Plain numbers, so the table is allocated zeroed (fresh
    /// wasm memory is zero already) instead of written slot by slot.
    entries: Box<[u64]>,
    mask: usize,
}

impl Vocab {
    /// A table for `tokens` tokens, at most 80 % full (o200k_base: 2^18 slots, 4.5 MB).
    pub(super) fn with_capacity(tokens: usize) -> Self {
        let slots = (tokens + tokens / 4 + 1).next_power_of_two().max(16);
        Vocab {
            tags: vec![0; slots].into_boxed_slice(),
            entries: vec![0; 2 * slots].into_boxed_slice(),
            mask: slots - 1,
        }
    }

    /// The rank of `bytes` (hashed as `hash`); `token` gives a rank's bytes (read only for tokens
    /// longer than 8 bytes).
    #[inline(always)]
    pub(super) fn find<'d>(
        &self,
        bytes: &[u8],
        hash: u64,
        token: impl Fn(Rank) -> &'d [u8],
    ) -> Option<Rank> {
        let (tag, head, len) = (tag(hash), head(bytes), bytes.len() as u64);
        let mut i = hash as usize & self.mask;
        loop {
            let t = self.tags[i];
            if t == 0 {
                return None;
            }
            if t == tag {
                let (h, meta) = (self.entries[2 * i], self.entries[2 * i + 1]);
                let rank = meta as Rank;
                if meta >> 32 == len && h == head && (len <= 8 || token(rank)[8..] == bytes[8..]) {
                    return Some(rank);
                }
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Adds `bytes` as `rank`; false when the table already holds those bytes (or is full).
    pub(super) fn insert<'d>(
        &mut self,
        bytes: &[u8],
        rank: Rank,
        hash: u64,
        token: impl Fn(Rank) -> &'d [u8],
    ) -> bool {
        if self.find(bytes, hash, &token).is_some() {
            return false;
        }
        let mut i = hash as usize & self.mask;
        for _ in 0..=self.mask {
            if self.tags[i] == 0 {
                self.tags[i] = tag(hash);
                self.entries[2 * i] = head(bytes);
                self.entries[2 * i + 1] = u64::from(rank) | (bytes.len() as u64) << 32;
                return true;
            }
            i = (i + 1) & self.mask;
        }
        false
    }
}

#[inline(always)]
fn tag(hash: u64) -> u8 {
    0x80 | (hash >> 57) as u8
}

/// Up to the first 8 bytes of `bytes` as one number. With the length it tells apart every token
/// of 8 bytes or fewer: for 4 to 7 bytes it holds the first 4 and the last 4 (overlapping), for
/// 1 to 3 the first, middle and last byte.
#[inline(always)]
fn head(bytes: &[u8]) -> u64 {
    let u32_at = |i: usize| u64::from(u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()));
    match bytes.len() {
        8.. => u64::from_le_bytes(bytes[..8].try_into().unwrap()),
        4.. => u32_at(0) | u32_at(bytes.len() - 4) << 32,
        1.. => {
            u64::from(bytes[0])
                | u64::from(bytes[bytes.len() / 2]) << 8
                | u64::from(bytes[bytes.len() - 1]) << 16
        }
        0 => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_token_and_nothing_else() {
        // Tokens of every length class (1..=3, 4..=7, 8, longer), sharing heads and tails.
        let words: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| {
                let len = 1 + (i as usize * 7) % 23;
                (0..len)
                    .map(|k| b"ab c"[(i as usize + k * (i as usize % 5 + 1)) % 4])
                    .collect()
            })
            .collect();
        let mut unique: Vec<Vec<u8>> = Vec::new();
        for w in words {
            if !unique.contains(&w) {
                unique.push(w);
            }
        }
        let hash = |b: &[u8]| super::super::hash(b);
        let mut vocab = Vocab::with_capacity(unique.len());
        for (r, w) in unique.iter().enumerate() {
            assert!(vocab.insert(w, r as Rank, hash(w), |r| &unique[r as usize]));
        }
        for (r, w) in unique.iter().enumerate() {
            assert_eq!(
                vocab.find(w, hash(w), |r| &unique[r as usize]),
                Some(r as Rank)
            );
            assert!(
                !vocab.insert(w, 0, hash(w), |r| &unique[r as usize]),
                "a repeat is refused"
            );
            let mut other = w.clone();
            other.push(b'z');
            assert_eq!(
                vocab.find(&other, hash(&other), |r| &unique[r as usize]),
                None
            );
            // Same length, same first 8 bytes, another last byte.
            let mut near = w.clone();
            *near.last_mut().unwrap() = b'q';
            assert_eq!(
                vocab.find(&near, hash(&near), |r| &unique[r as usize]),
                None
            );
        }
    }
}
