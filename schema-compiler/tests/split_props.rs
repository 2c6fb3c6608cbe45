//! What [`Matcher::split`] claims inside a string is what the matcher does byte by byte.
//!
//! The mask kernel trusts a [`Split::StringContent`] answer without walking the
//! vocabulary: every token spelled in the level is allowed exactly when it is content of at
//! most `budget` code points. So at every point inside a string of every instance, each content
//! of the level (drawn from pieces of the schema's own strings, so that they continue and
//! overrun its alternatives) must be accepted by the matcher exactly when it fits the budget.
//!
//! The schemas are `anyOf`/`oneOf` of objects whose property values are strings sharing
//! prefixes (`"ab"` against `"abXYZ"`, `"Feature"` against `"FeatureCollection"`), as `const`,
//! `enum`, `pattern` or `maxLength`: where one alternative's string has ended and another's
//! goes on, content that continues the longer one is allowed while other content is not, so no
//! budget can describe it. The byte-level verdict on each whole instance is also compared with
//! the `jsonschema` crate.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::sample::select;
use recognizer::{Split, content_level_allows};
use schema_compiler::{Grammar, Matcher, Options};
use serde_json::{Value, json};

/// Strings that share prefixes and end at different points.
const WORDS: &[&str] = &[
    "",
    "a",
    "ab",
    "abc",
    "abX",
    "abXYZ",
    "abXYZW",
    "Feature",
    "FeatureCollection",
    "Fe",
    "b",
];

/// A string schema built from the words.
fn string_schema() -> BoxedStrategy<Value> {
    let word = || select(WORDS).prop_map(|w| w.to_string());
    prop_oneof![
        3 => word().prop_map(|w| json!({"const": w})),
        2 => prop::collection::vec(word(), 1..4).prop_map(|ws| json!({"enum": ws})),
        1 => word().prop_map(|w| json!({"type": "string", "pattern": format!("^{w}[A-Z]*$")})),
        1 => (0u64..6).prop_map(|n| json!({"type": "string", "maxLength": n})),
        1 => (word(), 0u64..8).prop_map(|(w, n)| json!({"type": "string", "maxLength": n, "pattern": format!("^{w}")})),
    ]
    .boxed()
}

/// An object alternative: a required property `t` (and sometimes `u`) with a string schema.
fn alternative() -> BoxedStrategy<Value> {
    (string_schema(), any::<bool>(), any::<bool>())
        .prop_map(|(t, closed, with_u)| {
            let mut props = serde_json::Map::new();
            props.insert("t".into(), t);
            if with_u {
                props.insert("u".into(), json!({"type": "integer"}));
            }
            let mut s = json!({"type": "object", "required": ["t"], "properties": props});
            if closed {
                s["additionalProperties"] = json!(false);
            }
            s
        })
        .boxed()
}

fn schema() -> BoxedStrategy<Value> {
    (
        prop::collection::vec(alternative(), 2..4),
        select(&["anyOf", "oneOf"][..]),
        any::<bool>(),
    )
        .prop_map(|(alts, comb, nested)| {
            let s = json!({ comb: alts });
            if nested {
                // The same choice one level down, as a property of an object and an item.
                json!({"type": "object", "properties": {"v": {"type": "array", "items": s}}})
            } else {
                s
            }
        })
        .boxed()
}

/// The instance texts: `{"t":w}` for each word, wrapped like the schema.
fn texts(schema: &Value) -> Vec<String> {
    let nested = schema.get("properties").is_some();
    WORDS
        .iter()
        .flat_map(|w| {
            let one = json!({"t": w});
            let two = json!({"t": w, "u": 1});
            [one, two]
        })
        .map(|v| {
            if nested {
                json!({"v": [v]}).to_string()
            } else {
                v.to_string()
            }
        })
        .collect()
}

/// Every piece of every word: what may continue a string at any point of it.
fn contents() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in WORDS {
        let cs: Vec<char> = w.chars().collect();
        for i in 0..cs.len() {
            for j in i + 1..=cs.len() {
                out.push(cs[i..j].iter().collect());
            }
        }
    }
    out.extend(["Q", "QQQQQQQ", "é", "a b", "0"].map(str::to_string));
    out.sort();
    out.dedup();
    out
}

/// Checks the split claim at the matcher's current state; `Err` describes a broken claim.
fn check_split(m: &mut Matcher, contents: &[String]) -> Result<(), String> {
    let mut key = Vec::new();
    let Some(Split::StringContent { budget, level, .. }) = m.split(&mut key) else {
        return Ok(());
    };
    for c in contents {
        if !c.chars().all(|ch| content_level_allows(level, ch)) {
            continue;
        }
        let n = c.chars().count() as u32;
        let claimed = budget.is_none_or(|b| n <= b);
        let before = m.len();
        let actual = m.push_bytes(c.as_bytes()).is_ok();
        m.pop_bytes(m.len() - before);
        if claimed != actual {
            return Err(format!(
                "split says level {level}, budget {budget:?}: {c:?} {} but the matcher {} it",
                if claimed { "is allowed" } else { "is refused" },
                if actual { "accepts" } else { "refuses" },
            ));
        }
    }
    Ok(())
}

/// Walks `text`, checking the split claim at every byte inside a string; returns the verdict.
fn walk(g: &Arc<Grammar>, text: &str, contents: &[String]) -> Result<bool, String> {
    let mut m = Matcher::new(g.clone());
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if m.in_string() {
            check_split(&mut m, contents).map_err(|e| format!("after {:?}: {e}", &text[..i]))?;
        }
        if !m.try_push_byte(b) {
            return Ok(false);
        }
    }
    Ok(m.is_accepting())
}

fn check_schema(schema: &Value) -> Result<(), TestCaseError> {
    let reference = jsonschema::draft202012::options()
        .build(schema)
        .map_err(|e| TestCaseError::fail(format!("the reference rejects {schema}: {e}")))?;
    let contents = contents();
    for options in [Options::validation(), Options::generation()] {
        let g = match Grammar::compile(schema, &options) {
            Ok(g) => Arc::new(g),
            Err(e) if e.is_unsatisfiable() => continue,
            Err(e) => return Err(TestCaseError::fail(format!("{schema}: {e}"))),
        };
        for text in texts(schema) {
            let value: Value = serde_json::from_str(&text).expect("test texts are JSON");
            let ours = walk(&g, &text, &contents)
                .map_err(|e| TestCaseError::fail(format!("{e}\n  in {text} under {schema}")))?;
            prop_assert_eq!(
                ours,
                reference.is_valid(&value),
                "{} under {}",
                text,
                schema
            );
        }
    }
    Ok(())
}

/// The issue's own schemas, fixed.
#[test]
fn prefix_sharing_alternatives_are_split_exactly() {
    let ab = |comb: &str, a: Value, b: Value| {
        json!({ comb: [
            {"type": "object", "required": ["t"], "properties": {"t": a}},
            {"type": "object", "required": ["t"], "properties": {"t": b}}
        ]})
    };
    for comb in ["anyOf", "oneOf"] {
        for schema in [
            ab(comb, json!({"const": "ab"}), json!({"const": "abXYZ"})),
            ab(comb, json!({"enum": ["ab"]}), json!({"enum": ["abXYZ"]})),
            ab(
                comb,
                json!({"const": "Feature"}),
                json!({"const": "FeatureCollection"}),
            ),
            ab(
                comb,
                json!({"pattern": "^$"}),
                json!({"pattern": "^ab[A-Z]{3}$"}),
            ),
        ] {
            check_schema(&schema).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

/// After `{"t":"ab` with `"ab"` and `"abXYZ"` allowed, `XYZ` goes on; the split must not
/// claim that no content fits.
#[test]
fn the_issue_repro_accepts_the_longer_value() {
    let schema = json!({"anyOf": [
        {"type": "object", "required": ["t"], "properties": {"t": {"const": "ab"}}},
        {"type": "object", "required": ["t"], "properties": {"t": {"const": "abXYZ"}}}
    ]});
    let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
    let mut m = Matcher::new(g);
    m.push_bytes(br#"{"t":"ab"#).unwrap();
    let mut key = Vec::new();
    let split = m.split(&mut key);
    assert!(
        !matches!(
            split,
            Some(Split::StringContent {
                budget: Some(0),
                ..
            })
        ),
        "{split:?} refuses every content, but XYZ continues the second value"
    );
    assert!(m.push_bytes(br#"XYZ"}"#).is_ok() && m.is_accepting());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn split_claims_hold_for_prefix_sharing_alternatives(schema in schema()) {
        check_schema(&schema)?;
    }
}
