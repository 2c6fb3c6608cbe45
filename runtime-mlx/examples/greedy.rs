//! Greedily continues a prompt with an MLX model directory and reports prompt and decode
//! speed.
//!
//! ```text
//! cargo run --release -p runtime-mlx --example greedy -- --model DIR --prompt "The capital of France is"
//! ```
//!
//! `DIR` holds `config.json`, the safetensors weights and `tokenizer.json` (with
//! `tokenizer_config.json`); the prompt is encoded with the tokenizer's own prefix (BOS).

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Parser;
use generate::{Model, Tokenizer};
use runtime_mlx::{ComputeType, MlxConfig, MlxModel};
use sampler::{Sampler, SamplerConfig};

/// Greedy continuation with timings.
#[derive(Parser)]
struct Args {
    /// Model directory.
    #[arg(long)]
    model: PathBuf,
    /// Text to continue.
    #[arg(long, default_value = "The capital of France is")]
    prompt: String,
    /// Number of tokens to generate.
    #[arg(short = 'n', long, default_value_t = 32)]
    n_tokens: usize,
    /// Context size.
    #[arg(long, default_value_t = 2048)]
    ctx: usize,
    /// Compute in bfloat16 instead of f32.
    #[arg(long)]
    bf16: bool,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let compute = if args.bf16 {
        ComputeType::Bf16
    } else {
        ComputeType::F32
    };
    let started = Instant::now();
    let mut model = MlxModel::load(
        &args.model,
        MlxConfig::default()
            .with_n_ctx(args.ctx)
            .with_compute(compute),
    )
    .map_err(|e| e.into_load_error(&args.model.display().to_string()))?;
    let tokenizer = Tokenizer::from_file(args.model.join("tokenizer.json"))
        .context("reading the model directory's tokenizer.json")?;
    println!(
        "{} (loaded in {:.2}s)",
        model.describe(),
        started.elapsed().as_secs_f64()
    );

    let prompt: Vec<u32> = tokenizer
        .encode(&args.prompt, true)?
        .iter()
        .map(|t| t.as_u32())
        .collect();
    // The workspace's sampler, greedy: it modifies the logits, so it works on a copy.
    let mut sampler = Sampler::new(SamplerConfig::greedy(), 0)?;
    let mut logits = Vec::with_capacity(model.vocab_size());
    let mut argmax = |l: &[f32]| -> Result<u32> {
        logits.clear();
        logits.extend_from_slice(l);
        Ok(sampler.sample(&mut logits, &[])?)
    };
    let t = Instant::now();
    let mut next = argmax(model.forward(&prompt)?)?;
    let prompt_s = t.elapsed().as_secs_f64();

    print!("{}", args.prompt);
    let eos = tokenizer.vocab().eos_ids().to_vec();
    let pieces: Vec<&[u8]> = tokenizer.vocab().iter().map(|(_, b)| b).collect();
    let t = Instant::now();
    let mut generated = 0;
    for _ in 0..args.n_tokens {
        if eos.iter().any(|e| e.as_u32() == next) {
            break;
        }
        let bytes = pieces.get(next as usize).copied().unwrap_or_default();
        print!("{}", String::from_utf8_lossy(bytes));
        std::io::stdout().flush()?;
        next = argmax(model.forward(&[next])?)?;
        generated += 1;
    }
    let decode_s = t.elapsed().as_secs_f64();
    println!();
    println!(
        "prompt: {} tokens in {:.0} ms ({:.1} tokens/s); decode: {generated} tokens at {:.1} tokens/s",
        prompt.len(),
        prompt_s * 1e3,
        prompt.len() as f64 / prompt_s,
        generated as f64 / decode_s.max(1e-9)
    );
    Ok(())
}
