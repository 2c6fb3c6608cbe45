//! The exactness ratchet: `tests/data/exactness.json` (Test-Suite form) holds schemas where a
//! verdict was once wrong, each with instances on both sides of it, and every one of them must
//! come out right under both option sets.
//!
//! - Validation options: each instance, compact and pretty-printed, is accepted exactly when it
//!   is valid.
//! - Generation options: the notation policy may narrow what is written but never widen what
//!   a schema lets through. An invalid instance is refused in whatever spelling the file gives it
//!   (`1e0`, `10e-1`, `2.0`); a valid instance, which the file spells canonically (plain
//!   notation, no trailing zero), is accepted.
//!
//! A schema no document satisfies may be refused at compile time with an `unsatisfiable`
//! error; that counts as refusing each instance, so it passes only when all are invalid.

mod support;

use std::sync::Arc;

use schema_compiler::{Compiler, Grammar, Matcher, Options};
use support::suite::{Case, accepts, minify, pretty};

fn cases() -> Vec<Case> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/exactness.json");
    let text = std::fs::read_to_string(path).expect("the exactness cases are checked in");
    serde_json::from_str(&text).expect("the exactness cases parse")
}

/// The wrong verdicts under `options`, one line each; `generation` selects the rules above.
fn failures(options: &Options, generation: bool) -> Vec<String> {
    let mut out = Vec::new();
    for case in cases() {
        let text = case.schema.get();
        let schema: serde_json::Value = serde_json::from_str(text).expect("JSON");
        let compiled = Compiler::new(options.clone())
            .numbers_as_written(text)
            .compile(&schema);
        let grammar = match compiled {
            Ok(g) => Arc::new(g),
            Err(e) if e.is_unsatisfiable() => {
                for t in case.tests.iter().filter(|t| t.valid) {
                    out.push(format!(
                        "{} / {}: valid, but the schema was refused: {e}",
                        case.description, t.description
                    ));
                }
                continue;
            }
            Err(e) => {
                out.push(format!("{}: does not compile: {e}", case.description));
                continue;
            }
        };
        let mut m = Matcher::new(grammar);
        for t in &case.tests {
            let compact = minify(t.data.get());
            let texts = if generation {
                vec![compact]
            } else {
                vec![pretty(t.data.get()), compact]
            };
            for text in texts {
                let verdict = accepts(&mut m, &text);
                if verdict.is_ok() != t.valid {
                    out.push(format!(
                        "{} / {}: {} {text}{}",
                        case.description,
                        t.description,
                        if t.valid { "rejected" } else { "accepted" },
                        verdict.err().map(|w| format!(" ({w})")).unwrap_or_default()
                    ));
                }
            }
        }
    }
    out
}

fn assert_exact(options: &Options, generation: bool) {
    let bad = failures(options, generation);
    assert!(
        bad.is_empty(),
        "{} wrong verdicts:\n  {}",
        bad.len(),
        bad.join("\n  ")
    );
}

#[test]
fn every_case_is_exact_under_validation_options() {
    assert_exact(&Options::validation(), false);
}

#[test]
fn every_case_is_exact_under_generation_options() {
    assert_exact(&Options::generation(), true);
}

/// Schema numbers that may have been rounded when read (more significant digits than a
/// 64-bit float keeps, beyond the 64-bit integers) are refused, naming where they are; those
/// read exactly compile.
#[test]
fn numbers_rounded_when_read_are_refused_or_taken_as_written() {
    let parse = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    for (text, keyword, at) in [
        (r#"{"const": 18446744073709551617}"#, "const", "`const`"),
        (
            r#"{"type": "integer", "minimum": 18446744073709551616}"#,
            "minimum",
            "`minimum`",
        ),
        (
            r#"{"properties": {"a": {"enum": [1, 0.30000000000000004]}}}"#,
            "enum",
            "`enum/1`",
        ),
    ] {
        for options in [Options::validation(), Options::generation()] {
            let e = Grammar::compile(&parse(text), &options).expect_err(text);
            assert!(e.is_unsupported(), "{text}: {e}");
            assert_eq!(e.keyword(), Some(keyword), "{text}: {e}");
            assert!(e.to_string().contains(at), "{text}: {e}");
        }
    }
    // Literals with more digits than a float keeps that round to a short decimal: only the
    // text tells them from that decimal, so they are refused when the compiler has it.
    for (text, keyword, at) in [
        (
            r#"{"enum": [100000000000000000000000000001]}"#,
            "enum",
            "`enum/0`",
        ),
        (
            r#"{"type": "number", "not": {"const": 0.10000000000000000001}}"#,
            "const",
            "`const`",
        ),
        (
            r#"{"enum": [0.5, 2.00000000000000000001], "minimum": 0}"#,
            "enum",
            "`enum/1`",
        ),
        // Two literals read as the same float, one of them exactly: which one a bound was
        // written as is unknown.
        (
            r#"{"minimum": 100000000000000000000000000000, "maximum": 100000000000000000000000000001}"#,
            "minimum",
            "`minimum`",
        ),
    ] {
        for options in [Options::validation(), Options::generation()] {
            let e = Compiler::new(options.clone())
                .numbers_as_written(text)
                .compile(&parse(text))
                .expect_err(text);
            assert!(e.is_unsupported(), "{text}: {e}");
            assert_eq!(e.keyword(), Some(keyword), "{text}: {e}");
            assert!(e.to_string().contains(at), "{text}: {e}");
            assert!(
                e.to_string()
                    .contains("more significant digits than such a float keeps"),
                "{text}: {e}"
            );
        }
    }
    // Bounds and `multipleOf` take the value written.
    for (text, valid, invalid) in [
        (
            r#"{"type": "number", "exclusiveMaximum": 100000000000000000000000000001}"#,
            &["1e29", "100000000000000000000000000000.9", "-5"][..],
            &[
                "100000000000000000000000000001",
                "1.00000000000000000000000000011e29",
            ][..],
        ),
        (
            r#"{"minimum": 0.10000000000000000001}"#,
            &["0.10000000000000000001", "0.2", "1e3"][..],
            &["0.1", "0.100000000000000000009", "0"][..],
        ),
        (
            // In plain notation this `multipleOf` needs more states than generation allows.
            r#"{"type": "number", "multipleOf": 0.10000000000000000001}"#,
            &["0", "0.20000000000000000002", "1.0000000000000000001"][..],
            &["0.1", "0.2", "1"][..],
        ),
    ] {
        let both = [
            (Options::validation(), false),
            (Options::generation(), true),
        ];
        let runs = if text.contains("multipleOf") {
            &both[..1]
        } else {
            &both[..]
        };
        for (options, plain_only) in runs.iter().cloned() {
            let g = Compiler::new(options)
                .numbers_as_written(text)
                .compile(&parse(text))
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            let mut m = Matcher::new(Arc::new(g));
            // Generation writes numbers in plain notation only, with at most 20 integer digits.
            let generated = |v: &&&str| {
                let int = v
                    .split('.')
                    .next()
                    .unwrap_or_default()
                    .trim_start_matches('-');
                !v.contains('e') && int.len() <= 20
            };
            for v in valid.iter().filter(|v| !plain_only || generated(v)) {
                accepts(&mut m, v).unwrap_or_else(|e| panic!("{text}: {v} rejected: {e}"));
            }
            for v in invalid {
                assert!(accepts(&mut m, v).is_err(), "{text}: {v} accepted");
            }
        }
    }
    // A rounded literal outside the keywords that compare values (an annotation, a string)
    // leaves the schema compiling, and so does an exact spelling of a short decimal.
    for text in [
        r#"{"type": "integer", "default": 100000000000000000000000000001}"#,
        r#"{"enum": ["100000000000000000000000000001", 1e29]}"#,
        r#"{"minimum": 0.1000000000000000000000, "maximum": 1.5E+3}"#,
    ] {
        for options in [Options::validation(), Options::generation()] {
            Compiler::new(options)
                .numbers_as_written(text)
                .compile(&parse(text))
                .unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }
    for text in [
        r#"{"const": 18446744073709551615}"#,
        r#"{"minimum": -9223372036854775808}"#,
        r#"{"maximum": 0.1234567890123456}"#,
        r#"{"maximum": 1.79769e308}"#,
    ] {
        for options in [Options::validation(), Options::generation()] {
            Grammar::compile(&parse(text), &options).unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }
}

/// Schemas no document satisfies are refused with the reason, at the root's pointer.
#[test]
fn unsatisfiable_schemas_name_the_reason() {
    for (schema, reason) in [
        (serde_json::json!(false), "`false`"),
        (serde_json::json!({"not": {}}), "`not`"),
        (
            serde_json::json!({"type": "number", "minimum": 5, "maximum": 4}),
            "lower bound 5",
        ),
        (
            serde_json::json!({"type": "string", "minLength": 3, "maxLength": 2}),
            "`minLength` is above `maxLength`",
        ),
        (
            serde_json::json!({"allOf": [{"type": "string"}, {"type": "integer"}]}),
            "rule out every value",
        ),
    ] {
        for options in [Options::validation(), Options::generation()] {
            let e = Grammar::compile(&schema, &options).expect_err("unsatisfiable");
            assert!(e.is_unsatisfiable(), "{schema}: {e}");
            assert_eq!(e.pointer(), "#", "{schema}: {e}");
            let text = e.to_string();
            assert!(text.starts_with("unsatisfiable schema at #"), "{text}");
            assert!(text.contains(reason), "{schema}: {text}");
        }
    }
    // The edge of satisfiable compiles.
    for schema in [
        serde_json::json!({"type": "number", "minimum": 4, "maximum": 4}),
        serde_json::json!({"type": "string", "minLength": 2, "maxLength": 2}),
        serde_json::json!({"properties": {"a": false}}),
    ] {
        for options in [Options::validation(), Options::generation()] {
            Grammar::compile(&schema, &options).unwrap_or_else(|e| panic!("{schema}: {e}"));
        }
    }
}

/// Under generation options a number is held to its canonical spelling where a formula decides
/// on it. Every spelling the matcher lets it start must then still reach a value the schema
/// takes: a prefix such as `-0` under `integer` (whose canonical continuations are all
/// fractions) is refused at its byte, never left as a dead end that generation cannot leave.
#[test]
fn generation_leaves_no_dead_end_in_a_number() {
    let members = [
        r#"{"type":"integer"}"#,
        r#"{"type":"integer","minimum":-3}"#,
        r#"{"multipleOf":0.5}"#,
        r#"{"multipleOf":0.25,"maximum":2}"#,
        r#"{"type":"number","maximum":0}"#,
        r#"{"enum":[0,1,2.5]}"#,
    ];
    let numbers = [
        "-0", "-0.", "-0.0", "-0.00", "0.0", "1.0", "1.50", "2.50", "0.10", "-1.0", "1e", "10.",
    ];
    let mut bad = Vec::new();
    for member in members {
        for shape in [
            format!(
                r#"{{"anyOf":[{{"type":"object","properties":{{"x":{member}}}}},{{"type":"object","properties":{{"x":{member}}}}}]}}"#
            ),
            format!(r#"{{"oneOf":[{member},{{"type":"string"}}]}}"#),
            format!(r#"{{"not":{{"not":{member}}}}}"#),
        ] {
            let schema: serde_json::Value = serde_json::from_str(&shape).unwrap();
            let grammar = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
            let mut m = Matcher::new(grammar);
            for n in numbers {
                let text = if shape.contains("object") {
                    format!(r#"{{"x":{n}"#)
                } else {
                    n.to_string()
                };
                m.reset();
                if m.push_bytes(text.as_bytes()).is_err() {
                    continue;
                }
                match m.completion(64) {
                    Some(rest) => {
                        let whole = format!("{text}{}", String::from_utf8_lossy(&rest));
                        if accepts(&mut m, &whole).is_err() {
                            bad.push(format!("{shape}: the completion {whole} is refused"));
                        }
                    }
                    None => bad.push(format!("{shape}: {text} is accepted but cannot end")),
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} dead ends:\n  {}",
        bad.len(),
        bad.join("\n  ")
    );
}
