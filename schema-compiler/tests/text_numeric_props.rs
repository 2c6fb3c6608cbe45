//! Property tests for number-range languages and exact decimals.
//!
//! The regex from `number_language` must full-match a text exactly when the text is a plain
//! JSON number within the digit limits whose value, computed with `Decimal`, lies in the range.
//! `Decimal` itself is checked against big-integer arithmetic.

use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use num_bigint::BigInt;
use proptest::prelude::*;
use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::{Anchored, MatchKind, util::start, util::syntax};
use schema_compiler::text::decimal::Decimal;
use schema_compiler::text::numeric::{Bound, NumberSpec, number_language};

fn plain_json_number() -> regex::Regex {
    regex::Regex::new(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?$").unwrap()
}

/// What the language must contain, decided without regexes over values.
fn expected(spec: &NumberSpec, text: &str) -> bool {
    if !plain_json_number().is_match(text) {
        return false;
    }
    let unsigned = text.trim_start_matches('-');
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if spec.max_int_digits.is_some_and(|n| int.len() > n as usize) {
        return false;
    }
    let max_frac = if spec.integer {
        Some(0)
    } else {
        spec.max_frac_digits
    };
    if max_frac.is_some_and(|m| frac.len() > m as usize) {
        return false;
    }
    let v: Decimal = text.parse().unwrap();
    let lo_ok = spec.lower.as_ref().is_none_or(|b| match v.cmp(&b.value) {
        Ordering::Greater => true,
        Ordering::Equal => b.inclusive,
        Ordering::Less => false,
    });
    let hi_ok = spec.upper.as_ref().is_none_or(|b| match v.cmp(&b.value) {
        Ordering::Less => true,
        Ordering::Equal => b.inclusive,
        Ordering::Greater => false,
    });
    lo_ok && hi_ok
}

/// Small decimal texts, so that bounds and tested texts often share digits.
fn small_decimal() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop_oneof![Just("0".to_owned()), "[1-9][0-9]{0,3}"],
        prop::option::of("[0-9]{1,3}"),
    )
        .prop_map(|(neg, int, frac)| {
            let mut s = String::new();
            if neg {
                s.push('-');
            }
            s.push_str(&int);
            if let Some(f) = frac {
                s.push('.');
                s.push_str(&f);
            }
            s
        })
}

/// Texts to test: mostly valid numbers near the bounds, some malformed ones.
fn probe_text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => small_decimal(),
        1 => "-?[0-9]{1,3}(\\.[0-9]{0,2})?",
        1 => "-?[0-9]{1,5}(\\.[0-9]{1,5})?",
    ]
}

fn bound() -> impl Strategy<Value = Option<Bound>> {
    prop::option::of(
        (small_decimal(), any::<bool>()).prop_map(|(t, inclusive)| Bound {
            value: t.parse().unwrap(),
            inclusive,
        }),
    )
}

fn spec() -> impl Strategy<Value = NumberSpec> {
    (
        prop::bool::weighted(0.25),
        bound(),
        bound(),
        prop::option::of(1u32..=5),
        prop::option::of(0u32..=4),
    )
        .prop_map(
            |(integer, lower, upper, max_int_digits, max_frac_digits)| NumberSpec {
                integer,
                lower,
                upper,
                max_int_digits,
                max_frac_digits,
                ..NumberSpec::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn range_language_is_exact(
        spec in spec(),
        texts in prop::collection::vec(probe_text(), 40),
    ) {
        let re = number_language(&spec).unwrap();
        let full = regex::Regex::new(&format!("^(?:{re})$")).unwrap();
        let mut probes = texts;
        // Also probe the bounds themselves and their neighbours in text form.
        for b in [&spec.lower, &spec.upper].into_iter().flatten() {
            let p = b.value.to_plain_string().unwrap();
            probes.push(format!("{p}0"));
            probes.push(format!("{p}1"));
            if !p.contains('.') {
                probes.push(format!("{p}.0"));
                probes.push(format!("{p}.01"));
            }
            probes.push(p);
        }
        for t in &probes {
            prop_assert_eq!(full.is_match(t), expected(&spec, t), "text {} spec {:?} regex {}", t, spec, re);
        }
    }

    #[test]
    fn decimal_forms_are_equal(
        neg in any::<bool>(),
        mantissa in 1u64..1_000_000,
        exp in -30i32..30,
        shift in 0usize..5,
    ) {
        let sign = if neg { "-" } else { "" };
        let a: Decimal = format!("{sign}{mantissa}e{exp}").parse().unwrap();
        let b: Decimal = format!("{sign}{mantissa}{}E{}", "0".repeat(shift), exp - shift as i32)
            .parse()
            .unwrap();
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(a.to_canonical_string(), b.to_canonical_string());
        let h = |d: &Decimal| {
            let mut s = DefaultHasher::new();
            d.hash(&mut s);
            s.finish()
        };
        prop_assert_eq!(h(&a), h(&b));
        let plain = a.to_plain_string().unwrap();
        prop_assert_eq!(plain.parse::<Decimal>().unwrap(), a);
    }

    #[test]
    fn decimal_agrees_with_big_integers(
        a in (-1_000_000i64..1_000_000, -12i32..12),
        b in (-1_000_000i64..1_000_000, -12i32..12),
    ) {
        let da: Decimal = format!("{}e{}", a.0, a.1).parse().unwrap();
        let db: Decimal = format!("{}e{}", b.0, b.1).parse().unwrap();
        // Scale both to the smaller exponent.
        let m = a.1.min(b.1);
        let ia = BigInt::from(a.0) * BigInt::from(10).pow((a.1 - m) as u32);
        let ib = BigInt::from(b.0) * BigInt::from(10).pow((b.1 - m) as u32);
        prop_assert_eq!(da.cmp(&db), ia.cmp(&ib));
        prop_assert_eq!(da == db, ia == ib);
        if b.0 != 0 {
            let multiple = (&ia % &ib) == BigInt::from(0);
            prop_assert_eq!(da.is_multiple_of(&db).unwrap(), multiple);
        }
        prop_assert_eq!(da.is_integer(), a.1 >= 0 || a.0 % 10i64.pow((-a.1) as u32) == 0);
    }
}

fn build_dfa(re: &str) -> dense::DFA<Vec<u32>> {
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Anchored),
        )
        .syntax(syntax::Config::new().unicode(true).utf8(true))
        .build(re)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn dfa_match(dfa: &dense::DFA<Vec<u32>>, s: &str) -> bool {
    let mut st = dfa
        .start_state(&start::Config::new().anchored(Anchored::Yes))
        .unwrap();
    for &b in s.as_bytes() {
        st = dfa.next_state(st, b);
    }
    dfa.is_match_state(dfa.next_eoi_state(st))
}

fn d(s: &str) -> Decimal {
    s.parse().unwrap()
}

/// Large and awkward ranges build with the automaton's DFA settings and the default
/// `regex-syntax` nest limit. Run with `--nocapture` for sizes.
#[test]
fn range_dfas_build() {
    let max_f64 = "1.7976931348623157e308";
    let cases: Vec<(&str, NumberSpec)> = vec![
        (
            "[-1e308, 1.7976931348623157e308]",
            NumberSpec {
                lower: Some(Bound::inclusive(d("-1e308"))),
                upper: Some(Bound::inclusive(d(max_f64))),
                ..NumberSpec::default()
            },
        ),
        (
            "(5e-324, 1e-300)",
            NumberSpec {
                lower: Some(Bound::exclusive(d("5e-324"))),
                upper: Some(Bound::exclusive(d("1e-300"))),
                ..NumberSpec::default()
            },
        ),
        (
            "(0.5, 99.95]",
            NumberSpec {
                lower: Some(Bound::exclusive(d("0.5"))),
                upper: Some(Bound::inclusive(d("99.95"))),
                ..NumberSpec::default()
            },
        ),
        (
            "integer [-2^63, 2^64-1]",
            NumberSpec {
                integer: true,
                lower: Some(Bound::inclusive(d("-9223372036854775808"))),
                upper: Some(Bound::inclusive(d("18446744073709551615"))),
                ..NumberSpec::default()
            },
        ),
        (
            "400-digit bounds, all significant",
            NumberSpec {
                lower: Some(Bound::exclusive(d(&format!("-{}.5", "7".repeat(398))))),
                upper: Some(Bound::exclusive(d(&format!("0.{}1", "3".repeat(397))))),
                ..NumberSpec::default()
            },
        ),
        (
            "unbounded with exponent, 3/4/5 digits",
            NumberSpec {
                exponent: true,
                max_int_digits: Some(3),
                max_frac_digits: Some(4),
                max_exp_digits: Some(5),
                ..NumberSpec::default()
            },
        ),
    ];
    for (name, spec) in cases {
        let re = number_language(&spec).unwrap();
        let t0 = std::time::Instant::now();
        let dfa = build_dfa(&re);
        println!(
            "{name:<40} regex {:>7} bytes, dfa {:>9} bytes, built in {} ms",
            re.len(),
            dfa.memory_usage(),
            t0.elapsed().as_millis()
        );
        if let Some(b) = &spec.upper {
            let p = b.value.to_plain_string().unwrap();
            assert_eq!(dfa_match(&dfa, &p), b.inclusive, "{name}: {p}");
        }
        if let Some(b) = &spec.lower {
            let p = b.value.to_plain_string().unwrap();
            assert_eq!(dfa_match(&dfa, &p), b.inclusive, "{name}: {p}");
        }
    }
}
