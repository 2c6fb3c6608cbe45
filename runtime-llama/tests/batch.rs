//! Batched evaluation on the real default model: sequences evaluated together in one step get
//! the logits each gets alone, keep their own positions, and roll back on their own.

use std::path::PathBuf;

use anyhow::{Context, Result};
use generate::{BatchModel, SeqStep};
use runtime_llama::{LlamaConfig, LlamaModel, Model, ModelError};

fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    )
}

fn load(n_seq: u32) -> Result<LlamaModel> {
    let path = assets().join("models/gemma-3-270m-q4_k_m.gguf");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo xtask fetch-assets`",
        path.display()
    );
    let config = LlamaConfig::default().with_n_ctx(256).with_sequences(n_seq);
    LlamaModel::load(path, config).context("loading the default model")
}

fn probabilities(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = logits.iter().map(|l| (l - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.into_iter().map(|e| e / sum).collect()
}

fn argmax(logits: &[f32]) -> usize {
    (0..logits.len())
        .max_by(|&a, &b| logits[a].total_cmp(&logits[b]))
        .unwrap()
}

/// The same distribution, up to the float differences of another grouping of the tokens.
fn assert_close(batched: &[f32], alone: &[f32], what: &str) {
    let (p, q) = (probabilities(batched), probabilities(alone));
    let diff = p
        .iter()
        .zip(&q)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(diff < 0.05, "{what}: max |probability difference| {diff}");
    assert_eq!(argmax(batched), argmax(alone), "{what}");
}

fn step(seq: usize, keep: usize, tokens: &[u32]) -> SeqStep<'_> {
    SeqStep {
        seq,
        keep,
        truncated: false,
        tokens,
        logits: true,
    }
}

#[test]
fn sequences_in_one_step_get_the_logits_each_gets_alone() -> Result<()> {
    let mut batched = load(3)?;
    let mut alone = load(1)?;
    assert_eq!(batched.max_sequences(), 3);
    assert_eq!(BatchModel::context_size(&batched), 256);
    let prompts: Vec<Vec<u32>> = [
        "The capital of France is",
        "def fibonacci(n):",
        "Once upon a time, in a land far away, there lived a",
    ]
    .iter()
    .map(|p| batched.vocab().tokenize(p, true, false))
    .collect::<Result<_, _>>()?;

    // Three prompts in one step.
    let steps: Vec<SeqStep<'_>> = (0..3).map(|i| step(i, 0, &prompts[i])).collect();
    let mut out = vec![Vec::new(); 3];
    batched.decode(&steps, &mut out)?;
    let mut next = Vec::new();
    for (i, prompt) in prompts.iter().enumerate() {
        alone.reset()?;
        let want = alone.forward(prompt)?.to_vec();
        assert_close(&out[i], &want, &format!("prompt {i}"));
        next.push(argmax(&want) as u32);
    }

    // One more token each, in one step: each sequence continues its own prompt.
    let tokens: Vec<[u32; 1]> = next.iter().map(|&t| [t]).collect();
    let steps: Vec<SeqStep<'_>> = (0..3)
        .map(|i| step(i, prompts[i].len(), &tokens[i]))
        .collect();
    batched.decode(&steps, &mut out)?;
    for (i, prompt) in prompts.iter().enumerate() {
        alone.reset()?;
        alone.forward(prompt)?;
        let want = alone.forward(&tokens[i])?.to_vec();
        assert_close(&out[i], &want, &format!("continuation {i}"));
    }

    // Sequence 1 rolls back to two positions and takes another path, alone in its step;
    // sequence 2 is untouched by it and goes on where it was.
    let other = batched.vocab().tokenize(" hello world", false, false)?;
    batched.decode(&[step(1, 2, &other)], &mut out[..1])?;
    alone.reset()?;
    alone.forward(&prompts[1][..2])?;
    let want = alone.forward(&other)?.to_vec();
    assert_close(&out[0], &want, "rolled back");
    let more = [next[2]];
    let keep = prompts[2].len() + 1;
    batched.decode(&[step(2, keep, &more)], &mut out[..1])?;
    alone.reset()?;
    alone.forward(&prompts[2])?;
    alone.forward(&tokens[2])?;
    let want = alone.forward(&more)?.to_vec();
    assert_close(&out[0], &want, "untouched");
    Ok(())
}

#[test]
fn each_sequence_has_its_own_context_and_bad_steps_are_errors() -> Result<()> {
    let mut model = load(2)?;
    let long: Vec<u32> = vec![2; 250];
    let mut out = vec![Vec::new(); 2];
    assert_eq!(
        model.max_batch_tokens(),
        256,
        "the batch is capped at the context"
    );
    match model.decode(&[step(0, 0, &long), step(1, 0, &long)], &mut out) {
        Err(ModelError::Runtime(m)) => assert!(m.contains("500 tokens in one step"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Both sequences fill most of their context: neither crowds the other out.
    model.decode(&[step(0, 0, &long)], &mut out[..1])?;
    model.decode(&[step(1, 0, &long)], &mut out[..1])?;
    match model.decode(&[step(0, 250, &[2; 7])], &mut out[..1]) {
        Err(ModelError::ContextOverflow {
            needed: 257,
            capacity: 256,
        }) => {}
        other => panic!("{other:?}"),
    }
    match model.decode(&[step(2, 0, &[2])], &mut out[..1]) {
        Err(ModelError::Runtime(m)) => assert!(m.contains("sequence 2"), "{m}"),
        other => panic!("{other:?}"),
    }
    match model.decode(&[step(1, 0, &[u32::MAX])], &mut out[..1]) {
        Err(ModelError::BadToken { .. }) => {}
        other => panic!("{other:?}"),
    }
    // After the errors, sequence 1 still holds its positions.
    model.decode(&[step(1, 250, &[2])], &mut out[..1])?;
    Ok(())
}
