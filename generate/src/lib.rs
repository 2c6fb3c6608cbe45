//! Constrained decoding wired behind model, tokenizer, constraint and sampler traits.
//!
//! `generate` turns a prompt and a JSON Schema into text that follows the schema:
//!
//! 1. the prompt is rendered with the tokenizer's chat template ([`ChatTemplate`], Jinja via
//!    `minijinja`), or used as plain text for base models; the schema is put into a
//!    `#!JSON_SCHEMA!#` placeholder or appended as an instruction ([`SchemaInPrompt`]);
//! 2. the schema is compiled once ([`schema_compiler::Grammar`], cached with its mask cache);
//! 3. the decode loop asks the [`Model`] for logits, the mask kernel for the allowed tokens,
//!    masks the logits, samples ([`sampler::Sampler`]), commits, and streams UTF-8 safe text;
//!    bytes the schema forces are fed without sampling, and near the token budget the
//!    shortest valid completion closes the document.
//!
//! Tool calling (OpenAI-style tools, `tool_choice`, a multi-trip loop and a calculator) is in
//! [`tools`].
//!
//! The [`Generator`] works with any [`Model`] (the `runtime-llama` crate provides one) and any
//! [`mask_kernel::Recognizer`] as constraint; a schema's is its [`schema_compiler::Matcher`].
#![warn(missing_docs)]

pub mod batch;
pub mod engine;
pub mod error;
pub mod model;
pub mod stream;
pub mod template;
pub mod tokenizer;
pub mod tools;

pub use batch::{
    BatchCounters, BatchModel, BatchOptions, BatchStats, Batcher, Lane, PerSequence, SeqStep,
};
pub use engine::{
    GenerateOptions, Generator, LogprobSink, MAX_TOP_LOGPROBS, Output, Prompt, Reasoning, Request,
    StopReason, Timing, TokenLogprob, kernel_cached, kernel_for, new_mask_cache, reasoning_end_in,
};
pub use error::GenerateError;
pub use mask_kernel::default_tables_dir;
pub use model::{Model, ModelError};
/// The layout of JSON generated under a schema ([`Generator::set_whitespace`]).
pub use schema_compiler::Whitespace;
pub use template::{ChatTemplate, Message, SCHEMA_PLACEHOLDER, SchemaInPrompt};
pub use tokenizer::{TextEncoder, Tokenizer};
