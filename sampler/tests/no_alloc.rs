//! Sampling does not allocate once the scratch buffers have grown.
//!
//! This test binary installs a global allocator that counts the allocations made by the
//! current thread (a thread-local counter, so the test harness's other threads do not
//! interfere), then samples 262,144-entry logits with every strategy and both mask densities.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sampler::{Sampler, SamplerConfig};

/// Forwards to the system allocator and counts allocations and reallocations per thread.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    // `try_with`: the counter may already be gone while the thread shuts down.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the counter is a const-initialised thread-local `Cell` that never
// allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

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
    let before = allocations();
    for _ in 0..steps {
        scratch.copy_from_slice(base);
        let token = sampler.sample(&mut scratch, &history).expect("sample");
        history.push(token);
    }
    allocations() - before
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
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 64]);
    assert!(allocations() > before);
    drop(v);
}
