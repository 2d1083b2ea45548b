//! The async native driver (issue 31, item 2): `Compactor::manage_async` / `compact_async` run
//! the core's loop against an `AsyncHost` whose store and summarizer really wait (each future is
//! pending before it is ready), in a small executor written here (no runtime dependency), and
//! give what the blocking driver gives: the same prompt, events, store files and call order.

mod support;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use context_compactor::{
    AsyncHost, Compactor, Host, Message, Plan, PreCompact, PreCompactDecision, Summarize,
};
use support::gpt4o;

/// A future that is pending once (waking its task), then ready with `value`.
struct Later<T>(Option<T>, bool);

impl<T: Unpin> Future for Later<T> {
    type Output = T;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if !self.1 {
            self.1 = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        Poll::Ready(self.0.take().expect("polled after ready"))
    }
}

/// A one-task executor: polls, parks until woken, polls again. Counts the pending polls.
fn block_on<T>(future: impl Future<Output = T>) -> (T, usize) {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut future = pin!(future);
    let mut pending = 0;
    loop {
        match future.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(value) => return (value, pending),
            Poll::Pending => {
                pending += 1;
                std::thread::park();
            }
        }
    }
}

/// The app's calls, the same for both drivers.
#[derive(Default)]
struct App {
    store: BTreeMap<String, String>,
    log: Vec<String>,
    decision: PreCompactDecision,
}

impl App {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        self.log.push(format!("write {path}"));
        if path.starts_with("/tool_outputs/") {
            return Err("the outputs volume is full".into());
        }
        self.store.insert(path.into(), content.into());
        Ok(())
    }
    fn summarize(&mut self, summary: &Summarize) -> Result<String, String> {
        self.log.push("summarize".into());
        Ok(format!(
            "## Session Intent\nA summary of {} characters.",
            summary.request.prompt.len()
        ))
    }
    fn ask(&mut self) -> PreCompactDecision {
        self.log.push("ask".into());
        self.decision.clone()
    }
}

struct Sync(App);
impl Host for Sync {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        self.0.write(path, content)
    }
    fn summarize(&mut self, summary: &Summarize) -> Result<String, String> {
        self.0.summarize(summary)
    }
    fn on_pre_compact(&mut self, _: &PreCompact, _: &Plan) -> PreCompactDecision {
        self.0.ask()
    }
    fn now(&mut self) -> Option<u64> {
        Some(1_767_603_600_000)
    }
}

struct Async(App);
impl AsyncHost for Async {
    fn write(&mut self, path: &str, content: &str) -> impl Future<Output = Result<(), String>> {
        Later(Some(self.0.write(path, content)), false)
    }
    fn summarize(&mut self, summary: &Summarize) -> impl Future<Output = Result<String, String>> {
        Later(Some(self.0.summarize(summary)), false)
    }
    fn on_pre_compact(
        &mut self,
        _: &PreCompact,
        _: &Plan,
    ) -> impl Future<Output = PreCompactDecision> {
        Later(Some(self.0.ask()), false)
    }
    fn now(&mut self) -> Option<u64> {
        Some(1_767_603_600_000)
    }
}

fn long() -> Vec<Message> {
    support::long_build_session()
}

#[test]
fn manage_async_gives_what_the_blocking_driver_gives() {
    let mut blocking = gpt4o(16_000, |_| {});
    let mut sync = Sync(App::default());
    let expected = blocking.manage(long(), &mut sync).unwrap();

    let mut compactor = gpt4o(16_000, |_| {});
    let mut host = Async(App::default());
    let (got, pending) = block_on(compactor.manage_async(long(), &mut host));
    let got = got.unwrap();
    assert!(
        pending >= 3,
        "the host's futures really waited ({pending} pending polls)"
    );
    assert_eq!(got.messages, expected.messages);
    assert_eq!(got.events, expected.events);
    assert_eq!(host.0.store, sync.0.store);
    assert_eq!(host.0.log, sync.0.log);
    assert!(
        host.0.log.iter().any(|l| l == "summarize"),
        "{:?}",
        host.0.log
    );
    assert!(
        got.events.iter().any(|e| e.error.is_some()),
        "the failed offload is an event"
    );
    assert_eq!(
        compactor.state(),
        blocking.state(),
        "the call's time recorded alike"
    );
}

#[test]
fn compact_async_runs_the_hook_and_its_instructions() {
    let decision = PreCompactDecision {
        custom_instructions: Some("Keep the build log's errors.".into()),
        ..PreCompactDecision::default()
    };
    let mut compactor: Compactor = gpt4o(128_000, |_| {});
    let mut host = Async(App {
        decision: decision.clone(),
        ..App::default()
    });
    let (got, _) = block_on(compactor.compact_async(long(), None, &mut host));
    let got = got.unwrap();
    assert_eq!(host.0.log.first().map(String::as_str), Some("ask"));
    assert!(got
        .plan
        .actions
        .iter()
        .any(|a| matches!(a, context_compactor::Action::Summarize(s) if s.request.prompt.contains("Keep the build log's errors."))));

    let mut blocking = gpt4o(128_000, |_| {});
    let mut sync = Sync(App {
        decision,
        ..App::default()
    });
    let expected = blocking.compact(long(), None, &mut sync).unwrap();
    assert_eq!(got.messages, expected.messages);
    assert_eq!(host.0.log, sync.0.log);
}

/// A host whose store never answers for tool outputs and whose summarizer never answers, with
/// a runtime's timer (here: one that is up at its second poll, as if the time had passed).
#[derive(Default)]
struct Stalled {
    timers: std::cell::RefCell<Vec<u64>>,
    stored: BTreeMap<String, String>,
}

impl AsyncHost for Stalled {
    fn write(&mut self, path: &str, content: &str) -> impl Future<Output = Result<(), String>> {
        let stalls = path.starts_with("/tool_outputs/");
        if !stalls {
            self.stored.insert(path.into(), content.into());
        }
        async move {
            if stalls {
                std::future::pending::<()>().await;
            }
            Ok(())
        }
    }
    fn summarize(&mut self, _: &Summarize) -> impl Future<Output = Result<String, String>> {
        std::future::pending()
    }
    fn timer(&self, ms: u64) -> Option<context_compactor::Timer> {
        self.timers.borrow_mut().push(ms);
        Some(Box::pin(Later(Some(()), false)))
    }
    fn store_timeout_ms(&self) -> u64 {
        2_000
    }
}

#[test]
fn a_store_and_a_summarizer_that_never_answer_are_failures_within_the_hosts_deadlines() {
    let mut compactor = gpt4o(16_000, |_| {});
    let mut host = Stalled::default();
    let (got, _) = block_on(compactor.manage_async(long(), &mut host));
    let got = got.expect("the call answers");
    let timers = host.timers.borrow().clone();
    assert!(timers.contains(&2_000), "a store deadline: {timers:?}");
    assert!(timers.contains(&120_000), "a summary deadline: {timers:?}");
    let errors: Vec<&str> = got
        .events
        .iter()
        .filter_map(|e| e.error.as_deref())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("no answer from the store within 2000 ms")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("no answer from the summarizer within 120000 ms")),
        "{errors:?}"
    );
    // The summary fell back to the heuristic one over a span whose transcript was stored.
    assert!(
        host.stored
            .keys()
            .any(|p| p.starts_with("/conversation_history/")),
        "{:?}",
        host.stored.keys()
    );
}

/// The driver's futures can go to a multi-threaded runtime (`tokio::spawn`, an axum handler)
/// when the host's can: a timer is `Send` (it was not, and no future of the driver was).
#[test]
fn the_async_drivers_futures_are_send_for_a_send_host() {
    fn send<T: Send>(_: &T) {}
    let mut c = gpt4o(16_000, |_| {});
    let mut host = Stalled::default();
    send(&c.manage_async(Vec::new(), &mut host));
    let mut c = gpt4o(16_000, |_| {});
    send(&c.compact_async(Vec::new(), None, &mut host));
}

/// The same stalls with no timer of the host's: the crate's own (`AsyncHost::timer`'s default)
/// cuts them at the host's deadlines, in real time. A native user's async store that never
/// answered hung `manage_async` before (the default had no timer).
#[derive(Default)]
struct StalledNoTimer(Stalled);

impl AsyncHost for StalledNoTimer {
    fn write(&mut self, path: &str, content: &str) -> impl Future<Output = Result<(), String>> {
        self.0.write(path, content)
    }
    fn summarize(&mut self, summary: &Summarize) -> impl Future<Output = Result<String, String>> {
        self.0.summarize(summary)
    }
    fn store_timeout_ms(&self) -> u64 {
        200
    }
    fn summarize_timeout_ms(&self) -> u64 {
        300
    }
}

#[test]
fn without_a_timer_of_the_hosts_the_crates_own_bounds_a_store_and_a_summarizer_that_never_answer() {
    let mut compactor = gpt4o(16_000, |_| {});
    let started = std::time::Instant::now();
    let (got, _) = block_on(compactor.manage_async(long(), &mut StalledNoTimer::default()));
    let took = started.elapsed();
    let got = got.expect("the call answers");
    let errors: Vec<&str> = got
        .events
        .iter()
        .filter_map(|e| e.error.as_deref())
        .collect();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("no answer from the store within 200 ms")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("no answer from the summarizer within 300 ms")),
        "{errors:?}"
    );
    assert!(took >= std::time::Duration::from_millis(300), "{took:?}");
    // Generous: a loaded 2-core machine; the point is that it ends.
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}
