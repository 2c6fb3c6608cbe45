//! Mask-kernel hot paths on real tokenizers: `cargo bench -p benches --bench kernel`.
//!
//! For a few schemas and positions inside an instance (after a prefix of its compact text):
//! - `mask_cold/<tokenizer>/<state>`: a mask with caching disabled (every mask computed);
//! - `mask_warm/<tokenizer>/<state>`: the same mask served from a warm [`MaskCache`];
//! - `commit/<tokenizer>`: committing one token and rolling it back;
//! - `apply/<vocab size>`: setting disallowed logits to `-inf` for a sparse and a dense mask.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use mask_kernel::{FixedBitSet, Kernel, MaskCache, Session, apply};
use schema_compiler::{Grammar, Matcher, Options};
use serde_json::json;
use vocab_index::{TrieKind, Vocabulary};

fn tokenizer_path(name: &str) -> PathBuf {
    let root = std::env::var_os("STENCIL_ASSETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")));
    let path = root.join("tokenizers").join(name).join("tokenizer.json");
    assert!(
        path.is_file(),
        "missing {}: run `cargo xtask fetch-assets`",
        path.display()
    );
    path
}

/// (name, schema, prefix of the document after which the mask is computed).
fn states() -> Vec<(&'static str, serde_json::Value, &'static str)> {
    let person = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150},
            "email": {"type": "string", "format": "email"},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}},
            "id": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}
        },
        "required": ["name", "age"]
    });
    let open = json!({"type": "object"});
    vec![
        ("open_key_start", open.clone(), r#"{""#),
        ("open_key_mid", open.clone(), r#"{"descr"#),
        ("after_colon", person.clone(), r#"{"name":"#),
        ("free_string", person.clone(), r#"{"name":"Ada Lo"#),
        (
            "bounded_string",
            person.clone(),
            r#"{"name":"Ada","tags":["short"#,
        ),
        (
            "pattern_string",
            person.clone(),
            r#"{"name":"Ada","id":"AB"#,
        ),
        ("email", person.clone(), r#"{"name":"Ada","email":"ada@ex"#),
        ("integer_start", person.clone(), r#"{"name":"Ada","age":"#),
        ("integer", person.clone(), r#"{"name":"Ada","age":4"#),
        ("closed_key", person.clone(), r#"{"name":"Ada","#),
    ]
}

fn session_at(kernel: &Arc<Kernel>, grammar: &Arc<Grammar>, prefix: &str) -> Session<Matcher> {
    let mut s = Session::new(kernel.clone(), Matcher::new(grammar.clone()));
    for &b in prefix.as_bytes() {
        assert!(
            s.recognizer_mut().try_push_byte(b),
            "prefix {prefix:?} rejected"
        );
    }
    s
}

fn bench(c: &mut Criterion) {
    for tok in ["llama3", "gemma3"] {
        let vocab = Arc::new(Vocabulary::from_file(tokenizer_path(tok)).expect("tokenizer loads"));
        let kernel = Arc::new(Kernel::new(vocab, TrieKind::Flat).expect("kernel builds"));
        for (name, schema, prefix) in states() {
            let grammar =
                Arc::new(Grammar::compile(&schema, &Options::generation()).expect("compiles"));
            let mut s = session_at(&kernel, &grammar, prefix);
            let mut mask = s.new_mask();
            let mut cold = MaskCache::new(0);
            c.bench_function(&format!("mask_cold/{tok}/{name}"), |b| {
                b.iter(|| black_box(s.mask(&mut cold, &mut mask).expect("non-empty")))
            });
            let mut warm = MaskCache::default();
            s.mask(&mut warm, &mut mask).expect("non-empty");
            c.bench_function(&format!("mask_warm/{tok}/{name}"), |b| {
                b.iter(|| black_box(s.mask(&mut warm, &mut mask).expect("non-empty")))
            });
        }
        let grammar = Arc::new(
            Grammar::compile(&json!({"type": "string"}), &Options::generation()).expect("compiles"),
        );
        let mut s = session_at(&kernel, &grammar, "\"");
        let token = kernel.vocab().token_id(b"hello").expect("a common token");
        c.bench_function(&format!("commit/{tok}"), |b| {
            b.iter(|| {
                s.commit(token).expect("allowed");
                s.rollback(1).expect("committed");
            })
        });
    }
    for n in [128_256usize, 262_144] {
        let mut sparse = FixedBitSet::with_capacity(n);
        for i in (0..n).step_by(97) {
            sparse.insert(i);
        }
        let mut dense = FixedBitSet::with_capacity(n);
        dense.insert_range(..);
        dense.set(12345, false);
        let mut logits = vec![0.5f32; n];
        c.bench_function(&format!("apply/{n}/sparse"), |b| {
            b.iter(|| apply(&sparse, black_box(&mut logits)).expect("ok"))
        });
        c.bench_function(&format!("apply/{n}/dense"), |b| {
            b.iter(|| apply(&dense, black_box(&mut logits)).expect("ok"))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(std::time::Duration::from_secs(2));
    targets = bench
}
criterion_main!(benches);
