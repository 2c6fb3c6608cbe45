//! Applying a mask to logits.

use fixedbitset::FixedBitSet;

use crate::error::MaskError;

/// Sets every logit whose token is not in `mask` to `-inf`, in place.
///
/// Logits longer than the vocabulary (models pad their embedding matrix) have the extra
/// entries masked too; shorter logits are an error, as is an empty mask (a vector of `-inf`
/// would make the sampler pick garbage).
///
/// # Errors
///
/// [`MaskError::LogitsTooShort`] and [`MaskError::EmptyMask`].
pub fn apply(mask: &FixedBitSet, logits: &mut [f32]) -> Result<(), MaskError> {
    let n = mask.len();
    if logits.len() < n {
        return Err(MaskError::LogitsTooShort {
            logits: logits.len(),
            vocab: n,
        });
    }
    if mask.is_clear() {
        return Err(MaskError::EmptyMask {
            state: "mask with no allowed token".into(),
        });
    }
    let bits = usize::BITS as usize;
    for (w, &block) in mask.as_slice().iter().enumerate() {
        let base = w * bits;
        let end = (base + bits).min(n);
        let chunk = &mut logits[base..end];
        if block == usize::MAX {
            continue;
        }
        if block.count_ones() * 2 < chunk.len() as u32 {
            // Mostly disallowed: keep the few allowed values, fill, put them back.
            let mut kept = [0f32; usize::BITS as usize];
            let mut ones = block;
            while ones != 0 {
                let i = ones.trailing_zeros() as usize;
                kept[i] = chunk[i];
                ones &= ones - 1;
            }
            chunk.fill(f32::NEG_INFINITY);
            let mut ones = block;
            while ones != 0 {
                let i = ones.trailing_zeros() as usize;
                chunk[i] = kept[i];
                ones &= ones - 1;
            }
        } else {
            // Mostly allowed: visit only the disallowed entries.
            let mut zeros = !block;
            if chunk.len() < bits {
                zeros &= (1usize << chunk.len()) - 1;
            }
            while zeros != 0 {
                let i = zeros.trailing_zeros() as usize;
                chunk[i] = f32::NEG_INFINITY;
                zeros &= zeros - 1;
            }
        }
    }
    logits[n..].fill(f32::NEG_INFINITY);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_disallowed_and_padding() {
        let mut m = FixedBitSet::with_capacity(130);
        m.insert(0);
        m.insert(64);
        m.insert(129);
        let mut logits = vec![1.0f32; 140];
        apply(&m, &mut logits).unwrap();
        for (i, l) in logits.iter().enumerate() {
            let allowed = [0, 64, 129].contains(&i);
            assert_eq!(l.is_finite(), allowed, "index {i}");
        }
    }

    #[test]
    fn allow_list_and_deny_list_shapes() {
        // Nearly everything allowed (a deny-list shape) and nearly nothing (an allow-list).
        let mut most = FixedBitSet::with_capacity(1000);
        most.insert_range(..);
        most.set(500, false);
        let mut logits = vec![0.5f32; 1000];
        apply(&most, &mut logits).unwrap();
        assert_eq!(logits.iter().filter(|l| l.is_finite()).count(), 999);
        assert!(logits[500].is_infinite());
        let mut few = FixedBitSet::with_capacity(1000);
        few.insert(7);
        let mut logits = vec![0.5f32; 1000];
        apply(&few, &mut logits).unwrap();
        assert_eq!(logits.iter().filter(|l| l.is_finite()).count(), 1);
    }

    #[test]
    fn errors() {
        let m = FixedBitSet::with_capacity(10);
        assert!(matches!(
            apply(&m, &mut [0.0; 10]),
            Err(MaskError::EmptyMask { .. })
        ));
        let mut m = FixedBitSet::with_capacity(10);
        m.insert(1);
        assert!(matches!(
            apply(&m, &mut [0.0; 9]),
            Err(MaskError::LogitsTooShort { .. })
        ));
    }
}
