//! Tests of the pattern reader against ECMA-262 semantics.

#[test]
fn leading_lookaheads_split_into_anchored_parts() {
    let split = |p: &str| super::split_leading_lookaheads(p).map(|s| (s.rest, s.lookaheads));
    assert_eq!(
        split(r"^(?!@@)[\w@]+$"),
        Some(("^[\\w@]+$".to_owned(), vec![(true, "^(?:@@)".to_owned())]))
    );
    assert_eq!(
        split(r"^(?=.*\d)(?!a[)(])x"),
        Some((
            "^x".to_owned(),
            vec![
                (false, "^(?:.*\\d)".to_owned()),
                (true, "^(?:a[)(])".to_owned())
            ]
        ))
    );
    assert_eq!(
        split(r"^(?!(a|b)c)(x|y)"),
        Some(("^(x|y)".to_owned(), vec![(true, "^(?:(a|b)c)".to_owned())]))
    );
    // Not at the start anchor, an alternative the lookahead does not govern, unclosed.
    for p in [
        r"a(?=b)",
        r"(?!a)b",
        r"^(?!a)b|c",
        r"^(?!a",
        r"^(?!a)[b",
        r"^x(?!a)",
    ] {
        assert_eq!(split(p), None, "{p}");
    }
}

use super::classes::{BINARY_PROPERTIES, GENERAL_CATEGORIES};
use super::*;

fn full(p: &str) -> regex::Regex {
    let s = pattern_language(p).unwrap_or_else(|e| panic!("{p}: {e}"));
    regex::Regex::new(&format!("^(?:{s})$")).unwrap_or_else(|e| panic!("{p} -> {s}: {e}"))
}

/// (pattern, string, whether ECMA-262 `new RegExp(pattern, "u").test(string)`).
const CASES: &[(&str, &str, bool)] = &[
    ("a+", "xxaayy", true),
    ("^a*$", "aaa", true),
    ("^a*$", "abc", false),
    ("^a", "ba", false),
    ("a$", "ab", false),
    ("a$", "a\n", false),
    ("^$", "", true),
    ("^$", "\n", false),
    ("", "anything", true),
    ("^", "x", true),
    ("x|^y", "ay", false),
    ("x|^y", "ax", true),
    ("a^b", "a^b", false),
    (".", "\n", false),
    (".", "\r", false),
    (".", "\u{2028}", false),
    (".", "\u{85}", true),
    ("^.$", "😀", true),
    ("^..$", "😀", false),
    ("[^]", "\n", true),
    ("[]", "", false),
    ("[]", "a", false),
    ("[]a]", "a]", false),
    ("[]a]", "]", false),
    ("a]", "a]", true),
    ("a}", "a}", true),
    ("^a{", "a{", true),
    ("a{1", "a{1", true),
    ("a{,3}", "a{,3}", true),
    ("^a{2}$", "aa", true),
    ("^a{2}$", "aaa", false),
    ("^a{2,}$", "aaaa", true),
    ("^a{2,3}$", "aaaa", false),
    ("^a{2,3}?$", "aaa", true),
    ("^a+?$", "aaa", true),
    (r"^\d+$", "0123456789", true),
    (r"^\d$", "٣", false),
    (r"^\w+$", "abc_XYZ_09", true),
    (r"^\w$", "é", false),
    (r"^\W$", "é", true),
    (r"^\s$", "\u{FEFF}", true),
    (r"^\s$", "\u{3000}", true),
    (r"^\s$", "\u{B}", true),
    (r"^\s$", "\u{85}", false),
    (r"^\s$", "\u{180E}", false),
    (r"^\S$", "\u{85}", true),
    (r"\bfoo\b", "a foo.", true),
    (r"\bfoo\b", "afoo", false),
    (r"\bfoo", "éfoo", true),
    (r"\Boo", "foo", true),
    (r"\Bfoo", " foo", false),
    (r"^\cJ$", "\n", true),
    (r"^\0$", "\0", true),
    (r"^\x41$", "A", true),
    (r"^\u0041$", "A", true),
    (r"^\u{1F600}$", "😀", true),
    (r"^\uD83D\uDE00$", "😀", true),
    (r"^[\uD83D\uDE00]$", "😀", true),
    (r"\uD83D", "😀", false),
    (r"^\/\-\.$", "/-.", true),
    (r"^\@\_$", "@_", true),
    (r"^[\d-z]+$", "1-z", true),
    (r"^[\d-z]+$", "y", false),
    (r"^[\w-.]+$", "a-.b", true),
    (r"^[a-]+$", "a-", true),
    (r"^[-a]+$", "-a", true),
    (r"^[a-c-e]+$", "b-e", true),
    (r"^[a-c-e]+$", "d", false),
    (r"^[\b]$", "\u{8}", true),
    (r"^[^a-z]$", "A", true),
    (r"^[^a-z]$", "q", false),
    (r"^[\s\S]$", "\n", true),
    (r"^[.]$", "x", false),
    (r"^(?:ab)+$", "abab", true),
    (r"^(?<year>\d{4})-(?<m>\d\d)$", "2024-01", true),
    (r"^(a|b|)$", "", true),
    (r"^()*$", "", true),
    (r"^\p{Letter}+$", "Hello", true),
    (r"^\p{Letter}+$", "π", true),
    (r"^\p{Letter}+$", "123", false),
    (r"^\p{L}$", "ß", true),
    (r"^\p{Lu}$", "a", false),
    (r"^\P{Lu}$", "a", true),
    (r"^\p{gc=Nd}+$", "٣3", true),
    (r"^\p{General_Category=Decimal_Number}$", "٣", true),
    (r"^\p{Script=Greek}+$", "αβγ", true),
    (r"^\p{sc=Grek}+$", "abc", false),
    (r"^\p{scx=Hira}$", "ー", true),
    (r"^\p{ASCII_Hex_Digit}+$", "c0ffee", true),
    (r"^\p{Any}$", "\n", true),
    (r"^[\p{Lu}\d]+$", "A1B2", true),
    (r"^[^\p{L}]$", "1", true),
    (r"^\p{Emoji_Presentation}$", "😀", true),
    ("^ä+$", "ää", true),
    ("^[äöü]$", "ö", true),
    (r"^\\d$", r"\d", true),
    (r"^\$\^\.\*\+\?\(\)\[\]\{\}\|$", "$^.*+?()[]{}|", true),
    ("^[#&~-]+$", "#&~-", true),
    ("^a#b$", "a#b", true),
    ("^a b$", "a b", true),
    (r"^\t\n\v\f\r$", "\t\n\u{B}\u{C}\r", true),
    ("^(a*)*$", "aaa", true),
    ("^(a+|b)*c$", "abac", true),
    ("^(a+)?b$", "b", true),
    ("^(a+)?b$", "aab", true),
    ("^(a{2}){2}$", "aaaa", true),
    ("^(a{2}){2}$", "aaa", false),
    ("^(?:a|bc)+?$", "abcbc", true),
    ("^(a?){3}$", "aa", true),
    ("^(a*)+$", "", true),
    (r"^\d{3}-\d{4}$", "555-1234", true),
    (r"^\d{3}-\d{4}$", "555-12345", false),
    (r"\d{3}-\d{4}", "call 555-12345", true),
];

#[test]
fn spec_semantics_table() {
    for &(p, s, expected) in CASES {
        assert_eq!(full(p).is_match(s), expected, "pattern {p:?} on {s:?}");
    }
}

#[test]
fn unsupported_and_errors() {
    let unsupported = [
        ("a(?=b)", "lookahead", 1),
        ("(?!b)", "lookahead", 0),
        ("(?<=a)b", "lookbehind", 0),
        ("(?<!a)b", "lookbehind", 0),
        (r"(a)\1", "backreference", 3),
        (r"(?<n>a)\k<n>", "named backreference", 7),
        (r"\01", "legacy octal escape", 0),
        ("(?i:a)", "inline modifiers", 0),
        ("a{0,99999999999}", "repetition count above 2^32", 1),
    ];
    for (p, feature, offset) in unsupported {
        assert_eq!(
            pattern_language(p),
            Err(PatternError::Unsupported { feature, offset }),
            "{p}"
        );
    }
    let syntax = [
        "*",
        "a**",
        "+a",
        "?",
        "(",
        "(a",
        "a)",
        ")",
        "[a",
        "[z-a]",
        r"\",
        r"a\",
        r"\a",
        r"\e",
        r"\z",
        r"\c1",
        r"\x4",
        r"\u12",
        r"\u{110000}",
        r"\p{Greek}",
        r"\p{Lettr}",
        r"\p{greek}",
        r"\p{Script=}",
        r"\pL",
        "(?<1a>x)",
        "(?x)",
        "^*",
        "$+",
        r"\b*",
        "a{3,2}",
        "{2}",
        r"[\B]",
        "(?<>a)",
    ];
    for p in syntax {
        assert!(
            matches!(pattern_language(p), Err(PatternError::Syntax { .. })),
            "{p}: {:?}",
            pattern_language(p)
        );
    }
}

#[test]
fn deep_nesting_is_reported_not_broken() {
    let deep = format!("{}a{}", "(a".repeat(150), ")*".repeat(150));
    assert!(matches!(
        pattern_language(&deep),
        Err(PatternError::Unsupported { .. })
    ));
    assert!(pattern_hir(&deep).is_ok());
    let fine = format!("{}a{}", "(a".repeat(40), ")*".repeat(40));
    assert!(full(&fine).is_match("aa"));
}

#[test]
fn every_binary_property_resolves() {
    for name in BINARY_PROPERTIES {
        let p = format!(r"\p{{{name}}}");
        match pattern_language(&p) {
            Ok(_) => {}
            Err(PatternError::Unsupported { .. })
                if name.starts_with("Changes_When_NFKC") || *name == "CWKCF" => {}
            Err(e) => panic!("{name}: {e}"),
        }
    }
    for (long, short) in GENERAL_CATEGORIES {
        assert!(
            pattern_language(&format!(r"\p{{{long}}}")).is_ok(),
            "{long}"
        );
        assert!(
            pattern_language(&format!(r"\p{{gc={short}}}")).is_ok(),
            "{short}"
        );
    }
}

#[test]
fn printed_regex_round_trips() {
    for &(p, _, _) in CASES {
        let hir = pattern_hir(p).unwrap();
        let printed = pattern_language(p).unwrap();
        let reparsed = regex_syntax::Parser::new().parse(&printed).unwrap();
        assert_eq!(reparsed, hir, "{p}");
    }
}
