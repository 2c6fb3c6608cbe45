//! Compile time of schemas that once took seconds: `cargo xtask bench compile`.
//!
//! Each case is compiled with the generation options (the CLI's and the server's), lenient
//! where the schema needs a relaxation. A case is either compiled or refused with a limit;
//! which one is printed before it is timed. Regex DFAs are cached process-wide, so after the
//! first iteration each case measures the compile with that cache warm (as in a server); a
//! refused pattern is never cached and is refused anew each time.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use schema_compiler::{Grammar, Options};
use serde_json::{Value, json};

/// (name, schema, strict).
fn cases() -> Vec<(&'static str, Value, bool)> {
    let minimums: Vec<Value> = (0..400)
        .map(|i| json!({"type": "number", "minimum": i}))
        .collect();
    let branches: Vec<Value> = (0..5000)
        .map(|i| {
            let key = format!("k{i}");
            json!({"type": "object", "required": [key], "properties": {key: {"const": i}}})
        })
        .collect();
    vec![
        // A 40-byte pattern whose NFA has about 300,000 states.
        (
            "pattern_letters_1000",
            json!({"type": "string", "pattern": "\\p{L}{1000}"}),
            true,
        ),
        ("one_of_400_minimums", json!({"oneOf": minimums}), true),
        ("any_of_5000_objects", json!({"anyOf": branches}), true),
        // Long chains of bounded label lengths, combined by `oneOf`.
        (
            "one_of_host_formats",
            json!({"type": "string", "oneOf": [
                {"format": "hostname"}, {"format": "ipv4"}, {"format": "ipv6"}
            ]}),
            false,
        ),
    ]
}

fn compile(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(5));
    for (name, schema, strict) in cases() {
        let mut options = Options::generation();
        options.strict = strict;
        match Grammar::compile(&schema, &options) {
            Ok(g) => eprintln!("{name}: compiles ({} DFA states)", g.dfa_states()),
            Err(e) => eprintln!("{name}: refused: {e}"),
        }
        group.bench_function(name, |b| {
            b.iter(|| black_box(Grammar::compile(black_box(&schema), &options).is_ok()))
        });
    }
    group.finish();
}

criterion_group!(benches, compile);
criterion_main!(benches);
