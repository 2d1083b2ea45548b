//! Character classes for the pre-tokenizer, as the tiktoken patterns see them. The table in
//! `unicode_table.rs` is generated from the regex crate's own Unicode data (the engine behind
//! tiktoken's patterns) and checked for every code point by `tests/unicode_table.rs`.

/// A character's class. `\p{L}` is `UPPER | LOWER | OTHER_LETTER`; `\s` is `SPACE | NEWLINE`.
pub type Class = u8;
/// Anything else: controls that are not whitespace, format characters, private use, unassigned.
pub const OTHER: Class = 0;
/// `\p{Lu}` or `\p{Lt}`.
pub const UPPER: Class = 1;
/// `\p{Ll}`.
pub const LOWER: Class = 2;
/// `\p{Lm}` or `\p{Lo}` (in both of o200k's letter classes).
pub const OTHER_LETTER: Class = 3;
/// `\p{M}`.
pub const MARK: Class = 4;
/// `\p{N}`.
pub const NUMBER: Class = 5;
/// `\s` except `\r` and `\n`.
pub const SPACE: Class = 6;
/// `\r` or `\n`.
pub const NEWLINE: Class = 7;
/// `\p{P}` or `\p{S}`: punctuation and symbols (tiktoken's patterns treat them as `OTHER`;
/// DeepSeek's tell them apart).
pub const PUNCT_SYMBOL: Class = 8;
/// Past the end of the text.
pub const END: Class = 9;

pub use super::unicode_table::{ASCII, CLASSES, STARTS};

/// The class of a non-ASCII code point: the last range starting at or before it.
#[inline]
pub fn class_of(cp: u32) -> Class {
    if cp < 128 {
        return ASCII[cp as usize];
    }
    let i = STARTS.partition_point(|&start| start <= cp);
    CLASSES[i - 1]
}
