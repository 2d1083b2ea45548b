//! Summary leases: one summary of a span across the requests of one conversation.
//!
//! Two requests of a conversation (a double submit, a retry, two tabs on two serverless
//! instances) that plan the same summary would each pay the summarizer. A lease beside the
//! state makes the first one summarize and the other wait for its text. The lease is one store
//! file: `{"owner","until"}` while a request summarizes, `{"summary"}` once it has.
//!
//! Sans-IO like [`crate::recovery::ToolRun`]: a [`LeaseRun`] says which store call, sleep or
//! summary it needs ([`LeaseRun::poll`]), the host carries it out and hands back the outcome
//! with the time. The rules, the same in every host:
//!
//! - The first request to take the lease (a conditional write over what it read) summarizes and
//!   leaves the summary in the lease; a failed summary releases it (`until` 0).
//! - A request that finds another's lease waits for that summary, reading every `poll_ms`; it
//!   takes the lease over once it expires unfulfilled (a killed request), and summarizes itself
//!   once `wait_ms` have passed.
//! - Store errors never fail the summary and never make a request wait: a lease read or write
//!   that fails (or does not answer within the `timeout_ms` each request carries) settles as a
//!   direct summary. Only a conditional write the store refused (another request took the lease
//!   first) is waited on.
//! - With `keep` (a summary asked ahead of need, which the next request reads beside the state),
//!   a summary made without the lease is written there plainly, unless the store holds it.
//!
//! ```
//! use context_compactor::lease::{LeaseIo, LeaseOptions, LeaseOutcome, LeaseRun};
//!
//! let mut run = LeaseRun::new("/state/a.json.summaries/x.json", "me", 1_000.0, LeaseOptions::default());
//! assert!(matches!(run.poll(), LeaseIo::Read { .. }));
//! run.handle(LeaseOutcome::Read(None), 1_001.0); // no lease yet: take it
//! assert!(matches!(run.poll(), LeaseIo::WriteIf { expected: None, .. }));
//! run.handle(LeaseOutcome::Written(true), 1_002.0);
//! assert_eq!(run.poll(), LeaseIo::Summarize);
//! run.handle(LeaseOutcome::Summary(Some("the summary".into())), 9_000.0);
//! assert!(matches!(run.poll(), LeaseIo::WriteIf { .. })); // leaves the summary in the lease
//! run.handle(LeaseOutcome::Written(true), 9_001.0);
//! assert_eq!(run.poll(), LeaseIo::Done { text: Some("the summary".into()), shared: false });
//! ```

use serde::{Deserialize, Serialize};

use crate::session::{Reply, Request};

/// How long a lease holds and how long a request waits for another's summary.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct LeaseOptions {
    /// How long a taken lease holds another request off (the summarizer's timeout and a margin).
    pub lease_ms: f64,
    /// How long a request waits for another's summary before it summarizes itself. A store
    /// call while waiting gets what is left of the wait (at least `poll_ms`); leaving or keeping
    /// the summary gets a whole wait.
    pub wait_ms: f64,
    /// How often a waiting request reads the lease.
    pub poll_ms: f64,
    /// Write a summary made without the lease beside the state (a summary asked ahead).
    pub keep: bool,
}

impl Default for LeaseOptions {
    fn default() -> Self {
        LeaseOptions {
            lease_ms: 125_000.0,
            wait_ms: 120_000.0,
            poll_ms: 50.0,
            keep: false,
        }
    }
}

/// What a [`LeaseRun`] needs next.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseIo {
    /// Read the lease at `path` within `timeout_ms`; hand back [`LeaseOutcome::Read`].
    Read {
        /// The lease's store path.
        path: String,
        /// The longest the host waits for the store.
        timeout_ms: f64,
    },
    /// Write `text` at `path` only while it holds `expected` (`None`: nothing): the store's
    /// compare-and-set, or read, compare and write. Hand back [`LeaseOutcome::Written`].
    WriteIf {
        /// The lease's store path.
        path: String,
        /// What the store must hold for the write to happen.
        expected: Option<String>,
        /// The lease's new text.
        text: String,
        /// The longest the host waits for the store.
        timeout_ms: f64,
    },
    /// Write `text` at `path` (a summary kept for the next request); hand back
    /// [`LeaseOutcome::Written`].
    Write {
        /// The lease's store path.
        path: String,
        /// `{"summary": ...}`.
        text: String,
        /// The longest the host waits for the store.
        timeout_ms: f64,
    },
    /// Call the summarizer; hand back [`LeaseOutcome::Summary`].
    Summarize,
    /// Wait `ms`, then hand back [`LeaseOutcome::Woke`].
    Sleep {
        /// How long.
        ms: f64,
    },
    /// The run is over. `text`: the summary (`None`: the summarizer failed); `shared`: another
    /// request made it (this one did not call the summarizer).
    Done {
        /// The summary, if there is one.
        text: Option<String>,
        /// Whether it is another request's.
        shared: bool,
    },
}

impl LeaseIo {
    /// As JSON (`{"type":"read","path","timeoutMs"}`, ...), written out rather than serialized
    /// (as [`crate::recovery::ToolIo::to_json`]).
    pub fn to_json(&self) -> String {
        let text = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let opt = |s: &Option<String>| s.as_deref().map_or_else(|| "null".to_string(), text);
        match self {
            LeaseIo::Read { path, timeout_ms } => {
                format!(
                    r#"{{"type":"read","path":{},"timeoutMs":{}}}"#,
                    text(path),
                    ms(*timeout_ms)
                )
            }
            LeaseIo::WriteIf {
                path,
                expected,
                text: t,
                timeout_ms,
            } => format!(
                r#"{{"type":"write-if","path":{},"expected":{},"text":{},"timeoutMs":{}}}"#,
                text(path),
                opt(expected),
                text(t),
                ms(*timeout_ms)
            ),
            LeaseIo::Write {
                path,
                text: t,
                timeout_ms,
            } => format!(
                r#"{{"type":"write","path":{},"text":{},"timeoutMs":{}}}"#,
                text(path),
                text(t),
                ms(*timeout_ms)
            ),
            LeaseIo::Summarize => r#"{"type":"summarize"}"#.to_string(),
            LeaseIo::Sleep { ms: m } => format!(r#"{{"type":"sleep","ms":{}}}"#, ms(*m)),
            LeaseIo::Done { text: t, shared } => {
                format!(r#"{{"type":"done","text":{},"shared":{}}}"#, opt(t), shared)
            }
        }
    }
}

impl LeaseIo {
    /// The store call or sleep as a request of the loop ([`Request::Read`], [`Request::Save`],
    /// [`Request::Put`], [`Request::Sleep`]); `None` for [`LeaseIo::Summarize`] and
    /// [`LeaseIo::Done`], which are the caller's.
    pub fn request(&self) -> Option<Request> {
        let whole = |ms: f64| Some(ms.max(0.0).round() as u64);
        Some(match self {
            LeaseIo::Read { path, timeout_ms } => Request::Read {
                path: path.clone(),
                timeout_ms: whole(*timeout_ms),
            },
            LeaseIo::WriteIf {
                path,
                expected,
                text,
                timeout_ms,
            } => Request::Save {
                path: path.clone(),
                expected: expected.clone(),
                text: text.clone(),
                timeout_ms: whole(*timeout_ms),
            },
            LeaseIo::Write {
                path,
                text,
                timeout_ms,
            } => Request::Put {
                path: path.clone(),
                text: text.clone(),
                timeout_ms: whole(*timeout_ms),
            },
            LeaseIo::Sleep { ms } => Request::Sleep {
                ms: ms.max(0.0).round() as u64,
            },
            LeaseIo::Summarize | LeaseIo::Done { .. } => return None,
        })
    }
}

impl LeaseOptions {
    /// The options of a summary made under a lease by a host whose summarizer answers within
    /// `summarize_timeout_ms`: a lease holds for that and 5 s more; a request waits that long,
    /// and for a lease another holds until it ends ([`LeaseRun`]: a holder that died is taken
    /// over by the first waiter to find its lease expired, and the others wait for that one's
    /// summary, rather than each summarizing). `keep`: a summary asked ahead of need (see
    /// [`LeaseOptions::keep`]).
    pub fn for_summarizer(summarize_timeout_ms: f64, keep: bool) -> LeaseOptions {
        LeaseOptions {
            lease_ms: summarize_timeout_ms + 5_000.0,
            wait_ms: summarize_timeout_ms,
            keep,
            ..LeaseOptions::default()
        }
    }
}

/// A summary the loop makes under a lease, or directly (no state path: nothing to lease
/// beside), driven by the host's replies in the loop's own words ([`Reply`]): the one piece
/// both a call's summary ([`crate::CallRun`]) and a summary made in the background
/// ([`AheadRun`]) run on.
#[derive(Debug, Clone, PartialEq)]
pub struct Leased {
    run: Option<LeaseRun>,
    /// Direct: the summarizer's answer, once given.
    direct: Option<Option<String>>,
    /// Why the summarizer failed, in the host's words.
    failure: Option<String>,
}

impl Leased {
    /// Under `run`'s lease, or directly (`None`).
    pub fn new(run: Option<LeaseRun>) -> Leased {
        Leased {
            run,
            direct: None,
            failure: None,
        }
    }

    /// What it needs now.
    pub fn poll(&self) -> LeaseIo {
        match (&self.run, &self.direct) {
            (Some(run), _) => run.poll(),
            (None, None) => LeaseIo::Summarize,
            (None, Some(text)) => LeaseIo::Done {
                text: text.clone(),
                shared: false,
            },
        }
    }

    /// The host's reply to what [`Leased::poll`] asked, at `now` (ms since the epoch). A reply
    /// of another kind than asked is a failed call: the run never hangs on a host's mistake.
    pub fn handle(&mut self, reply: Reply, now: f64) {
        let asked = self.poll();
        if asked == LeaseIo::Summarize {
            let text = match reply {
                Reply::Text { text } => Some(text),
                Reply::Failed { error } => {
                    self.failure = Some(error);
                    None
                }
                _ => None,
            };
            match &mut self.run {
                Some(run) => run.handle(LeaseOutcome::Summary(text), now),
                None => self.direct = Some(text),
            }
            return;
        }
        let Some(run) = &mut self.run else {
            return;
        };
        let outcome = match reply {
            Reply::Read { text } => LeaseOutcome::Read(text),
            Reply::Saved | Reply::Done => LeaseOutcome::Written(true),
            Reply::Refused { .. } => LeaseOutcome::Written(false),
            Reply::Woke => LeaseOutcome::Woke,
            Reply::Failed { error } => LeaseOutcome::Failed(error),
            _ => LeaseOutcome::Failed("a reply of another kind than asked".into()),
        };
        run.handle(outcome, now);
    }

    /// The request was dropped: the write that releases the lease it holds or may hold
    /// ([`LeaseRun::abandon`]), or `None`.
    pub fn abandon(&mut self) -> Option<LeaseIo> {
        self.run.as_mut().and_then(LeaseRun::abandon)
    }

    /// The summary as a reply to the summary request it stands for, once over: its text, or
    /// why there is none (the summarizer's words).
    pub fn reply(&self) -> Option<Reply> {
        let LeaseIo::Done { text, .. } = self.poll() else {
            return None;
        };
        Some(match text {
            Some(text) => Reply::Text { text },
            None => Reply::Failed {
                error: self.failure.clone().unwrap_or_else(|| "no summary".into()),
            },
        })
    }
}

/// A summary asked ahead of need ([`crate::Request::Background`]), made off the critical path:
/// with a state path under the lease beside the state at [`ahead_path`] (instances that ask the
/// same span at once make it once, and the next request, on any instance, reads it there, also
/// when the lease could not be taken), else directly. One request at a time:
/// [`AheadRun::poll`], then [`AheadRun::handle`] with the same id, until it is
/// [`AheadPoll::Done`]; the text then goes to the compactor ([`crate::Compactor::offer_summary`],
/// or [`crate::Compactor::forget_ahead`] when there is none).
#[derive(Debug, Clone, PartialEq)]
pub struct AheadRun {
    leased: Leased,
    /// The request out.
    id: u64,
    out: bool,
}

/// What [`AheadRun::poll`] gives the host.
#[derive(Debug, Clone, PartialEq)]
pub enum AheadPoll {
    /// Carry out this request (`None`: call the summarizer with the summary asked ahead).
    Io(u64, Option<Box<Request>>),
    /// Waiting for the reply to the request out.
    Wait,
    /// Over: the summary, or none.
    Done(Option<String>),
}

impl AheadRun {
    /// The summary asked ahead under `key`, by the request `owner` (unique: the host's random
    /// id), at `now` (ms since the epoch), by a summarizer that answers within
    /// `summarize_timeout_ms`; beside the state at `state_path` when there is one.
    pub fn new(
        state_path: Option<&str>,
        key: &str,
        owner: &str,
        now: f64,
        summarize_timeout_ms: f64,
    ) -> AheadRun {
        let run = state_path.map(|path| {
            let options = LeaseOptions::for_summarizer(summarize_timeout_ms, true);
            LeaseRun::new(&ahead_path(path, key), owner, now, options)
        });
        AheadRun {
            leased: Leased::new(run),
            id: 0,
            out: false,
        }
    }

    /// The next step.
    pub fn poll(&mut self) -> AheadPoll {
        if self.out {
            return AheadPoll::Wait;
        }
        let io = self.leased.poll();
        if let LeaseIo::Done { text, .. } = io {
            return AheadPoll::Done(text);
        }
        self.id += 1;
        self.out = true;
        AheadPoll::Io(self.id, io.request().map(Box::new))
    }

    /// The reply to request `id`, at `now`. Another id than the one out is a typed error.
    pub fn handle(&mut self, id: u64, reply: Reply, now: f64) -> crate::Result<()> {
        if !self.out || id != self.id {
            return Err(crate::Error::PlanMismatch {
                action_id: None,
                message: format!("reply to request {id}: not the summary run's request out"),
            });
        }
        self.out = false;
        self.leased.handle(reply, now);
        Ok(())
    }
}

/// A duration or time in whole milliseconds, as JSON.
fn ms(value: f64) -> String {
    format!("{}", value.max(0.0).round() as i64)
}

/// How the host's IO went.
#[derive(Debug, Clone, PartialEq)]
pub enum LeaseOutcome {
    /// What the store holds at the lease's path (`None`: nothing).
    Read(Option<String>),
    /// Whether the conditional (or plain) write happened.
    Written(bool),
    /// The store call failed or did not answer in time.
    Failed(String),
    /// The summarizer's text (`None`: it failed).
    Summary(Option<String>),
    /// The sleep is over.
    Woke,
}

/// What a lease's text says: its summary, once made; else whether a request still holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseState {
    /// The summary left in the lease.
    pub summary: Option<String>,
    /// A request holds the lease (its `until` is after `now`).
    pub held: bool,
}

impl LeaseState {
    /// The lease in `text` at `now` (ms since the epoch). No text, or not a lease: neither.
    pub fn of(text: Option<&str>, now: f64) -> LeaseState {
        let value: Option<serde_json::Value> = text.and_then(|t| serde_json::from_str(t).ok());
        let object = value.as_ref().and_then(|v| v.as_object());
        if let Some(summary) = object
            .and_then(|o| o.get("summary"))
            .and_then(|s| s.as_str())
        {
            return LeaseState {
                summary: Some(summary.to_string()),
                held: false,
            };
        }
        let until = object.and_then(|o| o.get("until")).and_then(|u| u.as_f64());
        LeaseState {
            summary: None,
            held: until.is_some_and(|u| u > now),
        }
    }

    /// As JSON: `{"summary": ...}` or `{"held": bool}`.
    pub fn to_json(&self) -> String {
        match &self.summary {
            Some(s) => format!(
                r#"{{"summary":{},"held":false}}"#,
                serde_json::to_string(s).unwrap_or_default()
            ),
            None => format!(r#"{{"held":{}}}"#, self.held),
        }
    }
}

/// What a request does with the text beside the state where a summary another request asked
/// ahead waits ([`ahead_path`]), read before a call while the loaded state holds no text of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AheadRead {
    /// Still being made (nothing there yet, or a request holds its lease): read again before
    /// the next call; the plan waits for it until the hard limit.
    Wait,
    /// The summary: offer it to the core (`offer_summary`).
    Offer(String),
    /// Failed, or its request died (an expired lease): forget it (`forget_ahead`), and the
    /// lossy tier summarizes in the call.
    Forget,
}

impl AheadRead {
    /// The text at the ahead path (none: nothing there) at `now` (ms since the epoch).
    pub fn of(text: Option<&str>, now: f64) -> AheadRead {
        let lease = LeaseState::of(text, now);
        match lease.summary {
            Some(summary) => AheadRead::Offer(summary),
            None if text.is_none() || lease.held => AheadRead::Wait,
            None => AheadRead::Forget,
        }
    }
}

/// What follows a state path in the paths of its summary leases: `<statePath>.summaries/`.
pub const LEASES_DIR: &str = ".summaries/";

/// Where the lease of the summary request `prompt` lives beside the state at `state_path`:
/// named by a 64-bit hash of the prompt (two racing requests of one turn plan the same prompt).
/// FNV-1a over the prompt's UTF-16 code units, twice with two bases, as the npm package
/// named them before the rule moved here.
pub fn lease_path(state_path: &str, prompt: &str) -> String {
    let units = || prompt.encode_utf16();
    let len = units().count() as u32;
    let a = fnv1a(units(), 0x811c_9dc5);
    let b = fnv1a(units(), 0x0100_0193 ^ len);
    format!("{state_path}{LEASES_DIR}{a:08x}{b:08x}.json")
}

/// Where a summary asked ahead of need under `key` waits beside the state at `state_path`.
pub fn ahead_path(state_path: &str, key: &str) -> String {
    format!("{state_path}{LEASES_DIR}ahead-{key}.json")
}

fn fnv1a(units: impl Iterator<Item = u16>, basis: u32) -> u32 {
    units.fold(basis, |h, u| (h ^ u32::from(u)).wrapping_mul(0x0100_0193))
}

/// `{"summary": text}`: a lease once its summary is made.
fn summary_text(text: &str) -> String {
    format!(
        r#"{{"summary":{}}}"#,
        serde_json::to_string(text).unwrap_or_default()
    )
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// Reading the lease.
    Read,
    /// Taking it over what was read (`expected`): `mine` is the lease written.
    Take {
        expected: Option<String>,
        mine: String,
    },
    /// Asleep before the next read.
    Sleep {
        ms: f64,
    },
    /// The summarizer runs: `mine` when under this request's lease.
    Summarize {
        mine: Option<String>,
    },
    /// Leaving the summary in the lease `mine` (or releasing it).
    Release {
        mine: String,
        text: Option<String>,
    },
    /// `keep`: reading what is stored before writing the summary there.
    KeepRead {
        text: String,
    },
    /// `keep`: writing the summary there.
    KeepWrite {
        text: String,
    },
    Done {
        text: Option<String>,
        shared: bool,
    },
}

/// One leased summary: see the module's head.
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseRun {
    path: String,
    owner: String,
    options: LeaseOptions,
    deadline: f64,
    /// The held lease last waited on, as read: another's lease in its place (a request that
    /// took over a lease its holder left to expire) is waited on afresh.
    waited_on: Option<String>,
    /// The time of the last input.
    now: f64,
    step: Step,
}

impl LeaseRun {
    /// A run for the lease at `path`, by the request `owner` (unique per request: the host's
    /// random id), started at `now` (ms since the epoch).
    pub fn new(path: &str, owner: &str, now: f64, options: LeaseOptions) -> LeaseRun {
        LeaseRun {
            path: path.to_string(),
            owner: owner.to_string(),
            deadline: now + options.wait_ms,
            waited_on: None,
            now,
            options,
            step: Step::Read,
        }
    }

    /// What the run needs now; [`LeaseIo::Done`] once it is over (again on every call).
    pub fn poll(&self) -> LeaseIo {
        let path = self.path.clone();
        // While waiting for the lease, a store call is bounded by what is left of the wait (at
        // least one poll); leaving the summary (or keeping it) gets a whole wait.
        let waiting = (self.deadline - self.now).max(self.options.poll_ms);
        let timeout_ms = self.options.wait_ms.max(self.options.poll_ms);
        match &self.step {
            Step::Read => LeaseIo::Read {
                path,
                timeout_ms: waiting,
            },
            Step::KeepRead { .. } => LeaseIo::Read { path, timeout_ms },
            Step::Take { expected, mine } => LeaseIo::WriteIf {
                path,
                expected: expected.clone(),
                text: mine.clone(),
                timeout_ms: waiting,
            },
            Step::Sleep { ms } => LeaseIo::Sleep { ms: *ms },
            Step::Summarize { .. } => LeaseIo::Summarize,
            Step::Release { mine, text } => LeaseIo::WriteIf {
                path,
                expected: Some(mine.clone()),
                text: text
                    .as_deref()
                    .map(summary_text)
                    .unwrap_or_else(|| self.lease(0.0)),
                timeout_ms,
            },
            Step::KeepWrite { text } => LeaseIo::Write {
                path,
                text: summary_text(text),
                timeout_ms,
            },
            Step::Done { text, shared } => LeaseIo::Done {
                text: text.clone(),
                shared: *shared,
            },
        }
    }

    /// The request was dropped (its call abandoned): the write that releases the lease this
    /// run holds or may hold (its take written, or in flight: a take that never landed is
    /// refused, harmlessly), or `None`. The run is over after it.
    pub fn abandon(&mut self) -> Option<LeaseIo> {
        let mine = match std::mem::replace(&mut self.step, Step::Read) {
            Step::Take { mine, .. } | Step::Summarize { mine: Some(mine) } => mine,
            Step::Release { mine, .. } => mine,
            _ => {
                self.step = Step::Done {
                    text: None,
                    shared: false,
                };
                return None;
            }
        };
        self.step = Step::Release { mine, text: None };
        let release = self.poll();
        self.step = Step::Done {
            text: None,
            shared: false,
        };
        Some(release)
    }

    /// The outcome of the IO [`LeaseRun::poll`] asked for, at `now`. An outcome of another kind
    /// than asked (a host bug) ends the run as a direct summary would: it never hangs.
    pub fn handle(&mut self, outcome: LeaseOutcome, now: f64) {
        self.now = now;
        let step = std::mem::replace(&mut self.step, Step::Read);
        self.step = match (step, outcome) {
            (Step::Read, LeaseOutcome::Read(current)) => self.after_read(current, now),
            (Step::Take { mine, .. }, LeaseOutcome::Written(true)) => {
                Step::Summarize { mine: Some(mine) }
            }
            (Step::Take { .. }, LeaseOutcome::Written(false)) => self.wait_or_direct(now),
            (Step::Sleep { .. }, LeaseOutcome::Woke) => Step::Read,
            (Step::Summarize { mine: Some(mine) }, LeaseOutcome::Summary(text)) => {
                Step::Release { mine, text }
            }
            (Step::Summarize { mine: None }, LeaseOutcome::Summary(text)) => {
                self.finish(text, false)
            }
            (Step::Release { text, .. }, LeaseOutcome::Written(true)) => Step::Done {
                text,
                shared: false,
            },
            (Step::Release { text, .. }, _) => self.finish(text, false),
            (Step::KeepRead { text }, LeaseOutcome::Read(current)) => {
                if LeaseState::of(current.as_deref(), now).summary.as_deref() == Some(&text) {
                    Step::Done {
                        text: Some(text),
                        shared: false,
                    }
                } else {
                    Step::KeepWrite { text }
                }
            }
            (Step::KeepRead { text } | Step::KeepWrite { text }, _) => Step::Done {
                text: Some(text),
                shared: false,
            },
            (done @ Step::Done { .. }, _) => done,
            // A failed or timed-out store call, or an outcome not asked for: summarize directly.
            (Step::Summarize { mine: None }, _) => Step::Summarize { mine: None },
            (Step::Summarize { mine: Some(mine) }, _) => Step::Release { mine, text: None },
            _ => Step::Summarize { mine: None },
        };
    }

    /// The run's answer once done: `(text, shared)`.
    pub fn result(&self) -> Option<(Option<&str>, bool)> {
        match &self.step {
            Step::Done { text, shared } => Some((text.as_deref(), *shared)),
            _ => None,
        }
    }

    fn after_read(&mut self, current: Option<String>, now: f64) -> Step {
        let lease = LeaseState::of(current.as_deref(), now);
        if let Some(summary) = lease.summary {
            return Step::Done {
                text: Some(summary),
                shared: true,
            };
        }
        if lease.held && self.waited_on != current {
            // A holder seen for the first time is waited on until its lease ends (at most a
            // lease from now, and a poll past it): one that died is then found expired and taken
            // over, by one waiter, whose summary the others wait for in turn.
            let until = current
                .as_deref()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
                .and_then(|v| v.get("until").and_then(serde_json::Value::as_f64));
            if let Some(until) = until {
                let end = until.min(now + self.options.lease_ms) + self.options.poll_ms;
                self.deadline = self.deadline.max(end);
            }
            self.waited_on = current.clone();
        }
        let waited = now >= self.deadline;
        if lease.held {
            return if waited {
                Step::Summarize { mine: None }
            } else {
                self.sleep(now)
            };
        }
        Step::Take {
            expected: current,
            mine: self.lease(now + self.options.lease_ms),
        }
    }

    fn wait_or_direct(&self, now: f64) -> Step {
        if now >= self.deadline {
            Step::Summarize { mine: None }
        } else {
            self.sleep(now)
        }
    }

    fn sleep(&self, now: f64) -> Step {
        Step::Sleep {
            ms: self.options.poll_ms.min(self.deadline - now).max(0.0),
        }
    }

    fn finish(&self, text: Option<String>, shared: bool) -> Step {
        match text {
            Some(text) if self.options.keep && !shared => Step::KeepRead { text },
            text => Step::Done { text, shared },
        }
    }

    /// This request's lease until `until`.
    fn lease(&self, until: f64) -> String {
        format!(
            r#"{{"owner":{},"until":{}}}"#,
            serde_json::to_string(&self.owner).unwrap_or_default(),
            ms(until)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> LeaseOptions {
        LeaseOptions {
            lease_ms: 1_000.0,
            wait_ms: 500.0,
            poll_ms: 50.0,
            keep: false,
        }
    }

    /// Drives `run` through `outcomes` (each at its time) and returns the IO asked before each.
    fn drive(run: &mut LeaseRun, outcomes: Vec<(LeaseOutcome, f64)>) -> Vec<LeaseIo> {
        let mut asked = Vec::new();
        for (outcome, now) in outcomes {
            asked.push(run.poll());
            run.handle(outcome, now);
        }
        asked.push(run.poll());
        asked
    }

    #[test]
    fn paths_are_the_npm_package_names() {
        // As js/src/state.ts named them (FNV-1a over UTF-16 code units), so that leases
        // written before the rule moved into the core are found.
        assert_eq!(
            lease_path("/state/a.json", "Summarize this \u{1F600} conversation"),
            "/state/a.json.summaries/d187e7d62b90489e.json"
        );
        assert_eq!(lease_path("/s", ""), "/s.summaries/811c9dc501000193.json");
        assert_eq!(
            ahead_path("/state/a.json", "k1"),
            "/state/a.json.summaries/ahead-k1.json"
        );
    }

    #[test]
    fn a_free_lease_is_taken_summarized_and_left_with_the_summary() {
        let mut run = LeaseRun::new("/l", "me", 1_000.0, options());
        let asked = drive(
            &mut run,
            vec![
                (
                    LeaseOutcome::Read(Some(r#"{"owner":"old","until":999}"#.into())),
                    1_001.0,
                ),
                (LeaseOutcome::Written(true), 1_002.0),
                (LeaseOutcome::Summary(Some("S".into())), 3_000.0),
                (LeaseOutcome::Written(true), 3_001.0),
            ],
        );
        assert_eq!(
            asked[1],
            LeaseIo::WriteIf {
                path: "/l".into(),
                expected: Some(r#"{"owner":"old","until":999}"#.into()),
                text: r#"{"owner":"me","until":2001}"#.into(),
                // What is left of the wait (it started at 1,000 and waits 500).
                timeout_ms: 499.0
            }
        );
        assert_eq!(
            asked[0],
            LeaseIo::Read {
                path: "/l".into(),
                timeout_ms: 500.0
            }
        );
        assert_eq!(asked[2], LeaseIo::Summarize);
        assert_eq!(
            asked[3],
            LeaseIo::WriteIf {
                path: "/l".into(),
                expected: Some(r#"{"owner":"me","until":2001}"#.into()),
                text: r#"{"summary":"S"}"#.into(),
                timeout_ms: 500.0
            }
        );
        assert_eq!(run.result(), Some((Some("S"), false)));
    }

    /// A dropped request releases the lease it holds, and the one whose take is in flight (the
    /// write may land after the drop: a review); one that only read or waits has none.
    #[test]
    fn an_abandoned_run_releases_the_lease_it_holds_or_is_taking() {
        let released = |expected: &str| LeaseIo::WriteIf {
            path: "/l".into(),
            expected: Some(expected.into()),
            text: r#"{"owner":"me","until":0}"#.into(),
            timeout_ms: 500.0,
        };
        // Its take in flight.
        let mut run = LeaseRun::new("/l", "me", 1_000.0, options());
        run.handle(LeaseOutcome::Read(None), 1_001.0);
        assert!(matches!(
            run.poll(),
            LeaseIo::WriteIf { expected: None, .. }
        ));
        assert_eq!(
            run.abandon(),
            Some(released(r#"{"owner":"me","until":2001}"#))
        );
        assert!(matches!(run.poll(), LeaseIo::Done { text: None, .. }));
        // Summarizing under it.
        let mut run = LeaseRun::new("/l", "me", 1_000.0, options());
        run.handle(LeaseOutcome::Read(None), 1_001.0);
        run.handle(LeaseOutcome::Written(true), 1_002.0);
        assert_eq!(run.poll(), LeaseIo::Summarize);
        assert_eq!(
            run.abandon(),
            Some(released(r#"{"owner":"me","until":2001}"#))
        );
        // Only reading: nothing to release.
        let mut run = LeaseRun::new("/l", "me", 1_000.0, options());
        assert_eq!(run.abandon(), None);
        assert!(matches!(run.poll(), LeaseIo::Done { text: None, .. }));
    }

    #[test]
    fn another_requests_lease_is_waited_on_and_its_summary_shared() {
        let mut run = LeaseRun::new("/l", "me", 1_000.0, options());
        let held = r#"{"owner":"other","until":5000}"#;
        let asked = drive(
            &mut run,
            vec![
                (LeaseOutcome::Read(Some(held.into())), 1_000.0),
                (LeaseOutcome::Woke, 1_050.0),
                (
                    LeaseOutcome::Read(Some(r#"{"summary":"theirs"}"#.into())),
                    1_060.0,
                ),
            ],
        );
        assert_eq!(asked[1], LeaseIo::Sleep { ms: 50.0 });
        assert_eq!(run.result(), Some((Some("theirs"), true)));
    }

    #[test]
    fn a_lease_held_past_the_wait_is_not_waited_on_again() {
        let mut run = LeaseRun::new("/l", "me", 1_000.0, options());
        let held = r#"{"owner":"other","until":5000}"#;
        // Held till 5,000: waited on a lease's length from when it was first seen (and a poll).
        run.handle(LeaseOutcome::Read(Some(held.into())), 1_480.0);
        assert_eq!(run.poll(), LeaseIo::Sleep { ms: 50.0 });
        run.handle(LeaseOutcome::Woke, 2_500.0);
        run.handle(LeaseOutcome::Read(Some(held.into())), 2_500.0);
        assert_eq!(run.poll(), LeaseIo::Sleep { ms: 30.0 }); // only what is left of the wait
        run.handle(LeaseOutcome::Woke, 2_530.0);
        run.handle(LeaseOutcome::Read(Some(held.into())), 2_530.0);
        assert_eq!(run.poll(), LeaseIo::Summarize);
        run.handle(LeaseOutcome::Summary(Some("mine".into())), 2_000.0);
        assert_eq!(run.result(), Some((Some("mine"), false)));
    }

    #[test]
    fn waiters_on_a_dead_holder_wait_for_the_one_that_takes_its_lease_over() {
        let options = LeaseOptions::for_summarizer(1_000.0, false);
        let dead = r#"{"owner":"dead","until":6000}"#.to_string();
        let mut runs: Vec<LeaseRun> = (0..3)
            .map(|i| LeaseRun::new("/l", &format!("w{i}"), 1_000.0, options.clone()))
            .collect();
        for run in &mut runs {
            run.handle(LeaseOutcome::Read(Some(dead.clone())), 1_000.0);
            assert!(matches!(run.poll(), LeaseIo::Sleep { .. }));
        }
        // The lease expires while they wait: each reads it expired; the first takes it.
        let mut store = dead;
        let mut summarizing = 0;
        for run in &mut runs {
            run.handle(LeaseOutcome::Woke, 6_010.0);
            run.handle(LeaseOutcome::Read(Some(store.clone())), 6_010.0);
            match run.poll() {
                LeaseIo::WriteIf { text, .. } if summarizing == 0 => {
                    store = text;
                    summarizing += 1;
                    run.handle(LeaseOutcome::Written(true), 6_011.0);
                    assert_eq!(run.poll(), LeaseIo::Summarize);
                }
                // Read after the take: the new holder is waited on, not summarized over.
                LeaseIo::Sleep { .. } => {}
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(summarizing, 1);
        // One that read the expired lease just before the take is refused, then waits too.
        let mut late = LeaseRun::new("/l", "w3", 1_000.0, options.clone());
        late.handle(
            LeaseOutcome::Read(Some(r#"{"owner":"dead","until":6000}"#.into())),
            1_000.0,
        );
        late.handle(LeaseOutcome::Woke, 6_010.0);
        late.handle(
            LeaseOutcome::Read(Some(r#"{"owner":"dead","until":6000}"#.into())),
            6_010.0,
        );
        assert!(matches!(late.poll(), LeaseIo::WriteIf { .. }));
        late.handle(LeaseOutcome::Written(false), 6_012.0);
        late.handle(LeaseOutcome::Woke, 6_062.0);
        late.handle(LeaseOutcome::Read(Some(store.clone())), 6_062.0);
        assert!(
            matches!(late.poll(), LeaseIo::Sleep { .. }),
            "waits, not summarizes"
        );
        runs.push(late);
        // The new holder's summary reaches the others.
        for run in &mut runs[1..] {
            // Past the first wait's end, the new holder is still waited on.
            run.handle(LeaseOutcome::Woke, 7_100.0);
            run.handle(LeaseOutcome::Read(Some(store.clone())), 7_100.0);
            assert!(
                matches!(run.poll(), LeaseIo::Sleep { .. }),
                "waits on the new holder"
            );
            run.handle(LeaseOutcome::Woke, 7_900.0);
            run.handle(
                LeaseOutcome::Read(Some(r#"{"summary":"one"}"#.into())),
                7_900.0,
            );
            assert_eq!(run.result(), Some((Some("one"), true)));
        }
    }

    #[test]
    fn store_failures_summarize_directly_and_never_wait() {
        for fail_at in 0..2 {
            let mut run = LeaseRun::new("/l", "me", 0.0, options());
            if fail_at == 1 {
                run.handle(LeaseOutcome::Read(None), 0.0);
            }
            run.handle(LeaseOutcome::Failed("down".into()), 1.0);
            assert_eq!(run.poll(), LeaseIo::Summarize, "failure at step {fail_at}");
            run.handle(LeaseOutcome::Summary(None), 2.0);
            assert_eq!(run.result(), Some((None, false)));
        }
    }

    #[test]
    fn a_refused_take_waits_and_a_failed_summary_releases_the_lease() {
        let mut run = LeaseRun::new("/l", "me", 0.0, options());
        run.handle(LeaseOutcome::Read(None), 0.0);
        run.handle(LeaseOutcome::Written(false), 1.0);
        assert_eq!(run.poll(), LeaseIo::Sleep { ms: 50.0 });
        run.handle(LeaseOutcome::Woke, 51.0);
        run.handle(
            LeaseOutcome::Read(Some(r#"{"owner":"x","until":0}"#.into())),
            52.0,
        );
        run.handle(LeaseOutcome::Written(true), 53.0);
        run.handle(LeaseOutcome::Summary(None), 60.0);
        assert_eq!(
            run.poll(),
            LeaseIo::WriteIf {
                path: "/l".into(),
                expected: Some(r#"{"owner":"me","until":1052}"#.into()),
                text: r#"{"owner":"me","until":0}"#.into(),
                timeout_ms: 500.0
            }
        );
        run.handle(LeaseOutcome::Failed("timeout".into()), 70.0);
        assert_eq!(run.result(), Some((None, false)));
    }

    #[test]
    fn keep_writes_a_summary_made_without_the_lease_unless_it_is_stored() {
        let keep = LeaseOptions {
            keep: true,
            ..options()
        };
        let mut run = LeaseRun::new("/a", "me", 0.0, keep);
        run.handle(LeaseOutcome::Failed("down".into()), 0.0);
        run.handle(LeaseOutcome::Summary(Some("S\n\"q\"".into())), 1.0);
        assert!(matches!(run.poll(), LeaseIo::Read { .. }));
        run.handle(LeaseOutcome::Read(None), 2.0);
        assert_eq!(
            run.poll(),
            LeaseIo::Write {
                path: "/a".into(),
                text: r#"{"summary":"S\n\"q\""}"#.into(),
                timeout_ms: 500.0
            }
        );
        run.handle(LeaseOutcome::Failed("down".into()), 3.0);
        assert_eq!(run.result(), Some((Some("S\n\"q\""), false)));

        let mut stored = LeaseRun::new("/a", "me", 0.0, keep);
        stored.handle(LeaseOutcome::Failed("down".into()), 0.0);
        stored.handle(LeaseOutcome::Summary(Some("S".into())), 1.0);
        stored.handle(LeaseOutcome::Read(Some(r#"{"summary":"S"}"#.into())), 2.0);
        assert_eq!(stored.result(), Some((Some("S"), false)));
    }

    #[test]
    fn lease_state_reads_summaries_and_holders() {
        assert_eq!(
            LeaseState::of(Some(r#"{"summary":"x","until":9}"#), 0.0)
                .summary
                .as_deref(),
            Some("x")
        );
        assert!(LeaseState::of(Some(r#"{"owner":"o","until":10}"#), 9.0).held);
        assert!(!LeaseState::of(Some(r#"{"owner":"o","until":10}"#), 10.0).held);
        assert!(!LeaseState::of(Some("not json"), 0.0).held);
        assert!(!LeaseState::of(None, 0.0).held);
        assert_eq!(LeaseState::of(None, 0.0).to_json(), r#"{"held":false}"#);
    }

    #[test]
    fn io_as_json() {
        let io = LeaseIo::WriteIf {
            path: "/l".into(),
            expected: None,
            text: "{}".into(),
            timeout_ms: 12.4,
        };
        assert_eq!(
            io.to_json(),
            r#"{"type":"write-if","path":"/l","expected":null,"text":"{}","timeoutMs":12}"#
        );
        let done = LeaseIo::Done {
            text: None,
            shared: false,
        };
        assert_eq!(
            done.to_json(),
            r#"{"type":"done","text":null,"shared":false}"#
        );
    }

    #[test]
    fn what_a_request_does_with_a_summary_asked_ahead() {
        let now = 1_000.0;
        assert_eq!(AheadRead::of(None, now), AheadRead::Wait, "not there yet");
        assert_eq!(
            AheadRead::of(Some(r#"{"owner":"a","until":2000}"#), now),
            AheadRead::Wait,
            "being made"
        );
        assert_eq!(
            AheadRead::of(Some(r#"{"owner":"a","until":500}"#), now),
            AheadRead::Forget,
            "its request died"
        );
        assert_eq!(
            AheadRead::of(Some(r#"{"owner":"a","until":0}"#), now),
            AheadRead::Forget,
            "failed, released"
        );
        assert_eq!(
            AheadRead::of(Some(r###"{"summary":"## S"}"###), now),
            AheadRead::Offer("## S".into())
        );
        assert_eq!(
            AheadRead::of(Some(r#"{"summary":"a \"b\""}"#), now),
            AheadRead::Offer("a \"b\"".into())
        );
    }

    #[test]
    fn a_summary_asked_ahead_without_a_state_path_is_made_directly() {
        let mut run = AheadRun::new(None, "k", "me", 0.0, 1_000.0);
        assert_eq!(
            run.poll(),
            AheadPoll::Io(1, None),
            "the summarizer, at once"
        );
        assert_eq!(run.poll(), AheadPoll::Wait, "one request at a time");
        assert!(
            run.handle(7, Reply::Done, 1.0).is_err(),
            "a reply to another request"
        );
        run.handle(1, Reply::Text { text: "s".into() }, 1.0)
            .unwrap();
        assert_eq!(run.poll(), AheadPoll::Done(Some("s".into())));
    }

    #[test]
    fn a_summary_asked_ahead_with_a_state_path_is_made_under_its_lease_and_kept() {
        let mut run = AheadRun::new(Some("/s.json"), "k", "me", 1_000.0, 1_000.0);
        let path = ahead_path("/s.json", "k");
        let AheadPoll::Io(id, Some(request)) = run.poll() else {
            panic!("a read of the lease first")
        };
        let Request::Read { path: read, .. } = *request else {
            panic!("a read of the lease first")
        };
        assert_eq!(read, path);
        run.handle(id, Reply::Read { text: None }, 1_001.0).unwrap();
        let AheadPoll::Io(id, Some(request)) = run.poll() else {
            panic!("the lease taken over nothing")
        };
        let Request::Save {
            expected: None,
            text,
            ..
        } = *request
        else {
            panic!("the lease taken over nothing")
        };
        assert_eq!(text, r#"{"owner":"me","until":7001}"#);
        run.handle(id, Reply::Saved, 1_002.0).unwrap();
        let AheadPoll::Io(id, None) = run.poll() else {
            panic!("then the summarizer")
        };
        run.handle(id, Reply::Text { text: "s".into() }, 2_000.0)
            .unwrap();
        let AheadPoll::Io(id, Some(request)) = run.poll() else {
            panic!("the summary left in the lease")
        };
        let Request::Save { text, .. } = *request else {
            panic!("the summary left in the lease")
        };
        assert_eq!(text, r#"{"summary":"s"}"#);
        run.handle(id, Reply::Saved, 2_001.0).unwrap();
        assert_eq!(run.poll(), AheadPoll::Done(Some("s".into())));
    }

    #[test]
    fn a_leased_summary_that_failed_says_why_in_the_summarizers_words() {
        let mut leased = Leased::new(Some(LeaseRun::new("/l", "me", 0.0, options())));
        leased.handle(Reply::Read { text: None }, 1.0);
        leased.handle(Reply::Saved, 2.0);
        assert_eq!(leased.poll(), LeaseIo::Summarize);
        leased.handle(
            Reply::Failed {
                error: "rate limited".into(),
            },
            3.0,
        );
        // The lease is released (`until` 0) for another request to take.
        assert!(
            matches!(leased.poll(), LeaseIo::WriteIf { ref text, .. } if text.contains(r#""until":0"#))
        );
        // A store that fails to release it does not fail the summary more.
        leased.handle(
            Reply::Failed {
                error: "store down".into(),
            },
            4.0,
        );
        assert_eq!(
            leased.reply(),
            Some(Reply::Failed {
                error: "rate limited".into()
            })
        );
    }

    #[test]
    fn a_reply_of_another_kind_than_asked_never_hangs_a_lease() {
        let mut leased = Leased::new(Some(LeaseRun::new("/l", "me", 0.0, options())));
        // A host that answers a read as a sleep: a failed store call, summarized directly.
        leased.handle(Reply::Woke, 1.0);
        assert_eq!(leased.poll(), LeaseIo::Summarize);
        leased.handle(Reply::Text { text: "s".into() }, 2.0);
        assert_eq!(leased.reply(), Some(Reply::Text { text: "s".into() }));
    }
}
