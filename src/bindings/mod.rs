//! The bindings: each only converts between a host's values and the core's. The core knows
//! nothing of them.

#[cfg(feature = "wasm")]
mod wasm;
