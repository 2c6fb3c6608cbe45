//! Every id of four real tokenizers (Llama 3, Qwen3, Gemma 3, Llama 2, under
//! `assets/tokenizers`; `cargo xtask fetch-assets` fetches them): recovered bytes against
//! `tokenizers` decoding, special/EOS/BOS ids, duplicates, and both trie backends agreeing.
//!
//! Where decoding one id alone differs from the id's bytes, the difference is one of these
//! classes, each counted and checked:
//!
//! - `lossy`: the bytes are not valid UTF-8 (a fragment of a multi-byte character, from
//!   byte-level BPE or a `<0xNN>` byte-fallback token); decoding replaces them with U+FFFD,
//!   exactly as `String::from_utf8_lossy` does.
//! - `stripped`: the decoder ends with `Strip` of one leading space (Llama 2): decoding a text
//!   drops the space its first token starts with (`▁the` alone decodes to `the`), though the
//!   token adds ` the` anywhere else.
//!
//! Anything else fails the test.

mod common;

use std::collections::BTreeMap;
use std::time::Instant;

use common::{
    All, ByteFn, Event, Predicate, brute_force, spare, tokenizer_path, walk, walk_from,
    walk_with_spare,
};
use vocab_index::tokenizers::Tokenizer;
use vocab_index::{DoubleArrayTrie, FlatTrie, TokenId, VocabIndex, Vocabulary};

/// What a real tokenizer is expected to look like.
struct Expected {
    name: &'static str,
    len: usize,
    special: usize,
    eos: &'static [u32],
    end_of_turn: &'static [u32],
    bos: Option<u32>,
    /// Ids whose single-id decode is a known class of difference: (lossy, stripped).
    differences: (usize, usize),
    /// Groups of ids sharing bytes, and the ids in them.
    duplicates: (usize, usize),
    /// Byte-level BPE (else SentencePiece style).
    byte_level: bool,
    /// The decoder strips a leading space (SentencePiece `Strip`).
    strips: bool,
    /// The normalizer prepends a space to every text (Llama 2's `Prepend ▁`).
    prepends_space: bool,
}

fn id(i: u32) -> TokenId {
    TokenId::new(i).unwrap()
}

fn ids(v: &[u32]) -> Vec<TokenId> {
    v.iter().map(|&i| id(i)).collect()
}

fn check(expected: &Expected) {
    let path = tokenizer_path(expected.name);
    let start = Instant::now();
    let vocab = Vocabulary::from_file(&path).unwrap();
    eprintln!(
        "{}: loaded in {:?}: {vocab:?}",
        expected.name,
        start.elapsed()
    );
    let tokenizer = Tokenizer::from_file(&path).unwrap();

    assert_eq!(vocab.len(), expected.len);
    assert_eq!(vocab.special().count_ones(..), expected.special);
    assert_eq!(vocab.eos_ids(), ids(expected.eos));
    assert_eq!(vocab.end_of_turn_ids(), ids(expected.end_of_turn));
    assert_eq!(vocab.bos_id(), expected.bos.map(id));
    for &eos in vocab.eos_ids() {
        assert!(vocab.is_special(eos), "EOS {eos} is not special");
    }

    round_trip(expected, &vocab, &tokenizer);
    texts_round_trip(expected, &vocab, &tokenizer);

    let groups: Vec<&[TokenId]> = vocab.duplicates().collect();
    let dup_ids: usize = groups.iter().map(|g| g.len()).sum();
    eprintln!(
        "{}: {} duplicate groups, {dup_ids} ids, e.g. {:?}",
        expected.name,
        groups.len(),
        groups
            .iter()
            .take(3)
            .map(|g| (g, String::from_utf8_lossy(vocab.bytes(g[0]))))
            .collect::<Vec<_>>()
    );
    assert_eq!((groups.len(), dup_ids), expected.duplicates);
    // SentencePiece vocabularies write a space both as `▁` and as the byte `<0x20>`;
    // byte-level ones as `Ġ`.
    let spaces: &[&str] = if expected.byte_level {
        &["Ġ"]
    } else {
        &["▁", "<0x20>"]
    };
    for &name in spaces {
        if let Some(i) = tokenizer.token_to_id(name) {
            assert!(
                vocab.token_ids(b" ").contains(&id(i)),
                "{name} is not a space"
            );
        }
    }

    tries_agree(expected, &vocab);
}

/// Decodes every id alone and classifies each difference from its bytes.
fn round_trip(expected: &Expected, vocab: &Vocabulary, tokenizer: &Tokenizer) {
    let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unexplained = Vec::new();
    for (id, bytes) in vocab.iter() {
        let decoded = tokenizer.decode(&[id.as_u32()], false).unwrap();
        let class = if decoded.as_bytes() == bytes {
            "exact"
        } else if std::str::from_utf8(bytes).is_err() && decoded == String::from_utf8_lossy(bytes) {
            "lossy"
        } else if expected.strips
            && bytes.first() == Some(&b' ')
            && decoded.as_bytes() == &bytes[1..]
        {
            "stripped"
        } else {
            unexplained.push((id, decoded, String::from_utf8_lossy(bytes).into_owned()));
            "unexplained"
        };
        *classes.entry(class).or_default() += 1;
    }
    eprintln!("{}: single-id decode vs bytes: {classes:?}", expected.name);
    assert!(
        unexplained.is_empty(),
        "unexplained differences: {:?}",
        &unexplained[..unexplained.len().min(20)]
    );
    let lossy = classes.get("lossy").copied().unwrap_or(0);
    let stripped = classes.get("stripped").copied().unwrap_or(0);
    assert_eq!((lossy, stripped), expected.differences);
}

/// Encoding a text and concatenating its tokens' bytes gives the text back.
fn texts_round_trip(expected: &Expected, vocab: &Vocabulary, tokenizer: &Tokenizer) {
    let texts = [
        "Hello, world!\n",
        "naïve café, 日本語 and 🎉🎉 emoji",
        "  two leading spaces\tand a tab\n\n\nthree newlines",
        r#"{"key": [1, 2.5e-3, null, true], "nested": {"a": "b\"c"}}"#,
        "<|eot_id|> <end_of_turn> are special in some vocabularies",
        "\u{1}\u{7f} control bytes and \u{a0} a no-break space",
    ];
    for text in texts {
        let encoding = tokenizer.encode(text, false).unwrap();
        let mut bytes = Vec::new();
        for &i in encoding.get_ids() {
            bytes.extend_from_slice(vocab.bytes(id(i)));
        }
        let want = if expected.prepends_space {
            format!(" {text}")
        } else {
            text.to_owned()
        };
        assert_eq!(
            String::from_utf8_lossy(&bytes),
            want,
            "{}: {:?}",
            expected.name,
            encoding.get_tokens()
        );
    }
}

/// Both backends agree with each other and with brute force on a few predicates.
fn tries_agree(expected: &Expected, vocab: &Vocabulary) {
    let flat = FlatTrie::new(vocab).unwrap();
    let da = DoubleArrayTrie::new(vocab).unwrap();
    let indexed: Vec<TokenId> = vocab.indexable_ids().collect();
    eprintln!(
        "{}: {} tokens, {} nodes; flat {} bytes, double array {} bytes ({} slots)",
        expected.name,
        flat.num_tokens(),
        flat.num_nodes(),
        flat.memory_bytes(),
        da.memory_bytes(),
        da.num_slots()
    );
    assert_eq!(flat.num_tokens(), indexed.len());
    assert_eq!(
        (da.num_tokens(), da.num_nodes()),
        (flat.num_tokens(), flat.num_nodes())
    );

    // Everything: compare the allowed tokens (the full logs are millions of events).
    let (_, flat_all) = walk(&flat, vocab, &All, false);
    let (_, da_all) = walk(&da, vocab, &All, false);
    assert_eq!(flat_all, brute_force(vocab, &indexed, &All));
    assert_eq!(da_all, flat_all);

    let lowercase = ByteFn(|b: u8| b.is_ascii_lowercase());
    let json_string = ByteFn(|b: u8| b != b'"' && b != b'\\' && b >= 0x20);
    let digits = ByteFn(|b: u8| b.is_ascii_digit() || b == b'.');
    fn same<P: Predicate>(
        vocab: &Vocabulary,
        flat: &FlatTrie,
        da: &DoubleArrayTrie,
        indexed: &[TokenId],
        p: &P,
    ) {
        let (flat_log, flat_allowed) = walk(flat, vocab, p, true);
        let (da_log, da_allowed) = walk(da, vocab, p, true);
        assert!(flat_log == da_log, "logs differ");
        assert_eq!(flat_allowed, da_allowed);
        assert_eq!(flat_allowed, brute_force(vocab, indexed, p));
        // With a spare id: the same calls plus spares, on both backends.
        let (flat_spare, _) = walk_with_spare(flat, vocab, p, true, spare(vocab));
        let (da_spare, _) = walk_with_spare(da, vocab, p, true, spare(vocab));
        assert!(flat_spare == da_spare, "logs with a spare id differ");
        assert!(
            flat_spare
                .iter()
                .filter(|e| **e != Event::Spare)
                .eq(flat_log.iter())
        );
        for prefix in [&b" "[..], b"{\"", b"\xe6", b"zzzzzzzz"] {
            let (flat_log, flat_allowed) = walk_from(flat, vocab, p, prefix);
            let (da_log, da_allowed) = walk_from(da, vocab, p, prefix);
            assert!(flat_log == da_log, "logs below {prefix:?} differ");
            assert_eq!(flat_allowed, da_allowed);
            let want: Vec<TokenId> = brute_force(vocab, indexed, p)
                .into_iter()
                .filter(|&i| vocab.bytes(i).starts_with(prefix))
                .collect();
            assert_eq!(flat_allowed, want);
        }
    }
    same(vocab, &flat, &da, &indexed, &lowercase);
    same(vocab, &flat, &da, &indexed, &json_string);
    same(vocab, &flat, &da, &indexed, &digits);
}

#[test]
fn llama3() {
    check(&Expected {
        name: "llama3",
        len: 128_256,
        special: 256,
        eos: &[128_001],
        end_of_turn: &[128_009],
        bos: Some(128_000),
        differences: (1_352, 0),
        duplicates: (0, 0),
        byte_level: true,
        strips: false,
        prepends_space: false,
    });
}

#[test]
fn qwen3() {
    check(&Expected {
        name: "qwen3",
        len: 151_669,
        special: 14,
        eos: &[151_643, 151_645],
        end_of_turn: &[151_645],
        bos: None,
        differences: (1_448, 0),
        duplicates: (0, 0),
        byte_level: true,
        strips: false,
        prepends_space: false,
    });
}

#[test]
fn gemma3() {
    check(&Expected {
        name: "gemma3",
        len: 262_145,
        special: 9,
        eos: &[1, 106],
        end_of_turn: &[106],
        bos: Some(2),
        differences: (128, 0),
        duplicates: (110, 220),
        byte_level: false,
        strips: false,
        prepends_space: false,
    });
}

#[test]
fn llama2() {
    check(&Expected {
        name: "llama2",
        len: 32_000,
        special: 3,
        eos: &[2],
        end_of_turn: &[],
        bos: Some(1),
        differences: (128, 15_763),
        duplicates: (125, 250),
        byte_level: false,
        strips: true,
        prepends_space: true,
    });
}
