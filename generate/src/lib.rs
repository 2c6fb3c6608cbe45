//! Constrained decoding wired behind model, tokenizer, constraint and sampler traits.
#![warn(missing_docs)]

pub mod constraint;
pub mod model;

pub use constraint::SchemaRecognizer;
pub use model::{Model, ModelError};
