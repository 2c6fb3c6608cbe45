//! Greedily continues a prompt with a GGUF model and reports prompt and decode speed.
//!
//! ```text
//! cargo run --release -p runtime-llama --example greedy -- --threads 1 --threads-batch 2
//! ```
//!
//! The prompt is tokenized with the model's own tokenizer (BOS added as the model asks). The
//! prompt is evaluated once before timing (unless `--no-warmup`), so that paging the weights in
//! from disk does not count as prompt evaluation.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use runtime_llama::{LlamaConfig, LlamaModel, Model};

/// Greedy continuation with timings.
#[derive(Parser)]
struct Args {
    /// GGUF model file [default: the gemma-3-270m asset].
    #[arg(long)]
    model: Option<PathBuf>,
    /// Text to continue.
    #[arg(long, default_value = "The capital of France is")]
    prompt: String,
    /// Number of tokens to generate.
    #[arg(short = 'n', long, default_value_t = 64)]
    n_tokens: usize,
    /// Threads for single-token decoding [default: the crate default].
    #[arg(long)]
    threads: Option<u32>,
    /// Threads for prompt evaluation [default: the crate default].
    #[arg(long)]
    threads_batch: Option<u32>,
    /// Time the first evaluation too (it pages the weights in from disk).
    #[arg(long)]
    no_warmup: bool,
    /// Context size.
    #[arg(long, default_value_t = 4096)]
    ctx: u32,
}

fn default_model() -> PathBuf {
    let assets = std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    );
    assets.join("models/gemma-3-270m-q4_k_m.gguf")
}

fn argmax(logits: &[f32]) -> u32 {
    (0u32..)
        .zip(logits)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(id, _)| id)
}

fn main() -> Result<()> {
    let args = Args::parse();
    // llama.cpp's own messages appear with STENCIL_LLAMA_LOG=1 and RUST_LOG=llama-cpp-2=info.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let path = args.model.unwrap_or_else(default_model);
    let defaults = LlamaConfig::default();
    let config = LlamaConfig::default().with_n_ctx(args.ctx).with_threads(
        args.threads.unwrap_or(defaults.n_threads),
        args.threads_batch.unwrap_or(defaults.n_threads_batch),
    );
    let (n_threads, n_threads_batch) = (config.n_threads, config.n_threads_batch);

    let start = Instant::now();
    let mut model = LlamaModel::load(&path, config).with_context(|| {
        format!(
            "loading {} (run `cargo xtask fetch-assets`?)",
            path.display()
        )
    })?;
    eprintln!("model: {}", model.describe());
    eprintln!(
        "load: {:.0} ms; threads: decode {n_threads}, batch {n_threads_batch}",
        start.elapsed().as_secs_f64() * 1e3
    );

    let prompt = model.vocab().tokenize(&args.prompt, true, false)?;
    if !args.no_warmup {
        // The first evaluation pages the memory-mapped weights in; keep it out of the timings.
        model.forward(&prompt)?;
        model.reset()?;
    }
    let start = Instant::now();
    let mut next = argmax(model.forward(&prompt)?);
    let prompt_secs = start.elapsed().as_secs_f64();

    print!("{}", args.prompt);
    let mut stdout = std::io::stdout().lock();
    let mut piece = Vec::new();
    let mut generated = 0usize;
    let start = Instant::now();
    while generated < args.n_tokens && !model.vocab().is_end_of_generation(next) {
        piece.clear();
        model.vocab().token_bytes_into(next, &mut piece)?;
        stdout.write_all(&piece)?;
        stdout.flush()?;
        next = argmax(model.forward(&[next])?);
        generated += 1;
    }
    let decode_secs = start.elapsed().as_secs_f64();
    writeln!(stdout)?;

    #[allow(clippy::cast_precision_loss)]
    let (n_prompt, n_generated) = (prompt.len() as f64, generated as f64);
    eprintln!(
        "prompt: {} tokens in {:.1} ms ({:.1} tokens/s)",
        prompt.len(),
        prompt_secs * 1e3,
        n_prompt / prompt_secs
    );
    eprintln!(
        "decode: {generated} tokens in {:.1} ms ({:.1} tokens/s)",
        decode_secs * 1e3,
        n_generated / decode_secs
    );
    Ok(())
}
