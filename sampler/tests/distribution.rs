//! Statistical checks of the random draw, with fixed seeds so every run is identical.
//!
//! The chi-square bounds are generous (far beyond the 99.99th percentile for the degrees of
//! freedom involved): they catch a wrong distribution, not bad luck, and since the seeds are
//! fixed the outcome never changes from run to run.

use sampler::{Sampler, SamplerConfig};

const NEG_INF: f32 = f32::NEG_INFINITY;

/// Pearson's chi-square statistic of `counts` against `expected` probabilities.
fn chi_square(counts: &[u64], expected: &[f64]) -> f64 {
    let n: u64 = counts.iter().sum();
    counts
        .iter()
        .zip(expected)
        .map(|(&c, &p)| {
            let e = p * n as f64;
            (c as f64 - e).powi(2) / e
        })
        .sum()
}

/// Draws `n` tokens from `logits` and counts them per id.
fn histogram(config: SamplerConfig, seed: u64, logits: &[f32], n: usize) -> Vec<u64> {
    let mut sampler = Sampler::new(config, seed).unwrap();
    let mut counts = vec![0u64; logits.len()];
    let mut scratch = logits.to_vec();
    for _ in 0..n {
        scratch.copy_from_slice(logits);
        counts[sampler.sample(&mut scratch, &[]).unwrap() as usize] += 1;
    }
    counts
}

/// The allowed ids of an interleaved mask: `[p0, masked, p1, masked, ...]`.
fn interleaved(probs: &[f64]) -> Vec<f32> {
    probs
        .iter()
        .flat_map(|&p| [(p.ln() + 3.0) as f32, NEG_INF])
        .collect()
}

fn allowed(counts: &[u64]) -> Vec<u64> {
    assert!(
        counts.iter().skip(1).step_by(2).all(|&c| c == 0),
        "a masked token was drawn"
    );
    counts.iter().step_by(2).copied().collect()
}

/// Temperature 1 follows the softmax. 3 degrees of freedom: P(chi2 > 30) is about 1e-6.
#[test]
fn temperature_one_follows_softmax() {
    let probs = [0.1, 0.2, 0.3, 0.4];
    for seed in [1, 2, 3] {
        let counts = allowed(&histogram(
            SamplerConfig::default(),
            seed,
            &interleaved(&probs),
            40_000,
        ));
        let chi2 = chi_square(&counts, &probs);
        assert!(chi2 < 30.0, "seed {seed}: chi2 {chi2}, counts {counts:?}");
    }
}

/// Temperature 0.5 squares the probabilities before normalising: 1, 4, 9, 16 over 30.
#[test]
fn temperature_sharpens_as_expected() {
    let probs = [0.1, 0.2, 0.3, 0.4];
    let expected: Vec<f64> = [1.0, 4.0, 9.0, 16.0].iter().map(|w| w / 30.0).collect();
    let config = SamplerConfig {
        temperature: 0.5,
        ..SamplerConfig::default()
    };
    let counts = allowed(&histogram(config, 11, &interleaved(&probs), 40_000));
    let chi2 = chi_square(&counts, &expected);
    assert!(chi2 < 30.0, "chi2 {chi2}, counts {counts:?}");
}

/// Top-p 0.6 over 0.1, 0.2, 0.3, 0.4 keeps 0.4 and 0.3 and renormalises them to 4/7 and 3/7.
/// 1 degree of freedom: P(chi2 > 25) is below 1e-6.
#[test]
fn top_p_renormalises_over_the_nucleus() {
    let probs = [0.1, 0.2, 0.3, 0.4];
    let config = SamplerConfig {
        top_p: 0.6,
        ..SamplerConfig::default()
    };
    let counts = allowed(&histogram(config, 5, &interleaved(&probs), 20_000));
    assert_eq!(&counts[..2], [0, 0]);
    let chi2 = chi_square(&counts[2..], &[3.0 / 7.0, 4.0 / 7.0]);
    assert!(chi2 < 25.0, "chi2 {chi2}, counts {counts:?}");
}

/// A uniform distribution over many tokens: 1023 degrees of freedom, mean 1023 and standard
/// deviation about 45; 1400 is more than 8 deviations out.
#[test]
fn uniform_over_a_large_vocabulary() {
    let logits = vec![0.0f32; 1024];
    let counts = histogram(SamplerConfig::default(), 99, &logits, 200_000);
    let chi2 = chi_square(&counts, &vec![1.0 / 1024.0; 1024]);
    assert!(chi2 < 1400.0, "chi2 {chi2}");
}

/// Different seeds give different streams: over a fixed set of 64 seeds, all 64 sequences of 16
/// draws from 1000 equally likely tokens are distinct, and so are most first draws.
#[test]
fn different_seeds_usually_differ() {
    let logits = vec![0.0f32; 1000];
    let mut sequences = Vec::new();
    for seed in 0..64u64 {
        let mut sampler = Sampler::new(SamplerConfig::default(), seed).unwrap();
        let seq: Vec<u32> = (0..16)
            .map(|_| sampler.sample(&mut logits.clone(), &[]).unwrap())
            .collect();
        sequences.push(seq);
    }
    let mut distinct = sequences.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), sequences.len());
    let mut firsts: Vec<u32> = sequences.iter().map(|s| s[0]).collect();
    firsts.sort();
    firsts.dedup();
    assert!(
        firsts.len() >= 56,
        "only {} distinct first draws",
        firsts.len()
    );
}

/// Pinned outputs: a change of RNG, of its seeding, of the math functions or of the pipeline
/// shows up here. The same values must come out on every platform.
#[test]
fn pinned_sequences() {
    let logits: Vec<f32> = (0..500u32)
        .map(|i| {
            if i % 7 == 3 {
                NEG_INF
            } else {
                ((i * 37 % 101) as f32 - 50.0) / 10.0
            }
        })
        .collect();
    let run = |config: SamplerConfig| -> Vec<u32> {
        let mut sampler = Sampler::new(config, 2024).unwrap();
        let mut history = Vec::new();
        for _ in 0..12 {
            let token = sampler.sample(&mut logits.clone(), &history).unwrap();
            history.push(token);
        }
        history
    };
    let plain = run(SamplerConfig::default());
    let mixed = run(SamplerConfig {
        temperature: 0.7,
        top_k: 40,
        top_p: 0.9,
        min_p: 0.05,
        repetition_penalty: 1.3,
        repeat_last_n: 8,
        frequency_penalty: 0.4,
        presence_penalty: 0.2,
        logit_bias: [(5, 2.0), (6, -1.0)].into(),
    });
    assert_eq!(plain, PINNED_PLAIN, "plain: {plain:?}");
    assert_eq!(mixed, PINNED_MIXED, "mixed: {mixed:?}");
}

const PINNED_PLAIN: [u32; 12] = [79, 494, 341, 453, 349, 240, 19, 158, 233, 434, 474, 327];
const PINNED_MIXED: [u32; 12] = [49, 494, 333, 442, 322, 191, 5, 131, 232, 434, 464, 292];
