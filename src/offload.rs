//! Tier 1 at the moment a tool returns (`offloadToolOutput`, `wrapTools`, the framework
//! adapters' tool hooks, a native agent's tool loop): the tool's call and result alone, run
//! through a [`Session`] that only offloads and records nothing. The core decides whether the
//! output goes to the store, where, what the model sees instead, and that an output whose write
//! failed stays as it is (nothing lost); a host only carries out the write and hands over the
//! output, so every host does the same.
//!
//! Drive it as a session: [`OffloadRun::poll`] until [`OffloadPoll::Done`], each request
//! ([`Request::Write`]) carried out and answered with [`OffloadRun::handle`].
//!
//! ```
//! use context_compactor::{Compactor, Config, OffloadPoll, OffloadRun, Reply, Request};
//!
//! let mut compactor = Compactor::new(Config { model: Some("gpt-4o".into()), ..Config::default() })?;
//! let huge: String = (0..30_000).map(|i| format!("result line {i}\n")).collect();
//! let mut run = OffloadRun::new("search", "c1", &serde_json::to_string(&huge).unwrap(), true)?;
//! let mut stored = Vec::new();
//! let offloaded = loop {
//!     match run.poll(&mut compactor)? {
//!         OffloadPoll::Io(ios) => for io in ios {
//!             if let Request::Write { path, content, .. } = &io.request {
//!                 stored.push((path.clone(), content.clone())); // the app's store
//!             }
//!             run.handle(&mut compactor, io.id, Reply::Done)?;
//!         },
//!         OffloadPoll::Wait => unreachable!("every request is answered"),
//!         OffloadPoll::Done(offloaded) => break offloaded,
//!     }
//! };
//! let preview = offloaded.preview.expect("over the threshold: a preview");
//! assert!(preview.contains(&stored[0].0));   // it names where the output went
//! assert_eq!(stored[0].1, huge);             // nothing lost
//! # Ok::<(), context_compactor::Error>(())
//! ```

use serde::Serialize;

use crate::error::{Error, Result};
use crate::message::{parse_messages, Content, Part, ToolOutput};
use crate::plan::{Event, EventStatus};
use crate::session::{Call, Io, Poll, Reply, Session, SessionCore};

/// A tool's output on its way to the model (see the module docs).
#[derive(Debug)]
pub struct OffloadRun {
    session: Session,
}

/// What [`OffloadRun::poll`] gives the host.
#[derive(Debug)]
pub enum OffloadPoll {
    /// Carry these out (in any order, or all at once) and hand each outcome back.
    Io(Vec<Io>),
    /// Waiting for outcomes of requests already handed out.
    Wait,
    /// The run is over.
    Done(Offloaded),
}

/// What became of a tool's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Offloaded {
    /// What the model sees instead of the output: a preview naming the stored copy. `None`:
    /// the output as it is (under the offload threshold, or its write failed: nothing lost).
    pub preview: Option<String>,
    /// The offload's event (none when the output stays).
    pub events: Vec<Event>,
}

impl OffloadRun {
    /// The output `output_json` (one JSON value) that tool `tool_name` returned for call
    /// `tool_call_id`: a text output when `text` (then a JSON string: the host's own string
    /// type, not whatever serializes to one), else a JSON one. Nothing is planned until the
    /// first [`OffloadRun::poll`].
    pub fn new(tool_name: &str, tool_call_id: &str, output_json: &str, text: bool) -> Result<Self> {
        let invalid = |why: String| Error::InvalidMessages {
            message: format!("the output of tool {tool_name} (call {tool_call_id}): {why}"),
        };
        // Exactly one JSON value, before it is set into the conversation's text.
        serde_json::from_str::<serde::de::IgnoredAny>(output_json)
            .map_err(|e| invalid(format!("not one JSON value: {e}")))?;
        if text && !output_json.trim_start().starts_with('"') {
            return Err(invalid("a text output must be a JSON string".into()));
        }
        let kind = if text { "text" } else { "json" };
        let (id, name) = (quoted(tool_call_id), quoted(tool_name));
        let conversation = format!(
            r#"[{{"role":"assistant","content":[{{"type":"tool-call","toolCallId":{id},"toolName":{name},"input":{{}}}}]}},{{"role":"tool","content":[{{"type":"tool-result","toolCallId":{id},"toolName":{name},"output":{{"type":"{kind}","value":{output_json}}}}}]}}]"#
        );
        let messages = parse_messages(&conversation).map_err(|e| invalid(e.to_string()))?;
        let call = Call {
            offload_only: true,
            ..Call::default()
        };
        Ok(Self {
            session: Session::new(messages, call),
        })
    }

    /// The next step: the store writes to carry out, a wait, or what became of the output.
    pub fn poll(&mut self, compactor: &mut dyn SessionCore) -> Result<OffloadPoll> {
        Ok(match self.session.poll(compactor)? {
            Poll::Io(ios) => OffloadPoll::Io(ios),
            Poll::Wait => OffloadPoll::Wait,
            Poll::Done(managed) => {
                let applied = managed
                    .events
                    .iter()
                    .any(|e| e.status == EventStatus::Applied);
                let preview = applied.then(|| preview(&managed.messages)).flatten();
                OffloadPoll::Done(Offloaded {
                    preview,
                    events: managed.events,
                })
            }
        })
    }

    /// Hands back the outcome of request `id` (as [`Session::handle`]).
    pub fn handle(&mut self, compactor: &mut dyn SessionCore, id: u64, reply: Reply) -> Result<()> {
        self.session.handle(compactor, id, reply)
    }
}

/// The text the tool result now holds: the preview the offload put in place of the output.
fn preview(messages: &[crate::message::Message]) -> Option<String> {
    let Content::Parts(parts) = &messages.get(1)?.content else {
        return None;
    };
    match parts.first()? {
        Part::ToolResult(result) => match &result.output {
            ToolOutput::Text { value, .. } => Some(value.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// `text` as a JSON string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}
