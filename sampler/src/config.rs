//! The sampling knobs, as plain serde-friendly data.
//!
//! [`SamplerConfig`] is what a request carries: every field has a neutral default, so a JSON
//! object naming only the knobs it cares about deserialises into a complete configuration. The
//! defaults follow the OpenAI API (temperature 1, no filter, no penalty), so the default
//! configuration samples straight from the softmax of the logits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::SampleError;

/// Sampling knobs. See the [crate docs](crate) for the order in which they apply.
///
/// Every knob has a value that turns it off, and that value is the default, except for
/// `temperature` (default 1, plain softmax sampling) and `repeat_last_n` (default 64, which only
/// matters once `repetition_penalty` is set).
///
/// ```
/// use sampler::SamplerConfig;
///
/// let config: SamplerConfig = serde_json::from_str(r#"{"temperature": 0.7, "top_k": 40}"#)?;
/// assert_eq!(config.top_k, 40);
/// assert_eq!(config.top_p, 1.0); // untouched knobs keep their neutral default
/// config.validate()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplerConfig {
    /// Softmax temperature, a finite number `>= 0`. `0` means greedy: the token with the highest
    /// logit, ties broken by the lowest id, without any randomness. Default `1`.
    pub temperature: f32,
    /// Keep only the `top_k` tokens with the highest logits (ties at the cut broken by the lowest
    /// id). `0` turns the filter off. Default `0`.
    pub top_k: u32,
    /// Nucleus sampling: keep the smallest set of best tokens whose probability mass reaches
    /// `top_p`. Must be in `(0, 1]`; `1` turns the filter off. Default `1`.
    pub top_p: f32,
    /// Keep only tokens whose probability is at least `min_p` times that of the most likely
    /// token. Must be in `[0, 1]`; `0` turns the filter off. Default `0`.
    pub min_p: f32,
    /// Repetition penalty (llama.cpp and Hugging Face semantics): every distinct token among the
    /// last `repeat_last_n` tokens of the history has a positive logit divided by this value and
    /// a negative logit multiplied by it. A finite number `> 0`; `1` turns it off. Default `1`.
    pub repetition_penalty: f32,
    /// How many of the most recent history tokens the repetition penalty looks at. `0` turns the
    /// repetition penalty off; `u32::MAX` covers the whole history. Default `64`.
    pub repeat_last_n: u32,
    /// Frequency penalty (OpenAI semantics): subtracted from a token's logit once per occurrence
    /// of the token in the history. Any finite number; `0` turns it off. Default `0`.
    pub frequency_penalty: f32,
    /// Presence penalty (OpenAI semantics): subtracted once from the logit of every token that
    /// occurs in the history. Any finite number; `0` turns it off. Default `0`.
    pub presence_penalty: f32,
    /// Additive bias per token id, applied before everything else. Biases must be finite; a
    /// masked (`-inf`) logit stays masked whatever its bias. Default: empty.
    pub logit_bias: BTreeMap<u32, f32>,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            repeat_last_n: 64,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            logit_bias: BTreeMap::new(),
        }
    }
}

impl SamplerConfig {
    /// A configuration that always picks the highest logit (temperature 0).
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            ..Self::default()
        }
    }

    /// Whether this configuration picks the argmax without drawing a random number.
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// Checks every knob against its domain (see the field docs).
    ///
    /// [`Sampler::new`](crate::Sampler::new) calls this, so a sampler never holds a bad
    /// configuration.
    pub fn validate(&self) -> Result<(), SampleError> {
        check(
            "temperature",
            self.temperature,
            self.temperature.is_finite() && self.temperature >= 0.0,
            "a finite number >= 0",
        )?;
        check(
            "top_p",
            self.top_p,
            self.top_p > 0.0 && self.top_p <= 1.0,
            "a number in (0, 1]",
        )?;
        check(
            "min_p",
            self.min_p,
            (0.0..=1.0).contains(&self.min_p),
            "a number in [0, 1]",
        )?;
        check(
            "repetition_penalty",
            self.repetition_penalty,
            self.repetition_penalty.is_finite() && self.repetition_penalty > 0.0,
            "a finite number > 0",
        )?;
        check(
            "frequency_penalty",
            self.frequency_penalty,
            self.frequency_penalty.is_finite(),
            "a finite number",
        )?;
        check(
            "presence_penalty",
            self.presence_penalty,
            self.presence_penalty.is_finite(),
            "a finite number",
        )?;
        if let Some((&token, &bias)) = self.logit_bias.iter().find(|(_, b)| !b.is_finite()) {
            return Err(SampleError::InvalidLogitBias { token, bias });
        }
        Ok(())
    }

    /// Whether the repetition penalty changes anything.
    pub(crate) fn has_repetition_penalty(&self) -> bool {
        self.repetition_penalty != 1.0 && self.repeat_last_n > 0
    }

    /// Whether the frequency or presence penalty changes anything.
    pub(crate) fn has_count_penalties(&self) -> bool {
        self.frequency_penalty != 0.0 || self.presence_penalty != 0.0
    }
}

fn check(
    field: &'static str,
    value: f32,
    ok: bool,
    expected: &'static str,
) -> Result<(), SampleError> {
    if ok {
        Ok(())
    } else {
        Err(SampleError::InvalidConfig {
            field,
            value: f64::from(value),
            expected,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(config: SamplerConfig) -> &'static str {
        match config.validate() {
            Err(SampleError::InvalidConfig { field, .. }) => field,
            other => panic!("expected InvalidConfig, got {other:?}"),
        }
    }

    #[test]
    fn default_is_valid_and_neutral() {
        let config = SamplerConfig::default();
        config.validate().unwrap();
        assert!(!config.is_greedy());
        assert!(!config.has_repetition_penalty());
        assert!(!config.has_count_penalties());
        SamplerConfig::greedy().validate().unwrap();
        assert!(SamplerConfig::greedy().is_greedy());
    }

    #[test]
    fn rejects_out_of_domain_knobs() {
        let d = SamplerConfig::default;
        assert_eq!(
            field_of(SamplerConfig {
                temperature: -0.1,
                ..d()
            }),
            "temperature"
        );
        assert_eq!(
            field_of(SamplerConfig {
                temperature: f32::NAN,
                ..d()
            }),
            "temperature"
        );
        assert_eq!(
            field_of(SamplerConfig {
                temperature: f32::INFINITY,
                ..d()
            }),
            "temperature"
        );
        assert_eq!(field_of(SamplerConfig { top_p: 0.0, ..d() }), "top_p");
        assert_eq!(field_of(SamplerConfig { top_p: 1.01, ..d() }), "top_p");
        assert_eq!(
            field_of(SamplerConfig {
                top_p: f32::NAN,
                ..d()
            }),
            "top_p"
        );
        assert_eq!(
            field_of(SamplerConfig {
                min_p: -0.01,
                ..d()
            }),
            "min_p"
        );
        assert_eq!(field_of(SamplerConfig { min_p: 1.5, ..d() }), "min_p");
        assert_eq!(
            field_of(SamplerConfig {
                repetition_penalty: 0.0,
                ..d()
            }),
            "repetition_penalty"
        );
        assert_eq!(
            field_of(SamplerConfig {
                repetition_penalty: f32::INFINITY,
                ..d()
            }),
            "repetition_penalty"
        );
        assert_eq!(
            field_of(SamplerConfig {
                frequency_penalty: f32::NAN,
                ..d()
            }),
            "frequency_penalty"
        );
        assert_eq!(
            field_of(SamplerConfig {
                presence_penalty: f32::NEG_INFINITY,
                ..d()
            }),
            "presence_penalty"
        );
        let bias = SamplerConfig {
            logit_bias: [(3, f32::NEG_INFINITY)].into(),
            ..d()
        };
        assert_eq!(
            bias.validate(),
            Err(SampleError::InvalidLogitBias {
                token: 3,
                bias: f32::NEG_INFINITY
            })
        );
    }

    #[test]
    fn accepts_domain_edges() {
        let d = SamplerConfig::default;
        for config in [
            SamplerConfig {
                temperature: 0.0,
                ..d()
            },
            SamplerConfig {
                top_p: f32::MIN_POSITIVE,
                ..d()
            },
            SamplerConfig { min_p: 1.0, ..d() },
            SamplerConfig {
                frequency_penalty: -2.0,
                presence_penalty: 2.0,
                ..d()
            },
            SamplerConfig {
                logit_bias: [(0, -100.0), (7, 100.0)].into(),
                ..d()
            },
        ] {
            config.validate().unwrap();
        }
    }

    #[test]
    fn serde_round_trip_with_string_keyed_bias() {
        let json = r#"{"temperature":0.5,"logit_bias":{"42":-5.5},"repeat_last_n":16}"#;
        let config: SamplerConfig = serde_json::from_str(json).unwrap();
        assert_eq!(config.temperature, 0.5);
        assert_eq!(config.logit_bias.get(&42), Some(&-5.5));
        assert_eq!(config.repeat_last_n, 16);
        assert_eq!(config.top_k, 0);
        let back: SamplerConfig =
            serde_json::from_str(&serde_json::to_string(&config).unwrap()).unwrap();
        assert_eq!(back, config);
    }
}
