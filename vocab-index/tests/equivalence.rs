//! Property tests: on random vocabularies (duplicates, empty tokens, non-UTF-8 bytes, shared
//! prefixes) both trie backends make exactly the same calls, and the tokens they allow equal a
//! brute-force check of each token's bytes.

mod common;

use common::{
    All, Dfa, Event, Forbidden, Predicate, brute_force, spare, walk, walk_from, walk_with_spare,
};
use proptest::prelude::*;
use vocab_index::{DoubleArrayTrie, FlatTrie, TokenId, VocabIndex, Vocabulary};

/// Bytes biased to a small alphabet, so tokens share prefixes, with some arbitrary bytes
/// (including 0x00, 0xFF and invalid UTF-8).
fn byte() -> impl Strategy<Value = u8> {
    prop_oneof![6 => prop::sample::select(b"abc".to_vec()), 1 => any::<u8>()]
}

/// Up to 80 tokens of up to 7 bytes, some repeated, plus special ids.
fn vocabulary() -> impl Strategy<Value = Vocabulary> {
    (
        prop::collection::vec(prop::collection::vec(byte(), 0..8), 0..80),
        any::<u64>(),
    )
        .prop_map(|(mut tokens, seed)| {
            // Repeat a few tokens under new ids, and mark a few ids special.
            let n = tokens.len();
            for k in 0..n / 8 {
                let i = (seed as usize).wrapping_add(k * 7919) % n;
                tokens.push(tokens[i].clone());
            }
            let special: Vec<TokenId> = (0..tokens.len())
                .filter(|i| (seed >> (i % 64)) & 7 == 0)
                .map(|i| TokenId::new(i as u32).unwrap())
                .collect();
            Vocabulary::new(tokens, special).unwrap()
        })
}

fn forbidden() -> impl Strategy<Value = Forbidden> {
    prop::collection::vec((1usize..6, byte()), 0..6).prop_map(Forbidden)
}

fn dfa() -> impl Strategy<Value = Dfa> {
    (1usize..5, 2usize..6).prop_flat_map(|(states, classes)| {
        prop::collection::vec(
            prop_oneof![1 => Just(u32::MAX), 4 => 0..states as u32],
            states * classes,
        )
        .prop_map(move |table| Dfa { classes, table })
    })
}

/// Both backends over `ids`: identical logs, allowed tokens equal to brute force.
fn check_equivalent<P: Predicate>(
    vocab: &Vocabulary,
    ids: &[TokenId],
    predicate: &P,
) -> Result<(), TestCaseError> {
    let flat = FlatTrie::build(vocab, ids.iter().copied()).unwrap();
    let da = DoubleArrayTrie::build(vocab, ids.iter().copied()).unwrap();
    prop_assert_eq!(flat.num_tokens(), da.num_tokens());
    prop_assert_eq!(flat.num_nodes(), da.num_nodes());
    let (flat_log, flat_allowed) = walk(&flat, vocab, predicate, true);
    let (da_log, da_allowed) = walk(&da, vocab, predicate, true);
    prop_assert_eq!(&flat_log, &da_log);
    prop_assert_eq!(&flat_allowed, &da_allowed);
    prop_assert_eq!(&flat_allowed, &brute_force(vocab, ids, predicate));
    // Pushes and pops balance, and every push answered `true` is eventually popped.
    let pushed = flat_log
        .iter()
        .filter(|e| matches!(e, Event::Push(_, true)))
        .count();
    let popped: usize = flat_log
        .iter()
        .map(|e| if let Event::Pop(n) = e { *n } else { 0 })
        .sum();
    prop_assert_eq!(pushed, popped);

    // With a spare id: the same calls, plus one spare per accepted node without tokens.
    let (flat_spare_log, flat_spare_allowed) =
        walk_with_spare(&flat, vocab, predicate, true, spare(vocab));
    let (da_spare_log, _) = walk_with_spare(&da, vocab, predicate, true, spare(vocab));
    prop_assert_eq!(&flat_spare_log, &da_spare_log);
    prop_assert_eq!(&flat_spare_allowed, &flat_allowed);
    let without: Vec<Event> = flat_spare_log
        .iter()
        .copied()
        .filter(|e| *e != Event::Spare)
        .collect();
    prop_assert_eq!(&without, &flat_log);
    // A spare follows exactly the accepted pushes not followed by a token.
    for (i, e) in flat_spare_log.iter().enumerate() {
        if let Event::Push(_, true) = e {
            let next = flat_spare_log.get(i + 1);
            prop_assert!(matches!(next, Some(Event::Spare | Event::Token(_))));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn backends_agree_on_default_tries(vocab in vocabulary(), f in forbidden(), d in dfa()) {
        let ids: Vec<TokenId> = vocab.indexable_ids().collect();
        check_equivalent(&vocab, &ids, &All)?;
        check_equivalent(&vocab, &ids, &f)?;
        check_equivalent(&vocab, &ids, &d)?;
        // Every indexed id is found at its node by both backends.
        let flat = FlatTrie::new(&vocab).unwrap();
        let da = DoubleArrayTrie::new(&vocab).unwrap();
        for &id in &ids {
            let f_ids: Vec<_> = flat.tokens_at(flat.node_at(vocab.bytes(id)).unwrap()).collect();
            let d_ids: Vec<_> = da.tokens_at(da.node_at(vocab.bytes(id)).unwrap()).collect();
            prop_assert_eq!(&f_ids, &d_ids);
            prop_assert!(f_ids.contains(&id));
        }
    }

    #[test]
    fn backends_agree_on_subsets(
        vocab in vocabulary(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..40),
        d in dfa(),
    ) {
        // Any ids, special ones and repeats included.
        let ids: Vec<TokenId> = if vocab.is_empty() {
            Vec::new()
        } else {
            picks.iter().map(|p| TokenId::new(p.index(vocab.len()) as u32).unwrap()).collect()
        };
        check_equivalent(&vocab, &ids, &All)?;
        check_equivalent(&vocab, &ids, &d)?;
    }

    #[test]
    fn walk_from_is_the_walk_restricted_to_a_prefix(
        vocab in vocabulary(),
        prefix in prop::collection::vec(byte(), 0..4),
        d in dfa(),
    ) {
        let ids: Vec<TokenId> = vocab.indexable_ids().collect();
        let flat = FlatTrie::new(&vocab).unwrap();
        let da = DoubleArrayTrie::new(&vocab).unwrap();
        let (flat_log, flat_allowed) = walk_from(&flat, &vocab, &d, &prefix);
        let (da_log, da_allowed) = walk_from(&da, &vocab, &d, &prefix);
        prop_assert_eq!(&flat_log, &da_log);
        prop_assert_eq!(&flat_allowed, &da_allowed);
        let expected: Vec<TokenId> = brute_force(&vocab, &ids, &d)
            .into_iter()
            .filter(|&id| vocab.bytes(id).starts_with(&prefix))
            .collect();
        prop_assert_eq!(&flat_allowed, &expected);

        // With a spare id: the same calls plus spares, the same on both backends.
        let with_spare = |index: &dyn Fn(&mut common::Recorder<'_, Dfa>)| {
            let mut r = common::Recorder::new(&vocab, &d);
            r.spare = spare(&vocab);
            index(&mut r);
            r.finish().0
        };
        let flat_spare_log = with_spare(&|r| flat.walk_from(&prefix, r));
        let da_spare_log = with_spare(&|r| da.walk_from(&prefix, r));
        prop_assert_eq!(&flat_spare_log, &da_spare_log);
        let without: Vec<Event> =
            flat_spare_log.iter().copied().filter(|e| *e != Event::Spare).collect();
        prop_assert_eq!(&without, &flat_log);
    }
}
