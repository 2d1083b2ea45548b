//! A session report's JSON (the npm package's `ReportData`, the Python package's `data()`) read
//! into the core's [`Report`], for the bindings that render it (wasm and the component).
//!
//! The report is read from a `serde_json::Value` by hand rather than through its derived
//! `Deserialize`: the derive (for the report and the events in it) cost 7.3 kB gzipped of the
//! core wasm, reading by hand about 2. The whole binding, renderer included, adds 15.7 kB gzipped
//! (41.5 kB raw) to the core wasm, measured on one commit built with and without it. Missing or
//! mistyped fields read as empty or zero; an event of a kind this build does not know is left out.

use serde_json::Value;

use crate::plan::EventStatus;
use crate::report::{Call, CallEvent, Report, StoredFile, Thresholds};
use crate::{Error, Result};

/// The report in `json` (the npm package's `ReportData`).
pub(crate) fn parse(json: &str) -> Result<Report> {
    let value: Value = serde_json::from_str(json).map_err(|e| Error::json("report", &e))?;
    let thresholds = &value["thresholds"];
    Ok(Report {
        title: text(&value["title"]),
        model: text(&value["model"]),
        encoding: text(&value["encoding"]),
        window: number(&value["window"]),
        thresholds: Thresholds {
            compact_at: number(&thresholds["compactAt"]),
            target: number(&thresholds["target"]),
            summarize_at: number(&thresholds["summarizeAt"]),
        },
        calls: list(&value["calls"], |c| Call {
            call: number(&c["call"]),
            messages: number(&c["messages"]) as usize,
            tokens_before: number(&c["tokensBefore"]),
            tokens_after: number(&c["tokensAfter"]),
            prefix_break: c["prefixBreak"].as_bool().unwrap_or(false),
            // An event of a kind this build does not know is left out.
            events: list(&c["events"], |e| {
                Some(CallEvent {
                    strategy: crate::report::html::strategy(e["strategy"].as_str()?)?,
                    status: match e["status"].as_str() {
                        Some("failed") => EventStatus::Failed,
                        Some("not-executed") => EventStatus::NotExecuted,
                        Some("fallback") => EventStatus::Fallback,
                        _ => EventStatus::Applied,
                    },
                    message_index: number(&e["messageIndex"]) as usize,
                    path: e["path"].as_str().map(str::to_owned),
                    tokens_before: number(&e["tokensBefore"]),
                    tokens_after: number(&e["tokensAfter"]),
                    tokens_saved: number(&e["tokensSaved"]),
                    error: e["error"].as_str().map(str::to_owned),
                })
            })
            .into_iter()
            .flatten()
            .collect(),
        }),
        store: list(&value["store"], |f| {
            Some(StoredFile {
                path: text(&f["path"]),
                strategy: crate::report::html::strategy(f["strategy"].as_str()?)?,
                call: number(&f["call"]),
                tokens: number(&f["tokens"]),
                chars: f["chars"].as_u64().unwrap_or(0),
            })
        })
        .into_iter()
        .flatten()
        .collect(),
        notes: list(&value["notes"], text),
    })
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn number(value: &Value) -> u32 {
    value
        .as_u64()
        .or_else(|| value.as_f64().map(|f| f.max(0.0) as u64))
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

fn list<T>(value: &Value, item: impl Fn(&Value) -> T) -> Vec<T> {
    value
        .as_array()
        .map(|items| items.iter().map(item).collect())
        .unwrap_or_default()
}
