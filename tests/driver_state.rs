//! The native driver keeps its state in the app's store (issue 31, item 2: the same loop as the
//! npm and Python hosts, `CallRun`): `Compactor::load` reads it, each call that changed it saves
//! it with a conditional write, a save lost to another process runs the call again on what that
//! process stored (without writing or summarizing twice), and a store that keeps refusing is a
//! typed `state_conflict`. With `Host::summary_lease`, a call's summary is made under a lease
//! beside the state, the lease's store calls and sleeps asked by the same loop: two processes
//! that plan one summary ask the summarizer once, and a lease another process holds is waited
//! on, then summarized past.

use std::collections::BTreeMap;

use context_compactor::{
    make_ahead, parse_messages, stored::Stored, AsyncHost, Compactor, Config, Error, Host, Message,
    Summarize, SummaryLease, WriteIf,
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
    /// Summaries made, summaries under a lease (`Host::summary_lease`), and a wall clock that
    /// moves only when the driver sleeps (no test waits for real).
    summaries: u32,
    lease: bool,
    wall: f64,
    slept: u64,
    /// Summaries ahead of need are made (`Host::summarizes_ahead`), and those handed out.
    ahead: bool,
    asked_ahead: Vec<(Summarize, Option<String>)>,
    reads: u32,
}

impl Host for Store {
    fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        self.writes.push(path.to_owned());
        self.files.insert(path.to_owned(), content.to_owned());
        Ok(())
    }
    fn read(&mut self, path: &str) -> Result<Option<String>, String> {
        self.reads += 1;
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
    fn summarize(&mut self, _: &Summarize) -> Result<String, String> {
        self.summaries += 1;
        Ok(format!("the summary made by call {}", self.summaries))
    }
    fn summary_lease(&mut self) -> Option<SummaryLease> {
        self.lease.then(|| SummaryLease {
            owner: format!("process at {}", self.wall),
            summarize_timeout_ms: 1_000.0,
        })
    }
    fn summarizes_ahead(&mut self) -> bool {
        self.ahead
    }
    fn summarize_ahead(&mut self, ahead: &Summarize, state_path: Option<&str>) {
        self.asked_ahead
            .push((ahead.clone(), state_path.map(str::to_owned)));
    }
    fn sleep(&mut self, ms: u64) -> bool {
        self.slept += ms;
        self.wall += ms as f64;
        true
    }
    fn wall_ms(&mut self) -> f64 {
        self.wall
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
    // Both: why it planned without the state, and that the save failed too.
    assert_eq!(
        said,
        "state not read from /state/compactor.json: connection refused; planned from the \
         messages alone; state not saved to /state/compactor.json: connection refused"
    );

    // Text there that is not a saved state is a typed error naming the path.
    let mut bad = Store::default();
    bad.files.insert(STATE.into(), "[1, 2]".into());
    let error = Compactor::load(config(), STATE, &mut bad).unwrap_err();
    assert!(matches!(error, Error::InvalidConfig { .. }), "{error:?}");
    assert!(error.to_string().contains(STATE), "{error}");
}

/// A chat long enough for `compact` to summarize its older turns.
fn chat() -> Vec<Message> {
    let mut messages = Vec::new();
    for i in 0..24 {
        let sky = "why is the sky blue? ".repeat(20);
        let answer = "Rayleigh scattering. ".repeat(20);
        messages
            .push(serde_json::json!({"role": "user", "content": format!("question {i}: {sky}")}));
        messages.push(
            serde_json::json!({"role": "assistant", "content": format!("answer {i}: {answer}")}),
        );
    }
    parse_messages(&serde_json::Value::from(messages).to_string()).unwrap()
}

/// The leases beside the state: path and text.
fn leases(store: &Store) -> Vec<(String, String)> {
    let dir = format!("{STATE}.summaries/");
    store
        .files
        .iter()
        .filter(|(path, _)| path.starts_with(&dir))
        .map(|(p, t)| (p.clone(), t.clone()))
        .collect()
}

#[test]
fn two_processes_that_plan_one_summary_ask_the_summarizer_once() {
    let mut store = Store {
        lease: true,
        wall: 1e12,
        ..Store::default()
    };
    // Both started before either saved (a double submit).
    let mut a = Compactor::load(config(), STATE, &mut store).unwrap();
    let mut b = Compactor::load(config(), STATE, &mut store).unwrap();
    let first = a.compact(chat(), None, &mut store).unwrap();
    assert_eq!(store.summaries, 1);
    let left = leases(&store);
    assert_eq!(left.len(), 1, "one lease beside the state");
    assert_eq!(
        left[0].1, r#"{"summary":"the summary made by call 1"}"#,
        "the summary is left in the lease"
    );

    store.wall += 10.0;
    let second = b.compact(chat(), None, &mut store).unwrap();
    assert_eq!(
        store.summaries, 1,
        "the second process read the first one's summary from its lease"
    );
    assert_eq!(second.messages, first.messages, "the same prompt");
    assert_eq!(second.state_error, None);
}

/// A process that took the lease of this chat's summary and died: it holds it for long after
/// the wait. The store, and the lease's path (from a run on another store).
fn held_lease() -> (Store, String) {
    let mut elsewhere = Store {
        lease: true,
        ..Store::default()
    };
    let mut c = Compactor::load(config(), STATE, &mut elsewhere).unwrap();
    c.compact(chat(), None, &mut elsewhere).unwrap();
    let (lease_path, _) = leases(&elsewhere).remove(0);
    let mut store = Store {
        lease: true,
        wall: 5_000.0,
        ..Store::default()
    };
    store.files.insert(lease_path.clone(), HELD.to_owned());
    (store, lease_path)
}

const HELD: &str = r#"{"owner":"a request that died","until":99999999999999}"#;

#[test]
fn a_lease_another_process_holds_is_waited_on_then_summarized_past() {
    let (mut store, lease_path) = held_lease();
    let mut d = Compactor::load(config(), STATE, &mut store).unwrap();
    let managed = d.compact(chat(), None, &mut store).unwrap();
    assert_eq!(
        store.slept,
        1_000 + 5_000 + 50,
        "waited as long as a lease lasts (the summarizer's time, 5 s and a poll) for the other's summary, in polls"
    );
    assert_eq!(store.summaries, 1, "then summarized itself");
    assert!(serde_json::to_string(&managed.messages)
        .unwrap()
        .contains("the summary made by call 1"));
    assert_eq!(
        store.files.get(&lease_path).map(String::as_str),
        Some(HELD),
        "another's lease is left as it is"
    );
}

#[test]
fn without_a_lease_no_file_is_left_beside_the_state() {
    let mut store = Store::default();
    let mut e = Compactor::load(config(), STATE, &mut store).unwrap();
    e.compact(chat(), None, &mut store).unwrap();
    assert_eq!(store.summaries, 1);
    assert!(leases(&store).is_empty());
}

/// Turn `t` of a chat that grows past the summary trigger of an 8k window a little at a time.
fn growing(turns: usize) -> Vec<Message> {
    let mut messages = Vec::new();
    for i in 0..turns {
        let text = "about the weather and the tides, at some length. ".repeat(6);
        messages.push(serde_json::json!({"role": "user", "content": format!("turn {i}: {text}")}));
        messages.push(
            serde_json::json!({"role": "assistant", "content": format!("reply {i}: {text}")}),
        );
    }
    parse_messages(&serde_json::Value::from(messages).to_string()).unwrap()
}

fn small() -> Config {
    Config::from_json(r#"{"model":"gpt-4o","contextWindow":8000}"#).unwrap()
}

#[test]
fn a_summary_asked_ahead_is_made_off_the_turn_and_applied_when_due() {
    let mut store = Store {
        ahead: true,
        ..Store::default()
    };
    let mut compactor = Compactor::new(small()).unwrap();
    let mut applied_at = None;
    for turn in 1..=40 {
        let before = store.summaries;
        let managed = compactor.manage(growing(turn), &mut store).unwrap();
        assert_eq!(
            store.summaries, before,
            "turn {turn}: no call waits on the summarizer"
        );
        // The host's background: each summary asked ahead, made and handed back before the
        // next turn (a thread would do it meanwhile).
        for (ahead, state_path) in std::mem::take(&mut store.asked_ahead) {
            assert_eq!(state_path, None);
            let text = make_ahead(&ahead, None, &mut store).expect("a summary");
            assert!(compactor.offer_summary(ahead.ahead_key.as_deref().unwrap(), text));
        }
        let prompt = serde_json::to_string(&managed.messages).unwrap();
        if applied_at.is_none() && prompt.contains("the summary made by call") {
            applied_at = Some(turn);
        }
    }
    let turn = applied_at.expect("the summary made ahead is applied");
    assert!(store.summaries >= 1);
    // Without a background, the same chat makes a turn wait for its summary.
    let mut waiting = Store::default();
    let mut blocking = Compactor::new(small()).unwrap();
    let waited = (1..=40).any(|t| {
        let before = waiting.summaries;
        blocking.manage(growing(t), &mut waiting).unwrap();
        waiting.summaries > before
    });
    assert!(
        waited,
        "the summary was due by turn {turn}: a host without a background waits for it"
    );
}

#[test]
fn a_summary_asked_ahead_with_a_kept_state_is_left_beside_it_for_the_next_process() {
    let mut store = Store {
        ahead: true,
        lease: true,
        wall: 1e12,
        ..Store::default()
    };
    let mut asked = None;
    for turn in 1..=40 {
        // A stateless server: a new compactor each turn, from the state in the store.
        let mut compactor = Compactor::load(small(), STATE, &mut store).unwrap();
        let before = store.summaries;
        let managed = compactor.manage(growing(turn), &mut store).unwrap();
        assert_eq!(
            store.summaries, before,
            "turn {turn}: no call waits on the summarizer"
        );
        assert_eq!(managed.state_error, None);
        for (ahead, state_path) in std::mem::take(&mut store.asked_ahead) {
            assert_eq!(state_path.as_deref(), Some(STATE));
            // Made after the response (a `waitUntil`, a thread): the process is gone by then,
            // so the text is only beside the state.
            make_ahead(&ahead, state_path.as_deref(), &mut store).expect("a summary");
            asked.get_or_insert(turn);
        }
        let prompt = serde_json::to_string(&managed.messages).unwrap();
        if prompt.contains("the summary made by call") {
            let key = asked.expect("asked before it is applied");
            assert!(turn > key);
            let beside: Vec<_> = store
                .files
                .keys()
                .filter(|p| p.contains(".summaries/ahead-"))
                .collect();
            assert_eq!(
                beside.len(),
                1,
                "the summary waited beside the state: {beside:?}"
            );
            return;
        }
    }
    panic!("the summary made ahead was never applied");
}

/// The same store as an async host that keeps `AsyncHost::sleep`'s default: it cannot wait.
struct NoTimer(Store);

impl AsyncHost for NoTimer {
    async fn write(&mut self, path: &str, content: &str) -> Result<(), String> {
        Host::write(&mut self.0, path, content)
    }
    async fn summarize(&mut self, summary: &Summarize) -> Result<String, String> {
        Host::summarize(&mut self.0, summary)
    }
    async fn read(&mut self, path: &str) -> Result<Option<String>, String> {
        Host::read(&mut self.0, path)
    }
    async fn write_if(
        &mut self,
        path: &str,
        expected: Option<&str>,
        text: &str,
    ) -> Result<WriteIf, String> {
        Host::write_if(&mut self.0, path, expected, text)
    }
    fn summary_lease(&mut self) -> Option<SummaryLease> {
        Host::summary_lease(&mut self.0)
    }
    fn wall_ms(&mut self) -> f64 {
        Host::wall_ms(&mut self.0)
    }
}

/// Polls a future whose every await is ready (the stores above) to its end.
fn ready<T>(future: impl std::future::Future<Output = T>) -> T {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
    {
        std::task::Poll::Ready(value) => value,
        std::task::Poll::Pending => panic!("a store here is ready at once"),
    }
}

#[test]
fn an_async_host_that_cannot_wait_summarizes_past_a_held_lease_at_once() {
    let mut host = NoTimer(held_lease().0);
    let mut d = ready(Compactor::load_async(config(), STATE, &mut host)).unwrap();
    let managed = ready(d.compact_async(chat(), None, &mut host)).unwrap();
    assert_eq!(host.0.summaries, 1, "summarized itself");
    assert!(serde_json::to_string(&managed.messages)
        .unwrap()
        .contains("the summary made by call 1"));
    // The load, the lease once, the state before its save: no read loop on the held lease.
    assert!(host.0.reads <= 4, "{} reads", host.0.reads);
}

#[test]
fn an_explicit_save_saves_now_a_lost_one_takes_the_stored_state_and_a_failed_one_is_a_typed_store_error(
) {
    let mut store = Store::default();
    let mut compactor = Compactor::load(config(), STATE, &mut store).unwrap();
    let history = reads(1);
    compactor.manage(history.clone(), &mut store).unwrap();
    let revision = |store: &Store| {
        Stored::parse(store.files.get(STATE).map(String::as_str), STATE)
            .unwrap()
            .revision
    };
    assert_eq!(revision(&store), 1);
    // Saved even though nothing changed since (the last step's calibration sample, say).
    compactor.save_state(&history, &mut store).unwrap();
    assert_eq!(revision(&store), 2);
    // Another process saved a later turn since: the save takes that state (nothing written
    // over it), and the next one lands over it.
    let mut other = Compactor::load(config(), STATE, &mut store).unwrap();
    other.manage(reads(2), &mut store).unwrap();
    let theirs = store.files.get(STATE).cloned();
    compactor.save_state(&history, &mut store).unwrap();
    assert_eq!(store.files.get(STATE).cloned(), theirs);
    assert_eq!(compactor.state(), other.state());
    // For this (earlier) turn the stored state already covers it: nothing; for the stored
    // turn, a save over it.
    compactor.save_state(&history, &mut store).unwrap();
    assert_eq!(revision(&store), 3);
    compactor.save_state(&reads(2), &mut store).unwrap();
    assert_eq!(revision(&store), 4);
    // The state deleted (expired) since: saved again, the compactor's own.
    store.files.remove(STATE);
    compactor.save_state(&reads(2), &mut store).unwrap();
    assert_eq!(revision(&store), 1);
    let saved = Stored::parse(store.files.get(STATE).map(String::as_str), STATE).unwrap();
    assert_eq!(saved.state, Some(compactor.state_json()));
    // A store that is down: the save's typed error, in the store's words.
    store.down = true;
    match other.save_state(&reads(2), &mut store) {
        Err(error @ Error::StoreFailed { .. }) => {
            assert!(
                error.to_string().contains("connection refused")
                    && error.to_string().contains(STATE),
                "{error}"
            )
        }
        other => panic!("expected a store failure, got {other:?}"),
    }
    // No kept state: nothing to save.
    let mut free = Compactor::new(config()).unwrap();
    free.save_state(&history, &mut store).unwrap();
}

#[test]
fn a_state_path_that_is_not_a_store_path_is_refused_before_anything_is_read() {
    let mut store = Store::default();
    for bad in ["../../etc/passwd", "state/../x.json", ""] {
        let Err(error) = Compactor::load(config(), bad, &mut store) else {
            panic!("{bad:?} was taken");
        };
        assert!(
            matches!(&error, context_compactor::Error::InvalidConfig { field, .. } if field == "statePath"),
            "{bad:?}: {error}"
        );
    }
    assert_eq!(
        (store.reads, store.files.len()),
        (0, 0),
        "nothing was read or written"
    );
}

/// Two long-lived compactors of one conversation (two server instances behind a load balancer)
/// take its turns in turn. Each plans on the state it last saved, a turn behind the other's: it
/// reads the stored state before it pays for a summary, and takes the other's, whose record
/// already holds the summary. A user's report: 37 summaries where one compactor asks 14.
#[test]
fn long_lived_compactors_taking_turns_ask_no_more_summaries_than_one() {
    let turns = 150;
    let mut alone_store = Store::default();
    let mut alone = Compactor::new(small()).unwrap();
    let mut expected = Vec::new();
    for turn in 1..=turns {
        expected.push(
            alone
                .manage(growing(turn), &mut alone_store)
                .unwrap()
                .messages,
        );
    }
    assert!(
        alone_store.summaries >= 3,
        "{} summaries",
        alone_store.summaries
    );

    let mut store = Store::default();
    let mut a = Compactor::load(small(), STATE, &mut store).unwrap();
    let mut b = Compactor::load(small(), STATE, &mut store).unwrap();
    for turn in 1..=turns {
        let instance = if turn % 2 == 1 { &mut a } else { &mut b };
        let managed = instance.manage(growing(turn), &mut store).unwrap();
        assert_eq!(managed.state_error, None, "turn {turn}");
        assert_eq!(
            managed.messages,
            expected[turn - 1],
            "turn {turn}: the same prompt"
        );
    }
    assert_eq!(store.summaries, alone_store.summaries, "summaries asked");
}
