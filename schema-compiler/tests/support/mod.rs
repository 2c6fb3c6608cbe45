//! Code shared by the integration tests and the `conformance` example.

pub mod search;
pub mod suite;
