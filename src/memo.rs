//! What a plan learns about each message, kept across plans of a conversation a binding holds.
//!
//! A plan reads every message's counts, the canonical fingerprint that names the transcript, and
//! (for a summary request) the message rendered for the summarizer. For a native caller these
//! are made once per plan. A binding holds its conversation between calls and only ever keeps a
//! prefix of it and appends (see `HeldCompactor::sync`), so the facts about the kept messages
//! stay true: a re-plan after one appended message makes them for that one message.

use std::cell::RefCell;

use hashbrown::HashMap;

use crate::counting::{CachedCounter, MessageCounts};
use crate::message::Message;
use crate::plan::StoreEdit;
use crate::record::Prints;

/// Per-message facts, by position in the conversation they were made for. Valid only for the
/// same messages at the same positions: whoever keeps one across plans truncates it where the
/// conversation changed ([`Memo::truncate`]).
#[derive(Debug, Default)]
pub(crate) struct Memo {
    counts: Vec<MessageCounts>,
    /// The canonical fingerprint of each message (see `record::conversation_hex`).
    canonical: RefCell<Vec<Option<u64>>>,
    /// The part fingerprints of each message (`record::message_prints`), which the canonical
    /// fingerprint and a replay read: given by the seen cache for the messages it parsed before.
    prints: RefCell<Vec<Option<Prints>>>,
    /// Each message rendered for a summary request: (part cap, text, raw tokens).
    rendered: RefCell<Vec<Option<(usize, String, u32)>>>,
    /// Whether it outlives the plan (a binding's): then tier 2's masks are kept too.
    held: bool,
    /// Tier 2's mask of each tool result at (message, part) (`None`: it cannot be masked). Its
    /// token figures are scaled: forgotten when the calibration changes.
    masks: RefCell<HashMap<(usize, usize), Option<StoreEdit>>>,
}

impl Memo {
    /// A memo kept across plans of a held conversation (the bindings hold one).
    #[cfg_attr(not(any(feature = "wasm", feature = "component")), allow(dead_code))]
    pub(crate) fn held() -> Self {
        Memo {
            held: true,
            ..Memo::default()
        }
    }

    /// Forgets everything from message `len` on.
    pub(crate) fn truncate(&mut self, len: usize) {
        self.counts.truncate(len);
        self.canonical.get_mut().truncate(len);
        self.prints.get_mut().truncate(len);
        self.rendered.get_mut().truncate(len);
        self.masks.get_mut().retain(|&(m, _), _| m < len);
    }

    /// Forgets what holds scaled tokens (the calibration changed).
    #[cfg_attr(not(any(feature = "wasm", feature = "component")), allow(dead_code))]
    pub(crate) fn rescaled(&mut self) {
        self.masks.get_mut().clear();
    }

    /// Tier 2's mask of the tool result at `at`, made by `make` when not known (and kept when
    /// the memo is held): `None` when there is no mask, `Some(None)` when there is one that
    /// `wanted` turns down (not copied: most masks of a long conversation save too little to be
    /// worth a break).
    pub(crate) fn mask(
        &self,
        at: (usize, usize),
        make: impl FnOnce() -> Option<StoreEdit>,
        wanted: impl Fn(&StoreEdit) -> bool,
    ) -> Option<Option<StoreEdit>> {
        let pick = |edit: &StoreEdit| wanted(edit).then(|| edit.clone());
        if !self.held {
            return make().map(|edit| wanted(&edit).then_some(edit));
        }
        self.masks
            .borrow_mut()
            .entry(at)
            .or_insert_with(make)
            .as_ref()
            .map(pick)
    }

    /// Counts the messages not known yet (and forgets any past the end of `messages`).
    pub(crate) fn count(&mut self, messages: &[Message], counter: &CachedCounter) {
        self.truncate(messages.len());
        let known = self.counts.len();
        self.counts
            .extend(messages[known..].iter().map(|m| counter.message_counts(m)));
    }

    /// The counts made by [`Memo::count`], one per message.
    pub(crate) fn counted(&self) -> &[MessageCounts] {
        &self.counts
    }

    /// The canonical fingerprints of `messages` (the conversation the memo is for, from its
    /// start).
    pub(crate) fn canonical(&self, messages: &[Message]) -> Vec<u64> {
        let mut known = self.canonical.borrow_mut();
        if known.len() < messages.len() {
            known.resize(messages.len(), None);
        }
        messages
            .iter()
            .zip(known.iter_mut())
            .enumerate()
            .map(|(i, (m, k))| {
                *k.get_or_insert_with(|| crate::record::canonical_of(m, &self.prints_of(i, m)))
            })
            .collect()
    }

    /// Holds `prints` as the part fingerprints of the messages from position `from` on (what
    /// was known from there is forgotten).
    #[cfg_attr(not(any(feature = "wasm", feature = "component")), allow(dead_code))]
    pub(crate) fn give_prints(&mut self, from: usize, prints: Vec<Option<Prints>>) {
        let known = self.prints.get_mut();
        known.resize(from, None);
        known.extend(prints);
    }

    /// The part fingerprints of `message`, at position `index`: known, or made and kept.
    pub(crate) fn prints_of(&self, index: usize, message: &Message) -> Prints {
        let mut known = self.prints.borrow_mut();
        if known.len() <= index {
            known.resize(index + 1, None);
        }
        known[index]
            .get_or_insert_with(|| crate::record::message_prints(message))
            .clone()
    }

    /// The messages rendered for a summary request, one slot per message of a conversation of
    /// `len` messages (see [`Rendered`]).
    pub(crate) fn rendered(&self, len: usize) -> Rendered<'_> {
        let mut slots = self.rendered.borrow_mut();
        if slots.len() < len {
            slots.resize(len, None);
        }
        Rendered(slots)
    }
}

/// Messages rendered for a summary request, by position: (part cap, text, raw tokens).
pub(crate) struct Rendered<'a>(std::cell::RefMut<'a, Vec<Option<(usize, String, u32)>>>);

impl Rendered<'_> {
    /// Message `index` rendered with each part cut to `cap` characters, and its raw tokens;
    /// `make` makes them when not known.
    pub(crate) fn get(
        &mut self,
        index: usize,
        cap: usize,
        make: impl FnOnce() -> (String, u32),
    ) -> (&str, u32) {
        let slot = &mut self.0[index];
        if !matches!(slot, Some((c, _, _)) if *c == cap) {
            *slot = None;
        }
        let (_, text, raw) = slot.get_or_insert_with(|| {
            let (text, raw) = make();
            (cap, text, raw)
        });
        (text, *raw)
    }

    /// Message `index` as [`Rendered::get`] last made it (empty when never made).
    pub(crate) fn text(&self, index: usize) -> &str {
        self.0[index].as_ref().map_or("", |(_, text, _)| text)
    }

    /// The raw tokens of message `index` as [`Rendered::get`] last made it (0 when never).
    pub(crate) fn raw(&self, index: usize) -> u32 {
        self.0[index].as_ref().map_or(0, |(_, _, raw)| *raw)
    }
}
