//! A llama.cpp model runtime (GGUF) behind generate's model trait.
//!
//! [`LlamaModel`] loads a GGUF file with llama.cpp (through the `llama-cpp-2` bindings, CPU
//! only) and implements [`generate::Model`]: [`Model::forward`] appends tokens to the KV cache
//! and returns the next-token logits, [`Model::truncate`] rolls the cache back. Sampling is not
//! done here; the decode loop in `generate` owns it, so this runtime needs no seed.
//!
//! Use it to run constrained decoding on a local quantized model. Besides the trait it exposes
//! what the GGUF file says about the model ([`ModelInfo`]) and its own tokenizer
//! ([`GgufVocab`]), so a caller can check that a `tokenizer.json` matches the model before
//! decoding with it.
//!
//! # Example
//!
//! Greedy continuation of a prompt (the runnable version, with timings, is
//! `cargo run --release -p runtime-llama --example greedy`):
//!
//! ```no_run
//! use generate::Model;
//! use runtime_llama::{LlamaConfig, LlamaModel};
//!
//! # fn main() -> Result<(), generate::ModelError> {
//! let mut model = LlamaModel::load("assets/models/gemma-3-270m-q4_k_m.gguf", LlamaConfig::default())?;
//! println!("{}", model.describe());
//!
//! let prompt = model.vocab().tokenize("The capital of France is", true, false)?;
//! let mut logits = model.forward(&prompt)?;
//! let mut text = Vec::new();
//! for _ in 0..8 {
//!     let next = argmax(logits);
//!     if model.vocab().is_end_of_generation(next) {
//!         break;
//!     }
//!     model.vocab().token_bytes_into(next, &mut text)?;
//!     logits = model.forward(&[next])?;
//! }
//! println!("{}", String::from_utf8_lossy(&text));
//!
//! // Roll back to the prompt and evaluate something else from there.
//! model.truncate(prompt.len())?;
//! # Ok(())
//! # }
//! # fn argmax(logits: &[f32]) -> u32 {
//! #     (0u32..).zip(logits).max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i)
//! # }
//! ```
//!
//! # Its own tokenizer
//!
//! A GGUF file carries its vocabulary and chat template; [`load_tokenizer`] turns them into a
//! [`generate::Tokenizer`] (token bytes, special and end-of-generation tokens, the template and
//! llama.cpp's own encoder), so a model needs nothing else. [`check_tokenizer`] refuses a
//! `tokenizer.json` that belongs to another model.
//!
//! # Loading
//!
//! [`LlamaModel::load`] takes a [`LlamaConfig`]:
//!
//! | field | default | meaning |
//! | --- | --- | --- |
//! | `n_ctx` | 4096 | context size, capped at the model's training context |
//! | `n_batch` | 512 | tokens per llama.cpp decode call while evaluating a prompt |
//! | `n_threads` | [`default_threads`] | threads for single-token decoding |
//! | `n_threads_batch` | [`default_threads`] | threads for prompt evaluation |
//! | `log` | [`LlamaLog::Quiet`] | where llama.cpp's own messages go |
//!
//! [`LlamaModel::load_with_kernel`] loads the model with its own tokenizer and that
//! tokenizer's mask kernel, ready to sample. It keeps the file's vocabulary beside the kernel's
//! tables, so that a later start-up indexes it and reads the tables while llama.cpp loads the
//! weights; the kept copy is used only once it equals, token by token, the vocabulary
//! llama.cpp loaded.
//!
//! llama.cpp is initialised once per process, on the first load; any number of models can be
//! loaded afterwards, and each [`LlamaModel`] is `Send`. Loads are serialised with a process-wide
//! lock. The KV cache keeps every position of sliding-window layers (Gemma 3 has them), so
//! [`Model::truncate`] can roll back to any point; that costs memory proportional to the
//! context size on those layers.
//!
//! [`Model::truncate`] to a length at or past [`Model::n_past`] does nothing.
//!
//! llama.cpp reports a lot while loading. By default it is silenced; set
//! `STENCIL_LLAMA_LOG=1` (or [`LlamaLog::Tracing`]) to forward it to `tracing` as events with
//! target `llama-cpp-2` (for example `RUST_LOG=llama-cpp-2=info`).
//!
//! # Errors
//!
//! Every failure is a [`generate::ModelError`], and nothing panics on user input:
//! - [`ModelError::Load`]: missing file, not a GGUF model, invalid settings, no context;
//! - [`ModelError::ContextOverflow`]: checked before anything is evaluated, the cache is
//!   untouched;
//! - [`ModelError::BadToken`]: an id at or past the vocabulary size, checked before it reaches
//!   llama.cpp (which would abort the process);
//! - [`ModelError::Runtime`]: an empty `forward`, or llama.cpp failing to decode (the positions
//!   of the failed call are removed from the cache).
//!
//! # Cost model
//!
//! `forward` copies the last position's logits (the vocabulary size in `f32`s; 1 MiB for
//! Gemma 3's 262,144 tokens) into a buffer allocated at load time; no allocation happens per
//! call. Prompts are evaluated `n_batch` tokens at a time with logits computed only for the
//! final position.
//!
//! Logits depend slightly on how tokens are grouped into `forward` calls: llama.cpp picks its
//! CPU kernels by batch shape. For gemma-3-270m, evaluating a 12-token prompt whole rather than
//! in two halves moves individual logits by up to about 0.8 (probabilities by under 0.02, same
//! top tokens). The same grouping gives bit-identical logits, including after a
//! [`Model::truncate`] and re-evaluation.
//!
//! ## Threads
//!
//! Measured on a 2-core x86-64 machine shared with other builds, with
//! `cargo run --release -p runtime-llama --example greedy -- --threads N --threads-batch N`
//! on gemma-3-270m Q4_K_M (a 193-token prompt after a warm-up evaluation, then 64 greedy
//! tokens; ranges over runs at 1-minute load averages of 1.5 to 5):
//!
//! | threads | prompt | decode |
//! | --- | --- | --- |
//! | 1 | 118–230 tokens/s | 20–29 tokens/s |
//! | 2 | 47–68 tokens/s | 2.6–7.5 tokens/s |
//! | 2, `OMP_WAIT_POLICY=passive` (load 6 to 8) | 84–135 tokens/s | 11–17 tokens/s |
//! | 1 (same runs, load 6 to 8) | 107–156 tokens/s | 16–24 tokens/s |
//!
//! Two threads lose badly as soon as anything else runs: llama.cpp's OpenMP workers spin-wait at
//! every barrier, and with the other core taken each barrier waits for a scheduler time slice
//! (hundreds of barriers per token). One thread is therefore the default on two cores
//! ([`default_threads`]: half the logical CPUs, 1 to 8). On a machine with idle cores to spare,
//! raise the counts; on a busy one with more than one thread, `OMP_WAIT_POLICY=passive` (read by
//! the OpenMP runtime at start-up) limits the damage. A short prompt (6 tokens) evaluates in
//! 60–100 ms with one thread.
//!
//! # Build requirements
//!
//! `llama-cpp-2` compiles the llama.cpp it ships with CMake and generates bindings with
//! bindgen: `cmake`, `clang` and `libclang-dev` must be installed. A cold build takes about ten
//! minutes on two idle cores (much longer when they are shared), and the release and
//! dev/test profiles each build llama.cpp once.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod backend;
pub mod config;
pub mod info;
mod kept;
mod model;
mod tokenizer;
pub mod vocab;

pub use config::{LOG_ENV, LlamaConfig, LlamaLog, default_threads};
pub use generate::{Model, ModelError};
pub use info::ModelInfo;
pub use model::LlamaModel;
pub use tokenizer::{check_tokenizer, load_tokenizer};
pub use vocab::GgufVocab;
