//! Seeded, allocation-free token sampling over masked logits.
//!
//! This crate turns one step of model output, a slice of logits with one entry per token id,
//! into one token id. It is built for constrained decoding: a grammar mask has already set every
//! disallowed token to `-inf`, often leaving only a handful of the 128k–262k entries finite, and
//! the sampler must pick among the survivors quickly, reproducibly and without ever picking a
//! masked token. It knows nothing of grammars, vocabularies or models: it sees `f32` logits and
//! `u32` token ids, nothing else.
//!
//! # Example
//!
//! ```
//! use sampler::{SampleError, Sampler, SamplerConfig};
//!
//! let config = SamplerConfig {
//!     temperature: 0.8,
//!     top_k: 40,
//!     top_p: 0.95,
//!     repetition_penalty: 1.1,
//!     ..SamplerConfig::default()
//! };
//! let mut sampler = Sampler::new(config, 42)?;
//!
//! let mut history = Vec::new();
//! for _step in 0..3 {
//!     // What a model and a grammar mask would produce: tokens 1 and 3 are allowed.
//!     let mut logits = vec![f32::NEG_INFINITY, 2.0, f32::NEG_INFINITY, 1.5];
//!     let token = sampler.sample(&mut logits, &history)?;
//!     assert!(token == 1 || token == 3, "never a masked token");
//!     history.push(token);
//! }
//!
//! // The same seed replays the same picks.
//! let mut replay = Sampler::new(sampler.config().clone(), 42)?;
//! let mut again = Vec::new();
//! for _step in 0..3 {
//!     let mut logits = vec![f32::NEG_INFINITY, 2.0, f32::NEG_INFINITY, 1.5];
//!     again.push(replay.sample(&mut logits, &again)?);
//! }
//! assert_eq!(again, history);
//!
//! // A fully masked step is an error, never a silent pick.
//! let mut dead = vec![f32::NEG_INFINITY; 4];
//! assert_eq!(sampler.sample(&mut dead, &history), Err(SampleError::NoCandidates { len: 4 }));
//!
//! // Greedy: the highest logit, lowest id on ties, no randomness.
//! let mut greedy = Sampler::new(SamplerConfig::greedy(), 0)?;
//! assert_eq!(greedy.sample(&mut [0.5, 3.0, 3.0], &[])?, 1);
//! # Ok::<(), SampleError>(())
//! ```
//!
//! # Order of application
//!
//! One call to [`Sampler::sample`] applies the knobs of [`SamplerConfig`] in this order (the
//! order of llama.cpp's default chain, temperature last):
//!
//! 1. **Logit bias**: `logit[t] += bias[t]`.
//! 2. **Repetition penalty** over the distinct tokens among the last `repeat_last_n` history
//!    tokens: a positive logit is divided by the penalty, a non-positive one multiplied by it.
//! 3. **Frequency and presence penalties** over the whole history:
//!    `logit[t] -= count[t] * frequency_penalty + (count[t] > 0) * presence_penalty`.
//! 4. **Validation**: a NaN or `+inf` entry is an error; if every entry is `-inf` the call fails
//!    with [`SampleError::NoCandidates`].
//! 5. **Greedy** (`temperature == 0`): return the highest logit, lowest id among equals. The
//!    filters below would always keep that token, so they are skipped.
//! 6. **Top-k**: keep the `top_k` best tokens.
//! 7. **Top-p**: keep the smallest set of best tokens whose softmax mass (at temperature 1,
//!    over the tokens top-k kept) reaches `top_p`.
//! 8. **Min-p**: keep tokens whose probability is at least `min_p` times the best one's.
//! 9. **Temperature**: divide the surviving logits by `temperature`.
//! 10. **Draw**: one uniform number in `[0, 1)` picks a token by walking the cumulative softmax
//!     weights of the survivors in id order.
//!
//! Steps 1–3 edit the caller's slice in place (it holds the adjusted logits afterwards); the
//! rest works on the sampler's scratch. "Best" always means the higher logit, and among equal
//! logits the lower id, so the sets kept by top-k and top-p are fully determined by the input.
//! Every filter keeps at least the best token.
//!
//! # Reproducibility
//!
//! The RNG is ChaCha8 ([`rand_chacha::ChaCha8Rng`]) seeded with `seed_from_u64`, whose output
//! its authors promise not to change between versions or platforms. Nothing calls the
//! platform's math library, whose `exp` may differ in the last bit from one system to another:
//! the exponential is the crate's own range reduction and polynomial built from IEEE-754
//! additions and multiplications only (relative error below `1e-6`, bit-identical everywhere),
//! and the one logarithm (of `min_p`, at construction) comes from the pure-Rust `libm` crate.
//! Sums run in `f64` in a fixed order, and the draw walks the survivors in id order. So the
//! same seed, configuration and inputs give the same tokens on every run and platform; pinned
//! sequences in the tests guard this. A greedy call draws no random number; every other
//! successful call draws exactly one.
//!
//! # Cost model
//!
//! With `V` logits of which `m` are finite:
//!
//! * Bias and penalties: proportional to the bias map and the history, not to `V`.
//! * Validation: one vectorised pass over the `V` logits (maximum, NaN/`+inf` check, count of
//!   finite entries). Greedy then only needs the position of the maximum.
//! * Collecting candidates: a copy when nothing is masked; otherwise a pass that skips blocks
//!   of 16 masked logits and compacts the rest into parallel id/score arrays.
//! * Top-k: one pass over the `m` candidates with a rising threshold, selections on a buffer of
//!   at most `2k`; only the `k` survivors are sorted (back into id order).
//! * Top-p: one exponential per candidate, a histogram of probability mass by distance from the
//!   best logit (1/32 nat buckets), then a partial ranking of the single bucket where the mass
//!   crosses `top_p` (select and sort prefixes of 64, 128, … of that bucket only).
//! * Min-p: a threshold in logit space. Temperature and draw: one exponential per survivor, a
//!   sum, and a walk over block sums of 256 weights followed by one block.
//! * Memory: about 26 bytes of scratch per vocabulary entry (7 MB for 262,144), grown once (on
//!   the first call, or up front by [`Sampler::reserve`]); after that a call does not allocate.
//!   The penalties use a vocabulary-sized counter array instead of a hash map.
//!
//! Benchmarks: `cargo bench -p benches --bench sampler`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod error;
mod math;
mod penalties;
mod sampler;

pub use config::SamplerConfig;
pub use error::SampleError;
pub use sampler::Sampler;
