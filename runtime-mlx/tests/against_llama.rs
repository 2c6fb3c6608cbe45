//! The default model through both runtimes: llama.cpp on the Q4_K_M GGUF and MLX on the f16
//! folder `cargo xtask convert-model` writes from it. The same prompt tokens, 32 greedy steps
//! each; the first 20 tokens must be identical.
//!
//! The two do not compute the same function exactly: llama.cpp multiplies by Q4_K/Q6_K blocks
//! with quantized activations, MLX by the dequantized weights in f32. The logits differ by a
//! little; greedy tokens only differ where the top two logits are closer than that, and the
//! test prints the margin there to tell such a tie from a real error.
//!
//! Without the assets (`cargo xtask fetch-assets`, `cargo xtask convert-model`) the test says
//! what is missing and passes.

use std::path::PathBuf;

use anyhow::{Context, Result};
use generate::Model;
use runtime_llama::{LlamaConfig, LlamaModel};
use runtime_mlx::{ComputeType, MlxConfig, MlxModel};

/// Greedy steps run on each runtime.
const STEPS: usize = 32;
/// Steps that must agree.
const MUST_AGREE: usize = 20;

fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    )
}

/// The index of the largest logit and its margin over the second largest.
fn top2(logits: &[f32]) -> (u32, f32) {
    let (mut best, mut first, mut second) = (0, f32::NEG_INFINITY, f32::NEG_INFINITY);
    for (i, &l) in logits.iter().enumerate() {
        if l > first {
            second = first;
            first = l;
            best = i;
        } else if l > second {
            second = l;
        }
    }
    (
        u32::try_from(best).expect("vocabulary fits u32"),
        first - second,
    )
}

/// One runtime's greedy run: the tokens, each step's top-2 margin, the logits of step 0.
struct Run {
    tokens: Vec<u32>,
    margins: Vec<f32>,
    first_logits: Vec<f32>,
    logits: Vec<Vec<f32>>,
}

fn greedy(model: &mut dyn Model, prompt: &[u32]) -> Result<Run> {
    let mut run = Run {
        tokens: Vec::with_capacity(STEPS),
        margins: Vec::with_capacity(STEPS),
        first_logits: Vec::new(),
        logits: Vec::with_capacity(STEPS),
    };
    let mut logits = model.forward(prompt)?.to_vec();
    run.first_logits.clone_from(&logits);
    for _ in 0..STEPS {
        let (next, margin) = top2(&logits);
        run.tokens.push(next);
        run.margins.push(margin);
        run.logits.push(logits);
        logits = model.forward(&[next])?.to_vec();
    }
    Ok(run)
}

#[test]
fn greedy_tokens_match_llama_cpp() -> Result<()> {
    let gguf = assets().join("models/gemma-3-270m-q4_k_m.gguf");
    let dir = assets().join("models/gemma-3-270m-f16");
    if !gguf.is_file() {
        eprintln!(
            "skipped: {} is missing (cargo xtask fetch-assets)",
            gguf.display()
        );
        return Ok(());
    }
    if !dir.join("config.json").is_file() {
        eprintln!(
            "skipped: {} is missing (cargo xtask convert-model)",
            dir.display()
        );
        return Ok(());
    }

    let mut llama = LlamaModel::load(&gguf, LlamaConfig::default().with_n_ctx(512))
        .context("loading the GGUF with llama.cpp")?;
    let prompt = llama.vocab().tokenize(
        "<start_of_turn>user\nName three primary colours and one fact about each.<end_of_turn>\n\
         <start_of_turn>model\n",
        true,
        true,
    )?;
    let mut mlx = MlxModel::load(
        &dir,
        MlxConfig::default()
            .with_n_ctx(512)
            .with_compute(ComputeType::F32),
    )
    .context("loading the converted folder with MLX")?;

    let a = greedy(&mut llama, &prompt)?;
    let b = greedy(&mut mlx, &prompt)?;
    let max_diff = a
        .first_logits
        .iter()
        .zip(&b.first_logits)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max);
    println!("prompt ({} tokens): {prompt:?}", prompt.len());
    println!("llama.cpp: {:?}", a.tokens);
    println!("MLX:       {:?}", b.tokens);
    println!("max |logit difference| at step 0: {max_diff:.4}");
    let divergence = a.tokens.iter().zip(&b.tokens).position(|(x, y)| x != y);
    match divergence {
        None => println!("identical for all {STEPS} steps"),
        Some(step) => {
            let (x, y) = (a.tokens[step] as usize, b.tokens[step] as usize);
            println!(
                "first divergence at step {step}: llama.cpp {x} (top-2 margin {:.4}), MLX {y} \
                 (top-2 margin {:.4}); llama.cpp's logits for both {:.4} / {:.4}, MLX's {:.4} / {:.4}",
                a.margins[step],
                b.margins[step],
                a.logits[step][x],
                a.logits[step][y],
                b.logits[step][x],
                b.logits[step][y],
            );
        }
    }
    assert!(
        divergence.is_none_or(|step| step >= MUST_AGREE),
        "the runtimes' greedy tokens differ within the first {MUST_AGREE} steps"
    );
    Ok(())
}
