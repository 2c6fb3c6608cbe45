//! Gemma 3 as llama.cpp stores it (GGUF architecture `gemma3`) and as Hugging Face and MLX
//! expect it (`model_type: gemma3_text`, `Gemma3ForCausalLM`): tensor names, the shape each
//! tensor must have, which weights carry llama.cpp's norm shift, and `config.json`.
//!
//! What llama.cpp's `convert_hf_to_gguf.py` does to a Gemma 3 checkpoint, and what is undone here:
//! - Gemma's RMSNorm scales by `1 + w`. The converter stores `w + 1` for every tensor whose
//!   Hugging Face name ends in `norm.weight` (`Gemma3Model.modify_tensors` with
//!   `norm_shift = 1.0`), so that llama.cpp multiplies by the stored weight as it is. That is the
//!   four norms of each layer, the per-head `self_attn.{q,k}_norm` and the final `model.norm`;
//!   [`is_shifted_norm`] picks the same set and the conversion subtracts 1 from it.
//! - Q and K are stored unpermuted. Only the Llama family's converter reorders their rows, for
//!   llama.cpp's "normal" RoPE on adjacent pairs; llama.cpp runs Gemma 3 with the NeoX RoPE
//!   (pairs half a head apart), which is Hugging Face's `rotate_half`, so no reordering is needed.
//! - The embedding scale `sqrt(hidden_size)` is applied at run time on both sides, never folded
//!   into the weights.
//! - GGUF lists dimensions innermost first; the reader reverses them, so shapes come out
//!   row-major as PyTorch's `[out, in]`. [`Gemma3Config::tensor_shapes`] gives every tensor's
//!   expected shape and the conversion refuses anything else.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context, Result, bail};
use candle_core::quantized::gguf_file::Value;
use serde_json::json;

/// The GGUF architecture this module understands (`general.architecture`).
pub const ARCHITECTURE: &str = "gemma3";

/// Tensors outside the layers: (GGUF name, Hugging Face name), both without `.weight`.
/// `output` (an untied output projection) is absent from Gemma 3 checkpoints, which tie it to
/// the embedding, but is mapped should a GGUF carry one.
const GLOBAL_TENSORS: [(&str, &str); 3] = [
    ("token_embd", "model.embed_tokens"),
    ("output_norm", "model.norm"),
    ("output", "lm_head"),
];

/// Each layer's tensors: (GGUF name after `blk.N.`, Hugging Face name after `model.layers.N.`),
/// both without `.weight`, in the order of a layer's forward pass.
pub const LAYER_TENSORS: [(&str, &str); 13] = [
    ("attn_norm", "input_layernorm"),
    ("attn_q", "self_attn.q_proj"),
    ("attn_k", "self_attn.k_proj"),
    ("attn_v", "self_attn.v_proj"),
    ("attn_q_norm", "self_attn.q_norm"),
    ("attn_k_norm", "self_attn.k_norm"),
    ("attn_output", "self_attn.o_proj"),
    ("post_attention_norm", "post_attention_layernorm"),
    ("ffn_norm", "pre_feedforward_layernorm"),
    ("ffn_gate", "mlp.gate_proj"),
    ("ffn_up", "mlp.up_proj"),
    ("ffn_down", "mlp.down_proj"),
    ("post_ffw_norm", "post_feedforward_layernorm"),
];

/// The Hugging Face name of a `gemma3` GGUF tensor, or `None` for a name this mapping does not
/// know (the conversion then stops rather than drop a tensor).
pub fn hf_name(gguf: &str) -> Option<String> {
    let stem = gguf.strip_suffix(".weight")?;
    if let Some(&(_, hf)) = GLOBAL_TENSORS.iter().find(|(g, _)| *g == stem) {
        return Some(format!("{hf}.weight"));
    }
    let (layer, rest) = stem.strip_prefix("blk.")?.split_once('.')?;
    if layer.is_empty() || !layer.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let layer: usize = layer.parse().ok()?;
    let &(_, hf) = LAYER_TENSORS.iter().find(|(g, _)| *g == rest)?;
    Some(format!("model.layers.{layer}.{hf}.weight"))
}

/// Whether llama.cpp stored this tensor (by its Hugging Face name) as `w + 1`: the same test
/// its converter applies, every name ending in `norm.weight`.
pub fn is_shifted_norm(hf_name: &str) -> bool {
    hf_name.ends_with("norm.weight")
}

/// Values Gemma 3 has that GGUF does not record. llama.cpp hard-codes the same ones for the
/// `gemma3` architecture; they are also those of Gemma 3 270M's published `config.json`.
mod fixed {
    /// Every sixth layer attends globally, the others within the sliding window.
    pub const SLIDING_WINDOW_PATTERN: usize = 6;
    /// RoPE base of the sliding-window layers (GGUF's `rope.freq_base` is the global layers').
    pub const ROPE_LOCAL_BASE_FREQ: f64 = 10_000.0;
    /// The feed-forward activation (GELU, tanh approximation).
    pub const HIDDEN_ACTIVATION: &str = "gelu_pytorch_tanh";
}

/// What `config.json` says, read from GGUF metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Gemma3Config {
    /// Rows of the embedding (`tokenizer.ggml.tokens` in GGUF).
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    pub rms_norm_eps: f64,
    /// RoPE base of the global layers.
    pub rope_theta: f64,
    /// Linear RoPE scaling factor of the global layers (the larger Gemma 3 models have one).
    pub rope_scaling_factor: Option<f64>,
    pub sliding_window: usize,
    pub max_position_embeddings: usize,
    pub final_logit_softcapping: Option<f64>,
    pub bos_token_id: Option<u64>,
    pub eos_token_id: Option<u64>,
    pub pad_token_id: Option<u64>,
    /// No separate output projection: the logits use the embedding.
    pub tie_word_embeddings: bool,
}

impl Gemma3Config {
    /// Reads the `gemma3.*` and `tokenizer.ggml.*` keys. `tied` says whether the GGUF lacks
    /// an `output.weight` tensor.
    pub fn from_metadata(meta: &HashMap<String, Value>, tied: bool) -> Result<Self> {
        let arch = string(meta, "general.architecture")?;
        if arch != ARCHITECTURE {
            bail!("architecture `{arch}` is not supported (only `{ARCHITECTURE}`)");
        }
        let key = |k: &str| format!("{ARCHITECTURE}.{k}");
        let head_dim = uint(meta, &key("attention.key_length"))?;
        let value_length = uint(meta, &key("attention.value_length"))?;
        if value_length != head_dim {
            bail!("key length {head_dim} and value length {value_length} differ");
        }
        let vocab_size = match meta.get("tokenizer.ggml.tokens") {
            Some(Value::Array(tokens)) => tokens.len(),
            Some(_) => bail!("metadata `tokenizer.ggml.tokens` is not an array"),
            None => bail!("metadata has no `tokenizer.ggml.tokens`"),
        };
        let rope_scaling_factor = match meta.get(&key("rope.scaling.type")) {
            None => None,
            Some(Value::String(t)) if t == "none" => None,
            Some(Value::String(t)) if t == "linear" => {
                Some(float(meta, &key("rope.scaling.factor"))?)
            }
            Some(other) => bail!("RoPE scaling {other:?} is not supported (only linear)"),
        };
        let config = Self {
            vocab_size,
            hidden_size: uint(meta, &key("embedding_length"))?,
            intermediate_size: uint(meta, &key("feed_forward_length"))?,
            num_hidden_layers: uint(meta, &key("block_count"))?,
            num_attention_heads: uint(meta, &key("attention.head_count"))?,
            num_key_value_heads: uint(meta, &key("attention.head_count_kv"))?,
            head_dim,
            rms_norm_eps: float(meta, &key("attention.layer_norm_rms_epsilon"))?,
            rope_theta: float(meta, &key("rope.freq_base"))?,
            rope_scaling_factor,
            sliding_window: uint(meta, &key("attention.sliding_window"))?,
            max_position_embeddings: uint(meta, &key("context_length"))?,
            final_logit_softcapping: optional(meta, &key("final_logit_softcapping"), float)?,
            bos_token_id: optional(meta, "tokenizer.ggml.bos_token_id", uint)?.map(|v| v as u64),
            eos_token_id: optional(meta, "tokenizer.ggml.eos_token_id", uint)?.map(|v| v as u64),
            pad_token_id: optional(meta, "tokenizer.ggml.padding_token_id", uint)?
                .map(|v| v as u64),
            tie_word_embeddings: tied,
        };
        if config.num_key_value_heads == 0
            || !config
                .num_attention_heads
                .is_multiple_of(config.num_key_value_heads)
        {
            bail!(
                "{} attention heads cannot share {} key-value heads",
                config.num_attention_heads,
                config.num_key_value_heads
            );
        }
        Ok(config)
    }

    /// Each layer's attention kind, as Hugging Face's `layer_types` lists them.
    pub fn layer_types(&self) -> Vec<&'static str> {
        (1..=self.num_hidden_layers)
            .map(|i| {
                if i.is_multiple_of(fixed::SLIDING_WINDOW_PATTERN) {
                    "full_attention"
                } else {
                    "sliding_attention"
                }
            })
            .collect()
    }

    /// `config.json` for Hugging Face's `Gemma3TextConfig` and MLX's `gemma3_text` model.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "architectures": ["Gemma3ForCausalLM"],
            "model_type": "gemma3_text",
            "torch_dtype": "float16",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_key_value_heads,
            "head_dim": self.head_dim,
            "hidden_activation": fixed::HIDDEN_ACTIVATION,
            "rms_norm_eps": self.rms_norm_eps,
            "max_position_embeddings": self.max_position_embeddings,
            "rope_theta": self.rope_theta,
            "rope_local_base_freq": fixed::ROPE_LOCAL_BASE_FREQ,
            "rope_scaling": self
                .rope_scaling_factor
                .map(|factor| json!({"rope_type": "linear", "factor": factor})),
            "sliding_window": self.sliding_window,
            "sliding_window_pattern": fixed::SLIDING_WINDOW_PATTERN,
            "layer_types": self.layer_types(),
            // Attention scores are scaled by 1/sqrt(query_pre_attn_scalar). GGUF has no key
            // for it: llama.cpp scales by 1/sqrt(head_dim) for every Gemma 3 but the 27B, and
            // 270M's published config says 256, its head_dim.
            "query_pre_attn_scalar": self.head_dim,
            "attn_logit_softcapping": null,
            "final_logit_softcapping": self.final_logit_softcapping,
            "attention_bias": false,
            "attention_dropout": 0.0,
            "tie_word_embeddings": self.tie_word_embeddings,
            "bos_token_id": self.bos_token_id,
            "eos_token_id": self.eos_token_id,
            "pad_token_id": self.pad_token_id,
            "use_cache": true,
        })
    }

    /// Every tensor the Hugging Face checkpoint has, with its shape.
    pub fn tensor_shapes(&self) -> BTreeMap<String, Vec<usize>> {
        let (hidden, ffn, hd) = (self.hidden_size, self.intermediate_size, self.head_dim);
        let (q, kv) = (self.num_attention_heads * hd, self.num_key_value_heads * hd);
        let mut shapes = BTreeMap::new();
        let embedding = vec![self.vocab_size, hidden];
        shapes.insert("model.embed_tokens.weight".to_owned(), embedding.clone());
        shapes.insert("model.norm.weight".to_owned(), vec![hidden]);
        if !self.tie_word_embeddings {
            shapes.insert("lm_head.weight".to_owned(), embedding);
        }
        for layer in 0..self.num_hidden_layers {
            for (_, hf) in LAYER_TENSORS {
                let shape = match hf {
                    "self_attn.q_proj" => vec![q, hidden],
                    "self_attn.k_proj" | "self_attn.v_proj" => vec![kv, hidden],
                    "self_attn.o_proj" => vec![hidden, q],
                    "self_attn.q_norm" | "self_attn.k_norm" => vec![hd],
                    "mlp.gate_proj" | "mlp.up_proj" => vec![ffn, hidden],
                    "mlp.down_proj" => vec![hidden, ffn],
                    // The four norms around attention and the feed-forward block.
                    _ => vec![hidden],
                };
                shapes.insert(format!("model.layers.{layer}.{hf}.weight"), shape);
            }
        }
        shapes
    }
}

fn get<'a>(meta: &'a HashMap<String, Value>, key: &str) -> Result<&'a Value> {
    meta.get(key)
        .with_context(|| format!("metadata has no `{key}`"))
}

fn string<'a>(meta: &'a HashMap<String, Value>, key: &str) -> Result<&'a str> {
    match get(meta, key)? {
        Value::String(s) => Ok(s),
        other => bail!("metadata `{key}` is {other:?}, not a string"),
    }
}

fn uint(meta: &HashMap<String, Value>, key: &str) -> Result<usize> {
    let v: Option<u64> = match *get(meta, key)? {
        Value::U8(v) => Some(v.into()),
        Value::U16(v) => Some(v.into()),
        Value::U32(v) => Some(v.into()),
        Value::U64(v) => Some(v),
        Value::I8(v) => u64::try_from(v).ok(),
        Value::I16(v) => u64::try_from(v).ok(),
        Value::I32(v) => u64::try_from(v).ok(),
        Value::I64(v) => u64::try_from(v).ok(),
        ref other => bail!("metadata `{key}` is {other:?}, not an integer"),
    };
    v.and_then(|v| usize::try_from(v).ok())
        .with_context(|| format!("metadata `{key}` is out of range"))
}

/// A float, widened through its shortest decimal form so that an `f32` 1e-6 is written as
/// 1e-6, not 9.999999974752427e-7.
fn float(meta: &HashMap<String, Value>, key: &str) -> Result<f64> {
    match *get(meta, key)? {
        Value::F32(v) => Ok(v.to_string().parse().unwrap_or(f64::from(v))),
        Value::F64(v) => Ok(v),
        ref other => bail!("metadata `{key}` is {other:?}, not a float"),
    }
}

fn optional<T>(
    meta: &HashMap<String, Value>,
    key: &str,
    read: fn(&HashMap<String, Value>, &str) -> Result<T>,
) -> Result<Option<T>> {
    if meta.contains_key(key) {
        read(meta, key).map(Some)
    } else {
        Ok(None)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The metadata of a small model in Gemma 3's shape: `layers` layers, 2 query heads and one
    /// key-value head of 32, hidden 64, feed-forward 128, `vocab` tokens.
    pub(crate) fn metadata(layers: u32, vocab: usize) -> HashMap<String, Value> {
        let mut meta = HashMap::new();
        let mut put = |k: &str, v: Value| meta.insert(k.to_owned(), v);
        put("general.architecture", Value::String("gemma3".into()));
        put("gemma3.context_length", Value::U32(2048));
        put("gemma3.embedding_length", Value::U32(64));
        put("gemma3.block_count", Value::U32(layers));
        put("gemma3.feed_forward_length", Value::U32(128));
        put("gemma3.attention.head_count", Value::U32(2));
        put("gemma3.attention.head_count_kv", Value::U32(1));
        put("gemma3.attention.key_length", Value::U32(32));
        put("gemma3.attention.value_length", Value::U32(32));
        put("gemma3.attention.layer_norm_rms_epsilon", Value::F32(1e-6));
        put("gemma3.rope.freq_base", Value::F32(1_000_000.0));
        put("gemma3.attention.sliding_window", Value::U32(16));
        let tokens = (0..vocab).map(|i| Value::String(format!("t{i}"))).collect();
        put("tokenizer.ggml.tokens", Value::Array(tokens));
        put("tokenizer.ggml.bos_token_id", Value::U32(2));
        put("tokenizer.ggml.eos_token_id", Value::U32(1));
        put("tokenizer.ggml.padding_token_id", Value::U32(0));
        meta
    }

    #[test]
    fn names_map_to_hugging_face() {
        let cases = [
            ("token_embd.weight", "model.embed_tokens.weight"),
            ("output_norm.weight", "model.norm.weight"),
            ("output.weight", "lm_head.weight"),
            (
                "blk.0.attn_norm.weight",
                "model.layers.0.input_layernorm.weight",
            ),
            (
                "blk.7.attn_q.weight",
                "model.layers.7.self_attn.q_proj.weight",
            ),
            (
                "blk.7.attn_k.weight",
                "model.layers.7.self_attn.k_proj.weight",
            ),
            (
                "blk.7.attn_v.weight",
                "model.layers.7.self_attn.v_proj.weight",
            ),
            (
                "blk.17.attn_output.weight",
                "model.layers.17.self_attn.o_proj.weight",
            ),
            (
                "blk.3.attn_q_norm.weight",
                "model.layers.3.self_attn.q_norm.weight",
            ),
            (
                "blk.3.attn_k_norm.weight",
                "model.layers.3.self_attn.k_norm.weight",
            ),
            (
                "blk.3.post_attention_norm.weight",
                "model.layers.3.post_attention_layernorm.weight",
            ),
            (
                "blk.3.ffn_norm.weight",
                "model.layers.3.pre_feedforward_layernorm.weight",
            ),
            (
                "blk.3.post_ffw_norm.weight",
                "model.layers.3.post_feedforward_layernorm.weight",
            ),
            (
                "blk.3.ffn_gate.weight",
                "model.layers.3.mlp.gate_proj.weight",
            ),
            ("blk.3.ffn_up.weight", "model.layers.3.mlp.up_proj.weight"),
            (
                "blk.3.ffn_down.weight",
                "model.layers.3.mlp.down_proj.weight",
            ),
        ];
        for (gguf, hf) in cases {
            assert_eq!(hf_name(gguf).as_deref(), Some(hf), "{gguf}");
        }
        for unknown in [
            "rope_freqs.weight",
            "blk.0.attn_qkv.weight",
            "blk.x.attn_q.weight",
            "blk..attn_q.weight",
            "blk.+1.attn_q.weight",
            "blk.0.attn_q.bias",
            "token_embd",
        ] {
            assert_eq!(hf_name(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn exactly_the_norms_are_shifted() {
        let shifted: Vec<&str> = LAYER_TENSORS
            .iter()
            .map(|(_, hf)| *hf)
            .filter(|hf| is_shifted_norm(&format!("model.layers.0.{hf}.weight")))
            .collect();
        assert_eq!(
            shifted,
            [
                "input_layernorm",
                "self_attn.q_norm",
                "self_attn.k_norm",
                "post_attention_layernorm",
                "pre_feedforward_layernorm",
                "post_feedforward_layernorm",
            ]
        );
        assert!(is_shifted_norm("model.norm.weight"));
        assert!(!is_shifted_norm("model.embed_tokens.weight"));
        assert!(!is_shifted_norm("lm_head.weight"));
    }

    #[test]
    fn config_from_metadata() {
        let config = Gemma3Config::from_metadata(&metadata(7, 100), true).unwrap();
        let json = config.to_json();
        let expected = [
            ("model_type", json!("gemma3_text")),
            ("architectures", json!(["Gemma3ForCausalLM"])),
            ("vocab_size", json!(100)),
            ("hidden_size", json!(64)),
            ("intermediate_size", json!(128)),
            ("num_hidden_layers", json!(7)),
            ("num_attention_heads", json!(2)),
            ("num_key_value_heads", json!(1)),
            ("head_dim", json!(32)),
            ("query_pre_attn_scalar", json!(32)),
            // The f32 in GGUF is 9.99999997e-7; the config says what the model was trained with.
            ("rms_norm_eps", json!(1e-6)),
            ("rope_theta", json!(1e6)),
            ("rope_local_base_freq", json!(1e4)),
            ("rope_scaling", json!(null)),
            ("sliding_window", json!(16)),
            ("sliding_window_pattern", json!(6)),
            ("max_position_embeddings", json!(2048)),
            ("hidden_activation", json!("gelu_pytorch_tanh")),
            ("final_logit_softcapping", json!(null)),
            ("attn_logit_softcapping", json!(null)),
            ("tie_word_embeddings", json!(true)),
            ("torch_dtype", json!("float16")),
            ("bos_token_id", json!(2)),
            ("eos_token_id", json!(1)),
            ("pad_token_id", json!(0)),
        ];
        for (key, value) in expected {
            assert_eq!(json[key], value, "{key}");
        }
        let sliding = "sliding_attention";
        assert_eq!(
            json["layer_types"],
            json!([
                sliding,
                sliding,
                sliding,
                sliding,
                sliding,
                "full_attention",
                sliding
            ])
        );
    }

    #[test]
    fn optional_metadata_is_used_when_present() {
        let mut meta = metadata(2, 10);
        meta.insert(
            "gemma3.rope.scaling.type".into(),
            Value::String("linear".into()),
        );
        meta.insert("gemma3.rope.scaling.factor".into(), Value::F32(8.0));
        meta.insert("gemma3.final_logit_softcapping".into(), Value::F32(30.0));
        meta.remove("tokenizer.ggml.padding_token_id");
        let json = Gemma3Config::from_metadata(&meta, false).unwrap().to_json();
        assert_eq!(
            json["rope_scaling"],
            json!({"rope_type": "linear", "factor": 8.0})
        );
        assert_eq!(json["final_logit_softcapping"], 30.0);
        assert_eq!(json["pad_token_id"], json!(null));
        assert_eq!(json["tie_word_embeddings"], false);
    }

    #[test]
    fn bad_metadata_is_named() {
        let mut meta = metadata(2, 10);
        meta.insert("general.architecture".into(), Value::String("llama".into()));
        let err = Gemma3Config::from_metadata(&meta, true).unwrap_err();
        assert!(err.to_string().contains("`llama`"), "{err}");

        let mut meta = metadata(2, 10);
        meta.remove("gemma3.attention.sliding_window");
        let err = Gemma3Config::from_metadata(&meta, true).unwrap_err();
        assert!(
            err.to_string().contains("gemma3.attention.sliding_window"),
            "{err}"
        );

        let mut meta = metadata(2, 10);
        meta.insert("gemma3.block_count".into(), Value::String("18".into()));
        let err = Gemma3Config::from_metadata(&meta, true).unwrap_err();
        assert!(err.to_string().contains("not an integer"), "{err}");

        let mut meta = metadata(2, 10);
        meta.insert("gemma3.attention.head_count_kv".into(), Value::U32(3));
        assert!(Gemma3Config::from_metadata(&meta, true).is_err());
    }

    #[test]
    fn shapes_are_row_major_out_by_in() {
        let config = Gemma3Config::from_metadata(&metadata(2, 100), true).unwrap();
        let shapes = config.tensor_shapes();
        assert_eq!(shapes.len(), 2 + 2 * LAYER_TENSORS.len());
        assert_eq!(shapes["model.embed_tokens.weight"], [100, 64]);
        assert_eq!(shapes["model.norm.weight"], [64]);
        assert_eq!(shapes["model.layers.1.self_attn.q_proj.weight"], [64, 64]);
        assert_eq!(shapes["model.layers.1.self_attn.k_proj.weight"], [32, 64]);
        assert_eq!(shapes["model.layers.1.self_attn.v_proj.weight"], [32, 64]);
        assert_eq!(shapes["model.layers.1.self_attn.o_proj.weight"], [64, 64]);
        assert_eq!(shapes["model.layers.1.self_attn.q_norm.weight"], [32]);
        assert_eq!(shapes["model.layers.1.mlp.gate_proj.weight"], [128, 64]);
        assert_eq!(shapes["model.layers.1.mlp.up_proj.weight"], [128, 64]);
        assert_eq!(shapes["model.layers.1.mlp.down_proj.weight"], [64, 128]);
        assert_eq!(
            shapes["model.layers.1.pre_feedforward_layernorm.weight"],
            [64]
        );
        assert!(!shapes.contains_key("lm_head.weight"));
        let untied = Gemma3Config {
            tie_word_embeddings: false,
            ..config
        };
        assert_eq!(untied.tensor_shapes()["lm_head.weight"], [100, 64]);
    }
}
