//! The bindings: each only converts between a host's values and the core's. The core knows
//! nothing of them.

#[cfg(feature = "compiler")]
mod compiler;
#[cfg(feature = "component")]
#[allow(unsafe_code)] // wit-bindgen's generated glue only: see component/mod.rs
mod component;
#[cfg(any(feature = "wasm", feature = "counter"))]
mod counting;
#[cfg(any(feature = "wasm", feature = "compiler", feature = "counter"))]
mod host;
#[cfg(any(
    test,
    feature = "wasm",
    feature = "component",
    feature = "compiler",
    feature = "counter"
))]
mod json;
#[cfg(any(feature = "wasm", feature = "component"))]
mod report;
#[cfg(feature = "wasm")]
mod wasm;
