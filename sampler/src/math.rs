//! Bit-reproducible numeric kernels: exponential, sums and maxima over `f32` slices.
//!
//! Sampling must give the same token for the same seed on every platform, so nothing here calls
//! the platform's math library (whose `exp` may differ in the last bit between systems). The
//! exponential is a range reduction plus a polynomial using only IEEE-754 addition,
//! multiplication and bit manipulation, which Rust evaluates identically everywhere (it never
//! fuses a multiply and an add on its own). Being branch-free, it also vectorises, which a
//! scalar library `expf` does not: over a 262,144-entry vocabulary that is the difference between
//! the exponentials dominating a sampling step and being a small part of it.
//!
//! Sums use eight `f64` accumulators in a fixed pattern: deterministic, vectorisable, and
//! accurate to far below anything a sampling decision can notice.

/// Below this, [`exp_nonpositive`] returns 0 (`e^-87` is about `1.6e-38`, the bottom of the
/// normal `f32` range).
pub(crate) const EXP_CUTOFF: f32 = -87.0;

/// Independent accumulators in reductions: enough for two 128-bit or one 256-bit vector of `f32`.
const LANES: usize = 8;

/// `e^x` for `x <= 0`, with a relative error below `1e-6`; `0` for `x < -87` (including `-inf`).
///
/// Range reduction: `x = k ln 2 + g` with integer `k` in `[-126, 0]` and `|g| <= ln 2 / 2`, so
/// `e^x = 2^k e^g`. `ln 2` is split in a high part with few significant bits (so `k * LN2_HI`
/// is exact) and a low correction. `e^g` is its Taylor polynomial of degree 6 (truncation error
/// below `1.3e-7` on the reduced range), and `2^k` is assembled from its exponent bits.
#[inline]
pub(crate) fn exp_nonpositive(x: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 = LN2_HI + LN2_LO: the high part (0.693145751953125) has 15 significant bits, the
    // low part is the f32 nearest to the remainder (about 1.4286068e-6).
    const LN2_HI: f32 = f32::from_bits(0x3F31_7200);
    const LN2_LO: f32 = f32::from_bits(0x35BF_BE8E);
    // Adding 1.5 * 2^23 rounds a float of magnitude below 2^22 to an integer (ties to even),
    // and leaves that integer in the low mantissa bits.
    const ROUND: f32 = 12_582_912.0;
    const ROUND_BITS: i32 = 0x4B40_0000;

    let clamped = x.clamp(EXP_CUTOFF, 0.0);
    let shifted = clamped * LOG2_E + ROUND;
    let k = shifted - ROUND;
    let g = (clamped - k * LN2_HI) - k * LN2_LO;
    let poly = 1.0
        + g * (1.0
            + g * (1.0 / 2.0
                + g * (1.0 / 6.0 + g * (1.0 / 24.0 + g * (1.0 / 120.0 + g * (1.0 / 720.0))))));
    // k is in [-126, 0], so k + 127 is a valid biased exponent of a normal float.
    let k_int = shifted.to_bits() as i32 - ROUND_BITS;
    let scale = f32::from_bits(((k_int + 127) as u32) << 23);
    let value = poly * scale;
    if x < EXP_CUTOFF { 0.0 } else { value }
}

/// Writes `exp_nonpositive((score - max) / temperature)` for every score.
///
/// `max` must be at least every score and `temperature` positive, so every argument is `<= 0`.
/// The division is a multiplication by `1 / temperature` unless that reciprocal overflows.
pub(crate) fn exp_shifted(scores: &[f32], max: f32, temperature: f32, out: &mut [f32]) {
    debug_assert_eq!(scores.len(), out.len());
    let inverse = 1.0 / temperature;
    if temperature == 1.0 {
        for (w, &s) in out.iter_mut().zip(scores) {
            *w = exp_nonpositive(s - max);
        }
    } else if inverse.is_finite() {
        for (w, &s) in out.iter_mut().zip(scores) {
            *w = exp_nonpositive((s - max) * inverse);
        }
    } else {
        for (w, &s) in out.iter_mut().zip(scores) {
            *w = exp_nonpositive((s - max) / temperature);
        }
    }
}

/// The sum of `values` in `f64`, in a fixed order (eight interleaved accumulators, then the
/// remainder).
#[inline]
pub(crate) fn sum(values: &[f32]) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (lane, &v) in lanes.iter_mut().zip(chunk) {
            *lane += f64::from(v);
        }
    }
    let mut total = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]))
        + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for &v in chunks.remainder() {
        total += f64::from(v);
    }
    total
}

/// What one pass over a slice of logits found; see [`summarize`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    /// The largest value (`-inf` for an empty slice); NaN never is.
    pub(crate) max: f32,
    /// How many values are above `-inf` (NaN is not).
    pub(crate) finite: usize,
    /// Whether some value is NaN or `+inf`.
    pub(crate) invalid: bool,
}

/// The largest value of `values`, how many are above `-inf`, and whether any is NaN or `+inf`.
pub(crate) fn summarize(values: &[f32]) -> Summary {
    let mut max_lanes = [f32::NEG_INFINITY; LANES];
    let mut nan_lanes = [0u32; LANES];
    let mut finite_lanes = [0u32; LANES];
    let mut max = f32::NEG_INFINITY;
    let mut nan = 0u32;
    let mut finite = 0usize;
    // Chunks of at most 2^32 lanes-worth, so the u32 counters cannot overflow.
    for part in values.chunks(LANES << 28) {
        let mut chunks = part.chunks_exact(LANES);
        for chunk in &mut chunks {
            let lanes = max_lanes
                .iter_mut()
                .zip(&mut nan_lanes)
                .zip(&mut finite_lanes);
            for (((hi, bad), count), &v) in lanes.zip(chunk) {
                *bad |= u32::from(v.is_nan());
                *count += u32::from(v > f32::NEG_INFINITY);
                *hi = if v > *hi { v } else { *hi };
            }
        }
        for &v in chunks.remainder() {
            nan |= u32::from(v.is_nan());
            finite += usize::from(v > f32::NEG_INFINITY);
            max = if v > max { v } else { max };
        }
        for ((hi, bad), count) in max_lanes
            .iter_mut()
            .zip(&mut nan_lanes)
            .zip(&mut finite_lanes)
        {
            max = if *hi > max { *hi } else { max };
            nan |= *bad;
            finite += *count as usize;
            *count = 0;
        }
    }
    // `+inf` cannot hide: it is the maximum whenever present.
    Summary {
        max,
        finite,
        invalid: nan != 0 || max == f32::INFINITY,
    }
}

/// Whether any of a short block of logits is above `-inf`.
#[inline(always)]
pub(crate) fn any_finite(block: &[f32]) -> bool {
    block
        .iter()
        .fold(false, |any, &v| any | (v > f32::NEG_INFINITY))
}

/// The index of the first value equal to `target`, scanning eight at a time.
pub(crate) fn position_of(values: &[f32], target: f32) -> Option<usize> {
    let mut chunks = values.chunks_exact(LANES);
    let mut offset = 0;
    for chunk in &mut chunks {
        if chunk.iter().fold(false, |any, &v| any | (v == target)) {
            return chunk.iter().position(|&v| v == target).map(|i| offset + i);
        }
        offset += LANES;
    }
    chunks
        .remainder()
        .iter()
        .position(|&v| v == target)
        .map(|i| offset + i)
}

/// The largest of finite values (`-inf` for an empty slice).
pub(crate) fn max(values: &[f32]) -> f32 {
    summarize(values).max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate_over_its_whole_range() {
        let mut worst = 0.0f64;
        let steps = 200_000;
        for i in 0..=steps {
            let x = EXP_CUTOFF * i as f32 / steps as f32;
            let exact = f64::from(x).exp();
            let rel = ((f64::from(exp_nonpositive(x)) - exact) / exact).abs();
            worst = worst.max(rel);
        }
        assert!(worst < 1e-6, "worst relative error {worst}");
    }

    #[test]
    fn exp_edges() {
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-0.0), 1.0);
        assert_eq!(exp_nonpositive(-87.5), 0.0);
        assert_eq!(exp_nonpositive(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpositive(f32::MIN), 0.0);
        assert!(exp_nonpositive(EXP_CUTOFF) > 0.0);
        // Monotone on a fine grid near 0, where sampling decisions are made.
        let mut previous = 0.0;
        for i in (0..=10_000).rev() {
            let y = exp_nonpositive(-(i as f32) / 1000.0);
            assert!(y >= previous, "not monotone at {i}");
            previous = y;
        }
    }

    /// Pinned bits: the same on every platform, whatever its libm.
    #[test]
    fn exp_bits_are_pinned() {
        let bits: Vec<u32> = [-0.5f32, -1.0, -3.25, -20.0, -80.0]
            .iter()
            .map(|&x| exp_nonpositive(x).to_bits())
            .collect();
        assert_eq!(bits, PINNED_EXP_BITS, "{bits:#x?}");
    }

    const PINNED_EXP_BITS: [u32; 5] = [
        0x3F1B_4598,
        0x3EBC_5AB2,
        0x3D1E_D1B4,
        0x310D_A433,
        0x05BF_ECBB,
    ];

    #[test]
    fn exp_shifted_matches_the_scalar_function() {
        let scores: Vec<f32> = (0..37).map(|i| i as f32 * -0.37).collect();
        let mut out = vec![0.0; scores.len()];
        exp_shifted(&scores, 0.5, 0.7, &mut out);
        for (&s, &w) in scores.iter().zip(&out) {
            assert_eq!(w, exp_nonpositive((s - 0.5) * (1.0 / 0.7)));
        }
        // A subnormal temperature has no finite reciprocal: plain division.
        exp_shifted(&scores, 0.0, 1e-40, &mut out);
        assert_eq!(out[0], 1.0);
        assert!(out[1..].iter().all(|&w| w == 0.0));
        exp_shifted(&scores, 0.0, 1.0, &mut out);
        for (&s, &w) in scores.iter().zip(&out) {
            assert_eq!(w, exp_nonpositive(s));
        }
    }

    #[test]
    fn sum_and_max() {
        let values: Vec<f32> = (1..=21).map(|i| i as f32).collect();
        assert_eq!(sum(&values), 231.0);
        assert_eq!(sum(&[]), 0.0);
        assert_eq!(max(&values), 21.0);
        assert_eq!(max(&[]), f32::NEG_INFINITY);
        assert_eq!(
            summarize(&values),
            Summary {
                max: 21.0,
                finite: 21,
                invalid: false
            }
        );
        let mut masked = [f32::NEG_INFINITY; 9];
        assert_eq!(
            summarize(&masked),
            Summary {
                max: f32::NEG_INFINITY,
                finite: 0,
                invalid: false
            }
        );
        masked[8] = -3.0;
        assert_eq!(
            summarize(&masked),
            Summary {
                max: -3.0,
                finite: 1,
                invalid: false
            }
        );
        let mut with_nan = values.clone();
        with_nan[3] = f32::NAN;
        assert_eq!(
            summarize(&with_nan),
            Summary {
                max: 21.0,
                finite: 20,
                invalid: true
            }
        );
        with_nan[3] = 0.5;
        with_nan[20] = f32::INFINITY;
        assert!(summarize(&with_nan).invalid);
        assert!(any_finite(&[f32::NEG_INFINITY, -7.0]));
        assert!(!any_finite(&[f32::NEG_INFINITY; 3]));
        assert!(!any_finite(&[]));
        assert_eq!(position_of(&values, 12.0), Some(11));
        assert_eq!(position_of(&values, 21.0), Some(20));
        assert_eq!(position_of(&values, 0.5), None);
        assert_eq!(position_of(&[0.0, -0.0], -0.0), Some(0));
    }
}
