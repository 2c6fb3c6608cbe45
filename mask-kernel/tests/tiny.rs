//! Masks over a tiny hand-built vocabulary, checked by eye, on every code path.
//!
//! The vocabulary (id: bytes), drawn as its trie:
//!
//! ```text
//! root
//! ├─ "   2 "
//! │  ├─ ,   3 ",
//! │  │  └─ "   4 ","
//! │  └─ ]   5 "]
//! ├─ ,  14 ,
//! ├─ [   0 [
//! │  └─ "   1 ["
//! ├─ \   8 \
//! │  ├─ "   9 \"
//! │  └─ u  15 \u
//! ├─ ]  13 ]
//! ├─ a   6 a
//! │  └─ b   7 ab
//! ├─ \xa9  12 (a lone continuation byte)
//! └─ \xc3  11 (the first byte of é)
//!    └─ \xa9  10 é
//! 16 </s> (special, end of sequence)
//! ```
//!
//! The language is a JSON array of strings (see `common`); each expected mask is listed by id.

mod common;

use std::sync::Arc;

use common::{Checker, Lang};
use vocab_index::{TokenId, Vocabulary};

fn vocab() -> Arc<Vocabulary> {
    let tokens: [&[u8]; 17] = [
        b"[",
        b"[\"",
        b"\"",
        b"\",",
        b"\",\"",
        b"\"]",
        b"a",
        b"ab",
        b"\\",
        b"\\\"",
        "é".as_bytes(),
        b"\xc3",
        b"\xa9",
        b"]",
        b",",
        b"\\u",
        b"</s>",
    ];
    let eos = TokenId::new(16).unwrap();
    Arc::new(
        Vocabulary::new(tokens, [eos])
            .unwrap()
            .with_eos_ids([eos])
            .unwrap(),
    )
}

fn ids(mask: &mask_kernel::FixedBitSet) -> Vec<usize> {
    mask.ones().collect()
}

#[test]
fn free_strings() {
    let mut c = Checker::new(vocab(), Lang::FREE);
    assert_eq!(ids(&c.check(b"")), [0, 1], "`[` and `[\"`");
    assert_eq!(ids(&c.check(b"[")), [2, 3, 4, 5, 13], "a string or `]`");
    // Inside a string: any content (brackets and commas too), every quote token; not the lone
    // continuation byte, not end of sequence.
    assert_eq!(
        ids(&c.check(b"[\"")),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15]
    );
    assert_eq!(
        ids(&c.check(b"[\"\xc3")),
        [12],
        "only the continuation byte"
    );
    assert_eq!(
        ids(&c.check(b"[\"\\")),
        [2, 3, 4, 5, 8, 9, 15],
        "an escape: `\"`, `\\` or `\\` then `u`"
    );
    assert_eq!(ids(&c.check(b"[\"a\"")), [13, 14], "`]` or `,`");
    assert_eq!(ids(&c.check(b"[\"a\",")), [2, 3, 4, 5], "a string");
    assert_eq!(ids(&c.check(b"[\"a\"]")), [16], "end of sequence only");
    assert_eq!(ids(&c.check(b"[]")), [16]);
}

#[test]
fn bounded_strings() {
    let lang = Lang {
        min: 1,
        max: Some(2),
        letters_only: false,
    };
    let mut c = Checker::new(vocab(), lang);
    // Empty strings are refused: no token closes the string right away.
    assert_eq!(
        ids(&c.check(b"[\"")),
        [0, 1, 6, 7, 8, 9, 10, 11, 13, 14, 15]
    );
    // One code point left: `ab` no longer fits, `\"` does; closing is allowed (`["` too).
    assert_eq!(
        ids(&c.check(b"[\"a")),
        [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14, 15]
    );
    // Full: only tokens that close.
    assert_eq!(ids(&c.check(b"[\"ab")), [2, 3, 4, 5]);
    assert_eq!(ids(&c.check(b"[\"\xc3\xa9\\\"")), [2, 3, 4, 5]);
}

#[test]
fn letters_only() {
    let lang = Lang {
        min: 0,
        max: None,
        letters_only: true,
    };
    let mut c = Checker::new(vocab(), lang);
    assert_eq!(ids(&c.check(b"[\"")), [2, 3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(
        ids(&c.check(b"[\"\\")),
        [2],
        "only `\\\"` escapes, then letters"
    );
    assert_eq!(ids(&c.check(b"[\"\\\"")), [2, 3, 4, 5, 6, 7, 8, 9]);
}

#[test]
fn letters_with_a_minimum() {
    let lang = Lang {
        min: 1,
        max: Some(1),
        letters_only: true,
    };
    let mut c = Checker::new(vocab(), lang);
    assert_eq!(
        ids(&c.check(b"[\"")),
        [6, 8, 9],
        "one letter or `\\\"`, no close"
    );
    assert_eq!(ids(&c.check(b"[\"a")), [2, 3, 4, 5], "full: close only");
    assert_eq!(
        ids(&c.check(b"[\"a\",")),
        [2],
        "a new string, which cannot be empty"
    );
}
