//! The native driver keeps its state in the app's store (issue 31, item 2: the same loop as the
//! npm and Python hosts, `CallRun`): `Compactor::load` reads it, each call that changed it saves
//! it with a conditional write, a save lost to another process runs the call again on what that
//! process stored (without writing or summarizing twice), and a store that keeps refusing is a
//! typed `state_conflict`.

use std::collections::BTreeMap;

use context_compactor::{
    parse_messages, stored::Stored, Compactor, Config, Error, Host, Message, WriteIf,
};

/// A store shared by the "processes" of one conversation, with a log of its calls.
#[derive(Default)]
struct Store {
    files: BTreeMap<String, String>,
    writes: Vec<String>,
    /// Conditional writes refused while the store holds what they expect (a broken store).
    refuse_all: bool,
    /// Read fails (a store that is down).
    down: bool,
}

impl Host for Store {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        self.writes.push(path.to_owned());
        self.files.insert(path.to_owned(), content.to_owned());
        Ok(())
    }
    fn read(&mut self, path: &str) -> Result<Option<String>, String> {
        if self.down {
            return Err("connection refused".into());
        }
        Ok(self.files.get(path).cloned())
    }
    fn write_if(
        &mut self,
        path: &str,
        expected: Option<&str>,
        text: &str,
    ) -> Result<WriteIf, String> {
        if self.down {
            return Err("connection refused".into());
        }
        let current = self.files.get(path).cloned();
        if self.refuse_all || current.as_deref() != expected {
            return Ok(WriteIf::Refused { current });
        }
        self.writes.push(path.to_owned());
        self.files.insert(path.to_owned(), text.to_owned());
        Ok(WriteIf::Written)
    }
}

const STATE: &str = "/state/compactor.json";

fn config() -> Config {
    Config::from_json(r#"{"model":"gpt-4o","contextWindow":16000}"#).unwrap()
}

/// A conversation of `reads` long file reads, each offloaded in a 16k window.
fn reads(reads: usize) -> Vec<Message> {
    let mut messages = vec![serde_json::json!({"role": "user", "content": "read them"})];
    for i in 0..reads {
        let output = format!("line {i} of a long tool output\n").repeat(2_500);
        messages.push(serde_json::json!({"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": format!("c{i}"), "toolName": "read", "input": {"i": i}}]}));
        messages.push(serde_json::json!({"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": format!("c{i}"), "toolName": "read",
             "output": {"type": "text", "value": output}}]}));
    }
    parse_messages(&serde_json::Value::from(messages).to_string()).unwrap()
}

fn stored(store: &Store) -> Stored {
    Stored::parse(store.files.get(STATE).map(String::as_str), STATE).unwrap()
}

#[test]
fn a_loaded_compactor_saves_its_state_and_a_new_one_resumes_from_it() {
    let mut store = Store::default();
    let mut first = Compactor::load(config(), STATE, &mut store).unwrap();
    let conversation = reads(1);
    let managed = first.manage(conversation.clone(), &mut store).unwrap();
    assert_eq!(managed.events.len(), 1, "the read is offloaded");
    assert_eq!(managed.state_error, None);
    assert_eq!(stored(&store).revision, 1, "the state is saved once");
    let offloads = store.writes.iter().filter(|w| *w != STATE).count();

    // Nothing changed: nothing is saved again.
    let again = first.manage(conversation.clone(), &mut store).unwrap();
    assert_eq!(again.messages, managed.messages);
    assert_eq!(stored(&store).revision, 1);

    // Another process, from the store: the same prompt, no offload written again.
    let mut second = Compactor::load(config(), STATE, &mut store).unwrap();
    let resumed = second.manage(conversation, &mut store).unwrap();
    assert_eq!(resumed.messages, managed.messages);
    assert_eq!(
        store.writes.iter().filter(|w| *w != STATE).count(),
        offloads
    );
    assert_eq!(second.state(), first.state());
}

#[test]
fn a_save_lost_to_another_process_runs_the_call_again_on_its_state() {
    let mut store = Store::default();
    // Two processes of one conversation, both started before either saved.
    let mut a = Compactor::load(config(), STATE, &mut store).unwrap();
    let mut b = Compactor::load(config(), STATE, &mut store).unwrap();
    let turn1 = reads(1);
    let turn2 = reads(2);
    a.manage(turn1, &mut store).unwrap();
    assert_eq!(stored(&store).revision, 1);
    let writes = store.writes.len();

    // B's save over nothing is refused: it runs again on A's state and saves over it.
    let managed = b.manage(turn2.clone(), &mut store).unwrap();
    assert_eq!(managed.state_error, None);
    assert_eq!(stored(&store).revision, 2);
    // B's first round offloaded both reads (it could not know A's), its rerun wrote neither
    // again: each path once, and one save landed.
    let new: Vec<&String> = store.writes[writes..].iter().collect();
    let mut paths = new.clone();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), new.len(), "a path written twice: {new:?}");
    assert_eq!(new.len(), 3, "two offloads, one save: {new:?}");
    assert_eq!(new.last().map(|p| p.as_str()), Some(STATE));

    // What B answered is what one long-lived compactor sends for that turn.
    let mut alone = Compactor::new(config()).unwrap();
    let mut scratch = Store::default();
    alone.manage(reads(1), &mut scratch).unwrap();
    let expected = alone.manage(turn2, &mut scratch).unwrap();
    assert_eq!(managed.messages, expected.messages);
}

#[test]
fn a_double_submit_finds_its_own_state_saved() {
    let mut store = Store::default();
    let mut a = Compactor::load(config(), STATE, &mut store).unwrap();
    let mut b = Compactor::load(config(), STATE, &mut store).unwrap();
    let first = a.manage(reads(1), &mut store).unwrap();
    let saved = store.files[STATE].clone();
    // The same turn again, from the same state: the save B would make is the one A made (its
    // conditional write over nothing is refused, and the store holds B's very text).
    let second = b.manage(reads(1), &mut store).unwrap();
    assert_eq!(second.messages, first.messages);
    assert_eq!(second.events.len(), 1, "B's own round is its answer");
    assert_eq!(second.state_error, None);
    assert_eq!(store.files[STATE], saved);
    assert_eq!(stored(&store).revision, 1);
    // B holds what is stored: its next call saves over it, not over nothing.
    let third = b.manage(reads(2), &mut store).unwrap();
    assert_eq!(third.state_error, None);
    assert_eq!(stored(&store).revision, 2);
}

#[test]
fn a_store_that_keeps_refusing_is_a_state_conflict_and_one_that_is_down_is_said() {
    let mut store = Store::default();
    let mut compactor = Compactor::load(config(), STATE, &mut store).unwrap();
    store.refuse_all = true;
    let error = compactor.manage(reads(1), &mut store).unwrap_err();
    let Error::StateConflict { path, attempts, .. } = &error else {
        panic!("expected a state conflict, got {error:?}");
    };
    assert_eq!(path, STATE);
    assert_eq!(*attempts, 5);
    assert!(error
        .to_string()
        .contains("refused to save the state at /state/compactor.json 5 times"));

    // A store that is down: the compactor starts new and each result says so.
    let mut down = Store {
        down: true,
        ..Store::default()
    };
    let mut compactor = Compactor::load(config(), STATE, &mut down).unwrap();
    let managed = compactor.manage(reads(1), &mut down).unwrap();
    assert_eq!(managed.events.len(), 1, "the call is answered");
    let said = managed.state_error.expect("the state error is said");
    assert!(
        said.starts_with("state not saved to /state/compactor.json: connection refused"),
        "{said}"
    );

    // Text there that is not a saved state is a typed error naming the path.
    let mut bad = Store::default();
    bad.files.insert(STATE.into(), "[1, 2]".into());
    let error = Compactor::load(config(), STATE, &mut bad).unwrap_err();
    assert!(matches!(error, Error::InvalidConfig { .. }), "{error:?}");
    assert!(error.to_string().contains(STATE), "{error}");
}
