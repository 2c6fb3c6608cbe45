//! The decoder: one implementation of the Llama family (Llama, Mistral, Qwen2, Qwen3) and
//! Gemma 3, which differ in a few switches ([`crate::Arch`]), over MLX operations, with a
//! per-layer KV cache.
//!
//! A forward pass takes `[1, L]` token ids and positions `offset..offset + L`, appends keys
//! and values to every layer's cache and returns the logits of the last position. Attention
//! uses MLX's fused `scaled_dot_product_attention` (causal mode for prompts), the rotary
//! embedding MLX's fused `rope`, the norms its fused `rms_norm`.

use mlx_rs::fast::{self, ScaledDotProductAttentionMask};
use mlx_rs::ops::indexing::{TryIndexMutOp, TryIndexOp};
use mlx_rs::{Array, Dtype};

use crate::config::{Arch, ModelConfig, RopeScaling};
use crate::error::Error;
use crate::weights::{Linear, Weights, last_positions};

/// Positions the KV cache grows by when it is full.
const CACHE_STEP: usize = 256;

/// The rotary embedding of one layer.
struct Rope {
    /// Base of the frequencies; `None` when `freqs` are given.
    base: Option<f32>,
    /// Position scale (`1 / factor` for linear scaling).
    scale: f32,
    /// Per-pair periods (Llama 3 scaling).
    freqs: Option<Array>,
}

impl Rope {
    fn new(theta: f32, scaling: Option<&RopeScaling>, head_dim: usize) -> Rope {
        match scaling {
            None => Rope {
                base: Some(theta),
                scale: 1.0,
                freqs: None,
            },
            Some(RopeScaling::Linear { factor }) => Rope {
                base: Some(theta),
                scale: 1.0 / factor,
                freqs: None,
            },
            Some(RopeScaling::Llama3 {
                factor,
                low_freq_factor,
                high_freq_factor,
                original_max_position_embeddings: context,
            }) => {
                let periods = llama3_periods(
                    theta,
                    head_dim,
                    *factor,
                    *low_freq_factor,
                    *high_freq_factor,
                    *context,
                );
                let n = periods.len() as i32;
                Rope {
                    base: None,
                    scale: 1.0,
                    freqs: Some(Array::from_slice(&periods, &[n])),
                }
            }
        }
    }

    fn apply(&self, x: &Array, traditional: bool, offset: i32) -> Result<Array, Error> {
        let dims = x.shape().last().copied().unwrap_or(0);
        Ok(fast::rope(
            x,
            dims,
            traditional,
            self.base,
            self.scale,
            offset,
            self.freqs.as_ref(),
        )?)
    }
}

/// Llama 3.1's rotary periods: `theta^(2i/d)` per pair, stretched by `factor` for
/// wavelengths longer than the original context allows at `low_freq_factor`, kept below
/// `high_freq_factor`, and interpolated smoothly in between.
fn llama3_periods(
    theta: f32,
    head_dim: usize,
    factor: f32,
    low_freq_factor: f32,
    high_freq_factor: f32,
    context: f32,
) -> Vec<f32> {
    let low_wavelen = context / low_freq_factor;
    let high_wavelen = context / high_freq_factor;
    (0..head_dim / 2)
        .map(|i| {
            let period = theta.powf(2.0 * i as f32 / head_dim as f32);
            let wavelen = 2.0 * std::f32::consts::PI * period;
            if wavelen > low_wavelen {
                period * factor
            } else if wavelen < high_wavelen || high_freq_factor == low_freq_factor {
                period
            } else {
                let smooth =
                    (context / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
                period / ((1.0 - smooth) / factor + smooth)
            }
        })
        .collect()
}

/// Self-attention of one layer.
struct Attention {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    q_norm: Option<Array>,
    k_norm: Option<Array>,
    rope: Rope,
    window: Option<usize>,
}

/// The feed-forward block: `down(act(gate(x)) * up(x))`.
struct Mlp {
    gate: Linear,
    up: Linear,
    down: Linear,
    /// GELU (tanh approximation) instead of SiLU.
    gelu: bool,
}

impl Mlp {
    fn forward(&self, x: &Array) -> Result<Array, Error> {
        let gate = self.gate.forward(x)?;
        let act = if self.gelu {
            mlx_rs::nn::gelu_approximate(&gate)?
        } else {
            mlx_rs::nn::silu(&gate)?
        };
        self.down.forward(&act.multiply(self.up.forward(x)?)?)
    }
}

struct Layer {
    attn: Attention,
    mlp: Mlp,
    input_norm: Array,
    post_attn_norm: Array,
    /// Gemma 3: the norms before and after the MLP (the residual adds after them).
    pre_ff_norm: Option<Array>,
    post_ff_norm: Option<Array>,
}

/// The KV cache of one layer: `[1, kv_heads, capacity, head_dim]` buffers, valid up to the
/// model's `n_past`.
#[derive(Default)]
pub struct LayerCache {
    keys: Option<Array>,
    values: Option<Array>,
    capacity: usize,
}

impl LayerCache {
    /// Writes `k` and `v` (`[1, kv_heads, L, head_dim]`) at `offset`; returns the cache's
    /// keys and values for positions `0..offset + L`.
    fn update(
        &mut self,
        k: &Array,
        v: &Array,
        offset: usize,
        n_ctx: usize,
    ) -> Result<(Array, Array), Error> {
        let len = k.shape()[2] as usize;
        let end = offset + len;
        if end > self.capacity {
            let capacity = end
                .div_ceil(CACHE_STEP)
                .saturating_mul(CACHE_STEP)
                .min(n_ctx);
            let capacity = capacity.max(end);
            let grow = |old: Option<&Array>, like: &Array| -> Result<Array, Error> {
                let mut shape = like.shape().to_vec();
                shape[2] = (capacity - self.capacity) as i32;
                let zeros = mlx_rs::ops::zeros_dtype(&shape, like.dtype())?;
                Ok(match old {
                    Some(old) => mlx_rs::ops::concatenate(&[old, &zeros], 2)?,
                    None => zeros,
                })
            };
            let keys = grow(self.keys.as_ref(), k)?;
            let values = grow(self.values.as_ref(), v)?;
            self.keys = Some(keys);
            self.values = Some(values);
            self.capacity = capacity;
        }
        let (Some(keys), Some(values)) = (self.keys.as_mut(), self.values.as_mut()) else {
            return Err(Error::Mlx("the KV cache has no buffers".into()));
        };
        let (start, stop) = (offset as i32, end as i32);
        keys.try_index_mut((.., .., start..stop, ..), k)?;
        values.try_index_mut((.., .., start..stop, ..), v)?;
        Ok((
            keys.try_index((.., .., ..stop, ..))?,
            values.try_index((.., .., ..stop, ..))?,
        ))
    }

    /// The buffers, for evaluation together with the logits.
    pub fn arrays(&self) -> impl Iterator<Item = &Array> {
        self.keys.iter().chain(&self.values)
    }
}

/// A loaded decoder.
pub struct Transformer {
    config: ModelConfig,
    embed: Linear,
    /// `None`: the output projection is the embedding table.
    lm_head: Option<Linear>,
    layers: Vec<Layer>,
    norm: Array,
    /// Gemma's embedding scale, `sqrt(hidden_size)`.
    embed_scale: Option<f32>,
    dtype: Dtype,
}

impl Transformer {
    /// Builds the decoder from `weights` (HF tensor names); evaluates every weight, so file
    /// errors surface here.
    pub fn build(config: ModelConfig, mut weights: Weights, dtype: Dtype) -> Result<Self, Error> {
        let c = &config;
        let gemma = c.arch == Arch::Gemma3;
        let (h, kv, hd) = (c.hidden_size, c.num_kv_heads, c.head_dim);
        let q_width = c.num_heads * hd;
        let embed = weights.linear(c, "model.embed_tokens", c.vocab_size, h, false)?;
        let mut layers = Vec::with_capacity(c.num_layers);
        for i in 0..c.num_layers {
            let p = format!("model.layers.{i}");
            let a = format!("{p}.self_attn");
            let qk_norm = matches!(c.arch, Arch::Qwen3 | Arch::Gemma3);
            let window = c.sliding_window.get(i).copied().flatten();
            let rope = if window.is_some() {
                Rope::new(c.rope_local_theta, None, hd)
            } else {
                Rope::new(c.rope_theta, c.rope_scaling.as_ref(), hd)
            };
            let o_bias = c.attention_bias && c.arch == Arch::Llama;
            let attn = Attention {
                q: weights.linear(c, &format!("{a}.q_proj"), q_width, h, c.attention_bias)?,
                k: weights.linear(c, &format!("{a}.k_proj"), kv * hd, h, c.attention_bias)?,
                v: weights.linear(c, &format!("{a}.v_proj"), kv * hd, h, c.attention_bias)?,
                o: weights.linear(c, &format!("{a}.o_proj"), h, q_width, o_bias)?,
                q_norm: qk_norm
                    .then(|| weights.norm(&format!("{a}.q_norm.weight"), hd, gemma))
                    .transpose()?,
                k_norm: qk_norm
                    .then(|| weights.norm(&format!("{a}.k_norm.weight"), hd, gemma))
                    .transpose()?,
                rope,
                window,
            };
            let m = format!("{p}.mlp");
            let f = c.intermediate_size;
            let mlp = Mlp {
                gate: weights.linear(c, &format!("{m}.gate_proj"), f, h, false)?,
                up: weights.linear(c, &format!("{m}.up_proj"), f, h, false)?,
                down: weights.linear(c, &format!("{m}.down_proj"), h, f, false)?,
                gelu: gemma,
            };
            let norm =
                |w: &mut Weights, name: &str| w.norm(&format!("{p}.{name}.weight"), h, gemma);
            layers.push(Layer {
                attn,
                mlp,
                input_norm: norm(&mut weights, "input_layernorm")?,
                post_attn_norm: norm(&mut weights, "post_attention_layernorm")?,
                pre_ff_norm: gemma
                    .then(|| norm(&mut weights, "pre_feedforward_layernorm"))
                    .transpose()?,
                post_ff_norm: gemma
                    .then(|| norm(&mut weights, "post_feedforward_layernorm"))
                    .transpose()?,
            });
        }
        let norm = weights.norm("model.norm.weight", h, gemma)?;
        let lm_head = if weights.has("lm_head") {
            Some(weights.linear(c, "lm_head", c.vocab_size, h, false)?)
        } else if c.tie_word_embeddings {
            None
        } else {
            return Err(Error::MissingTensor {
                name: "lm_head.weight".into(),
            });
        };
        let unused = weights.unused();
        if !unused.is_empty() {
            tracing::debug!(count = unused.len(), first = ?unused.first(), "unused tensors");
        }
        let model = Transformer {
            embed_scale: gemma.then(|| (h as f32).sqrt()),
            config,
            embed,
            lm_head,
            layers,
            norm,
            dtype,
        };
        mlx_rs::transforms::eval(model.arrays())?;
        Ok(model)
    }

    fn arrays(&self) -> Vec<&Array> {
        let mut all = self.embed.arrays();
        if let Some(head) = &self.lm_head {
            all.extend(head.arrays());
        }
        all.push(&self.norm);
        for l in &self.layers {
            for lin in [&l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o] {
                all.extend(lin.arrays());
            }
            for lin in [&l.mlp.gate, &l.mlp.up, &l.mlp.down] {
                all.extend(lin.arrays());
            }
            all.extend([&l.input_norm, &l.post_attn_norm]);
            all.extend(l.attn.q_norm.iter().chain(&l.attn.k_norm));
            all.extend(l.pre_ff_norm.iter().chain(&l.post_ff_norm));
            all.extend(l.attn.rope.freqs.iter());
        }
        all
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The quantization of the linear layers (of the first layer's query projection).
    pub fn quantization(&self) -> Option<crate::config::Quantization> {
        self.layers.first().and_then(|l| l.attn.q.quantization())
    }

    /// A cache for every layer.
    pub fn new_cache(&self) -> Vec<LayerCache> {
        self.layers.iter().map(|_| LayerCache::default()).collect()
    }

    /// Evaluates `tokens` at positions `offset..`, writing keys and values into `cache`;
    /// returns the (unevaluated) `f32` logits of the last position, `[vocab_size]`.
    pub fn forward(
        &self,
        tokens: &[u32],
        offset: usize,
        cache: &mut [LayerCache],
        n_ctx: usize,
    ) -> Result<Array, Error> {
        let c = &self.config;
        let len = tokens.len() as i32;
        let ids = Array::from_slice(tokens, &[1, len]);
        let mut x = self.embed.rows(&ids)?.as_dtype(self.dtype)?;
        if let Some(scale) = self.embed_scale {
            x = x.multiply(Array::from_f32(scale).as_dtype(self.dtype)?)?;
        }
        for (layer, cache) in self.layers.iter().zip(cache.iter_mut()) {
            let normed = fast::rms_norm(&x, Some(&layer.input_norm), c.rms_norm_eps)?;
            let mut r = self.attention(&layer.attn, &normed, cache, offset, n_ctx)?;
            let h = if let (Some(pre), Some(post)) = (&layer.pre_ff_norm, &layer.post_ff_norm) {
                r = fast::rms_norm(&r, Some(&layer.post_attn_norm), c.rms_norm_eps)?;
                let h = x.add(&r)?;
                let m = layer
                    .mlp
                    .forward(&fast::rms_norm(&h, Some(pre), c.rms_norm_eps)?)?;
                h.add(fast::rms_norm(&m, Some(post), c.rms_norm_eps)?)?
            } else {
                let h = x.add(&r)?;
                let m = layer.mlp.forward(&fast::rms_norm(
                    &h,
                    Some(&layer.post_attn_norm),
                    c.rms_norm_eps,
                )?)?;
                h.add(&m)?
            };
            x = h;
        }
        let last = x.try_index((.., len - 1.., ..))?;
        let last = fast::rms_norm(&last, Some(&self.norm), c.rms_norm_eps)?;
        let mut logits = match &self.lm_head {
            Some(head) => head.forward(&last)?,
            None => self.embed.forward(&last)?,
        }
        .as_dtype(Dtype::Float32)?;
        if let Some(cap) = c.final_logit_softcapping {
            let cap = Array::from_f32(cap);
            logits = mlx_rs::ops::tanh(logits.divide(&cap)?)?.multiply(&cap)?;
        }
        Ok(logits.reshape(&[-1])?)
    }

    fn attention(
        &self,
        attn: &Attention,
        x: &Array,
        cache: &mut LayerCache,
        offset: usize,
        n_ctx: usize,
    ) -> Result<Array, Error> {
        let c = &self.config;
        let len = x.shape()[1];
        let (heads, kv, hd) = (c.num_heads as i32, c.num_kv_heads as i32, c.head_dim as i32);
        let split = |y: Array, n: i32, norm: Option<&Array>| -> Result<Array, Error> {
            let mut y = y.reshape(&[1, len, n, hd])?;
            if let Some(w) = norm {
                y = fast::rms_norm(&y, Some(w), c.rms_norm_eps)?;
            }
            Ok(y.transpose_axes(&[0, 2, 1, 3])?)
        };
        let q = split(attn.q.forward(x)?, heads, attn.q_norm.as_ref())?;
        let k = split(attn.k.forward(x)?, kv, attn.k_norm.as_ref())?;
        let v = split(attn.v.forward(x)?, kv, None)?;
        let pos = offset as i32;
        let q = attn.rope.apply(&q, c.rope_traditional, pos)?;
        let k = attn.rope.apply(&k, c.rope_traditional, pos)?;
        let (mut keys, mut values) = cache.update(&k, &v, offset, n_ctx)?;

        let total = offset + len as usize;
        let mask_array;
        let mask = match attn.window {
            // One query sees the last `window` positions: slice them instead of masking.
            Some(window) if total > window && len == 1 => {
                keys = last_positions(&keys, window as i32)?;
                values = last_positions(&values, window as i32)?;
                None
            }
            Some(window) if total > window => {
                mask_array = window_mask(offset, len as usize, window);
                Some(ScaledDotProductAttentionMask::Array(&mask_array))
            }
            _ if len > 1 => Some(ScaledDotProductAttentionMask::Causal),
            _ => None,
        };
        let out =
            fast::scaled_dot_product_attention(&q, &keys, &values, c.attention_scale, mask, None)?;
        let out = out
            .transpose_axes(&[0, 2, 1, 3])?
            .reshape(&[1, len, heads * hd])?;
        attn.o.forward(&out)
    }
}

/// `[len, offset + len]`: query `i` (position `offset + i`) may see key `j` when
/// `j <= offset + i` and `offset + i - j < window`.
fn window_mask(offset: usize, len: usize, window: usize) -> Array {
    let total = offset + len;
    let mut allowed = Vec::with_capacity(len * total);
    for i in 0..len {
        let pos = offset + i;
        allowed.extend((0..total).map(|j| j <= pos && pos - j < window));
    }
    Array::from_slice(&allowed, &[len as i32, total as i32])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_mask_is_causal_and_bounded() {
        // offset 2, 3 queries (positions 2, 3, 4), window 2:
        //   pos 2 sees 1, 2; pos 3 sees 2, 3; pos 4 sees 3, 4.
        let m = window_mask(2, 3, 2);
        assert_eq!(m.shape(), [3, 5]);
        let got: Vec<bool> = m.try_as_slice::<bool>().unwrap().to_vec();
        #[rustfmt::skip]
        let want = [
            false, true, true, false, false,
            false, false, true, true, false,
            false, false, false, true, true,
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn llama3_periods_keep_high_and_stretch_low_frequencies() {
        let p = llama3_periods(500_000.0, 64, 8.0, 1.0, 4.0, 8192.0);
        assert_eq!(p.len(), 32);
        assert_eq!(p[0], 1.0);
        let plain = 500_000f32.powf(62.0 / 64.0);
        assert!((p[31] - plain * 8.0).abs() / p[31] < 1e-6);
        assert!(p.windows(2).all(|w| w[0] < w[1]));
    }
}
