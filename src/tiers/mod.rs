//! The compaction tiers, cheapest and most reversible first: offload (tier 1), reversible edits
//! once the window fills up (tier 2), and the lossy tier (tier 3). Pinned content is kept out of
//! every one of them.

pub(crate) mod lossy;
pub(crate) mod offload;
pub(crate) mod pinned;
pub(crate) mod provider;
pub(crate) mod tier2;
pub(crate) mod working;
