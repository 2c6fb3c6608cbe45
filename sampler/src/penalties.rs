//! In-place logit adjustments that depend on token ids: logit bias and the three penalties.
//!
//! All of them edit the caller's logits slice directly and touch only the entries named by the
//! bias map or the history, so their cost is proportional to those, not to the vocabulary. A
//! masked logit (`-inf`) stays `-inf` under every adjustment: adding, subtracting, multiplying by
//! a positive factor or dividing by one cannot bring it back.
//!
//! Distinct tokens are found without hashing or sorting: a vocabulary-sized `u32` scratch array
//! (owned by the sampler, all zeros between calls) is bumped for every history token, read once
//! per distinct token, and reset to zero in the same pass.

use crate::SampleError;

/// Fails if any token of `tokens` is not an index into `len` logits.
pub(crate) fn check_history(tokens: &[u32], len: usize) -> Result<(), SampleError> {
    match tokens.iter().find(|&&t| t as usize >= len) {
        Some(&token) => Err(SampleError::HistoryTokenOutOfRange { token, len }),
        None => Ok(()),
    }
}

/// Adds `bias` to the logits. `bias` is sorted by token id and every id is below `logits.len()`
/// (checked by the caller).
pub(crate) fn apply_logit_bias(logits: &mut [f32], bias: &[(u32, f32)]) {
    for &(token, b) in bias {
        if let Some(l) = logits.get_mut(token as usize) {
            *l += b;
        }
    }
}

/// llama.cpp / Hugging Face repetition penalty: each distinct token of `window` has a positive
/// logit divided by `penalty` and a non-positive one multiplied by it.
///
/// `seen` must be all zeros on entry and is all zeros again on return; every token of `window`
/// must index both slices (checked by the caller).
pub(crate) fn apply_repetition_penalty(
    logits: &mut [f32],
    window: &[u32],
    penalty: f32,
    seen: &mut [u32],
) {
    for &token in window {
        let t = token as usize;
        if let (Some(mark), Some(l)) = (seen.get_mut(t), logits.get_mut(t))
            && *mark == 0
        {
            *mark = 1;
            *l = if *l > 0.0 { *l / penalty } else { *l * penalty };
        }
    }
    for &token in window {
        if let Some(mark) = seen.get_mut(token as usize) {
            *mark = 0;
        }
    }
}

/// OpenAI frequency and presence penalties: a token occurring `c > 0` times in `history` loses
/// `c * frequency + presence` from its logit.
///
/// `counts` must be all zeros on entry and is all zeros again on return; every token of
/// `history` must index both slices (checked by the caller).
pub(crate) fn apply_count_penalties(
    logits: &mut [f32],
    history: &[u32],
    frequency: f32,
    presence: f32,
    counts: &mut [u32],
) {
    for &token in history {
        if let Some(c) = counts.get_mut(token as usize) {
            *c = c.saturating_add(1);
        }
    }
    for &token in history {
        let t = token as usize;
        if let (Some(c), Some(l)) = (counts.get_mut(t), logits.get_mut(t))
            && *c > 0
        {
            // Counts beyond 2^24 lose precision in f32; no realistic history gets there.
            *l -= *c as f32 * frequency + presence;
            *c = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEG_INF: f32 = f32::NEG_INFINITY;

    #[test]
    fn history_check_names_the_offender() {
        assert_eq!(check_history(&[0, 2, 1], 3), Ok(()));
        assert_eq!(
            check_history(&[0, 3, 9], 3),
            Err(SampleError::HistoryTokenOutOfRange { token: 3, len: 3 })
        );
    }

    #[test]
    fn logit_bias_adds_and_keeps_masked_tokens_masked() {
        let mut logits = [0.0, 1.0, NEG_INF, 2.0];
        apply_logit_bias(&mut logits, &[(0, 5.0), (2, 100.0), (3, -1.5)]);
        assert_eq!(logits, [5.0, 1.0, NEG_INF, 0.5]);
    }

    /// Token 0 positive (divided), token 1 negative (multiplied), token 2 zero (unchanged),
    /// token 3 masked (stays masked), token 4 not in the window. Token 0 appears twice but is
    /// penalised once.
    #[test]
    fn repetition_penalty_divides_positive_and_multiplies_negative() {
        let mut logits = [3.0, -1.0, 0.0, NEG_INF, 4.0];
        let mut seen = [0u32; 5];
        apply_repetition_penalty(&mut logits, &[0, 1, 0, 2, 3], 2.0, &mut seen);
        assert_eq!(logits, [1.5, -2.0, 0.0, NEG_INF, 4.0]);
        assert_eq!(seen, [0; 5], "scratch is left zeroed");
    }

    /// History `[1, 1, 2, 1]`: token 1 occurs 3 times, token 2 once.
    /// frequency 0.5, presence 1: token 1 loses 3 * 0.5 + 1 = 2.5, token 2 loses 1.5.
    #[test]
    fn count_penalties_follow_openai_formula() {
        let mut logits = [1.0, 1.0, 1.0, NEG_INF];
        let mut counts = [0u32; 4];
        apply_count_penalties(&mut logits, &[1, 1, 2, 1, 3], 0.5, 1.0, &mut counts);
        assert_eq!(logits, [1.0, -1.5, -0.5, NEG_INF]);
        assert_eq!(counts, [0; 4], "scratch is left zeroed");
    }

    #[test]
    fn negative_count_penalties_raise_logits() {
        let mut logits = [0.0, 0.0];
        let mut counts = [0u32; 2];
        apply_count_penalties(&mut logits, &[1, 1], -1.0, -0.5, &mut counts);
        assert_eq!(logits, [0.0, 2.5]);
    }
}
