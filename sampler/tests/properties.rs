//! Property tests: every strategy respects the mask, and each filter keeps its promise.
//!
//! Inputs are small vocabularies (up to 600 tokens, enough to push top-p past its first sorted
//! prefixes) whose logits come from a handful of values, so ties are common, with a random
//! mask that always leaves at least one token. Reference answers are computed the slow way:
//! sort everything, softmax in `f64`.

use proptest::prelude::*;
use sampler::{SampleError, Sampler, SamplerConfig};

const NEG_INF: f32 = f32::NEG_INFINITY;

/// Logits with ties and masked entries; at least one entry is finite.
fn masked_logits() -> impl Strategy<Value = Vec<f32>> {
    let value = prop_oneof![
        3 => (-8i8..=8).prop_map(|v| f32::from(v) * 0.5),
        2 => -20.0f32..20.0,
        3 => Just(NEG_INF),
    ];
    (
        prop::collection::vec(value, 1..600),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(mut logits, keep)| {
            let i = keep.index(logits.len());
            if logits[i] == NEG_INF {
                logits[i] = 0.0;
            }
            logits
        })
}

/// Logits plus a history of in-range tokens.
fn logits_and_history() -> impl Strategy<Value = (Vec<f32>, Vec<u32>)> {
    masked_logits().prop_flat_map(|logits| {
        let len = logits.len() as u32;
        (Just(logits), prop::collection::vec(0..len, 0..40))
    })
}

/// One configuration per strategy, plus arbitrary mixtures of all knobs.
fn any_config() -> impl Strategy<Value = SamplerConfig> {
    let d = SamplerConfig::default;
    prop_oneof![
        Just(SamplerConfig::greedy()),
        (0.05f32..3.0).prop_map(move |temperature| SamplerConfig { temperature, ..d() }),
        (1u32..50).prop_map(move |top_k| SamplerConfig { top_k, ..d() }),
        (0.01f32..=1.0).prop_map(move |top_p| SamplerConfig { top_p, ..d() }),
        (0.0f32..=1.0).prop_map(move |min_p| SamplerConfig { min_p, ..d() }),
        (0.5f32..2.0, 0u32..64, -2.0f32..2.0, -2.0f32..2.0).prop_map(
            move |(repetition_penalty, repeat_last_n, frequency_penalty, presence_penalty)| {
                SamplerConfig {
                    repetition_penalty,
                    repeat_last_n,
                    frequency_penalty,
                    presence_penalty,
                    ..d()
                }
            }
        ),
        prop::collection::btree_map(0u32..8, -30.0f32..30.0, 0..4)
            .prop_map(move |logit_bias| SamplerConfig { logit_bias, ..d() }),
        mixed_config(),
    ]
}

fn mixed_config() -> impl Strategy<Value = SamplerConfig> {
    (
        prop_oneof![Just(0.0f32), 0.05f32..3.0],
        0u32..50,
        0.01f32..=1.0,
        0.0f32..=1.0,
        0.5f32..2.0,
        0u32..64,
        (-2.0f32..2.0, -2.0f32..2.0),
        prop::collection::btree_map(0u32..8, -30.0f32..30.0, 0..4),
    )
        .prop_map(
            |(
                temperature,
                top_k,
                top_p,
                min_p,
                repetition_penalty,
                repeat_last_n,
                fp,
                logit_bias,
            )| {
                SamplerConfig {
                    temperature,
                    top_k,
                    top_p,
                    min_p,
                    repetition_penalty,
                    repeat_last_n,
                    frequency_penalty: fp.0,
                    presence_penalty: fp.1,
                    logit_bias,
                }
            },
        )
}

/// Token ids sorted best first: higher logit, then lower id. Masked tokens are left out.
fn ranked(logits: &[f32]) -> Vec<usize> {
    let mut ids: Vec<usize> = (0..logits.len()).filter(|&i| logits[i] > NEG_INF).collect();
    ids.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]).then(a.cmp(&b)));
    ids
}

/// Softmax probabilities in `f64` (masked tokens get 0).
fn softmax(logits: &[f32]) -> Vec<f64> {
    let max = logits.iter().copied().fold(NEG_INF, f32::max) as f64;
    let weights: Vec<f64> = logits.iter().map(|&l| (l as f64 - max).exp()).collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

/// Drops logit biases for tokens outside a vocabulary of `len` (those are a separate error).
fn fit(mut config: SamplerConfig, len: usize) -> SamplerConfig {
    config.logit_bias.retain(|&t, _| (t as usize) < len);
    config
}

/// Signed zeros compare equal in the sampler; make the reference see the same values.
fn normalise_zeros(logits: &mut [f32]) {
    for l in logits {
        if *l == 0.0 {
            *l = 0.0;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the knobs, the pick is a token the mask allowed.
    #[test]
    fn picks_stay_inside_the_mask(
        config in any_config(),
        (logits, history) in logits_and_history(),
        seed in any::<u64>(),
    ) {
        let mut sampler = Sampler::new(fit(config, logits.len()), seed).unwrap();
        let mut adjusted = logits.clone();
        let token = sampler.sample(&mut adjusted, &history).unwrap() as usize;
        prop_assert!(token < logits.len());
        prop_assert!(logits[token].is_finite(), "picked masked token {token}");
        prop_assert!(adjusted[token].is_finite());
        for (before, after) in logits.iter().zip(&adjusted) {
            prop_assert_eq!(*before == NEG_INF, *after == NEG_INF, "masking changed");
        }
    }

    /// A fully masked input is an error under every configuration.
    #[test]
    fn all_masked_is_an_error(
        config in any_config(),
        len in 1usize..600,
        seed in any::<u64>(),
    ) {
        let mut sampler = Sampler::new(fit(config, len), seed).unwrap();
        let mut logits = vec![NEG_INF; len];
        prop_assert_eq!(sampler.sample(&mut logits, &[]), Err(SampleError::NoCandidates { len }));
    }

    /// Temperature 0 returns the argmax, the lowest id among equal maxima.
    #[test]
    fn greedy_is_argmax(mut logits in masked_logits()) {
        normalise_zeros(&mut logits);
        let mut sampler = Sampler::new(SamplerConfig::greedy(), 0).unwrap();
        let token = sampler.sample(&mut logits.clone(), &[]).unwrap() as usize;
        prop_assert_eq!(token, ranked(&logits)[0]);
    }

    /// Top-k picks among the k best (ties at the cut go to the lowest ids).
    #[test]
    fn top_k_stays_in_the_k_best(
        mut logits in masked_logits(),
        top_k in 1u32..50,
        temperature in 0.05f32..3.0,
        seed in any::<u64>(),
    ) {
        normalise_zeros(&mut logits);
        let config = SamplerConfig { top_k, temperature, ..SamplerConfig::default() };
        let mut sampler = Sampler::new(config, seed).unwrap();
        let token = sampler.sample(&mut logits.clone(), &[]).unwrap() as usize;
        let rank = ranked(&logits).iter().position(|&t| t == token).unwrap();
        prop_assert!(rank < top_k as usize, "rank {rank} >= k {top_k}");
    }

    /// Top-p picks inside the smallest nucleus: the mass ranked strictly before the pick is
    /// below `top_p` (up to rounding).
    #[test]
    fn top_p_stays_in_the_nucleus(
        mut logits in masked_logits(),
        top_p in 0.01f32..=1.0,
        temperature in 0.05f32..3.0,
        seed in any::<u64>(),
    ) {
        normalise_zeros(&mut logits);
        let config = SamplerConfig { top_p, temperature, ..SamplerConfig::default() };
        let mut sampler = Sampler::new(config, seed).unwrap();
        let token = sampler.sample(&mut logits.clone(), &[]).unwrap() as usize;
        let probs = softmax(&logits);
        let ahead: f64 = ranked(&logits)
            .iter()
            .take_while(|&&t| t != token)
            .map(|&t| probs[t])
            .sum();
        prop_assert!(ahead < f64::from(top_p) + 1e-6, "mass ahead {ahead} >= top_p {top_p}");
    }

    /// Min-p picks tokens at least `min_p` times as likely as the best one (up to rounding).
    #[test]
    fn min_p_stays_above_the_threshold(
        logits in masked_logits(),
        min_p in 0.0f32..=1.0,
        seed in any::<u64>(),
    ) {
        let config = SamplerConfig { min_p, ..SamplerConfig::default() };
        let mut sampler = Sampler::new(config, seed).unwrap();
        let token = sampler.sample(&mut logits.clone(), &[]).unwrap() as usize;
        let probs = softmax(&logits);
        let best = probs.iter().copied().fold(0.0, f64::max);
        prop_assert!(probs[token] >= f64::from(min_p) * best * (1.0 - 1e-4));
    }

    /// The same seed, configuration and inputs give the same sequence.
    #[test]
    fn same_seed_same_sequence(
        config in any_config(),
        steps in prop::collection::vec(masked_logits(), 1..8),
        seed in any::<u64>(),
    ) {
        let shortest = steps.iter().map(Vec::len).min().unwrap_or(0);
        let config = fit(config, shortest);
        let run = || {
            let mut sampler = Sampler::new(config.clone(), seed).unwrap();
            let mut history = Vec::new();
            for logits in &steps {
                let in_range: Vec<u32> =
                    history.iter().copied().filter(|&t| (t as usize) < logits.len()).collect();
                history.push(sampler.sample(&mut logits.clone(), &in_range).unwrap());
            }
            history
        };
        prop_assert_eq!(run(), run());
    }
}
