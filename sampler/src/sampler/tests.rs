//! Per-knob tests with hand-computed expectations.
//!
//! Most tests stop before the random draw (`prepare`) and check the surviving candidate set and
//! its weights exactly; the draw itself is covered statistically in `tests/distribution.rs`.
//! Distributions are written as probabilities and turned into logits with `ln`, so the
//! expectations can be checked by eye.

use super::*;

const NEG_INF: f32 = f32::NEG_INFINITY;

fn sampler(config: SamplerConfig) -> Sampler {
    Sampler::new(config, 7).expect("valid config")
}

fn config() -> SamplerConfig {
    SamplerConfig::default()
}

/// Logits whose softmax is `probs` (entries of 0 become masked).
fn logits_of(probs: &[f32]) -> Vec<f32> {
    probs
        .iter()
        .map(|&p| if p == 0.0 { NEG_INF } else { p.ln() })
        .collect()
}

/// The ids that survive every filter, in id order.
fn kept(sampler: &mut Sampler, logits: &mut [f32], history: &[u32]) -> Vec<u32> {
    match sampler.prepare(logits, history).expect("prepare") {
        Prepared::Token(t) => vec![t],
        Prepared::Candidates(n) => sampler.survivors(n).iter().map(|&(id, _)| id).collect(),
    }
}

fn assert_close(actual: f32, expected: f32) {
    assert!(
        (actual - expected).abs() < 1e-5,
        "{actual} is not close to {expected}"
    );
}

#[test]
fn greedy_picks_the_highest_logit_and_the_lowest_id_on_ties() {
    let mut s = sampler(SamplerConfig::greedy());
    assert_eq!(s.sample(&mut [1.0, 3.0, NEG_INF, 3.0], &[]), Ok(1));
    assert_eq!(s.sample(&mut [NEG_INF, NEG_INF, -5.0], &[]), Ok(2));
    assert_eq!(
        s.sample(&mut [-0.0, 0.0], &[]),
        Ok(0),
        "signed zeros are equal"
    );
}

#[test]
fn greedy_draws_no_random_number() {
    let mut a = sampler(config());
    let mut b = sampler(SamplerConfig::greedy());
    for _ in 0..5 {
        b.sample(&mut [1.0, 2.0], &[]).unwrap();
    }
    b.set_config(config()).unwrap();
    for _ in 0..20 {
        let logits = [0.0, 0.1, 0.2, 0.3];
        assert_eq!(
            a.sample(&mut logits.clone(), &[]),
            b.sample(&mut logits.clone(), &[])
        );
    }
}

/// Whatever the inputs, a non-greedy call consumes exactly one draw: after a forced pick (one
/// finite logit) and after a free pick, two samplers with the same seed are in step again.
#[test]
fn every_non_greedy_call_draws_exactly_once() {
    let mut a = sampler(config());
    let mut b = sampler(config());
    assert_eq!(a.sample(&mut [NEG_INF, 1.0, NEG_INF], &[]), Ok(1));
    b.sample(&mut [0.0; 50], &[]).unwrap();
    for _ in 0..20 {
        let logits = [0.0f32; 10];
        assert_eq!(
            a.sample(&mut logits.clone(), &[]),
            b.sample(&mut logits.clone(), &[])
        );
    }
}

#[test]
fn default_config_keeps_every_finite_token_with_softmax_weights() {
    // probabilities 0.25, masked, 0.75: weights relative to the best are 1/3 and 1.
    let mut logits = logits_of(&[0.25, 0.0, 0.75]);
    let mut s = sampler(config());
    let Prepared::Candidates(n) = s.prepare(&mut logits, &[]).unwrap() else {
        panic!("expected candidates")
    };
    let live = s.survivors(n);
    assert_eq!(live.iter().map(|&(id, _)| id).collect::<Vec<_>>(), [0, 2]);
    assert_close(live[0].1, 1.0 / 3.0);
    assert_close(live[1].1, 1.0);
}

/// Logits 0 and ln 2 at temperature 0.5 become 0 and 2 ln 2: weights 1/4 and 1.
#[test]
fn temperature_divides_logits() {
    let mut logits = vec![0.0, 2.0f32.ln()];
    let mut s = sampler(SamplerConfig {
        temperature: 0.5,
        ..config()
    });
    let Prepared::Candidates(n) = s.prepare(&mut logits, &[]).unwrap() else {
        panic!("expected candidates")
    };
    assert_close(s.survivors(n)[0].1, 0.25);
    assert_close(s.survivors(n)[1].1, 1.0);
}

/// A tiny temperature makes everything but the best weigh (almost) nothing, without overflow.
#[test]
fn tiny_temperature_concentrates_on_the_best() {
    let mut s = sampler(SamplerConfig {
        temperature: 1e-30,
        ..config()
    });
    for _ in 0..20 {
        assert_eq!(s.sample(&mut [1.0, 1.001, 0.5], &[]), Ok(1));
    }
}

#[test]
fn top_k_keeps_the_k_best() {
    let mut s = sampler(SamplerConfig {
        top_k: 2,
        ..config()
    });
    //            id:  0    1    2    3    4
    let mut logits = [1.0, 4.0, 3.0, 2.0, NEG_INF];
    assert_eq!(kept(&mut s, &mut logits, &[]), [1, 2]);
}

/// Ids 2 and 3 tie for second place; the lower id wins the last slot.
#[test]
fn top_k_breaks_ties_at_the_cut_by_lowest_id() {
    let mut s = sampler(SamplerConfig {
        top_k: 2,
        ..config()
    });
    let mut logits = [1.0, 4.0, 3.0, 3.0];
    assert_eq!(kept(&mut s, &mut logits, &[]), [1, 2]);
    let mut s = sampler(SamplerConfig {
        top_k: 3,
        ..config()
    });
    let mut flat = [5.0; 6];
    assert_eq!(kept(&mut s, &mut flat, &[]), [0, 1, 2]);
}

#[test]
fn top_k_larger_than_the_candidates_keeps_all() {
    let mut s = sampler(SamplerConfig {
        top_k: 40,
        ..config()
    });
    let mut logits = [NEG_INF, 1.0, NEG_INF, 2.0];
    assert_eq!(kept(&mut s, &mut logits, &[]), [1, 3]);
}

/// Probabilities by id: 0.15, 0.5, 0.05, 0.3. In rank order: id 1 (0.5), id 3 (0.3),
/// id 0 (0.15), id 2 (0.05); cumulative 0.5, 0.8, 0.95, 1.0.
#[test]
fn top_p_keeps_the_smallest_nucleus() {
    let probs = [0.15, 0.5, 0.05, 0.3];
    for (top_p, expected) in [
        (0.4, &[1][..]),
        (0.7, &[1, 3][..]),
        (0.85, &[0, 1, 3][..]),
        (0.99, &[0, 1, 2, 3][..]),
        (1.0, &[0, 1, 2, 3][..]),
    ] {
        let mut s = sampler(SamplerConfig { top_p, ..config() });
        let mut logits = logits_of(&probs);
        assert_eq!(kept(&mut s, &mut logits, &[]), expected, "top_p {top_p}");
    }
}

/// 300 equal logits: each has probability 1/300, so a mass of 0.501 needs 151 tokens; among
/// equals the lowest ids come first. 151 is past the first two prefixes (64 and 128).
#[test]
fn top_p_grows_its_prefix_and_breaks_ties_by_lowest_id() {
    let mut s = sampler(SamplerConfig {
        top_p: 0.501,
        ..config()
    });
    let mut logits = vec![0.25f32; 300];
    assert_eq!(
        kept(&mut s, &mut logits, &[]),
        (0..151).collect::<Vec<u32>>()
    );
}

/// Probabilities 0.5, 0.3, 0.15, 0.05: min-p 0.2 keeps p >= 0.1, min-p 0.35 keeps p >= 0.175.
#[test]
fn min_p_keeps_tokens_relative_to_the_best() {
    let probs = [0.5, 0.3, 0.15, 0.05];
    for (min_p, expected) in [(0.2, &[0, 1, 2][..]), (0.35, &[0, 1][..]), (1.0, &[0][..])] {
        let mut s = sampler(SamplerConfig { min_p, ..config() });
        let mut logits = logits_of(&probs);
        assert_eq!(kept(&mut s, &mut logits, &[]), expected, "min_p {min_p}");
    }
}

/// Top-k runs before top-p: with probabilities 0.4, 0.3, 0.2, 0.1 and top-k 2, top-p sees
/// 4/7 and 3/7, so top-p 0.55 keeps only id 0. (Over the full distribution 0.4 < 0.55 and it
/// would keep ids 0 and 1.)
#[test]
fn top_p_sees_the_distribution_top_k_left() {
    let mut s = sampler(SamplerConfig {
        top_k: 2,
        top_p: 0.55,
        ..config()
    });
    let mut logits = logits_of(&[0.4, 0.3, 0.2, 0.1]);
    assert_eq!(kept(&mut s, &mut logits, &[]), [0]);
}

/// Temperature applies after top-p: probabilities 0.5, 0.3, 0.2 and top-p 0.45 keep id 0 alone,
/// however flat temperature 10 would make the distribution.
#[test]
fn temperature_applies_after_the_filters() {
    let mut s = sampler(SamplerConfig {
        temperature: 10.0,
        top_p: 0.45,
        ..config()
    });
    let mut logits = logits_of(&[0.5, 0.3, 0.2]);
    assert_eq!(kept(&mut s, &mut logits, &[]), [0]);
}

#[test]
fn logit_bias_is_applied_in_place_before_greedy() {
    let bias = [(2, 0.5), (0, -1.0)].into();
    let mut s = sampler(SamplerConfig {
        logit_bias: bias,
        ..SamplerConfig::greedy()
    });
    let mut logits = [0.0, 0.0, 0.0, NEG_INF];
    assert_eq!(s.sample(&mut logits, &[]), Ok(2));
    assert_eq!(logits, [-1.0, 0.0, 0.5, NEG_INF]);
}

#[test]
fn logit_bias_never_unmasks() {
    let bias = [(0, 100.0)].into();
    let mut s = sampler(SamplerConfig {
        logit_bias: bias,
        ..config()
    });
    for _ in 0..20 {
        assert_eq!(s.sample(&mut [NEG_INF, -50.0], &[]), Ok(1));
    }
}

/// History `[0, 1, 2]`, window 2 (tokens 1 and 2): token 1 (2.0) is divided by 2, token 2
/// (-1.0) multiplied by 2, token 0 is outside the window.
#[test]
fn repetition_penalty_covers_the_last_n_tokens() {
    let mut s = sampler(SamplerConfig {
        repetition_penalty: 2.0,
        repeat_last_n: 2,
        ..SamplerConfig::greedy()
    });
    let mut logits = [2.0, 2.0, -1.0, 1.5];
    assert_eq!(s.sample(&mut logits, &[0, 1, 2]), Ok(0));
    assert_eq!(logits, [2.0, 1.0, -2.0, 1.5]);
}

#[test]
fn repeat_last_n_zero_turns_the_repetition_penalty_off() {
    let mut s = sampler(SamplerConfig {
        repetition_penalty: 2.0,
        repeat_last_n: 0,
        ..SamplerConfig::greedy()
    });
    let mut logits = [2.0, 1.0];
    s.sample(&mut logits, &[0, 0]).unwrap();
    assert_eq!(logits, [2.0, 1.0]);
}

/// Repetition penalty first (4 / 2 = 2), then frequency (one occurrence, 0.25) and presence
/// (0.5): 2 - 0.75 = 1.25. Token 1 occurs twice but outside the window of 1: it only gets
/// 2 * 0.25 + 0.5 = 1.
#[test]
fn penalties_compose_in_documented_order() {
    let mut s = sampler(SamplerConfig {
        repetition_penalty: 2.0,
        repeat_last_n: 1,
        frequency_penalty: 0.25,
        presence_penalty: 0.5,
        ..SamplerConfig::greedy()
    });
    let mut logits = [4.0, 3.0, 1.0];
    assert_eq!(s.sample(&mut logits, &[1, 1, 0]), Ok(1));
    assert_eq!(logits, [1.25, 2.0, 1.0]);
}

#[test]
fn penalties_apply_again_on_every_call_without_leftover_state() {
    let mut s = sampler(SamplerConfig {
        frequency_penalty: 1.0,
        ..SamplerConfig::greedy()
    });
    for _ in 0..3 {
        let mut logits = [3.0, 3.0];
        s.sample(&mut logits, &[0, 0, 1]).unwrap();
        assert_eq!(logits, [1.0, 2.0]);
    }
}

#[test]
fn bad_inputs_are_errors() {
    let mut s = sampler(config());
    assert_eq!(s.sample(&mut [], &[]), Err(SampleError::EmptyLogits));
    assert_eq!(
        s.sample(&mut [NEG_INF; 3], &[]),
        Err(SampleError::NoCandidates { len: 3 })
    );
    let err = s
        .sample(&mut [0.0, f32::NAN, f32::INFINITY], &[])
        .unwrap_err();
    assert!(matches!(err, SampleError::InvalidLogit { token: 1, value } if value.is_nan()));
    assert_eq!(
        s.sample(&mut [0.0, f32::INFINITY], &[]),
        Err(SampleError::InvalidLogit {
            token: 1,
            value: f32::INFINITY
        })
    );
    let mut g = sampler(SamplerConfig::greedy());
    assert_eq!(
        g.sample(&mut [NEG_INF; 2], &[]),
        Err(SampleError::NoCandidates { len: 2 })
    );
    assert!(matches!(
        g.sample(&mut [NEG_INF, f32::NAN], &[]),
        Err(SampleError::InvalidLogit { token: 1, .. })
    ));
}

#[test]
fn out_of_range_tokens_are_errors_before_logits_change() {
    let mut s = sampler(SamplerConfig {
        frequency_penalty: 1.0,
        logit_bias: [(1, 1.0)].into(),
        ..config()
    });
    let mut logits = [0.0, 0.0, 0.0];
    assert_eq!(
        s.sample(&mut logits, &[0, 3]),
        Err(SampleError::HistoryTokenOutOfRange { token: 3, len: 3 })
    );
    assert_eq!(logits, [0.0; 3]);

    let mut s = sampler(SamplerConfig {
        logit_bias: [(1, 1.0), (5, 1.0)].into(),
        ..config()
    });
    let mut logits = [0.0, 0.0, 0.0];
    assert_eq!(
        s.sample(&mut logits, &[]),
        Err(SampleError::BiasTokenOutOfRange { token: 5, len: 3 })
    );
    assert_eq!(logits, [0.0; 3]);
}

#[test]
fn invalid_config_is_rejected_at_construction_and_on_update() {
    assert!(matches!(
        Sampler::new(
            SamplerConfig {
                top_p: 0.0,
                ..config()
            },
            1
        ),
        Err(SampleError::InvalidConfig { field: "top_p", .. })
    ));
    let mut s = sampler(SamplerConfig {
        top_k: 3,
        ..config()
    });
    assert!(
        s.set_config(SamplerConfig {
            temperature: -1.0,
            ..config()
        })
        .is_err()
    );
    assert_eq!(
        s.config().top_k,
        3,
        "a rejected update keeps the old config"
    );
}

#[test]
fn reseed_restarts_the_stream() {
    let mut s = sampler(config());
    let run = |s: &mut Sampler| -> Vec<u32> {
        (0..16)
            .map(|_| s.sample(&mut [0.0; 8], &[]).unwrap())
            .collect()
    };
    let first = run(&mut s);
    s.reseed(7);
    assert_eq!(run(&mut s), first);
    assert_eq!(s.seed(), 7);
}

#[test]
fn scratch_shrinks_and_grows_with_the_vocabulary() {
    let mut s = sampler(SamplerConfig {
        top_k: 2,
        ..config()
    });
    assert_eq!(kept(&mut s, &mut [0.0, 3.0, 2.0, 1.0, 0.5], &[]), [1, 2]);
    assert_eq!(kept(&mut s, &mut [2.0, 3.0, 1.0], &[]), [0, 1]);
    assert_eq!(
        kept(&mut s, &mut [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 9.0], &[]),
        [0, 6]
    );
}

#[test]
fn debug_output_is_short() {
    let mut s = sampler(config());
    s.reserve(262_144);
    let text = format!("{s:?}");
    assert!(text.len() < 400, "{text}");
    assert!(text.contains("scratch_len: 262144"));
}

mod sets {
    //! The surviving sets, checked whole against a slow reference (sort everything, softmax in
    //! `f64`) rather than through one sampled token.

    use proptest::prelude::*;

    use super::*;

    /// Logits with ties, wide gaps (beyond the last top-p bucket) and masked entries; at least
    /// one finite.
    fn logits() -> impl Strategy<Value = Vec<f32>> {
        let value = prop_oneof![
            3 => (-12i8..=12).prop_map(|v| f32::from(v) * 0.25),
            2 => -40.0f32..5.0,
            1 => Just(NEG_INF),
        ];
        prop::collection::vec(value, 1..700).prop_map(|mut l| {
            if l.iter().all(|&x| x == NEG_INF) {
                l[0] = 0.0;
            }
            for x in &mut l {
                *x += 0.0; // turns -0.0 into +0.0, as the sampler compares them equal
            }
            l
        })
    }

    /// Finite token ids, best first (higher logit, then lower id).
    fn ranked(logits: &[f32]) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..logits.len() as u32)
            .filter(|&i| logits[i as usize] > NEG_INF)
            .collect();
        ids.sort_by(|&a, &b| {
            logits[b as usize]
                .total_cmp(&logits[a as usize])
                .then(a.cmp(&b))
        });
        ids
    }

    fn probabilities(logits: &[f32]) -> Vec<f64> {
        let max = f64::from(logits.iter().copied().fold(NEG_INF, f32::max));
        let w: Vec<f64> = logits.iter().map(|&l| (f64::from(l) - max).exp()).collect();
        let total: f64 = w.iter().sum();
        w.iter().map(|x| x / total).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(768))]

        #[test]
        fn top_k_keeps_exactly_the_k_best(mut l in logits(), top_k in 1u32..80) {
            let mut s = sampler(SamplerConfig { top_k, ..config() });
            let mut expected: Vec<u32> = ranked(&l).into_iter().take(top_k as usize).collect();
            expected.sort_unstable();
            prop_assert_eq!(kept(&mut s, &mut l, &[]), expected);
        }

        /// The kept set is a rank prefix; its mass reaches `top_p`, and without its last member
        /// it would not (both up to rounding).
        #[test]
        fn top_p_keeps_the_smallest_nucleus(mut l in logits(), top_p in 0.001f32..=1.0) {
            let mut s = sampler(SamplerConfig { top_p, ..config() });
            let got = kept(&mut s, &mut l, &[]);
            let order = ranked(&l);
            let mut prefix: Vec<u32> = order[..got.len()].to_vec();
            prefix.sort_unstable();
            prop_assert_eq!(&got, &prefix, "not a rank prefix");
            let p = probabilities(&l);
            let mass: f64 = order[..got.len()].iter().map(|&t| p[t as usize]).sum();
            let without_last = mass - p[order[got.len() - 1] as usize];
            let top_p = f64::from(top_p);
            prop_assert!(mass >= top_p - 1e-6 || got.len() == order.len(), "mass {mass} < {top_p}");
            prop_assert!(without_last < top_p + 1e-6, "{without_last} already reaches {top_p}");
        }

        #[test]
        fn min_p_keeps_tokens_above_the_threshold(mut l in logits(), min_p in 0.0f32..=1.0) {
            let mut s = sampler(SamplerConfig { min_p, ..config() });
            let got = kept(&mut s, &mut l, &[]);
            let p = probabilities(&l);
            let best = p.iter().copied().fold(0.0, f64::max);
            let threshold = f64::from(min_p) * best;
            for t in 0..l.len() as u32 {
                let pt = p[t as usize];
                if (pt - threshold).abs() <= 1e-4 * best {
                    continue; // too close to call under rounding
                }
                prop_assert_eq!(got.contains(&t), pt > threshold, "token {} p {} vs {}", t, pt, threshold);
            }
        }

        /// After the filters, the weights are the tempered softmax of the survivors, relative to
        /// the best.
        #[test]
        fn weights_are_tempered_softmax(mut l in logits(), temperature in 0.05f32..4.0) {
            let original = l.clone();
            let mut s = sampler(SamplerConfig { temperature, ..config() });
            let Prepared::Candidates(n) = s.prepare(&mut l, &[]).unwrap() else {
                panic!("expected candidates")
            };
            let max = f64::from(original.iter().copied().fold(NEG_INF, f32::max));
            for (id, w) in s.survivors(n) {
                let x = (f64::from(original[id as usize]) - max) / f64::from(temperature);
                let expected = if x < -87.0 { 0.0 } else { x.exp() };
                // The exponential is good to 1e-6; the f32 argument itself carries a rounding
                // error of a few ulps of |x|, which the exponential turns into a relative one.
                let tolerance = expected * (1e-6 + 4.0 * f64::from(f32::EPSILON) * x.abs()) + 1e-37;
                prop_assert!((f64::from(w) - expected).abs() <= tolerance,
                    "token {} weight {} expected {}", id, w, expected);
            }
        }
    }
}
