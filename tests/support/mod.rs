//! A simulated host for the sans-IO core: an in-memory store, injectable write faults, and the
//! plan → execute → apply loop, written against `Action::id()` and `Action::writes()` only so
//! that every store-backed action kind works unchanged.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use context_compactor::{Action, Applied, Compactor, Message, Outcome, Plan, Result};

/// The host's store: path → content.
pub type Store = BTreeMap<String, String>;

/// Which writes fail.
#[derive(Clone, Debug, Default)]
pub enum Faults {
    /// Every write succeeds.
    #[default]
    None,
    /// A write to a path fails when `hash(seed, path) % 100 < percent`: deterministic per path,
    /// so content-addressed duplicates fail together.
    Seeded { seed: u64, percent: u8 },
    /// Writes to exactly these paths fail.
    Paths(BTreeSet<String>),
    /// Every write fails.
    All,
}

impl Faults {
    pub fn fails(&self, path: &str) -> bool {
        match self {
            Faults::None => false,
            Faults::Seeded { seed, percent } => fnv1a(*seed, path.as_bytes()) % 100 < u64::from(*percent),
            Faults::Paths(paths) => paths.contains(path),
            Faults::All => true,
        }
    }
}

fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^ (h >> 29)
}

/// The action's kind as it serializes (`"offload"`, ...), for messages.
pub fn kind(action: &Action) -> String {
    serde_json::to_value(action)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_owned))
        .unwrap_or_default()
}

/// Executes every action of `plan` against `store`: each write is attempted; the action is
/// `written` only if all its writes succeeded, `failed` otherwise. Actions without writes get no
/// outcome (the core treats them as not executed).
pub fn execute(plan: &Plan, store: &mut Store, faults: &Faults) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for action in &plan.actions {
        let writes = action.writes();
        if writes.is_empty() {
            continue;
        }
        let mut failed = Vec::new();
        for (path, content) in writes {
            if faults.fails(path) {
                failed.push(path.to_owned());
            } else {
                store.insert(path.to_owned(), content.to_owned());
            }
        }
        let id = action.id().to_owned();
        outcomes.push(if failed.is_empty() {
            Outcome::Written { id }
        } else {
            Outcome::Failed { id, error: format!("injected fault writing {}", failed.join(", ")) }
        });
    }
    outcomes
}

/// One full host turn.
#[derive(Debug)]
pub struct Driven {
    pub plan: Plan,
    pub applied: Applied,
    pub store: Store,
    pub outcomes: Vec<Outcome>,
}

impl Driven {
    /// True when every action with writes was written.
    pub fn all_written(&self) -> bool {
        self.outcomes.iter().all(|o| matches!(o, Outcome::Written { .. }))
    }
}

/// plan → execute (with `faults`, into a fresh store) → apply.
pub fn drive_with(compactor: &mut Compactor, messages: Vec<Message>, faults: &Faults) -> Result<Driven> {
    let mut store = Store::new();
    drive_into(compactor, messages, faults, &mut store).map(|(plan, applied, outcomes)| Driven {
        plan,
        applied,
        store,
        outcomes,
    })
}

/// plan → execute into an existing store → apply.
pub fn drive_into(
    compactor: &mut Compactor,
    messages: Vec<Message>,
    faults: &Faults,
    store: &mut Store,
) -> Result<(Plan, Applied, Vec<Outcome>)> {
    let plan = compactor.plan(&messages)?;
    let outcomes = execute(&plan, store, faults);
    let applied = compactor.apply(messages, &plan, &outcomes)?;
    Ok((plan, applied, outcomes))
}

/// plan → execute → apply with every write succeeding.
pub fn drive(compactor: &mut Compactor, messages: Vec<Message>) -> (Applied, Store, Vec<Outcome>) {
    let driven = drive_with(compactor, messages, &Faults::None).expect("drive");
    (driven.applied, driven.store, driven.outcomes)
}
