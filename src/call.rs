//! One whole call of the loop (docs/LOOP.md, slice 3): a [`Session`] and what ends it, as a
//! sans-IO state machine that every host drives the same way — the npm and Python hosts through
//! the bindings, a native Rust app through [`Compactor::manage`](crate::Host).
//!
//! Around its session, a call
//! - looks for the summary another request asked ahead beside the state ([`Request::Read`]);
//! - makes its summaries under a lease beside the state ([`CallRun::leased`]: the lease's
//!   store calls and sleeps are its requests too, `src/lease.rs`);
//! - plans dry first when only part of the conversation crossed (`partial`: a binding holds the
//!   conversation and syncs what changed), and asks for the rest ([`Request::Resync`]) only when
//!   there is work;
//! - at the end of each round records the call's time ([`Compactor::called_at`]) and the summary
//!   asked ahead ([`Compactor::ask_ahead`]), handed out to be made off the critical path
//!   ([`Request::Background`]) before the state is saved;
//! - saves the state at the compactor's state path ([`Compactor::persist_at`]) when it changed:
//!   the call's conversation hashes ([`Request::Conversation`], asked only then), then a
//!   conditional write ([`Request::Save`]);
//! - after a save another request beat, does what [`crate::stored::Persist::refused`] rules:
//!   builds the compactor again on the stored state and runs the call again (a `resync` with
//!   `rerun`), answers unsaved, or ends in a conflict. A rerun's writes and summaries that an
//!   earlier round made are answered by the core, not asked again.
//!
//! The result ([`CallDone`]) carries the session's, with `state_error` (a save that failed, a
//! state that could not be read) and `conflict`.

use std::collections::HashMap;

use serde::Serialize;

use crate::compactor::{Compactor, Overflow, PlanOptions, TriggerKind};
use crate::error::{Error, Result};
use crate::lease::{lease_path, LeaseIo, LeaseOptions, LeaseRun, Leased};
use crate::message::Message;
use crate::overflow::{overflow_verdict, OverflowFailure, OverflowMoment, OverflowReport};
use crate::plan::{EventOverflow, EventStatus, Plan, Summarize};
use crate::session::{is_work, Call, Io, Managed, Poll, Reply, Request, Session, SessionCore};
use crate::stored::Refused;

/// What a [`CallRun`] needs of the compactor it runs on, beyond a session's: the conversation it
/// holds for the call, and a way to build it again on another state.
pub trait CallCore: SessionCore {
    /// The compactor (its state, its state path).
    fn compactor(&mut self) -> &mut Compactor;
    /// A plan of the conversation held for the call, with `options` (the dry plan of a call of
    /// which only part crossed).
    fn plan_held(&mut self, options: &PlanOptions) -> Result<Plan>;
    /// Takes the conversation held for the call, to run the session on.
    fn take_held(&mut self) -> Vec<Message>;
    /// Builds the compactor again on `state` (the core's state JSON a lost save found stored;
    /// `None`: nothing), keeping its state path. It holds no conversation after: the call's
    /// `resync` hands it in again.
    fn rebuild(&mut self, state: Option<&str>) -> Result<()>;
    /// The provider counted the conversation held as `reported` tokens when it refused it as
    /// too long: a calibration sample ([`Compactor::observe_usage`] against the raw count of
    /// the prompt that was sent, the conversation with the record replayed).
    fn observe_refused(&mut self, reported: u32);
}

/// A call that recovers from a provider's "prompt too long" error ([`CallRun::recovering`]: a
/// host's `recover`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    /// What the error said ([`crate::parse_overflow`]).
    pub report: OverflowReport,
    /// Which compaction of the model call this is (1 for the first).
    pub attempt: u32,
}

/// Ids of the requests a call makes around its session: far above the session's own, which
/// count from 0 (and within a `u32`: the wasm binding takes one).
const OWN_IDS: u64 = 1 << 30;

/// What [`CallRun::poll`] gives the host.
#[derive(Debug)]
pub enum CallPoll {
    /// Carry these out (in any order, or all at once) and hand each outcome back.
    Io(Vec<Io>),
    /// Waiting for outcomes of requests already handed out.
    Wait,
    /// The call is over.
    Done(Box<CallDone>),
}

/// The result of a call.
#[derive(Debug)]
pub struct CallDone {
    /// The session's result. After a dry plan (`dry`), its `messages` are empty: the
    /// conversation is the one held, as it is.
    pub managed: Managed,
    /// Planned dry, with no work: the conversation held stays as it is.
    pub dry: bool,
    /// The conversation the session was given, when the result did not take it (a cancel).
    pub input: Vec<Message>,
    /// A save that failed, or a state that could not be read and was not saved over since.
    pub state_error: Option<String>,
    /// The store kept refusing the state's saves (the hosts' typed `state_conflict`).
    pub conflict: Option<Conflict>,
    /// A recovery ([`CallRun::recovering`]) that applied nothing: the typed `context_overflow`
    /// the host raises (after the call's end: its state is saved).
    pub overflow: Option<OverflowFailure>,
}

impl CallDone {
    /// A result that leaves the conversation held as it is: `plan` made dry, with no work.
    fn dry(plan: Plan) -> Self {
        CallDone {
            managed: Managed::unchanged(Vec::new(), plan),
            dry: true,
            input: Vec::new(),
            state_error: None,
            conflict: None,
            overflow: None,
        }
    }
}

/// Why a call's state could not be saved: the store kept refusing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// What happened, with the path.
    pub message: String,
    /// The refused saves.
    pub attempts: u32,
    /// The revision the store holds.
    pub revision: u64,
}

impl Conflict {
    /// The typed error a host raises for it.
    pub fn error(self, path: &str) -> Error {
        Error::StateConflict {
            path: path.to_owned(),
            message: self.message,
            attempts: self.attempts,
            revision: self.revision,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Plan dry (partial) or start the session.
    Start,
    Session,
    /// The round is over: its time and the summary asked ahead.
    Ending,
    /// Its state saved, when a save is due.
    Saving,
    /// The result is handed out at the next poll.
    Over,
    /// Handed out.
    Finished,
}

/// A request the call makes around its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Own {
    /// The state at the path kept from this call on ([`Compactor::persist_later`]).
    State,
    /// The summary another request asked ahead, beside the state.
    Ahead,
    Resync,
    Background,
    Conversation,
    Save,
    /// The state at the path, read before the call's first summary (see [`CallRun::fresh`]).
    Fresh,
}

/// A session request whose answer a call keeps (see [`CallRun::made_before`]).
#[derive(Debug)]
enum Made {
    Write(String, u128),
    Summary(String),
}

/// One `manage` or `compact` call (see the module docs). Start it with [`CallRun::new`], then
/// alternate [`CallRun::poll`] and [`CallRun::handle`] until `poll` returns [`CallPoll::Done`].
#[derive(Debug)]
pub struct CallRun {
    call: Call,
    /// Only the state's save, asked by the app ([`CallRun::save_state`]).
    explicit: bool,
    /// Only part of the conversation is held: plan dry before the session.
    partial: bool,
    /// The call's conversation hashes, once known (given at the start, or asked for a save).
    conversation: Option<String>,
    /// The call's first round (a lost save starts another).
    first: bool,
    /// A recovery from a provider's overflow, and whether this round's compactor has its
    /// count.
    recovery: Option<Recovery>,
    calibrated: bool,
    /// The summary another request asked ahead was looked for (the key read, while out).
    ahead_read: Option<Option<String>>,
    stage: Stage,
    session: Option<Session>,
    /// The call's own request out: its id and kind.
    own: Option<(u64, Own)>,
    /// Requests a reply made (the call's own, a summary lease's): handed out at the next poll.
    next: Vec<Io>,
    next_id: u64,
    /// The summary asked ahead at the end of the round.
    ahead: Option<Summarize>,
    /// The round's result while its state is saved.
    done: Option<CallDone>,
    /// What this call wrote (path → a hash of the content) and the summaries it was given
    /// (request text → summary): a round run again after a lost save does not write the same
    /// file twice nor ask the summarizer twice for the same span.
    written: HashMap<String, u128>,
    summaries: HashMap<String, String>,
    /// The session's writes and summaries handed out and not answered yet, by id.
    out: HashMap<u64, Made>,
    /// Summaries are made under a lease beside the state (with a state path): by the request
    /// `owner`, with these options.
    lease: Option<(String, LeaseOptions)>,
    /// The wall clock (ms since the epoch) at the last input that said it: leases are between
    /// concurrent requests, whatever the compactor's `now`.
    wall: f64,
    /// The session's summaries under a lease, by the session's request id: the run, and the
    /// request it answers.
    leases: HashMap<u64, (Leased, Io)>,
    /// A lease's requests out (its store calls, sleeps and the summary itself) → the session's
    /// summary request they are for.
    lease_out: HashMap<u64, u64>,
    /// The state was read before a summary (once a call): the session's requests held back
    /// meanwhile.
    fresh: bool,
    stashed: Vec<Io>,
}

impl CallRun {
    /// Starts a call. `partial`: the core holds only part of the conversation as it is now
    /// (plan dry first). `conversation`: the call's conversation hashes, when the host has them.
    pub fn new(call: Call, partial: bool, conversation: Option<String>) -> Self {
        CallRun {
            call,
            explicit: false,
            partial,
            conversation,
            first: true,
            recovery: None,
            calibrated: false,
            ahead_read: None,
            stage: Stage::Start,
            session: None,
            own: None,
            next: Vec::new(),
            next_id: OWN_IDS,
            ahead: None,
            done: None,
            written: HashMap::new(),
            summaries: HashMap::new(),
            out: HashMap::new(),
            lease: None,
            wall: 0.0,
            leases: HashMap::new(),
            lease_out: HashMap::new(),
            fresh: false,
            stashed: Vec::new(),
        }
    }

    /// A call that only saves the state at the compactor's state path, asked by the app (a
    /// host's `saveState()`): even when nothing changed since the last save. A save another
    /// request beat for this conversation or a later turn takes that request's state (no rerun:
    /// there is no call to run again) and asks the host for its conversation again; one over an
    /// earlier turn's or a deleted state saves again; one over another branch's, or one a store
    /// refused while holding what it expected, is a conflict at once. Its result has no
    /// conversation (`dry`); `state_error` is a save that failed.
    pub fn save_state() -> Self {
        CallRun {
            explicit: true,
            stage: Stage::Saving,
            ..CallRun::new(Call::default(), false, None)
        }
    }

    /// Whether the call only saves the state ([`CallRun::save_state`]).
    pub fn saves_only(&self) -> bool {
        self.explicit
    }

    /// Makes the call's summaries under a lease beside the state, when the compactor has a
    /// state path (docs/LOOP.md, `src/lease.rs`): two requests of a conversation that plan the
    /// same summary (a double submit, a retry, two tabs) ask the summarizer once. `owner`: this
    /// request's unique id (the host's random one); `summarize_timeout_ms`: how long the
    /// host's summarizer may take; `wall`: the wall clock now (ms since the epoch). Every reply
    /// should then say the wall clock too ([`CallRun::handle`]'s `now`).
    pub fn leased(mut self, owner: String, summarize_timeout_ms: f64, wall: f64) -> Self {
        self.lease = Some((
            owner,
            LeaseOptions::for_summarizer(summarize_timeout_ms, false),
        ));
        self.wall = wall;
        self
    }

    /// Recovers from a provider's "prompt too long" error (a host's `recover`): before anything
    /// is planned, the provider's count of the refused prompt (when its error gave one)
    /// calibrates the compactor, in every round; the call compacts harder than `manage` would
    /// (as if at that count, against the provider's limit: [`Overflow`]); its events say so
    /// ([`crate::Event::overflow`]); and when it applied nothing, its result carries the typed
    /// `context_overflow` ([`CallDone::overflow`]).
    pub fn recovering(mut self, recovery: Recovery) -> Self {
        self.call.overflow = Some(Overflow {
            reported_tokens: recovery.report.reported_tokens,
            limit: recovery.report.limit,
        });
        self.recovery = Some(recovery);
        self
    }

    /// The session under way, if any.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The current plan (what `onPreCompact` is shown).
    pub fn plan(&self) -> Option<&Plan> {
        self.session.as_ref()?.plan()
    }

    /// The conversation the call holds, if it holds one (see [`CallRun::into_held`]): a
    /// continuation built while the call ends (the summary asked ahead) is its prefix.
    pub fn held(&self) -> Option<&[Message]> {
        if let Some(session) = &self.session {
            return Some(session.messages());
        }
        match &self.done {
            Some(done) if done.dry => None,
            Some(done) if done.managed.cancelled => Some(&done.input),
            Some(done) => Some(&done.managed.messages),
            None => None,
        }
    }

    /// The conversation a core that holds one keeps when the call is abandoned (an error, a new
    /// call): the session's input while it runs, the result once made; `None` when the call
    /// holds none (the core still does).
    pub fn into_held(mut self) -> Option<Vec<Message>> {
        if let Some(mut session) = self.session.take() {
            return Some(session.take_input());
        }
        match self.done.take() {
            Some(done) if done.dry => None,
            Some(done) if done.managed.cancelled => Some(done.input),
            Some(done) => Some(done.managed.messages),
            None => None,
        }
    }

    /// The next step: IO to carry out, a wait for outcomes, or the result.
    pub fn poll<C: CallCore>(&mut self, core: &mut C) -> Result<CallPoll> {
        loop {
            if !self.next.is_empty() {
                return Ok(CallPoll::Io(std::mem::take(&mut self.next)));
            }
            if self.own.is_some() {
                return Ok(CallPoll::Wait);
            }
            if let Some((path, _)) = core.compactor().persist_pending() {
                // The state kept from now on: what is stored there, before anything is planned
                // (a summary asked ahead is looked for beside it) or saved.
                let read = Request::Read {
                    path: path.to_owned(),
                    timeout_ms: None,
                };
                return Ok(self.ask(Own::State, read));
            }
            if self.stage == Stage::Start && !self.calibrated {
                // The provider's count of the prompt it refused (the conversation held, as the
                // compactor of this round knows it): the call compacts against it.
                self.calibrated = true;
                let report = self.recovery.as_ref().map(|r| &r.report);
                if let Some(reported) = report.and_then(|r| r.reported_tokens) {
                    core.observe_refused(reported);
                }
            }
            match self.stage {
                Stage::Start if self.first && self.ahead_read.is_none() => {
                    // A summary the loaded state asked ahead (another request's, still out):
                    // its text, once that request leaves it beside the state, goes to the
                    // compactor before a plan; looked for before each call until found, so a
                    // request of several steps applies it at the step a long-lived compactor
                    // would.
                    let ahead = core.compactor().ahead_to_read();
                    self.ahead_read = Some(ahead.as_ref().map(|(key, _)| key.clone()));
                    if let Some((_, path)) = ahead {
                        let read = Request::Read {
                            path,
                            timeout_ms: None,
                        };
                        return Ok(self.ask(Own::Ahead, read));
                    }
                }
                Stage::Start if self.partial => {
                    let plan = core.plan_held(&self.call.plan_options())?;
                    if is_work(&plan) {
                        return Ok(self.ask(Own::Resync, Request::Resync { rerun: false }));
                    }
                    self.ahead = ahead_of(&plan);
                    self.done = Some(CallDone::dry(plan));
                    self.stage = Stage::Ending;
                }
                Stage::Start => {
                    self.session = Some(Session::new(core.take_held(), self.call.clone()));
                    self.stage = Stage::Session;
                }
                Stage::Session => {
                    let session = self.session.as_mut().expect("a session");
                    match session.poll(core)? {
                        Poll::Wait => return Ok(CallPoll::Wait),
                        Poll::Io(ios) => {
                            if let Some(read) = self.fresh(core, &ios) {
                                self.stashed = ios;
                                return Ok(read);
                            }
                            let left = self.dispatch(core, ios)?;
                            if !left.is_empty() {
                                return Ok(CallPoll::Io(left));
                            }
                        }
                        Poll::Done(mut managed) => {
                            let mut session = self.session.take().expect("a session");
                            self.ahead = ahead_of(&managed.plan);
                            if let Some(recovery) = &self.recovery {
                                let stamp = recovery.stamp();
                                for event in &mut managed.events {
                                    event.overflow = Some(stamp.clone());
                                }
                            }
                            self.done = Some(CallDone {
                                managed: *managed,
                                dry: false,
                                input: session.take_input(),
                                state_error: None,
                                conflict: None,
                                overflow: None,
                            });
                            self.stage = Stage::Ending;
                        }
                    }
                }
                Stage::Ending => {
                    self.stage = Stage::Saving;
                    if let Some(now) = self.call.now {
                        core.compactor().called_at(now);
                    }
                    if let Some(ahead) = self.ahead.take() {
                        // Asked now (saved with the state), and handed to the host to make off
                        // the critical path before the state is saved.
                        let key = ahead.ahead_key.as_deref().unwrap_or_default();
                        core.compactor().ask_ahead(key, ahead.end);
                        // The key names the span as planned; this call's edits inside it are
                        // applied by now.
                        if let Some(done) = self.done.as_ref().filter(|d| !d.dry) {
                            let managed = &done.managed;
                            core.compactor()
                                .ahead_reads(&managed.messages, &managed.events);
                        }
                        core.compactor().making_ahead(key);
                        return Ok(self.ask(Own::Background, Request::Background { ahead }));
                    }
                }
                Stage::Saving => {
                    if self.done.is_none() {
                        // An explicit save's result: no conversation, an empty plan.
                        let plan = Compactor::plan(core.compactor(), &[])?;
                        self.done = Some(CallDone::dry(plan));
                    }
                    let compactor = core.compactor();
                    if compactor.state_path().is_none() {
                        // No state path: nothing to save (nor its JSON to make).
                        self.stage = Stage::Over;
                        continue;
                    }
                    let state = compactor.state_json();
                    if !self.explicit && !compactor.persist().is_some_and(|p| p.due(&state)) {
                        self.over(core, None, None);
                    } else if self.conversation.is_none() {
                        return Ok(self.ask(Own::Conversation, Request::Conversation));
                    } else if let Some(save) = self.save(core, &state) {
                        return Ok(save);
                    }
                }
                Stage::Over => {
                    self.stage = Stage::Finished;
                    let mut done = self.done.take().expect("a result");
                    if let Some(recovery) = &self.recovery {
                        done.overflow = recovery.nothing_left(&done);
                    }
                    return Ok(CallPoll::Done(Box::new(done)));
                }
                Stage::Finished => {
                    return Err(Error::PlanMismatch {
                        action_id: None,
                        message: "poll after the call was done".into(),
                    })
                }
            }
        }
    }

    /// Hands back the outcome of request `id` (the session's or the call's own). An id that is
    /// not in flight, or a reply of the wrong kind, is a typed error (the call is unchanged).
    /// `now`: the wall clock (ms since the epoch), when the host says it (a call whose
    /// summaries are leased: [`CallRun::leased`]).
    pub fn handle<C: CallCore>(
        &mut self,
        core: &mut C,
        id: u64,
        reply: Reply,
        now: Option<f64>,
    ) -> Result<()> {
        // A lease, and the summary another request left beside the state, are judged on the
        // wall clock: a reply to either must say it.
        let timed = self.lease_out.contains_key(&id) || self.own == Some((id, Own::Ahead));
        match now {
            Some(now) => self.wall = now,
            None if timed => {
                return Err(Error::PlanMismatch {
                    action_id: None,
                    message: format!("reply to request {id}: a summary lease's reply says the wall clock (now, ms since the epoch)"),
                })
            }
            None => {}
        }
        if let Some(summary) = self.lease_out.remove(&id) {
            if let Some((lease, _)) = self.leases.get_mut(&summary) {
                lease.handle(reply, self.wall);
            }
            let ios = self.lease_step(core, summary)?;
            self.next.extend(ios);
            return Ok(());
        }
        if let Some((own, kind)) = self.own {
            if own == id {
                return self.own_reply(core, id, kind, reply);
            }
        }
        self.answer_session(core, id, reply)
    }

    /// Hands the session the reply to its request `id` (kept, when a rerun may ask it again).
    fn answer_session<C: CallCore>(&mut self, core: &mut C, id: u64, reply: Reply) -> Result<()> {
        if let Some(made) = self.out.remove(&id) {
            match (made, &reply) {
                (Made::Write(path, hash), Reply::Done) => {
                    self.written.insert(path, hash);
                }
                (Made::Summary(prompt), Reply::Text { text }) => {
                    self.summaries.insert(prompt, text.clone());
                }
                _ => {}
            }
        }
        let Some(session) = self.session.as_mut() else {
            return Err(Error::PlanMismatch {
                action_id: None,
                message: format!("reply to request {id}: no manage or compact call under way"),
            });
        };
        session.handle(core, id, reply)
    }

    /// The call is dropped before it is done (the host's task was cancelled: a client that
    /// went away): the store writes that release the summary leases it holds or is taking (each
    /// as a failed summary releases it), for the host to carry out; their outcomes need not be
    /// handed back.
    /// Without them the conversation's next request would wait out each lease (the
    /// summarizer's timeout and a margin). The run is over: poll it no more.
    pub fn abandon(&mut self) -> Vec<Io> {
        let mut releases = Vec::new();
        for (lease, _) in self.leases.values_mut() {
            // Held, or its take in flight (a take that never landed is refused, harmlessly).
            if let Some(request) = lease.abandon().and_then(|io| io.request()) {
                releases.push(Io {
                    id: self.next_id,
                    request,
                });
                self.next_id += 1;
            }
        }
        self.leases.clear();
        self.lease_out.clear();
        self.stage = Stage::Finished;
        releases
    }

    /// What the lease of the session's summary request `summary` asks next: its store call or
    /// sleep (an id of the call's own), the summary request itself, or nothing once over (the
    /// session then has its reply).
    fn lease_step<C: CallCore>(&mut self, core: &mut C, summary: u64) -> Result<Vec<Io>> {
        let Some((lease, io)) = self.leases.get(&summary) else {
            return Ok(Vec::new());
        };
        let asked = lease.poll();
        if let Some(request) = asked.request() {
            let id = self.next_id;
            self.next_id += 1;
            self.lease_out.insert(id, summary);
            return Ok(vec![Io { id, request }]);
        }
        if asked == LeaseIo::Summarize {
            self.lease_out.insert(summary, summary);
            return Ok(vec![io.clone()]);
        }
        let (lease, _) = self.leases.remove(&summary).expect("a lease");
        let reply = lease.reply().expect("a lease over");
        self.answer_session(core, summary, reply)?;
        Ok(Vec::new())
    }

    /// The session's requests `ios` as the host gets them: one an earlier round of this call
    /// made (a rerun after a lost save) is answered as it was then, without the host; a summary
    /// with a lease goes through its lease.
    fn dispatch<C: CallCore>(&mut self, core: &mut C, ios: Vec<Io>) -> Result<Vec<Io>> {
        let session = self.session.as_mut().expect("a session");
        let mut left = Vec::with_capacity(ios.len());
        let mut leased = Vec::new();
        for io in ios {
            match made_before(&mut self.written, &mut self.summaries, &mut self.out, &io) {
                Some(reply) => session.handle(core, io.id, reply)?,
                None => match lease_of(&self.lease, self.wall, core, &io) {
                    Some(lease) => leased.push((io, lease)),
                    None => left.push(io),
                },
            }
        }
        for (io, lease) in leased {
            let id = io.id;
            self.leases.insert(id, (lease, io));
            left.extend(self.lease_step(core, id)?);
        }
        Ok(left)
    }

    /// Before the call's first summary (a paid model call), with a state path: a read of the
    /// state there, so that a long-lived compactor another instance saved after does not pay
    /// for a summary of its own older state's (another instance may have made it), or `None`.
    /// Once a call, and only between batches (nothing of the session's out); not for a manual
    /// compaction, which summarizes what it is given whatever was saved since.
    fn fresh<C: CallCore>(&mut self, core: &mut C, ios: &[Io]) -> Option<CallPoll> {
        if self.fresh
            || self.explicit
            || self.call.trigger == TriggerKind::Manual
            || !self.out.is_empty()
            || !self.leases.is_empty()
            || !ios
                .iter()
                .any(|io| matches!(io.request, Request::Summarize { .. }))
        {
            return None;
        }
        self.fresh = true;
        let path = core.compactor().persist()?.path().to_owned();
        let read = Request::Read {
            path,
            timeout_ms: None,
        };
        Some(self.ask(Own::Fresh, read))
    }

    /// The call runs again on `state` (the stored one), built again without a conversation:
    /// once the host handed it in, its recorded edits replay.
    fn rerun<C: CallCore>(&mut self, core: &mut C, state: Option<&str>) -> Result<()> {
        core.rebuild(state)?;
        self.session = None;
        self.done = None;
        self.partial = true;
        self.first = false;
        self.calibrated = false;
        self.stage = Stage::Start;
        let resync = self.ask(Own::Resync, Request::Resync { rerun: true });
        self.queue(resync);
        Ok(())
    }

    /// A request of the call's own.
    fn ask(&mut self, kind: Own, request: Request) -> CallPoll {
        let id = self.next_id;
        self.next_id += 1;
        self.own = Some((id, kind));
        CallPoll::Io(vec![Io { id, request }])
    }

    /// `asked`'s requests, handed out at the next poll (asked while a reply is handled).
    fn queue(&mut self, asked: CallPoll) {
        if let CallPoll::Io(ios) = asked {
            self.next.extend(ios);
        }
    }

    /// The save of the state JSON `state`: a `save` request, or the call is over (none is due
    /// after all: an earlier turn of the stored conversation; or it cannot be made).
    fn save<C: CallCore>(&mut self, core: &mut C, state: &str) -> Option<CallPoll> {
        let conversation = self.conversation.clone().unwrap_or_default();
        let persist = core.compactor().persist().expect("a state path");
        let request = persist
            .request(state, &conversation, self.explicit, self.first)
            .map_err(|error| format!("state not saved to {}: {error}", persist.path()));
        match request {
            Ok(Some(save)) => Some(self.ask(
                Own::Save,
                Request::Save {
                    path: save.path,
                    expected: save.expected,
                    text: save.text,
                    timeout_ms: None,
                },
            )),
            Ok(None) => {
                self.over(core, None, None);
                None
            }
            Err(error) => {
                self.over(core, Some(error), None);
                None
            }
        }
    }

    /// The call is over, with what its state path adds: `error` (a save that failed; else a
    /// state that could not be read and was not saved over since) and `conflict`.
    fn over<C: CallCore>(
        &mut self,
        core: &mut C,
        error: Option<String>,
        conflict: Option<Conflict>,
    ) {
        // An explicit save reports only its own failure.
        let unread = core
            .compactor()
            .persist()
            .filter(|_| !self.explicit)
            .and_then(|p| {
                let reason = p.unread.as_ref()?;
                Some(format!(
                    "state not read from {}: {reason}; planned from the messages alone",
                    p.path()
                ))
            });
        if let Some(done) = self.done.as_mut() {
            // Both said: the read's failure is why the call planned without the state.
            done.state_error = match (unread, error) {
                (Some(unread), Some(error)) => Some(format!("{unread}; {error}")),
                (unread, error) => error.or(unread),
            };
            done.conflict = conflict;
        }
        self.stage = Stage::Over;
    }

    /// The state's save landed: the call is over.
    fn saved<C: CallCore>(&mut self, core: &mut C) {
        if let Some(persist) = core.compactor().persist() {
            persist.written();
        }
        self.over(core, None, None);
    }

    /// The reply to the call's own request `id`, of `kind`.
    fn own_reply<C: CallCore>(
        &mut self,
        core: &mut C,
        id: u64,
        kind: Own,
        reply: Reply,
    ) -> Result<()> {
        let mismatch = |wanted: &str| Error::PlanMismatch {
            action_id: None,
            message: format!("reply to request {id}: expected {wanted}"),
        };
        match (kind, reply) {
            (Own::State, reply) => {
                let (text, unread) = match reply {
                    Reply::Read { text } => (text, None),
                    Reply::Failed { error } => (None, Some(error)),
                    _ => return Err(mismatch("read or failed")),
                };
                self.own = None;
                let read = core.compactor().persist_read(text.as_deref(), unread)?;
                if let Some((path, state)) = read {
                    // Built from the stored state: it holds no conversation now, so the call's
                    // crosses again (an explicit save has none).
                    core.rebuild(state.as_deref())?;
                    core.compactor()
                        .persist_at(&path, text.as_deref(), true, None)?;
                    if !self.explicit {
                        self.partial = true;
                        let resync = self.ask(Own::Resync, Request::Resync { rerun: false });
                        self.queue(resync);
                    }
                }
            }
            (Own::Ahead, reply) => {
                self.own = None;
                let key = self.ahead_read.clone().flatten().unwrap_or_default();
                match reply {
                    Reply::Read { text } => {
                        core.compactor()
                            .ahead_read(&key, text.as_deref(), self.wall);
                    }
                    // Unreadable: the plan waits for it until the hard limit.
                    Reply::Failed { .. } => {}
                    _ => return Err(mismatch("read or failed")),
                }
            }
            (Own::Resync, Reply::Done) => {
                self.own = None;
                self.partial = false;
            }
            (Own::Resync, _) => return Err(mismatch("done once every message is synced")),
            (Own::Background, Reply::Done) => self.own = None,
            (Own::Background, _) => return Err(mismatch("done once the summary is under way")),
            (Own::Conversation, Reply::Conversation { conversation }) => {
                self.own = None;
                self.conversation = Some(conversation);
                // The state as it is now: a summary made ahead may have come back meanwhile
                // (`offer_summary` between polls), and is saved with it.
                let state = core.compactor().state_json();
                if let Some(save) = self.save(core, &state) {
                    self.queue(save);
                }
            }
            (Own::Conversation, _) => return Err(mismatch("the conversation's hashes")),
            (Own::Save, Reply::Saved) => {
                self.own = None;
                self.saved(core);
            }
            (Own::Save, Reply::Refused { current })
                if core
                    .compactor()
                    .persist()
                    .is_some_and(|p| p.ours(current.as_deref())) =>
            {
                // The store holds the very text this save wrote: it is saved.
                self.own = None;
                self.saved(core);
            }
            (Own::Save, Reply::Failed { error }) => {
                self.own = None;
                let path = core.compactor().persist().map(|p| p.path().to_owned());
                let error = format!("state not saved to {}: {error}", path.unwrap_or_default());
                self.over(core, Some(error), None);
            }
            (Own::Save, Reply::Refused { current }) => {
                self.own = None;
                let persist = core.compactor().persist().expect("a save has a state path");
                let path = persist.path().to_owned();
                match persist.refused(current.as_deref()) {
                    Ok(Refused::Rerun { state }) if self.explicit => {
                        // An explicit save another request's beat: the compactor is built on
                        // the stored state, and the host hands its conversation in again (a
                        // rebuilt core holds none).
                        core.rebuild(state.as_deref())?;
                        let resync = self.ask(Own::Resync, Request::Resync { rerun: true });
                        self.queue(resync);
                        self.over(core, None, None);
                    }
                    Ok(Refused::Rerun { state }) => self.rerun(core, state.as_deref())?,
                    Ok(Refused::Again) => {
                        let state = core.compactor().state_json();
                        self.first = false;
                        if let Some(save) = self.save(core, &state) {
                            self.queue(save);
                        }
                    }
                    Ok(Refused::Answer) => self.over(core, None, None),
                    Ok(Refused::Conflict {
                        message,
                        attempts,
                        revision,
                    }) => self.over(
                        core,
                        None,
                        Some(Conflict {
                            message,
                            attempts,
                            revision,
                        }),
                    ),
                    Err(error) => {
                        let message = match error {
                            Error::InvalidConfig { message, .. } => message,
                            other => other.to_string(),
                        };
                        self.over(
                            core,
                            Some(format!("state not saved to {path}: {message}")),
                            None,
                        );
                    }
                }
            }
            (Own::Save, _) => return Err(mismatch("saved, refused or failed")),
            (Own::Fresh, reply) => {
                self.own = None;
                let stashed = std::mem::take(&mut self.stashed);
                let current = match reply {
                    Reply::Read { text } => text,
                    // Unreadable: the call goes on as it would have (its save reads again).
                    Reply::Failed { .. } => None,
                    _ => return Err(mismatch("read or failed")),
                };
                let newer = core
                    .compactor()
                    .persist()
                    .and_then(|p| p.newer(current.as_deref()));
                match newer {
                    // Another instance saved since: the call runs again on its state, as after
                    // a lost save (nothing was summarized yet; what was written is not written
                    // again).
                    Some(state) => self.rerun(core, state.as_deref())?,
                    None => {
                        let left = self.dispatch(core, stashed)?;
                        self.next.extend(left);
                    }
                }
            }
        }
        Ok(())
    }
}

/// The answer to `io` when the call already made it (an earlier round's), else `None` (then its
/// answer is kept when it comes).
fn made_before(
    written: &mut HashMap<String, u128>,
    summaries: &mut HashMap<String, String>,
    out: &mut HashMap<u64, Made>,
    io: &Io,
) -> Option<Reply> {
    let made = match &io.request {
        Request::Write { path, content, .. } => {
            let hash = crate::hash::content_hash(content.as_bytes());
            if written.get(path) == Some(&hash) {
                return Some(Reply::Done);
            }
            Made::Write(path.clone(), hash)
        }
        Request::Summarize { summary } => {
            let prompt = &summary.request.prompt;
            if let Some(text) = summaries.get(prompt) {
                return Some(Reply::Text { text: text.clone() });
            }
            Made::Summary(prompt.clone())
        }
        _ => return None,
    };
    out.insert(io.id, made);
    None
}

/// The lease the session's request `io` is made under: a summary, when the call's summaries
/// are leased (`lease`: the owner and options) and the compactor has a state path.
fn lease_of<C: CallCore>(
    lease: &Option<(String, LeaseOptions)>,
    wall: f64,
    core: &mut C,
    io: &Io,
) -> Option<Leased> {
    let (Request::Summarize { summary }, Some((owner, options))) = (&io.request, lease) else {
        return None;
    };
    let path = lease_path(core.compactor().state_path()?, &summary.request.prompt);
    Some(Leased::new(Some(LeaseRun::new(
        &path, owner, wall, *options,
    ))))
}

/// The summary a plan asks ahead of need, if any.
fn ahead_of(plan: &Plan) -> Option<Summarize> {
    plan.ahead.clone().filter(|a| a.ahead_key.is_some())
}

impl Recovery {
    /// What the call's events say of the overflow.
    fn stamp(&self) -> EventOverflow {
        EventOverflow {
            provider: self.report.provider.clone(),
            reported_tokens: self.report.reported_tokens,
            limit: self.report.limit,
            message: self.report.message.clone(),
            attempt: self.attempt,
        }
    }

    /// The `context_overflow` of a recovery whose call applied nothing that shortens the prompt
    /// (no work, a cancel, every action failed): the core's verdict ([`overflow_verdict`]).
    fn nothing_left(&self, done: &CallDone) -> Option<OverflowFailure> {
        let managed = &done.managed;
        let applied = !done.dry && is_work(&managed.plan) && !managed.cancelled;
        let shortened = managed
            .events
            .iter()
            .any(|e| matches!(e.status, EventStatus::Applied | EventStatus::Fallback));
        if applied && shortened {
            return None;
        }
        match overflow_verdict(
            OverflowMoment::NothingLeft,
            Some(&self.report),
            self.attempt,
            0,
        ) {
            crate::OverflowVerdict::Fail { message, details } => {
                // Why nothing shortened it, when something would have: a cancel, or the actions
                // that failed (their content stays; the app may retry once the store is back).
                let failed: Vec<&str> = managed
                    .events
                    .iter()
                    .filter(|e| e.status == EventStatus::Failed)
                    .map(|e| e.error.as_deref().unwrap_or("failed"))
                    .collect();
                let why = if managed.cancelled {
                    Some("onPreCompact cancelled the compaction".to_owned())
                } else {
                    failed.first().map(|first| {
                        format!(
                            "the {} compaction{} that would have shortened it failed ({first}); the content stays",
                            failed.len(),
                            if failed.len() == 1 { "" } else { "s" }
                        )
                    })
                };
                let message = match why {
                    Some(why) => message.replace("nothing is left to compact", &why),
                    None => message,
                };
                Some(OverflowFailure { message, details })
            }
            _ => None,
        }
    }
}
