//! Property tests against a reference validator: for random schemas built from the supported
//! keywords and random JSON values, the automaton's verdict (`Options::validation()`, `format`
//! as an annotation) must equal the `jsonschema` crate's `is_valid` under draft 2020-12.
//!
//! Values are drawn half from the schema's own shape (its property names, item schemas, enum
//! members, numbers at its bounds, strings that match its patterns) and half at random, so that
//! both verdicts occur often. Every value is fed compact and pretty-printed, and the compact
//! text once more after popping a suffix and pushing it again.
//!
//! What is kept out of the generator, and why:
//! - numbers are integers and multiples of 1/4, and `multipleOf` is an integer or a power of
//!   two: the reference validator computes with `f64`, so `0.3` against `multipleOf: 0.1` would
//!   test its rounding rather than the automaton;
//! - `unevaluatedProperties` and `unevaluatedItems` are drawn by a test of their own
//!   (`unevaluated_verdicts_match_the_reference`, so that the other samples stay as they
//!   were) beside subschemas whose annotations they read (`allOf`, `anyOf`, `$ref`, `if`,
//!   `dependentSchemas`, `contains`), and skipped where the compiler refuses them (too many
//!   choices);
//! - `$ref` cycles that do not pass through a keyword descending into the instance
//!   (`{"$defs": {"a": {"$ref": "#/$defs/a"}}}`) are replaced by `{}`; they are covered by the
//!   pathological tests, where both outcomes (a clean error) are checked directly.

mod support;

use support::search::{Search, search};

use std::collections::HashSet;
use std::sync::Arc;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::Union;
use schema_compiler::{
    CompileError, FormatMode, Grammar, Matcher, Options, PropertyOrder, Whitespace, json_text,
};
use serde_json::{Map, Value, json};

/// Property names: short, overlapping, so that `properties`, `required`, `patternProperties`
/// and random objects meet.
const KEYS: &[&str] = &["a", "b", "c", "ab", "ba", "x", "é"];

/// ECMA-262 patterns (each valid in Rust's `regex` too) with strings that match them.
const PATTERNS: &[(&str, &[&str])] = &[
    ("^a", &["a", "ab", "abc"]),
    ("c$", &["c", "abc"]),
    ("^[a-c]+$", &["a", "cab", "bb"]),
    ("^(ab)*$", &["", "ab", "abab"]),
    ("^[^x]*$", &["", "yz", "é"]),
    ("é", &["é", "aéb"]),
    ("^.{2,3}$", &["ab", "😀😀", "a b"]),
    ("^.$", &["😀", "é", "a"]),
    ("^[0-9]+$", &["0", "12", "007"]),
    ("^[a-z]{1,3}$", &["a", "xyz"]),
    ("b|x", &["b", "x", "abx"]),
    // Lookaheads at the start anchor: a difference and an intersection of languages.
    ("^(?!ab)[a-c]*$", &["", "ba", "acb"]),
    ("^(?=.*b)(?!c)", &["b", "ab", "abc"]),
    ("^(?!a$).", &["ab", "b", "é"]),
];

/// More strings: empty, long, non-ASCII, escapes.
const STRINGS: &[&str] = &[
    "",
    "a",
    "b",
    "x",
    "ab",
    "ba",
    "abcd",
    "é",
    "😀",
    "aé😀",
    "a\nb",
    "\"q\"",
    "12",
    "1.5",
    "date",
    "2024-01-31",
    "A",
    " ",
    "\\",
    "xx",
];

fn key() -> impl Strategy<Value = String> {
    select(KEYS).prop_map(str::to_owned)
}

fn string_value() -> BoxedStrategy<String> {
    let mut pool: Vec<&'static str> = STRINGS.to_vec();
    for (_, ex) in PATTERNS {
        pool.extend_from_slice(ex);
    }
    prop_oneof![
        3 => select(pool).prop_map(str::to_owned),
        1 => "[abcx0-9é😀]{0,6}",
    ]
    .boxed()
}

/// A number: an integer or a multiple of 1/4 (exact in `f64` and in decimal).
fn number() -> BoxedStrategy<Value> {
    prop_oneof![
        (-12i64..12).prop_map(Value::from),
        (-48i64..48).prop_map(|q| json!(q as f64 / 4.0)),
    ]
    .boxed()
}

fn leaf_value() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        number(),
        string_value().prop_map(Value::String),
    ]
    .boxed()
}

/// Any JSON value, small.
fn any_value() -> BoxedStrategy<Value> {
    leaf_value()
        .prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
        .boxed()
}

fn type_name() -> impl Strategy<Value = &'static str> {
    select(
        &[
            "null", "boolean", "integer", "number", "string", "array", "object",
        ][..],
    )
}

fn type_schema() -> BoxedStrategy<Value> {
    prop_oneof![
        type_name().prop_map(|t| json!({ "type": t })),
        prop::collection::btree_set(type_name(), 2..4)
            .prop_map(|ts| json!({ "type": ts.into_iter().collect::<Vec<_>>() })),
    ]
    .boxed()
}

fn bound() -> BoxedStrategy<Value> {
    prop_oneof![
        (-10i64..10).prop_map(Value::from),
        (-20i64..20).prop_map(|h| json!(h as f64 / 2.0)),
    ]
    .boxed()
}

fn number_schema() -> BoxedStrategy<Value> {
    (
        select(&[None, Some("number"), Some("integer")][..]),
        prop::option::of(bound()),
        prop::option::of(bound()),
        prop::option::of(bound()),
        prop::option::of(bound()),
        prop::option::of(select(&[2.0f64, 3.0, 5.0, 0.5, 0.25, 1.5][..])),
    )
        .prop_map(|(t, min, max, xmin, xmax, mult)| {
            let mut m = Map::new();
            if let Some(t) = t {
                m.insert("type".into(), json!(t));
            }
            for (k, v) in [
                ("minimum", min),
                ("maximum", max),
                ("exclusiveMinimum", xmin),
                ("exclusiveMaximum", xmax),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            if let Some(x) = mult {
                let v = if x.fract() == 0.0 {
                    json!(x as i64)
                } else {
                    json!(x)
                };
                m.insert("multipleOf".into(), v);
            }
            Value::Object(m)
        })
        .boxed()
}

fn string_schema() -> BoxedStrategy<Value> {
    (
        any::<bool>(),
        prop::option::of(0u64..4),
        prop::option::of(0u64..6),
        prop::option::of(select(PATTERNS).prop_map(|(p, _)| p)),
        any::<bool>(),
    )
        .prop_map(|(typed, min, max, pattern, format)| {
            let mut m = Map::new();
            if typed {
                m.insert("type".into(), json!("string"));
            }
            if let Some(n) = min {
                m.insert("minLength".into(), json!(n));
            }
            if let Some(n) = max {
                m.insert("maxLength".into(), json!(n));
            }
            if let Some(p) = pattern {
                m.insert("pattern".into(), json!(p));
            }
            if format {
                // An annotation here: must change nothing.
                m.insert("format".into(), json!("date"));
            }
            Value::Object(m)
        })
        .boxed()
}

fn enum_schema() -> BoxedStrategy<Value> {
    prop_oneof![
        prop::collection::vec(any_value(), 1..4).prop_map(|v| json!({ "enum": v })),
        any_value().prop_map(|v| json!({ "const": v })),
    ]
    .boxed()
}

fn ref_schema() -> BoxedStrategy<Value> {
    (0usize..3)
        .prop_map(|i| json!({ "$ref": format!("#/$defs/d{i}") }))
        .boxed()
}

fn object_schema(inner: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    let additional = prop_oneof![Just(json!(false)), Just(json!(true)), inner.clone()];
    let names = prop_oneof![
        select(PATTERNS).prop_map(|(p, _)| json!({ "pattern": p })),
        (0u64..3).prop_map(|n| json!({ "maxLength": n })),
        Just(json!({ "enum": ["a", "b", "ab"] })),
    ];
    (
        any::<bool>(),
        prop::collection::vec((key(), inner.clone()), 0..4),
        prop::collection::vec(key(), 0..3),
        prop::option::of(additional),
        prop::option::of((select(PATTERNS).prop_map(|(p, _)| p), inner)),
        prop::option::of(0u64..3),
        prop::option::of(1u64..4),
        prop::option::of((key(), prop::collection::vec(key(), 1..3))),
        prop::option::of(names),
    )
        .prop_map(
            |(typed, props, required, additional, pattern, min, max, dep, names)| {
                let mut m = Map::new();
                if typed {
                    m.insert("type".into(), json!("object"));
                }
                if !props.is_empty() {
                    let p: Map<String, Value> = props.into_iter().collect();
                    m.insert("properties".into(), Value::Object(p));
                }
                if !required.is_empty() {
                    let mut r = required;
                    r.sort();
                    r.dedup();
                    m.insert("required".into(), json!(r));
                }
                if let Some(a) = additional {
                    m.insert("additionalProperties".into(), a);
                }
                if let Some((p, s)) = pattern {
                    m.insert("patternProperties".into(), json!({ p: s }));
                }
                if let Some(n) = min {
                    m.insert("minProperties".into(), json!(n));
                }
                if let Some(n) = max {
                    m.insert("maxProperties".into(), json!(n));
                }
                if let Some((k, mut deps)) = dep {
                    // The meta-schema wants unique names.
                    deps.sort();
                    deps.dedup();
                    m.insert("dependentRequired".into(), json!({ k: deps }));
                }
                if let Some(n) = names {
                    m.insert("propertyNames".into(), n);
                }
                Value::Object(m)
            },
        )
        .boxed()
}

fn array_schema(inner: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    (
        any::<bool>(),
        prop::option::of(inner.clone()),
        prop::collection::vec(inner.clone(), 0..3),
        prop::option::of(0u64..3),
        prop::option::of(0u64..4),
        any::<bool>(),
        prop::option::of((inner, prop::option::of(0u64..3), prop::option::of(0u64..3))),
    )
        .prop_map(|(typed, items, prefix, min, max, unique, contains)| {
            let mut m = Map::new();
            if typed {
                m.insert("type".into(), json!("array"));
            }
            if let Some(s) = items {
                m.insert("items".into(), s);
            }
            if !prefix.is_empty() {
                m.insert("prefixItems".into(), Value::Array(prefix));
            }
            if let Some(n) = min {
                m.insert("minItems".into(), json!(n));
            }
            if let Some(n) = max {
                m.insert("maxItems".into(), json!(n));
            }
            if unique {
                m.insert("uniqueItems".into(), json!(true));
            }
            if let Some((c, lo, hi)) = contains {
                m.insert("contains".into(), c);
                if let Some(n) = lo {
                    m.insert("minContains".into(), json!(n));
                }
                if let Some(n) = hi {
                    m.insert("maxContains".into(), json!(n));
                }
            }
            Value::Object(m)
        })
        .boxed()
}

/// A schema from the supported keywords, possibly with `$ref`s to `#/$defs/d0..d2`; with
/// `unevaluated`, `unevaluatedProperties` or `unevaluatedItems` on some of its subschemas,
/// beside what they read.
fn schema_with(unevaluated: bool) -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        1 => Just(json!(true)),
        1 => Just(json!(false)),
        1 => Just(json!({})),
        3 => type_schema(),
        2 => enum_schema(),
        3 => string_schema(),
        3 => number_schema(),
        2 => ref_schema(),
    ];
    leaf.prop_recursive(4, 24, 4, move |inner| {
        let plain = prop_oneof![
            3 => object_schema(inner.clone()),
            3 => array_schema(inner.clone()),
            1 => prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({ "anyOf": v })),
            1 => prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({ "oneOf": v })),
            1 => prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({ "allOf": v })),
            1 => inner.clone().prop_map(|s| json!({ "not": s })),
            1 => (
                inner.clone(),
                prop::option::of(inner.clone()),
                prop::option::of(inner.clone())
            )
                .prop_map(|(i, t, e)| {
                    let mut m = Map::new();
                    m.insert("if".into(), i);
                    if let Some(t) = t {
                        m.insert("then".into(), t);
                    }
                    if let Some(e) = e {
                        m.insert("else".into(), e);
                    }
                    Value::Object(m)
                }),
            // A typed schema and a combinator side by side.
            1 => (type_schema(), prop::collection::vec(inner.clone(), 1..3))
                .prop_map(|(mut t, v)| {
                    t["anyOf"] = Value::Array(v);
                    t
                }),
        ];
        if !unevaluated {
            return plain.boxed();
        }
        prop_oneof![
            4 => plain,
            // `unevaluatedProperties` or `unevaluatedItems` on a schema (an object or array
            // schema, a combinator of them), reading the annotations of its subschemas.
            1 => (
                inner.clone(),
                prop::collection::vec(inner.clone(), 0..3),
                prop::option::of((key(), inner.clone())),
                any::<bool>(),
                prop_oneof![Just(json!(false)), inner.clone()]
            )
                .prop_map(|(s, siblings, dependent, items, u)| {
                    let k = if items { "unevaluatedItems" } else { "unevaluatedProperties" };
                    let mut m = match s {
                        Value::Object(m) => m,
                        other => Map::from_iter([("allOf".to_string(), json!([other]))]),
                    };
                    if !siblings.is_empty() {
                        m.entry("anyOf").or_insert(Value::Array(siblings));
                    }
                    if let Some((name, d)) = dependent {
                        m.entry("dependentSchemas").or_insert(json!({ name: d }));
                    }
                    m.insert(k.into(), u);
                    Value::Object(m)
                }),
        ]
        .boxed()
    })
    .boxed()
}

/// Keywords whose subschemas apply to parts of the instance (so a cycle through them ends).
const DESCENDING: &[&str] = &[
    "properties",
    "patternProperties",
    "additionalProperties",
    "items",
    "prefixItems",
    "contains",
    "propertyNames",
];

/// Replaces `$ref`s to missing definitions by `{}`, and, inside definition `me`, `$ref`s that
/// are not under a descending keyword and point to a definition at or before `me` (the only
/// way to close a cycle without descending).
fn fix_refs(s: &mut Value, me: Option<usize>, n_defs: usize, guarded: bool) {
    let Value::Object(m) = s else { return };
    if let Some(Value::String(r)) = m.get("$ref") {
        let target: Option<usize> = r.strip_prefix("#/$defs/d").and_then(|i| i.parse().ok());
        let ok = target.is_some_and(|t| t < n_defs && (guarded || me.is_none_or(|me| t > me)));
        if !ok {
            m.remove("$ref");
        }
    }
    for (k, v) in m.iter_mut() {
        let g = guarded || DESCENDING.contains(&k.as_str());
        match k.as_str() {
            "properties" | "patternProperties" => {
                if let Value::Object(ps) = v {
                    for p in ps.values_mut() {
                        fix_refs(p, me, n_defs, g);
                    }
                }
            }
            "prefixItems" | "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(a) = v {
                    for x in a {
                        fix_refs(x, me, n_defs, g);
                    }
                }
            }
            "dependentRequired" | "enum" | "const" | "required" => {}
            _ => fix_refs(v, me, n_defs, g),
        }
    }
}

/// A root schema with up to three definitions.
fn root_schema() -> BoxedStrategy<Value> {
    root_schema_with(false)
}

/// [`root_schema`] from [`schema_with`].
fn root_schema_with(unevaluated: bool) -> BoxedStrategy<Value> {
    (
        schema_with(unevaluated),
        prop::collection::vec(schema_with(unevaluated), 0..3),
    )
        .prop_map(|(root, defs)| {
            let n = defs.len();
            let mut defs_map = Map::new();
            for (i, mut d) in defs.into_iter().enumerate() {
                fix_refs(&mut d, Some(i), n, false);
                defs_map.insert(format!("d{i}"), d);
            }
            let mut root = match root {
                Value::Object(m) => Value::Object(m),
                b => json!({ "allOf": [b] }),
            };
            fix_refs(&mut root, None, n, false);
            if n > 0 {
                root["$defs"] = Value::Object(defs_map);
            }
            root
        })
        .boxed()
}

/// Values drawn from the shape of `s` (with `root` for `$ref`s), `depth` levels deep.
fn shaped(s: &Value, root: &Value, depth: u32) -> BoxedStrategy<Value> {
    let Value::Object(m) = s else {
        return any_value();
    };
    if depth == 0 {
        return leaf_value();
    }
    let mut options: Vec<BoxedStrategy<Value>> = vec![leaf_value()];
    if let Some(Value::String(r)) = m.get("$ref")
        && let Some(name) = r.strip_prefix("#/$defs/")
        && let Some(d) = root.get("$defs").and_then(|d| d.get(name))
    {
        options.push(shaped(d, root, depth - 1));
    }
    if let Some(Value::Array(e)) = m.get("enum") {
        options.push(select(e.clone()).boxed());
    }
    if let Some(c) = m.get("const") {
        options.push(Just(c.clone()).boxed());
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(a)) = m.get(k) {
            for x in a {
                options.push(shaped(x, root, depth - 1));
            }
        }
    }
    for k in ["not", "if", "then", "else"] {
        if let Some(x) = m.get(k) {
            options.push(shaped(x, root, depth - 1));
        }
    }
    let has = |ks: &[&str]| ks.iter().any(|k| m.contains_key(*k));
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "propertyNames",
    ]) || m.get("type") == Some(&json!("object"))
    {
        let mut names: Vec<String> = KEYS.iter().map(|k| (*k).to_owned()).collect();
        let mut subs: Vec<(String, BoxedStrategy<Value>)> = Vec::new();
        if let Some(Value::Object(ps)) = m.get("properties") {
            for (k, v) in ps {
                subs.push((k.clone(), shaped(v, root, depth - 1)));
            }
        }
        names.retain(|n| !subs.iter().any(|(k, _)| k == n));
        let extra = m
            .get("additionalProperties")
            .map_or_else(any_value, |a| shaped(a, root, depth - 1));
        for n in names {
            subs.push((n, extra.clone()));
        }
        let members: Vec<BoxedStrategy<Option<(String, Value)>>> = subs
            .into_iter()
            .map(|(k, st)| {
                prop_oneof![
                    2 => Just(None),
                    1 => st.prop_map(move |v| Some((k.clone(), v))),
                ]
                .boxed()
            })
            .collect();
        options.push(
            members
                .prop_map(|kv| Value::Object(kv.into_iter().flatten().collect()))
                .boxed(),
        );
    }
    if has(&[
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
    ]) || m.get("type") == Some(&json!("array"))
    {
        let mut item_strats: Vec<BoxedStrategy<Value>> = Vec::new();
        for k in ["items", "contains"] {
            if let Some(x) = m.get(k) {
                item_strats.push(shaped(x, root, depth - 1));
            }
        }
        if item_strats.is_empty() {
            item_strats.push(any_value());
        }
        let item = Union::new(item_strats).boxed();
        let prefix: Vec<BoxedStrategy<Value>> = match m.get("prefixItems") {
            Some(Value::Array(a)) => a.iter().map(|x| shaped(x, root, depth - 1)).collect(),
            _ => Vec::new(),
        };
        options.push(
            (prefix, prop::collection::vec(item, 0..4), 0usize..4)
                .prop_map(|(mut p, rest, keep)| {
                    p.truncate(keep);
                    if p.len() == keep {
                        p.extend(rest);
                    }
                    Value::Array(p)
                })
                .boxed(),
        );
        // Duplicates, for `uniqueItems`.
        options.push(
            leaf_value()
                .prop_map(|v| Value::Array(vec![v.clone(), v]))
                .boxed(),
        );
    }
    if has(&["minLength", "maxLength", "pattern"]) || m.get("type") == Some(&json!("string")) {
        let mut pool: Vec<String> = Vec::new();
        if let Some(Value::String(p)) = m.get("pattern")
            && let Some((_, ex)) = PATTERNS.iter().find(|(q, _)| q == p)
        {
            pool.extend(ex.iter().map(|s| (*s).to_owned()));
        }
        for k in ["minLength", "maxLength"] {
            if let Some(n) = m.get(k).and_then(Value::as_u64) {
                for len in n.saturating_sub(1)..=n + 1 {
                    pool.push("é".repeat(len as usize));
                    pool.push("a".repeat(len as usize));
                }
            }
        }
        if pool.is_empty() {
            options.push(string_value().prop_map(Value::String).boxed());
        } else {
            options.push(select(pool).prop_map(Value::String).boxed());
        }
    }
    let mut nums: Vec<Value> = Vec::new();
    for k in ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"] {
        if let Some(b) = m.get(k).and_then(Value::as_f64) {
            for d in [-1.0, -0.5, 0.0, 0.5, 1.0] {
                let x = b + d;
                nums.push(if x.fract() == 0.0 {
                    json!(x as i64)
                } else {
                    json!(x)
                });
            }
        }
    }
    if let Some(x) = m.get("multipleOf").and_then(Value::as_f64) {
        for k in [-2.0, 0.0, 1.0, 3.0] {
            nums.push(json!(k * x));
        }
    }
    if !nums.is_empty() {
        options.push(select(nums).boxed());
    }
    Union::new(options).boxed()
}

/// A schema and values to try it on.
///
/// Objects come out with their keys in sorted order, schema and values alike: whether a
/// `serde_json::Map` keeps insertion order depends on the features other crates of the build
/// turn on, and the sample (values are drawn by walking the schema's keys) must not.
fn case() -> impl Strategy<Value = (Value, Vec<Value>)> {
    case_with(false)
}

/// [`case`] from [`root_schema_with`].
fn case_with(unevaluated: bool) -> impl Strategy<Value = (Value, Vec<Value>)> {
    root_schema_with(unevaluated)
        .prop_map(sorted)
        .prop_flat_map(|s| {
            let near = shaped(&s, &s, 4);
            let value = prop_oneof![3 => near, 1 => any_value()].prop_map(sorted);
            (Just(s), prop::collection::vec(value, 1..8))
        })
}

/// A schema of objects, arrays and primitives without combinators or references: where
/// `PropertyOrder::Schema` defines the order of every object (see [`in_schema_order`]).
fn plain_schema() -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        1 => Just(json!(true)),
        1 => Just(json!({})),
        3 => type_schema(),
        2 => string_schema(),
        2 => number_schema(),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            3 => object_schema(inner.clone()),
            1 => array_schema(inner),
        ]
    })
    .boxed()
}

/// A plain object schema (its `properties` reversed, see [`reversed_properties`]) and values
/// of its shape, members sorted.
fn plain_case() -> impl Strategy<Value = (Value, Vec<Value>)> {
    let inner = plain_schema();
    let additional = prop_oneof![Just(json!(false)), Just(json!(true)), inner.clone()];
    (
        prop::collection::btree_map(key(), inner, 2..5),
        prop::collection::btree_set(key(), 0..3),
        prop::option::of(additional),
        prop::option::of(0u64..4),
    )
        .prop_map(|(props, required, additional, min)| {
            let mut m = Map::new();
            m.insert("type".into(), json!("object"));
            m.insert(
                "properties".into(),
                Value::Object(props.into_iter().collect()),
            );
            m.insert("required".into(), json!(required));
            if let Some(a) = additional {
                m.insert("additionalProperties".into(), a);
            }
            if let Some(n) = min {
                m.insert("minProperties".into(), json!(n));
            }
            Value::Object(m)
        })
        .prop_map(|s| reversed_properties(&sorted(s)))
        .prop_flat_map(|s| {
            let value = filled(&s, 3).prop_map(sorted);
            (Just(s), prop::collection::vec(value, 1..8))
        })
}

/// Values that a plain schema `s` often accepts: objects with its required properties, some
/// of the others and some keys outside them (where allowed); [`shaped`] values elsewhere.
fn filled(s: &Value, depth: u32) -> BoxedStrategy<Value> {
    let Some(m) = s.as_object() else {
        return shaped(s, s, depth);
    };
    let object = m.get("type") == Some(&json!("object"))
        || [
            "properties",
            "required",
            "additionalProperties",
            "minProperties",
        ]
        .iter()
        .any(|k| m.contains_key(*k));
    if !object || depth == 0 {
        return shaped(s, s, depth);
    }
    let required: Vec<&str> = m
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props = m.get("properties").and_then(Value::as_object);
    let mut members: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    for (name, sub) in props.into_iter().flatten() {
        let name = name.clone();
        let value = filled(sub, depth - 1);
        members.push(if required.contains(&name.as_str()) {
            value.prop_map(move |v| Some((name.clone(), v))).boxed()
        } else {
            prop_oneof![Just(None), value.prop_map(move |v| Some((name.clone(), v)))].boxed()
        });
    }
    let additional = m.get("additionalProperties");
    if additional != Some(&json!(false)) {
        let extra = additional.map_or_else(any_value, |a| filled(a, depth - 1));
        for name in KEYS
            .iter()
            .filter(|k| props.is_none_or(|p| !p.contains_key(**k)))
        {
            let name = (*name).to_owned();
            let value = extra.clone();
            members.push(if required.contains(&name.as_str()) {
                value.prop_map(move |v| Some((name.clone(), v))).boxed()
            } else {
                prop_oneof![
                    3 => Just(None),
                    1 => value.prop_map(move |v| Some((name.clone(), v))),
                ]
                .boxed()
            });
        }
    }
    members
        .prop_map(|kv| Value::Object(kv.into_iter().flatten().collect()))
        .boxed()
}

/// `v` with every object's keys in sorted order, whatever order the map type keeps.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// Our verdict on `text`.
fn ours(m: &mut Matcher, text: &str) -> bool {
    support::suite::accepts(m, text).is_ok()
}

/// Pops the last `k` bytes of `text` after pushing it, pushes them again: same verdict.
fn ours_after_pop(m: &mut Matcher, text: &str, k: usize) -> bool {
    m.reset();
    let b = text.as_bytes();
    if m.push_bytes(b).is_err() {
        return false;
    }
    let k = k.min(b.len());
    m.pop_bytes(k);
    m.push_bytes(&b[b.len() - k..]).is_ok() && m.is_accepting()
}

/// Bytes tried, in this order, when searching for a completion: closers first, then what starts
/// or continues values, then string content (ASCII, then the bytes of `é` and `😀`).
const COMPLETION_BYTES: &[u8] =
    b"\"}],:0123456789-.eE+tfnrulas[{bcdxyz \\/u\xc3\xa9\xf0\x9f\x98\x80";

/// The longest prefix of `text` that we accept, and whether it can still be completed: the
/// matcher's own quick completion first, then an exhaustive search.
fn longest_prefix_completes(m: &mut Matcher, text: &str) -> (usize, Search) {
    m.reset();
    let mut n = 0;
    for &b in text.as_bytes() {
        if !m.try_push_byte(b) {
            break;
        }
        n += 1;
    }
    if m.completion(256).is_some() {
        return (n, Search::Found);
    }
    let mut budget = 20_000;
    (
        n,
        search(m, COMPLETION_BYTES, 64, &mut budget, &mut HashSet::new()),
    )
}

fn options() -> Options {
    Options::validation().format(FormatMode::Annotate)
}

/// `schema` compiled, or `None` where not compiling it is no disagreement (the share of such
/// schemas is checked by `most_generated_schemas_compile`).
fn compiled(schema: &Value, options: &Options) -> Option<Arc<Grammar>> {
    match Grammar::compile(schema, options) {
        Ok(g) => Some(Arc::new(g)),
        Err(
            CompileError::Unsupported { .. }
            | CompileError::Limit { .. }
            | CompileError::Unsatisfiable { .. },
        ) => None,
        // Known: see `empty_length_range_under_a_combinator_compiles`.
        Err(CompileError::Invalid { reason, .. }) if reason == "error building NFA" => None,
        Err(e) => panic!("{schema}: {e}"),
    }
}

fn reference(schema: &Value) -> jsonschema::Validator {
    jsonschema::draft202012::options()
        .should_validate_formats(false)
        .build(schema)
        .unwrap_or_else(|e| panic!("the reference rejects the schema {schema}: {e}"))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 400,
        failure_persistence: None,
        max_global_rejects: 4000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn verdicts_match_the_reference((schema, values) in case(), pop in 1usize..6) {
        check_against_reference(&schema, &values, pop)?;
    }

    #[test]
    fn unevaluated_verdicts_match_the_reference(
        (schema, values) in case_with(true),
        pop in 1usize..6,
    ) {
        check_against_reference(&schema, &values, pop)?;
    }
}

/// The verdicts of the automaton on `values` (compact, pretty, and compact after popping
/// `pop` bytes and pushing them again) against the reference's.
fn check_against_reference(
    schema: &Value,
    values: &[Value],
    pop: usize,
) -> Result<(), TestCaseError> {
    let reference = reference(schema);
    if let Err(e) = Grammar::compile(schema, &options())
        && e.is_unsatisfiable()
    {
        for v in values {
            prop_assert!(
                !reference.is_valid(v),
                "{} is valid under {}, refused: {}",
                v,
                schema,
                e
            );
        }
        return Ok(());
    }
    let grammar = compiled(schema, &options());
    prop_assume!(grammar.is_some());
    let mut m = Matcher::new(grammar.unwrap());
    for v in values {
        let expected = reference.is_valid(v);
        let compact = serde_json::to_string(v).unwrap();
        let pretty = serde_json::to_string_pretty(v).unwrap();
        prop_assert_eq!(
            ours(&mut m, &compact),
            expected,
            "compact {} under {}",
            compact,
            schema
        );
        prop_assert_eq!(
            ours(&mut m, &pretty),
            expected,
            "pretty {} under {}",
            pretty,
            schema
        );
        prop_assert_eq!(
            ours_after_pop(&mut m, &compact, pop),
            expected,
            "{} after popping {} bytes, under {}",
            compact,
            pop,
            schema
        );
    }
    Ok(())
}

/// `text` with the whitespace byte `ws` inserted at the `at`-th position outside strings (or,
/// when `remove` and that position holds whitespace, that byte removed): another spelling of
/// the same value, or no JSON at all.
fn respace(text: &str, at: prop::sample::Index, ws: u8, remove: bool) -> String {
    let mut outside = Vec::new();
    let (mut in_str, mut esc) = (false, false);
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if !in_str {
            outside.push(i);
        }
        match b {
            _ if esc => esc = false,
            b'\\' if in_str => esc = true,
            b'"' => in_str = !in_str,
            _ => {}
        }
    }
    outside.push(text.len());
    let i = *at.get(&outside);
    let mut b = text.as_bytes().to_vec();
    if remove && b.get(i).is_some_and(u8::is_ascii_whitespace) {
        b.remove(i);
    } else {
        b.insert(i, ws);
    }
    String::from_utf8(b).expect("whitespace between characters")
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        failure_persistence: None,
        max_global_rejects: 4000,
        ..ProptestConfig::default()
    })]

    /// Under `Pretty` a value is accepted in exactly the spelling of
    /// `serde_json::to_string_pretty`, under `Compact` in exactly that of `to_string`: the
    /// verdict on those equals the reference's, and every other spelling (whitespace added or
    /// removed outside strings, the other policy's spelling) is refused. A completion cut
    /// anywhere in a pretty text is pretty too.
    #[test]
    fn whitespace_policies_fix_the_spelling(
        (schema, values) in case(),
        at in any::<prop::sample::Index>(),
        ws in select(&b" \n\t\r"[..]),
        remove in any::<bool>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let compile = |ws: Whitespace| compiled(&schema, &options().whitespace(ws));
        let (Some(pretty_g), Some(compact_g)) = (compile(Whitespace::Pretty), compile(Whitespace::Compact)) else {
            return Err(TestCaseError::reject("not compiled"));
        };
        let reference = reference(&schema);
        let mut pretty_m = Matcher::new(pretty_g);
        let mut compact_m = Matcher::new(compact_g);
        for v in &values {
            let expected = reference.is_valid(v);
            let compact = serde_json::to_string(v).unwrap();
            let pretty = serde_json::to_string_pretty(v).unwrap();
            prop_assert_eq!(ours(&mut pretty_m, &pretty), expected, "pretty {} under {}", pretty, schema);
            prop_assert_eq!(ours(&mut compact_m, &compact), expected, "compact {} under {}", compact, schema);
            if compact != pretty {
                prop_assert!(!ours(&mut pretty_m, &compact), "compact {} under pretty, {}", compact, schema);
                prop_assert!(!ours(&mut compact_m, &pretty), "pretty {} under compact, {}", pretty, schema);
            }
            let other = respace(&pretty, at, ws, remove);
            prop_assert!(!ours(&mut pretty_m, &other), "{:?} under pretty, {}", other, schema);
            let other = respace(&compact, at, ws, remove);
            prop_assert!(!ours(&mut compact_m, &other), "{:?} under compact, {}", other, schema);
            if expected {
                let n = cut.index(pretty.len() + 1);
                if !pretty.is_char_boundary(n) {
                    continue;
                }
                let head = &pretty[..n];
                pretty_m.reset();
                prop_assert!(pretty_m.push_bytes(head.as_bytes()).is_ok());
                if let Some(tail) = pretty_m.completion(256) {
                    let whole = format!("{head}{}", String::from_utf8(tail).unwrap());
                    prop_assert!(ours(&mut pretty_m, &whole), "{:?} under {}", whole, schema);
                    prop_assert_eq!(&whole, &json_text::pretty(&whole, 2), "completed after {:?}", head);
                }
            }
        }
    }
}

/// Most generated schemas compile: the property above is not vacuous.
#[test]
fn most_generated_schemas_compile() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = root_schema();
    let (mut ok, mut unsupported) = (0, Vec::new());
    for _ in 0..300 {
        let s = strategy.new_tree(&mut runner).unwrap().current();
        match Grammar::compile(&s, &options()) {
            Ok(_) => ok += 1,
            Err(e) => unsupported.push(format!("{e}\n    in {s}")),
        }
    }
    println!("{ok} of 300 compiled");
    for e in unsupported.iter().take(20) {
        println!("  {e}");
    }
    assert!(ok >= 240, "only {ok} of 300 compiled: {unsupported:#?}");
}

/// `minLength` above `maxLength` makes the string part empty; under `not` or `anyOf` the empty
/// length range must still compile (to the empty language).
#[test]
fn empty_length_range_under_a_combinator_compiles() {
    for schema in [
        json!({ "not": { "minLength": 2, "maxLength": 1 } }),
        json!({ "anyOf": [{ "type": "string", "minLength": 2, "maxLength": 0 }, { "type": "string" }] }),
    ] {
        let g = Grammar::compile(&schema, &options()).unwrap_or_else(|e| panic!("{schema}: {e}"));
        let mut m = Matcher::new(Arc::new(g));
        assert!(ours(&mut m, r#""ab""#), "{schema} accepts \"ab\"");
    }
}

/// Dead ends: where we stop accepting a value's text, what we accepted must still be able to
/// become a valid document. Counted over a fixed sample of generated schemas and values (the
/// same every run) against a ratchet: known gaps remain where an empty part of a schema is
/// not detected, so a dead end is refused one step late (a property whose value no JSON value
/// satisfies, refused at the value's first byte; a string whose length bounds and pattern
/// exclude each other; an array that `contains` with an unsatisfiable subschema rules out; a
/// key whose only completions are keys the object already has, refused at its closing quote).
/// The count may go down, never up.
#[test]
fn dead_ends_are_rare() {
    dead_ends_at_most(&options(), DEAD_END_BASELINE);
}

/// [`dead_ends_are_rare`] with members held to the schema's order (every `properties`
/// reversed, so that the generated values are mostly out of it).
#[test]
fn dead_ends_are_rare_in_schema_order() {
    dead_ends_at_most(
        &options().property_order(PropertyOrder::Schema),
        DEAD_END_BASELINE_SCHEMA_ORDER,
    );
}

fn dead_ends_at_most(options: &Options, known: usize) {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    const CASES: usize = 400;
    let ordered = options.property_order == PropertyOrder::Schema;
    let mut runner = TestRunner::deterministic();
    let strategy = case();
    let (mut checked, mut found) = (0, Vec::new());
    for _ in 0..CASES {
        let (schema, values) = strategy.new_tree(&mut runner).unwrap().current();
        let schema = if ordered {
            reversed_properties(&schema)
        } else {
            schema
        };
        let Ok(g) = Grammar::compile(&schema, options) else {
            continue;
        };
        let mut m = Matcher::new(Arc::new(g));
        if longest_prefix_completes(&mut m, "").1 == Search::NoneExists {
            continue; // no document is valid
        }
        for v in &values {
            let compact = serde_json::to_string(v).unwrap();
            let (n, search) = longest_prefix_completes(&mut m, &compact);
            checked += 1;
            if search == Search::NoneExists {
                found.push(format!("{:?} under {schema}", &compact[..n]));
            }
        }
    }
    println!("{} dead ends in {checked} values:", found.len());
    for d in &found {
        println!("  {d}");
    }
    assert!(checked > CASES, "only {checked} values checked");
    assert!(
        found.len() <= known,
        "{} dead ends, more than the {known} known: {found:#?}",
        found.len()
    );
}

/// Dead ends [`dead_ends_are_rare`] finds in its sample today (25 before schemas were read
/// with their keys in document order; 51 before slot viability
/// consulted the frame formula and literals were ended on trial; 19 before numbers whose
/// bounds exclude each other, and `not` of every number, got the empty language: six member or
/// item values that no number satisfies were dead ends already, refused one step late, but the
/// search gave up inside the endless digits then accepted, and now finds the dead end at the
/// value's first byte). 21 before `patternProperties` with leading lookaheads compiled: the
/// schemas of the sample that use them (88 more values checked) add four dead ends of a known
/// class, a property whose value nothing satisfies (an array whose first item is `false`, a
/// `date` string of at most 5 characters). 2 since what no value can fill is worked out at
/// compile time (keys whose value nothing meets are refused at their closing quote, arrays
/// end before items nothing fills, objects that need a key `propertyNames` refuses, or more
/// keys than can be written, are impossible): the two left are of one known class, a key
/// whose only completions are keys the object already has (`{"b":{},"b`).
const DEAD_END_BASELINE: usize = 2;

/// Dead ends [`dead_ends_are_rare_in_schema_order`] finds in its sample today: those of any
/// order, found at another byte where the order changes the way to them, and one more of a
/// known class (after `{"ba":null,` only a property whose value nothing satisfies is left).
/// 21 before `patternProperties` with leading lookaheads compiled (see above): eight more of
/// the same known classes, among them an object whose required key `propertyNames` excludes,
/// refused at its `{` rather than before it. 2 since what no value can fill is worked out at
/// compile time (see above): the same two.
const DEAD_END_BASELINE_SCHEMA_ORDER: usize = 2;

/// `s` with the entries of every `properties` in reverse order: the generated schemas and
/// values list their keys sorted, and the order a schema asks for should differ.
fn reversed_properties(s: &Value) -> Value {
    match s {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::Object(props) if k == "properties" => Value::Object(
                            props
                                .iter()
                                .rev()
                                .map(|(name, sub)| (name.clone(), reversed_properties(sub)))
                                .collect(),
                        ),
                        _ => reversed_properties(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(reversed_properties).collect()),
        other => other.clone(),
    }
}

/// `v` with the members of each object in the order `PropertyOrder::Schema` holds plain
/// object schemas to: those named in `properties` in the order listed there, then the others
/// as they were. `None` where an object or array of `v` meets a keyword under which no single
/// listing is the order (combinators, references, `patternProperties`, `contains`, object
/// `enum`s), so that what the order there is stays out of this test.
fn in_schema_order(s: &Value, v: &Value) -> Option<Value> {
    const NOT_PLAIN: &[&str] = &[
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "$ref",
        "dependentSchemas",
        "enum",
        "const",
        "patternProperties",
        "contains",
    ];
    let plain = |s: &Value| match s {
        Value::Object(m) => !NOT_PLAIN.iter().any(|k| m.contains_key(*k)),
        _ => true,
    };
    let sub = |s: &Value, key: &str| s.get(key).cloned().unwrap_or(Value::Bool(true));
    match v {
        Value::Object(members) => {
            if !plain(s) {
                return None;
            }
            let props = s.get("properties").and_then(Value::as_object);
            let mut out = serde_json::Map::new();
            for (name, schema) in props.into_iter().flatten() {
                if let Some(x) = members.get(name) {
                    out.insert(name.clone(), in_schema_order(schema, x)?);
                }
            }
            let additional = sub(s, "additionalProperties");
            for (name, x) in members {
                if props.is_none_or(|p| !p.contains_key(name)) {
                    out.insert(name.clone(), in_schema_order(&additional, x)?);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => {
            if !plain(s) {
                return None;
            }
            let prefix = s.get("prefixItems").and_then(Value::as_array);
            let rest = sub(s, "items");
            let mut out = Vec::new();
            for (i, x) in items.iter().enumerate() {
                let schema = prefix.and_then(|p| p.get(i)).unwrap_or(&rest);
                out.push(in_schema_order(schema, x)?);
            }
            Some(Value::Array(out))
        }
        other => Some(other.clone()),
    }
}

/// [`schema_order_narrows_and_keeps_ordered_documents`] is not vacuous: in a fixed sample,
/// many valid values are out of their schema's order and are checked once put in it.
#[test]
fn schema_order_checks_are_not_vacuous() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = plain_case();
    let (mut reordered, mut refused_as_they_were) = (0, 0);
    for _ in 0..1000 {
        let (schema, values) = strategy.new_tree(&mut runner).unwrap().current();
        let in_order = options().property_order(PropertyOrder::Schema);
        let Some(g) = compiled(&schema, &in_order) else {
            continue;
        };
        let mut m = Matcher::new(g);
        let reference = reference(&schema);
        for v in values.iter().filter(|v| reference.is_valid(v)) {
            let Some(o) = in_schema_order(&schema, v) else {
                continue;
            };
            let (text, was) = (
                serde_json::to_string(&o).unwrap(),
                serde_json::to_string(v).unwrap(),
            );
            if text != was {
                reordered += 1;
                refused_as_they_were += usize::from(!ours(&mut m, &was));
            }
        }
    }
    println!("{reordered} valid values reordered, {refused_as_they_were} refused as they were");
    assert!(reordered >= 80, "only {reordered} values reordered");
    assert!(
        refused_as_they_were >= 80,
        "only {refused_as_they_were} refused"
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 600,
        failure_persistence: None,
        max_global_rejects: 4000,
        ..ProptestConfig::default()
    })]

    /// Under `PropertyOrder::Schema` the matcher accepts only documents the reference accepts
    /// (and that any order accepts), and accepts every valid document once its members are
    /// put in the schema's order.
    #[test]
    fn schema_order_narrows_and_keeps_ordered_documents(
        (schema, values) in prop_oneof![
            case().prop_map(|(s, v)| (reversed_properties(&s), v)),
            plain_case(),
        ]
    ) {
        let reference = reference(&schema);
        let in_order = options().property_order(PropertyOrder::Schema);
        let any_order = compiled(&schema, &options());
        let schema_order = compiled(&schema, &in_order);
        prop_assume!(any_order.is_some() && schema_order.is_some());
        let mut any_m = Matcher::new(any_order.unwrap());
        let mut m = Matcher::new(schema_order.unwrap());
        for v in &values {
            let valid = reference.is_valid(v);
            let compact = serde_json::to_string(v).unwrap();
            if ours(&mut m, &compact) {
                prop_assert!(valid, "{} is invalid under {}, accepted", compact, schema);
                prop_assert!(ours(&mut any_m, &compact), "{} only in order under {}", compact, schema);
            }
            if valid && let Some(o) = in_schema_order(&schema, v) {
                let text = serde_json::to_string(&o).unwrap();
                prop_assert!(ours(&mut m, &text), "{} in order is refused under {}", text, schema);
                let pretty = serde_json::to_string_pretty(&o).unwrap();
                prop_assert!(ours(&mut m, &pretty), "{} in order is refused under {}", pretty, schema);
            }
        }
    }
}

/// The canonical spelling of a number value: plain notation, no sign on zero, no trailing zero
/// in a fraction (`3`, `-0.25`), as `(negative, digits, exponent)` with value
/// `digits × 10^exponent` and `digits` free of leading and trailing zeros (`"0"` for zero).
fn decimal_parts(n: &serde_json::Number) -> (bool, String, i64) {
    let text = match n.as_f64() {
        Some(f) if n.is_f64() => format!("{f:e}"),
        _ => format!("{n}e0"),
    };
    let (mantissa, exp) = text.split_once('e').expect("scientific notation");
    let mut exp: i64 = exp.parse().expect("an exponent");
    let neg = mantissa.starts_with('-');
    let mantissa = mantissa.trim_start_matches('-');
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    exp -= frac.len() as i64;
    let mut digits = format!("{int}{frac}").trim_start_matches('0').to_string();
    while digits.ends_with('0') {
        digits.pop();
        exp += 1;
    }
    if digits.is_empty() {
        return (false, "0".into(), 0);
    }
    (neg, digits, exp)
}

/// `digits × 10^exp` in plain notation (with a fraction part only where needed).
fn plain(digits: &str, exp: i64) -> String {
    if exp >= 0 {
        let zeros = if digits == "0" { 0 } else { exp as usize };
        return format!("{digits}{}", "0".repeat(zeros));
    }
    let k = (-exp) as usize;
    let padded = format!(
        "{}{digits}",
        "0".repeat((k + 1).saturating_sub(digits.len()))
    );
    let (int, frac) = padded.split_at(padded.len() - k);
    format!("{int}.{frac}")
}

/// Spellings of a number: 0 is canonical, the others are the same value written as JSON also
/// allows (a trailing zero, an exponent, the point moved either way, `-0` for zero).
const SPELLINGS: usize = 6;

fn spell_number(n: &serde_json::Number, how: usize) -> String {
    let (neg, digits, exp) = decimal_parts(n);
    let sign = if neg { "-" } else { "" };
    let canonical = plain(&digits, exp);
    let len = digits.len() as i64;
    let body = match how {
        0 => canonical,
        1 if canonical.contains('.') => format!("{canonical}0"),
        1 => format!("{canonical}.0"),
        2 => format!("{canonical}e0"),
        // One more digit in the mantissa than the value needs: `30e-1`, `2.5e-1`.
        3 => format!("{}e-1", plain(&digits, exp + 1)),
        // The point before the first digit: `0.3E1`, `0.25E0`.
        4 => format!("{}E{:+}", plain(&digits, -len), exp + len),
        _ if digits == "0" => "-0".into(),
        _ => format!("{}e{}", plain(&digits, exp - 2), 2),
    };
    format!("{sign}{body}")
}

/// Compact JSON text of `v` with every number spelled the `how`-th way.
fn spelled(v: &Value, how: usize) -> String {
    match v {
        Value::Number(n) => spell_number(n, how),
        Value::Array(a) => {
            let items: Vec<String> = a.iter().map(|x| spelled(x, how)).collect();
            format!("[{}]", items.join(","))
        }
        Value::Object(m) => {
            let members: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{}:{}", Value::String(k.clone()), spelled(x, how)))
                .collect();
            format!("{{{}}}", members.join(","))
        }
        other => other.to_string(),
    }
}

#[test]
fn numbers_are_respelled_as_the_same_value() {
    let n = |t: &str| serde_json::from_str::<Value>(t).unwrap();
    let cases: &[(&str, [&str; SPELLINGS])] = &[
        ("3", ["3", "3.0", "3e0", "30e-1", "0.3E+1", "0.03e2"]),
        (
            "-2.75",
            [
                "-2.75",
                "-2.750",
                "-2.75e0",
                "-27.5e-1",
                "-0.275E+1",
                "-0.0275e2",
            ],
        ),
        (
            "0.25",
            ["0.25", "0.250", "0.25e0", "2.5e-1", "0.25E+0", "0.0025e2"],
        ),
        ("0", ["0", "0.0", "0e0", "0e-1", "0.0E+1", "-0"]),
        (
            "-12",
            ["-12", "-12.0", "-12e0", "-120e-1", "-0.12E+2", "-0.12e2"],
        ),
        ("3.0", ["3", "3.0", "3e0", "30e-1", "0.3E+1", "0.03e2"]),
    ];
    for (text, want) in cases {
        let v = n(text);
        for (how, w) in want.iter().enumerate() {
            let s = spelled(&v, how);
            assert_eq!(&s, w, "{text}, spelling {how}");
            let back = n(&s);
            assert_eq!(
                decimal_parts(back.as_number().unwrap()),
                decimal_parts(v.as_number().unwrap()),
                "{s} is {text}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 300,
        failure_persistence: None,
        max_global_rejects: 4000,
        ..ProptestConfig::default()
    })]

    /// Generation options against the reference, on every spelling of each value: the
    /// canonical spelling (plain notation, no trailing zero, no `-0`) is accepted exactly when
    /// the value is valid, and no other spelling of an invalid value is accepted (the notation
    /// policy narrows what is written, never what a `not` or `oneOf` lets through). Validation
    /// options accept each spelling exactly when the value is valid.
    #[test]
    fn generation_never_widens_the_reference((schema, values) in case()) {
        let generation = Options::generation().format(FormatMode::Annotate);
        let reference = reference(&schema);
        let gen_g = match Grammar::compile(&schema, &generation) {
            Ok(g) => Arc::new(g),
            Err(e) if e.is_unsatisfiable() => {
                for v in &values {
                    prop_assert!(!reference.is_valid(v), "{} is valid under {}, refused: {}", v, schema, e);
                }
                return Ok(());
            }
            Err(_) => return Err(TestCaseError::reject("not compiled")),
        };
        let mut gen_m = Matcher::new(gen_g);
        let mut val_m = compiled(&schema, &options()).map(Matcher::new);
        for v in &values {
            let expected = reference.is_valid(v);
            for how in 0..SPELLINGS {
                let text = spelled(v, how);
                let accepted = ours(&mut gen_m, &text);
                if how == 0 {
                    prop_assert_eq!(accepted, expected, "generation, {} under {}", text, schema);
                } else {
                    prop_assert!(!accepted || expected, "generation accepts {} under {}", text, schema);
                }
                if let Some(m) = &mut val_m {
                    prop_assert_eq!(ours(m, &text), expected, "validation, {} under {}", text, schema);
                }
            }
        }
    }
}
