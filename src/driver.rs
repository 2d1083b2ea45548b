//! The native drivers of the core's loop ([`Session`]): a Rust app hands in its store, its
//! summarizer, its `onPreCompact` hook and its clock, and gets the loop the npm and Python hosts
//! run — blocking ([`Host`], [`Compactor::manage`]) or async ([`AsyncHost`],
//! [`Compactor::manage_async`]).
//!
//! There is one loop, the async one: the blocking driver runs it over its host with every
//! future ready at once. The async driver needs no runtime and no dependency (it only awaits the
//! host's futures, in any executor: tokio, async-std, smol, a browser's), so it is not behind a
//! feature.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll as TaskPoll, Waker};

use crate::compactor::{Compactor, TriggerKind};
use crate::error::Result;
use crate::message::Message;
use crate::plan::{Plan, Summarize};
use crate::session::{
    Call, Managed, Poll, PreCompact, PreCompactDecision, Reply, Request, Session,
};

/// What a native Rust app provides to [`Compactor::manage`] and [`Compactor::compact`]: its
/// store, its summarizer and, optionally, an `onPreCompact` hook. Errors are the app's words;
/// a failed write leaves its content in the conversation, a failed summary falls back to the
/// plan's heuristic summary (the event says so).
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
    /// One `manage` call, driven against `host` (blocking): plan, store, summarize, apply.
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
        let call = Call {
            now: host.now(),
            ..Call::default()
        };
        self.drive(messages, call, host).await
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
            now: host.now(),
            ..Call::default()
        };
        self.drive(messages, call, host).await
    }

    /// Drives the call's session to its end; the call went out at `call.now`, when the host
    /// has a clock.
    async fn drive<H: AsyncHost>(
        &mut self,
        messages: Vec<Message>,
        call: Call,
        host: &mut H,
    ) -> Result<Managed> {
        let now = call.now;
        let mut session = Session::new(messages, call);
        loop {
            let ios = match session.poll(self)? {
                Poll::Done(managed) => {
                    if let Some(now) = now {
                        self.called_at(now);
                    }
                    return Ok(*managed);
                }
                Poll::Wait => {
                    unreachable!("the driver answers every request before it polls again")
                }
                Poll::Io(ios) => ios,
            };
            for io in ios {
                let reply = match &io.request {
                    Request::Write { path, content, .. } => match host.write(path, content).await {
                        Ok(()) => Reply::Done,
                        Err(error) => Reply::Failed { error },
                    },
                    Request::Summarize { summary } => match host.summarize(summary).await {
                        Ok(text) => Reply::Text { text },
                        Err(error) => Reply::Failed { error },
                    },
                    Request::Ask { pre_compact } => {
                        let plan = session.plan().expect("a plan before the hook");
                        Reply::Decision {
                            decision: host.on_pre_compact(pre_compact, plan).await,
                        }
                    }
                };
                session.handle(self, io.id, reply)?;
            }
        }
    }
}
