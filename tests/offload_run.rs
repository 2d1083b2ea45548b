//! Tier 1 at the moment a tool returns is the core's (`OffloadRun`, issue 31): the native
//! driver's `offload_tool_output` gets what the npm and Python hosts' `offloadToolOutput` /
//! `offload_tool_output` get: a large output stored whole and a preview naming it, a small one
//! left as it is, a failed write leaving the output (nothing lost), JSON outputs stored as
//! JSON, and nothing recorded in the compactor's state.

use std::collections::BTreeMap;

use context_compactor::{
    Compactor, Config, Error, EventStatus, Host, OffloadPoll, OffloadRun, Reply, Summarize,
};

#[derive(Default)]
struct Store {
    files: BTreeMap<String, String>,
    down: bool,
}

impl Host for Store {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        if self.down {
            return Err("connection refused".into());
        }
        self.files.insert(path.to_owned(), content.to_owned());
        Ok(())
    }
    fn summarize(&mut self, _: &Summarize) -> Result<String, String> {
        Err("no summaries here".into())
    }
}

fn compactor() -> Compactor {
    Compactor::new(Config {
        model: Some("gpt-4o".into()),
        ..Config::default()
    })
    .unwrap()
}

fn huge() -> String {
    (0..30_000).map(|i| format!("result line {i}\n")).collect()
}

#[test]
fn a_large_text_output_is_stored_whole_and_the_model_sees_a_preview_naming_it() {
    let mut c = compactor();
    let state = c.state_json();
    let mut store = Store::default();
    let output = huge();
    let offloaded = c
        .offload_tool_output(
            "search",
            "c1",
            &serde_json::to_string(&output).unwrap(),
            &mut store,
        )
        .unwrap();
    let preview = offloaded.preview.expect("a preview");
    assert_eq!(store.files.len(), 1);
    let (path, stored) = store.files.iter().next().unwrap();
    assert_eq!(stored, &output, "stored byte for byte");
    assert!(preview.contains(path.as_str()), "{preview}");
    assert!(preview.len() < output.len() / 10);
    assert_eq!(offloaded.events.len(), 1);
    assert_eq!(offloaded.events[0].status, EventStatus::Applied);
    // Nothing recorded: a tool output offloaded on its way is not part of the record.
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&c.state_json()).unwrap()["record"],
        serde_json::from_str::<serde_json::Value>(&state).unwrap()["record"]
    );
}

#[test]
fn a_small_output_stays_and_nothing_is_written() {
    let mut c = compactor();
    let mut store = Store::default();
    let offloaded = c
        .offload_tool_output("ls", "c1", r#""a.txt\nb.txt""#, &mut store)
        .unwrap();
    assert_eq!(offloaded.preview, None);
    assert!(offloaded.events.is_empty());
    assert!(store.files.is_empty());
}

#[test]
fn a_failed_write_leaves_the_output_as_it_is() {
    let mut c = compactor();
    let mut store = Store {
        down: true,
        ..Store::default()
    };
    let offloaded = c
        .offload_tool_output(
            "search",
            "c1",
            &serde_json::to_string(&huge()).unwrap(),
            &mut store,
        )
        .unwrap();
    assert_eq!(offloaded.preview, None, "nothing lost");
    assert_eq!(offloaded.events.len(), 1);
    assert_eq!(offloaded.events[0].status, EventStatus::Failed);
}

#[test]
fn a_large_json_output_is_stored_as_json_numbers_kept_exactly() {
    let mut c = compactor();
    let mut store = Store::default();
    let rows: Vec<String> = (0..6_000)
        .map(|i| format!(r#"{{"id":{i},"price":0.1000000000000000000000001,"big":123456789012345678901234567890,"name":"row {i}"}}"#))
        .collect();
    let output = format!("[{}]", rows.join(","));
    let offloaded = c
        .offload_tool_output("query", "q1", &output, &mut store)
        .unwrap();
    assert!(offloaded.preview.is_some());
    let stored = store.files.values().next().unwrap();
    assert!(
        stored.contains("0.1000000000000000000000001")
            && stored.contains("123456789012345678901234567890"),
        "numbers as given"
    );
    let parsed: serde_json::Value = serde_json::from_str(stored).unwrap();
    assert_eq!(parsed.as_array().unwrap().len(), 6_000);
}

#[test]
fn output_that_is_not_json_is_a_typed_error_naming_the_tool() {
    let err = OffloadRun::new("search", "c1", "{not json", false).unwrap_err();
    match err {
        Error::InvalidMessages { message } => {
            assert!(
                message.contains("search") && message.contains("c1"),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_reply_to_a_request_not_in_flight_is_a_typed_error() {
    let mut c = compactor();
    let mut run = OffloadRun::new(
        "search",
        "c1",
        &serde_json::to_string(&huge()).unwrap(),
        true,
    )
    .unwrap();
    let OffloadPoll::Io(ios) = run.poll(&mut c).unwrap() else {
        panic!("a write")
    };
    assert!(matches!(
        run.handle(&mut c, ios[0].id + 99, Reply::Done),
        Err(Error::PlanMismatch { .. })
    ));
    assert!(matches!(
        run.handle(&mut c, ios[0].id, Reply::Woke),
        Err(Error::PlanMismatch { .. })
    ));
    run.handle(&mut c, ios[0].id, Reply::Done).unwrap();
    assert!(matches!(run.poll(&mut c).unwrap(), OffloadPoll::Done(d) if d.preview.is_some()));
}

#[test]
fn output_json_that_is_more_than_one_value_or_text_that_is_not_a_string_is_refused() {
    // Set into the conversation's text as is, it would have added fields of its own.
    let smuggled = format!(
        r#"1,"type":"text","value":{}"#,
        serde_json::to_string(&huge()).unwrap()
    );
    for (output, text) in [
        (smuggled.as_str(), false),
        ("1 2", false),
        (r#"{"a":1}"#, true),
    ] {
        match OffloadRun::new("search", "c1", output, text).unwrap_err() {
            Error::InvalidMessages { message } => {
                assert!(
                    message.starts_with("the output of tool search (call c1): "),
                    "{message}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
    // A JSON string as a JSON output (a value whose JSON is a string) is stored as JSON.
    let mut c = compactor();
    let mut run = OffloadRun::new(
        "search",
        "c1",
        &serde_json::to_string(&huge()).unwrap(),
        false,
    )
    .unwrap();
    let OffloadPoll::Io(ios) = run.poll(&mut c).unwrap() else {
        panic!("a write")
    };
    match &ios[0].request {
        context_compactor::Request::Write { path, content, .. } => {
            assert!(
                path.ends_with(".json") && content.starts_with('"'),
                "{path}"
            )
        }
        other => panic!("{other:?}"),
    }
}
