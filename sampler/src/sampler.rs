//! The [`Sampler`]: a validated configuration, a seeded RNG and reusable scratch buffers.
//!
//! One call to [`Sampler::sample`] runs the pipeline described in the [crate docs](crate). The
//! stochastic part works on a compact list of candidates (the finite logits, in id order, as
//! parallel `ids` / `scores` arrays), so a grammar mask that leaves a few thousand tokens of a
//! 262,144-entry vocabulary costs one linear scan plus work proportional to the survivors; the
//! scan skips blocks of 16 masked logits after one check, and copies an unmasked slice
//! wholesale.
//!
//! Filters never sort the whole list. Top-k scans once with a rising threshold, keeping at most
//! `2k` contenders in a buffer it trims by selection. Top-p histograms the probability mass by
//! distance from the best logit (1/32 nat per bucket), which settles every token except those
//! in the bucket where the mass crosses `top_p`; only that bucket is ranked, by selecting and
//! sorting growing prefixes. Min-p is a threshold. After every filter the survivors are back in
//! id order, so which token a random number maps to depends only on the surviving set, never on
//! how a selection happened to permute it.

use std::cmp::Ordering;
use std::fmt;

use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};

use crate::SampleError;
use crate::SamplerConfig;
use crate::math::{self, Summary};
use crate::penalties;

/// Logits checked at once by the scan; a block of only `-inf` is skipped.
const SCAN_BLOCK: usize = 16;

/// Weights per partial sum of the draw: the draw walks block sums, then one block.
const DRAW_BLOCK: usize = 256;

/// Top-p histogram resolution and size: 32 buckets per nat of distance from the best logit,
/// 1024 buckets, so everything more than 32 nats below the best shares the last bucket.
const BUCKETS_PER_NAT: f32 = 32.0;
const BUCKETS: usize = 1024;

/// Size of the first prefix top-p ranks inside its boundary bucket; it doubles as needed.
const FIRST_PREFIX: usize = 64;

/// One finite logit, in the selection buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Candidate {
    id: u32,
    score: f32,
}

/// "Better first": higher score, then lower id. A strict total order on finite scores, so the
/// sets kept by top-k and top-p are unique.
fn rank(a: &Candidate, b: &Candidate) -> Ordering {
    b.score
        .partial_cmp(&a.score)
        .unwrap_or(Ordering::Equal)
        .then(a.id.cmp(&b.id))
}

/// Whether `(score, id)` ranks at or before `cutoff`.
#[inline]
fn at_or_before(score: f32, id: u32, cutoff: Candidate) -> bool {
    // Non-short-circuit operators keep this free of branches.
    (score > cutoff.score) | ((score == cutoff.score) & (id <= cutoff.id))
}

/// What the deterministic part of the pipeline left to do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Prepared {
    /// Greedy: this token, no draw needed.
    Token(u32),
    /// The first `n` candidates survive, in id order, with their weights computed.
    Candidates(usize),
}

/// Seeded token sampler with reusable scratch space.
///
/// Build one per generation stream with [`Sampler::new`] and call [`Sampler::sample`] once per
/// token. The sampler owns its RNG (ChaCha8, seeded from a `u64`) and every buffer it needs, so
/// once the buffers have grown to the vocabulary size (on the first call, or up front with
/// [`Sampler::reserve`]), sampling does not allocate.
///
/// Cloning a sampler clones its RNG state: the clone continues the same random stream.
#[derive(Clone)]
pub struct Sampler {
    config: SamplerConfig,
    /// `config.logit_bias` as a flat list sorted by token id.
    bias: Vec<(u32, f32)>,
    /// `ln(config.min_p)`; min-p keeps `logit - max >= ln_min_p`.
    ln_min_p: f32,
    seed: u64,
    rng: ChaCha8Rng,
    /// Candidate ids, scores and weights: as long as the largest logits slice seen; the first
    /// `n` entries are live.
    ids: Vec<u32>,
    scores: Vec<f32>,
    weights: Vec<f32>,
    /// Selection scratch for top-k and top-p; capacity of the largest logits slice seen.
    work: Vec<Candidate>,
    /// Partial sums of `DRAW_BLOCK` weights each.
    block_sums: Vec<f64>,
    /// Top-p distance bucket of each candidate.
    buckets: Vec<u16>,
    /// Top-p probability mass per distance bucket.
    bucket_mass: Vec<f64>,
    /// Per-token counters for the penalties; all zeros between calls.
    counts: Vec<u32>,
}

impl fmt::Debug for Sampler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sampler")
            .field("config", &self.config)
            .field("seed", &self.seed)
            .field("scratch_len", &self.ids.len())
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// Validates `config` and seeds the RNG with `seed`.
    ///
    /// Fails with [`SampleError::InvalidConfig`] or [`SampleError::InvalidLogitBias`] when a knob
    /// is out of its domain. Vocabulary-sized buffers start empty; see [`Sampler::reserve`].
    pub fn new(config: SamplerConfig, seed: u64) -> Result<Self, SampleError> {
        config.validate()?;
        Ok(Self {
            bias: config.logit_bias.iter().map(|(&t, &b)| (t, b)).collect(),
            ln_min_p: libm::logf(config.min_p),
            config,
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
            ids: Vec::new(),
            scores: Vec::new(),
            weights: Vec::new(),
            work: Vec::new(),
            block_sums: Vec::new(),
            buckets: Vec::new(),
            bucket_mass: vec![0.0; BUCKETS],
            counts: Vec::new(),
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &SamplerConfig {
        &self.config
    }

    /// The seed the RNG was last seeded with.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Replaces the configuration, keeping the RNG state and the scratch buffers.
    ///
    /// On error the sampler keeps its previous configuration.
    pub fn set_config(&mut self, config: SamplerConfig) -> Result<(), SampleError> {
        config.validate()?;
        self.bias.clear();
        self.bias
            .extend(config.logit_bias.iter().map(|(&t, &b)| (t, b)));
        self.ln_min_p = libm::logf(config.min_p);
        self.config = config;
        Ok(())
    }

    /// Restarts the random stream from `seed`, keeping the configuration and the buffers.
    pub fn reseed(&mut self, seed: u64) {
        self.seed = seed;
        self.rng = ChaCha8Rng::seed_from_u64(seed);
    }

    /// Grows the scratch buffers for logits slices of up to `vocab_len` entries, so that no later
    /// call to [`Sampler::sample`] with such a slice allocates (not even the first).
    pub fn reserve(&mut self, vocab_len: usize) {
        self.grow(vocab_len);
        if self.counts.len() < vocab_len {
            self.counts.resize(vocab_len, 0);
        }
    }

    /// Grows every candidate buffer to `len` (no-op when already large enough).
    fn grow(&mut self, len: usize) {
        if self.ids.len() < len {
            self.ids.resize(len, 0);
            self.scores.resize(len, 0.0);
            self.weights.resize(len, 0.0);
            self.buckets.resize(len, 0);
        }
        if self.work.capacity() < len {
            self.work.clear();
            self.work.reserve(len);
        }
        let blocks = len.div_ceil(DRAW_BLOCK);
        if self.block_sums.len() < blocks {
            self.block_sums.resize(blocks, 0.0);
        }
    }

    /// Picks one token id from `logits`.
    ///
    /// `logits` holds one entry per token id; masked tokens are `-inf`, every other entry must
    /// be finite. `history` lists the tokens generated so far, oldest first; the penalties read
    /// it (the repetition penalty only its last `repeat_last_n` entries) and nothing else does.
    ///
    /// The logit bias and the penalties are applied to `logits` in place: on return the slice
    /// holds the adjusted logits, which is what a caller reporting log-probabilities wants.
    /// Filters and temperature work on the sampler's own scratch and leave the slice alone.
    ///
    /// A greedy configuration draws no random number; any other draws exactly one 64-bit number
    /// per successful call, so the `i`-th pick of a seeded stream depends only on the seed, `i`
    /// and the `i`-th inputs.
    ///
    /// # Errors
    ///
    /// [`SampleError::EmptyLogits`], [`SampleError::TooManyLogits`],
    /// [`SampleError::HistoryTokenOutOfRange`] and [`SampleError::BiasTokenOutOfRange`] are
    /// reported before `logits` is touched. [`SampleError::InvalidLogit`] (a NaN or `+inf`
    /// entry) and [`SampleError::NoCandidates`] (every entry `-inf`) are found after the bias
    /// and penalties have been applied.
    pub fn sample(&mut self, logits: &mut [f32], history: &[u32]) -> Result<u32, SampleError> {
        match self.prepare(logits, history)? {
            Prepared::Token(token) => Ok(token),
            Prepared::Candidates(n) => Ok(self.draw(n)),
        }
    }

    /// Everything up to (not including) the random draw.
    pub(crate) fn prepare(
        &mut self,
        logits: &mut [f32],
        history: &[u32],
    ) -> Result<Prepared, SampleError> {
        let len = logits.len();
        if len == 0 {
            return Err(SampleError::EmptyLogits);
        }
        if u32::try_from(len).is_err() {
            return Err(SampleError::TooManyLogits { len });
        }
        penalties::check_history(history, len)?;
        if let Some(&(token, _)) = self.bias.last()
            && token as usize >= len
        {
            return Err(SampleError::BiasTokenOutOfRange { token, len });
        }

        penalties::apply_logit_bias(logits, &self.bias);
        self.apply_penalties(logits, history);

        if self.config.is_greedy() {
            return argmax(logits).map(Prepared::Token);
        }

        let mut n = self.collect(logits)?;
        let top_k = usize::try_from(self.config.top_k).unwrap_or(usize::MAX);
        if top_k > 0 && top_k < n {
            n = self.top_k(n, top_k);
        }
        if n > 1 && self.config.top_p < 1.0 {
            n = self.top_p(n);
        }
        if n > 1 && self.config.min_p > 0.0 {
            n = self.min_p(n);
        }
        self.weigh(n);
        Ok(Prepared::Candidates(n))
    }

    /// Steps 2 and 3 of the pipeline; `history` has been checked against `logits.len()`.
    fn apply_penalties(&mut self, logits: &mut [f32], history: &[u32]) {
        let config = &self.config;
        if !config.has_repetition_penalty() && !config.has_count_penalties() {
            return;
        }
        if self.counts.len() < logits.len() {
            self.counts.resize(logits.len(), 0);
        }
        if config.has_repetition_penalty() {
            let last_n = usize::try_from(config.repeat_last_n).unwrap_or(usize::MAX);
            let window = &history[history.len().saturating_sub(last_n)..];
            penalties::apply_repetition_penalty(
                logits,
                window,
                config.repetition_penalty,
                &mut self.counts,
            );
        }
        if config.has_count_penalties() {
            penalties::apply_count_penalties(
                logits,
                history,
                config.frequency_penalty,
                config.presence_penalty,
                &mut self.counts,
            );
        }
    }

    /// Copies the finite logits into the candidate arrays, in id order; returns how many.
    fn collect(&mut self, logits: &[f32]) -> Result<usize, SampleError> {
        self.grow(logits.len());
        let ids = &mut self.ids[..logits.len()];
        let scores = &mut self.scores[..logits.len()];
        let summary = math::summarize(logits);
        if summary.invalid {
            return Err(first_invalid(logits));
        }
        if summary.max == f32::NEG_INFINITY {
            return Err(SampleError::NoCandidates { len: logits.len() });
        }
        if summary.finite == logits.len() {
            // Nothing masked: copy everything.
            for (slot, id) in ids.iter_mut().zip(0u32..) {
                *slot = id;
            }
            scores.copy_from_slice(logits);
            return Ok(logits.len());
        }
        let mut n = 0;
        for (block, start) in logits.chunks(SCAN_BLOCK).zip((0u32..).step_by(SCAN_BLOCK)) {
            if !math::any_finite(block) {
                continue;
            }
            // Branch-free compaction: every entry is written at the next free slot, which is
            // claimed only when the entry is finite. The slot never passes the entry's index.
            for (&score, id) in block.iter().zip(start..) {
                ids[n] = id;
                scores[n] = score;
                n += usize::from(score > f32::NEG_INFINITY);
            }
        }
        debug_assert_eq!(n, summary.finite);
        Ok(n)
    }

    /// Keeps the `k` best of the first `n` candidates (`0 < k < n`); returns `k`.
    ///
    /// One pass with a threshold: a candidate enters the buffer only if it beats the current
    /// k-th best; when the buffer reaches `2k` it is cut back to the `k` best by selection.
    /// Candidates arrive in id order, so one that merely ties the threshold ranks after it.
    fn top_k(&mut self, n: usize, k: usize) -> usize {
        let capacity = k.saturating_mul(2).min(n);
        self.work.clear();
        let mut threshold = f32::NEG_INFINITY;
        for (&id, &score) in self.ids[..n].iter().zip(&self.scores[..n]) {
            if score > threshold {
                self.work.push(Candidate { id, score });
                if self.work.len() == capacity {
                    self.work.select_nth_unstable_by(k - 1, rank);
                    threshold = self.work[k - 1].score;
                    self.work.truncate(k);
                }
            }
        }
        // The buffer holds at least `k` entries: all of the first `capacity > k` candidates
        // enter it, and a cut leaves exactly `k`.
        self.work.select_nth_unstable_by(k - 1, rank);
        let best = &mut self.work[..k];
        best.sort_unstable_by_key(|c| c.id);
        for ((id, score), c) in self.ids.iter_mut().zip(&mut self.scores).zip(best.iter()) {
            *id = c.id;
            *score = c.score;
        }
        k
    }

    /// Keeps the smallest rank prefix of the first `n` candidates whose softmax mass reaches
    /// `top_p`; returns its length.
    fn top_p(&mut self, n: usize) -> usize {
        let ids = &self.ids[..n];
        let scores = &self.scores[..n];
        let weights = &mut self.weights[..n];
        let buckets = &mut self.buckets[..n];
        let max = math::max(scores);
        for ((w, b), &score) in weights.iter_mut().zip(buckets.iter_mut()).zip(scores) {
            *w = math::exp_nonpositive(score - max);
            *b = bucket(max - score);
        }
        let target = f64::from(self.config.top_p) * math::sum(weights);

        let mass = &mut self.bucket_mass[..];
        mass.fill(0.0);
        for (&b, &w) in buckets.iter().zip(weights.iter()) {
            mass[usize::from(b)] += f64::from(w);
        }

        // Buckets run from the best logits down. Skip whole buckets while the target is out of
        // reach; rank the members of the bucket where it is crossed.
        let mut cumulative = 0.0f64;
        let mut cutoff = None;
        for (b, &bucket_mass) in (0u16..).zip(mass.iter()) {
            if usize::from(b) + 1 < BUCKETS && cumulative + bucket_mass < target {
                cumulative += bucket_mass;
                continue;
            }
            self.work.clear();
            for ((&id, &score), _) in ids
                .iter()
                .zip(scores)
                .zip(buckets.iter())
                .filter(|(_, x)| **x == b)
            {
                self.work.push(Candidate { id, score });
            }
            // If rounding leaves the walk short of the target, the next bucket continues it.
            if let Some(c) = crossing(&mut self.work, max, target, &mut cumulative) {
                cutoff = Some(c);
                break;
            }
        }
        match cutoff {
            Some(cutoff) => self.keep_up_to(n, cutoff),
            // The target was never reached (rounding at top_p near 1): keep everything.
            None => n,
        }
    }

    /// Keeps the candidates whose probability is at least `min_p` times the largest.
    fn min_p(&mut self, n: usize) -> usize {
        let max = math::max(&self.scores[..n]);
        let threshold = self.ln_min_p;
        self.retain(n, |score, _| score - max >= threshold)
    }

    /// Keeps, in id order, the first `n` candidates that rank at or before `cutoff`.
    fn keep_up_to(&mut self, n: usize, cutoff: Candidate) -> usize {
        self.retain(n, |score, id| at_or_before(score, id, cutoff))
    }

    /// Keeps, in id order, those of the first `n` candidates for which `keep(score, id)` holds;
    /// returns how many.
    fn retain(&mut self, n: usize, keep: impl Fn(f32, u32) -> bool) -> usize {
        let ids = &mut self.ids[..n];
        let scores = &mut self.scores[..n];
        let mut kept = 0;
        let mut start = 0;
        while start < n {
            let end = (start + SCAN_BLOCK).min(n);
            // Filters usually keep few: skip blocks where nothing is kept.
            if (start..end).fold(false, |any, i| any | keep(scores[i], ids[i])) {
                // Branch-free compaction, as in `collect`: `kept <= i` throughout.
                for i in start..end {
                    let (id, score) = (ids[i], scores[i]);
                    ids[kept] = id;
                    scores[kept] = score;
                    kept += usize::from(keep(score, id));
                }
            }
            start = end;
        }
        kept
    }

    /// Applies the temperature: the weight of each of the first `n` candidates becomes
    /// `exp((logit - max) / temperature)` (the best gets 1). Also fills the block sums.
    fn weigh(&mut self, n: usize) {
        let scores = &self.scores[..n];
        let weights = &mut self.weights[..n];
        math::exp_shifted(scores, math::max(scores), self.config.temperature, weights);
        for (sum, block) in self.block_sums.iter_mut().zip(weights.chunks(DRAW_BLOCK)) {
            *sum = math::sum(block);
        }
    }

    /// Draws one uniform number and walks the cumulative weights of the first `n` candidates,
    /// block sums first, then inside the block where the target falls.
    pub(crate) fn draw(&mut self, n: usize) -> u32 {
        // 53 random bits scaled into [0, 1): every value is an exact multiple of 2^-53.
        let u = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
        let ids = &self.ids[..n];
        let weights = &self.weights[..n];
        let block_sums = &self.block_sums[..n.div_ceil(DRAW_BLOCK)];
        let total: f64 = block_sums.iter().sum();
        let target = u * total;

        let mut cumulative = 0.0f64;
        let mut block = block_sums.len() - 1;
        for (b, &s) in block_sums.iter().enumerate() {
            if cumulative + s > target {
                block = b;
                break;
            }
            cumulative += s;
        }
        // Inside the block. If rounding keeps the walk at or below the target (or `u * total`
        // rounded up to `total`), the block's last token with any weight takes it.
        let start = block * DRAW_BLOCK;
        let end = (start + DRAW_BLOCK).min(n);
        let mut last_positive = None;
        for (&id, &w) in ids[start..end].iter().zip(&weights[start..end]) {
            if w > 0.0 {
                cumulative += f64::from(w);
                if cumulative > target {
                    return id;
                }
                last_positive = Some(id);
            }
        }
        // The best candidate has weight 1, so some token has positive weight; when the chosen
        // block has none (only possible when rounding pushed the walk past the last block that
        // does), take the last positive-weight token overall.
        last_positive
            .or_else(|| {
                ids.iter()
                    .zip(weights)
                    .rev()
                    .find(|(_, w)| **w > 0.0)
                    .map(|(id, _)| *id)
            })
            .unwrap_or(ids[0])
    }

    /// The surviving `(id, weight)` pairs after `prepare` returned `Candidates(n)`.
    #[cfg(test)]
    pub(crate) fn survivors(&self, n: usize) -> Vec<(u32, f32)> {
        self.ids[..n]
            .iter()
            .copied()
            .zip(self.weights[..n].iter().copied())
            .collect()
    }
}

/// The top-p histogram bucket of a candidate `gap >= 0` nats below the best.
#[inline]
fn bucket(gap: f32) -> u16 {
    const LAST: u16 = (BUCKETS - 1) as u16;
    let b = gap * BUCKETS_PER_NAT;
    // `as` truncates, which is the floor for the non-negative `b`.
    if b < f32::from(LAST) { b as u16 } else { LAST }
}

/// Walks `members` best first, adding `exp(score - max)` to `cumulative`, and returns the first
/// member at which `cumulative` reaches `target`.
///
/// Only as much of `members` is ranked as the walk needs: the best 64 are selected and sorted,
/// then the next 64, 128, 256, ... .
fn crossing(
    members: &mut [Candidate],
    max: f32,
    target: f64,
    cumulative: &mut f64,
) -> Option<Candidate> {
    let n = members.len();
    let mut start = 0;
    let mut end = FIRST_PREFIX.min(n);
    while start < n {
        // members[..start] holds the best `start`, sorted; bring the next best `end - start`
        // to members[start..end] and sort them.
        let rest = &mut members[start..];
        if end - start < rest.len() {
            rest.select_nth_unstable_by(end - start - 1, rank);
        }
        let prefix = &mut members[start..end];
        prefix.sort_unstable_by(rank);
        for c in prefix.iter() {
            *cumulative += f64::from(math::exp_nonpositive(c.score - max));
            if *cumulative >= target {
                return Some(*c);
            }
        }
        start = end;
        end = end.saturating_mul(2).min(n);
    }
    None
}

/// The greedy pick: the highest logit, the lowest id among equals.
fn argmax(logits: &[f32]) -> Result<u32, SampleError> {
    let Summary { max, invalid, .. } = math::summarize(logits);
    if invalid {
        return Err(first_invalid(logits));
    }
    if max == f32::NEG_INFINITY {
        return Err(SampleError::NoCandidates { len: logits.len() });
    }
    // The first entry equal to the maximum (`-0.0 == 0.0`, so signed zeros count as equal).
    // Ids fit in u32: the caller checked the length.
    Ok(math::position_of(logits, max).map_or(0, |i| i as u32))
}

/// The error for the first NaN or `+inf` entry (the caller knows there is one).
fn first_invalid(logits: &[f32]) -> SampleError {
    logits
        .iter()
        .zip(0u32..)
        .find(|(l, _)| l.is_nan() || **l == f32::INFINITY)
        .map_or(
            SampleError::NoCandidates { len: logits.len() },
            |(&value, token)| SampleError::InvalidLogit { token, value },
        )
}

#[cfg(test)]
mod tests;
