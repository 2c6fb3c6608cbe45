//! An MLX model runtime (safetensors, Llama family and Gemma 3) behind generate's model trait.
//!
//! [`MlxModel`] loads a Hugging Face / MLX model directory (`config.json` and
//! `*.safetensors`, sharded or not) into [MLX](https://github.com/ml-explore/mlx) through the
//! published `mlx-rs` bindings, and implements [`generate::Model`]: [`Model::forward`] appends
//! tokens to the KV cache and returns the next-token logits, [`Model::truncate`] rolls the
//! cache back. Sampling and masking stay in `generate`. The tokenizer is not read here:
//! load the directory's `tokenizer.json` with [`generate::Tokenizer`].
//!
//! Use it for models published in MLX format (the `mlx-community` conversions, with their
//! 4- and 8-bit quantization) or plain Hugging Face checkpoints, on Apple silicon (Metal) or,
//! after `cargo xtask mlx-setup`, on a Linux CPU. For GGUF files use `runtime-llama`.
//!
//! # Example
//!
//! JSON that follows a schema, from a chat prompt (the directory holds `config.json`, the
//! weights and `tokenizer.json`):
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use generate::{Generator, Message, Model, Request, Tokenizer};
//! use runtime_mlx::{MlxConfig, MlxModel};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = "models/Qwen3-0.6B-4bit";
//! let model = MlxModel::load(dir, MlxConfig::default().with_n_ctx(2048))?;
//! println!("{}", model.describe());
//! let tokenizer = Arc::new(Tokenizer::from_file(format!("{dir}/tokenizer.json"))?);
//! let mut generator = Generator::new(model, tokenizer)?;
//!
//! let request = Request::chat(vec![Message::new("user", "Name a country and its capital.")])
//!     .with_schema(serde_json::json!({
//!         "type": "object",
//!         "properties": {"country": {"type": "string"}, "capital": {"type": "string"}},
//!         "required": ["country", "capital"]
//!     }));
//! let out = generator.generate(&request, &mut |piece| {
//!     print!("{piece}");
//!     true
//! })?;
//! assert!(out.complete);
//! # Ok(())
//! # }
//! ```
//!
//! `cargo run --release -p runtime-mlx --example greedy -- --model DIR` continues a prompt
//! greedily and reports prompt and decode speed.
//!
//! # Architectures
//!
//! `config.json`'s `model_type` selects one of ([`Arch`]):
//!
//! | `model_type` | differences from the Llama layout |
//! | --- | --- |
//! | `llama`, `mistral` | none (Llama 3.1 `rope_scaling`, optional `attention_bias`) |
//! | `qwen2` | biases on the query, key and value projections |
//! | `qwen3` | RMS norms on queries and keys (per head) |
//! | `gemma3_text` | embeddings scaled by `sqrt(hidden_size)`; RMS norms multiply by `1 + w`; norms after attention and around the MLP; query/key norms; GELU (tanh) MLP; attention scale `query_pre_attn_scalar^-1/2`; every `sliding_window_pattern`-th layer global, the others attending within `sliding_window` with their own rotary base (`rope_local_base_freq`); tied embeddings; final logit soft-capping when set |
//!
//! Tensors use the Hugging Face names (`model.embed_tokens.weight`,
//! `model.layers.N.self_attn.q_proj.weight`, `model.norm.weight`, optional `lm_head.weight`).
//! Weights are `f16`, `bf16` or `f32`, or MLX-quantized: a module with a `scales` tensor has
//! packed `uint32` weights and `scales`/`biases` per group, with `group_size` and `bits` from
//! `config.json`'s `quantization` (per-module overrides included). Quantized linear layers run
//! `quantized_matmul`; a quantized embedding table is dequantized row by row, and serves as the
//! output projection through `quantized_matmul` when the embeddings are tied.
//!
//! # Loading
//!
//! [`MlxModel::load`] takes an [`MlxConfig`]:
//!
//! | field | default | meaning |
//! | --- | --- | --- |
//! | `n_ctx` | 4096 | context size, capped at `max_position_embeddings` |
//! | `compute` | [`ComputeType::F32`] | type of activations, KV cache and unquantized weights |
//!
//! Floating-point weights are converted to the compute type at load, and every weight is
//! evaluated then, so a truncated file fails the load rather than the first forward pass.
//!
//! # Masks on the host
//!
//! Each [`Model::forward`] evaluates the graph and copies the last position's logits into a
//! `Vec<f32>` owned by the model (the vocabulary size in `f32`s: 1 MiB for Gemma 3's 262,144
//! tokens). The grammar's mask is applied to that copy on the host, by `generate`, not inside
//! MLX: the mask kernel computes the allowed-token bitset on the CPU from the grammar state
//! after every token, so applying it in MLX would mean uploading the mask each step (as many
//! bytes as the copy saves), and the runtime would have to know the constraint. The copy is a
//! memcpy on unified memory, small next to a forward pass, and keeps runtimes
//! interchangeable: `generate` sees the same `&[f32]` from llama.cpp and from MLX.
//!
//! # KV cache
//!
//! Each layer keeps keys and values in buffers that grow 256 positions at a time (up to
//! `n_ctx`) and are written in place. [`Model::truncate`] only moves the end mark, so rolling
//! back and re-evaluating costs nothing beyond the new tokens; positions past the mark are
//! overwritten by the next [`Model::forward`]. Sliding-window layers keep every position too
//! (so any rollback works) and attend to the last `sliding_window` of them, by slicing for a
//! single token and with an explicit mask for a prompt. [`Model::truncate`] to a length at or
//! past [`Model::n_past`] does nothing.
//!
//! # Errors
//!
//! Loading fails with an [`Error`] that names the file, field or tensor: a missing
//! `config.json` or weights file, an unsupported `model_type` ([`Error::UnsupportedArch`]), a
//! missing or malformed field ([`Error::Config`]), a missing tensor or one whose shape or type
//! does not fit ([`Error::MissingTensor`], [`Error::BadTensor`]).
//! [`Error::into_load_error`] turns it into a [`ModelError::Load`]. Through the trait:
//! - [`ModelError::ContextOverflow`] and [`ModelError::BadToken`] are checked before anything
//!   is evaluated, and the cache is untouched;
//! - [`ModelError::Runtime`]: an empty `forward`, or MLX failing (the cache then holds what it
//!   held before the call).
//!
//! Nothing panics on user input.
//!
//! # Cost model
//!
//! A forward pass builds one MLX graph per 512 prompt tokens (one for a single token) and
//! evaluates it with the updated caches; only the last position goes through the final norm
//! and the output projection. With [`ComputeType::F32`] (the default) an `f16` model takes
//! twice its file size in memory; quantized weights stay packed.
//!
//! # Build requirements
//!
//! On macOS `mlx-sys` builds MLX with Metal and Accelerate (Xcode command line tools, CMake).
//! On Linux run `cargo xtask mlx-setup` once per checkout: it prepares MLX from PyPI (CPU),
//! mlx-c and the bindings in the download cache and points Cargo at them
//! (`.cargo/mlx.toml`); see this crate's README.
#![warn(missing_docs)]

pub mod config;
pub mod error;
mod model;
mod transformer;
mod weights;

pub use config::{Arch, ComputeType, MlxConfig, ModelConfig, Quantization, RopeScaling};
pub use error::Error;
pub use generate::{Model, ModelError};
pub use model::{CONFIG_FILE, MlxModel};
