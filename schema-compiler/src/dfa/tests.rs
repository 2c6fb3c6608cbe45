//! Unit tests of the DFAs: building, products, minimization, content levels and budgets.

#[test]
fn co_distance_counts_the_bytes_to_a_string_both_take() {
    let a = Dfa::from_regex(
        "0|-?[1-9][0-9]*(\\.[0-9]*[1-9])?|-?0\\.[0-9]*[1-9]",
        DfaLimits::default(),
    )
    .unwrap();
    let b = Dfa::from_regex("-?[0-9]+(\\.0*)?", DfaLimits::default()).unwrap();
    let d = a.co_distance(&b, b"-.0123456789");
    let at = |text: &[u8]| {
        let (s, t) = (a.run(a.start(), text), b.run(b.start(), text));
        d[a.state_index(s) * b.num_states() + b.state_index(t)]
    };
    assert_eq!(at(b"12"), 0);
    assert_eq!(at(b"-"), 1);
    assert_eq!(at(b""), 1);
    // After `-0`, `a` needs a point and a non-zero last digit, and `b` takes only zeros
    // after the point: no string both take.
    assert_eq!(at(b"-0"), NO_PATH);
    assert_eq!(at(b"-0."), NO_PATH);
}

#[test]
fn language_size_counts_the_strings_a_dfa_takes() {
    let size = |re: &str| {
        Dfa::from_regex(re, DfaLimits::default())
            .unwrap()
            .language_size()
    };
    assert_eq!(size("a|bc|b|"), Some(4));
    // Bytes of one class count one by one.
    assert_eq!(size("[a-j][0-9]?"), Some(10 * 11));
    assert_eq!(size("x(ab|cd)(ef|gh)y"), Some(4));
    // One character: every scalar value but `x`, in its UTF-8 bytes.
    assert_eq!(size("[^x]"), Some(0x11_0000 - 0x800 - 1));
    assert_eq!(size("a*"), None);
    assert_eq!(size("ab(c+)?"), None);
    // Within another DFA, over some bytes: the plain numbers that are 1 or 2.5 written
    // canonically (no trailing zero).
    let values = Dfa::from_regex("1(\\.0*)?|2\\.50*", DfaLimits::default()).unwrap();
    assert_eq!(values.language_size(), None);
    let canonical = Dfa::from_regex(
        "0|-?[1-9][0-9]*(\\.[0-9]*[1-9])?|-?0\\.[0-9]*[1-9]",
        DfaLimits::default(),
    )
    .unwrap();
    assert_eq!(
        values.language_size_within(&canonical, b"-.0123456789"),
        Some(2)
    );
    assert_eq!(
        canonical.language_size_within(&canonical, b"-.0123456789"),
        None
    );
}

#[test]
fn each_level_universe_holds_exactly_the_characters_of_its_level() {
    for level in 0..CONTENT_LEVELS {
        let u = level_universe(level);
        assert!(u.accepts(b""));
        let mut buf = [0u8; 4];
        for c in char::MIN..=char::MAX {
            assert_eq!(
                u.accepts(c.encode_utf8(&mut buf).as_bytes()),
                content_level_allows(level, c),
                "level {level}, character {c:?}"
            );
        }
    }
}

#[test]
fn string_flags_name_the_highest_level_each_state_takes() {
    let flags = |pattern: &str, prefix: &[u8]| {
        let d = Dfa::from_regex(pattern, DfaLimits::default()).unwrap();
        let s = d.run(d.start(), prefix);
        let f = d.string_flags(s);
        (f.live, f.free)
    };
    // Any character, escapes included.
    assert_eq!(flags("(?s:.*)", b""), (6, 6));
    // No newline: every unescaped character.
    assert_eq!(flags("[^\\n]*", b""), (5, 5));
    assert_eq!(
        flags("[^\\n]+", b""),
        (5, 0),
        "empty content does not accept"
    );
    // ECMAScript patterns: `.` takes no line terminator (U+2028 and U+2029 among them),
    // `\s` holds the non-ASCII spaces the levels below 4 leave out.
    let ecma = |pattern: &str, prefix: &[u8]| {
        flags(
            &crate::text::ecma::pattern_language(pattern).unwrap(),
            prefix,
        )
    };
    assert_eq!(ecma("^.*$", b""), (4, 4));
    assert_eq!(ecma("^.+$", b""), (4, 0), "empty content does not accept");
    assert_eq!(ecma("^method\\..+$", b"method.x"), (4, 4));
    assert_eq!(
        ecma("^[^\\s]+$", b"a"),
        (2, 2),
        "letters, digits, non-ASCII"
    );
    assert_eq!(ecma("^\\S+$", b"a"), (2, 2));
    assert_eq!(ecma("^[^\\s/]+$", b"a"), (2, 2));
    assert_eq!(ecma("^[^\\s\\u0080-\\uffff]+$", b"a"), (1, 1), "ASCII only");
    // No space, no `/`: letters, digits and non-ASCII characters only.
    assert_eq!(flags(r"[^ /]+", b"a"), (2, 2));
    assert_eq!(flags(r"[^ /]+", b""), (2, 0));
    assert_eq!(flags("[a-z]+", b"a"), (0, 0), "no digits");
    assert_eq!(flags(r"\w+", b"a"), (1, 1), "ASCII letters and digits");
    assert_eq!(flags(r"\d{4}-\d{2}", b"20"), (0, 0));
    // A bounded repetition is universal while it has room.
    assert_eq!(flags(".{0,3}", b""), (0, 0), "four characters kill it");
    // The side levels: the space level, beside level 1 (ASCII letters, digits and the space),
    // and the non-space level, beside level 2 (what `\S` takes).
    let side = |pattern: &str, prefix: &[u8]| {
        let d = Dfa::from_regex(
            &crate::text::ecma::pattern_language(pattern).unwrap(),
            DfaLimits::default(),
        )
        .unwrap();
        d.string_flags(d.run(d.start(), prefix))
    };
    let space = |pattern: &str, prefix: &[u8]| {
        let f = side(pattern, prefix);
        (f.live, f.space_live, f.space_free)
    };
    assert_eq!(space("^[\\w\\s/.,:-]+$", b""), (1, true, false));
    assert_eq!(space("^[\\w\\s/.,:-]+$", b"a"), (1, true, true));
    assert_eq!(space("^[0-9a-zA-Z -_]*$", b""), (1, true, true));
    assert_eq!(space("^[a-z ]*$", b""), (0, false, false), "no digits");
    assert_eq!(space("^[^\\s]+$", b"a"), (2, false, false), "no space");
    assert_eq!(space("^.*$", b""), (4, true, true), "inside level 2");
    let nonspace = |pattern: &str, prefix: &[u8]| {
        let f = side(pattern, prefix);
        (f.live, f.nonspace_live, f.nonspace_free)
    };
    assert_eq!(nonspace("^\\S+$", b""), (2, true, false));
    assert_eq!(nonspace("^\\S+$", b"a"), (2, true, true));
    assert_eq!(nonspace("^[^\\s]*$", b""), (2, true, true));
    assert_eq!(nonspace("^https?://\\S+$", b"http://x"), (2, true, true));
    assert_eq!(nonspace("^[^\\s/]+$", b"a"), (2, false, false), "no `/`");
    assert_eq!(nonspace("^[^ ]+$", b"a"), (2, true, true), "no space");
    assert_eq!(nonspace("^[\\w-]+$", b"a"), (1, false, false));
    assert_eq!(nonspace("^.*$", b""), (4, true, true), "inside level 3");
    assert_eq!(nonspace("^[^<>]*$", b""), (3, false, false), "the space");
}

#[test]
fn flags_learnt_from_another_state_are_the_flags_of_each_state() {
    // A state that takes every content also decides the states it reaches at a character
    // boundary: flags asked in one table, where earlier answers fill in others, must be those
    // each state gets asked first in a table of its own.
    let patterns = [
        "(?s:.*)",
        "(?s:a.*)",
        "(?s:(ab|cd).*)",
        "(?s:x.*y)",
        "(?s:x.+)",
        "(?s:foo.*|bar)",
        "(?s:é.*)",
        "[^\\n]*",
        "\\d{4}-\\d{2}",
        "(?s:.{0,3})",
        "(?s:[0-9]+.*)",
    ];
    for pattern in patterns {
        let d = Dfa::from_regex(pattern, DfaLimits::default()).unwrap();
        // Every state, in the order a walk from the start meets them.
        let mut states = vec![d.start()];
        let mut i = 0;
        while i < states.len() {
            for b in 0..=255u8 {
                let t = d.next(states[i], b);
                if t != DEAD && !states.contains(&t) {
                    states.push(t);
                }
            }
            i += 1;
        }
        for want_free in [false, true] {
            let shared = LazyFlags::default();
            for &s in &states {
                let alone = d.content_flags(&LazyFlags::default(), s, |_| true, want_free);
                let learnt = d.content_flags(&shared, s, |_| true, want_free);
                assert_eq!(
                    learnt, alone,
                    "{pattern}: state {s}, free asked: {want_free}"
                );
            }
        }
    }
}

#[test]
fn bounded_repetitions_have_exact_budgets() {
    let budget = |pattern: &str, prefix: &[u8], level: u8| {
        let d = Dfa::from_regex(pattern, DfaLimits::default()).unwrap();
        d.string_budget(d.run(d.start(), prefix), level)
    };
    assert_eq!(budget("[0-9a-zA-Z_-]{1,255}", b"", 0), Some(255));
    assert_eq!(budget("[0-9a-zA-Z_-]{1,255}", b"ab", 0), Some(253));
    assert_eq!(
        budget("[0-9a-zA-Z_-]{1,255}", b"", 1),
        None,
        "é kills, a lives"
    );
    assert_eq!(
        budget("[0-9a-z]{0,4}", b"ab", 0),
        None,
        "uppercase kills, a lives"
    );
    assert_eq!(budget("[0-9a-zA-Z]{0,4}", b"abcd", 0), Some(0));
    assert_eq!(budget("[0-9a-zA-Z]*", b"", 0), None, "no limit");
    // Multi-byte characters count once; the budget holds at every level `.` takes.
    let ecma = crate::text::ecma::pattern_language("^.{2,5}$").unwrap();
    assert_eq!(budget(&ecma, "é".as_bytes(), 3), Some(4));
    assert_eq!(budget(&ecma, b"", 2), Some(5));
    assert_eq!(budget(&ecma, b"", 4), None, "U+2028 kills at once");
    // Content past the budget must die whatever it is: here `x` opens a longer tail.
    assert_eq!(budget("[0-9a-zA-Z]{0,3}|x[0-9a-zA-Z]*", b"", 0), None);
    assert_eq!(
        budget("(?:[0-9a-zA-Z]{2}){0,2}", b"", 0),
        Some(4),
        "live, if not accepting, up to four"
    );
}

use super::*;

fn lim() -> DfaLimits {
    DfaLimits::default()
}

#[test]
fn regex_full_match_and_liveness() {
    let d = Dfa::from_regex("ab+c", lim()).unwrap();
    assert!(d.accepts(b"abc"));
    assert!(d.accepts(b"abbbc"));
    assert!(!d.accepts(b"ab"));
    assert!(!d.accepts(b"abcx"));
    // Every surviving prefix is live.
    let s = d.run(d.start(), b"ab");
    assert_ne!(s, DEAD);
    assert_eq!(d.run(d.start(), b"ac"), DEAD);
    assert_eq!(d.run(d.start(), b"x"), DEAD);
}

#[test]
fn anchors_and_word_boundaries_use_end_of_input() {
    let d = Dfa::from_regex(r"(?s:.*)(?-u:\b)foo(?-u:\b)(?s:.*)", lim()).unwrap();
    assert!(d.accepts(b"a foo b"));
    assert!(d.accepts(b"foo"));
    assert!(!d.accepts(b"afoo"));
    assert!(!d.accepts(b"foob"));
    let d = Dfa::from_regex(r"(?s:.*?)(?:^a|b$)(?s:.*)", lim()).unwrap();
    assert!(d.accepts(b"axx"));
    assert!(d.accepts(b"xxb"));
    assert!(!d.accepts(b"xax"));
}

#[test]
fn unicode_dot_rejects_invalid_utf8() {
    let d = Dfa::from_regex("(?s:.*)", lim()).unwrap();
    assert!(d.accepts("héllo €".as_bytes()));
    assert!(!d.accepts(b"\xff"));
    assert!(!d.accepts(b"\xc3"));
    // A partial character is a live prefix.
    assert_ne!(d.run(d.start(), b"\xe2\x82"), DEAD);
    assert!(d.is_prefix_closed() || !d.is_final(d.run(d.start(), b"\xe2\x82")));
}

#[test]
fn multi_pattern_match_sets() {
    let d = Dfa::from_regexes(&["foo", "f.*", "(?s:.*)"], lim()).unwrap();
    let s = d.run(d.start(), b"foo");
    assert_eq!(d.final_set(s), Some(&[0, 1, 2][..]));
    let s = d.run(d.start(), b"fa");
    assert_eq!(d.final_set(s), Some(&[1, 2][..]));
    let s = d.run(d.start(), b"x");
    assert_eq!(d.final_set(s), Some(&[2][..]));
}

#[test]
fn literals_trie() {
    let d = Dfa::from_literals(&["a", "ab", "b"], lim()).unwrap();
    assert_eq!(d.final_set(d.run(d.start(), b"ab")), Some(&[1][..]));
    assert_eq!(d.final_set(d.run(d.start(), b"a")), Some(&[0][..]));
    assert_eq!(d.run(d.start(), b"c"), DEAD);
    let e = Dfa::from_literals::<&[u8]>(&[], lim()).unwrap();
    assert!(e.is_empty());
}

#[test]
fn products() {
    let a = Dfa::from_regex("[a-z]+", lim()).unwrap();
    let b = Dfa::from_regex(".{2,3}", lim()).unwrap();
    let i = a.intersect(&b, lim()).unwrap();
    assert!(i.accepts(b"ab"));
    assert!(!i.accepts(b"a"));
    assert!(!i.accepts(b"abcd"));
    assert!(!i.accepts(b"A1"));
    let u = a.union(&b, lim()).unwrap();
    assert!(u.accepts(b"a"));
    assert!(u.accepts(b"A1"));
    assert!(!u.accepts(b"A"));
    let any = Dfa::from_regex("(?s:.*)", lim()).unwrap();
    let d = any.difference(&a, lim()).unwrap();
    assert!(d.accepts(b""));
    assert!(d.accepts(b"A"));
    assert!(d.accepts(b"ab1"));
    assert!(!d.accepts(b"ab"));
    assert!(!d.accepts(b"\xff"));
    // Empty intersection is the empty language.
    let x = Dfa::from_regex("x+", lim()).unwrap();
    assert!(
        x.intersect(&a.difference(&x, lim()).unwrap(), lim())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn products_of_many_take_the_strings_one_or_some_alternatives_take() {
    // Each alternative the strings all its regexes take.
    let alts: Vec<Vec<Dfa>> = [
        &["[a-c]+", "(?s:.{0,2})"][..],
        &["b+"],
        &["(?s:.{2})"],
        &["b+"],
    ]
    .iter()
    .map(|res| {
        res.iter()
            .map(|re| Dfa::from_regex(re, lim()).unwrap())
            .collect()
    })
    .collect();
    let alts: Vec<(Vec<&Dfa>, Dfa)> = alts
        .iter()
        .map(|alt| {
            let mut all = alt[0].clone();
            for d in &alt[1..] {
                all = all.intersect(d, lim()).unwrap();
            }
            (alt.iter().collect(), all)
        })
        .collect();
    let within = Dfa::from_regex("[a-z]*", lim()).unwrap();
    for n in 1..=alts.len() {
        let parts: Vec<&[&Dfa]> = alts[..n].iter().map(|a| &a.0[..]).collect();
        let refs: Vec<&Dfa> = alts[..n].iter().map(|a| &a.1).collect();
        for within in [None, Some(&within)] {
            let d = Dfa::exactly_one(&parts, within, usize::MAX, lim())
                .unwrap()
                .unwrap();
            let some = Dfa::union_of(&parts, usize::MAX, lim()).unwrap().unwrap();
            // Every string of up to 4 bytes over a few letters, against the definition.
            let mut texts = vec![Vec::new()];
            for len in 0..4 {
                let longer: Vec<Vec<u8>> = texts
                    .iter()
                    .filter(|t| t.len() == len)
                    .flat_map(|t| {
                        b"abcZ".iter().map(move |&b| {
                            let mut t = t.clone();
                            t.push(b);
                            t
                        })
                    })
                    .collect();
                texts.extend(longer);
            }
            for t in &texts {
                let count = refs.iter().filter(|a| a.accepts(t)).count();
                let expected = count == 1 && within.is_none_or(|w| w.accepts(t));
                assert_eq!(d.accepts(t), expected, "{n} alternatives, {t:?}");
                assert_eq!(some.accepts(t), count > 0, "{n} alternatives, {t:?}");
            }
            // As small as the same language built by binary products.
            let (mut one, mut two) = (Dfa::empty(), Dfa::empty());
            for a in &refs {
                two = two.union(&one.intersect(a, lim()).unwrap(), lim()).unwrap();
                one = one.union(a, lim()).unwrap();
            }
            assert_eq!(some.num_states(), one.num_states(), "{n} alternatives");
            if let Some(w) = within {
                one = one.intersect(w, lim()).unwrap();
            }
            let chained = one.difference(&two, lim()).unwrap();
            assert_eq!(d.num_states(), chained.num_states(), "{n} alternatives");
        }
    }
}

#[test]
fn a_product_of_many_stops_at_its_budget() {
    // Unanchored patterns: the tuples track which letters were seen, 2^8 of them, though
    // the union needs two states.
    let alts: Vec<Dfa> = "abcdefgh"
        .chars()
        .map(|c| Dfa::from_regex(&format!("[a-z]*{c}[a-z]*"), lim()).unwrap())
        .collect();
    let parts: Vec<[&Dfa; 1]> = alts.iter().map(|d| [d]).collect();
    let parts: Vec<&[&Dfa]> = parts.iter().map(|p| &p[..]).collect();
    assert!(Dfa::union_of(&parts, 100, lim()).unwrap().is_none());
    let all = Dfa::union_of(&parts, 1000, lim()).unwrap().unwrap();
    assert_eq!(all.num_states(), 3, "dead, start and seen");
    assert!(all.accepts(b"zzhz"));
    assert!(!all.accepts(b"zz"));
}

#[test]
fn min_chars() {
    let d = Dfa::from_regex("é{3}", lim()).unwrap();
    let dist = d.min_chars_to_final();
    assert_eq!(dist[d.index(d.start())], 3);
    let s = d.run(d.start(), "é".as_bytes());
    assert_eq!(dist[d.index(s)], 2);
    let s = d.run(d.start(), b"\xc3");
    assert_eq!(dist[d.index(s)], 2, "a started character counts as one");
}

#[test]
fn minimize_merges() {
    let d = Dfa::from_regex("(a|b)c|(d|e)c", lim()).unwrap();
    let before = d.num_states();
    let m = d.clone().minimize();
    assert!(m.num_states() <= before);
    for w in [&b"ac"[..], b"ec", b"a", b"cc", b""] {
        assert_eq!(m.accepts(w), d.accepts(w));
    }
}

/// A complete DFA with `n` states over `k` classes, transitions and match sets drawn from a
/// seeded generator; state 0 is dead. Not pruned, so unreachable and dead-end states occur.
fn random_dfa(seed: u64, n: usize, k: usize, sets: u32) -> Dfa {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut draw = |bound: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % bound as u64) as usize
    };
    let mut classes = [0u8; 256];
    for (byte, c) in classes.iter_mut().enumerate() {
        *c = (byte % k) as u8;
    }
    let stride = k as u32;
    let mut trans = vec![0u32; n * k];
    for t in trans.iter_mut().skip(k) {
        // Few targets per row keep chains and merges likely.
        *t = draw(n.min(8 + n / 4)) as u32 * stride;
    }
    let finals = (0..n)
        .map(|i| match draw(sets as usize + 2) {
            _ if i == 0 => NO_MATCH,
            0 | 1 => NO_MATCH,
            s => s as u32 - 2,
        })
        .collect();
    Dfa {
        classes,
        stride,
        trans,
        finals,
        match_sets: (0..sets).map(|s| vec![s].into_boxed_slice()).collect(),
        start: stride,
        univ: LazyFlags::default(),
        budgets: LazyBudgets::default(),
        toward: OnceLock::new(),
        ascii_only: OnceLock::new(),
        reps: LazyReps::default(),
    }
}

#[test]
fn hopcroft_finds_the_partition_moore_finds() {
    let same = |a: &Dfa, b: &Dfa| {
        a.trans == b.trans && a.finals == b.finals && a.start == b.start && a.stride == b.stride
    };
    let mut merged = 0;
    for seed in 0..400u64 {
        let n = 3 + (seed as usize * 7) % 90;
        let k = 1 + (seed as usize) % 6;
        let d = random_dfa(seed, n, k, 1 + (seed % 3) as u32);
        let (h, m) = (d.clone().minimize(), d.clone().minimize_by_moore());
        assert!(
            same(&h, &m),
            "seed {seed}: {} states against {}",
            h.num_states(),
            m.num_states()
        );
        merged += usize::from(h.num_states() < d.num_states());
    }
    assert!(merged > 50, "only {merged} random DFAs had states to merge");
    // Long chains (bounded lengths) are where Moore needs one pass per state.
    for pattern in [
        "[a-z]{0,300}",
        "(ab|a){1,50}c",
        "([a-z0-9-]{1,63}\\.){0,3}[a-z]{2,6}",
    ] {
        let d = Dfa::from_regex(pattern, lim()).unwrap();
        assert!(
            same(&d.clone().minimize(), &d.minimize_by_moore()),
            "{pattern}"
        );
    }
}

#[test]
fn the_regex_cache_is_shared_by_builds_with_different_deadlines() {
    let far = |secs| DfaLimits {
        deadline: Some(std::time::Instant::now() + std::time::Duration::from_secs(secs)),
        ..lim()
    };
    let pattern = "[a-q]{3}-cache-deadline";
    let a = cached_regex(pattern, far(60)).unwrap();
    let b = cached_regex(pattern, far(120)).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let past = DfaLimits {
        deadline: Some(std::time::Instant::now()),
        ..lim()
    };
    assert_eq!(
        Dfa::from_regex("[a-r]{3}-past", past).unwrap_err(),
        DfaError::Deadline
    );
}

/// Whether `a` and `b` give every byte string the same match set (or both none), exploring
/// the pairs of states they reach together on all 256 bytes.
fn same_match_sets(a: &Dfa, b: &Dfa) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    let mut queue = vec![(a.start(), b.start(), Vec::<u8>::new())];
    seen.insert((a.start(), b.start()));
    while let Some((x, y, path)) = queue.pop() {
        let fx = (x != DEAD).then(|| a.final_set(x)).flatten();
        let fy = (y != DEAD).then(|| b.final_set(y)).flatten();
        if fx != fy {
            return Err(format!("{path:?}: {fx:?} against {fy:?}"));
        }
        for byte in 0..=255u8 {
            let next = (
                if x == DEAD { DEAD } else { a.next(x, byte) },
                if y == DEAD { DEAD } else { b.next(y, byte) },
            );
            if next == (DEAD, DEAD) {
                continue;
            }
            if (next.0 == DEAD) != (next.1 == DEAD) {
                let mut p = path.clone();
                p.push(byte);
                return Err(format!("{p:?}: live in one DFA only"));
            }
            if seen.insert(next) {
                let mut p = path.clone();
                p.push(byte);
                queue.push((next.0, next.1, p));
            }
        }
    }
    Ok(())
}

proptest::proptest! {
    /// Property names built from a trie have the language and match sets of the regex
    /// alternation they stand for, with and without the catch-all.
    #[test]
    fn names_from_a_trie_match_the_regex_alternation(
        names in proptest::collection::btree_set("[ab\\.\\*é€😀\\n\"\\\\]{0,4}", 0..8),
        any in proptest::bool::ANY,
    ) {
        let names: Vec<String> = names.into_iter().collect();
        let limits = DfaLimits::default();
        let mut regexes: Vec<String> = names.iter().map(|n| regex_syntax::escape(n)).collect();
        if any {
            regexes.push(ANY_STRING.to_owned());
        }
        if regexes.is_empty() {
            return Ok(());
        }
        let from_regex = Dfa::from_regexes(&regexes, limits).unwrap();
        let from_trie = Dfa::from_names(&names, any, limits).unwrap();
        proptest::prop_assert_eq!(same_match_sets(&from_trie, &from_regex), Ok(()));
        proptest::prop_assert_eq!(from_trie.num_states(), from_regex.num_states(), "both minimal");
    }
}

#[test]
fn ascii_only_dfas_die_at_every_byte_from_0x80() {
    let of = |re: &str| Dfa::from_regex(re, lim()).unwrap();
    for re in [
        "[a-z]+",
        "[0-9]{4}-[0-9]{2}",
        "printInEndpoint",
        "(a|b)*c?",
        "x|\\n",
    ] {
        assert!(of(re).ascii_only(), "{re}");
    }
    // Some state takes a byte from 0x80 up: at the start (`é`, `.`, `\w`, a negated class) or
    // only later (`a(é)?`); `\d` takes every Unicode digit.
    for re in [
        "é",
        "(?s:.+)",
        "\\w+",
        "\\d",
        "[^\"]*",
        "a(é)?",
        "ab|a\u{10000}",
    ] {
        assert!(!of(re).ascii_only(), "{re}");
    }
}
