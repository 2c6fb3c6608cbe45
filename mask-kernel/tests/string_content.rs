//! `string_content` against the test recognizer's exact JSON string lexer: a token is string
//! content of `n` code points exactly when, from the start of a free string, the lexer accepts
//! all its bytes without closing the string and counts `n` code points.

mod common;

use common::{known_bug, reference_content as reference};
use proptest::prelude::*;
use recognizer::string_content;

const FRAGMENTS: &[&[u8]] = &[
    b"\"",
    b"\\",
    b"a",
    b"u",
    b"d",
    b"D",
    b"8",
    b"3",
    b"c",
    b"0",
    b"f",
    b"\n",
    b"\x7f",
    b"\\u",
    b"\\ud83d",
    b"\\ude00",
    b"\\u00e9",
    b"\\n",
    b"\\\"",
    b"\\\\",
    b"\xc3",
    b"\xa9",
    b"\xe2\x82",
    b"\xf0\x9f",
    b"\x98\x80",
    b"\xed\xa0",
    b"\xf4\x90",
    b"\xff",
];

#[test]
fn examples_agree() {
    for t in [
        &b"hello"[..],
        "héllo".as_bytes(),
        b"\\\"",
        b"\\ud83d\\ude00",
        b"\\ud83d",
        b"\\ud83d\\",
        b"\\ud83dx",
        b"\\ude00",
        b"\xe2\x82",
        b"\xc3\\n",
        b"\x82",
        b"a\"",
        b"",
    ] {
        assert_eq!(string_content(t), reference(t), "{}", t.escape_ascii());
    }
}

#[test]
fn an_unfinished_escape_that_cannot_be_valid_is_not_content() {
    // `\xc3` needs a continuation byte; a backslash can never be one, finished escape or not.
    assert_eq!(string_content(b"\xc3\\n"), None, "already refused");
    assert_eq!(string_content(b"\xc3\\"), None);
    assert_eq!(string_content(b"\xc3\\u"), None);
    assert_eq!(string_content(b"\xe2\x82\\u00"), None);
    assert_eq!(string_content(b"\xc3\\ud83d"), None);
    // `\uDC00`-`\uDFFF` alone is refused when complete, but not once begun.
    assert_eq!(string_content(b"\\ude00"), None, "already refused");
    assert_eq!(string_content(b"\\udd"), None);
    assert_eq!(string_content(b"\\uDc0"), None);
    // After a high surrogate only a low one may follow.
    assert_eq!(string_content(b"\\ud83d\\u0041"), None, "already refused");
    assert_eq!(string_content(b"\\ud83d\\u0"), None);
    assert_eq!(string_content(b"\\ud83d\\ud8"), None);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn string_content_matches_the_reference_lexer(
        parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..5)
    ) {
        let t = parts.concat();
        prop_assume!(!known_bug(&t));
        prop_assert_eq!(string_content(&t), reference(&t), "{}", t.escape_ascii());
    }
}
