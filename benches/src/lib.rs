//! Criterion benchmarks and side-by-side runs against peer engines.
//!
//! The library part holds what the benchmark binaries and the `stencil maskbench` command share:
//! loading a corpus of schemas with test instances ([`corpus`]) and summarizing timings
//! ([`stats`]). The benchmarks themselves are in `benches/` (criterion) and are run through
//! `cargo xtask bench <name>`.
#![warn(missing_docs)]

pub mod corpus;
pub mod peers;
pub mod stats;
