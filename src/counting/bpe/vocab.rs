//! The vocabulary's hash table: token bytes → rank, the lookup behind every piece counted and
//! every pair tried during a merge.
//!
//! Why not `hashbrown`'s `HashTable` (which the piece cache still uses): its `find` calls the
//! key comparison through a `dyn FnMut` (to keep its code small), one indirect call per
//! candidate, and its entries here were ranks only, so each comparison read the token's bytes
//! through `offsets` and `data`, two dependent reads from megabyte-sized arrays. This table is
//! open addressing with linear probing; each slot holds the token's length, first 8 bytes and 8
//! bits of its hash, so tokens of 8 bytes or fewer (nearly every word with its space) compare
//! without leaving the table.

/// Rank of a token (index in the vocabulary).
pub(super) type Rank = u32;

/// Token bytes → rank, for a vocabulary of known size (it never grows).
pub(super) struct Vocab {
    /// Slot `i` is `[head, meta]`: the token's first 8 bytes, and `rank | len << 32 | tag << 48`
    /// (`tag`: 8 bits of the hash, for a cheap first test); `meta` 0 is an empty slot (a token
    /// is never empty). One 16-byte slot per probe, four to a cache line: a lookup reads one line
    /// at random, then the next ones in order. Plain numbers, so the table is allocated zeroed
    /// (fresh wasm memory is zero already) instead of written slot by slot.
    slots: Box<[[u64; 2]]>,
    mask: usize,
    /// Slots in use; at least one stays empty, so that every probe ends.
    used: usize,
}

impl Vocab {
    /// A table for `tokens` tokens, at most 80 % full (o200k_base: 2^18 slots, 4 MB).
    pub(super) fn with_capacity(tokens: usize) -> Self {
        let slots = (tokens + tokens / 4 + 1).next_power_of_two().max(16);
        Vocab {
            slots: vec![[0; 2]; slots].into_boxed_slice(),
            mask: slots - 1,
            used: 0,
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
        let (key, head) = (key(bytes, hash), head(bytes));
        let mut i = hash as usize & self.mask;
        loop {
            let [h, meta] = self.slots[i];
            if meta == 0 {
                return None;
            }
            if meta & KEY == key
                && h == head
                && (bytes.len() <= 8 || token(meta as Rank)[8..] == bytes[8..])
            {
                return Some(meta as Rank);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Adds `bytes` as `rank`; false when the table already holds those bytes, or when adding
    /// would leave no empty slot. One probe: the bytes would be found before the first empty
    /// slot.
    pub(super) fn insert<'d>(
        &mut self,
        bytes: &[u8],
        rank: Rank,
        hash: u64,
        token: impl Fn(Rank) -> &'d [u8],
    ) -> bool {
        let (key, head) = (key(bytes, hash), head(bytes));
        let mut i = hash as usize & self.mask;
        loop {
            let [h, meta] = self.slots[i];
            if meta == 0 {
                if self.used + 1 > self.mask {
                    return false;
                }
                self.used += 1;
                self.slots[i] = [head, key | u64::from(rank)];
                return true;
            }
            if meta & KEY == key
                && h == head
                && (bytes.len() <= 8 || token(meta as Rank)[8..] == bytes[8..])
            {
                return false;
            }
            i = (i + 1) & self.mask;
        }
    }
}

/// The bits of a slot's `meta` that hold the length and the tag.
const KEY: u64 = !(u32::MAX as u64);

/// `meta` without the rank: the length (at most 65,535 bytes; tokens are far shorter) and 8 bits
/// of the hash (not the bits that pick the slot).
#[inline(always)]
fn key(bytes: &[u8], hash: u64) -> u64 {
    (bytes.len() as u64 & 0xFFFF) << 32 | (hash >> 56) << 48
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
    fn a_full_table_refuses_rather_than_loops() {
        let words: Vec<Vec<u8>> = (0..40u32).map(|i| i.to_le_bytes().to_vec()).collect();
        let mut vocab = Vocab::with_capacity(1); // 16 slots
        let hash = |b: &[u8]| super::super::hash(b);
        let added = words
            .iter()
            .enumerate()
            .filter(|(r, w)| vocab.insert(w, *r as Rank, hash(w), |r| &words[r as usize]))
            .count();
        assert_eq!(added, 15, "one slot stays empty");
        for w in &words {
            vocab.find(w, hash(w), |r| &words[r as usize]); // ends
        }
    }

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
