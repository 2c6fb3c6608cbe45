//! What a model directory's `config.json` says, and the settings of a load ([`MlxConfig`]).
//!
//! [`ModelConfig::parse`] reads the Hugging Face configuration of the supported families into
//! one flat description ([`ModelConfig`]): the architecture ([`Arch`]), the sizes, the rotary
//! embedding, Gemma 3's sliding-window layers and soft-capping, and MLX quantization
//! (`quantization: {group_size, bits}`, with per-module overrides).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::error::Error;

/// The architecture families this runtime implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Arch {
    /// Llama 2/3 and Mistral (`llama`, `mistral`): pre-norm decoder, SwiGLU, optional
    /// attention bias (`attention_bias`).
    Llama,
    /// Qwen2 (`qwen2`): the Llama layout with biases on the query, key and value projections.
    Qwen2,
    /// Qwen3 (`qwen3`): the Llama layout with RMS norms on queries and keys.
    Qwen3,
    /// Gemma 3 text models (`gemma3_text`): scaled embeddings, `(1 + w)` RMS norms around
    /// both blocks, query/key norms, sliding-window layers, GELU (tanh) MLP, tied embeddings.
    Gemma3,
}

impl Arch {
    /// The `model_type` values of `config.json` that map to an architecture.
    pub const MODEL_TYPES: &'static [(&'static str, Arch)] = &[
        ("llama", Arch::Llama),
        ("mistral", Arch::Llama),
        ("qwen2", Arch::Qwen2),
        ("qwen3", Arch::Qwen3),
        ("gemma3_text", Arch::Gemma3),
    ];

    /// The architecture for a `model_type`, if supported.
    pub fn from_model_type(model_type: &str) -> Option<Arch> {
        Self::MODEL_TYPES
            .iter()
            .find(|(name, _)| *name == model_type)
            .map(|&(_, arch)| arch)
    }
}

/// How positions are scaled before the rotary embedding.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RopeScaling {
    /// Positions divided by `factor` (`rope_type: linear`).
    Linear {
        /// The divisor.
        factor: f32,
    },
    /// Llama 3.1's frequency-dependent scaling (`rope_type: llama3`).
    Llama3 {
        /// Scale of the low frequencies.
        factor: f32,
        /// Wavelength bound (as a fraction of the original context) below which frequencies
        /// are scaled fully.
        low_freq_factor: f32,
        /// Wavelength bound above which frequencies are kept.
        high_freq_factor: f32,
        /// The context length the model was first trained with.
        original_max_position_embeddings: f32,
    },
}

/// MLX affine quantization of a module's weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quantization {
    /// Elements sharing one scale and bias.
    pub group_size: i32,
    /// Bits per element (2, 3, 4, 5, 6 or 8).
    pub bits: i32,
}

/// The model description this runtime needs, from `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// The architecture.
    pub arch: Arch,
    /// `model_type` as written.
    pub model_type: String,
    /// Width of the residual stream.
    pub hidden_size: usize,
    /// Width of the MLP.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_layers: usize,
    /// Query heads.
    pub num_heads: usize,
    /// Key/value heads (grouped-query attention when fewer than `num_heads`).
    pub num_kv_heads: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Embedding rows (the logits' length).
    pub vocab_size: usize,
    /// Epsilon of every RMS norm.
    pub rms_norm_eps: f32,
    /// Rotary base of full-attention layers.
    pub rope_theta: f32,
    /// Rotary base of sliding-window layers (Gemma 3's `rope_local_base_freq`).
    pub rope_local_theta: f32,
    /// Position scaling of full-attention layers.
    pub rope_scaling: Option<RopeScaling>,
    /// Rotary embedding with interleaved pairs (`rope_traditional`, MLX conversions of some
    /// older models) instead of halves.
    pub rope_traditional: bool,
    /// The training context, if stated.
    pub max_position_embeddings: Option<usize>,
    /// Whether the output projection is the embedding matrix.
    pub tie_word_embeddings: bool,
    /// Biases on the query, key and value projections (and on the output projection for
    /// Llama's `attention_bias`).
    pub attention_bias: bool,
    /// Scale of attention scores (`1/sqrt(head_dim)`, or Gemma 3's
    /// `query_pre_attn_scalar^-1/2`).
    pub attention_scale: f32,
    /// Per layer: the sliding window it attends within, `None` for full attention.
    pub sliding_window: Vec<Option<usize>>,
    /// Gemma's final logit soft-capping: `tanh(logits / cap) * cap`.
    pub final_logit_softcapping: Option<f32>,
    /// Default quantization of linear layers and embeddings; `None` for unquantized weights.
    pub quantization: Option<Quantization>,
    /// Per-module quantization that differs from the default (`false` for unquantized
    /// modules), keyed by module path (`model.embed_tokens`).
    pub quantization_overrides: BTreeMap<String, Option<Quantization>>,
}

/// The raw JSON, with every field that any family uses.
#[derive(Deserialize)]
struct Raw {
    model_type: Option<String>,
    hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    num_hidden_layers: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    vocab_size: Option<usize>,
    rms_norm_eps: Option<f32>,
    rope_theta: Option<f32>,
    rope_local_base_freq: Option<f32>,
    rope_scaling: Option<Value>,
    #[serde(default)]
    rope_traditional: bool,
    max_position_embeddings: Option<usize>,
    tie_word_embeddings: Option<bool>,
    attention_bias: Option<bool>,
    query_pre_attn_scalar: Option<f32>,
    sliding_window: Option<usize>,
    sliding_window_pattern: Option<usize>,
    layer_types: Option<Vec<String>>,
    final_logit_softcapping: Option<f32>,
    hidden_activation: Option<String>,
    hidden_act: Option<String>,
    quantization: Option<Value>,
    quantization_config: Option<Value>,
}

impl ModelConfig {
    /// Parses `config.json`'s text. `path` only names the file in errors.
    pub fn parse(text: &str, path: &str) -> Result<ModelConfig, Error> {
        let raw: Raw = serde_json::from_str(text).map_err(|e| Error::Json {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let model_type = raw.model_type.clone().ok_or_else(|| Error::Config {
            field: "model_type",
            reason: "missing".into(),
        })?;
        let arch = Arch::from_model_type(&model_type).ok_or_else(|| Error::UnsupportedArch {
            model_type: model_type.clone(),
        })?;
        let need = |v: Option<usize>, field: &'static str| -> Result<usize, Error> {
            match v {
                Some(0) => Err(Error::Config {
                    field,
                    reason: "must be positive".into(),
                }),
                Some(v) => Ok(v),
                None => Err(Error::Config {
                    field,
                    reason: "missing".into(),
                }),
            }
        };
        let hidden_size = need(raw.hidden_size, "hidden_size")?;
        let num_heads = need(raw.num_attention_heads, "num_attention_heads")?;
        let num_kv_heads = need(
            raw.num_key_value_heads.or(Some(num_heads)),
            "num_key_value_heads",
        )?;
        if num_heads % num_kv_heads != 0 {
            return Err(Error::Config {
                field: "num_key_value_heads",
                reason: format!("{num_kv_heads} does not divide num_attention_heads {num_heads}"),
            });
        }
        let head_dim = match raw.head_dim {
            Some(d) => need(Some(d), "head_dim")?,
            None if hidden_size % num_heads == 0 => hidden_size / num_heads,
            None => {
                return Err(Error::Config {
                    field: "head_dim",
                    reason: format!(
                        "missing, and num_attention_heads {num_heads} does not divide \
                         hidden_size {hidden_size}"
                    ),
                });
            }
        };
        if head_dim % 2 != 0 {
            return Err(Error::Config {
                field: "head_dim",
                reason: format!("{head_dim} is odd; the rotary embedding needs pairs"),
            });
        }
        let num_layers = need(raw.num_hidden_layers, "num_hidden_layers")?;
        let gemma = arch == Arch::Gemma3;
        if gemma {
            let act = raw
                .hidden_activation
                .as_deref()
                .or(raw.hidden_act.as_deref())
                .unwrap_or("gelu_pytorch_tanh");
            if act != "gelu_pytorch_tanh" {
                return Err(Error::Config {
                    field: "hidden_activation",
                    reason: format!("`{act}` is not supported (only gelu_pytorch_tanh)"),
                });
            }
        } else if let Some(act) = raw.hidden_act.as_deref().filter(|a| *a != "silu") {
            return Err(Error::Config {
                field: "hidden_act",
                reason: format!("`{act}` is not supported (only silu)"),
            });
        }
        let sliding_window = if gemma {
            sliding_layers(&raw, num_layers)?
        } else {
            // Mistral's `sliding_window` covers its whole training context in the released
            // models; like mlx-lm, the Llama family attends to everything.
            vec![None; num_layers]
        };
        let attention_scale = match raw.query_pre_attn_scalar.filter(|_| gemma) {
            Some(s) if s > 0.0 => s.powf(-0.5),
            Some(s) => {
                return Err(Error::Config {
                    field: "query_pre_attn_scalar",
                    reason: format!("{s} is not positive"),
                });
            }
            None => (head_dim as f32).powf(-0.5),
        };
        let rope_theta = raw
            .rope_theta
            .unwrap_or(if gemma { 1_000_000.0 } else { 10_000.0 });
        let (quantization, quantization_overrides) = parse_quantization(
            raw.quantization
                .as_ref()
                .or(raw.quantization_config.as_ref()),
        )?;
        Ok(ModelConfig {
            arch,
            model_type,
            hidden_size,
            intermediate_size: need(raw.intermediate_size, "intermediate_size")?,
            num_layers,
            num_heads,
            num_kv_heads,
            head_dim,
            vocab_size: need(raw.vocab_size, "vocab_size")?,
            rms_norm_eps: raw.rms_norm_eps.unwrap_or(if gemma { 1e-6 } else { 1e-5 }),
            rope_theta,
            rope_local_theta: raw.rope_local_base_freq.unwrap_or(10_000.0),
            rope_scaling: parse_rope_scaling(raw.rope_scaling.as_ref())?,
            rope_traditional: raw.rope_traditional,
            max_position_embeddings: raw.max_position_embeddings,
            tie_word_embeddings: raw.tie_word_embeddings.unwrap_or(gemma),
            attention_bias: arch == Arch::Qwen2 || raw.attention_bias.unwrap_or(false),
            attention_scale,
            sliding_window,
            final_logit_softcapping: raw.final_logit_softcapping.filter(|c| gemma && *c > 0.0),
            quantization,
            quantization_overrides,
        })
    }

    /// The quantization of the module at `path` (`model.layers.0.self_attn.q_proj`).
    pub fn quantization_of(&self, path: &str) -> Option<Quantization> {
        match self.quantization_overrides.get(path) {
            Some(q) => *q,
            None => self.quantization,
        }
    }
}

/// Gemma 3's per-layer windows: `layer_types` when given, else every
/// `sliding_window_pattern`-th layer is global and the others slide.
fn sliding_layers(raw: &Raw, num_layers: usize) -> Result<Vec<Option<usize>>, Error> {
    let window = raw.sliding_window.unwrap_or(512);
    if window == 0 {
        return Err(Error::Config {
            field: "sliding_window",
            reason: "must be positive".into(),
        });
    }
    if let Some(types) = &raw.layer_types {
        if types.len() != num_layers {
            return Err(Error::Config {
                field: "layer_types",
                reason: format!("{} entries for {num_layers} layers", types.len()),
            });
        }
        return types
            .iter()
            .map(|t| match t.as_str() {
                "sliding_attention" => Ok(Some(window)),
                "full_attention" => Ok(None),
                other => Err(Error::Config {
                    field: "layer_types",
                    reason: format!("unknown layer type `{other}`"),
                }),
            })
            .collect();
    }
    let pattern = raw.sliding_window_pattern.unwrap_or(6);
    if pattern == 0 {
        return Err(Error::Config {
            field: "sliding_window_pattern",
            reason: "must be positive".into(),
        });
    }
    Ok((0..num_layers)
        .map(|i| ((i + 1) % pattern != 0).then_some(window))
        .collect())
}

fn parse_rope_scaling(value: Option<&Value>) -> Result<Option<RopeScaling>, Error> {
    let Some(obj) = value.and_then(Value::as_object) else {
        return Ok(None);
    };
    let kind = obj
        .get("rope_type")
        .or_else(|| obj.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("default");
    let num = |key: &str| -> Result<f32, Error> {
        obj.get(key)
            .and_then(Value::as_f64)
            .map(|v| v as f32)
            .filter(|v| v.is_finite() && *v > 0.0)
            .ok_or_else(|| Error::Config {
                field: "rope_scaling",
                reason: format!("`{kind}` needs a positive `{key}`"),
            })
    };
    match kind {
        "default" => Ok(None),
        "linear" => Ok(Some(RopeScaling::Linear {
            factor: num("factor")?,
        })),
        "llama3" => Ok(Some(RopeScaling::Llama3 {
            factor: num("factor")?,
            low_freq_factor: num("low_freq_factor")?,
            high_freq_factor: num("high_freq_factor")?,
            original_max_position_embeddings: num("original_max_position_embeddings")?,
        })),
        other => Err(Error::Config {
            field: "rope_scaling",
            reason: format!("rope type `{other}` is not supported (default, linear, llama3)"),
        }),
    }
}

type Quant = (Option<Quantization>, BTreeMap<String, Option<Quantization>>);

/// MLX's `quantization` object: `group_size` and `bits`, and per-module entries that are
/// either such an object or `false`.
fn parse_quantization(value: Option<&Value>) -> Result<Quant, Error> {
    let Some(obj) = value.and_then(Value::as_object) else {
        return Ok((None, BTreeMap::new()));
    };
    let default = quantization_params(obj, "quantization")?;
    let mut overrides = BTreeMap::new();
    for (key, v) in obj {
        match v {
            Value::Object(o) => {
                overrides.insert(key.clone(), Some(quantization_params(o, key)?));
            }
            Value::Bool(false) => {
                overrides.insert(key.clone(), None);
            }
            _ => {}
        }
    }
    Ok((Some(default), overrides))
}

fn quantization_params(
    obj: &serde_json::Map<String, Value>,
    what: &str,
) -> Result<Quantization, Error> {
    if let Some(mode) = obj.get("mode").and_then(Value::as_str)
        && mode != "affine"
    {
        return Err(Error::Config {
            field: "quantization",
            reason: format!("{what}: mode `{mode}` is not supported (only affine)"),
        });
    }
    let int = |key: &str| -> Result<i32, Error> {
        obj.get(key)
            .and_then(Value::as_i64)
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| Error::Config {
                field: "quantization",
                reason: format!("{what}: `{key}` missing or not an integer"),
            })
    };
    let q = Quantization {
        group_size: int("group_size")?,
        bits: int("bits")?,
    };
    if ![32, 64, 128].contains(&q.group_size) || ![2, 3, 4, 5, 6, 8].contains(&q.bits) {
        return Err(Error::Config {
            field: "quantization",
            reason: format!(
                "{what}: group size {} with {} bits is not one MLX supports",
                q.group_size, q.bits
            ),
        });
    }
    Ok(q)
}

/// Settings of [`crate::MlxModel::load`].
#[derive(Debug, Clone, PartialEq)]
pub struct MlxConfig {
    /// Context size: positions the KV cache may hold. Default 4096, capped at the model's
    /// `max_position_embeddings`.
    pub n_ctx: usize,
    /// The floating-point type activations, the KV cache and unquantized weights are kept in.
    /// Default [`ComputeType::F32`], the fast and exact choice on CPUs.
    pub compute: ComputeType,
}

impl Default for MlxConfig {
    fn default() -> Self {
        Self {
            n_ctx: 4096,
            compute: ComputeType::F32,
        }
    }
}

impl MlxConfig {
    /// With the context size `n_ctx`.
    pub fn with_n_ctx(mut self, n_ctx: usize) -> Self {
        self.n_ctx = n_ctx;
        self
    }

    /// With the compute type `compute`.
    pub fn with_compute(mut self, compute: ComputeType) -> Self {
        self.compute = compute;
        self
    }
}

/// The floating-point type of the computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeType {
    /// 32-bit floats.
    F32,
    /// IEEE half precision.
    F16,
    /// bfloat16.
    Bf16,
}

impl ComputeType {
    pub(crate) fn dtype(self) -> mlx_rs::Dtype {
        match self {
            ComputeType::F32 => mlx_rs::Dtype::Float32,
            ComputeType::F16 => mlx_rs::Dtype::Float16,
            ComputeType::Bf16 => mlx_rs::Dtype::Bfloat16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<ModelConfig, Error> {
        ModelConfig::parse(&v.to_string(), "config.json")
    }

    fn llama() -> Value {
        json!({
            "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 100, "rms_norm_eps": 1e-5
        })
    }

    #[test]
    fn llama_defaults() {
        let c = parse(llama()).unwrap();
        assert_eq!(c.arch, Arch::Llama);
        assert_eq!(c.head_dim, 16);
        assert_eq!(c.rope_theta, 10_000.0);
        assert!(!c.tie_word_embeddings && !c.attention_bias);
        assert_eq!(c.attention_scale, 0.25);
        assert_eq!(c.sliding_window, [None, None]);
        assert_eq!(c.quantization, None);
    }

    #[test]
    fn unknown_architecture_and_missing_fields_are_named() {
        let mut v = llama();
        v["model_type"] = json!("mamba");
        let err = parse(v).unwrap_err();
        assert!(
            matches!(&err, Error::UnsupportedArch { model_type } if model_type == "mamba"),
            "{err}"
        );
        assert!(err.to_string().contains("gemma3_text"), "{err}");
        let mut v = llama();
        v.as_object_mut().unwrap().remove("hidden_size");
        let err = parse(v).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Config {
                    field: "hidden_size",
                    ..
                }
            ),
            "{err}"
        );
        let mut v = llama();
        v["num_key_value_heads"] = json!(3);
        assert!(parse(v).is_err());
        assert!(matches!(
            ModelConfig::parse("{", "c.json"),
            Err(Error::Json { .. })
        ));
    }

    #[test]
    fn gemma3_layers_alternate_and_scale_queries() {
        let c = parse(json!({
            "model_type": "gemma3_text", "hidden_size": 640, "intermediate_size": 2048,
            "num_hidden_layers": 7, "num_attention_heads": 4, "num_key_value_heads": 1,
            "head_dim": 256, "vocab_size": 262144, "query_pre_attn_scalar": 256,
            "sliding_window": 512, "sliding_window_pattern": 6, "rope_theta": 1000000.0,
            "rope_local_base_freq": 10000.0, "final_logit_softcapping": null
        }))
        .unwrap();
        assert_eq!(c.arch, Arch::Gemma3);
        assert!(c.tie_word_embeddings);
        assert_eq!(c.attention_scale, 1.0 / 16.0);
        let w = Some(512);
        assert_eq!(c.sliding_window, [w, w, w, w, w, None, w]);
        assert_eq!(c.final_logit_softcapping, None);
        assert_eq!(c.rms_norm_eps, 1e-6);
    }

    #[test]
    fn layer_types_win_over_the_pattern() {
        let mut v = llama();
        v["model_type"] = json!("gemma3_text");
        v["sliding_window"] = json!(4);
        v["layer_types"] = json!(["full_attention", "sliding_attention"]);
        assert_eq!(parse(v.clone()).unwrap().sliding_window, [None, Some(4)]);
        v["layer_types"] = json!(["full_attention"]);
        assert!(parse(v).is_err());
    }

    #[test]
    fn quantization_with_overrides() {
        let mut v = llama();
        v["quantization"] = json!({
            "group_size": 64, "bits": 4,
            "model.embed_tokens": {"group_size": 32, "bits": 8},
            "lm_head": false
        });
        let c = parse(v.clone()).unwrap();
        let q4 = Quantization {
            group_size: 64,
            bits: 4,
        };
        assert_eq!(c.quantization_of("model.layers.0.mlp.up_proj"), Some(q4));
        assert_eq!(
            c.quantization_of("model.embed_tokens"),
            Some(Quantization {
                group_size: 32,
                bits: 8
            })
        );
        assert_eq!(c.quantization_of("lm_head"), None);
        v["quantization"] = json!({"group_size": 64, "bits": 7});
        assert!(parse(v).is_err());
    }

    #[test]
    fn rope_scaling_kinds() {
        let mut v = llama();
        v["rope_scaling"] = json!({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
            "high_freq_factor": 4.0, "original_max_position_embeddings": 8192});
        assert!(matches!(
            parse(v.clone()).unwrap().rope_scaling,
            Some(RopeScaling::Llama3 { .. })
        ));
        v["rope_scaling"] = json!({"type": "linear", "factor": 2.0});
        assert_eq!(
            parse(v.clone()).unwrap().rope_scaling,
            Some(RopeScaling::Linear { factor: 2.0 })
        );
        v["rope_scaling"] = json!({"rope_type": "yarn", "factor": 2.0});
        assert!(parse(v).is_err());
    }
}
