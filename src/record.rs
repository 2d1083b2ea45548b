//! The compaction record: every edit the compactor applied, keyed by the content it replaced, with
//! its replacement frozen as it was rendered. It travels in the [`crate::State`], so any host —
//! long-lived, a new compactor per request with the state from a store, middleware that sees
//! fresh prompt objects each call, the native crate, the CLI — brings whatever history it holds
//! (raw, already compacted, or a mix) to the same compacted form before planning. Only what is
//! new is planned; a span summarized once is never sent to the summarizer again; the prompt
//! prefix stays byte for byte what the provider cached.
//!
//! ## Fingerprints
//!
//! - A **part** is fingerprinted by its meaning: type, text, ids, tool name, input, output —
//!   never `providerOptions` or other pass-through fields, which hosts add and strip (cache
//!   markers, prompt conversion). A string content is the same as one text part.
//! - An **edit** (offload, input eviction, dedupe, mask) is found by the tool call id of its
//!   part and the fingerprint of the part before the edit; replaying it puts back the frozen
//!   replacement. Chained edits (two fields of one call evicted) replay in order.
//! - A **span** (summary, truncation, importance drop) is found by a polynomial hash of the
//!   *canonical* fingerprints of its messages, where a part our edits replaced counts as the
//!   part it replaced: the same span is recognised raw or compacted. A cheap sketch of the first
//!   message (role, part kinds, text lengths, tool call ids — nothing our edits change) finds
//!   candidate places in linear time; the full hash confirms them.
//!
//! ## Size
//!
//! The record holds only what the live conversation needs: when a span is recorded, the edits
//! inside it are dropped (the span's hash already names the original content; only each edited
//! part's fingerprint and its original's stay, as the span's `aliases`), and a rolling
//! summary's span absorbs the span of the summary it rolls up (only that summary's
//! fingerprint and the hash and length of its span stay, as `rolls`), so one summary record
//! stands for every earlier one. The aliases and rolls let a span be found in a history as an
//! earlier call left it (edited, or holding the earlier summary), not only raw: a host may hand
//! one back (LangChain's agent state, after a recovery whose prompt went only to the model). A summary (at most `history.summaryMaxTokens`, 2,000 tokens by default)
//! is kept in the state itself rather than in the store: replay must stay sans-IO and
//! synchronous, and a state read is already one store read. Past [`MAX_EDITS`] edits or
//! [`MAX_SPANS`] spans the oldest are dropped; a history that still holds their parts is then
//! planned afresh (with the same frozen texts: every rendering depends only on content).

use std::borrow::Cow;
use std::collections::BTreeSet;

use hashbrown::{HashMap, HashSet};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};
use xxhash_rust::xxh3::Xxh3;

use crate::message::{Content, Message, Part, ToolOutput};
use crate::plan::{Replace, StoreEdit, Strategy};

/// At most this many edit records are kept (oldest dropped first).
pub const MAX_EDITS: usize = 4_096;
/// At most this many span records are kept (oldest dropped first).
pub const MAX_SPANS: usize = 64;

/// Every applied edit, in the order applied. Part of [`crate::State`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Record {
    /// Store edits (tiers 1 and 2) whose parts may still be in the conversation.
    pub edits: Vec<EditRecord>,
    /// Lossy steps (summaries, truncations, importance drops).
    pub spans: Vec<SpanRecord>,
}

/// One store edit: the part it replaced and the frozen replacement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EditRecord {
    /// Which kind of edit (offload, evict-input, dedupe, mask).
    pub strategy: Strategy,
    /// The tool call whose part was edited.
    pub tool_call_id: String,
    /// Fingerprint of the part before this edit.
    pub before: Fingerprint,
    /// Fingerprint of the part after it.
    pub after: Fingerprint,
    /// Fingerprint of the part as it was before any of our edits (the first of a chain).
    pub origin: Fingerprint,
    /// Where the replaced content is stored.
    pub path: String,
    /// The replacement, exactly as rendered when the edit was made.
    pub replace: Replace,
}

/// One lossy step: a run of messages replaced by one message (a summary or a notice) followed by
/// the messages of the run it kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanRecord {
    /// Summarize, truncate or importance.
    pub strategy: Strategy,
    /// Sketch of the span's first message (see the module docs).
    pub first: Fingerprint,
    /// Messages in the span.
    pub len: u32,
    /// Polynomial hash of the span's canonical message fingerprints.
    pub hash: Fingerprint,
    /// The summary or notice, exactly as applied.
    pub insert: Message,
    /// Canonical fingerprint of `insert` (a later summary that rolls this one up absorbs it).
    pub output: Fingerprint,
    /// Span-relative indices of the messages kept after `insert` (importance drops keep some).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keep: Vec<u32>,
    /// The transcript that holds the span verbatim.
    pub transcript_path: String,
    /// The edits inside the span, dropped from the record when it was recorded: each edited
    /// part's fingerprint → the original's, so that the span is still recognised in a history
    /// that holds those parts as edited (a host that hands back an earlier call's compacted
    /// conversation: LangChain's state, after a recovery whose prompt went only to the model).
    #[serde(default, skip_serializing_if = "Aliases::is_empty")]
    pub aliases: Aliases,
    /// The earlier spans this one rolled up (absorbed): each summary's fingerprint, and the
    /// span it stands for, so that a history holding that summary (an earlier call's compacted
    /// conversation) is still recognised as the start of this span.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rolls: Vec<Rolled>,
}

/// An earlier span a rolling summary absorbed ([`SpanRecord::rolls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rolled {
    /// Canonical fingerprint of its summary or notice.
    pub output: Fingerprint,
    /// Sketch of its first message.
    pub first: Fingerprint,
    /// Messages it stands for.
    pub len: u32,
    /// Polynomial hash of their canonical fingerprints.
    pub hash: Fingerprint,
}

/// Edited part fingerprints and their originals, (after, origin) pairs; user texts apart
/// (looked up only when user texts were offloaded). Serialized as 32 hex digits a pair, one
/// string each: a span over hundreds of masked results stays a few kilobytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Aliases {
    /// Tool calls' and results' parts.
    #[serde(with = "pairs", skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<(Fingerprint, Fingerprint)>,
    /// User texts (an offloaded paste).
    #[serde(with = "pairs", skip_serializing_if = "Vec::is_empty")]
    pub texts: Vec<(Fingerprint, Fingerprint)>,
}

impl Aliases {
    /// No alias.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty() && self.texts.is_empty()
    }
}

/// (after, origin) pairs as one string of 32 hex digits a pair.
mod pairs {
    use super::Fingerprint;
    use serde::{Deserialize, Deserializer, Serializer};
    use std::borrow::Cow;

    pub fn serialize<S: Serializer>(
        pairs: &[(Fingerprint, Fingerprint)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut text = String::with_capacity(pairs.len() * 32);
        for (after, origin) in pairs {
            text.push_str(&format!("{:016x}{:016x}", after.0, origin.0));
        }
        s.serialize_str(&text)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(Fingerprint, Fingerprint)>, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        let bad = || serde::de::Error::custom("aliases: not pairs of 16-digit hex fingerprints");
        if text.len() % 32 != 0 || !text.is_ascii() {
            return Err(bad());
        }
        let hex = |i: usize| u64::from_str_radix(&text[i..i + 16], 16).map_err(|_| bad());
        (0..text.len())
            .step_by(32)
            .map(|i| Ok((Fingerprint(hex(i)?), Fingerprint(hex(i + 16)?))))
            .collect()
    }
}

/// A 64-bit fingerprint, serialized as 16 hex digits (JSON numbers lose bits past 2^53).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fingerprint(pub u64);

impl Serialize for Fingerprint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:016x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Fingerprint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(d)?;
        u64::from_str_radix(&text, 16)
            .map(Fingerprint)
            .map_err(|_| {
                serde::de::Error::custom(format!("not a 16-digit hex fingerprint: {text:?}"))
            })
    }
}

/// What a replay did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Replayed {
    /// Store edits put back.
    pub edits: u32,
    /// Spans replaced by their summary or notice.
    pub spans: u32,
}

impl Replayed {
    /// True when the replay changed nothing.
    pub fn is_empty(&self) -> bool {
        self.edits == 0 && self.spans == 0
    }
}

impl Record {
    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.edits.is_empty() && self.spans.is_empty()
    }

    /// `messages` with every recorded edit and span put back, in time linear in the
    /// conversation. Borrowed when nothing matched (an already-compacted conversation, or one
    /// that never held any recorded content).
    pub fn replay<'a>(&self, messages: &'a [Message]) -> (Cow<'a, [Message]>, Replayed) {
        self.replay_with(messages, &|_, message| message_prints(message))
    }

    /// [`Record::replay`], with each message's part fingerprints ([`message_prints`]) from
    /// `prints` (given its position and the message): a binding's memo knows most of them (the
    /// seen cache made them with the message's parse), so that a stateless request's replay
    /// hashes nothing it hashed before.
    pub(crate) fn replay_with<'a>(
        &self,
        messages: &'a [Message],
        prints: &dyn Fn(usize, &Message) -> Prints,
    ) -> (Cow<'a, [Message]>, Replayed) {
        if self.is_empty() {
            return (Cow::Borrowed(messages), Replayed::default());
        }
        let index = Index::new(self);
        // Phase 1: which parts get which edits: found by tool call id, then fingerprint; a user
        // text (no id) by fingerprint, whatever its length (see `Index::user_texts`).
        let chain = |mut fingerprint: Fingerprint, id: &str| {
            let mut chain = Vec::new();
            while let Some(&r) = index.by_before.get(&fingerprint) {
                if chain.len() > 8 || self.edits[r].tool_call_id != id {
                    break;
                }
                chain.push(r);
                fingerprint = self.edits[r].after;
            }
            chain
        };
        let mut part_edits: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        for (m, message) in messages.iter().enumerate() {
            let user = message.role == crate::message::Role::User;
            // Made once, for the first part that needs them.
            let mut these: Option<Prints> = None;
            let mut print = |p: usize| these.get_or_insert_with(|| prints(m, message))[p];
            if let Content::Text(_) = &message.content {
                if user && index.user_texts {
                    let found = chain(Fingerprint(print(0)), "");
                    if !found.is_empty() {
                        part_edits.insert((m, 0), found);
                    }
                }
            }
            for (p, part) in message.parts().iter().enumerate() {
                let id = match part {
                    Part::Text(_) | Part::File(_) if user && index.user_texts => "",
                    _ => match tool_call_id(part) {
                        Some(id) if index.ids.contains(id) => id,
                        _ => continue,
                    },
                };
                let found = chain(Fingerprint(print(p)), id);
                if !found.is_empty() {
                    part_edits.insert((m, p), found);
                }
            }
        }
        // Phase 2: spans, on a virtual sequence of the given messages and inserted ones. The
        // canonical fingerprints do not depend on phase 1 (an edited part counts as the part it
        // replaced), so the given messages are matched as they are.
        let mut items: Vec<Item> = (0..messages.len()).map(Item::Given).collect();
        let mut canonical: Vec<Option<u64>> = vec![None; messages.len()];
        let mut sketches: Vec<Option<u64>> = vec![None; messages.len()];
        // A span records the sketch of its first message as it was then: with the edits
        // applied before it (a user text offloaded in the same plan has another length). A
        // given message matches as it is or with its edits.
        let mut edited_sketches: Vec<Option<Option<u64>>> = vec![None; messages.len()];
        // The summaries and notices already in the given messages (a compacted history), found
        // once: a span whose output is there was applied there. Its messages are gone, and a
        // later run that looks the same (a repeated exchange) is not them.
        let insert_sketches: HashSet<u64> = self.spans.iter().map(|s| sketch(&s.insert)).collect();
        let mut given_outputs: HashSet<u64> = HashSet::new();
        for (i, message) in messages.iter().enumerate() {
            if insert_sketches.contains(sketches[i].get_or_insert_with(|| sketch(message))) {
                given_outputs.insert(
                    *canonical[i]
                        .get_or_insert_with(|| index.canonical_with(message, &prints(i, message))),
                );
            }
        }
        // The summaries that later ones rolled up: a given message that is one stands for the
        // messages it summarized (an earlier call's compacted conversation).
        let rolled = self.rolled();
        let mut spans = 0;
        for (r, span) in self.spans.iter().enumerate() {
            let len = span.len as u64;
            if len == 0 {
                continue;
            }
            if given_outputs.contains(&span.output.0) {
                continue;
            }
            // An item's canonical fingerprint, or the hash and length of the span a rolled-up
            // summary stands for.
            let mut element = |item: Item| -> (u64, u64, Option<u64>) {
                match item {
                    Item::Given(i) => {
                        let c = *canonical[i].get_or_insert_with(|| {
                            index.canonical_with(&messages[i], &prints(i, &messages[i]))
                        });
                        match rolled.get(&c) {
                            Some(roll) => (roll.hash.0, u64::from(roll.len), Some(roll.first.0)),
                            None => (c, 1, None),
                        }
                    }
                    Item::Inserted(q) => (self.spans[q].output.0, 1, None),
                }
            };
            let found = (0..items.len()).find_map(|start| {
                let rolled_first = match rolled.is_empty() {
                    true => None,
                    false => element(items[start]).2,
                };
                let first = rolled_first == Some(span.first.0)
                    || match items[start] {
                        Item::Given(i) => {
                            *sketches[i].get_or_insert_with(|| sketch(&messages[i])) == span.first.0
                                || *edited_sketches[i].get_or_insert_with(|| {
                                    edited(&messages[i], i, &part_edits, &self.edits)
                                        .map(|m| sketch(&m))
                                }) == Some(span.first.0)
                        }
                        Item::Inserted(q) => sketch(&self.spans[q].insert) == span.first.0,
                    };
                if !first {
                    return None;
                }
                let (mut hash, mut covered, mut end) = (0u64, 0u64, start);
                while covered < len && end < items.len() {
                    let (fingerprint, weight, _) = element(items[end]);
                    hash = if weight == 1 {
                        poly_push(hash, fingerprint)
                    } else {
                        poly_concat(hash, fingerprint, weight)
                    };
                    covered += weight;
                    end += 1;
                }
                (covered == len && hash == span.hash.0).then_some((start, end))
            });
            let Some((start, end)) = found else { continue };
            // The kept messages, by their place in the span as recorded (a rolled-up summary
            // counts as the messages it stands for).
            let mut kept = Vec::new();
            let mut offset = 0u64;
            for &item in &items[start..end] {
                let weight = element(item).1;
                if weight == 1 && span.keep.contains(&(offset as u32)) {
                    kept.push(item);
                }
                offset += weight;
            }
            items.splice(start..end, std::iter::once(Item::Inserted(r)).chain(kept));
            spans += 1;
        }
        let mut alive = vec![false; messages.len()];
        for item in &items {
            if let Item::Given(i) = *item {
                alive[i] = true;
            }
        }
        let edits_applied: usize = part_edits
            .iter()
            .filter(|((m, _), _)| alive[*m])
            .map(|(_, chain)| chain.len())
            .sum();
        if spans == 0 && edits_applied == 0 {
            return (Cow::Borrowed(messages), Replayed::default());
        }
        let out = items
            .iter()
            .map(|item| match *item {
                Item::Inserted(q) => self.spans[q].insert.clone(),
                Item::Given(m) => edited(&messages[m], m, &part_edits, &self.edits)
                    .unwrap_or_else(|| messages[m].clone()),
            })
            .collect();
        let replayed = Replayed {
            edits: edits_applied as u32,
            spans,
        };
        (Cow::Owned(out), replayed)
    }

    /// The positions in `messages` of the messages the latest lossy step kept right after its
    /// summary or notice (empty when that summary or notice is not in `messages`).
    pub(crate) fn kept_after_latest(&self, messages: &[Message]) -> BTreeSet<usize> {
        let Some(span) = self.spans.last().filter(|s| !s.keep.is_empty()) else {
            return BTreeSet::new();
        };
        let Some(at) = messages.iter().rposition(|m| *m == span.insert) else {
            return BTreeSet::new();
        };
        (at + 1..(at + 1 + span.keep.len()).min(messages.len())).collect()
    }

    /// Records a store edit just applied to `before` (the part as planned), giving `after`.
    pub(crate) fn push_edit(
        &mut self,
        edit: &StoreEdit,
        strategy: Strategy,
        before: u64,
        after: u64,
    ) {
        let before = Fingerprint(before);
        let origin = self
            .edits
            .iter()
            .rev()
            .find(|r| r.after == before && r.tool_call_id == edit.tool_call_id)
            .map_or(before, |r| r.origin);
        self.edits.push(EditRecord {
            strategy,
            tool_call_id: edit.tool_call_id.clone(),
            before,
            after: Fingerprint(after),
            origin,
            path: edit.path.clone(),
            replace: edit.replace.clone(),
        });
        if self.edits.len() > MAX_EDITS {
            let excess = self.edits.len() - MAX_EDITS;
            self.edits.drain(..excess);
        }
    }

    /// The summaries the spans rolled up, by their fingerprint ([`SpanRecord::rolls`]).
    fn rolled(&self) -> HashMap<u64, Rolled> {
        self.spans
            .iter()
            .flat_map(|s| &s.rolls)
            .map(|r| (r.output.0, *r))
            .collect()
    }

    /// Records a lossy step: `span` (as planned, before it was replaced) became `insert`
    /// followed by the span's messages at `keep`. A span that contains the output of an earlier
    /// span record (a rolling summary) absorbs that record.
    pub(crate) fn push_span(
        &mut self,
        strategy: Strategy,
        span: &[Message],
        insert: Message,
        keep: Vec<u32>,
        transcript_path: String,
    ) {
        if span.is_empty() {
            return;
        }
        let index = Index::new(self);
        let mut absorbed: HashSet<usize> = HashSet::new();
        // Summaries earlier spans already rolled up (as replay reads them: `rolls`), and those
        // this span removes (kept in its own `rolls`).
        let rolled = self.rolled();
        let mut rolls: Vec<Rolled> = Vec::new();
        let mut first = None;
        let (mut hash, mut len) = (0u64, 0u64);
        // Where each message of `span` lands in the expanded span (for `keep`).
        let mut position = Vec::with_capacity(span.len());
        for (i, message) in span.iter().enumerate() {
            position.push(len as u32);
            let fingerprint = index.canonical_message(message);
            // An earlier single-message output removed by this span: stand for its whole span.
            let earlier = (0..self.spans.len()).find(|&q| {
                !absorbed.contains(&q)
                    && !keep.contains(&(i as u32))
                    && self.spans[q].keep.is_empty()
                    && self.spans[q].output.0 == fingerprint
            });
            let roll = rolled
                .get(&fingerprint)
                .filter(|_| earlier.is_none() && !keep.contains(&(i as u32)));
            match (earlier, roll) {
                (Some(q), _) => {
                    let s = &self.spans[q];
                    first.get_or_insert(s.first.0);
                    hash = poly_concat(hash, s.hash.0, u64::from(s.len));
                    len += u64::from(s.len);
                    absorbed.insert(q);
                }
                // A summary a later one rolled up (a history as an earlier call left it): it
                // stands for its span, as replay reads it.
                (None, Some(roll)) => {
                    first.get_or_insert(roll.first.0);
                    hash = poly_concat(hash, roll.hash.0, u64::from(roll.len));
                    len += u64::from(roll.len);
                    rolls.push(*roll);
                }
                (None, None) => {
                    first.get_or_insert_with(|| sketch(message));
                    hash = poly_push(hash, fingerprint);
                    len += 1;
                }
            }
        }
        // Edits inside the removed messages are moot: the span's hash names the original
        // content. Kept messages keep theirs, and so does the first message: `first` is its
        // sketch as edited (a user text offloaded in the same plan has another length), which a
        // raw history's message matches only with those edits put back (see `replay`).
        let removed = span
            .iter()
            .enumerate()
            .filter(|(i, _)| *i > 0 && !keep.contains(&(*i as u32)))
            .map(|(_, m)| m);
        let mut ids: HashSet<&str> = HashSet::new();
        let mut texts: HashSet<Fingerprint> = HashSet::new();
        for message in removed {
            ids.extend(message.parts().iter().filter_map(tool_call_id));
            if message.role == crate::message::Role::User {
                match &message.content {
                    Content::Text(text) if index.user_texts => {
                        texts.insert(Fingerprint(text_fingerprint(text)));
                    }
                    Content::Parts(parts) => texts.extend(parts.iter().filter_map(|p| match p {
                        Part::Text(_) | Part::File(_) if index.user_texts => {
                            Some(Fingerprint(part_fingerprint(p)))
                        }
                        _ => None,
                    })),
                    Content::Text(_) => {}
                }
            }
        }
        let mut aliases = Aliases::default();
        self.edits.retain(|e| {
            let (dropped, list) = if e.tool_call_id.is_empty() {
                let inside = texts.contains(&e.after) || texts.contains(&e.before);
                (inside, &mut aliases.texts)
            } else {
                (ids.contains(e.tool_call_id.as_str()), &mut aliases.parts)
            };
            if dropped {
                list.push((e.after, e.origin));
            }
            !dropped
        });
        let mut q = 0;
        self.spans.retain_mut(|span| {
            q += 1;
            if !absorbed.contains(&(q - 1)) {
                return true;
            }
            let earlier = std::mem::take(&mut span.aliases);
            aliases.parts.extend(earlier.parts);
            aliases.texts.extend(earlier.texts);
            rolls.append(&mut span.rolls);
            rolls.push(Rolled {
                output: span.output,
                first: span.first,
                len: span.len,
                hash: span.hash,
            });
            false
        });
        if rolls.len() > MAX_SPANS {
            rolls.drain(..rolls.len() - MAX_SPANS);
        }
        // The oldest first past the bound (as edits are).
        for list in [&mut aliases.parts, &mut aliases.texts] {
            if list.len() > MAX_EDITS {
                list.drain(..list.len() - MAX_EDITS);
            }
        }
        let keep = keep.iter().map(|&k| position[k as usize]).collect();
        let output = Fingerprint(index.canonical_message(&insert));
        self.spans.push(SpanRecord {
            strategy,
            first: Fingerprint(first.unwrap_or_default()),
            len: u32::try_from(len).unwrap_or(u32::MAX),
            hash: Fingerprint(hash),
            insert,
            output,
            keep,
            transcript_path,
            aliases,
            rolls,
        });
        if self.spans.len() > MAX_SPANS {
            let excess = self.spans.len() - MAX_SPANS;
            self.spans.drain(..excess);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Item {
    Given(usize),
    Inserted(usize),
}

/// Look-ups over a record, built once per replay.
struct Index {
    ids: HashSet<String>,
    /// Set when user texts were offloaded: then every user text is fingerprinted, whatever its
    /// length. Not only those as long as the shortest preview: a text just over
    /// `offload.userThresholdTokens` and dense in tokens (digits, emoji, rare scripts) can be
    /// shorter in bytes than the preview that replaced it (fewer tokens, more bytes), and a raw
    /// history that still holds it must replay to that preview, as the long-lived compactor's
    /// does, or the hosts plan different conversations (and name different transcripts). One
    /// linear pass over the user texts, as over the user files.
    user_texts: bool,
    by_before: HashMap<Fingerprint, usize>,
    /// A fingerprint after an edit → the part's original fingerprint.
    origin_of: HashMap<Fingerprint, Fingerprint>,
    /// Some span holds the edits inside it ([`SpanRecord::aliases`]): any tool part may be one
    /// (its call id is no longer among the edits').
    aliased: bool,
}

impl Index {
    fn new(record: &Record) -> Self {
        let mut index = Index {
            user_texts: false,
            ids: HashSet::with_capacity(record.edits.len()),
            by_before: HashMap::with_capacity(record.edits.len()),
            origin_of: HashMap::with_capacity(record.edits.len()),
            aliased: false,
        };
        for (r, edit) in record.edits.iter().enumerate() {
            if let Replace::Text { .. } | Replace::FileText { .. } = &edit.replace {
                index.user_texts = true;
            }
            index.ids.insert(edit.tool_call_id.clone());
            index.by_before.insert(edit.before, r);
            index.origin_of.insert(edit.after, edit.origin);
        }
        for span in &record.spans {
            index.aliased |= !span.aliases.parts.is_empty();
            index.user_texts |= !span.aliases.texts.is_empty();
            for (after, origin) in span.aliases.parts.iter().chain(&span.aliases.texts) {
                index.origin_of.entry(*after).or_insert(*origin);
            }
        }
        index
    }

    /// The message's fingerprint with every part our edits replaced counted as the original.
    fn canonical_message(&self, message: &Message) -> u64 {
        self.canonical_with(message, &message_prints(message))
    }

    /// [`Index::canonical_message`] from the message's part fingerprints `prints` ([`message_prints`]).
    fn canonical_with(&self, message: &Message, prints: &[u64]) -> u64 {
        let mut h = Xxh3::new();
        h.update(message.role.as_str().as_bytes());
        match &message.content {
            Content::Text(_) => {
                let mut fingerprint = prints[0];
                if self.user_texts {
                    if let Some(origin) = self.origin_of.get(&Fingerprint(fingerprint)) {
                        fingerprint = origin.0;
                    }
                }
                h.update(&fingerprint.to_le_bytes());
            }
            Content::Parts(parts) => {
                for (part, &fingerprint) in parts.iter().zip(prints) {
                    let mut fingerprint = fingerprint;
                    let user_text = self.user_texts && matches!(part, Part::Text(_));
                    let tool =
                        tool_call_id(part).is_some_and(|id| self.aliased || self.ids.contains(id));
                    if user_text || tool {
                        if let Some(origin) = self.origin_of.get(&Fingerprint(fingerprint)) {
                            fingerprint = origin.0;
                        }
                    }
                    h.update(&fingerprint.to_le_bytes());
                }
            }
        }
        h.digest()
    }
}

/// Puts a recorded replacement into a part (the part was matched by fingerprint).
/// Message `m` with the recorded edits found for its parts applied; `None` when it has none.
fn edited(
    message: &Message,
    m: usize,
    part_edits: &HashMap<(usize, usize), Vec<usize>>,
    edits: &[EditRecord],
) -> Option<Message> {
    let parts = message.parts().len().max(1);
    if !(0..parts).any(|p| part_edits.contains_key(&(m, p))) {
        return None;
    }
    let mut message = message.clone();
    if let Content::Text(text) = &mut message.content {
        for &r in part_edits.get(&(m, 0)).into_iter().flatten() {
            if let Replace::Text { value } = &edits[r].replace {
                *text = value.clone();
            }
        }
    }
    if let Content::Parts(parts) = &mut message.content {
        for (p, part) in parts.make_mut().iter_mut().enumerate() {
            for &r in part_edits.get(&(m, p)).into_iter().flatten() {
                replace_part(part, &edits[r].replace);
            }
        }
    }
    Some(message)
}

fn replace_part(part: &mut Part, replace: &Replace) {
    match (replace, part) {
        (Replace::Output { output }, Part::ToolResult(result)) => result.output = output.clone(),
        (Replace::InputField { field, value }, Part::ToolCall(call)) => {
            if let Some(slot) = call.input.get_mut(field.as_str()) {
                *slot = Value::String(value.clone());
            }
        }
        (Replace::Text { value }, Part::Text(text)) => text.text = value.clone(),
        (Replace::FileText { value }, part @ Part::File(_)) => {
            *part = crate::edit::file_text_part(value)
        }
        _ => {}
    }
}

/// The name of a summary's span, the first `end` of `messages` (`canonical`: their
/// fingerprints, [`canonical_message`]) less the system messages they start with: those stay
/// word for word and are never summarized, so a system prompt that changes at every call (a
/// date, a todo list, retrieved memory) leaves a summary asked ahead of need valid.
pub(crate) fn span_hex(messages: &[Message], canonical: &[u64], end: usize) -> String {
    let start = messages[..end]
        .iter()
        .take_while(|m| m.role == crate::message::Role::System)
        .count();
    conversation_hex_of(canonical[start..end].iter().copied())
}

/// 16 hex digits naming a conversation by its messages' fingerprints (see the module docs).
pub(crate) fn conversation_hex(messages: &[Message]) -> String {
    conversation_hex_of(messages.iter().map(canonical_message))
}

/// [`conversation_hex`] from the messages' canonical fingerprints ([`canonical_message`]).
pub(crate) fn conversation_hex_of(canonical: impl IntoIterator<Item = u64>) -> String {
    let mut h = Xxh3::new();
    for fingerprint in canonical {
        h.update(&fingerprint.to_le_bytes());
    }
    format!("{:016x}", h.digest())
}

/// A message's canonical fingerprint as a conversation's name reads it (no record: every part
/// as it is).
pub(crate) fn canonical_message(message: &Message) -> u64 {
    canonical_of(message, &message_prints(message))
}

/// [`canonical_message`] from the message's part fingerprints ([`message_prints`]).
pub(crate) fn canonical_of(message: &Message, prints: &[u64]) -> u64 {
    Index::new(&Record::default()).canonical_with(message, prints)
}

/// A message's part fingerprints, shared (a binding's memo and the seen cache hold them).
pub(crate) type Prints = std::sync::Arc<Vec<u64>>;

/// The fingerprint of each part of a message ([`part_fingerprint`]; a string content counts as
/// its one text part): what its canonical fingerprint is made of, whatever the record. The one
/// pass over a message's content that names it; made once per message text in a process
/// (`message::seen`).
pub(crate) fn message_prints(message: &Message) -> Prints {
    match &message.content {
        Content::Text(text) => std::sync::Arc::new(vec![text_fingerprint(text)]),
        Content::Parts(parts) => std::sync::Arc::new(parts.iter().map(part_fingerprint).collect()),
    }
}

/// The fingerprint of the part a store edit changes (a user message's string content counts as
/// its one text part), as the conversation holds it now.
pub(crate) fn edit_fingerprint(messages: &[Message], edit: &StoreEdit) -> Option<u64> {
    let message = messages.get(edit.message_index)?;
    match &message.content {
        Content::Text(text) => (edit.part_index == 0).then(|| text_fingerprint(text)),
        Content::Parts(parts) => parts.get(edit.part_index).map(part_fingerprint),
    }
}

fn tool_call_id(part: &Part) -> Option<&str> {
    match part {
        Part::ToolCall(call) => Some(&call.tool_call_id),
        Part::ToolResult(result) => Some(&result.tool_call_id),
        _ => None,
    }
}

/// A cheap summary of a message that none of our edits change: role, part kinds, the length of
/// each text, and tool call ids.
pub(crate) fn sketch(message: &Message) -> u64 {
    let mut h = Xxh3::new();
    h.update(message.role.as_str().as_bytes());
    match &message.content {
        Content::Text(text) => {
            h.update(b"text");
            h.update(&(text.len() as u64).to_le_bytes());
            h.update(&[0]);
        }
        Content::Parts(parts) => {
            for part in parts {
                h.update(part.type_name().as_bytes());
                match part {
                    Part::Text(t) | Part::Reasoning(t) => {
                        h.update(&(t.text.len() as u64).to_le_bytes())
                    }
                    _ => {
                        if let Some(id) = tool_call_id(part) {
                            h.update(id.as_bytes());
                        }
                    }
                }
                h.update(&[0]);
            }
        }
    }
    h.digest()
}

fn text_fingerprint(text: &str) -> u64 {
    let mut h = Fingerprinter::default();
    h.str("text");
    h.str(text);
    h.0.digest()
}

/// The fingerprint of a part's meaning (see the module docs).
pub(crate) fn part_fingerprint(part: &Part) -> u64 {
    let mut h = Fingerprinter::default();
    h.str(part.type_name());
    match part {
        Part::Text(t) | Part::Reasoning(t) => h.str(&t.text),
        Part::Image(image) => {
            h.value(&image.image);
            h.str(image.media_type.as_deref().unwrap_or(""));
        }
        Part::File(file) => {
            h.value(&file.data);
            h.str(&file.media_type);
            h.str(file.filename.as_deref().unwrap_or(""));
        }
        Part::ToolCall(call) => {
            h.str(&call.tool_call_id);
            h.str(&call.tool_name);
            h.value(&call.input);
        }
        Part::ToolResult(result) => {
            h.str(&result.tool_call_id);
            h.str(&result.tool_name);
            h.output(&result.output);
        }
        Part::ToolApprovalRequest(request) => {
            h.str(&request.approval_id);
            h.str(&request.tool_call_id);
        }
        Part::ToolApprovalResponse(response) => {
            h.str(&response.approval_id);
            h.0.update(&[u8::from(response.approved)]);
        }
        Part::Unknown(map) => h.map(map, &[]),
    }
    h.0.digest()
}

/// Feeds values into XXH3 unambiguously (length-prefixed strings, tagged values, object keys
/// sorted), so the same meaning gives the same fingerprint whatever the key order a host used.
#[derive(Default)]
struct Fingerprinter(Xxh3);

impl Fingerprinter {
    fn str(&mut self, s: &str) {
        self.0.update(&(s.len() as u64).to_le_bytes());
        self.0.update(s.as_bytes());
    }

    fn value(&mut self, value: &Value) {
        match value {
            Value::Null => self.0.update(b"n"),
            Value::Bool(b) => self.0.update(if *b { b"t" } else { b"f" }),
            Value::Number(n) => {
                self.0.update(b"#");
                self.str(&n.to_string());
            }
            Value::String(s) => {
                self.0.update(b"s");
                self.str(s);
            }
            Value::Array(items) => {
                self.0.update(b"[");
                self.0.update(&(items.len() as u64).to_le_bytes());
                for item in items {
                    self.value(item);
                }
            }
            Value::Object(map) => self.map(map, &[]),
        }
    }

    fn map(&mut self, map: &Map<String, Value>, skip: &[&str]) {
        let mut keys: Vec<&String> = map
            .keys()
            .filter(|k| k.as_str() != "providerOptions" && !skip.contains(&k.as_str()))
            .collect();
        keys.sort_unstable();
        self.0.update(b"{");
        self.0.update(&(keys.len() as u64).to_le_bytes());
        for key in keys {
            self.str(key);
            self.value(&map[key]);
        }
    }

    fn output(&mut self, output: &ToolOutput) {
        self.str(output.type_name());
        match output {
            ToolOutput::Text { value, .. } | ToolOutput::ErrorText { value, .. } => self.str(value),
            ToolOutput::Json { value, .. } | ToolOutput::ErrorJson { value, .. } => {
                self.value(value)
            }
            ToolOutput::Content { value, .. } => {
                for item in value {
                    self.value(item);
                }
            }
            ToolOutput::ExecutionDenied { extra } => {
                self.str(extra.get("reason").and_then(Value::as_str).unwrap_or(""))
            }
            ToolOutput::Unknown(map) => self.map(map, &[]),
        }
    }
}

// Polynomial hashing over the Mersenne prime 2^61 - 1: a sequence's hash composes from its
// pieces' (h(A ‖ B) = h(A)·B^|B| + h(B)), so a rolling summary's span absorbs the earlier span.
const MODULUS: u64 = (1 << 61) - 1;
const BASE: u64 = 0x0b1f_4e2c_9d37_a561 % MODULUS;

fn mul_mod(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    let folded = (product & u128::from(MODULUS)) + (product >> 61);
    let folded = (folded & u128::from(MODULUS)) + (folded >> 61);
    (folded as u64) % MODULUS
}

fn pow_mod(mut base: u64, mut exp: u64) -> u64 {
    let mut out = 1;
    while exp > 0 {
        if exp & 1 == 1 {
            out = mul_mod(out, base);
        }
        base = mul_mod(base, base);
        exp >>= 1;
    }
    out
}

/// The hash of a sequence extended by one element.
fn poly_push(hash: u64, element: u64) -> u64 {
    (mul_mod(hash, BASE) + element % MODULUS) % MODULUS
}

/// The hash of a sequence extended by a sequence of `len` elements whose hash is `tail`.
fn poly_concat(hash: u64, tail: u64, len: u64) -> u64 {
    (mul_mod(hash, pow_mod(BASE, len)) + tail) % MODULUS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(json: serde_json::Value) -> Vec<Message> {
        crate::messages_from_value(json).unwrap()
    }

    #[test]
    fn polynomial_hash_composes() {
        let (a, b, c) = (11, 22, 33);
        let whole = poly_push(poly_push(poly_push(0, a), b), c);
        let tail = poly_push(poly_push(0, b), c);
        assert_eq!(poly_concat(poly_push(0, a), tail, 2), whole);
        assert_ne!(poly_push(poly_push(0, b), a), poly_push(poly_push(0, a), b));
    }

    #[test]
    fn fingerprints_ignore_key_order_provider_options_and_string_vs_parts() {
        let a = messages(serde_json::json!([
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c", "toolName": "t", "input": {"a": 1, "b": [2]}}]},
        ]));
        let b = messages(serde_json::json!([
            {"role": "user", "content": [{"type": "text", "text": "hello", "providerOptions": {"x": {"cacheControl": {"type": "ephemeral"}}}}], "providerOptions": {"y": 1}},
            {"role": "assistant", "content": [{"input": {"b": [2], "a": 1}, "toolName": "t", "toolCallId": "c", "type": "tool-call"}]},
        ]));
        let index = Index::new(&Record::default());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(index.canonical_message(x), index.canonical_message(y));
            assert_eq!(sketch(x), sketch(y));
        }
        let c = messages(serde_json::json!([{"role": "user", "content": "hellO"}]));
        assert_ne!(
            index.canonical_message(&a[0]),
            index.canonical_message(&c[0])
        );
    }

    #[test]
    fn aliases_round_trip_as_one_hex_string_and_a_bad_one_is_an_error() {
        let aliases = Aliases {
            parts: vec![(Fingerprint(1), Fingerprint(u64::MAX))],
            texts: Vec::new(),
        };
        let json = serde_json::to_string(&aliases).unwrap();
        assert_eq!(json, r#"{"parts":"0000000000000001ffffffffffffffff"}"#);
        assert_eq!(serde_json::from_str::<Aliases>(&json).unwrap(), aliases);
        for bad in [
            r#"{"parts":"00"}"#,
            r#"{"parts":"zz00000000000001ffffffffffffffff"}"#,
        ] {
            assert!(serde_json::from_str::<Aliases>(bad).is_err(), "{bad}");
        }
    }

    /// A span recorded over a summary a later one already rolled up (another branch that
    /// still holds it) counts it as the span it stands for, as replay does, and so replays onto
    /// the history it was planned on (from a review: it counted it as one message, and never
    /// replayed).
    #[test]
    fn a_span_recorded_over_a_rolled_up_summary_replays_onto_its_history() {
        let m = messages(serde_json::json!([
            {"role": "user", "content": "m0 first question"},
            {"role": "assistant", "content": "m1 answer"},
            {"role": "user", "content": "m2 second"},
            {"role": "assistant", "content": "m3 another answer"},
            {"role": "user", "content": "m2 diverged"},
            {"role": "assistant", "content": "m5 tail"},
            {"role": "user", "content": "S1 summary of m0 m1"},
            {"role": "user", "content": "S2 summary of S1 m2 m3"},
            {"role": "user", "content": "T summary of S1 and the diverged m2"},
        ]));
        let (s1, s2, t) = (m[6].clone(), m[7].clone(), m[8].clone());
        let mut record = Record::default();
        record.push_span(
            Strategy::Summarize,
            &m[0..2],
            s1.clone(),
            vec![],
            "t1".into(),
        );
        let rolling = [s1.clone(), m[2].clone(), m[3].clone()];
        record.push_span(Strategy::Summarize, &rolling, s2, vec![], "t2".into());
        assert_eq!((record.spans.len(), record.spans[0].rolls.len()), (1, 1));
        // Another branch: it holds S1, then diverges; the rolling summary is not its.
        let branch = vec![s1, m[4].clone(), m[5].clone()];
        assert_eq!(record.replay(&branch).1.spans, 0);
        record.push_span(
            Strategy::Summarize,
            &branch[0..2],
            t.clone(),
            vec![],
            "t3".into(),
        );
        let (out, replayed) = record.replay(&branch);
        assert_eq!(replayed.spans, 1);
        assert_eq!(out.to_vec(), vec![t, m[5].clone()]);
        // And the raw history of that branch.
        let raw = vec![m[0].clone(), m[1].clone(), m[4].clone(), m[5].clone()];
        assert_eq!(record.replay(&raw).0.len(), 2);
    }

    #[test]
    fn fingerprint_round_trips_as_hex() {
        let f = Fingerprint(u64::MAX - 5);
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, "\"fffffffffffffffa\"");
        assert_eq!(serde_json::from_str::<Fingerprint>(&json).unwrap(), f);
        assert!(serde_json::from_str::<Fingerprint>("\"xyz\"").is_err());
    }
}
