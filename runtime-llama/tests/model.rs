//! End-to-end tests against the real default model (gemma-3-270m, Q4_K_M).
//!
//! The model is an asset fetched by `cargo xtask fetch-assets`; without it every test here
//! fails with a message saying so.

use std::path::PathBuf;

use anyhow::{Context, Result, ensure};
use runtime_llama::{LlamaConfig, LlamaModel, Model, ModelError};

/// Gemma 3's vocabulary size.
const GEMMA3_VOCAB: usize = 262_144;

fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    )
}

fn model_path() -> PathBuf {
    let path = assets().join("models/gemma-3-270m-q4_k_m.gguf");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo xtask fetch-assets`",
        path.display()
    );
    path
}

/// A small context keeps each test's KV cache small; tests run in parallel.
fn load(n_ctx: u32) -> Result<LlamaModel> {
    let config = LlamaConfig::default().with_n_ctx(n_ctx);
    LlamaModel::load(model_path(), config).context("loading the default model")
}

fn top_k(logits: &[f32], k: usize) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..u32::try_from(logits.len()).unwrap()).collect();
    ids.sort_by(|&a, &b| logits[b as usize].total_cmp(&logits[a as usize]));
    ids.truncate(k);
    ids
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn loads_and_describes_itself() -> Result<()> {
    let model = load(512)?;
    assert_eq!(model.vocab_size(), GEMMA3_VOCAB);
    assert_eq!(model.vocab().len(), GEMMA3_VOCAB);
    assert_eq!(model.n_past(), 0);
    assert!(model.context_size() >= 512, "{}", model.context_size());

    let info = model.info();
    assert_eq!(info.architecture, "gemma3");
    assert_eq!(info.quantization(), "Q4_K_M");
    assert!(
        (200_000_000..350_000_000).contains(&info.n_params),
        "{} parameters",
        info.n_params
    );
    assert!(info.n_ctx_train >= 8192, "{}", info.n_ctx_train);

    let description = model.describe();
    for needle in ["gemma3", "Q4_K_M", "262144-token vocabulary", "parameters"] {
        assert!(
            description.contains(needle),
            "{needle:?} not in {description:?}"
        );
    }
    Ok(())
}

#[test]
fn context_is_capped_at_training_length() -> Result<()> {
    let model = LlamaModel::load(
        model_path(),
        LlamaConfig::default().with_n_ctx(u32::MAX / 4),
    );
    // A quarter of u32::MAX positions is far past gemma-3-270m's 32k training context; the cap
    // must apply before llama.cpp tries to allocate that cache.
    let model = model?;
    assert_eq!(model.context_size(), model.info().n_ctx_train);
    Ok(())
}

#[test]
fn special_tokens_come_from_the_gguf() -> Result<()> {
    let model = load(256)?;
    let vocab = model.vocab();
    assert_eq!(vocab.bos(), Some(2));
    assert_eq!(vocab.eos(), Some(1));
    assert!(vocab.adds_bos());
    assert_eq!(vocab.token_text(2)?, "<bos>");
    assert_eq!(vocab.token_bytes(1)?, b"<eos>");
    assert!(vocab.is_end_of_generation(1));
    assert!(!vocab.is_end_of_generation(2));

    let tokens = vocab.tokenize("The capital of France is", true, false)?;
    assert_eq!(tokens.first(), Some(&2), "{tokens:?}");
    let mut text = Vec::new();
    for &id in &tokens[1..] {
        vocab.token_bytes_into(id, &mut text)?;
    }
    assert_eq!(String::from_utf8(text)?, "The capital of France is");
    Ok(())
}

/// The GGUF's vocabulary agrees with the gemma3 `tokenizer.json` asset on a sample of ids: the
/// check a caller makes before driving this model with an index built from that file.
#[test]
fn vocabulary_matches_the_gemma3_tokenizer_json() -> Result<()> {
    let path = assets().join("tokenizers/gemma3/tokenizer.json");
    let json = std::fs::read_to_string(&path)
        .with_context(|| format!("{}: run `cargo xtask fetch-assets`", path.display()))?;
    let json: serde_json::Value = serde_json::from_str(&json)?;
    let entries = json["model"]["vocab"]
        .as_object()
        .context("no model.vocab")?;
    let mut by_id = vec![None; GEMMA3_VOCAB];
    for (text, id) in entries {
        let id = usize::try_from(id.as_u64().context("non-integer id")?)?;
        by_id[id] = Some(text.as_str());
    }

    let model = load(256)?;
    let vocab = model.vocab();
    assert_eq!(entries.len(), vocab.len());
    let mut checked = 0;
    for id in (0..GEMMA3_VOCAB)
        .step_by(101)
        .chain([0, 1, 2, 106, GEMMA3_VOCAB - 1])
    {
        let expected = by_id[id].with_context(|| format!("id {id} missing from tokenizer.json"))?;
        let id = u32::try_from(id)?;
        assert_eq!(vocab.token_text(id)?, expected, "token {id}");
        checked += 1;
    }
    assert!(checked > 2000);
    Ok(())
}

#[test]
fn greedy_continuation_is_sensible() -> Result<()> {
    let mut model = load(256)?;
    let prompt = model
        .vocab()
        .tokenize("The capital of France is", true, false)?;
    let paris = model.vocab().tokenize(" Paris", false, false)?;
    ensure!(paris.len() == 1, "\" Paris\" is one token, got {paris:?}");

    let logits = model.forward(&prompt)?;
    assert_eq!(logits.len(), GEMMA3_VOCAB);
    assert!(logits.iter().all(|x| x.is_finite()));
    let top = top_k(logits, 5);
    // A 270M base model half knows this one: its greedy choice is " the" (" the capital of
    // the country"), with " Paris" third.
    assert!(
        top.contains(&paris[0]),
        "\" Paris\" not in the top 5 {top:?}"
    );
    assert_eq!(model.n_past(), prompt.len());

    // A few greedy steps produce readable text.
    let mut next = top[0];
    let mut text = Vec::new();
    for _ in 0..6 {
        model.vocab().token_bytes_into(next, &mut text)?;
        next = top_k(model.forward(&[next])?, 1)[0];
    }
    let text = String::from_utf8(text)?;
    assert!(
        text.is_ascii() && text.split_whitespace().count() >= 3,
        "{text:?}"
    );
    assert!(
        text.chars().all(|c| !c.is_control() || c == '\n'),
        "{text:?}"
    );
    assert_eq!(model.n_past(), prompt.len() + 6);
    Ok(())
}

/// Softmax of a logits vector.
fn probabilities(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exp: Vec<f32> = logits.iter().map(|x| (x - max).exp()).collect();
    let sum: f32 = exp.iter().sum();
    exp.into_iter().map(|x| x / sum).collect()
}

/// Evaluating, rolling back and re-evaluating gives the logits of a fresh evaluation.
///
/// llama.cpp's CPU kernels depend on how many tokens one decode call holds, so the reference
/// evaluation groups the tokens the same way (first half, then second half); with the same
/// grouping the results agree to the bit.
#[test]
fn truncate_then_forward_matches_fresh_evaluation() -> Result<()> {
    let mut model = load(256)?;
    let tokens = model.vocab().tokenize(
        "Rust is a systems programming language that runs blazingly fast",
        true,
        false,
    )?;
    ensure!(tokens.len() > 8, "{tokens:?}");
    let split = tokens.len() / 2;
    model.forward(&tokens[..split])?;
    let fresh = model.forward(&tokens[split..])?.to_vec();
    model.reset()?;
    assert_eq!(model.n_past(), 0);

    // Evaluate a different continuation, roll back to the shared prefix, then finish.
    model.forward(&tokens[..split])?;
    model.forward(&[107, 108, 109])?;
    model.truncate(split)?;
    assert_eq!(model.n_past(), split);
    let resumed = model.forward(&tokens[split..])?.to_vec();
    let diff = max_abs_diff(&fresh, &resumed);
    assert!(diff < 1e-4, "max |logit difference| {diff}");

    // Rolling back further than the detour (into the first call's positions) works too.
    model.truncate(2)?;
    model.forward(&tokens[2..split])?;
    let resumed = model.forward(&tokens[split..])?.to_vec();
    let diff = max_abs_diff(&fresh, &resumed);
    assert!(diff < 1e-4, "max |logit difference| {diff}");

    // Grouped differently (whole prompt, or one token at a time) the logits move a little,
    // but the distribution does not.
    for (label, calls) in [
        ("whole", vec![tokens.clone()]),
        ("one by one", tokens.iter().map(|&id| vec![id]).collect()),
    ] {
        model.reset()?;
        let mut last = Vec::new();
        for call in &calls {
            last = model.forward(call)?.to_vec();
        }
        let diff = max_abs_diff(&probabilities(&fresh), &probabilities(&last));
        assert!(diff < 0.05, "{label}: max |probability difference| {diff}");
        assert_eq!(top_k(&fresh, 3), top_k(&last, 3), "{label}");
    }

    // Truncating past the end is a no-op.
    model.truncate(usize::MAX)?;
    assert_eq!(model.n_past(), tokens.len());
    Ok(())
}

/// A prompt longer than the batch size is evaluated in batch-sized calls, exactly as if the
/// caller had split it.
#[test]
fn prompts_longer_than_a_batch_are_split() -> Result<()> {
    let config = LlamaConfig::default().with_n_ctx(256).with_n_batch(4);
    let mut model = LlamaModel::load(model_path(), config)?;
    assert_eq!(model.batch_size(), 4);
    let tokens = model
        .vocab()
        .tokenize("The capital of France is", true, false)?;
    ensure!(tokens.len() > 4, "{tokens:?}");
    let split = model.forward(&tokens)?.to_vec();
    assert_eq!(model.n_past(), tokens.len());

    let mut by_hand = load(256)?;
    by_hand.forward(&tokens[..4])?;
    let diff = max_abs_diff(&split, by_hand.forward(&tokens[4..])?);
    assert!(diff < 1e-4, "max |logit difference| {diff}");
    Ok(())
}

#[test]
fn context_overflow_is_an_error_and_leaves_the_cache_alone() -> Result<()> {
    let mut model = load(256)?;
    let capacity = model.context_size();
    let too_many = vec![2u32; capacity + 1];
    match model.forward(&too_many) {
        Err(ModelError::ContextOverflow {
            needed,
            capacity: c,
        }) => {
            assert_eq!((needed, c), (capacity + 1, capacity));
        }
        other => panic!("expected a context overflow, got {other:?}"),
    }
    assert_eq!(model.n_past(), 0);

    model.forward(&vec![2u32; capacity - 1])?;
    model.forward(&[2])?;
    assert_eq!(model.n_past(), capacity);
    assert!(matches!(
        model.forward(&[2]),
        Err(ModelError::ContextOverflow { needed, .. }) if needed == capacity + 1
    ));
    assert_eq!(model.n_past(), capacity);
    Ok(())
}

#[test]
fn bad_token_ids_are_errors_not_crashes() -> Result<()> {
    let mut model = load(256)?;
    let vocab_size = u32::try_from(model.vocab_size())?;
    for id in [vocab_size, vocab_size + 1, u32::MAX, i32::MAX as u32 + 1] {
        match model.forward(&[2, id]) {
            Err(ModelError::BadToken {
                id: bad,
                vocab_size: n,
            }) => {
                assert_eq!((bad, n), (id, model.vocab_size()));
            }
            other => panic!("expected a bad-token error for {id}, got {other:?}"),
        }
        assert!(matches!(
            model.vocab().token_bytes(id),
            Err(ModelError::BadToken { .. })
        ));
        assert!(matches!(
            model.vocab().token_text(id),
            Err(ModelError::BadToken { .. })
        ));
        assert!(!model.vocab().is_end_of_generation(id));
    }
    assert_eq!(model.n_past(), 0);
    assert!(matches!(model.forward(&[]), Err(ModelError::Runtime(_))));
    // The model still works afterwards.
    model.forward(&[2, vocab_size - 1])?;
    assert_eq!(model.n_past(), 2);
    Ok(())
}

#[test]
fn load_errors_name_the_file() -> Result<()> {
    let missing = assets().join("models/no-such-model.gguf");
    match LlamaModel::load(&missing, LlamaConfig::default()) {
        Err(ModelError::Load { path, .. }) => assert!(path.ends_with("no-such-model.gguf")),
        other => panic!("expected a load error, got {other:?}"),
    }

    let not_gguf = std::env::temp_dir().join(format!("runtime-llama-{}.gguf", std::process::id()));
    std::fs::write(&not_gguf, b"this is not a GGUF file")?;
    let result = LlamaModel::load(&not_gguf, LlamaConfig::default());
    std::fs::remove_file(&not_gguf)?;
    assert!(matches!(result, Err(ModelError::Load { .. })), "{result:?}");

    let result = LlamaModel::load(model_path(), LlamaConfig::default().with_threads(0, 1));
    assert!(matches!(result, Err(ModelError::Load { .. })), "{result:?}");
    Ok(())
}

/// Two models live in one process, and a model can move to another thread.
#[test]
fn several_models_and_threads() -> Result<()> {
    let mut first = load(128)?;
    let second = load(128)?;
    let prompt = first.vocab().tokenize("Hello", true, false)?;
    let expected = first.forward(&prompt)?.to_vec();
    let handle = std::thread::spawn(move || -> Result<Vec<f32>> {
        let mut second = second;
        Ok(second.forward(&prompt)?.to_vec())
    });
    let got = handle.join().expect("worker thread panicked")?;
    let diff = max_abs_diff(&expected, &got);
    assert!(diff < 1e-3, "max |logit difference| {diff}");
    Ok(())
}

/// With overlap (the default) the evaluation runs on the model's own thread while `meanwhile`
/// runs on the caller's: the logits are those of a plain forward pass, and the wait for
/// `meanwhile` is reported; without overlap, `meanwhile` runs first and no wait is reported.
#[test]
fn forward_with_overlaps_and_matches_a_plain_forward() -> Result<()> {
    let mut plain = LlamaModel::load(
        model_path(),
        LlamaConfig::default().with_n_ctx(256).with_overlap(false),
    )?;
    let mut overlapped = load(256)?;
    assert!(overlapped.config().overlap, "overlap is the default");
    let tokens = plain.vocab().tokenize("JSON, please: {", true, false)?;
    let (head, last) = tokens.split_at(tokens.len() - 1);
    plain.forward(head)?;
    overlapped.forward(head)?;

    let caller = std::thread::current().id();
    let mut ran_on = None;
    let expected = plain
        .forward_with(last, &mut || ran_on = Some(std::thread::current().id()))?
        .to_vec();
    assert_eq!(ran_on, Some(caller));
    assert_eq!(plain.last_overlap_wait(), None);

    let mut ran_on = None;
    let got = overlapped
        .forward_with(last, &mut || {
            ran_on = Some(std::thread::current().id());
            std::thread::sleep(std::time::Duration::from_millis(300));
        })?
        .to_vec();
    assert_eq!(
        ran_on,
        Some(caller),
        "meanwhile runs on the caller's thread"
    );
    assert_eq!(expected, got, "the same evaluation, on another thread");
    let wait = overlapped
        .last_overlap_wait()
        .context("a wait is reported")?;
    // The evaluation of one token takes well under the 300 ms `meanwhile` sleeps, so most of
    // that sleep is waited for after it.
    assert!(wait > std::time::Duration::from_millis(100), "{wait:?}");
    assert_eq!(overlapped.n_past(), tokens.len());

    // A failing evaluation is an error, as without overlap.
    let err = overlapped
        .forward_with(&[u32::MAX], &mut || {})
        .unwrap_err();
    assert!(matches!(err, ModelError::BadToken { .. }), "{err}");
    Ok(())
}
