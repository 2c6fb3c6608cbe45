//! What the end-to-end tests share: the default model and tokenizer, loaded into a generator.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Result, ensure};
use generate::{Generator, Tokenizer};
use runtime_llama::{LlamaConfig, LlamaModel};

/// `STENCIL_ASSETS`, else the workspace's `assets/`.
pub fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    )
}

/// The default model (1024-token context) and its tokenizer, as a generator.
pub fn generator() -> Result<Generator<LlamaModel>> {
    let model = assets().join("models/gemma-3-270m-q4_k_m.gguf");
    let tok = assets().join("tokenizers/gemma3/tokenizer.json");
    ensure!(
        model.is_file() && tok.is_file(),
        "{} or {} is missing: run `cargo xtask fetch-assets`",
        model.display(),
        tok.display()
    );
    let model = LlamaModel::load(&model, LlamaConfig::default().with_n_ctx(1024))?;
    let tokenizer = Arc::new(Tokenizer::from_file(&tok)?);
    Ok(Generator::new(model, tokenizer)?)
}
