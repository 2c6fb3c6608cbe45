//! Time of one batched step against the number of sequences in it.
//!
//! ```sh
//! cargo run --release -p runtime-llama --example batched -- [MODEL.gguf] [--threads N]
//! ```
//!
//! Loads the model with 8 sequences, gives each a prompt of its own length (about 160
//! positions), then times steps of one token for 1, 2, 4 and 8 sequences at once (20 steps
//! each, rolled back after) and prints milliseconds per step and tokens per second.

use std::time::Instant;

use generate::{BatchModel, SeqStep};
use runtime_llama::{LlamaConfig, LlamaModel};

const SEQUENCES: usize = 8;
const PROMPT: usize = 160;
const STEPS: usize = 20;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut path = format!(
        "{}/../assets/models/smollm2-135m-instruct-q4_1.gguf",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut threads = runtime_llama::default_threads();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => threads = args.next().ok_or("--threads needs a value")?.parse()?,
            _ => path = a,
        }
    }
    let config = LlamaConfig::default()
        .with_sequences(SEQUENCES as u32)
        .with_threads(threads, threads);
    let mut model = LlamaModel::load(&path, config)?;
    let prompt: Vec<u32> = (0..PROMPT as u32).map(|i| 100 + i % 500).collect();
    // Sequence s holds PROMPT - 10 s positions.
    let held = |s: usize| PROMPT - 10 * s;
    let mut out = vec![Vec::new(); SEQUENCES];
    for s in 0..SEQUENCES {
        let step = SeqStep {
            seq: s,
            keep: 0,
            truncated: true,
            tokens: &prompt[..held(s)],
            logits: true,
        };
        model.decode(&[step], &mut out[..1])?;
    }
    println!("{path}: {threads} thread(s)");
    for n in [1, 2, 4, 8] {
        let tokens: Vec<[u32; 1]> = (0..n as u32).map(|i| [200 + i]).collect();
        let t = Instant::now();
        for k in 0..STEPS {
            let steps: Vec<SeqStep<'_>> = (0..n)
                .map(|s| SeqStep {
                    seq: s,
                    keep: held(s) + k,
                    truncated: false,
                    tokens: &tokens[s],
                    logits: true,
                })
                .collect();
            model.decode(&steps, &mut out[..n])?;
        }
        let ms = t.elapsed().as_secs_f64() * 1e3 / STEPS as f64;
        println!(
            "{n} sequence(s): {ms:.1} ms per step, {:.0} tokens/s",
            n as f64 / ms * 1e3
        );
    }
    Ok(())
}
