//! Constrained generation end to end through MLX: a tiny random Llama-style model, written to
//! safetensors in `f16` and in MLX's 4-bit format, with the real Llama 2 tokenizer (32,000
//! tokens). The model knows nothing, so the constraint does all the work: every output must
//! parse and validate against its schema (checked with the independent `jsonschema` crate),
//! and a seeded run must reproduce its text.
//!
//! The schema bounds the document's length, and whitespace is compiled out: a random model
//! would otherwise spend any budget on blanks between tokens, and what these tests check is
//! the runtime, not how a document is closed when the budget runs out.

mod support;

use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use generate::{GenerateOptions, Generator, Model, Prompt, Request, SchemaInPrompt, Tokenizer};
use runtime_mlx::{MlxConfig, MlxModel};
use schema_compiler::{Options, Whitespace};
use serde_json::{Value, json};
use support::{Tiny, assets, scratch};

fn generator(spec: &Tiny, name: &str) -> Result<Generator<MlxModel>> {
    let tok = assets().join("tokenizers/llama2/tokenizer.json");
    ensure!(
        tok.is_file(),
        "{} is missing: run `cargo xtask fetch-assets`",
        tok.display()
    );
    let dir = scratch(name)?;
    spec.write(&dir, 42)?;
    let model = MlxModel::load(&dir, MlxConfig::default().with_n_ctx(512))?;
    let mut g = Generator::new(model, Arc::new(Tokenizer::from_file(&tok)?))?;
    g.set_compile_options(Options {
        whitespace: Whitespace::Compact,
        ..Options::generation()
    });
    Ok(g)
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}
        },
        "required": ["name", "age"],
        "additionalProperties": false
    })
}

fn request(options: GenerateOptions) -> Request {
    Request {
        prompt: Prompt::Text("A person as JSON:".into()),
        schema: Some(schema()),
        schema_in_prompt: SchemaInPrompt::Auto,
        options,
    }
}

fn validate(text: &str) -> Result<()> {
    let value: Value = serde_json::from_str(text).with_context(|| format!("not JSON: {text}"))?;
    let validator = jsonschema::draft202012::options().build(&schema())?;
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    ensure!(errors.is_empty(), "{text} does not validate: {errors:?}");
    Ok(())
}

fn sampled(seed: u64) -> GenerateOptions {
    GenerateOptions {
        max_tokens: 96,
        seed,
        sampler: sampler::SamplerConfig {
            temperature: 1.0,
            top_p: 0.95,
            ..sampler::SamplerConfig::default()
        },
        ..GenerateOptions::default()
    }
}

/// Greedy and seeded runs; every output complete and valid, the repeated seed identical.
fn run(g: &mut Generator<MlxModel>) -> Result<()> {
    let mut streamed = String::new();
    let greedy = GenerateOptions {
        max_tokens: 96,
        ..GenerateOptions::default()
    };
    let out = g.generate(&request(greedy), &mut |piece| {
        streamed.push_str(piece);
        true
    })?;
    ensure!(out.complete, "{out:?}");
    ensure!(streamed == out.text);
    validate(&out.text)?;
    ensure!(out.completion_tokens <= 96, "{out:?}");

    let mut sink = |_: &str| true;
    let a = g.generate(&request(sampled(7)), &mut sink)?;
    let b = g.generate(&request(sampled(7)), &mut sink)?;
    ensure!(a.text == b.text, "seed 7 twice: {:?} {:?}", a.text, b.text);
    for seed in [1, 2, 3] {
        let out = g.generate(&request(sampled(seed)), &mut sink)?;
        ensure!(out.complete, "seed {seed}: {out:?}");
        validate(&out.text)?;
    }
    validate(&a.text)
}

#[test]
fn f16_model_generates_valid_json() -> Result<()> {
    let mut g = generator(&Tiny::llama(32000), "generate-f16")?;
    run(&mut g)
}

#[test]
fn quantized_model_generates_valid_json() -> Result<()> {
    let spec = Tiny {
        quantize: Some((64, 4)),
        lm_head: false,
        ..Tiny::llama(32000)
    };
    let mut g = generator(&spec, "generate-q4")?;
    assert!(g.model().describe().contains("4-bit"));
    run(&mut g)
}
