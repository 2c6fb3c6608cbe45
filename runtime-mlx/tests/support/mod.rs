//! Tiny randomly initialised models written to safetensors by the tests themselves: the
//! Llama layout (and its Qwen and Gemma 3 variants), in `f16` or MLX-quantized form (packed
//! with MLX's own `quantize`, so the format is exactly what `mlx_lm.convert` writes).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use mlx_rs::Array;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use safetensors::Dtype;
use safetensors::tensor::TensorView;
use serde_json::{Value, json};

/// `STENCIL_ASSETS`, else the workspace's `assets/`.
pub fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    )
}

/// A fresh empty directory under the target's temporary folder.
pub fn scratch(name: &str) -> Result<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// The shape of a tiny model.
#[derive(Debug, Clone)]
pub struct Tiny {
    /// `model_type`.
    pub model_type: &'static str,
    pub vocab: usize,
    pub hidden: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    /// MLX quantization (group size, bits) of every linear layer and the embeddings.
    pub quantize: Option<(i32, i32)>,
    /// Write `lm_head.weight` (otherwise the embeddings are tied).
    pub lm_head: bool,
    /// Extra `config.json` fields.
    pub extra: Value,
    /// Split the weights over this many shards (with an index) when above 1.
    pub shards: usize,
}

impl Tiny {
    /// A Llama-style model with `vocab` embedding rows.
    pub fn llama(vocab: usize) -> Tiny {
        Tiny {
            model_type: "llama",
            vocab,
            hidden: 64,
            layers: 2,
            heads: 4,
            kv_heads: 2,
            head_dim: 16,
            ffn: 128,
            quantize: None,
            lm_head: true,
            extra: json!({}),
            shards: 1,
        }
    }

    fn gemma(&self) -> bool {
        self.model_type == "gemma3_text"
    }

    fn config(&self) -> Value {
        let mut c = json!({
            "model_type": self.model_type,
            "architectures": ["LlamaForCausalLM"],
            "hidden_size": self.hidden,
            "intermediate_size": self.ffn,
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "vocab_size": self.vocab,
            "rms_norm_eps": 1e-5,
            "rope_theta": 10000.0,
            "max_position_embeddings": 2048,
            "tie_word_embeddings": !self.lm_head,
            "torch_dtype": "float16",
        });
        if let Some((group_size, bits)) = self.quantize {
            c["quantization"] = json!({"group_size": group_size, "bits": bits});
        }
        if let (Some(c), Some(extra)) = (c.as_object_mut(), self.extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    }

    /// Every tensor: (name, shape, kind).
    fn tensors(&self) -> Vec<(String, Vec<usize>, Kind)> {
        let (h, f, hd) = (self.hidden, self.ffn, self.head_dim);
        let (q, kv) = (self.heads * hd, self.kv_heads * hd);
        let mut t = vec![(
            "model.embed_tokens.weight".to_owned(),
            vec![self.vocab, h],
            Kind::Linear,
        )];
        let qwen2 = self.model_type == "qwen2";
        let qk_norm = matches!(self.model_type, "qwen3" | "gemma3_text");
        for i in 0..self.layers {
            let p = format!("model.layers.{i}");
            for (name, shape) in [
                ("self_attn.q_proj", [q, h]),
                ("self_attn.k_proj", [kv, h]),
                ("self_attn.v_proj", [kv, h]),
                ("self_attn.o_proj", [h, q]),
                ("mlp.gate_proj", [f, h]),
                ("mlp.up_proj", [f, h]),
                ("mlp.down_proj", [h, f]),
            ] {
                t.push((format!("{p}.{name}.weight"), shape.to_vec(), Kind::Linear));
            }
            if qwen2 {
                for (name, n) in [("q_proj", q), ("k_proj", kv), ("v_proj", kv)] {
                    t.push((format!("{p}.self_attn.{name}.bias"), vec![n], Kind::Bias));
                }
            }
            if qk_norm {
                for name in ["q_norm", "k_norm"] {
                    t.push((format!("{p}.self_attn.{name}.weight"), vec![hd], Kind::Norm));
                }
            }
            let mut norms = vec!["input_layernorm", "post_attention_layernorm"];
            if self.gemma() {
                norms.extend(["pre_feedforward_layernorm", "post_feedforward_layernorm"]);
            }
            for name in norms {
                t.push((format!("{p}.{name}.weight"), vec![h], Kind::Norm));
            }
        }
        t.push(("model.norm.weight".to_owned(), vec![h], Kind::Norm));
        if self.lm_head {
            t.push((
                "lm_head.weight".to_owned(),
                vec![self.vocab, h],
                Kind::Linear,
            ));
        }
        t
    }

    /// Writes `config.json` and the weights into `dir`, initialised from `seed`. Returns the
    /// unquantized tensors as written (rounded to `f16`), by name.
    pub fn write(&self, dir: &Path, seed: u64) -> Result<BTreeMap<String, Vec<f32>>> {
        std::fs::write(
            dir.join("config.json"),
            serde_json::to_string_pretty(&self.config())?,
        )?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut out: Vec<(String, Tensor)> = Vec::new();
        let mut written = BTreeMap::new();
        for (name, shape, kind) in self.tensors() {
            let n: usize = shape.iter().product();
            let values: Vec<f32> = match kind {
                // Uniform in ±1/sqrt(fan_in): activations keep their scale through the layers.
                Kind::Linear => {
                    let a = 1.0 / (shape[1] as f32).sqrt();
                    (0..n).map(|_| a * uniform(&mut rng)).collect()
                }
                Kind::Bias => (0..n).map(|_| 0.1 * uniform(&mut rng)).collect(),
                // Gemma stores `w` of `1 + w`; the others the multiplier itself.
                Kind::Norm => {
                    let base = if self.gemma() { 0.0 } else { 1.0 };
                    (0..n).map(|_| base + 0.1 * uniform(&mut rng)).collect()
                }
            };
            match (kind, self.quantize) {
                (Kind::Linear, Some((group, bits))) => {
                    let stem = name.trim_end_matches(".weight");
                    let (w, scales, biases) = quantize(&values, &shape, group, bits)?;
                    out.push((format!("{stem}.weight"), w));
                    out.push((format!("{stem}.scales"), scales));
                    out.push((format!("{stem}.biases"), biases));
                }
                _ => {
                    let rounded = values
                        .iter()
                        .map(|&v| half::f16::from_f32(v).to_f32())
                        .collect();
                    written.insert(name.clone(), rounded);
                    out.push((name, Tensor::f16(&values, shape)));
                }
            }
        }
        write_shards(dir, out, self.shards)?;
        Ok(written)
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Linear,
    Bias,
    Norm,
}

fn uniform(rng: &mut ChaCha8Rng) -> f32 {
    // 24 random bits in [-1, 1).
    (rng.next_u32() >> 8) as f32 / (1u32 << 23) as f32 - 1.0
}

/// A tensor ready for safetensors.
pub struct Tensor {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

impl Tensor {
    fn f16(values: &[f32], shape: Vec<usize>) -> Tensor {
        let bytes = values
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect();
        Tensor {
            dtype: Dtype::F16,
            shape,
            bytes,
        }
    }
}

/// MLX's affine quantization of a `[rows, cols]` matrix: packed `uint32` weights, and `f16`
/// scales and biases per group (as mlx-lm saves them for an `f16` model).
fn quantize(
    values: &[f32],
    shape: &[usize],
    group: i32,
    bits: i32,
) -> Result<(Tensor, Tensor, Tensor)> {
    let dims: Vec<i32> = shape.iter().map(|&d| d as i32).collect();
    let w = Array::from_slice(values, &dims);
    let (packed, scales, biases) = mlx_rs::ops::quantize(&w, group, bits)?;
    let words = packed.try_as_slice::<u32>()?;
    ensure!(
        packed.shape() == [dims[0], dims[1] * bits / 32],
        "packed shape {:?}",
        packed.shape()
    );
    let packed = Tensor {
        dtype: Dtype::U32,
        shape: packed.shape().iter().map(|&d| d as usize).collect(),
        bytes: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
    };
    let floats = |a: &Array| -> Result<Tensor> {
        let a = a.as_dtype(mlx_rs::Dtype::Float32)?;
        let shape = a.shape().iter().map(|&d| d as usize).collect();
        Ok(Tensor::f16(a.try_as_slice::<f32>()?, shape))
    };
    Ok((packed, floats(&scales)?, floats(&biases)?))
}

/// Writes `tensors` as `model.safetensors`, or as `shards` files with an index.
fn write_shards(dir: &Path, tensors: Vec<(String, Tensor)>, shards: usize) -> Result<()> {
    fn views(part: &[(String, Tensor)]) -> Result<Vec<(String, TensorView<'_>)>> {
        part.iter()
            .map(|(name, t)| {
                let view = TensorView::new(t.dtype, t.shape.clone(), &t.bytes)?;
                Ok((name.clone(), view))
            })
            .collect()
    }
    if shards <= 1 {
        safetensors::serialize_to_file(views(&tensors)?, None, &dir.join("model.safetensors"))?;
        return Ok(());
    }
    let per = tensors.len().div_ceil(shards);
    let mut weight_map = BTreeMap::new();
    for (i, part) in tensors.chunks(per).enumerate() {
        let file = format!("model-{:05}-of-{shards:05}.safetensors", i + 1);
        for (name, _) in part {
            weight_map.insert(name.clone(), file.clone());
        }
        safetensors::serialize_to_file(views(part)?, None, &dir.join(&file))?;
    }
    std::fs::write(
        dir.join("model.safetensors.index.json"),
        serde_json::to_string_pretty(&json!({"metadata": {}, "weight_map": weight_map}))?,
    )?;
    Ok(())
}
