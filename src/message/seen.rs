//! Messages parsed before in this process, by their exact JSON text: a binding's compactor that
//! is new (a serverless route makes one per request, from the saved state) but is handed a
//! conversation this instance has seen, parses only the messages it has not.
//!
//! A request to a stateless route carries the whole history, and all but its last few messages
//! crossed into this instance before (the previous request of the conversation, when it came
//! here). Parsing them was a third of such a request's `manage` (bench/stateless). Here the
//! conversation's JSON is split into its messages' texts with a scan that only follows strings and
//! brackets; a text met before gives its message again (compared byte for byte, never by a key
//! alone), and only the others are parsed, together, by the same parser as ever.
//!
//! The result is what [`super::parse_messages_at`] gives for the whole text, always: a message is
//! kept only once the fast parser took it whole, the text between the messages is checked to be
//! JSON's (whitespace, one comma), and anything else (a text the fast parser gives up on, bad
//! JSON, a non-object) is parsed the precise way from the whole text, whose errors name the
//! message and field as before.

use std::ops::Range;
use std::sync::Mutex;

use hashbrown::HashMap;

use super::Message;
use crate::error::Result;
use crate::record::Prints;

/// How many bytes of message text the cache keeps (about as much again is held as messages):
/// a few long conversations, well within a Worker's 128 MB.
const LIMIT: usize = 8 << 20;

#[derive(Default)]
struct Seen {
    by_text: HashMap<u64, Entry>,
    /// The key of the first message of the latest text parsed.
    first: Option<u64>,
    bytes: usize,
    /// The number of the parse under way: entries not met in it are the first to go.
    generation: u64,
}

struct Entry {
    text: Box<str>,
    message: Message,
    /// Its part fingerprints (`record::message_prints`), made with its parse: a stateless
    /// request's replay of a long history then hashes none of the messages met before.
    prints: Prints,
    /// Whether the text escapes a UTF-16 surrogate.
    surrogates: bool,
    /// The key of the message that followed it the last time it was met: where a conversation
    /// seen before is read again, each message is taken as the one that came after the one
    /// before, compared once (no scan for its end, no key).
    next: Option<u64>,
    generation: u64,
}

/// What [`parse_noting_surrogates`] gives.
pub(crate) struct Parsed {
    pub(crate) messages: Vec<Message>,
    /// Whether the text escapes a UTF-16 surrogate; `None` when it was not split.
    pub(crate) surrogates: Option<bool>,
    /// Each message's part fingerprints, when the cache holds them (empty when not split).
    pub(crate) prints: Vec<Option<Prints>>,
}

static SEEN: Mutex<Option<Seen>> = Mutex::new(None);

#[cfg(test)]
thread_local! {
    /// How many messages this thread's splits took as predicted (tests run in parallel; the
    /// cache is shared, this count is not).
    static PREDICTED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The messages of a test's text, as [`parse_noting_surrogates`] gives them.
#[cfg(test)]
fn parse_messages_at(json: &str, first_index: usize) -> Result<Vec<Message>> {
    Ok(parse_noting_surrogates(json, first_index)?.messages)
}

/// [`super::parse_messages_at`], sparing the parse of each message whose exact text was parsed
/// before in this process; and whether the text holds an escaped UTF-16 surrogate (`\udXXX`,
/// as JSON.stringify writes a lone one): the scan sees every escape anyway, so a host need not
/// look for them itself (the npm host keeps the app's lone surrogates: js/src/codec.ts). `None`
/// when the text was not split (it was parsed the precise way).
pub(crate) fn parse_noting_surrogates(json: &str, first_index: usize) -> Result<Parsed> {
    let precise = |surrogates| -> Result<Parsed> {
        Ok(Parsed {
            messages: super::parse_messages_at(json, first_index)?,
            surrogates,
            prints: Vec::new(),
        })
    };
    let mut out: Vec<Option<Message>> = Vec::new();
    let mut prints: Vec<Option<Prints>> = Vec::new();
    let mut missing: Vec<(usize, u64)> = Vec::new();
    let (spans, surrogates) = {
        let mut guard = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        let seen = guard.get_or_insert_with(Seen::default);
        seen.generation += 1;
        let Some((spans, surrogates)) = seen.split(json) else {
            drop(guard);
            return precise(None);
        };
        out.reserve(spans.len());
        prints.reserve(spans.len());
        // The order is noted as it goes: each message's successor (a message parsed below
        // gets its own when kept), and the first.
        seen.first = spans.first().map(|s| s.key);
        for (at, span) in spans.iter().enumerate() {
            match seen.by_text.get_mut(&span.key).filter(|_| span.met) {
                Some(entry) => {
                    entry.generation = seen.generation;
                    entry.next = spans.get(at + 1).map(|s| s.key);
                    out.push(Some(entry.message.clone()));
                    prints.push(Some(entry.prints.clone()));
                }
                None => {
                    missing.push((out.len(), span.key));
                    out.push(None);
                    prints.push(None);
                }
            }
        }
        (spans, surrogates)
    };
    if !missing.is_empty() {
        // Only the messages not met: all of them (a cold instance) are the text as given.
        let batch = if missing.len() == spans.len() {
            std::borrow::Cow::Borrowed(json)
        } else {
            let texts: Vec<&str> = missing
                .iter()
                .map(|&(at, _)| &json[spans[at].range.clone()])
                .collect();
            std::borrow::Cow::Owned(format!("[{}]", texts.join(",")))
        };
        let parsed = match super::direct::messages(&batch, first_index) {
            Some(parsed) if parsed.len() == missing.len() => parsed,
            _ => return precise(Some(surrogates)),
        };
        let mut guard = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        let seen = guard.get_or_insert_with(Seen::default);
        for ((at, key), message) in missing.into_iter().zip(parsed) {
            let made = crate::record::message_prints(&message);
            let span = &spans[at];
            let generation = seen.generation;
            seen.keep(key, span.range.len(), || Entry {
                text: json[span.range.clone()].into(),
                message: message.clone(),
                prints: made.clone(),
                surrogates: span.surrogates,
                next: spans.get(at + 1).map(|s| s.key),
                generation,
            });
            out[at] = Some(message);
            prints[at] = Some(made);
        }
    }
    Ok(Parsed {
        messages: out.into_iter().flatten().collect(),
        surrogates: Some(surrogates),
        prints,
    })
}

impl Seen {
    /// Keeps the entry `entry` makes (a message and its text of `len` bytes), made only when it
    /// fits: when it does not, the messages not met in this parse go first; past that, nothing
    /// more is kept.
    fn keep(&mut self, key: u64, len: usize, entry: impl FnOnce() -> Entry) {
        if self.bytes + len > LIMIT {
            let generation = self.generation;
            self.by_text.retain(|_, e| e.generation == generation);
            self.bytes = self.by_text.values().map(|e| e.text.len()).sum();
            if self.bytes + len > LIMIT {
                return;
            }
        }
        if let Some(old) = self.by_text.insert(key, entry()) {
            self.bytes -= old.text.len();
        }
        self.bytes += len;
    }
}

/// A text's key in the cache: its length and its first and last bytes. Only a key: a text found
/// under it is compared whole ([`same`]), so hashing the whole text would only cost time (a tenth
/// of this module's). Texts alike at both ends take each other's place.
fn key(text: &str) -> u64 {
    const ENDS: usize = 256;
    let bytes = text.as_bytes();
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(&bytes[..bytes.len().min(ENDS)]);
    h.update(&bytes[bytes.len().saturating_sub(ENDS)..]);
    h.digest()
}

/// One message's text in a conversation's JSON, as [`Seen::split`] finds it.
struct Span {
    range: Range<usize>,
    /// Its key in the cache ([`key`]).
    key: u64,
    /// Whether the cache holds this very text under `key`.
    met: bool,
    /// Whether the text escapes a UTF-16 surrogate.
    surrogates: bool,
}

impl Seen {
    /// The messages of a JSON array of objects, and whether a string escapes a UTF-16 surrogate;
    /// `None` when the text is not one (then the precise parse says what it is). Only strings and
    /// brackets are followed inside a message; between messages only JSON whitespace and one
    /// comma may stand. A message's text that starts with the text of the message that followed
    /// the one before it last time (the first: the latest text's first) is that message: the
    /// same bytes end where they ended then, so they are compared once and not scanned.
    fn split(&self, json: &str) -> Option<(Vec<Span>, bool)> {
        let bytes = json.as_bytes();
        let mut at = whitespace(bytes, 0);
        if bytes.get(at) != Some(&b'[') {
            return None;
        }
        at = whitespace(bytes, at + 1);
        let mut spans = Vec::new();
        let mut surrogates = false;
        if bytes.get(at) == Some(&b']') {
            return (whitespace(bytes, at + 1) == bytes.len()).then_some((spans, surrogates));
        }
        let mut expected = self.first;
        loop {
            if bytes.get(at) != Some(&b'{') {
                return None;
            }
            let predicted = expected
                .and_then(|key| Some((key, self.by_text.get(&key)?)))
                .filter(|(_, e)| {
                    json.get(at..at + e.text.len())
                        .is_some_and(|text| same(text, &e.text))
                });
            let span = match predicted {
                Some((key, entry)) => {
                    expected = entry.next;
                    #[cfg(test)]
                    PREDICTED.with(|n| n.set(n.get() + 1));
                    Span {
                        range: at..at + entry.text.len(),
                        key,
                        met: true,
                        surrogates: entry.surrogates,
                    }
                }
                None => {
                    let mut escapes = false;
                    let end = object_end(bytes, at, &mut escapes)?;
                    let text = &json[at..end];
                    let key = key(text);
                    let entry = self.by_text.get(&key).filter(|e| same(&e.text, text));
                    expected = entry.and_then(|e| e.next);
                    Span {
                        range: at..end,
                        key,
                        met: entry.is_some(),
                        surrogates: escapes,
                    }
                }
            };
            surrogates |= span.surrogates;
            at = whitespace(bytes, span.range.end);
            spans.push(span);
            match bytes.get(at) {
                Some(b',') => at = whitespace(bytes, at + 1),
                Some(b']') => {
                    return (whitespace(bytes, at + 1) == bytes.len())
                        .then_some((spans, surrogates))
                }
                _ => return None,
            }
        }
    }
}

/// [`Seen::split`] with nothing seen: the byte ranges of the messages, and whether a string
/// escapes a UTF-16 surrogate.
#[cfg(test)]
fn split(json: &str) -> Option<(Vec<Range<usize>>, bool)> {
    let (spans, surrogates) = Seen::default().split(json)?;
    Some((spans.into_iter().map(|s| s.range).collect(), surrogates))
}

/// The index past the end of JSON whitespace from `at`.
fn whitespace(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        at += 1;
    }
    at
}

/// The index past the bracket that closes the object opening at `start` (strings skipped, with
/// their escapes), or `None` when the text ends first. An escaped UTF-16 surrogate
/// (`\uD800`-`\uDFFF`, any case) sets `surrogates`.
fn object_end(bytes: &[u8], start: usize, surrogates: &mut bool) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = start;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => {
                at += 1;
                loop {
                    at = quote_or_escape(bytes, at);
                    match *bytes.get(at)? {
                        b'"' => break,
                        _ => {
                            if bytes.get(at + 1) == Some(&b'u')
                                && bytes.get(at + 2).is_some_and(|&b| b | 0x20 == b'd')
                                && bytes
                                    .get(at + 3)
                                    .is_some_and(|&b| matches!(b | 0x20, b'8' | b'9' | b'a'..=b'f'))
                            {
                                *surrogates = true;
                            }
                            at += 2
                        }
                    }
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// The index of the first `"` or `\\` from `at` (the length when there is none). Eight bytes at a
/// time: a message's text is mostly strings, and a byte loop over it was most of this module's
/// time (wasm has 64-bit integers, so this is as fast there).
fn quote_or_escape(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // The high bit of each byte of `word` equal to `byte` (and none below the first of them).
    let equal = |word: u64, byte: u8| {
        let x = word ^ (ONES * u64::from(byte));
        x.wrapping_sub(ONES) & !x & HIGH
    };
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let found = equal(word, b'"') | equal(word, b'\\');
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < bytes.len() && !matches!(bytes[at], b'"' | b'\\') {
        at += 1;
    }
    at
}

/// Whether two texts are the same, eight bytes at a time (the wasm build's `memcmp` goes byte
/// by byte).
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let (x, y) = (a.chunks_exact(8), b.chunks_exact(8));
    let tails = x.remainder() == y.remainder();
    tails
        && x.zip(y).all(|(x, y)| {
            u64::from_le_bytes(x.try_into().unwrap_or_default())
                == u64::from_le_bytes(y.try_into().unwrap_or_default())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn as_parser(json: &str, first: usize) {
        let fresh = super::super::parse_messages_at(json, first);
        // Twice: the second time from what the first kept.
        for _ in 0..2 {
            let seen = parse_noting_surrogates(json, first);
            let messages = seen.as_ref().map(|p| &p.messages);
            assert_eq!(format!("{messages:?}"), format!("{fresh:?}"), "{json}");
            // The part fingerprints given are the messages' own, met before or not.
            let Ok(seen) = seen else { continue };
            for (at, prints) in seen.prints.iter().enumerate() {
                let made = crate::record::message_prints(&seen.messages[at]);
                assert_eq!(prints.as_deref(), Some(&*made), "{json}");
            }
        }
    }

    #[test]
    fn gives_what_the_parser_gives() {
        let a = r#"{"role":"user","content":"a [ { \" \\ } ] text"}"#;
        let b = r#"{"role":"assistant","content":[{"type":"tool-call","toolCallId":"c1","toolName":"read","input":{"path":"x{"}}]}"#;
        let c = r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"c1","toolName":"read","output":{"type":"text","value":"é \ud83d\ude00"}}]}"#;
        for json in [
            format!("[{a},{b},{c}]"),
            format!(" [ {a} ,\n\t{b}\r\n, {c} ] "),
            format!("[{c},{a}]"),
            "[]".into(),
            " [ ] ".into(),
            // Not messages, or not JSON: the precise parse's errors, unchanged.
            format!("[{a},]"),
            format!("[{a},{b}"),
            format!("[{a}{b}]"),
            format!("[{a}] x"),
            format!("[{a},1]"),
            format!("[{a},{{\"role\":\"nobody\",\"content\":\"x\"}}]"),
            format!("[{a},{{\"role\":\"user\",\"content\":\"\\ud83d\"}}]"),
            format!("[{a},{{\"role\":\"user\",\"content\":\"x\"]}}]"),
            "{}".into(),
            "[{\"role\":\"user\",\"content\":\"x\\".into(),
        ] {
            as_parser(&json, 0);
            as_parser(&json, 7);
        }
    }

    #[test]
    fn a_conversation_read_again_in_its_order_or_changed() {
        // Texts only this test writes: each message is taken as the one that followed the one
        // before last time, and any change is found.
        let a = r#"{"role":"user","content":"order test: a"}"#;
        let b = r#"{"role":"assistant","content":[{"type":"tool-call","toolCallId":"o1","toolName":"read","input":{"path":"x{"}}]}"#;
        let b2 = r#"{"role":"assistant","content":[{"type":"tool-call","toolCallId":"o1","toolName":"read","input":{"path":"y{"}}]}"#;
        let c = r#"{"role":"tool","content":[{"type":"tool-result","toolCallId":"o1","toolName":"read","output":{"type":"text","value":"\ud83d\ude00 order"}}]}"#;
        let noted = |json: &str| parse_noting_surrogates(json, 0).unwrap().surrogates;
        assert_eq!(noted(&format!("[{a},{b},{c}]")), Some(true));
        // Again: each message after the first taken as the one that followed the one before
        // (the first too, unless another test's text came between), the surrogate noted from
        // what was kept.
        let before = PREDICTED.with(|n| n.get());
        assert_eq!(noted(&format!("[{a},{b},{c}]")), Some(true));
        let predicted = PREDICTED.with(|n| n.get()) - before;
        assert!((2..=3).contains(&predicted), "{predicted}");
        assert_eq!(noted(&format!("[{a},{b}]")), Some(false));
        for json in [
            format!("[{a},{b},{c}]"),
            format!("[{a},{b2},{c}]"),
            format!("[{a},{c},{b}]"),
            format!("[{b},{c}]"),
            format!("[{a},{b} ,{c}]"),
            format!("[{a},{b}{c}]"),
            format!("[{a},{b}x,{c}]"),
            format!("[{a},{b},{c}"),
            format!("[{a},{b},{c},{a}]"),
        ] {
            as_parser(&json, 0);
        }
    }

    #[test]
    fn a_message_met_again_is_not_parsed_again() {
        let text = r#"{"role":"user","content":"met again: only this test writes this text"}"#;
        let key = key(text);
        parse_messages_at(&format!("[{text}]"), 0).unwrap();
        let kept = |key| {
            let guard = SEEN.lock().unwrap();
            guard
                .as_ref()
                .and_then(|s| s.by_text.get(&key))
                .map(|e| e.text.to_string())
        };
        assert_eq!(kept(key).as_deref(), Some(text));
        // The same key with another text (as a hash collision would be) is not taken for it.
        {
            let mut guard = SEEN.lock().unwrap();
            let entry = guard.as_mut().unwrap().by_text.get_mut(&key).unwrap();
            entry.message.content = super::super::Content::Text("planted".into());
            entry.text = r#"{"role":"user","content":"planted"}"#.into();
        }
        let parsed = parse_messages_at(&format!("[{text}]"), 0).unwrap();
        assert_eq!(
            parsed[0].content,
            super::super::Content::Text("met again: only this test writes this text".into())
        );
        assert_eq!(kept(key).as_deref(), Some(text));
    }

    #[test]
    fn scans_eight_bytes_at_a_time() {
        for text in [
            "",
            "abc",
            "abcdefgh\"",
            "0123456789abcdef\\x",
            "é€😀 no quote at all, longer than eight",
        ] {
            let bytes = text.as_bytes();
            for at in 0..=bytes.len() {
                let slow = (at..bytes.len())
                    .find(|&i| matches!(bytes[i], b'"' | b'\\'))
                    .unwrap_or(bytes.len());
                assert_eq!(quote_or_escape(bytes, at), slow, "{text:?} from {at}");
            }
        }
        assert!(same("0123456789", "0123456789") && !same("0123456789", "0123456788"));
        assert!(!same("01234567x9", "0123456789") && !same("abc", "abcd") && same("", ""));
    }

    #[test]
    fn split_follows_strings_and_brackets() {
        let json = r#" [ {"a":"}\"{"} , {"b":[{"c":"]"}]} ] "#;
        let (spans, surrogates) = split(json).unwrap();
        assert_eq!(
            spans.iter().map(|s| &json[s.clone()]).collect::<Vec<_>>(),
            [r#"{"a":"}\"{"}"#, r#"{"b":[{"c":"]"}]}"#]
        );
        assert!(!surrogates);
        assert_eq!(split("[{}}]"), None);
        assert_eq!(split("[{\"a\":\"x}]"), None);
    }

    #[test]
    fn split_notes_escaped_surrogates_and_nothing_else() {
        let surrogates = |text: &str| split(&format!(r#"[{{"a":"{text}"}}]"#)).unwrap().1;
        for text in [r"\ud83d", r"x \uDFFF", r"\ud800\udc00", r"\\\udbff"] {
            assert!(surrogates(text), "{text}");
        }
        // An escaped backslash then the text `ud83d`; escapes below and above the surrogates.
        for text in [r"\\ud83d", r"\ud7ff \ue000 \u00e9 \n", "ud83d", r"\u00d8x"] {
            assert!(!surrogates(text), "{text}");
        }
        let parsed = parse_noting_surrogates(r#"[{"role":"user","content":"\ud83d"}]"#, 0).unwrap();
        assert_eq!(parsed.surrogates, Some(true));
        assert_eq!(
            parse_noting_surrogates("[1]", 0).ok().map(|p| p.surrogates),
            None
        );
    }
}
