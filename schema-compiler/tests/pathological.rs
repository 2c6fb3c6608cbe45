//! Pathological schemas: each compiles within the limits or fails with an error that names
//! the problem; none hangs (a watchdog bounds every compile) or panics.

use std::sync::mpsc;
use std::time::Duration;

use schema_compiler::{Compiler, Matcher, Options};
use serde_json::{Value, json};

/// Compiles on a thread with a large stack and a deadline; `Ok(accepts(sample))` or the error
/// text.
fn compile(schema: Value, sample: &str) -> Result<bool, String> {
    let (tx, rx) = mpsc::channel();
    let sample = sample.to_owned();
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let r = Compiler::new(Options::generation())
                .compile(&schema)
                .map(|g| {
                    let mut m = Matcher::new(std::sync::Arc::new(g));
                    m.push_bytes(sample.as_bytes()).is_ok() && m.is_accepting()
                })
                .map_err(|e| e.to_string());
            let _ = tx.send(r);
        })
        .expect("spawning the compile thread");
    rx.recv_timeout(Duration::from_secs(120))
        .expect("compiling took more than 120 s (or panicked)")
}

fn nested_arrays(depth: usize) -> Value {
    let mut s = json!({"type": "integer"});
    for _ in 0..depth {
        s = json!({"type": "array", "items": s});
    }
    s
}

#[test]
fn moderately_deep_nesting_compiles_on_an_ordinary_thread() {
    // The test thread's default stack (2 MiB), as in a server's worker thread.
    let schema = nested_arrays(100);
    let g = Compiler::new(Options::generation())
        .compile(&schema)
        .expect("100 levels compile");
    let g = std::sync::Arc::new(g);
    let sample = format!("{}1{}", "[".repeat(60), "]".repeat(60));
    let mut m = Matcher::new(g.clone());
    assert!(
        m.push_bytes(sample.as_bytes()).is_err(),
        "60 levels is not 100"
    );
    // Documents deeper than `Limits::max_depth` (64) are cut off: the documented limit.
    let mut m = Matcher::new(g);
    assert!(m.push_bytes("[".repeat(64).as_bytes()).is_ok());
}

#[test]
fn very_deep_nesting_is_an_error_or_compiles_without_crashing() {
    // Deeper than serde_json lets a JSON text nest (128), so only a program builds it.
    let sample = format!("{}1{}", "[".repeat(1_000), "]".repeat(1_000));
    match compile(nested_arrays(1_000), &sample) {
        Ok(accepted) => assert!(accepted),
        Err(e) => assert!(
            e.contains("max_schema_depth"),
            "the error should name the limit: {e}"
        ),
    }
}

#[test]
fn a_ten_thousand_member_enum_compiles() {
    let members: Vec<Value> = (0..10_000)
        .map(|i| json!(format!("member-{i:05}")))
        .collect();
    let schema = json!({"enum": members});
    assert_eq!(compile(schema.clone(), "\"member-09999\""), Ok(true));
    assert_eq!(compile(schema, "\"member-10000\""), Ok(false));
}

#[test]
fn a_huge_max_length_does_not_explode() {
    let schema = json!({"type": "string", "minLength": 3, "maxLength": 1_000_000});
    assert_eq!(compile(schema.clone(), "\"abc\""), Ok(true));
    assert_eq!(compile(schema, "\"ab\""), Ok(false));
}

#[test]
fn a_four_megabyte_schema_compiles_or_names_a_limit() {
    let mut props = serde_json::Map::new();
    for i in 0..20_000 {
        props.insert(
            format!("property_{i:05}"),
            json!({"type": "string", "maxLength": 40,
                   "description": "x".repeat(160)}),
        );
    }
    let schema = json!({"type": "object", "properties": props, "additionalProperties": false});
    assert!(schema.to_string().len() > 4_000_000);
    match compile(schema, r#"{"property_01234":"ok"}"#) {
        Ok(accepted) => assert!(accepted),
        Err(e) => assert!(e.contains("limit"), "the error should name the limit: {e}"),
    }
}

#[test]
fn reference_loops_are_errors_not_hangs() {
    for schema in [
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
               "$ref": "#/$defs/a"}),
        json!({"allOf": [{"$ref": "#"}]}),
        json!({"anyOf": [{"$ref": "#"}, {"type": "null"}]}),
    ] {
        match compile(schema.clone(), "null") {
            // A loop that consumes no input before recursing cannot be a finite automaton.
            Err(e) => assert!(!e.is_empty(), "{schema}"),
            Ok(accepted) => panic!("{schema} compiled (accepts null: {accepted})"),
        }
    }
}

#[test]
fn guarded_recursion_works_to_depth() {
    let schema = json!({
        "$defs": {"node": {"type": "object",
            "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/node"}},
            "required": ["value"], "additionalProperties": false}},
        "$ref": "#/$defs/node"
    });
    let mut text = String::from("{\"value\":0}");
    for i in 1..60 {
        text = format!("{{\"value\":{i},\"next\":{text}}}");
    }
    assert_eq!(compile(schema, &text), Ok(true));
}

#[test]
fn no_comma_when_no_key_can_follow() {
    let schema = json!({"type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "additionalProperties": false});
    let g = std::sync::Arc::new(
        Compiler::new(Options::generation())
            .compile(&schema)
            .expect("compiles"),
    );
    let mut m = Matcher::new(g.clone());
    assert!(m.push_bytes(br#"{"a":1,"b":2"#).is_ok());
    assert!(
        !m.try_push_byte(b','),
        "every property is used: `,` leads nowhere"
    );
    let mut m = Matcher::new(g);
    assert!(m.push_bytes(br#"{"a":1,"#).is_ok());
}

#[test]
fn unique_numbers_that_share_a_prefix_are_distinct() {
    let schema = json!({"type": "array", "items": {"type": "number"}, "uniqueItems": true});
    assert_eq!(compile(schema.clone(), "[1,1.5,10]"), Ok(true));
    assert_eq!(compile(schema.clone(), "[1,10]"), Ok(true));
    assert_eq!(compile(schema.clone(), "[1.5,1]"), Ok(true));
    assert_eq!(compile(schema, "[1,1]"), Ok(false));
}

#[test]
fn unique_strings_that_share_a_prefix_are_distinct() {
    let schema = json!({"type": "object",
        "properties": {
            "words": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "nums": {"type": "array", "items": {"type": "number"}, "uniqueItems": true}},
        "required": ["words", "nums"], "additionalProperties": false});
    assert_eq!(
        compile(
            schema.clone(),
            r#"{"words":["a","b","ab"],"nums":[1,1.5,10]}"#
        ),
        Ok(true)
    );
    assert_eq!(
        compile(schema, r#"{"words":["a","a"],"nums":[]}"#),
        Ok(false)
    );
}

/// At every point of a valid text, trying each byte (two deep) and popping it back leaves the
/// matcher as it was: the rest of the text is still accepted.
#[test]
fn pops_restore_unique_items_state() {
    let schema = json!({"type": "object",
        "properties": {
            "words": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
            "nums": {"type": "array", "items": {"type": "number"}, "uniqueItems": true}},
        "required": ["words", "nums"], "additionalProperties": false});
    let text = br#"{"words":["a","b","ab"],"nums":[1,1.5,10]}"#;
    let g = std::sync::Arc::new(
        Compiler::new(Options::generation())
            .compile(&schema)
            .expect("compiles"),
    );
    for cut in 0..=text.len() {
        for probe in [&b"\""[..], b"\",", b"],", b"a\"", b"1,", b","] {
            let mut m = Matcher::new(g.clone());
            assert!(m.push_bytes(&text[..cut]).is_ok());
            let mut pushed = 0;
            for &b in probe {
                if !m.try_push_byte(b) {
                    break;
                }
                pushed += 1;
            }
            m.pop_bytes(pushed);
            assert!(
                m.push_bytes(&text[cut..]).is_ok() && m.is_accepting(),
                "after {:?} then probing {:?}",
                String::from_utf8_lossy(&text[..cut]),
                String::from_utf8_lossy(probe)
            );
        }
    }
}

/// The schemas that once held a compile for seconds (their times are in
/// `cargo xtask bench compile`): each is compiled exactly or refused with a limit.
#[test]
fn a_pattern_with_a_huge_nfa_is_refused_by_its_size() {
    let e = compile(
        json!({"type": "string", "pattern": "\\p{L}{1000}"}),
        "\"a\"",
    )
    .unwrap_err();
    assert!(
        e.contains("max_dfa_states") && e.contains("NFA states"),
        "{e}"
    );
}

#[test]
fn one_of_many_overlapping_minimums_compiles_exactly() {
    // Exactly one of `x >= i` (i = 0..400) holds for 0 <= x < 1 only.
    let minimums: Vec<Value> = (0..400)
        .map(|i| json!({"type": "number", "minimum": i}))
        .collect();
    let schema = json!({"oneOf": minimums});
    for (sample, valid) in [("0", true), ("0.5", true), ("0.999", true), ("1", false)] {
        assert_eq!(compile(schema.clone(), sample), Ok(valid), "{sample}");
    }
    for sample in ["-1", "2", "399", "400", "1000"] {
        assert_eq!(compile(schema.clone(), sample), Ok(false), "{sample}");
    }
}

#[test]
fn any_of_five_thousand_objects_compiles() {
    let branches: Vec<Value> = (0..5000)
        .map(|i| {
            let key = format!("k{i}");
            json!({"type": "object", "required": [key], "properties": {key: {"const": i}}})
        })
        .collect();
    let schema = json!({"anyOf": branches});
    assert_eq!(compile(schema.clone(), r#"{"k4999":4999}"#), Ok(true));
    assert_eq!(compile(schema, r#"{"k4999":4998}"#), Ok(false));
}

#[test]
fn a_compile_past_its_time_limit_stops_with_an_error_naming_it() {
    // Unanchored, this pattern tracks thousands of NFA states at once: seconds to
    // determinize, so a 50 ms limit always stops it.
    let schema = json!({"type": "string", "pattern": "\\p{L}{150}"});
    let mut options = Options::generation();
    options.limits.max_compile_time = Some(Duration::from_millis(50));
    let e = Compiler::new(options.clone()).compile(&schema).unwrap_err();
    assert!(
        matches!(
            e,
            schema_compiler::CompileError::Limit {
                limit: "max_compile_time",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("0.050 s"), "{e}");
    // A limit of zero stops even the smallest compile; none lets it run.
    options.limits.max_compile_time = Some(Duration::ZERO);
    let e = Compiler::new(options.clone())
        .compile(&json!({"type": "object", "properties": {"a": {"type": "integer"}}}))
        .unwrap_err();
    assert!(e.to_string().contains("max_compile_time"), "{e}");
    options.limits.max_compile_time = None;
    assert!(
        Compiler::new(options)
            .compile(&json!({"type": "string", "pattern": "^\\p{L}{3}$"}))
            .is_ok()
    );
}

#[test]
fn many_unanchored_patterns_under_any_of_and_one_of_compile() {
    // Each pattern matches anywhere in the string, so a product of all the alternatives at
    // once tracks every subset of those seen so far; built one by one they stay small.
    let alts: Vec<Value> = "abcdefghijklmnopqrst"
        .chars()
        .map(|c| json!({"pattern": c.to_string()}))
        .collect();
    let any = json!({"type": "string", "anyOf": alts});
    assert_eq!(compile(any.clone(), "\"xxtxx\""), Ok(true));
    assert_eq!(compile(any, "\"xxzxx\""), Ok(false));
    let one = json!({"type": "string", "oneOf": alts});
    assert_eq!(compile(one.clone(), "\"xaxx\""), Ok(true));
    assert_eq!(compile(one, "\"xaxbx\""), Ok(false));
    // A few alternatives, with length bounds: built as one product.
    let few = json!({"type": "string", "oneOf": [
        {"pattern": "^[a-z.]+$", "maxLength": 200},
        {"format": "ipv4"},
        {"pattern": "^[0-9.]+$", "maxLength": 7},
    ]});
    assert_eq!(compile(few.clone(), "\"example.com\""), Ok(true));
    assert_eq!(compile(few.clone(), "\"10.20.30.40\""), Ok(true));
    assert_eq!(compile(few.clone(), "\"1.2.3\""), Ok(true));
    // Both the address and the short pattern take it.
    assert_eq!(compile(few, "\"1.2.3.4\""), Ok(false));
}
