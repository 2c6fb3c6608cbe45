//! The runtime against a plain-Rust reference: the same tiny random weights evaluated by a
//! direct transcription of the Hugging Face definitions (RMS norm, rotary embedding by halves,
//! grouped-query causal attention, SwiGLU or GELU MLP, and Gemma 3's variations), one position
//! at a time in `f32`. The logits of the last position must agree.

mod support;

use std::collections::BTreeMap;

use anyhow::Result;
use generate::Model;
use runtime_mlx::{MlxConfig, MlxModel};
use serde_json::json;
use support::{Tiny, scratch};

const TOKENS: [u32; 9] = [3, 150, 7, 42, 255, 0, 19, 88, 5];

/// What the reference needs besides the tensors.
struct Spec {
    tiny: Tiny,
    gemma: bool,
    qk_norm: bool,
    qkv_bias: bool,
    eps: f32,
    /// Per layer: rotary base and sliding window.
    layers: Vec<(f32, Option<usize>)>,
    scale: f32,
    softcap: Option<f32>,
}

fn rms_norm(x: &[f32], w: &[f32], eps: f32, plus_one: bool) -> Vec<f32> {
    let mean = x.iter().map(|v| v * v).sum::<f32>() / x.len() as f32;
    let r = 1.0 / (mean + eps).sqrt();
    x.iter()
        .zip(w)
        .map(|(v, w)| v * r * if plus_one { 1.0 + w } else { *w })
        .collect()
}

/// `W x (+ b)` for `W` `[rows, cols]` row-major.
fn linear(w: &[f32], x: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
    let cols = x.len();
    w.chunks(cols)
        .enumerate()
        .map(|(i, row)| {
            row.iter().zip(x).map(|(a, b)| a * b).sum::<f32>() + bias.map_or(0.0, |b| b[i])
        })
        .collect()
}

/// The rotary embedding by halves (`rotate_half`), in place on one head.
fn rope(x: &mut [f32], pos: usize, base: f32) {
    let half = x.len() / 2;
    for i in 0..half {
        let inv_freq = base.powf(-2.0 * i as f32 / x.len() as f32);
        let (sin, cos) = (pos as f32 * inv_freq).sin_cos();
        let (a, b) = (x[i], x[i + half]);
        x[i] = a * cos - b * sin;
        x[i + half] = b * cos + a * sin;
    }
}

fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + ((2.0 / std::f32::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
}

fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// The logits after `tokens`.
fn reference(spec: &Spec, w: &BTreeMap<String, Vec<f32>>, tokens: &[u32]) -> Vec<f32> {
    let t = &spec.tiny;
    let (h, hd, heads, kvh) = (t.hidden, t.head_dim, t.heads, t.kv_heads);
    let g = |name: &str| -> &[f32] { &w[name] };
    // Per layer: keys and values of every position, [pos][kv_head * hd].
    let mut keys = vec![Vec::<Vec<f32>>::new(); t.layers];
    let mut values = vec![Vec::<Vec<f32>>::new(); t.layers];
    let mut last = Vec::new();
    for (pos, &tok) in tokens.iter().enumerate() {
        let emb = g("model.embed_tokens.weight");
        let mut x: Vec<f32> = emb[tok as usize * h..(tok as usize + 1) * h].to_vec();
        if spec.gemma {
            let s = (h as f32).sqrt();
            x.iter_mut().for_each(|v| *v *= s);
        }
        for (l, &(base, window)) in spec.layers.iter().enumerate() {
            let p = format!("model.layers.{l}");
            let n = |name: &str, x: &[f32]| {
                rms_norm(x, g(&format!("{p}.{name}.weight")), spec.eps, spec.gemma)
            };
            let xn = n("input_layernorm", &x);
            let proj = |name: &str| {
                let bias = spec
                    .qkv_bias
                    .then(|| g(&format!("{p}.self_attn.{name}.bias")));
                linear(g(&format!("{p}.self_attn.{name}.weight")), &xn, bias)
            };
            let (mut q, mut k, v) = (proj("q_proj"), proj("k_proj"), proj("v_proj"));
            for (vec, norm) in [(&mut q, "q_norm"), (&mut k, "k_norm")] {
                for head in vec.chunks_mut(hd) {
                    if spec.qk_norm {
                        let normed = n(&format!("self_attn.{norm}"), head);
                        head.copy_from_slice(&normed);
                    }
                    rope(head, pos, base);
                }
            }
            keys[l].push(k);
            values[l].push(v);
            let mut out = vec![0.0; heads * hd];
            for head in 0..heads {
                let kv = head / (heads / kvh);
                let qh = &q[head * hd..(head + 1) * hd];
                let visible: Vec<usize> = (0..=pos)
                    .filter(|&j| window.is_none_or(|win| pos - j < win))
                    .collect();
                let scores: Vec<f32> = visible
                    .iter()
                    .map(|&j| {
                        let kj = &keys[l][j][kv * hd..(kv + 1) * hd];
                        qh.iter().zip(kj).map(|(a, b)| a * b).sum::<f32>() * spec.scale
                    })
                    .collect();
                let max = scores.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s));
                let exp: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
                let total: f32 = exp.iter().sum();
                for (&j, e) in visible.iter().zip(&exp) {
                    let vj = &values[l][j][kv * hd..(kv + 1) * hd];
                    for d in 0..hd {
                        out[head * hd + d] += e / total * vj[d];
                    }
                }
            }
            let mut r = linear(g(&format!("{p}.self_attn.o_proj.weight")), &out, None);
            if spec.gemma {
                r = n("post_attention_layernorm", &r);
            }
            let hres: Vec<f32> = x.iter().zip(&r).map(|(a, b)| a + b).collect();
            let mlp_in = if spec.gemma {
                n("pre_feedforward_layernorm", &hres)
            } else {
                n("post_attention_layernorm", &hres)
            };
            let gate = linear(g(&format!("{p}.mlp.gate_proj.weight")), &mlp_in, None);
            let up = linear(g(&format!("{p}.mlp.up_proj.weight")), &mlp_in, None);
            let act: Vec<f32> = gate
                .iter()
                .zip(&up)
                .map(|(&a, &b)| if spec.gemma { gelu_tanh(a) } else { silu(a) } * b)
                .collect();
            let mut m = linear(g(&format!("{p}.mlp.down_proj.weight")), &act, None);
            if spec.gemma {
                m = n("post_feedforward_layernorm", &m);
            }
            x = hres.iter().zip(&m).map(|(a, b)| a + b).collect();
        }
        last = x;
    }
    let xn = rms_norm(&last, g("model.norm.weight"), spec.eps, spec.gemma);
    let head = w
        .get("lm_head.weight")
        .unwrap_or(&w["model.embed_tokens.weight"]);
    let mut logits = linear(head, &xn, None);
    if let Some(cap) = spec.softcap {
        logits.iter_mut().for_each(|v| *v = (*v / cap).tanh() * cap);
    }
    logits
}

fn compare(spec: Spec, name: &str) -> Result<()> {
    let dir = scratch(name)?;
    let weights = spec.tiny.write(&dir, 11)?;
    let mut model = MlxModel::load(&dir, MlxConfig::default().with_n_ctx(64))?;
    let got = model.forward(&TOKENS)?.to_vec();
    let want = reference(&spec, &weights, &TOKENS);
    let spread = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    let diff = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(
        diff < 1e-4 * spread.max(1.0),
        "{name}: max difference {diff} (largest logit {spread})"
    );
    Ok(())
}

fn plain(tiny: Tiny) -> Spec {
    let layers = vec![(10_000.0, None); tiny.layers];
    Spec {
        scale: 1.0 / (tiny.head_dim as f32).sqrt(),
        gemma: false,
        qk_norm: tiny.model_type == "qwen3",
        qkv_bias: tiny.model_type == "qwen2",
        eps: 1e-5,
        layers,
        softcap: None,
        tiny,
    }
}

#[test]
fn llama_matches_the_reference() -> Result<()> {
    compare(plain(Tiny::llama(256)), "ref-llama")
}

#[test]
fn qwen_variants_match_the_reference() -> Result<()> {
    for model_type in ["qwen2", "qwen3"] {
        let tiny = Tiny {
            model_type,
            lm_head: false,
            ..Tiny::llama(256)
        };
        compare(plain(tiny), &format!("ref-{model_type}"))?;
    }
    Ok(())
}

/// Three layers, the last global: windows of 3 positions at rotary base 10,000, then full
/// attention at 1,000,000; queries scaled by `query_pre_attn_scalar` 8 instead of the head
/// width 16.
#[test]
fn gemma3_matches_the_reference() -> Result<()> {
    let tiny = Tiny {
        model_type: "gemma3_text",
        layers: 3,
        lm_head: false,
        extra: json!({
            "sliding_window": 3, "sliding_window_pattern": 3, "query_pre_attn_scalar": 8,
            "rope_local_base_freq": 10000.0, "rope_theta": 1000000.0,
            "final_logit_softcapping": 2.0, "rms_norm_eps": 1e-6
        }),
        ..Tiny::llama(256)
    };
    let spec = Spec {
        gemma: true,
        qk_norm: true,
        qkv_bias: false,
        eps: 1e-6,
        layers: vec![
            (10_000.0, Some(3)),
            (10_000.0, Some(3)),
            (1_000_000.0, None),
        ],
        scale: 1.0 / 8f32.sqrt(),
        softcap: Some(2.0),
        tiny,
    };
    compare(spec, "ref-gemma3")
}
