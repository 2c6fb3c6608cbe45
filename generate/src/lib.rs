//! Constrained decoding wired behind model, tokenizer, constraint and sampler traits.
#![warn(missing_docs)]

pub mod model;

pub use model::{Model, ModelError};
