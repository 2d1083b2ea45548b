//! The tiktoken pre-tokenizers, written out by hand. Each function returns where the piece that
//! starts at `i` ends, exactly as the official regex (leftmost-first alternation, greedy with
//! backtracking) would split it; `tests/tokenizer.rs` checks that against tiktoken-rs on millions
//! of strings. Every branch scans forward over a run once, so splitting is linear in the text.
//!
//! o200k_base:
//! ```text
//! [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//! |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//! cl100k_base:
//! ```text
//! '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+
//! |\s++$|\s*[\r\n]|\s+(?!\S)|\s
//! ```
//! Llama 3 (its `tokenizer.json` Split pattern) is cl100k's without `\s++$`: a whitespace run
//! at the end of the text that holds a newline ends at its last newline (`\s*[\r\n]+`), the
//! rest is a piece of its own; the possessive quantifiers make no difference to the pieces:
//! ```text
//! (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*
//! |\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//! Qwen 2 / 2.5 / 3 is Llama 3's with single digits (`\p{N}` for `\p{N}{1,3}`). Mistral's
//! tekken is o200k's without the contractions and with single digits.
//!
//! DeepSeek V3 chains three Splits (each one cuts the pieces of the one before):
//! ```text
//! \p{N}{1,3}
//! [\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+
//! [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
//! | ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//! ```
//! (Splits keep what no alternative matches as pieces of their own.)

use super::unicode::{
    class_of, Class, END, LOWER, MARK, NEWLINE, NUMBER, OTHER, OTHER_LETTER, PUNCT_SYMBOL, SPACE,
    UPPER,
};

/// The class and UTF-8 length of the character at byte `i` (`END` past the end).
#[inline(always)]
fn at(s: &[u8], i: usize) -> (Class, usize) {
    let Some(&b0) = s.get(i) else {
        return (END, 0);
    };
    if b0 < 0x80 {
        return (super::unicode::ASCII[b0 as usize], 1);
    }
    // `s` is valid UTF-8 (it came from a &str), so the continuation bytes are there.
    let (cp, len) = if b0 < 0xE0 {
        (((b0 as u32 & 0x1F) << 6) | (s[i + 1] as u32 & 0x3F), 2)
    } else if b0 < 0xF0 {
        (
            ((b0 as u32 & 0x0F) << 12) | ((s[i + 1] as u32 & 0x3F) << 6) | (s[i + 2] as u32 & 0x3F),
            3,
        )
    } else {
        (
            ((b0 as u32 & 0x07) << 18)
                | ((s[i + 1] as u32 & 0x3F) << 12)
                | ((s[i + 2] as u32 & 0x3F) << 6)
                | (s[i + 3] as u32 & 0x3F),
            4,
        )
    };
    (class_of(cp), len)
}

const fn bit(class: Class) -> u16 {
    1 << class
}
/// `[^\r\n\p{L}\p{N}]`: the optional character before a word.
const PREFIX: u16 = bit(OTHER) | bit(PUNCT_SYMBOL) | bit(MARK) | bit(SPACE);
/// `[^\s\p{L}\p{N}]`: punctuation runs.
const PUNCT: u16 = bit(OTHER) | bit(PUNCT_SYMBOL) | bit(MARK);
/// `\p{L}`.
const LETTER: u16 = bit(UPPER) | bit(LOWER) | bit(OTHER_LETTER);
/// o200k's `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`.
const CASED_HEAD: u16 = bit(UPPER) | bit(OTHER_LETTER) | bit(MARK);
/// o200k's `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`.
const CASED_TAIL: u16 = bit(LOWER) | bit(OTHER_LETTER) | bit(MARK);
/// `\s`.
const WHITESPACE: u16 = bit(SPACE) | bit(NEWLINE);

#[inline(always)]
fn is(class: Class, set: u16) -> bool {
    bit(class) & set != 0
}

/// End of the run of characters in `set` that starts at `i`.
#[inline(always)]
fn run(s: &[u8], mut i: usize, set: u16) -> usize {
    loop {
        let (class, len) = at(s, i);
        if !is(class, set) {
            return i;
        }
        i += len;
    }
}

/// `'s|'t|'re|'ve|'m|'ll|'d`, case-insensitive (`ſ` folds to `s`): the end of the contraction
/// at `i`, if there is one.
#[inline]
fn contraction(s: &[u8], i: usize) -> Option<usize> {
    if s.get(i) != Some(&b'\'') {
        return None;
    }
    let lower = |j: usize| s.get(j).map(|b| b.to_ascii_lowercase());
    match lower(i + 1)? {
        b's' | b't' | b'm' | b'd' => Some(i + 2),
        b'r' if lower(i + 2) == Some(b'e') => Some(i + 3),
        b'v' if lower(i + 2) == Some(b'e') => Some(i + 3),
        b'l' if lower(i + 2) == Some(b'l') => Some(i + 3),
        0xC5 if s.get(i + 2) == Some(&0xBF) => Some(i + 3), // U+017F ſ
        _ => None,
    }
}

/// The whitespace branches, shared by both patterns from the point where they agree. `c0` is
/// whitespace. `cl100k` adds `\s++$` before `\s*[\r\n]`.
#[inline]
fn whitespace(s: &[u8], i: usize, cl100k: bool) -> usize {
    // One pass over the run: where it ends, where its last newline ends, where its last
    // character starts.
    let (mut j, mut last_newline_end, mut last_start) = (i, None, i);
    loop {
        let (class, len) = at(s, j);
        if !is(class, WHITESPACE) {
            break;
        }
        if class == NEWLINE {
            last_newline_end = Some(j + len);
        }
        last_start = j;
        j += len;
    }
    let end = j;
    if cl100k && end == s.len() {
        return end; // \s++$
    }
    if let Some(newline_end) = last_newline_end {
        return newline_end; // \s*[\r\n]+ : the greedy \s* backs off to the last newline
    }
    if end == s.len() || last_start == i {
        return end; // \s+(?!\S) at the end of the text, or \s+ / \s for a single character
    }
    last_start // \s+(?!\S): leave the last space to the word after it
}

/// o200k's first branch from `start` (after the optional prefix): `head* tail+`. Returns the end
/// of the first match a backtracking engine would find.
#[inline]
fn o200k_tail(s: &[u8], start: usize) -> Option<usize> {
    // head* takes the whole run greedily, then gives back characters until tail+ can start.
    let mut j = start;
    let mut last_both = None; // end of the last character in both classes (Lm, Lo, M)
    loop {
        let (class, len) = at(s, j);
        if !is(class, CASED_HEAD) {
            if class == LOWER {
                return Some(run(s, j + len, CASED_TAIL));
            }
            // The character after the run cannot start tail+; backing off to the last Lm/Lo/M
            // in the run matches that one character (the ones after it are Lu/Lt).
            return last_both;
        }
        j += len;
        if class != UPPER {
            last_both = Some(j);
        }
    }
}

/// o200k's second branch from `start`: `head+ tail*`.
#[inline]
fn o200k_head(s: &[u8], start: usize) -> Option<usize> {
    let end = run(s, start, CASED_HEAD);
    (end > start).then(|| run(s, end, CASED_TAIL))
}

/// End of the o200k_base piece starting at byte `i < s.len()`.
pub fn o200k_piece(s: &[u8], i: usize) -> usize {
    o200k_family(s, i, true, true)
}

/// End of the piece of Mistral's tekken (its `tekken_*.json` pattern) starting at byte
/// `i < s.len()`: o200k's without the contractions, with single digits.
pub fn tekken_piece(s: &[u8], i: usize) -> usize {
    o200k_family(s, i, false, false)
}

/// o200k's pattern and its relative: `contractions` adds `(?i:'s|'t|'re|'ve|'m|'ll|'d)?` after
/// words, `three_digits` is `\p{N}{1,3}` (else `\p{N}`).
#[inline(always)]
fn o200k_family(s: &[u8], i: usize, contractions: bool, three_digits: bool) -> usize {
    let (c0, l0) = at(s, i);
    let with_suffix = |end: usize| {
        if contractions {
            contraction(s, end).unwrap_or(end)
        } else {
            end
        }
    };
    // Branches 1 and 2, each first with the optional prefix character, then without it (which
    // can only succeed when the character is a mark: marks are in both letter classes).
    let prefixed = is(c0, PREFIX);
    let bare = !prefixed || c0 == MARK;
    for branch in [o200k_tail as fn(&[u8], usize) -> Option<usize>, o200k_head] {
        let starts = [prefixed.then_some(i + l0), bare.then_some(i)];
        for start in starts.into_iter().flatten() {
            if let Some(end) = branch(s, start) {
                return with_suffix(end);
            }
        }
    }
    if c0 == NUMBER {
        return if three_digits {
            digits(s, i + l0)
        } else {
            i + l0
        };
    }
    if let Some(end) = punctuation(s, i, c0, true) {
        return end;
    }
    whitespace(s, i, false)
}

/// End of the cl100k_base piece starting at byte `i < s.len()`.
pub fn cl100k_piece(s: &[u8], i: usize) -> usize {
    cl100k_family(s, i, true, true)
}

/// End of the Llama 3 piece starting at byte `i < s.len()`.
pub fn llama3_piece(s: &[u8], i: usize) -> usize {
    cl100k_family(s, i, false, true)
}

/// End of the Qwen 2 / 2.5 / 3 piece starting at byte `i < s.len()`.
pub fn qwen2_piece(s: &[u8], i: usize) -> usize {
    cl100k_family(s, i, false, false)
}

/// No pre-tokenizer: the whole text is one piece (SentencePiece-style BPE, Gemma).
pub fn whole(s: &[u8], _: usize) -> usize {
    s.len()
}

/// cl100k's pattern and its relatives: `trailing_run` adds `\s++$`, `three_digits` is
/// `\p{N}{1,3}` (else `\p{N}`).
#[inline(always)]
fn cl100k_family(s: &[u8], i: usize, trailing_run: bool, three_digits: bool) -> usize {
    if let Some(end) = contraction(s, i) {
        return end;
    }
    let (c0, l0) = at(s, i);
    // [^\r\n\p{L}\p{N}]?+\p{L}++ (possessive: a prefix character is never given back).
    if is(c0, LETTER) {
        return run(s, i + l0, LETTER);
    }
    if is(c0, PREFIX) {
        let (c1, l1) = at(s, i + l0);
        if is(c1, LETTER) {
            return run(s, i + l0 + l1, LETTER);
        }
    }
    if c0 == NUMBER {
        return if three_digits {
            digits(s, i + l0)
        } else {
            i + l0
        };
    }
    if let Some(end) = punctuation(s, i, c0, false) {
        return end;
    }
    whitespace(s, i, trailing_run)
}

/// End of the DeepSeek V3 piece starting at byte `i < s.len()`.
pub fn deepseek_v3_piece(s: &[u8], i: usize) -> usize {
    let (c0, l0) = at(s, i);
    if c0 == NUMBER {
        // The first Split's piece; no alternative of the third matches digits alone.
        return digits(s, i + l0);
    }
    // The second Split's piece: a run of the CJK ranges, or of anything but them and digits.
    let cjk = is_deepseek_cjk(s, i);
    let mut end = i + l0;
    loop {
        let (class, len) = at(s, end);
        if class == END || class == NUMBER || is_deepseek_cjk(s, end) != cjk {
            break;
        }
        end += len;
    }
    // The third Split inside it; where no alternative matches, the characters up to the next
    // match are one piece.
    let t = &s[..end];
    if let Some(end) = deepseek_match(t, i) {
        return end;
    }
    let mut j = i + l0;
    while j < t.len() && deepseek_match(t, j).is_none() {
        j += at(t, j).1;
    }
    j
}

/// DeepSeek's second Split: U+4E00-U+9FA5, hiragana and katakana (U+3040-U+30FF).
#[inline]
fn is_deepseek_cjk(s: &[u8], i: usize) -> bool {
    // Every code point in the ranges is three UTF-8 bytes, lead 0xE3 or 0xE4-0xE9.
    let (Some(&b0), Some(&b1), Some(&b2)) = (s.get(i), s.get(i + 1), s.get(i + 2)) else {
        return false;
    };
    if !(0xE3..=0xE9).contains(&b0) {
        return false;
    }
    let cp = ((b0 as u32 & 0x0F) << 12) | ((b1 as u32 & 0x3F) << 6) | (b2 as u32 & 0x3F);
    (0x4E00..=0x9FA5).contains(&cp) || (0x3040..=0x30FF).contains(&cp)
}

/// The end of DeepSeek's third pattern matched at `i` in `t`, if an alternative matches there.
#[inline]
fn deepseek_match(t: &[u8], i: usize) -> Option<usize> {
    const LETTER_MARK: u16 = LETTER | bit(MARK);
    const PS: u16 = bit(PUNCT_SYMBOL);
    // [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+ (the ASCII punctuation, all of it)
    if t[i].is_ascii_punctuation() && t.get(i + 1).is_some_and(u8::is_ascii_alphabetic) {
        let mut j = i + 2;
        while t.get(j).is_some_and(u8::is_ascii_alphabetic) {
            j += 1;
        }
        return Some(j);
    }
    // [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ (a mark is both, so it starts a run either way)
    let (c0, l0) = at(t, i);
    if is(c0, LETTER_MARK) {
        return Some(run(t, i, LETTER_MARK));
    }
    if is(c0, bit(OTHER) | bit(NUMBER) | bit(SPACE)) && is(at(t, i + l0).0, LETTER_MARK) {
        return Some(run(t, i + l0, LETTER_MARK));
    }
    //  ?[\p{P}\p{S}]+[\r\n]*
    let start = if is(c0, PS) {
        Some(i)
    } else if t[i] == b' ' && is(at(t, i + 1).0, PS) {
        Some(i + 1)
    } else {
        None
    };
    if let Some(start) = start {
        let mut end = run(t, start, PS);
        while matches!(t.get(end), Some(b'\r' | b'\n')) {
            end += 1;
        }
        return Some(end);
    }
    // \s*[\r\n]+|\s+(?!\S)|\s+ (the end of `t` is the end of the text here)
    is(c0, WHITESPACE).then(|| whitespace(t, i, false))
}

/// `\p{N}{1,3}` after its first digit (which ends at `i`).
#[inline]
fn digits(s: &[u8], mut i: usize) -> usize {
    for _ in 0..2 {
        let (class, len) = at(s, i);
        if class != NUMBER {
            break;
        }
        i += len;
    }
    i
}

/// ` ?[^\s\p{L}\p{N}]+[\r\n/]*` (o200k) or ` ?[^\s\p{L}\p{N}]++[\r\n]*+` (cl100k).
#[inline]
fn punctuation(s: &[u8], i: usize, c0: Class, slash: bool) -> Option<usize> {
    let start = if is(c0, PUNCT) {
        i
    } else if s[i] == b' ' && is(at(s, i + 1).0, PUNCT) {
        i + 1
    } else {
        return None;
    };
    let mut end = run(s, start, PUNCT);
    while let Some(&b) = s.get(end) {
        if b == b'\r' || b == b'\n' || (slash && b == b'/') {
            end += 1;
        } else {
            break;
        }
    }
    Some(end)
}

/// Splits `text` into pieces with `piece_end` (one of the two functions above).
pub fn split(text: &str, piece_end: fn(&[u8], usize) -> usize) -> impl Iterator<Item = &str> {
    let s = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= s.len() {
            return None;
        }
        let end = piece_end(s, i);
        debug_assert!(end > i && end <= s.len());
        let piece = &text[i..end];
        i = end;
        Some(piece)
    })
}
