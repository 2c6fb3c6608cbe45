//! The crate's single error type.
//!
//! Configuration problems are reported by [`Sampler::new`](crate::Sampler::new) and
//! [`SamplerConfig::validate`](crate::SamplerConfig::validate), before any token is sampled.
//! Everything else is about one call to [`Sampler::sample`](crate::Sampler::sample): the logits
//! or the history handed in do not allow a pick.

/// Everything that can go wrong while configuring a sampler or sampling one token.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SampleError {
    /// A numeric knob of [`SamplerConfig`](crate::SamplerConfig) is outside its domain.
    #[error("invalid sampler config: {field} is {value}, expected {expected}")]
    InvalidConfig {
        /// The name of the field, as spelled in `SamplerConfig`.
        field: &'static str,
        /// The rejected value.
        value: f64,
        /// The accepted domain, in words.
        expected: &'static str,
    },
    /// A logit bias is NaN or infinite.
    #[error(
        "invalid sampler config: logit bias for token {token} is {bias}, expected a finite number"
    )]
    InvalidLogitBias {
        /// The token the bias is for.
        token: u32,
        /// The rejected bias.
        bias: f32,
    },
    /// The logits slice is empty.
    #[error("logits are empty")]
    EmptyLogits,
    /// The logits slice has more entries than a `u32` token id can address.
    #[error("{len} logits exceed the largest vocabulary a u32 token id can address")]
    TooManyLogits {
        /// The length of the slice.
        len: usize,
    },
    /// Every logit is `-inf` (after logit bias and penalties): the mask allows no token.
    #[error("all {len} logits are -inf: no token is allowed")]
    NoCandidates {
        /// The length of the slice.
        len: usize,
    },
    /// A logit is NaN or `+inf`; logits must be finite or `-inf` (masked).
    #[error("logit of token {token} is {value}, expected a finite number or -inf")]
    InvalidLogit {
        /// The first offending token id.
        token: u32,
        /// Its value (after logit bias and penalties).
        value: f32,
    },
    /// A token of the history is not a valid index into the logits.
    #[error("history token {token} is out of range for {len} logits")]
    HistoryTokenOutOfRange {
        /// The offending token id.
        token: u32,
        /// The length of the logits slice.
        len: usize,
    },
    /// A token of the logit bias map is not a valid index into the logits.
    #[error("logit bias token {token} is out of range for {len} logits")]
    BiasTokenOutOfRange {
        /// The offending token id.
        token: u32,
        /// The length of the logits slice.
        len: usize,
    },
}
