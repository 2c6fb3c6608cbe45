//! Criterion benchmarks and side-by-side runs against peer engines.
//!
//! The library part holds the side-by-side runs against peer engines ([`peers`]); the corpus
//! they replay and the percentiles they report are `schema_compiler::corpus`'s, shared with
//! `stencil maskbench`. The benchmarks themselves are in `benches/` (criterion) and are run
//! through `cargo xtask bench <name>`.
#![warn(missing_docs)]

pub mod peers;
