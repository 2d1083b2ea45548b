//! Replays a recorded session as an agent host would, one model call at a time.

use std::collections::HashSet;

use super::{Call, CallEvent, Report, StoredFile, Thresholds};
use crate::compactor::Compactor;
use crate::error::Result;
use crate::message::{Message, Role};
use crate::plan::{Action, Note, Outcome, Summarize};

/// Why a summary is the heuristic one when nobody summarizes (the CLI has no LLM).
const NO_SUMMARIZER: &str = "no summarizer in the replay: heuristic summary";

/// Replays `session` through `compactor` with no summarizer (every summary is the heuristic
/// fallback). See [`replay_with`].
pub fn replay(compactor: &mut Compactor, session: &[Message]) -> Result<Report> {
    replay_with(compactor, session, &mut |_| None)
}

/// How the replayed host holds the conversation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Host {
    /// One compactor for the session; each call sends the previous compacted prompt and what
    /// came since (the JS host's `prepareStep`).
    #[default]
    LongLived,
    /// A new compactor per call, built from the previous call's state, sent the raw history
    /// (a route handler with `statePath`). The compaction record makes its prompts the
    /// long-lived host's.
    Stateless,
}

/// [`replay`] as `host` holds the conversation (the CLI's `report --host stateless`).
pub fn replay_as(compactor: &mut Compactor, session: &[Message], host: Host) -> Result<Report> {
    replay_host(compactor, session, &mut |_| None, host)
}

/// Replays `session` (a recorded conversation) the way a long-lived host drives the compactor,
/// e.g. the JS host's `prepareStep` under AI SDK 7:
///
/// - a model call happens before every assistant message (and once more at the end when the
///   session ends with a message awaiting a reply);
/// - its prompt is the conversation so far — the previous call's compacted prompt followed by
///   the session's messages since — planned, executed against an in-memory store (every write
///   succeeds; `summarize` answers each summary request, `None` meaning it failed) and applied;
/// - the compacted prompt carries forward into the next call.
///
/// The report's tokens are the compactor's counts ([`Compactor::count`]); a prefix break is a
/// prompt that does not start with the previous call's prompt.
pub fn replay_with(
    compactor: &mut Compactor,
    session: &[Message],
    summarize: &mut dyn FnMut(&Summarize) -> Option<String>,
) -> Result<Report> {
    replay_host(compactor, session, summarize, Host::LongLived)
}

fn replay_host(
    base: &mut Compactor,
    session: &[Message],
    summarize: &mut dyn FnMut(&Summarize) -> Option<String>,
    host: Host,
) -> Result<Report> {
    let encoding = base.model().encoding;
    let mut report = Report {
        model: base.model().name.clone(),
        encoding: encoding.as_str().to_owned(),
        window: base.window(),
        thresholds: Thresholds::from(&base.plan(&[])?.trigger),
        ..Report::default()
    };

    let mut points: Vec<usize> = session
        .iter()
        .enumerate()
        .filter(|(i, m)| *i > 0 && m.role == Role::Assistant)
        .map(|(i, _)| i)
        .collect();
    if session.last().is_some_and(|m| m.role != Role::Assistant) {
        points.push(session.len());
    }

    let mut held: Vec<Message> = Vec::new();
    let mut previous: Option<Vec<Message>> = None;
    let mut written: HashSet<String> = HashSet::new();
    let mut notes: Vec<String> = Vec::new();
    let mut next = 0;
    for point in points {
        let mut fresh;
        let compactor: &mut Compactor = match host {
            Host::LongLived => {
                held.extend_from_slice(&session[next..point]);
                &mut *base
            }
            Host::Stateless => {
                held = session[..point].to_vec();
                let state = base.state().clone();
                fresh = Compactor::with_state(base.config().clone(), state)?;
                &mut fresh
            }
        };
        next = point;
        let call = report.calls.len() as u32 + 1;
        // What the host's prompt holds before this call's compaction (a raw history counts as
        // the record puts it back).
        let tokens_before = compactor.usage(&held).tokens;
        let plan = compactor.plan(&held)?;
        for note in &plan.notes {
            if let Note::UnknownModel { .. } = note {
                let text = format!("unknown model: assumed a window of {} tokens", plan.window);
                if !notes.contains(&text) {
                    notes.push(text);
                }
            }
        }

        let (events, tokens_after) = if plan.is_empty() {
            (Vec::new(), tokens_before)
        } else {
            let mut outcomes = Vec::with_capacity(plan.actions.len());
            for action in &plan.actions {
                for (path, content) in action.writes() {
                    if written.insert(path.to_owned()) {
                        report.store.push(StoredFile {
                            path: path.to_owned(),
                            strategy: action.strategy(),
                            call,
                            tokens: crate::counting::count_tokens(content, encoding)
                                .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
                            chars: content.chars().count() as u64,
                        });
                    }
                }
                let id = action.id().to_owned();
                outcomes.push(match action {
                    Action::Summarize(s) => match summarize(s) {
                        Some(text) => Outcome::Summarized { id, text },
                        None => Outcome::Failed {
                            id,
                            error: NO_SUMMARIZER.into(),
                        },
                    },
                    _ => Outcome::Written { id },
                });
            }
            let applied = compactor.apply(std::mem::take(&mut held), &plan, &outcomes)?;
            held = applied.messages;
            (
                applied.events.iter().map(CallEvent::from).collect(),
                applied.tokens_after,
            )
        };

        // A stateless host saves the state for the next request.
        if host == Host::Stateless {
            let state = compactor.state().clone();
            base.set_state(state)?;
        }
        let prefix_break = previous
            .as_ref()
            .is_some_and(|prev| !held.starts_with(prev));
        previous = Some(held.clone());
        report.calls.push(Call {
            call,
            messages: point,
            tokens_before,
            tokens_after,
            prefix_break,
            events,
        });
    }
    report.notes = notes;
    Ok(report)
}
