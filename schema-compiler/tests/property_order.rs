//! `PropertyOrder::Schema`: members in the order of `properties`, the others after them,
//! required ones never skipped; under combinators that do not define one order, any order.
//!
//! Every accepted document is also checked byte by byte: each prefix the matcher accepts can
//! still be completed (the matcher never accepts its way into a dead end).

mod support;

use std::collections::HashSet;
use std::sync::Arc;

use schema_compiler::{Grammar, Matcher, Options, PropertyOrder};
use serde_json::{Value, json};
use support::search::{Search, search};

fn options(order: PropertyOrder) -> Options {
    Options::generation().property_order(order)
}

fn matcher(schema: &Value, order: PropertyOrder) -> Matcher {
    let g = Grammar::compile(schema, &options(order))
        .unwrap_or_else(|e| panic!("{schema} compiles: {e}"));
    Matcher::new(Arc::new(g))
}

/// Bytes a search for a completion tries: closers and separators first, then values and the
/// letters the tests' keys use.
const BYTES: &[u8] = b"\"}],:0123456789{[abcdefghijklmnopqrstuvwxyz";

/// Whether some bytes take `m` to a complete document: the matcher's own quick completion,
/// else a search within a budget (`GaveUp` when that ran out first).
fn completes(m: &mut Matcher) -> Search {
    if m.clone().completion(512).is_some() {
        return Search::Found;
    }
    search(m, BYTES, 32, &mut 20_000, &mut HashSet::new())
}

/// Whether `text` is accepted, asserting along the way that every accepted prefix has a
/// completion.
fn accepts(m: &mut Matcher, text: &str) -> bool {
    m.reset();
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if !m.try_push_byte(b) {
            return false;
        }
        assert_ne!(
            completes(&mut m.clone()),
            Search::NoneExists,
            "{:?} is accepted but cannot be completed",
            &text[..=i]
        );
    }
    m.is_accepting()
}

fn ordered(schema: &Value, text: &str) -> bool {
    accepts(&mut matcher(schema, PropertyOrder::Schema), text)
}

fn any(schema: &Value, text: &str) -> bool {
    accepts(&mut matcher(schema, PropertyOrder::Any), text)
}

/// Listed properties in the schema's order, the others after them.
#[test]
fn listed_properties_come_in_the_schemas_order() {
    // Not in alphabetical order: the schema's own order must survive parsing.
    let s = json!({"type": "object", "properties": {
        "zeta": {"type": "integer"}, "alpha": {"type": "integer"}, "mid": {"type": "integer"}
    }});
    for ok in [
        r#"{}"#,
        r#"{"zeta":1,"alpha":2,"mid":3}"#,
        r#"{"zeta":1,"mid":3}"#,
        r#"{"alpha":2}"#,
        r#"{"zeta":1,"other":true}"#,
        r#"{"other":true,"more":[]}"#,
    ] {
        assert!(ordered(&s, ok), "{ok}");
        assert!(any(&s, ok), "{ok}");
    }
    for out_of_order in [
        r#"{"alpha":2,"zeta":1}"#,
        r#"{"mid":3,"alpha":2}"#,
        r#"{"other":true,"zeta":1}"#,
    ] {
        assert!(!ordered(&s, out_of_order), "{out_of_order}");
        assert!(any(&s, out_of_order), "{out_of_order}");
    }
}

/// A required property cannot be passed over: keys after it are refused until it is written.
#[test]
fn required_properties_are_never_skipped() {
    let s = json!({"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}
    }, "required": ["b"]});
    assert!(ordered(&s, r#"{"b":1}"#));
    assert!(ordered(&s, r#"{"a":0,"b":1,"c":2}"#));
    assert!(ordered(&s, r#"{"b":1,"x":2}"#));
    let mut m = matcher(&s, PropertyOrder::Schema);
    m.push_bytes(br#"{""#).unwrap();
    // `c` would pass over `b`, and so would any key outside `properties`.
    assert!(m.clone().push_bytes(b"c").is_err());
    assert!(m.clone().push_bytes(b"x").is_err());
    assert!(m.clone().push_bytes(b"a").is_ok());
    assert!(m.clone().push_bytes(b"b").is_ok());
}

/// With every property required, each key is forced, as OpenAI's strict schemas are written.
#[test]
fn all_required_keys_are_forced_in_order() {
    let s = json!({"type": "object", "properties": {
        "reasoning": {"type": "string"}, "answer": {"type": "integer"}
    }, "required": ["answer", "reasoning"], "additionalProperties": false});
    let mut m = matcher(&s, PropertyOrder::Schema);
    m.push_bytes(b"{").unwrap();
    let only = |m: &Matcher| -> Vec<u8> {
        (0..=255u8)
            .filter(|&b| m.clone().try_push_byte(b))
            .collect()
    };
    let mut forced = Vec::new();
    loop {
        let next = only(&m);
        if next.len() != 1 {
            break;
        }
        m.try_push_byte(next[0]);
        forced.push(next[0]);
    }
    assert_eq!(String::from_utf8(forced).unwrap(), r#""reasoning":""#);
    assert!(ordered(&s, r#"{"reasoning":"2+2","answer":4}"#));
    assert!(!ordered(&s, r#"{"answer":4,"reasoning":"2+2"}"#));
}

/// `minProperties` with no key outside the listed ones: a key that leaves too few after it is
/// refused.
#[test]
fn enough_keys_remain_for_min_properties() {
    let s = json!({"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}
    }, "additionalProperties": false, "minProperties": 2});
    assert!(ordered(&s, r#"{"a":1,"c":2}"#));
    assert!(ordered(&s, r#"{"b":1,"c":2}"#));
    let mut m = matcher(&s, PropertyOrder::Schema);
    m.push_bytes(br#"{""#).unwrap();
    assert!(m.clone().push_bytes(b"c").is_err());
    assert!(!ordered(&s, r#"{"c":1}"#));
}

/// A key that a written key depends on comes before it, or the dependent key is refused.
#[test]
fn dependencies_are_not_passed_over() {
    let s = json!({"type": "object", "properties": {
        "x": {}, "a": {}, "b": {}
    }, "dependentRequired": {"b": ["x"]}});
    assert!(ordered(&s, r#"{"x":1,"b":2}"#));
    assert!(ordered(&s, r#"{"a":1}"#));
    assert!(!ordered(&s, r#"{"a":1,"b":2}"#));
    assert!(any(&s, r#"{"a":1,"b":2,"x":3}"#));
}

/// Each `anyOf` alternative has its own order; a document in either is accepted.
#[test]
fn each_alternative_keeps_its_own_order() {
    let s = json!({"anyOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}},
         "required": ["kind", "x"], "additionalProperties": false},
        {"type": "object", "properties": {"y": {"type": "integer"}, "kind": {"const": "b"}},
         "required": ["kind", "y"], "additionalProperties": false}
    ]});
    assert!(ordered(&s, r#"{"kind":"a","x":1}"#));
    assert!(ordered(&s, r#"{"y":1,"kind":"b"}"#));
    assert!(!ordered(&s, r#"{"x":1,"kind":"a"}"#));
    assert!(!ordered(&s, r#"{"kind":"b","y":1}"#));
}

/// Nested objects are held to their own schema's order.
#[test]
fn nested_objects_follow_their_own_schema() {
    let s = json!({"type": "object", "properties": {
        "outer": {"type": "object", "properties": {"q": {}, "p": {}}},
        "items": {"type": "array", "items": {"type": "object", "properties": {"n": {}, "m": {}}}}
    }});
    assert!(ordered(
        &s,
        r#"{"outer":{"q":1,"p":2},"items":[{"n":1,"m":2},{"m":3}]}"#
    ));
    assert!(!ordered(&s, r#"{"outer":{"p":2,"q":1}}"#));
    assert!(!ordered(&s, r#"{"items":[{"n":1},{"m":3,"n":1}]}"#));
}

/// Where object subschemas must hold together or are negated, no one listing is the order:
/// any order is accepted, and a negation never lets through what it excludes.
#[test]
fn combinators_without_one_order_accept_any_order() {
    let all_of = json!({"allOf": [
        {"type": "object", "properties": {"a": {}, "b": {}}},
        {"type": "object", "properties": {"c": {}, "d": {}}}
    ]});
    assert!(ordered(&all_of, r#"{"c":1,"a":2,"d":3,"b":4}"#));
    let one_of = json!({"oneOf": [
        {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a", "b"]},
        {"type": "object", "properties": {"c": {}}, "required": ["c"]}
    ]});
    assert!(ordered(&one_of, r#"{"b":1,"a":2}"#));
    // The member `o` is excluded whatever the order of its keys: ordering it under the `not`
    // would make the negated schema fail on `{"a":1,"b":2}` and let the document through.
    let not = json!({"type": "object", "not": {"properties": {
        "o": {"type": "object", "properties": {"b": {}, "a": {}}, "required": ["b", "a"]}
    }, "required": ["o"]}});
    assert!(!ordered(&not, r#"{"o":{"a":1,"b":2}}"#));
    assert!(!ordered(&not, r#"{"o":{"b":2,"a":1}}"#));
    assert!(ordered(&not, r#"{"o":{"a":1}}"#));
    // `contains` counts items: its objects are not ordered either.
    let contains = json!({"type": "array", "contains": {
        "type": "object", "properties": {"b": {}, "a": {}}, "required": ["b", "a"]
    }, "maxContains": 1});
    assert!(!ordered(&contains, r#"[{"a":1,"b":2},{"b":2,"a":1}]"#));
}

/// Whatever the order, a document the schema rejects is rejected.
#[test]
fn the_order_only_narrows() {
    let s = json!({"type": "object", "properties": {
        "b": {"type": "integer"}, "a": {"type": "string"}
    }, "required": ["a"], "additionalProperties": false});
    for text in [
        r#"{"b":1,"a":"x"}"#,
        r#"{"a":"x"}"#,
        r#"{"b":1}"#,
        r#"{"a":"x","b":1}"#,
        r#"{"b":"1","a":"x"}"#,
        r#"{"b":1,"a":"x","c":2}"#,
    ] {
        if ordered(&s, text) {
            assert!(any(&s, text), "{text} is accepted only in order");
        }
    }
}

/// The extension keyword lets one subschema's objects come in any order under
/// `PropertyOrder::Schema` while the others keep theirs (a non-strict tool among strict ones),
/// and accepts exactly what the plain schema accepts.
#[test]
fn a_subschema_marked_any_order_keeps_any_order() {
    let loose = json!({"type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
            "inner": {"type": "object", "properties": {"x": {"type": "integer"},
                "y": {"type": "integer"}}, "required": ["x", "y"]}},
        "required": ["a", "b"],
        "$defs": {"p": {"type": "object", "properties": {"u": {"type": "integer"},
            "v": {"type": "integer"}}}}});
    let strict = json!({"type": "object",
        "properties": {"c": {"type": "integer"}, "d": {"type": "integer"}},
        "required": ["c", "d"]});
    let marked = schema_compiler::any_order(&loose);
    assert_eq!(marked["x-stencil-property-order"], "any");
    assert_eq!(
        marked["properties"]["inner"]["x-stencil-property-order"],
        "any"
    );
    assert_eq!(marked["$defs"]["p"]["x-stencil-property-order"], "any");
    // The marked schema beside an unmarked one, as tool arguments are.
    let both = json!({"anyOf": [marked, strict]});
    for text in [
        r#"{"a":1,"b":2}"#,
        r#"{"b":2,"a":1}"#,
        r#"{"inner":{"y":1,"x":2},"b":2,"a":1}"#,
        r#"{"c":1,"d":2}"#,
    ] {
        assert!(ordered(&both, text), "{text}");
    }
    assert!(!ordered(&both, r#"{"d":2,"c":1}"#));
    // Whatever the order, the verdicts are those of the unmarked schema.
    for text in [
        r#"{"b":2,"a":1}"#,
        r#"{"a":1}"#,
        r#"{"a":1,"b":"x"}"#,
        r#"{"inner":{"y":1},"a":1,"b":2}"#,
        r#"{"a":1,"b":2,"z":null}"#,
    ] {
        assert_eq!(
            any(&schema_compiler::any_order(&loose), text),
            any(&loose, text),
            "{text}"
        );
        assert_eq!(
            ordered(&schema_compiler::any_order(&loose), text),
            any(&loose, text),
            "{text}"
        );
    }
    // Only "any" and "schema" are values of the keyword.
    let bad = json!({"type": "object", "x-stencil-property-order": "sorted"});
    let e = Grammar::compile(&bad, &options(PropertyOrder::Schema)).unwrap_err();
    assert!(e.to_string().contains("x-stencil-property-order"), "{e}");
}
