//! Unit tests of the matcher: completions, refusals at the first dead byte, escapes, pops and
//! the pretty layout.

use super::*;
use crate::Options;
use crate::options::{KeyEscapes, Whitespace};
use serde_json::json;

fn complete(schema: serde_json::Value, prefix: &str) -> String {
    complete_with(&Options::generation(), schema, prefix)
}

fn complete_with(options: &Options, schema: serde_json::Value, prefix: &str) -> String {
    let g = Arc::new(Grammar::compile(&schema, options).unwrap());
    let mut m = Matcher::new(g);
    m.push_bytes(prefix.as_bytes()).unwrap();
    let before = m.len();
    let tail = m.completion(256).expect("a completion");
    assert_eq!(m.len(), before, "state unchanged");
    m.push_bytes(&tail).unwrap();
    assert!(m.is_accepting());
    String::from_utf8(tail).unwrap()
}

#[test]
fn completions_close_what_is_open() {
    let countries = json!({"type": "array", "items": {"type": "object",
        "properties": {"name": {"type": "string"}, "continent": {"type": "string"}},
        "required": ["name", "continent"]}});
    assert_eq!(
        complete(countries.clone(), r#"[{"name":"Nig"#),
        r#"","continent":""}]"#
    );
    assert_eq!(
        complete(
            countries.clone(),
            r#"[{"name":"Nigeria","continent":"Africa"},"#
        ),
        r#"{"name":"","continent":""}]"#
    );
    assert_eq!(complete(countries, "["), "]");
    let bounded = json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": 10},
        "s": {"type": "string", "minLength": 3}}, "required": ["n", "s"]});
    let tail = complete(bounded, "{");
    assert!(tail.contains("\"n\":1"), "{tail}");
}

/// Index of the first byte of `text` refused after `prefix` (`None`: all accepted), with
/// the walker on when `walker`.
fn refused_at(
    schema: &serde_json::Value,
    prefix: &[u8],
    text: &[u8],
    walker: bool,
) -> Option<usize> {
    let options = Options::generation().key_escapes(KeyEscapes::Any);
    refused_with(&options, schema, prefix, text, walker)
}

fn refused_with(
    options: &Options,
    schema: &serde_json::Value,
    prefix: &[u8],
    text: &[u8],
    walker: bool,
) -> Option<usize> {
    let g = Arc::new(Grammar::compile(schema, options).unwrap());
    let mut m = Matcher::new(g);
    m.push_bytes(prefix).unwrap();
    m.set_lexeme_only(walker);
    m.push_bytes(text).err()
}

/// A property's own schema still binds its value when a combinator beside it accepts any
/// value for that property: `anyOf` of `required` lists has member obligations that never
/// fail, so "some obligation can pass" is not enough.
#[test]
fn a_combinator_beside_properties_does_not_free_their_values() {
    let schema = json!({"type": "object",
        "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}},
        "allOf": [{"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}]});
    for walker in [false, true] {
        assert_eq!(refused_at(&schema, br#"{"a":"x"#, b" y", walker), Some(0));
        assert_eq!(refused_at(&schema, br#"{"a":"x"#, b"y", walker), None);
    }
    let numbers = json!({"properties": {"n": {"type": "integer", "maximum": 5}},
        "anyOf": [{"required": ["n"]}, {"required": ["m"]}]});
    assert_eq!(refused_at(&numbers, br#"{"n":"#, b"12", false), Some(1));
}

/// A length limit binds in the lexeme split too: free obligations from `dependencies`
/// beside a `maxLength` property do not make its content unbounded.
#[test]
fn a_length_limit_beside_free_obligations_is_left_to_the_walk() {
    let schema = json!({"properties": {"s": {"type": "string", "maxLength": 3}},
        "dependencies": {"x": {"not": {"required": ["y"]}}}});
    let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
    let mut m = Matcher::new(g);
    m.push_bytes(br#"{"s":"ab"#).unwrap();
    let split = m.split(&mut Vec::new());
    assert!(
        !matches!(
            split,
            Some(recognizer::Split::StringContent { budget: None, .. })
        ),
        "{split:?}"
    );
    for walker in [false, true] {
        assert_eq!(refused_at(&schema, br#"{"s":"ab"#, b"cd", walker), Some(1));
    }
}

/// A repeated `enum` string in a `uniqueItems` array is refused at its last content byte
/// (it can only end there), not left as a dead end before its closing quote; a repeat
/// that can still grow into another value is not refused early.
#[test]
fn a_repeated_enum_string_is_refused_where_it_must_end() {
    let tags = json!({"type": "array", "uniqueItems": true,
        "items": {"enum": ["work", "travel", "family"]}});
    assert_eq!(refused_at(&tags, b"[\"work\",\"", b"travel\"", false), None);
    assert_eq!(
        refused_at(&tags, b"[\"work\",\"travel\",\"", b"travel", false),
        Some(5)
    );
    assert_eq!(
        refused_at(&tags, b"[\"work\",\"travel\",\"", b"trave", false),
        None
    );
    let event = json!({"type": "object", "properties": {
        "tags": {"type": "array", "items": {"enum": ["work", "travel", "family"]},
                 "maxItems": 3, "uniqueItems": true}}});
    assert_eq!(
        refused_with(
            &Options::generation(),
            &event,
            b"{\"tags\":[\"work\",\"travel\",\"t",
            b"ravel",
            false
        ),
        Some(4)
    );
    let prefixes = json!({"type": "array", "uniqueItems": true,
        "items": {"enum": ["ab", "abc"]}});
    assert_eq!(refused_at(&prefixes, b"[\"ab\",\"", b"ab", false), None);
    assert_eq!(
        refused_at(&prefixes, b"[\"ab\",\"", b"ab\"", false),
        Some(2)
    );
    assert_eq!(refused_at(&prefixes, b"[\"ab\",\"", b"abc\"]", false), None);
}

/// What only the end of a literal decides is checked as soon as the literal is known
/// (from its first letter); the first item of an array counts against `maxItems` when it
/// starts.
#[test]
fn literals_and_first_items_are_checked_when_they_start() {
    let unique = json!({"uniqueItems": true});
    assert_eq!(refused_at(&unique, b"[null,", b"n", false), Some(0));
    assert_eq!(refused_at(&unique, b"[null,", b"true", false), None);
    let none = json!({"contains": true, "minContains": 0, "maxContains": 0});
    assert_eq!(refused_at(&none, b"[", b"f", false), Some(0));
    let empty = json!({"maxItems": 0});
    assert_eq!(refused_at(&empty, b"[", b"1", false), Some(0));
    assert_eq!(refused_at(&empty, b"[", b"[", false), Some(0));
    assert_eq!(refused_at(&empty, b"[", b"]", false), None);
    let room = json!({"contains": {"const": 4}, "maxItems": 1});
    assert_eq!(refused_at(&room, b"[", b"null", false), Some(0));
    assert_eq!(refused_at(&room, b"[", b"4]", false), None);
}

#[test]
fn escapes_start_only_when_some_code_point_can_follow() {
    let closed = json!({"type": "object", "properties": {"ab": {"type": "integer"}},
        "required": ["ab"], "additionalProperties": false});
    let one_char = json!({"const": "é"});
    let letters = json!({"type": "string", "pattern": "^[a-z]+$"});
    let astral = json!({"const": "😀"});
    let short = json!({"type": "string", "maxLength": 1});
    for walker in [false, true] {
        let at = |schema: &serde_json::Value, prefix: &str, text: &str| {
            refused_at(schema, prefix.as_bytes(), text.as_bytes(), walker)
        };
        assert_eq!(at(&closed, "{\"", r"\u0061b"), None);
        assert_eq!(
            at(&closed, "{\"", r"\uf"),
            Some(2),
            "no key starts in U+F000.."
        );
        assert_eq!(at(&closed, "{\"", r"\u0062"), Some(5));
        assert_eq!(at(&closed, "{\"", r"\n"), Some(1));
        assert_eq!(at(&closed, "{\"ab", r"\"), Some(0), "the key can only end");
        assert_eq!(at(&one_char, "\"", r"\u00e9"), None);
        assert_eq!(at(&one_char, "\"", r"\u00e8"), Some(5));
        assert_eq!(at(&letters, "\"", r"\u006"), None);
        assert_eq!(at(&letters, "\"", r"\u00e"), Some(4));
        assert_eq!(at(&letters, "\"", r"\t"), Some(1));
        assert_eq!(at(&astral, "\"", r"\uD83D\uDE00"), None);
        assert_eq!(at(&astral, "\"", r"\uD83E"), Some(5));
        assert_eq!(at(&astral, "\"", r"\uD83D\uDE01"), Some(11));
        assert_eq!(at(&astral, "\"", r"\u0"), Some(2));
        assert_eq!(at(&short, "\"a", r"\"), Some(0), "maxLength 1 is used up");
        let any = json!({"type": "string"});
        assert_eq!(
            refused_at(&any, b"\"\xC3", b"\\", walker),
            Some(0),
            "an escape cannot start inside a character"
        );
    }
}

#[test]
fn pops_restore_the_text_of_an_unfinished_number() {
    let unique = json!({"type": "array", "items": {"type": "number"}, "uniqueItems": true});
    let g = Arc::new(Grammar::compile(&unique, &Options::generation()).unwrap());
    let mut m = Matcher::new(g);
    m.push_bytes(b"[3,2").unwrap();
    let mut before = Vec::new();
    m.state_key(&mut before);
    m.push_bytes(b",3").unwrap();
    m.pop_bytes(2);
    let mut after = Vec::new();
    m.state_key(&mut after);
    assert_eq!(before, after, "the state key is restored");
    assert_eq!(m.push_bytes(b",3,"), Err(2), "3 is a duplicate; 2 is not");
    m.pop_bytes(2);
    assert_eq!(m.push_bytes(b",2,"), Err(2), "2 is a duplicate");
    m.pop_bytes(2);
    m.forget_history();
    assert_eq!(m.push_bytes(b"0]"), Ok(()), "20 is new");
    assert!(m.is_accepting());
}

#[test]
fn generated_keys_escape_only_what_json_needs() {
    let closed = json!({"type": "object", "properties": {"ab": {"type": "integer"}},
        "additionalProperties": false});
    let free = json!({"type": "object"});
    let options = Options::generation();
    for walker in [false, true] {
        let at = |schema: &serde_json::Value, text: &str| {
            refused_with(&options, schema, b"{\"", text.as_bytes(), walker)
        };
        assert_eq!(at(&closed, r"\"), Some(0), "`a` is written as itself");
        assert_eq!(at(&closed, "ab"), None);
        assert_eq!(at(&free, r#"\"\\\n\t\u001f"#), None);
        assert_eq!(at(&free, r"\/"), Some(1));
        assert_eq!(at(&free, r"\u0020"), Some(4));
        assert_eq!(at(&free, r"\u00e9"), Some(4));
        assert_eq!(at(&free, r"\u1"), Some(2));
    }
    let value = json!({"type": "object", "additionalProperties": {"type": "string"}});
    let text = br#"a":"\u00e9\/"#;
    assert_eq!(
        refused_with(&options, &value, b"{\"", text, false),
        None,
        "values keep every escape"
    );
}

fn pretty() -> Options {
    Options::generation().whitespace(Whitespace::Pretty)
}

/// Whether `text` is accepted as a whole document.
fn accepts(g: &Arc<Grammar>, text: &str) -> bool {
    let mut m = Matcher::new(g.clone());
    m.push_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

/// `text` with one whitespace byte inserted at, or removed from, each position outside
/// strings where that changes it.
fn respaced(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut in_str, mut esc) = (false, false);
    for (i, c) in text.char_indices() {
        if !in_str {
            for ws in [" ", "\n", "\t", "\r"] {
                out.push(format!("{}{ws}{}", &text[..i], &text[i..]));
            }
            if c.is_ascii_whitespace() {
                out.push(format!("{}{}", &text[..i], &text[i + 1..]));
            }
        }
        match c {
            _ if esc => esc = false,
            '\\' if in_str => esc = true,
            '"' => in_str = !in_str,
            _ => {}
        }
    }
    for ws in [" ", "\n"] {
        out.push(format!("{text}{ws}"));
    }
    out
}

#[test]
fn pretty_accepts_exactly_the_pretty_spelling() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "array", "items": {"type": ["integer", "object", "array"]}},
        "b": {"type": "object"}, "c": {"type": "string"}, "d": {"type": "boolean"}}});
    let g = Arc::new(Grammar::compile(&schema, &pretty()).unwrap());
    let compact = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
    for value in [
        json!({}),
        json!({"a": []}),
        json!({"a": [1, {}, [], [[2]], {"k": [true]}], "b": {"x": {"y": null}}}),
        json!({"c": "a b\n:,{", "d": false, "b": {}}),
    ] {
        let text = serde_json::to_string_pretty(&value).unwrap();
        assert!(accepts(&g, &text), "{text}");
        let min = serde_json::to_string(&value).unwrap();
        assert!(accepts(&compact, &min), "{min}");
        assert_eq!(accepts(&g, &min), text == min, "{min} under pretty");
        assert_eq!(
            accepts(&compact, &text),
            text == min,
            "{text} under compact"
        );
        for other in respaced(&text) {
            assert!(!accepts(&g, &other), "{other:?} under pretty");
        }
        for other in respaced(&min) {
            assert!(!accepts(&compact, &other), "{other:?} under compact");
        }
    }
}

/// A line break after a member or item commits to closing the container, one after `{`
/// or `[` to a first member or item: it is refused where that cannot follow.
#[test]
fn pretty_line_breaks_lead_only_where_the_document_can_go() {
    let refused = |schema: serde_json::Value, prefix: &str| {
        let g = Arc::new(Grammar::compile(&schema, &pretty()).unwrap());
        let mut m = Matcher::new(g);
        m.push_bytes(prefix.as_bytes()).unwrap();
        !m.try_push_byte(b'\n')
    };
    let required = json!({"type": "object", "required": ["a", "b"],
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}});
    assert!(refused(required.clone(), "{\n  \"a\": 1"), "b is missing");
    assert!(!refused(required.clone(), "{\n  \"a\": 1,\n  \"b\": 2"));
    assert!(refused(required, "{\n  \"b\": 2"), "a is missing");
    let empty = json!({"type": "object", "additionalProperties": false});
    assert!(refused(empty, "{"), "no member can follow");
    assert!(refused(json!({"type": "array", "maxItems": 0}), "["));
    assert!(!refused(json!({"type": "array", "maxItems": 1}), "["));
    let two = json!({"type": "array", "minItems": 2});
    assert!(refused(two.clone(), "[\n  1"), "a second item is needed");
    assert!(!refused(two, "[\n  1,\n  2"));
}

#[test]
fn pretty_completions_are_pretty() {
    let countries = json!({"type": "array", "items": {"type": "object",
        "properties": {"name": {"type": "string"}, "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
        "required": ["name", "n", "tags"]}});
    let full = json!([{"name": "Nigeria", "n": 12, "tags": ["x"]}, {"name": "", "n": 0,
        "tags": [""]}]);
    let text = serde_json::to_string_pretty(&full).unwrap();
    for cut in 0..text.len() {
        let head = &text[..cut];
        let tail = complete_with(&pretty(), countries.clone(), head);
        let whole = format!("{head}{tail}");
        assert!(
            serde_json::from_str::<serde_json::Value>(&whole).is_ok(),
            "{whole}"
        );
        assert_eq!(
            whole,
            crate::json_text::pretty(&whole, 2),
            "completed after {head:?}"
        );
    }
    assert_eq!(
        complete_with(&pretty(), countries, "[\n  {"),
        "\n    \"name\": \"\",\n    \"n\": 0,\n    \"tags\": [\n      \"\"\n    ]\n  }\n]"
    );
}

#[test]
fn bytes_said_untaken_are_exactly_those_no_decoder_takes() {
    use super::decode::{Decoded, decode, may_take};
    use super::state::Core;
    // Decoders at each escape point, with code-unit values that let the last digit through
    // (a plain one, a high surrogate, a pair awaiting its low half) or not, in both escape
    // modes.
    let uvals = [
        0,
        0x0041,
        0xD83D,
        0xDE00,
        0xD83D_0000,
        0xD83D_0DC0,
        0xD83D_DE00,
    ];
    for esc in 0..=12u8 {
        for b in 0..=255u8 {
            let taken = uvals.iter().any(|&uval| {
                [false, true].into_iter().any(|needed_only| {
                    let mut core = Core {
                        esc,
                        uval,
                        ..Core::default()
                    };
                    !matches!(
                        decode(&mut core, b, needed_only),
                        Decoded::Reject | Decoded::End
                    )
                })
            });
            assert_eq!(may_take(esc, b), taken, "escape point {esc}, byte {b:#04x}");
        }
    }
}

/// The loop bytes a walker names (see [`Matcher::loop_bytes`]) are exactly the bytes whose
/// successor is the walker's node itself, at every position of strings and keys under
/// patterns, formats, length limits, several lexers at once and property names.
#[test]
fn loop_bytes_are_exactly_those_back_to_the_same_node() {
    let forty = "0123456789abcdef".repeat(3);
    let change_id = format!("\"I{}\"", &forty[..40]);
    let cases = [
        (
            json!({"type": "string", "pattern": "^[a-z0-9-\\.]+$"}),
            r#""example-module""#,
        ),
        (
            json!({"type": "string",
                "pattern": "^[a-z\\d_\\.\\+-]+@([a-z\\d\\.-]+\\.)+[a-z]+$"}),
            r#""john.doe@example.com""#,
        ),
        (
            json!({"type": "string", "pattern": "^I[a-z0-f]{40}$"}),
            change_id.as_str(),
        ),
        (
            json!({"type": "string", "format": "date-time"}),
            r#""2022-01-01T12:00:00Z""#,
        ),
        (
            json!({"type": "string", "maxLength": 5, "pattern": "^[a-z]*$"}),
            r#""abcd""#,
        ),
        (
            json!({"type": "string", "pattern": "^[a-z ]*$"}),
            r#""ab c\u0064""#,
        ),
        (
            json!({"allOf": [{"type": "string", "pattern": "^[a-z]+$"},
                {"pattern": "^[a-m]+$"}]}),
            r#""abc""#,
        ),
        // Three lexers at once: the property's, the branch's, and a catch-all.
        (
            json!({"properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}},
                "anyOf": [{"properties": {"a": {"pattern": "^[a-m0-9]+$"}}},
                    {"required": ["b"]}]}),
            r#"{"a":"abz","b":1}"#,
        ),
        (
            json!({"type": "object", "properties": {"flight_details": {"type": "string"}},
                "additionalProperties": false}),
            r#"{"flight_details":"x"}"#,
        ),
        (
            json!({"type": "object", "propertyNames": {"pattern": "^[a-z_]+$"}}),
            r#"{"ab_c":1}"#,
        ),
    ];
    let mut looping = 0;
    for (schema, doc) in &cases {
        let g = Arc::new(Grammar::compile(schema, &Options::generation()).unwrap());
        for cut in 0..=doc.len() {
            let mut m = Matcher::new(g.clone());
            m.push_bytes(&doc.as_bytes()[..cut]).unwrap();
            if !matches!(m.state.lex.kind, state::LexKind::Str | state::LexKind::Key) {
                continue;
            }
            m.set_lexeme_only(true);
            let mut said = [0u64; 4];
            let some = m.loop_bytes(&mut said);
            assert_eq!(some, said != [0; 4], "{schema} after {:?}", &doc[..cut]);
            let base = *m.state.walk.path.last().expect("a base node");
            for b in 0..=255u8 {
                if m.try_push_byte(b) {
                    m.pop_bytes(1);
                }
                let back = m.state.walk.next[base as usize * 256 + b as usize] == base;
                assert_eq!(
                    said[b as usize / 64] >> (b % 64) & 1 != 0,
                    back,
                    "{schema} after {:?}, byte {b:#04x}",
                    &doc[..cut]
                );
            }
            looping += some as usize;
            m.set_lexeme_only(false);
        }
    }
    assert!(looping >= 20, "only {looping} positions loop");
}

/// A matcher takes up what another matcher of the grammar learnt in lexeme-only mode (see
/// `WalkStore`), but judges viability afresh: here the other one last judged the node after
/// `a` in an object where `a` was already seen, under the same walk number the new one is at.
#[test]
fn walkers_of_one_grammar_share_what_they_learnt_but_not_viability() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "additionalProperties": false
    });
    let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
    let mut first = Matcher::new(g.clone());
    first.push_bytes(br#"{"a":"x",""#).unwrap();
    first.set_lexeme_only(true);
    assert!(
        !first.try_push_byte(b'a'),
        "`a` is seen: no key left starts with it"
    );
    assert!(first.try_push_byte(b'b'));
    first.pop_bytes(1);
    first.set_lexeme_only(false);
    drop(first);

    let mut second = Matcher::new(g.clone());
    second.push_bytes(br#"{""#).unwrap();
    second.set_lexeme_only(true);
    let taken = second.state.walk.node_core.len();
    assert!(taken > 1, "the first matcher's nodes are taken up");
    assert!(second.try_push_byte(b'a'), "`a` is not seen yet here");
    assert_eq!(
        second.state.walk.node_core.len(),
        taken,
        "nothing new to learn"
    );
    second.pop_bytes(1);
    second.set_lexeme_only(false);
    assert!(second.push_bytes(br#"a":"y"}"#).is_ok() && second.is_accepting());
}

/// A clone of a matcher numbers its strings and keys as the original does from then on, so
/// what either puts aside is judged afresh by the other.
#[test]
fn a_cloned_matcher_judges_what_the_original_learnt_afresh() {
    let schema = json!({
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "a": {"type": "string"},
            "b": {"type": "string"}
        },
        "additionalProperties": false
    });
    let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
    let walk = |m: &mut Matcher, bytes: &[u8], probe: u8| {
        m.push_bytes(bytes).unwrap();
        m.set_lexeme_only(true);
        let took = m.try_push_byte(probe);
        if took {
            m.pop_bytes(1);
        }
        m.set_lexeme_only(false);
        took
    };
    let mut original = Matcher::new(g.clone());
    assert!(walk(&mut original, br#"{"s":""#, b'q'));
    assert!(walk(&mut original, br#"q",""#, b'a'));
    // The original has a number by now (it put aside what it learnt in the string); the
    // clone starts from a copy of its walker, numbered as its walks are.
    let mut clone = original.clone();
    assert!(walk(&mut original, br#"a":""#, b'x'));
    assert!(!walk(&mut original, br#"x",""#, b'a'), "`a` is seen");
    assert!(walk(&mut original, br#"b":""#, b'x'));
    // The clone's walks are numbered as the original's were: its next key walk has the
    // number under which the original judged `a` seen, and takes up what it learnt.
    assert!(walk(&mut clone, br#"b":""#, b'y'));
    assert!(walk(&mut clone, br#"y",""#, b'a'), "`a` is not seen here");
}

/// A key's frame number (see `Matcher::close_frame`) holds at every position of the key, and
/// no other key, of this document or of the next one after a reset, has it.
#[test]
fn a_key_keeps_its_frame_number_and_no_other_key_has_it() {
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
    let mut m = Matcher::new(g);
    let frame = |m: &mut Matcher| {
        m.set_lexeme_only(true);
        let f = m.close_frame();
        m.set_lexeme_only(false);
        f
    };
    m.push_bytes(br#"{""#).unwrap();
    let first = frame(&mut m).expect("a key of an object that takes any key");
    m.push_bytes(b"na").unwrap();
    assert_eq!(frame(&mut m), Some(first), "the same key, further on");
    m.push_bytes(br#"me":"x",""#).unwrap();
    assert!(frame(&mut m).is_some_and(|f| f != first), "the next key");
    m.reset();
    m.push_bytes(br#"{""#).unwrap();
    assert!(
        frame(&mut m).is_some_and(|f| f != first),
        "the first key after a reset"
    );
}

/// A number item of a `uniqueItems` array whose every completion has the value of an earlier
/// item is refused at its last digit, as a repeated `enum` string is at its last character:
/// `[1,1` under `"enum": [1, 2]` could only go on as `1.0`, `1.00`, …, all repeats. Where
/// the number can still grow to another value, or is not spelled canonically yet, it goes on.
#[test]
fn a_number_item_that_can_only_repeat_an_earlier_one_is_refused_at_its_last_digit() {
    let unique = |values: serde_json::Value| json!({"type": "array", "items": {"enum": values}, "uniqueItems": true});
    // (schema, the items before, the item's bytes, index of the first refused byte)
    let cases = [
        (unique(json!([1, 2])), "[1,", "1", Some(0)),
        (unique(json!([1, 2])), "[1.0,", "1", Some(0)),
        (unique(json!([1, 2])), "[2,", "1.0]", None),
        (unique(json!([1, 2.5, 10])), "[10,", "10", Some(1)),
        (unique(json!([1, 2.5, 10])), "[2.5,", "2.5", Some(2)),
        (unique(json!([1, 2.5, 10])), "[1,", "10]", None),
        (unique(json!([1, 2.5, 10])), "[10,", "1]", None),
        (unique(json!([-1, 1])), "[-1,", "-1", Some(1)),
        (
            json!({"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 20},
                "uniqueItems": true}),
            "[20,",
            "20",
            Some(1),
        ),
        // Items that may repeat, or a number that may still become another value.
        (
            json!({"type": "array", "items": {"enum": [1, 2]}}),
            "[1,",
            "1]",
            None,
        ),
        (
            json!({"type": "array", "items": {"type": "integer", "minimum": 0},
                "uniqueItems": true}),
            "[20,",
            "20",
            None,
        ),
    ];
    for (schema, before, item, refused) in cases {
        let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
        let mut m = Matcher::new(g);
        m.push_bytes(before.as_bytes()).unwrap();
        assert_eq!(
            m.push_bytes(item.as_bytes()).err(),
            refused,
            "{schema}: {item} after {before}"
        );
    }
}

/// Items that must be unique, each one of finitely many values, run out: after the last
/// value the `,` that would announce one more item is refused (every further item would repeat
/// one), and an array that needs more items than there are values is refused at compile time.
/// Numbers count by value (`1.0` and `1.00` are `1`); where the values are unbounded, or the
/// items need not differ, nothing changes.
#[test]
fn unique_items_end_when_their_values_run_out() {
    let unique =
        |items: serde_json::Value| json!({"type": "array", "items": items, "uniqueItems": true});
    let cases = [
        (
            unique(json!({"type": "boolean"})),
            "[true,false",
            "[false,true]",
        ),
        (unique(json!({"type": "null"})), "[null", "[null]"),
        (
            unique(json!({"enum": ["a", "b"]})),
            r#"["b","a""#,
            r#"["a","b"]"#,
        ),
        (
            unique(json!({"enum": [1, 2.5, 10]})),
            "[10,2.50,1.0",
            "[1,2.5,10]",
        ),
        (
            unique(json!({"type": "integer", "minimum": 0, "maximum": 2})),
            "[2,0,1",
            "[0,1,2]",
        ),
        (
            unique(json!({"anyOf": [{"const": "x"}, {"type": "boolean"}]})),
            r#"[true,"x",false"#,
            r#"[false,"x",true]"#,
        ),
        // Past a prefix, the items' own values.
        (
            json!({"type": "array", "prefixItems": [{"type": "string"}],
                "items": {"enum": [1, 2]}, "uniqueItems": true}),
            r#"["s",2,1"#,
            r#"["s",1,2]"#,
        ),
    ];
    for (schema, full, other) in cases {
        let g = ends_after(&schema, full);
        // A shorter prefix still takes the `,`, and every order of the values is written.
        if let Some(last) = full.rfind(',') {
            let mut m = Matcher::new(g.clone());
            m.push_bytes(&full.as_bytes()[..last]).unwrap();
            assert!(
                m.try_push_byte(b','),
                "{schema}: the last value is still to come"
            );
        }
        let mut m = Matcher::new(g);
        m.push_bytes(other.as_bytes()).unwrap();
        assert!(m.is_accepting(), "{schema}: {other}");
    }
    // More items than values: no array.
    let short = json!({"type": "array", "items": {"enum": [1, 2]}, "uniqueItems": true,
        "minItems": 3});
    assert!(matches!(
        Grammar::compile(&short, &Options::generation()),
        Err(crate::CompileError::Unsatisfiable { .. })
    ));
    // Unbounded values, or items that may repeat, go on.
    for (schema, full) in [
        (unique(json!({"type": "integer", "minimum": 0})), "[0,1,2"),
        (
            unique(json!({"type": "string", "maxLength": 1})),
            r#"["a","b","""#,
        ),
        (
            unique(json!({"type": "array", "items": {"type": "boolean"}, "maxItems": 0})),
            "[[]",
        ),
        (
            json!({"type": "array", "items": {"type": "boolean"}}),
            "[true,false,true",
        ),
    ] {
        let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
        let mut m = Matcher::new(g);
        m.push_bytes(full.as_bytes()).unwrap();
        assert!(m.try_push_byte(b','), "{schema}: after {full}");
    }
}

/// Compiles `schema` and checks that its array must end after `full`: the `,` of another
/// item is refused and the `]` taken, completing the document. The grammar, for more checks.
fn ends_after(schema: &serde_json::Value, full: &str) -> Arc<Grammar> {
    let g = Arc::new(Grammar::compile(schema, &Options::generation()).unwrap());
    let mut m = Matcher::new(g.clone());
    m.push_bytes(full.as_bytes()).unwrap();
    assert!(
        !m.try_push_byte(b','),
        "{schema}: one more item after {full}"
    );
    assert!(
        m.try_push_byte(b']'),
        "{schema}: the array ends after {full}"
    );
    assert!(m.is_accepting(), "{schema}");
    g
}

/// An item position no value can be written at (after a tuple's `prefixItems` with `items:
/// false`, a `false` in the prefix, past the items of a `const` array, or under keywords no
/// value meets) ends the array: the `,` that would announce the item is refused, as past
/// `maxItems`, instead of leading to a value that nothing can start.
#[test]
fn an_array_ends_before_an_item_position_that_takes_no_value() {
    let int = json!({"type": "integer"});
    let cases = [
        (
            json!({"type": "array", "prefixItems": [int, int], "items": false}),
            "[1,2",
        ),
        (json!({"type": "array", "prefixItems": [int, false]}), "[1"),
        (json!({"const": [1, 2]}), "[1,2"),
        (
            json!({"type": "array", "prefixItems": [int], "items": false, "maxItems": 5}),
            "[1",
        ),
        // No string is at least 3 and at most 1 character long.
        (
            json!({"type": "array", "prefixItems": [int],
                "items": {"type": "string", "minLength": 3, "maxLength": 1}}),
            "[1",
        ),
    ];
    for (schema, full) in cases {
        ends_after(&schema, full);
    }
    // An array that may go on still takes the `,`.
    let open = json!({"type": "array", "prefixItems": [int, int]});
    let g = Arc::new(Grammar::compile(&open, &Options::generation()).unwrap());
    let mut m = Matcher::new(g);
    m.push_bytes(b"[1,2").unwrap();
    assert!(m.try_push_byte(b','));
}

/// A property whose schema no value meets (`not: {}`, the usual way to forbid one, or
/// keywords that contradict each other) cannot be written: its key is refused at its closing
/// quote, as a `false` one is, instead of leading to a value that nothing can start.
#[test]
fn an_object_key_whose_value_nothing_meets_is_refused() {
    let short = json!({"type": "string", "minLength": 3, "maxLength": 1});
    let refused = |schema: &serde_json::Value, text: &str| {
        let g = Arc::new(Grammar::compile(schema, &Options::generation()).unwrap());
        Matcher::new(g).push_bytes(text.as_bytes()).err()
    };
    for member in [json!({"not": {}}), short.clone()] {
        let schema = json!({"type": "object", "properties": {"a": member}});
        assert_eq!(refused(&schema, r#"{"a""#), Some(3), "{schema}");
        assert_eq!(
            refused(&schema, r#"{"ab":1}"#),
            None,
            "{schema}: other keys"
        );
        assert_eq!(refused(&schema, "{}"), None, "{schema}");
    }
    let additional = json!({"type": "object", "additionalProperties": short});
    assert_eq!(
        refused(&additional, r#"{""#),
        Some(1),
        "no key can be written"
    );
    assert_eq!(refused(&additional, "{}"), None);
    // Where such a property is required no object is valid: the schema is refused, and a
    // property under such an object is refused as the first one was.
    let required = json!({"type": "object", "properties": {"a": {"not": {}}}, "required": ["a"]});
    let err = Grammar::compile(&required, &Options::generation()).unwrap_err();
    assert!(err.is_unsatisfiable(), "{err}");
    let nested = json!({"type": "object", "properties": {"x": required}});
    assert_eq!(
        refused(&nested, r#"{"x""#),
        Some(3),
        "so is a key that needs one"
    );
    assert_eq!(refused(&nested, "{}"), None);
    // As it is when the required property is `false` itself.
    let forbidden = json!({"type": "object", "properties": {"a": false}, "required": ["a"]});
    let nested = json!({"type": "object", "properties": {"x": forbidden}});
    assert_eq!(
        refused(&nested, r#"{"x""#),
        Some(3),
        "a key that needs a false one"
    );
    // The same holds through arrays and combinators: an item that needs such an object ends
    // the array, and a branch that needs one leaves the others.
    let items = json!({"type": "array", "prefixItems": [{"type": "integer"}], "items": required});
    assert_eq!(refused(&items, "[1,"), Some(2));
    let branches = json!({"anyOf": [required, {"type": "integer"}]});
    assert_eq!(refused(&branches, "{"), Some(0));
    assert_eq!(refused(&branches, "12"), None);
    // A required property whose name `propertyNames` refuses cannot be written either.
    let named = json!({"type": "object", "propertyNames": {"enum": ["a", "b"]},
        "required": ["a", "x"]});
    let err = Grammar::compile(&named, &Options::generation()).unwrap_err();
    assert!(err.is_unsatisfiable(), "{err}");
    let short_names = json!({"type": "object", "propertyNames": {"maxLength": 1},
        "required": ["long"]});
    let nested = json!({"type": "object", "properties": {"o": short_names, "p": {}}});
    assert_eq!(refused(&nested, r#"{"o""#), Some(3), "{nested}");
    assert_eq!(refused(&nested, r#"{"p":{"long":1}}"#), None, "{nested}");
    let allowed = json!({"type": "object", "propertyNames": {"enum": ["a", "x"]},
        "required": ["x"]});
    assert_eq!(refused(&allowed, r#"{"x":1}"#), None);
    // Nor can more properties than the keys that can be written.
    let few = json!({"type": "object", "properties": {"a": {}, "b": {"not": {}}},
        "additionalProperties": false, "minProperties": 2});
    let err = Grammar::compile(&few, &Options::generation()).unwrap_err();
    assert!(err.is_unsatisfiable(), "{err}");
    let nested = json!({"type": "object", "properties": {"o": few, "p": {}}});
    assert_eq!(refused(&nested, r#"{"o""#), Some(3), "{nested}");
    let enough = json!({"type": "object", "properties": {"a": {}, "b": {}},
        "additionalProperties": false, "minProperties": 2});
    assert_eq!(refused(&enough, r#"{"b":1,"a":2}"#), None);
}
