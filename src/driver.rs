//! The native drivers of the core's loop ([`CallRun`]): a Rust app hands in its store, its
//! summarizer, its `onPreCompact` hook and its clock, and gets the loop the npm and Python hosts
//! run — blocking ([`Host`], [`Compactor::manage`]) or async ([`AsyncHost`],
//! [`Compactor::manage_async`]), with the state kept in the app's store when it asks
//! ([`Compactor::load`]: saved after each call that changed it, with a conditional write, and
//! the call run again on the stored state when another process saved first).
//!
//! There is one loop, the async one: the blocking driver runs it over its host with every
//! future ready at once. The async driver needs no runtime and no dependency (it only awaits the
//! host's futures, in any executor: tokio, async-std, smol, a browser's), so it is not behind a
//! feature.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll as TaskPoll, Waker};

use std::borrow::Cow;

use crate::call::{CallCore, CallPoll, CallRun, Recovery};
use crate::compactor::{Compactor, PlanOptions, TriggerKind};
use crate::config::Config;
use crate::error::Result;
use crate::lease::{AheadPoll, AheadRun};
use crate::message::Message;
use crate::offload::{OffloadPoll, OffloadRun, Offloaded};
use crate::overflow::OverflowReport;
use crate::plan::{Applied, Outcome, Plan, SaveTranscript, Strategy, Summarize};
use crate::session::{Call, Managed, PreCompact, PreCompactDecision, Reply, Request, SessionCore};

/// What a conditional write did ([`Host::write_if`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteIf {
    /// The store held what was expected, and now holds the new text.
    Written,
    /// The store held something else, `current` (`None`: nothing), and kept it.
    Refused {
        /// What the store holds.
        current: Option<String>,
    },
}

/// A host's summary leases ([`Host::summary_lease`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryLease {
    /// This request's id, unique among the processes of a conversation (a random one).
    pub owner: String,
    /// How long the host's summarizer may take (ms): a lease holds that and 5 s more, and
    /// another request waits as long for its summary.
    pub summarize_timeout_ms: f64,
}

/// What a native Rust app provides to [`Compactor::manage`] and [`Compactor::compact`]: its
/// store, its summarizer and, optionally, an `onPreCompact` hook. Errors are the app's words;
/// a failed write leaves its content in the conversation, a failed summary falls back to the
/// plan's heuristic summary (the event says so). A blocking call cannot be cut short, so each
/// call bounds itself (a client timeout); an [`AsyncHost`] can give the driver a timer instead.
///
/// The whole loop: a store (here a map), a summarizer (here a stand-in for the app's LLM call)
/// and `manage` before each model call. With [`Compactor::load`] the state is kept in the
/// store too (then give `read` and `write_if`); `examples/rust-native` is a full agent.
///
/// ```
/// use std::collections::HashMap;
/// use context_compactor::{parse_messages, Compactor, Config, Host, Summarize};
///
/// struct App { store: HashMap<String, String> }
/// impl Host for App {
///     fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
///         self.store.insert(path.to_owned(), content.to_owned());
///         Ok(())
///     }
///     fn summarize(&mut self, summary: &Summarize) -> Result<String, String> {
///         // Send summary.request (system, messages, maxTokens) to the app's LLM.
///         Ok(format!("## Session Intent\n(summary of {} characters)", summary.request.prompt.len()))
///     }
/// }
///
/// let huge: String = (0..30_000).map(|i| format!("result line {i}\n")).collect();
/// let messages = parse_messages(&serde_json::json!([
///     {"role": "user", "content": "find it"},
///     {"role": "assistant", "content": [
///         {"type": "tool-call", "toolCallId": "c1", "toolName": "search", "input": {"q": "it"}}]},
///     {"role": "tool", "content": [
///         {"type": "tool-result", "toolCallId": "c1", "toolName": "search",
///          "output": {"type": "text", "value": huge}}]},
/// ]).to_string())?;
///
/// let mut compactor = Compactor::new(Config { model: Some("gpt-4o".into()), ..Config::default() })?;
/// let mut app = App { store: HashMap::new() };
/// let managed = compactor.manage(messages, &mut app)?;
/// assert_eq!(managed.events.len(), 1);                       // one offload, applied
/// assert!(app.store.values().any(|stored| *stored == huge)); // nothing lost
/// assert!(compactor.plan(&managed.messages)?.is_empty());    // idempotent
/// # Ok::<(), context_compactor::Error>(())
/// ```
pub trait Host {
    /// Stores `content` at `path`.
    fn write(&mut self, path: &str, content: &str) -> std::result::Result<(), String>;
    /// Summarizes with the app's LLM: `summary.request` is what to send (`summary.start..end`
    /// the span, in the conversation as planned). The default has none: the heuristic summary
    /// is used.
    fn summarize(&mut self, summary: &Summarize) -> std::result::Result<String, String> {
        let _ = summary;
        Err("no summarizer configured".into())
    }
    /// Called before tier 2 or 3 or a manual compaction runs. The default lets it run.
    fn on_pre_compact(&mut self, info: &PreCompact, plan: &Plan) -> PreCompactDecision {
        let _ = (info, plan);
        PreCompactDecision::default()
    }
    /// The time of the call, milliseconds since the Unix epoch ([`crate::PlanOptions::now`]):
    /// with it, a call after the provider's cache expired takes the edits a warm cache defers.
    /// The default has no clock (the core never reads one).
    fn now(&mut self) -> Option<u64> {
        None
    }
    /// Reads `path` (`None`: nothing there): the state of a compactor that keeps it in the
    /// store ([`Compactor::load`]). The default reads nothing.
    fn read(&mut self, path: &str) -> std::result::Result<Option<String>, String> {
        Err(format!(
            "this host reads no store (Host::read), so {path} cannot be read"
        ))
    }
    /// Writes `text` at `path` only while the store holds `expected` (`None`: nothing): how a
    /// kept state is saved, so that two processes of one conversation cannot both save over
    /// the same state. The default reads, compares and writes, which is atomic only within one
    /// process: a store shared between processes overrides it with its own compare-and-set
    /// (a Redis `WATCH`/`MULTI`, an S3 `If-Match`, a SQL `UPDATE ... WHERE`).
    fn write_if(
        &mut self,
        path: &str,
        expected: Option<&str>,
        text: &str,
    ) -> std::result::Result<WriteIf, String> {
        let current = self.read(path)?;
        if current.as_deref() != expected {
            return Ok(WriteIf::Refused { current });
        }
        self.write(path, text)?;
        Ok(WriteIf::Written)
    }
    /// With a kept state ([`Compactor::load`]), make each summary under a lease beside the
    /// state, so that two processes of a conversation that plan the same summary (a double
    /// submit, a retry) ask the summarizer once (docs/LOOP.md, `src/lease.rs`). The default
    /// has none: each process summarizes.
    fn summary_lease(&mut self) -> Option<SummaryLease> {
        None
    }
    /// Whether this host makes summaries ahead of need, off the critical path (docs/LOOP.md,
    /// issue 32): then a call above `history.aheadFraction` may hand it one
    /// ([`Host::summarize_ahead`]) rather than make the turn that crosses the summary trigger
    /// wait for the summarizer. The default does not.
    fn summarizes_ahead(&mut self) -> bool {
        false
    }
    /// A summary asked ahead of need (its request, its span `ahead.start..ahead.end`, its key
    /// `ahead.ahead_key`), handed out at the end of a call when [`Host::summarizes_ahead`]:
    /// make it off the critical path (a thread, a task) with [`make_ahead`], then hand its text
    /// to the compactor before a later call ([`Compactor::offer_summary`], or
    /// [`Compactor::forget_ahead`] when there is none). With a kept state (`state_path`),
    /// `make_ahead` also leaves it beside the state, where a later call of any process finds it.
    /// Until then a plan waits for it, up to the hard limit, where the call summarizes itself.
    fn summarize_ahead(&mut self, ahead: &Summarize, state_path: Option<&str>) {
        let _ = (ahead, state_path);
    }
    /// Waits `ms` (a summary lease another process holds); `false` when it cannot wait (then
    /// the lease is not waited on: the call summarizes itself). The default sleeps the thread.
    fn sleep(&mut self, ms: u64) -> bool {
        std::thread::sleep(std::time::Duration::from_millis(ms));
        true
    }
    /// The wall clock, ms since the Unix epoch: leases are between processes. The default
    /// reads the system clock.
    fn wall_ms(&mut self) -> f64 {
        system_ms()
    }
}

/// [`Host`] for an async app (a store over the network, an LLM client that awaits): the same
/// calls, awaited. The futures need not be `Send`; the driver awaits them one at a time, in the
/// order the core asks.
pub trait AsyncHost {
    /// Stores `content` at `path`.
    fn write(
        &mut self,
        path: &str,
        content: &str,
    ) -> impl Future<Output = std::result::Result<(), String>>;
    /// Summarizes with the app's LLM (see [`Host::summarize`]).
    fn summarize(
        &mut self,
        summary: &Summarize,
    ) -> impl Future<Output = std::result::Result<String, String>> {
        let _ = summary;
        std::future::ready(Err("no summarizer configured".into()))
    }
    /// Called before tier 2 or 3 or a manual compaction runs. The default lets it run.
    fn on_pre_compact(
        &mut self,
        info: &PreCompact,
        plan: &Plan,
    ) -> impl Future<Output = PreCompactDecision> {
        let _ = (info, plan);
        std::future::ready(PreCompactDecision::default())
    }
    /// The time of the call (see [`Host::now`]).
    fn now(&mut self) -> Option<u64> {
        None
    }
    /// Reads `path` (see [`Host::read`]).
    fn read(
        &mut self,
        path: &str,
    ) -> impl Future<Output = std::result::Result<Option<String>, String>> {
        std::future::ready(Err(format!(
            "this host reads no store (AsyncHost::read), so {path} cannot be read"
        )))
    }
    /// Writes `text` at `path` only while the store holds `expected` (see [`Host::write_if`]).
    /// The default reads, compares and writes: atomic only within one process.
    fn write_if(
        &mut self,
        path: &str,
        expected: Option<&str>,
        text: &str,
    ) -> impl Future<Output = std::result::Result<WriteIf, String>> {
        async move {
            let current = self.read(path).await?;
            if current.as_deref() != expected {
                return Ok(WriteIf::Refused { current });
            }
            self.write(path, text).await?;
            Ok(WriteIf::Written)
        }
    }
    /// Summary leases (see [`Host::summary_lease`]); a host that has them implements
    /// [`AsyncHost::sleep`] with its runtime's timer.
    fn summary_lease(&mut self) -> Option<SummaryLease> {
        None
    }
    /// Summaries ahead of need (see [`Host::summarizes_ahead`]).
    fn summarizes_ahead(&mut self) -> bool {
        false
    }
    /// A summary asked ahead of need (see [`Host::summarize_ahead`]; [`make_ahead_async`]
    /// makes it).
    fn summarize_ahead(&mut self, ahead: &Summarize, state_path: Option<&str>) {
        let _ = (ahead, state_path);
    }
    /// Waits `ms` with the app's runtime (tokio's `sleep`, a browser's `setTimeout`); `false`
    /// when it cannot wait. The default cannot (the driver takes no runtime): a lease another
    /// process holds is then not waited on, and the call summarizes itself. A host that gives a
    /// lease ([`AsyncHost::summary_lease`]) implements it with its runtime's timer.
    fn sleep(&mut self, ms: u64) -> impl Future<Output = bool> {
        let _ = ms;
        std::future::ready(false)
    }
    /// The wall clock (see [`Host::wall_ms`]).
    fn wall_ms(&mut self) -> f64 {
        system_ms()
    }
    /// A timer for the driver's deadlines, made with the app's runtime (tokio's `sleep`, a
    /// browser's `setTimeout`) and borrowing nothing of the host: a future that completes after
    /// `ms`. With one, a store call that has not answered within
    /// [`AsyncHost::store_timeout_ms`] fails as a failing call does (a write's content stays in
    /// the conversation, a state's save is said on the result), and a summary not made within
    /// [`AsyncHost::summarize_timeout_ms`] falls back to the heuristic one: never a hang. The
    /// default is a timer of the crate's own (one thread for every deadline, started at the
    /// first, that wakes the driver's future from any executor); on WebAssembly, which has no
    /// threads, none: there the host's calls bound themselves or the host gives one.
    fn timer(&self, ms: u64) -> Option<Timer> {
        default_timer(ms)
    }
    /// How long a store call may take, in ms, while there is an [`AsyncHost::timer`]: by
    /// default every host's ([`crate::HOST_DEFAULTS`], 10 s).
    fn store_timeout_ms(&self) -> u64 {
        crate::HOST_DEFAULTS.store_timeout_ms
    }
    /// How long the summarizer may take, in ms, while there is an [`AsyncHost::timer`]: by
    /// default every host's ([`crate::HOST_DEFAULTS`], 120 s).
    fn summarize_timeout_ms(&self) -> u64 {
        crate::HOST_DEFAULTS.summarize_timeout_ms
    }
}

/// A deadline's timer ([`AsyncHost::timer`]): completes when the time is up. `Send`, so that the
/// driver's futures can go to a multi-threaded runtime (`tokio::spawn`) with a host whose own are.
pub type Timer = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

#[cfg(target_family = "wasm")]
fn default_timer(_ms: u64) -> Option<Timer> {
    None
}

#[cfg(not(target_family = "wasm"))]
fn default_timer(ms: u64) -> Option<Timer> {
    Some(Box::pin(timers::Deadline::after(ms)))
}

/// The crate's own timer ([`AsyncHost::timer`]'s default): one thread keeps the deadlines in
/// order and wakes each future when its time is up, so it works under any executor (tokio,
/// async-std, smol, `futures::executor`). Written here rather than taken from a runtime: the
/// crate depends on none, and an app's runtime's timer is the better one where it has one.
#[cfg(not(target_family = "wasm"))]
mod timers {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
    use std::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};

    /// A deadline's state: whether it passed, and the waker of the future waiting for it.
    #[derive(Default)]
    struct Shared {
        done: bool,
        waker: Option<Waker>,
    }

    /// The deadlines, earliest first (by time, then by the order made), and their states.
    #[derive(Default)]
    struct Due {
        order: BinaryHeap<Reverse<(Instant, u64)>>,
        states: HashMap<u64, Arc<Mutex<Shared>>>,
        made: u64,
    }

    struct Wheel {
        due: Mutex<Due>,
        changed: Condvar,
    }

    fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wheel() -> &'static Wheel {
        static WHEEL: OnceLock<Wheel> = OnceLock::new();
        static STARTED: std::sync::Once = std::sync::Once::new();
        let wheel = WHEEL.get_or_init(|| Wheel {
            due: Mutex::new(Due::default()),
            changed: Condvar::new(),
        });
        STARTED.call_once(|| {
            std::thread::Builder::new()
                .name("context-compactor timer".into())
                .spawn(run)
                .expect("a thread for the driver's timer");
        });
        wheel
    }

    /// The timer thread: wakes each deadline's future when its time is up.
    fn run() {
        let wheel = wheel();
        let mut due = locked(&wheel.due);
        loop {
            let now = Instant::now();
            let mut wake = Vec::new();
            while let Some(&Reverse((at, id))) = due.order.peek() {
                if at > now {
                    break;
                }
                due.order.pop();
                if let Some(shared) = due.states.remove(&id) {
                    let mut shared = locked(&shared);
                    shared.done = true;
                    wake.extend(shared.waker.take());
                }
            }
            if !wake.is_empty() {
                // Woken with no lock held: an executor may poll at once, and make a deadline.
                drop(due);
                wake.into_iter().for_each(Waker::wake);
                due = locked(&wheel.due);
                continue;
            }
            due = match due.order.peek() {
                Some(&Reverse((at, _))) => {
                    let wait = at.saturating_duration_since(now);
                    let (guard, _) = wheel
                        .changed
                        .wait_timeout(due, wait)
                        .unwrap_or_else(|e| e.into_inner());
                    guard
                }
                None => wheel.changed.wait(due).unwrap_or_else(|e| e.into_inner()),
            };
        }
    }

    /// A future that completes `ms` after it was made; dropped before, it is forgotten (its
    /// waker with it: the work it bounded finished first, the usual case).
    pub struct Deadline(Arc<Mutex<Shared>>, u64);

    impl Drop for Deadline {
        fn drop(&mut self) {
            if !locked(&self.0).done {
                locked(&wheel().due).states.remove(&self.1);
            }
        }
    }

    impl Deadline {
        pub fn after(ms: u64) -> Deadline {
            let shared = Arc::new(Mutex::new(Shared::default()));
            let at = Instant::now() + Duration::from_millis(ms);
            let wheel = wheel();
            let id = {
                let mut due = locked(&wheel.due);
                let id = due.made;
                due.made += 1;
                due.order.push(Reverse((at, id)));
                due.states.insert(id, shared.clone());
                id
            };
            wheel.changed.notify_one();
            Deadline(shared, id)
        }
    }

    impl Future for Deadline {
        type Output = ();
        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let mut shared = locked(&self.0);
            if shared.done {
                return Poll::Ready(());
            }
            shared.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

/// `work`, or a failure in words once `timer` completes first (no timer: `work` alone).
async fn within<T>(
    work: impl Future<Output = std::result::Result<T, String>>,
    timer: Option<Timer>,
    what: &str,
    ms: u64,
) -> std::result::Result<T, String> {
    let Some(mut timer) = timer else {
        return work.await;
    };
    let mut work = pin!(work);
    std::future::poll_fn(|cx| {
        if let TaskPoll::Ready(done) = work.as_mut().poll(cx) {
            return TaskPoll::Ready(done);
        }
        match timer.as_mut().poll(cx) {
            TaskPoll::Ready(()) => {
                TaskPoll::Ready(Err(format!("no answer from the {what} within {ms} ms")))
            }
            TaskPoll::Pending => TaskPoll::Pending,
        }
    })
    .await
}

/// The host's summary of `summary`, within its deadline.
async fn summarized<H: AsyncHost>(host: &mut H, summary: &Summarize) -> Reply {
    let ms = host.summarize_timeout_ms();
    let timer = host.timer(ms);
    match within(host.summarize(summary), timer, "summarizer", ms).await {
        Ok(text) => Reply::Text { text },
        Err(error) => Reply::Failed { error },
    }
}

/// The system clock, ms since the Unix epoch (the hosts' default wall clock).
fn system_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64)
}

/// A blocking host, as an async one whose futures are ready at once.
struct Blocking<'a>(&'a mut dyn Host);

impl AsyncHost for Blocking<'_> {
    fn write(
        &mut self,
        path: &str,
        content: &str,
    ) -> impl Future<Output = std::result::Result<(), String>> {
        std::future::ready(self.0.write(path, content))
    }
    fn summarize(
        &mut self,
        summary: &Summarize,
    ) -> impl Future<Output = std::result::Result<String, String>> {
        std::future::ready(self.0.summarize(summary))
    }
    fn on_pre_compact(
        &mut self,
        info: &PreCompact,
        plan: &Plan,
    ) -> impl Future<Output = PreCompactDecision> {
        std::future::ready(self.0.on_pre_compact(info, plan))
    }
    fn now(&mut self) -> Option<u64> {
        self.0.now()
    }
    fn read(
        &mut self,
        path: &str,
    ) -> impl Future<Output = std::result::Result<Option<String>, String>> {
        std::future::ready(self.0.read(path))
    }
    fn write_if(
        &mut self,
        path: &str,
        expected: Option<&str>,
        text: &str,
    ) -> impl Future<Output = std::result::Result<WriteIf, String>> {
        std::future::ready(self.0.write_if(path, expected, text))
    }
    fn summary_lease(&mut self) -> Option<SummaryLease> {
        self.0.summary_lease()
    }
    fn summarizes_ahead(&mut self) -> bool {
        self.0.summarizes_ahead()
    }
    fn summarize_ahead(&mut self, ahead: &Summarize, state_path: Option<&str>) {
        self.0.summarize_ahead(ahead, state_path)
    }
    fn sleep(&mut self, ms: u64) -> impl Future<Output = bool> {
        std::future::ready(self.0.sleep(ms))
    }
    fn wall_ms(&mut self) -> f64 {
        self.0.wall_ms()
    }
    /// None: a blocking host's calls are done when they return (they bound themselves).
    fn timer(&self, _ms: u64) -> Option<Timer> {
        None
    }
}

/// Runs a future whose every await is ready at once (the blocking host's): polled once with a
/// waker that does nothing. A future that is not ready is a bug of this module, not a hang.
fn ready<T>(future: impl Future<Output = T>) -> T {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        TaskPoll::Ready(value) => value,
        TaskPoll::Pending => unreachable!("a blocking host's futures are ready at once"),
    }
}

impl Compactor {
    /// A compactor whose state lives at `path` of the host's store: built from the state
    /// stored there (none: a new one), and from then on every [`Compactor::manage`] or
    /// [`Compactor::compact`] that changed the state saves it there with
    /// [`Host::write_if`]. When another process of the conversation saved first, the call runs
    /// again on what it stored, or answers unsaved, or fails with
    /// [`crate::Error::StateConflict`] when the store keeps refusing. A store that cannot be
    /// read is not an error: the compactor starts new, saves only over nothing, and each
    /// result says so ([`Managed::state_error`]). Text at `path` that is not a saved state is
    /// an `invalid_config` error naming the path.
    pub fn load(config: Config, path: &str, host: &mut dyn Host) -> Result<Compactor> {
        crate::stored::check_state_path(path)?;
        let read = host.read(path);
        Self::loaded(config, path, read)
    }

    /// [`Compactor::load`] from an async host.
    pub async fn load_async<H: AsyncHost>(
        config: Config,
        path: &str,
        host: &mut H,
    ) -> Result<Compactor> {
        crate::stored::check_state_path(path)?;
        let ms = host.store_timeout_ms();
        let timer = host.timer(ms);
        let read = within(host.read(path), timer, "store", ms).await;
        Self::loaded(config, path, read)
    }

    fn loaded(
        config: Config,
        path: &str,
        read: std::result::Result<Option<String>, String>,
    ) -> Result<Compactor> {
        match read {
            Ok(text) => {
                let stored = crate::stored::Stored::parse(text.as_deref(), path)?;
                let mut compactor = Compactor::new(config)?;
                compactor.rebuild(stored.state.as_deref())?;
                compactor.persist_at(path, text.as_deref(), true, None)?;
                Ok(compactor)
            }
            Err(unread) => {
                let mut compactor = Compactor::new(config)?;
                compactor.persist_at(path, None, false, Some(unread))?;
                Ok(compactor)
            }
        }
    }

    /// One `manage` call, driven against `host` (blocking): plan, store, summarize, apply, and
    /// save the state when it is kept ([`Compactor::load`]).
    pub fn manage(&mut self, messages: Vec<Message>, host: &mut dyn Host) -> Result<Managed> {
        ready(self.manage_async(messages, &mut Blocking(host)))
    }

    /// A manual compaction (every tier runs), driven against `host`.
    pub fn compact(
        &mut self,
        messages: Vec<Message>,
        instructions: Option<String>,
        host: &mut dyn Host,
    ) -> Result<Managed> {
        ready(self.compact_async(messages, instructions, &mut Blocking(host)))
    }

    /// [`Compactor::manage`] against an async host.
    pub async fn manage_async<H: AsyncHost>(
        &mut self,
        messages: Vec<Message>,
        host: &mut H,
    ) -> Result<Managed> {
        self.drive(messages, Call::default(), None, host).await
    }

    /// [`Compactor::compact`] against an async host.
    pub async fn compact_async<H: AsyncHost>(
        &mut self,
        messages: Vec<Message>,
        instructions: Option<String>,
        host: &mut H,
    ) -> Result<Managed> {
        let call = Call {
            trigger: TriggerKind::Manual,
            instructions,
            ..Call::default()
        };
        self.drive(messages, call, None, host).await
    }

    /// Recovers from a provider's "prompt too long" error, driven against `host` (blocking).
    /// `messages` is the prompt the provider refused, `overflow` what its error said
    /// ([`crate::parse_overflow`] of the error's texts), `attempt` which compaction of this
    /// model call it is (1 for the first; [`crate::overflow_verdict`] says when to retry). The
    /// provider's count, when the error gave one, calibrates first; then the conversation is
    /// compacted harder than `manage` would (as if at that count, against the provider's limit)
    /// and returned for the retry; every event says so ([`crate::Event::overflow`]). A call that
    /// could shorten nothing is [`crate::Error::ContextOverflow`], after its state is saved.
    ///
    /// ```
    /// # use context_compactor::{parse_messages, parse_overflow, Compactor, Config, Error, Host, OverflowReport};
    /// # struct App;
    /// # impl Host for App {
    /// #     fn write(&mut self, _: &str, _: &str) -> Result<(), String> { Ok(()) }
    /// #     fn summarize(&mut self, _: &context_compactor::Summarize) -> Result<String, String> { Err("none".into()) }
    /// # }
    /// let said = parse_overflow(&["prompt is too long: 12000 tokens > 8000 maximum".into()], Some(400)).unwrap();
    /// let mut compactor = Compactor::new(Config::from_json(r#"{"contextWindow":8000}"#)?)?;
    /// let short = parse_messages(r#"[{"role":"user","content":"hi"}]"#)?;
    /// // Nothing to compact in one short message: the typed error.
    /// let error = compactor.recover(short, &OverflowReport::from(&said), 1, &mut App).unwrap_err();
    /// assert!(matches!(error, Error::ContextOverflow { attempts: 1, .. }));
    /// # Ok::<(), Error>(())
    /// ```
    pub fn recover(
        &mut self,
        messages: Vec<Message>,
        overflow: &OverflowReport,
        attempt: u32,
        host: &mut dyn Host,
    ) -> Result<Managed> {
        ready(self.recover_async(messages, overflow, attempt, &mut Blocking(host)))
    }

    /// [`Compactor::recover`] against an async host.
    pub async fn recover_async<H: AsyncHost>(
        &mut self,
        messages: Vec<Message>,
        overflow: &OverflowReport,
        attempt: u32,
        host: &mut H,
    ) -> Result<Managed> {
        let recovery = Recovery {
            report: overflow.clone(),
            attempt,
        };
        self.drive(messages, Call::default(), Some(recovery), host)
            .await
    }

    /// Tier 1 at the moment a tool returns (the core's [`OffloadRun`]): `output_json` is the
    /// output tool `tool_name` returned for call `tool_call_id` (one JSON value; a JSON string
    /// is a text output, anything else a JSON one). Over the offload threshold it is written to `host`'s store and
    /// [`Offloaded::preview`] is what the model should see in its place; under it, or when the
    /// write failed (nothing lost), the preview is `None` and the output stays as it is.
    pub fn offload_tool_output(
        &mut self,
        tool_name: &str,
        tool_call_id: &str,
        output_json: &str,
        host: &mut dyn Host,
    ) -> Result<Offloaded> {
        ready(self.offload_tool_output_async(
            tool_name,
            tool_call_id,
            output_json,
            &mut Blocking(host),
        ))
    }

    /// [`Compactor::offload_tool_output`] against an async host.
    pub async fn offload_tool_output_async<H: AsyncHost>(
        &mut self,
        tool_name: &str,
        tool_call_id: &str,
        output_json: &str,
        host: &mut H,
    ) -> Result<Offloaded> {
        let text = output_json.trim_start().starts_with('"');
        let mut run = OffloadRun::new(tool_name, tool_call_id, output_json, text)?;
        loop {
            match run.poll(self)? {
                OffloadPoll::Done(offloaded) => return Ok(offloaded),
                OffloadPoll::Wait => {
                    unreachable!("the driver answers every request before it polls again")
                }
                OffloadPoll::Io(ios) => {
                    for io in ios {
                        let reply = carry_out(host, &io.request).await;
                        run.handle(self, io.id, reply)?;
                    }
                }
            }
        }
    }

    /// Drives the call to its end: the core's requests carried out against `host`, one at a
    /// time, in the order asked.
    async fn drive<H: AsyncHost>(
        &mut self,
        messages: Vec<Message>,
        call: Call,
        recovery: Option<Recovery>,
        host: &mut H,
    ) -> Result<Managed> {
        // The host's clock, and whether it makes summaries ahead of need.
        let call = Call {
            now: host.now(),
            background: host.summarizes_ahead(),
            ..call
        };
        let path = self.state_path().map(str::to_owned);
        // With a kept state, a save asks for the call's messages' hashes and a lost save for
        // the messages again (the call runs again on the stored state).
        let input = path.as_ref().map(|_| messages.clone());
        let mut core = Native {
            compactor: self,
            held: messages,
        };
        let mut run = CallRun::new(call, false, None);
        if let Some(lease) = host.summary_lease() {
            run = run.leased(lease.owner, lease.summarize_timeout_ms, host.wall_ms());
        }
        if let Some(recovery) = recovery {
            run = run.recovering(recovery);
        }
        let done = run_call(&mut core, run, input, path.as_deref(), host).await?;
        if let Some(failure) = done.overflow {
            return Err(failure.into());
        }
        let mut managed = done.managed;
        managed.state_error = done.state_error;
        Ok(managed)
    }

    /// Saves the state at the path it is kept at ([`Compactor::load`]) now, for the conversation
    /// `messages` (the last call's): even when nothing changed since the last save (a host that
    /// saves after the turn keeps the last step's calibration sample). A save another process
    /// beat for this conversation or a later turn of it takes that process's state (nothing is
    /// written over it), one over an earlier turn's or a deleted state saves again, one over
    /// another branch's or one the store refused while it held what the save expected is
    /// [`crate::Error::StateConflict`]; one the store failed,
    /// or did not answer within an async host's deadline, [`crate::Error::StoreFailed`]. No kept
    /// state: nothing to do.
    pub fn save_state(&mut self, messages: &[Message], host: &mut dyn Host) -> Result<()> {
        ready(self.save_state_async(messages, &mut Blocking(host)))
    }

    /// [`Compactor::save_state`] against an async host.
    pub async fn save_state_async<H: AsyncHost>(
        &mut self,
        messages: &[Message],
        host: &mut H,
    ) -> Result<()> {
        let Some(path) = self.state_path().map(str::to_owned) else {
            return Ok(());
        };
        let mut core = Native {
            compactor: self,
            held: Vec::new(),
        };
        let input = Some(messages.to_vec());
        let done = run_call(&mut core, CallRun::save_state(), input, Some(&path), host).await?;
        match done.state_error {
            Some(message) => Err(crate::Error::StoreFailed {
                path,
                op: "write".into(),
                message,
            }),
            None => Ok(()),
        }
    }
}

/// Drives a call to its end: the core's requests carried out against `host`, one at a time,
/// in the order asked. `input`: the call's messages, for a save's conversation hashes and a
/// lost save's rerun. A store that keeps refusing the state's saves: the typed conflict.
async fn run_call<H: AsyncHost>(
    core: &mut Native<'_>,
    mut run: CallRun,
    input: Option<Vec<Message>>,
    path: Option<&str>,
    host: &mut H,
) -> Result<crate::CallDone> {
    loop {
        let ios = match run.poll(core)? {
            CallPoll::Done(done) => {
                if let Some(conflict) = done.conflict {
                    return Err(conflict.error(path.unwrap_or_default()));
                }
                return Ok(*done);
            }
            CallPoll::Wait => {
                unreachable!("the driver answers every request before it polls again")
            }
            CallPoll::Io(ios) => ios,
        };
        for io in ios {
            let reply = match &io.request {
                Request::Summarize { summary } => summarized(host, summary).await,
                Request::Ask { pre_compact } => {
                    let plan = run.plan().expect("a plan before the hook");
                    Reply::Decision {
                        decision: host.on_pre_compact(pre_compact, plan).await,
                    }
                }
                Request::Resync { .. } => {
                    core.held = input.clone().unwrap_or_default();
                    Reply::Done
                }
                Request::Background { ahead } => {
                    // Asked only of a host that makes them (`summarizes_ahead`).
                    host.summarize_ahead(ahead, path);
                    Reply::Done
                }
                Request::Conversation => Reply::Conversation {
                    conversation: conversation(input.as_deref().unwrap_or_default()),
                },
                Request::Write { .. }
                | Request::Save { .. }
                | Request::Read { .. }
                | Request::Put { .. }
                | Request::Sleep { .. } => carry_out(host, &io.request).await,
            };
            let now = host.wall_ms();
            run.handle(core, io.id, reply, Some(now))?;
        }
    }
}

/// Owners of the summaries asked ahead this process made without its host's lease.
static OWNERS: AtomicU64 = AtomicU64::new(0);

/// Makes the summary asked ahead `ahead` ([`Host::summarize_ahead`]) against `host`, blocking
/// (call it where blocking is fine: the thread it was handed to): with `state_path`, under the
/// lease beside the state (by [`Host::summary_lease`]'s owner, else one of this process's own),
/// where a later call of any process finds it (the core's [`crate::lease::AheadRun`]); else
/// directly. A blocking host's calls bound themselves (a blocking call cannot be cut short);
/// [`make_ahead_async`] bounds an async host's with its [`AsyncHost::timer`]. The text, or
/// `None` when the
/// summarizer failed: hand either to the compactor ([`Compactor::offer_summary`],
/// [`Compactor::forget_ahead`]).
pub fn make_ahead(
    ahead: &Summarize,
    state_path: Option<&str>,
    host: &mut dyn Host,
) -> Option<String> {
    ready(make_ahead_async(ahead, state_path, &mut Blocking(host)))
}

/// [`make_ahead`] against an async host.
pub async fn make_ahead_async<H: AsyncHost>(
    ahead: &Summarize,
    state_path: Option<&str>,
    host: &mut H,
) -> Option<String> {
    // Without the host's lease, an owner of this process's own and the summarizer's default time.
    let lease = host.summary_lease().unwrap_or_else(|| SummaryLease {
        owner: format!(
            "{}-{}",
            std::process::id(),
            OWNERS.fetch_add(1, Ordering::Relaxed)
        ),
        summarize_timeout_ms: crate::HOST_DEFAULTS.summarize_timeout_ms as f64,
    });
    let key = ahead.ahead_key.as_deref().unwrap_or_default();
    let now = host.wall_ms();
    let mut run = AheadRun::new(
        state_path,
        key,
        &lease.owner,
        now,
        lease.summarize_timeout_ms,
    );
    loop {
        let (id, request) = match run.poll() {
            AheadPoll::Done(text) => return text,
            AheadPoll::Io(id, request) => (id, request),
            AheadPoll::Wait => unreachable!("every request is answered before the next poll"),
        };
        let reply = match request.as_deref() {
            None => summarized(host, ahead).await,
            Some(request) => carry_out(host, request).await,
        };
        let now = host.wall_ms();
        run.handle(id, reply, now).ok()?;
    }
}

/// A store call or sleep the loop asks for (a plan's write, a summary lease's calls, the
/// state's save), carried out against `host`, a store call within the host's deadline (and
/// the request's own: what is left of a lease's wait).
async fn carry_out<H: AsyncHost>(host: &mut H, request: &Request) -> Reply {
    let asked = match request {
        Request::Save { timeout_ms, .. }
        | Request::Read { timeout_ms, .. }
        | Request::Put { timeout_ms, .. } => *timeout_ms,
        _ => None,
    };
    let ms = asked.map_or(host.store_timeout_ms(), |t| t.min(host.store_timeout_ms()));
    let store_call = !matches!(request, Request::Sleep { .. });
    let timer = if store_call { host.timer(ms) } else { None };
    match request {
        Request::Save {
            path,
            expected,
            text,
            ..
        } => match within(
            host.write_if(path, expected.as_deref(), text),
            timer,
            "store",
            ms,
        )
        .await
        {
            Ok(WriteIf::Written) => Reply::Saved,
            Ok(WriteIf::Refused { current }) => Reply::Refused { current },
            Err(error) => Reply::Failed { error },
        },
        Request::Read { path, .. } => match within(host.read(path), timer, "store", ms).await {
            Ok(text) => Reply::Read { text },
            Err(error) => Reply::Failed { error },
        },
        Request::Write {
            path,
            content: text,
            ..
        }
        | Request::Put { path, text, .. } => {
            match within(host.write(path, text), timer, "store", ms).await {
                Ok(()) => Reply::Done,
                Err(error) => Reply::Failed { error },
            }
        }
        Request::Sleep { ms } => match host.sleep(*ms).await {
            true => Reply::Woke,
            false => Reply::Failed {
                error: "this host cannot wait (AsyncHost::sleep)".into(),
            },
        },
        other => Reply::Failed {
            error: format!("not a store call: {other:?}"),
        },
    }
}

/// The `conversation` of a state saved for `messages`: each message's JSON, hashed
/// ([`crate::stored::conversation_hashes`]).
fn conversation(messages: &[Message]) -> String {
    let texts: Vec<String> = messages
        .iter()
        .map(|m| serde_json::to_string(m).unwrap_or_default())
        .collect();
    crate::stored::conversation_hashes(&texts)
}

/// A native call's core: the compactor, and the conversation the call runs on.
struct Native<'a> {
    compactor: &'a mut Compactor,
    held: Vec<Message>,
}

impl SessionCore for Native<'_> {
    fn plan(&mut self, messages: &[Message], options: &PlanOptions) -> Result<Plan> {
        self.compactor.plan_with_options(messages, options)
    }
    fn apply(
        &mut self,
        messages: Vec<Message>,
        plan: &Plan,
        outcomes: &[Outcome],
    ) -> Result<Applied> {
        Compactor::apply(self.compactor, messages, plan, outcomes)
    }
    fn replay<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        self.compactor.replay(messages)
    }
    fn transcript(&self, messages: &[Message], strategy: Strategy) -> SaveTranscript {
        self.compactor.transcript(messages, strategy)
    }
}

impl CallCore for Native<'_> {
    fn compactor(&mut self) -> &mut Compactor {
        self.compactor
    }
    fn plan_held(&mut self, options: &PlanOptions) -> Result<Plan> {
        self.compactor.plan_with_options(&self.held, options)
    }
    fn take_held(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.held)
    }
    fn rebuild(&mut self, state: Option<&str>) -> Result<()> {
        self.compactor.rebuild(state)?;
        self.held.clear();
        Ok(())
    }
    fn observe_refused(&mut self, reported: u32) {
        // The prompt the provider refused: the conversation as the record makes it.
        let raw = self.compactor.count_raw(&self.compactor.replay(&self.held));
        self.compactor.observe_usage(raw, reported);
    }
}
