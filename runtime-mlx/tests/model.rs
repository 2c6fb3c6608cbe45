//! The runtime on tiny random models of every supported layout: logits do not depend on how
//! tokens are grouped into `forward` calls or on rollbacks (KV cache, rotary offsets,
//! sliding windows), quantized weights stay close to their `f16` originals, sharded weights
//! load like a single file, and bad input is an error, not a panic.

mod support;

use anyhow::Result;
use generate::{Model, ModelError};
use runtime_mlx::{Error, MlxConfig, MlxModel};
use serde_json::json;
use support::{Tiny, scratch};

const TOKENS: [u32; 11] = [1, 17, 200, 33, 4, 91, 250, 18, 7, 120, 64];

fn load(spec: &Tiny, name: &str, seed: u64) -> Result<MlxModel> {
    let dir = scratch(name)?;
    spec.write(&dir, seed)?;
    Ok(MlxModel::load(&dir, MlxConfig::default().with_n_ctx(64))?)
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// Logits after `TOKENS` evaluated whole, in uneven pieces, one by one, and again after
/// rolling back to a prefix: all the same up to float noise.
fn check_grouping(model: &mut MlxModel) -> Result<()> {
    let whole = model.forward(&TOKENS)?.to_vec();
    assert_eq!(model.n_past(), TOKENS.len());
    assert!(whole.iter().all(|v| v.is_finite()));
    let spread = whole.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(spread > 1e-3, "logits are all near zero: {spread}");
    let tol = 1e-4 * spread.max(1.0);

    model.reset()?;
    model.forward(&TOKENS[..3])?;
    model.forward(&TOKENS[3..4])?;
    let pieces = model.forward(&TOKENS[4..])?.to_vec();
    assert!(
        max_diff(&whole, &pieces) < tol,
        "{}",
        max_diff(&whole, &pieces)
    );

    model.reset()?;
    let mut single = Vec::new();
    for t in TOKENS {
        single = model.forward(&[t])?.to_vec();
    }
    assert!(
        max_diff(&whole, &single) < tol,
        "{}",
        max_diff(&whole, &single)
    );

    // Roll back over other tokens, then continue as before.
    model.truncate(5)?;
    model.forward(&[3, 3, 3, 3])?;
    model.truncate(5)?;
    assert_eq!(model.n_past(), 5);
    let again = model.forward(&TOKENS[5..])?.to_vec();
    assert!(
        max_diff(&whole, &again) < tol,
        "{}",
        max_diff(&whole, &again)
    );
    Ok(())
}

#[test]
fn llama_logits_do_not_depend_on_grouping_or_rollback() -> Result<()> {
    let mut model = load(&Tiny::llama(256), "llama-f16", 1)?;
    assert!(
        model.describe().starts_with("llama (2 layers"),
        "{}",
        model.describe()
    );
    check_grouping(&mut model)
}

#[test]
fn qwen_variants_load_and_decode() -> Result<()> {
    for model_type in ["qwen2", "qwen3"] {
        let spec = Tiny {
            model_type,
            lm_head: false,
            ..Tiny::llama(256)
        };
        let mut model = load(&spec, model_type, 2)?;
        check_grouping(&mut model)?;
    }
    Ok(())
}

/// Gemma 3 with a window of 4 positions on every other layer: the 11 tokens run past it, in a
/// prompt (explicit mask) and one at a time (sliced keys).
#[test]
fn gemma3_sliding_windows_agree_across_groupings() -> Result<()> {
    let spec = Tiny {
        model_type: "gemma3_text",
        lm_head: false,
        extra: json!({
            "sliding_window": 4, "sliding_window_pattern": 2, "query_pre_attn_scalar": 16,
            "rope_local_base_freq": 10000.0, "rope_theta": 1000000.0,
            "final_logit_softcapping": 30.0, "hidden_activation": "gelu_pytorch_tanh"
        }),
        ..Tiny::llama(256)
    };
    let mut model = load(&spec, "gemma3", 3)?;
    check_grouping(&mut model)?;
    // Soft-capping bounds every logit.
    let logits = model.forward(&[5])?;
    assert!(logits.iter().all(|v| v.abs() <= 30.0));

    // The window matters: with it covering everything the logits change.
    let wide = Tiny {
        extra: json!({"sliding_window": 64, "sliding_window_pattern": 2,
                      "query_pre_attn_scalar": 16, "final_logit_softcapping": 30.0}),
        ..spec
    };
    let mut wide = load(&wide, "gemma3-wide", 3)?;
    model.reset()?;
    let narrow = model.forward(&TOKENS)?.to_vec();
    let full = wide.forward(&TOKENS)?.to_vec();
    assert!(max_diff(&narrow, &full) > 1e-3);
    Ok(())
}

#[test]
fn quantized_weights_stay_close_to_f16() -> Result<()> {
    let mut f16 = load(&Tiny::llama(256), "cmp-f16", 4)?;
    let a = f16.forward(&TOKENS)?.to_vec();
    let spread = a.iter().fold(0f32, |m, v| m.max(v.abs()));
    for (bits, tol) in [(8, 0.02), (4, 0.3)] {
        let spec = Tiny {
            quantize: Some((64, bits)),
            ..Tiny::llama(256)
        };
        let mut q = load(&spec, &format!("cmp-q{bits}"), 4)?;
        assert!(q.describe().contains(&format!("{bits}-bit (group 64)")));
        let b = q.forward(&TOKENS)?.to_vec();
        let diff = max_diff(&a, &b);
        assert!(
            diff < tol * spread,
            "{bits} bits: {diff} vs spread {spread}"
        );
        eprintln!("{bits} bits: max logit difference {diff}, largest logit {spread}");
        q.reset()?;
        check_grouping(&mut q)?;
    }
    Ok(())
}

#[test]
fn sharded_weights_load_like_one_file() -> Result<()> {
    let mut one = load(&Tiny::llama(256), "one-file", 5)?;
    let spec = Tiny {
        shards: 3,
        ..Tiny::llama(256)
    };
    let mut sharded = load(&spec, "sharded", 5)?;
    assert!(sharded.dir().join("model.safetensors.index.json").is_file());
    let (a, b) = (
        one.forward(&TOKENS)?.to_vec(),
        sharded.forward(&TOKENS)?.to_vec(),
    );
    assert_eq!(a, b);
    Ok(())
}

#[test]
fn bad_calls_are_errors_and_leave_the_cache_alone() -> Result<()> {
    let mut model = load(&Tiny::llama(256), "bad-calls", 6)?;
    assert_eq!(model.vocab_size(), 256);
    assert_eq!(model.context_size(), 64);
    model.forward(&TOKENS)?;
    assert!(matches!(model.forward(&[]), Err(ModelError::Runtime(_))));
    assert!(matches!(
        model.forward(&[256]),
        Err(ModelError::BadToken {
            id: 256,
            vocab_size: 256
        })
    ));
    assert!(matches!(
        model.forward(&[1; 60]),
        Err(ModelError::ContextOverflow {
            needed: 71,
            capacity: 64
        })
    ));
    assert_eq!(model.n_past(), TOKENS.len());
    model.truncate(100)?;
    assert_eq!(model.n_past(), TOKENS.len());
    // The context fills up exactly.
    model.forward(&[2; 53])?;
    assert_eq!(model.n_past(), 64);
    Ok(())
}

#[test]
fn loader_errors_name_what_is_wrong() -> Result<()> {
    let dir = scratch("loader-errors")?;
    let err = MlxModel::load(&dir, MlxConfig::default()).unwrap_err();
    assert!(
        matches!(&err, Error::MissingFile { path } if path.ends_with("config.json")),
        "{err}"
    );

    Tiny::llama(256).write(&dir, 7)?;
    let config = dir.join("config.json");
    let original = std::fs::read_to_string(&config)?;
    let mut value: serde_json::Value = serde_json::from_str(&original)?;
    value["model_type"] = json!("mamba");
    std::fs::write(&config, value.to_string())?;
    let err = MlxModel::load(&dir, MlxConfig::default()).unwrap_err();
    assert!(matches!(err, Error::UnsupportedArch { .. }), "{err}");
    assert!(err.to_string().contains("`mamba`"), "{err}");

    std::fs::write(&config, "{not json")?;
    let err = MlxModel::load(&dir, MlxConfig::default()).unwrap_err();
    assert!(matches!(err, Error::Json { .. }), "{err}");

    // More layers than the weights hold.
    value["model_type"] = json!("llama");
    value["num_hidden_layers"] = json!(3);
    std::fs::write(&config, value.to_string())?;
    let err = MlxModel::load(&dir, MlxConfig::default()).unwrap_err();
    assert!(
        matches!(&err, Error::MissingTensor { name } if name.starts_with("model.layers.2.")),
        "{err}"
    );

    // A hidden size the weights do not have.
    value["num_hidden_layers"] = json!(2);
    value["hidden_size"] = json!(128);
    value["head_dim"] = json!(32);
    std::fs::write(&config, value.to_string())?;
    let err = MlxModel::load(&dir, MlxConfig::default()).unwrap_err();
    assert!(matches!(err, Error::BadTensor { .. }), "{err}");
    let load = err.into_load_error("tiny");
    assert!(matches!(load, ModelError::Load { .. }), "{load}");

    std::fs::write(&config, &original)?;
    let err = MlxModel::load(&dir, MlxConfig::default().with_n_ctx(0)).unwrap_err();
    assert!(matches!(err, Error::Setting(_)), "{err}");
    std::fs::remove_file(dir.join("model.safetensors"))?;
    let err = MlxModel::load(&dir, MlxConfig::default()).unwrap_err();
    assert!(matches!(err, Error::MissingFile { .. }), "{err}");
    Ok(())
}
