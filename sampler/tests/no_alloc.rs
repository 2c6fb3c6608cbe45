//! Sampling does not allocate once the scratch buffers have grown.
//!
//! The allocations are those of the current thread (`allocation_counter`, whose counting
//! global allocator this test binary uses), so the test harness's other threads do not
//! interfere. The test samples 262,144-entry logits with every strategy and both mask densities.

use sampler::{Sampler, SamplerConfig};

const VOCAB: usize = 262_144;

/// Every strategy on its own, and all knobs at once.
fn strategies() -> Vec<(&'static str, SamplerConfig)> {
    let d = SamplerConfig::default;
    let penalties = SamplerConfig {
        repetition_penalty: 1.1,
        repeat_last_n: 64,
        frequency_penalty: 0.5,
        presence_penalty: 0.5,
        logit_bias: [(3, 1.0), (70_000, -2.0), (262_143, 0.5)].into(),
        ..d()
    };
    vec![
        ("greedy", SamplerConfig::greedy()),
        (
            "temperature",
            SamplerConfig {
                temperature: 0.8,
                ..d()
            },
        ),
        ("top-k", SamplerConfig { top_k: 40, ..d() }),
        ("top-p", SamplerConfig { top_p: 0.9, ..d() }),
        ("min-p", SamplerConfig { min_p: 0.05, ..d() }),
        ("penalties", penalties.clone()),
        (
            "everything",
            SamplerConfig {
                temperature: 0.7,
                top_k: 40,
                top_p: 0.9,
                min_p: 0.05,
                ..penalties
            },
        ),
    ]
}

/// Deterministic logits in roughly [-8, 8]; with `every > 1` only each `every`-th is finite.
fn logits(every: usize) -> Vec<f32> {
    (0..VOCAB)
        .map(|i| {
            if i % every == 0 {
                let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
                (h % 1601) as f32 / 100.0 - 8.0
            } else {
                f32::NEG_INFINITY
            }
        })
        .collect()
}

/// Runs `steps` samples, the history growing by one token each time, with every buffer the
/// test itself needs allocated up front; returns the allocations made meanwhile.
fn allocations_while_sampling(sampler: &mut Sampler, base: &[f32], steps: usize) -> u64 {
    let mut scratch = base.to_vec();
    let mut history = Vec::with_capacity(steps);
    let info = allocation_counter::measure(|| {
        for _ in 0..steps {
            scratch.copy_from_slice(base);
            let token = sampler.sample(&mut scratch, &history).expect("sample");
            history.push(token);
        }
    });
    info.count_total
}

#[test]
fn reserved_sampler_never_allocates() {
    for every in [1, 100] {
        let base = logits(every);
        for (name, config) in strategies() {
            let mut sampler = Sampler::new(config, 3).unwrap();
            sampler.reserve(VOCAB);
            let n = allocations_while_sampling(&mut sampler, &base, 20);
            assert_eq!(n, 0, "{name}, 1 in {every} finite: {n} allocations");
        }
    }
}

#[test]
fn only_the_first_call_grows_the_buffers() {
    for every in [1, 100] {
        let base = logits(every);
        for (name, config) in strategies() {
            let mut sampler = Sampler::new(config, 3).unwrap();
            let first = allocations_while_sampling(&mut sampler, &base, 1);
            // One per vocabulary-sized buffer: candidate ids, scores and weights, the selection
            // buffer, the draw's block sums, the top-p buckets and the penalty counters.
            assert!(first <= 7, "{name}: first call made {first} allocations");
            let n = allocations_while_sampling(&mut sampler, &base, 20);
            assert_eq!(
                n, 0,
                "{name}, 1 in {every} finite: {n} allocations after the first call"
            );
        }
    }
}

/// The counter is live: a deliberate allocation is seen (so the zeros above mean something).
#[test]
fn the_counter_sees_allocations() {
    let info = allocation_counter::measure(|| {
        drop(std::hint::black_box(vec![1u8; 64]));
    });
    assert!(info.count_total > 0);
}
