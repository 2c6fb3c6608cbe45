//! One `Sampler::sample` call per iteration, per strategy, vocabulary size and mask density.
//!
//! Vocabulary sizes are Llama 3's (128,256) and Gemma 3's (262,144). Logits are deterministic
//! pseudo-random values shaped like a language model's (roughly normal with standard deviation
//! 3, so the top-p nucleus holds a few thousand tokens of the full vocabulary). Two mask
//! densities: every token finite, and 1% finite (a pseudo-random 1%, the rest `-inf`), which is
//! typical after a grammar mask. Each iteration gets a fresh copy of the logits (copying is not
//! timed), because the penalties edit the slice in place.
//!
//! Run with `cargo bench -p benches --bench sampler`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use sampler::{Sampler, SamplerConfig};

const VOCABS: [usize; 2] = [128_256, 262_144];

/// SplitMix64 finaliser: a well-mixed 64-bit hash of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A uniform number in [0, 1) derived from `x`.
fn unit(x: u64) -> f32 {
    (mix(x) >> 40) as f32 / (1u64 << 24) as f32
}

/// Logits for `vocab` tokens; one in `every` is finite.
fn logits(vocab: usize, every: u64) -> Vec<f32> {
    (0..vocab as u64)
        .map(|i| {
            if !mix(i ^ 0xA5A5).is_multiple_of(every) {
                return f32::NEG_INFINITY;
            }
            // Irwin–Hall: the sum of 4 uniforms has mean 2 and variance 1/3.
            let z = (unit(4 * i) + unit(4 * i + 1) + unit(4 * i + 2) + unit(4 * i + 3) - 2.0)
                * 3.0f32.sqrt();
            3.0 * z
        })
        .collect()
}

fn strategies() -> Vec<(&'static str, SamplerConfig)> {
    let d = SamplerConfig::default;
    vec![
        ("greedy", SamplerConfig::greedy()),
        (
            "temperature",
            SamplerConfig {
                temperature: 0.8,
                ..d()
            },
        ),
        ("top-k-40", SamplerConfig { top_k: 40, ..d() }),
        ("top-p-0.9", SamplerConfig { top_p: 0.9, ..d() }),
        ("min-p-0.05", SamplerConfig { min_p: 0.05, ..d() }),
        (
            "penalties",
            SamplerConfig {
                repetition_penalty: 1.1,
                repeat_last_n: 64,
                frequency_penalty: 0.5,
                presence_penalty: 0.5,
                ..d()
            },
        ),
    ]
}

fn bench_sample(c: &mut Criterion) {
    let mut group = c.benchmark_group("sample");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for vocab in VOCABS {
        for (density, every) in [("all", 1), ("1pct", 100)] {
            let base = logits(vocab, every);
            let allowed: Vec<u32> = (0..vocab as u32)
                .filter(|&t| base[t as usize].is_finite())
                .collect();
            // 256 generated tokens drawn from the allowed ones.
            let history: Vec<u32> = (0..256u64)
                .map(|i| allowed[(mix(i) % allowed.len() as u64) as usize])
                .collect();
            for (name, config) in strategies() {
                let mut sampler = Sampler::new(config, 42).expect("valid config");
                sampler.reserve(vocab);
                group.bench_function(format!("{name}/{vocab}/{density}"), |b| {
                    b.iter_batched_ref(
                        || base.clone(),
                        |logits| black_box(sampler.sample(logits, &history).expect("sample")),
                        BatchSize::LargeInput,
                    )
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_sample);
criterion_main!(benches);
