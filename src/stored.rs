//! The state as stored at a state path, and the rules of saving it when several requests of one
//! conversation run at once (a double submit, a retry, two tabs on two serverless instances).
//!
//! The saved text is the core's state plus two fields of its own, stripped again on load:
//! - `revision`: 1, 2, 3... — each save is the loaded revision + 1;
//! - `conversation`: a 32-bit hash of each message of the conversation it was saved for (8 hex
//!   digits a message, [`conversation_hashes`]).
//!
//! A save is conditional: it lands only while the store still holds the text the request
//! started from (compare-and-set). A save another request beat is judged by
//! [`Rounds::refused`] from where the stored conversation stands to this one ([`Branch`]).
//! Sans-IO: the host reads and writes, hashes its own messages' JSON and runs the rounds; every
//! rule is here, the same for every host.

use serde_json::Value;

use crate::{Error, Result};

/// The host's fields of a saved state.
const HOST_FIELDS: [&str; 2] = ["revision", "conversation"];

/// Rounds one call runs on others' saves before it answers unsaved, and refusals of a save over
/// the very text the store holds before the store counts as failing.
pub const STATE_ATTEMPTS: u32 = 5;

/// Where a compactor's state is saved when no other path is given (`saveState()`, a
/// compactor's recovery tools).
pub const DEFAULT_STATE_PATH: &str = "/state/compactor.json";

/// A state as read from the store.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// The core's state (its JSON, the host fields stripped), or `None` when nothing is stored.
    pub state: Option<String>,
    /// The stored text, exactly (`None`: nothing stored): the `expected` of the next save.
    pub text: Option<String>,
    /// The stored revision (0: none).
    pub revision: u64,
    /// The conversation it was saved for (see the module's head).
    pub conversation: String,
}

impl Stored {
    /// The state stored at `path` as `text` (`None`: nothing stored). A text that is not a
    /// saved state is an `invalid_config` error naming the path.
    pub fn parse(text: Option<&str>, path: &str) -> Result<Stored> {
        let Some(text) = text else {
            return Ok(Stored {
                state: None,
                text: None,
                revision: 0,
                conversation: String::new(),
            });
        };
        // An object with a `version`, as every saved state has: an app's own JSON file behind a
        // mistyped path is refused, never taken for an empty state and saved over.
        let record = serde_json::from_str::<Value>(text)
            .ok()
            .filter(crate::compactor::is_saved_state);
        let Some(Value::Object(mut record)) = record else {
            return Err(Error::InvalidConfig {
                field: "state".into(),
                message: format!("{path} in the store is not a saved compactor state"),
            });
        };
        // A newer build's state is refused before it is taken as a base: a save conditional on
        // it would write this build's older state over it.
        let version = record.get("version").and_then(Value::as_u64).unwrap_or(0);
        if version > u64::from(crate::compactor::STATE_VERSION) {
            return Err(Error::InvalidConfig {
                field: "state.version".into(),
                message: format!(
                    "{path} holds a state of version {version}, newer than this build ({}): update the package",
                    crate::compactor::STATE_VERSION
                ),
            });
        }
        let revision = record
            .get("revision")
            .and_then(Value::as_u64)
            .filter(|r| *r < (1 << 53))
            .unwrap_or(0);
        let conversation = record
            .get("conversation")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        for field in HOST_FIELDS {
            record.shift_remove(field);
        }
        Ok(Stored {
            state: Some(Value::Object(record).to_string()),
            text: Some(text.to_string()),
            revision,
            conversation,
        })
    }
}

/// The longest store path, in characters: the hosts' stores' `MAX_PATH_LENGTH`.
pub const MAX_PATH_LENGTH: usize = 1024;

/// A path the state may be kept at, as the hosts' stores check every path (`checkPath`,
/// `check_path`): absolute, without `.` or `..` segments or a NUL, at most [`MAX_PATH_LENGTH`]
/// characters. A native host that joins paths onto a directory gets none that leaves it.
pub fn check_state_path(path: &str) -> Result<()> {
    let why = if !path.starts_with('/') {
        "must be absolute (start with \"/\")"
    } else if path.contains('\0') {
        "contains a NUL character"
    } else if path.chars().count() > MAX_PATH_LENGTH {
        "is longer than 1024 characters"
    } else if path.split('/').any(|s| s == "." || s == "..") {
        "contains \".\" or \"..\" segments"
    } else {
        return Ok(());
    };
    Err(Error::InvalidConfig {
        field: "statePath".into(),
        message: format!("invalid store path {path:?}: {why}"),
    })
}

/// The text that saves `state` (the core's state JSON, an object) over a stored state of
/// `revision`, for the conversation `conversation`: the state with the next revision and the
/// conversation.
pub fn next_text(state: &str, revision: u64, conversation: &str) -> Result<String> {
    let Ok(Value::Object(mut record)) = serde_json::from_str::<Value>(state) else {
        return Err(Error::InvalidConfig {
            field: "state".into(),
            message: "the state to save is not a JSON object".into(),
        });
    };
    record.insert("revision".into(), Value::from(revision + 1));
    record.insert("conversation".into(), Value::from(conversation));
    Ok(Value::Object(record).to_string())
}

/// Where a request's `conversation` stands to `stored`, the one a state was saved for. An
/// earlier turn ([`Branch::Stale`]) must not save over that state: it already covers it.
pub fn branch(stored: &str, conversation: &str) -> Branch {
    if stored == conversation {
        Branch::Same
    } else if conversation.starts_with(stored) {
        Branch::Ahead
    } else if stored.starts_with(conversation) {
        Branch::Stale
    } else {
        Branch::Diverged
    }
}

/// Where a request's conversation stands to the one a stored state was saved for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Branch {
    /// The very conversation (a double submit; its edits are already stored).
    Same,
    /// It extends that one (a later turn, or nothing is stored).
    Ahead,
    /// It is a strict prefix of that one (an earlier turn: a slow duplicate, a late retry).
    Stale,
    /// Neither: another branch (two tabs, a retry that went another way, an edited message).
    Diverged,
}

/// What a call does after its save was refused (another request saved first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Rebuild the compactor on the state the store holds now and run the call again: its
    /// recorded edits replay, so the same turn gets the same prompt, and what is new is saved.
    Rerun,
    /// Answer from the last run without saving (the saves that landed stand; the next request
    /// plans this call's edits again, with the same renderings).
    Answer,
    /// The store refused [`STATE_ATTEMPTS`] saves while it still held the text they were
    /// conditional on: a store that keeps failing. `message` says so, for the host's
    /// `state_conflict` error.
    Conflict {
        /// The error's message.
        message: String,
        /// The refusals.
        attempts: u32,
    },
}

/// The rounds of one call (`manage`, `compact`, ...) with a state path: see [`Rounds::refused`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rounds {
    round: u32,
    refusals: u32,
    merged: bool,
}

impl Rounds {
    /// A call's first round.
    pub fn new() -> Rounds {
        Rounds {
            round: 1,
            ..Rounds::default()
        }
    }

    /// One more save of an explicit save's (its state newer than the stored one), while fewer
    /// than [`STATE_ATTEMPTS`] were made.
    fn again(&mut self) -> bool {
        self.round += 1;
        self.round <= STATE_ATTEMPTS
    }

    /// The save of this round over `base_text` (what the call last read or saved) was refused,
    /// and the store holds `current_text` instead, saved for `current_conversation`; the call's
    /// conversation hashes to `conversation`.
    /// - The store still holds `base`: it refused a save over the very text it holds; run
    ///   again, and after [`STATE_ATTEMPTS`] such refusals, [`Verdict::Conflict`].
    /// - This conversation, an earlier or a later turn of it (the same branch): run again on
    ///   `current`.
    /// - Another branch: run again on it once, so that its edits and this call's are both kept
    ///   (the record is keyed by content); lost again, answer unsaved.
    /// - No call runs more than [`STATE_ATTEMPTS`] rounds on others' saves: then it answers.
    pub fn refused(
        &mut self,
        path: &str,
        base_text: Option<&str>,
        current_text: Option<&str>,
        current_conversation: &str,
        conversation: &str,
    ) -> Verdict {
        let round = self.round;
        self.round += 1;
        if current_text == base_text {
            self.refusals += 1;
            if self.refusals >= STATE_ATTEMPTS {
                return Verdict::Conflict {
                    message: format!(
                        "the store refused to save the state at {path} {} times though it still held the state the save was conditional on (its conditional writes keep failing)",
                        self.refusals
                    ),
                    attempts: self.refusals,
                };
            }
            return Verdict::Rerun;
        }
        let diverged = branch(current_conversation, conversation) == Branch::Diverged;
        if round >= STATE_ATTEMPTS || (diverged && self.merged) {
            return Verdict::Answer;
        }
        self.merged |= diverged;
        Verdict::Rerun
    }
}

/// A compactor's state path and what it knows of the state there: the base of its next save
/// (what it last read or saved), whether its own state changed since (a hash of the state JSON,
/// so the host never tracks which call changed what), the rounds of the call under way and the
/// save a host is carrying out. The host only reads and writes (docs/LOOP.md, "State saves").
#[derive(Debug, Clone)]
pub struct Persist {
    path: String,
    /// What the store held when last read or saved (`state` unused).
    base: Stored,
    /// The hash of the state JSON as last loaded or saved.
    saved: u128,
    rounds: Rounds,
    pending: Option<Pending>,
    /// Why the state could not be read when the compactor started, until a save lands (the
    /// call's result says so).
    pub unread: Option<String>,
}

#[derive(Debug, Clone)]
struct Pending {
    text: String,
    conversation: String,
    state: u128,
    explicit: bool,
}

/// A save the host is asked to carry out: write `text` at `path` only while the store still
/// holds `expected` (`None`: nothing), then hand the outcome to [`Persist::written`] or
/// [`Persist::refused`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SaveRequest {
    /// The state path.
    pub path: String,
    /// The text the store must still hold.
    pub expected: Option<String>,
    /// The text to write.
    pub text: String,
}

/// What a call does after its save was refused (see [`Verdict`]), the rerun's state ready.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// Rebuild the compactor on `state` (the core's state the store holds now, `None`: nothing)
    /// and run the call again.
    Rerun {
        /// The state to rebuild on.
        state: Option<String>,
    },
    /// Answer unsaved.
    Answer,
    /// An explicit save's: save again, over what the store holds now (the base of the next
    /// save), the compactor's state as it is.
    Again,
    /// The typed `state_conflict` error: its message, refusals and the stored revision.
    Conflict {
        /// The error's message.
        message: String,
        /// The refusals.
        attempts: u32,
        /// The revision the store holds.
        revision: u64,
    },
}

fn state_hash(state: &str) -> u128 {
    crate::hash::content_hash(state.as_bytes())
}

impl Persist {
    /// The state at `path` as read (`text`, `None`: nothing there or unreadable, then saved only
    /// over nothing). `state`: the compactor's state JSON now, when it is the one read (built
    /// from `text`); `None` when the compactor started from a state of its own, which the next
    /// call saves whatever it changed. A text that is not a saved state is an `invalid_config`
    /// error naming the path.
    pub fn new(path: &str, text: Option<&str>, state: Option<&str>) -> Result<Persist> {
        check_state_path(path)?;
        let mut base = Stored::parse(text, path)?;
        base.state = None;
        Ok(Persist {
            path: path.to_owned(),
            base,
            saved: state.map_or(0, state_hash),
            rounds: Rounds::new(),
            pending: None,
            unread: None,
        })
    }

    /// The state path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The compactor was built again on the state a refused save found: `state` is its JSON.
    pub fn rebuilt(&mut self, state: &str) {
        self.saved = state_hash(state);
    }

    /// Whether the compactor's state, whose JSON is `state`, differs from the one last loaded or
    /// saved (a save is due unless the call is an earlier turn: [`Persist::request`]).
    pub fn due(&self, state: &str) -> bool {
        state_hash(state) != self.saved
    }

    /// The save due at the end of a round of a call, or `None`: the compactor's state is `state`
    /// and the call's conversation hashes to `conversation`. Nothing is due when the state is as
    /// last loaded or saved (unless `explicit`: `saveState()`), nor for an earlier turn of the
    /// conversation the stored state was saved for (a slow double submit or retry: that state
    /// already covers it). `first`: the call's first round (its rounds start again).
    pub fn request(
        &mut self,
        state: &str,
        conversation: &str,
        explicit: bool,
        first: bool,
    ) -> Result<Option<SaveRequest>> {
        if first {
            self.rounds = Rounds::new();
        }
        self.pending = None;
        let hash = state_hash(state);
        if !explicit && hash == self.saved {
            return Ok(None);
        }
        if branch(&self.base.conversation, conversation) == Branch::Stale {
            self.saved = hash;
            return Ok(None);
        }
        let text = next_text(state, self.base.revision, conversation)?;
        self.pending = Some(Pending {
            text: text.clone(),
            conversation: conversation.to_owned(),
            state: hash,
            explicit,
        });
        Ok(Some(SaveRequest {
            path: self.path.clone(),
            expected: self.base.text.clone(),
            text,
        }))
    }

    /// Whether `current`, what the store holds after it refused the requested save, is that
    /// save's very text: the save is ours (a write that landed and said it did not, or another
    /// request that saved the same state for the same conversation at the same revision).
    pub fn ours(&self, current: Option<&str>) -> bool {
        self.pending
            .as_ref()
            .is_some_and(|p| current == Some(p.text.as_str()))
    }

    /// What the store holds at the path now (`current`), read before a call pays for a summary:
    /// a state another instance saved since this compactor last read or saved (a later
    /// revision than the base) is the base from now on, and its state (`Some`) what the
    /// compactor is built on again, whose record may hold the summary already. Nothing there, a
    /// text that is not a state this build reads, or no later revision: `None`, the call goes
    /// on (its save compares again).
    pub fn newer(&mut self, current: Option<&str>) -> Option<Option<String>> {
        if current.is_none() || current == self.base.text.as_deref() {
            return None;
        }
        let mut stored = Stored::parse(current, &self.path).ok()?;
        if stored.revision <= self.base.revision {
            return None;
        }
        let state = stored.state.take();
        self.base = stored;
        self.unread = None;
        Some(state)
    }

    /// The requested save landed: it is the base of the next.
    pub fn written(&mut self) {
        if let Some(pending) = self.pending.take() {
            self.base = Stored {
                state: None,
                text: Some(pending.text),
                revision: self.base.revision + 1,
                conversation: pending.conversation,
            };
            self.saved = pending.state;
            self.unread = None;
        }
    }

    /// The requested save was refused and the store holds `current` instead (`None`:
    /// nothing): what the call does, by [`Rounds::refused`]. On a rerun, `current` is the base
    /// of the next save. A refused `saveState()` is a conflict at once. A `current` that is not
    /// a saved state is an `invalid_config` error naming the path.
    pub fn refused(&mut self, current: Option<&str>) -> Result<Refused> {
        let Some(pending) = self.pending.take() else {
            return Err(Error::PlanMismatch {
                action_id: None,
                message: "a save outcome with no save under way".into(),
            });
        };
        let mut current = Stored::parse(current, &self.path)?;
        if pending.explicit {
            let path = &self.path;
            let conflict = |message: String, revision| {
                Ok(Refused::Conflict {
                    message,
                    attempts: 1,
                    revision,
                })
            };
            if current.text == self.base.text {
                return conflict(format!("the store refused to save the state at {path} though it still held the state the save was conditional on"), current.revision);
            }
            return match branch(&current.conversation, &pending.conversation) {
                // Saved for this conversation or a later turn of it (a double submit, a second
                // tab, a retry): that state covers this one's conversation, so what an explicit
                // save adds (a calibration sample taken since) gives way, and the compactor
                // takes the stored state, the base of its next save.
                Branch::Same | Branch::Stale => {
                    let state = current.state.take();
                    self.base = current;
                    self.unread = None;
                    Ok(Refused::Rerun { state })
                }
                // An earlier turn, or nothing (the state was deleted or expired): this one's is
                // newer, and is saved over it (a few times at most, then a conflict).
                Branch::Ahead if self.rounds.again() => {
                    self.base = current;
                    Ok(Refused::Again)
                }
                Branch::Ahead => conflict(format!("the state at {path} kept changing under this compactor's saves"), current.revision),
                Branch::Diverged => conflict(format!("the state at {path} changed since this compactor last read or saved it: another request saved it for another branch of the conversation"), current.revision),
            };
        }
        let verdict = self.rounds.refused(
            &self.path,
            self.base.text.as_deref(),
            current.text.as_deref(),
            &current.conversation,
            &pending.conversation,
        );
        Ok(match verdict {
            Verdict::Rerun => {
                let state = current.state.take();
                self.base = current;
                self.unread = None;
                Refused::Rerun { state }
            }
            Verdict::Answer => Refused::Answer,
            Verdict::Conflict { message, attempts } => Refused::Conflict {
                message,
                attempts,
                revision: current.revision,
            },
        })
    }
}

/// The `conversation` field for messages whose JSON texts are `messages` (each as the host
/// writes it, binary values as `bin:<bytes>`): FNV-1a (32-bit) over each text's UTF-16 code
/// units, 8 hex digits each.
pub fn conversation_hashes<S: AsRef<str>>(messages: &[S]) -> String {
    let mut out = String::with_capacity(messages.len() * 8);
    for message in messages {
        let h = message
            .as_ref()
            .encode_utf16()
            .fold(0x811c_9dc5_u32, |h, u| {
                (h ^ u32::from(u)).wrapping_mul(0x0100_0193)
            });
        out.push_str(&format!("{h:08x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored state's text and the conversation it was saved for.
    fn stored<'a>(conversation: &'a str, text: &'a str) -> (Option<&'a str>, &'a str) {
        (Some(text), conversation)
    }

    #[test]
    fn parse_strips_the_host_fields_and_next_text_adds_them() {
        let s = Stored::parse(
            Some(r#"{"version":2,"n":3,"revision":4,"conversation":"0000aaaa","stats":{"n":1}}"#),
            "/s",
        )
        .unwrap();
        assert_eq!(
            s.state.as_deref(),
            Some(r#"{"version":2,"n":3,"stats":{"n":1}}"#)
        );
        assert_eq!((s.revision, s.conversation.as_str()), (4, "0000aaaa"));
        assert_eq!(
            next_text(r#"{"version":2,"n":3}"#, s.revision, "0000aaaa1111bbbb").unwrap(),
            r#"{"version":2,"n":3,"revision":5,"conversation":"0000aaaa1111bbbb"}"#
        );
        let none = Stored::parse(None, "/s").unwrap();
        assert_eq!((none.text, none.revision), (None, 0));
        // Not a state: the app's own JSON behind a mistyped path is refused, never saved over.
        for text in [
            "[1]",
            "{}",
            r#"{"not":"a state"}"#,
            r#"{"version":0}"#,
            r#"{"version":"2"}"#,
        ] {
            let bad = Stored::parse(Some(text), "/state/x.json").unwrap_err();
            assert!(
                bad.to_string()
                    .contains("/state/x.json in the store is not a saved compactor state"),
                "{text}"
            );
        }
        // Nor is it a state handed in (`state`).
        for text in ["{}", r#"{"stats":{}}"#] {
            let e = crate::State::from_json(text).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidConfig { field, .. } if field == "state"),
                "{e}"
            );
        }
        assert!(crate::State::from_json(r#"{"version":2}"#).is_ok());
        // A field of a state that does not fit is named as the state's.
        let e = crate::State::from_json(r#"{"version":2,"stats":"nope"}"#).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { field, .. } if field == "state.stats"),
            "{e}"
        );
    }

    #[test]
    fn a_state_path_is_a_store_path() {
        assert!(check_state_path("/state/compactor.json").is_ok());
        for bad in [
            "../../etc/passwd",
            "/state/../x.json",
            "",
            "state.json",
            "/a\0b",
            "/./a",
        ] {
            let e = check_state_path(bad).unwrap_err();
            assert!(
                matches!(&e, Error::InvalidConfig { field, .. } if field == "statePath"),
                "{bad}: {e}"
            );
        }
        assert!(check_state_path(&format!("/{}", "a".repeat(MAX_PATH_LENGTH))).is_err());
        assert!(Persist::new("/s/../t", None, None).is_err());
    }

    #[test]
    fn branches() {
        let s = "aaaaaaaabbbbbbbb";
        assert_eq!(branch(s, "aaaaaaaabbbbbbbb"), Branch::Same);
        assert_eq!(branch(s, "aaaaaaaabbbbbbbbcccccccc"), Branch::Ahead);
        assert_eq!(branch(s, "aaaaaaaa"), Branch::Stale);
        assert_eq!(branch(s, "aaaaaaaacccccccc"), Branch::Diverged);
        assert_eq!(branch("", "aaaaaaaa"), Branch::Ahead);
    }

    fn refused(
        rounds: &mut Rounds,
        base: (Option<&str>, &str),
        current: (Option<&str>, &str),
        conversation: &str,
    ) -> Verdict {
        rounds.refused("/s", base.0, current.0, current.1, conversation)
    }

    #[test]
    fn rounds_rerun_on_others_saves_merge_a_branch_once_and_give_up_on_a_failing_store() {
        let base = stored("aa", "base");
        let mut rounds = Rounds::new();
        // Another branch: once run again on, then answered.
        assert_eq!(
            refused(&mut rounds, base, stored("bb", "other"), "aacc"),
            Verdict::Rerun
        );
        assert_eq!(
            refused(&mut rounds, base, stored("bb", "other2"), "aacc"),
            Verdict::Answer
        );
        // The same branch: run again until the rounds run out.
        let mut rounds = Rounds::new();
        for _ in 1..STATE_ATTEMPTS {
            assert_eq!(
                refused(&mut rounds, base, stored("aabb", "later"), "aabbcc"),
                Verdict::Rerun
            );
        }
        assert_eq!(
            refused(&mut rounds, base, stored("aabb", "later"), "aabbcc"),
            Verdict::Answer
        );
        // Refused over the very text the store holds: a failing store.
        let mut rounds = Rounds::new();
        for _ in 1..STATE_ATTEMPTS {
            assert_eq!(refused(&mut rounds, base, base, "aa"), Verdict::Rerun);
        }
        let Verdict::Conflict { message, attempts } = refused(&mut rounds, base, base, "aa") else {
            panic!("expected a conflict")
        };
        assert_eq!(attempts, STATE_ATTEMPTS);
        assert!(message.contains("refused to save the state at /s 5 times"));
    }

    #[test]
    fn persist_saves_what_changed_over_what_it_read_and_judges_a_refusal() {
        let mut p = Persist::new("/s", None, Some(r#"{"version":1}"#)).unwrap();
        // Unchanged: nothing due (unless asked for).
        assert_eq!(
            p.request(r#"{"version":1}"#, "aa", false, true).unwrap(),
            None
        );
        let forced = p
            .request(r#"{"version":1}"#, "aa", true, true)
            .unwrap()
            .unwrap();
        assert_eq!(forced.expected, None);
        // Changed: saved over nothing, then over what it saved.
        let first = p
            .request(r#"{"version":2}"#, "aa", false, true)
            .unwrap()
            .unwrap();
        assert_eq!(
            (first.path.as_str(), first.expected.as_deref()),
            ("/s", None)
        );
        assert_eq!(
            first.text,
            r#"{"version":2,"revision":1,"conversation":"aa"}"#
        );
        p.written();
        assert_eq!(
            p.request(r#"{"version":2}"#, "aa", false, true).unwrap(),
            None
        );
        let second = p
            .request(r#"{"version":2,"n":3}"#, "aabb", false, true)
            .unwrap()
            .unwrap();
        assert_eq!(second.expected.as_deref(), Some(first.text.as_str()));
        assert!(second.text.contains(r#""revision":2"#));
        // Another request of the same branch saved first: run again on its state.
        let theirs = r#"{"version":2,"n":9,"revision":2,"conversation":"aabb"}"#;
        assert_eq!(
            p.refused(Some(theirs)).unwrap(),
            Refused::Rerun {
                state: Some(r#"{"version":2,"n":9}"#.into())
            }
        );
        p.rebuilt(r#"{"version":2,"n":9}"#);
        assert_eq!(
            p.request(r#"{"version":2,"n":9}"#, "aabb", false, false)
                .unwrap(),
            None
        );
        let third = p
            .request(r#"{"version":2,"n":10}"#, "aabb", false, false)
            .unwrap()
            .unwrap();
        assert_eq!(third.expected.as_deref(), Some(theirs));
        assert!(third.text.contains(r#""revision":3"#));
        // An earlier turn than the stored one saves nothing.
        assert_eq!(
            p.request(r#"{"version":2,"n":11}"#, "aa", false, true)
                .unwrap(),
            None
        );
        // An explicit save that another request's beat takes that state (the base of the next
        // save); one the store refused over the very text it holds is a conflict, naming the
        // path.
        p.request(r#"{"version":2,"n":12}"#, "aabb", true, true)
            .unwrap()
            .unwrap();
        let stored = r#"{"version":2,"n":13,"revision":7,"conversation":"aabb"}"#;
        assert_eq!(
            p.refused(Some(stored)).unwrap(),
            Refused::Rerun {
                state: Some(r#"{"version":2,"n":13}"#.into())
            }
        );
        let next = p
            .request(r#"{"version":2,"n":14}"#, "aabb", true, true)
            .unwrap()
            .unwrap();
        assert_eq!(next.expected.as_deref(), Some(stored));
        let Refused::Conflict {
            message, revision, ..
        } = p.refused(Some(stored)).unwrap()
        else {
            panic!("expected a conflict")
        };
        assert_eq!(revision, 7);
        assert!(
            message.contains("refused to save the state at /s"),
            "{message}"
        );
        // An explicit save whose state is newer than the stored one (saved for an earlier turn,
        // or deleted since) saves again over it, a few times at most; one over another branch
        // is a conflict.
        let mut explicit = |current: Option<&str>, first: bool| {
            p.request(r#"{"version":2,"n":15}"#, "aabbcc", true, first)
                .unwrap()
                .unwrap();
            p.refused(current).unwrap()
        };
        let earlier = r#"{"version":2,"n":16,"revision":8,"conversation":"aabb"}"#;
        assert_eq!(explicit(Some(earlier), true), Refused::Again);
        assert_eq!(explicit(None, false), Refused::Again);
        let another =
            |n: u32| format!(r#"{{"version":2,"n":{n},"revision":8,"conversation":"aabb"}}"#);
        for n in 0..STATE_ATTEMPTS - 3 {
            assert_eq!(explicit(Some(&another(20 + n)), false), Refused::Again);
        }
        assert!(
            matches!(explicit(Some(&another(30)), false), Refused::Conflict { message, .. } if message.contains("kept changing"))
        );
        let other = r#"{"version":2,"n":17,"revision":9,"conversation":"aadd"}"#;
        assert!(
            matches!(explicit(Some(other), true), Refused::Conflict { message, .. } if message.contains("another branch"))
        );
        // An outcome with no save under way, a current text that is no state and one a newer
        // build saved (taken as a base, this build's older state would be saved over it): typed
        // errors.
        assert!(p.refused(None).is_err());
        p.request(r#"{"version":2,"n":14}"#, "aabb", false, true)
            .unwrap()
            .unwrap();
        assert!(p
            .refused(Some("[1]"))
            .unwrap_err()
            .to_string()
            .contains("/s in the store is not a saved compactor state"));
        p.request(r#"{"version":2,"n":14}"#, "aabb", false, true)
            .unwrap()
            .unwrap();
        let newer = p
            .refused(Some(
                r#"{"version":99,"revision":12,"conversation":"aabb"}"#,
            ))
            .unwrap_err();
        assert!(
            matches!(&newer, Error::InvalidConfig { field, message } if field == "state.version" && message.contains("version 99, newer than this build")),
            "{newer:?}"
        );
        assert_eq!(p.base.revision, 8, "the base is still the one before");
    }

    #[test]
    fn conversation_hashes_are_fnv1a_over_utf16() {
        // As js/src/state.ts hashed each message's JSON before the rule moved here.
        assert_eq!(conversation_hashes(&[""]), "811c9dc5");
        assert_eq!(conversation_hashes(&["a", "\u{1F600}"]).len(), 16);
        assert_eq!(conversation_hashes(&["a"]), "e40c292c");
    }
}
