//! Constrained generation end to end: the real default model (Gemma 3 270M), the Gemma 3
//! tokenizer, schemas from the demo. Outputs are checked with an independent validator (the
//! `jsonschema` crate), and a seeded sampling run is repeated to check it reproduces.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use generate::{
    GenerateOptions, Generator, Message, Prompt, Request, SchemaInPrompt, StopReason, Tokenizer,
};
use runtime_llama::{LlamaConfig, LlamaModel};
use serde_json::{Value, json};

fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    )
}

fn generator() -> Result<Generator<LlamaModel>> {
    let model = assets().join("models/gemma-3-270m-q4_k_m.gguf");
    let tok = assets().join("tokenizers/gemma3/tokenizer.json");
    ensure!(
        model.is_file() && tok.is_file(),
        "{} or {} is missing: run `cargo xtask fetch-assets`",
        model.display(),
        tok.display()
    );
    let model = LlamaModel::load(&model, LlamaConfig::default().with_n_ctx(1024))?;
    let tokenizer = Arc::new(Tokenizer::from_file(&tok)?);
    Ok(Generator::new(model, tokenizer)?)
}

fn countries() -> Value {
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "continent": {"type": "string"}},
            "required": ["name", "continent"]
        }
    })
}

fn request(schema: &Value, prompt: &str, options: GenerateOptions) -> Request {
    Request {
        prompt: Prompt::Chat(vec![Message::new("user", prompt)]),
        schema: Some(schema.clone()),
        schema_in_prompt: SchemaInPrompt::Auto,
        options,
    }
}

fn validate(schema: &Value, text: &str) -> Result<Value> {
    let value: Value = serde_json::from_str(text).with_context(|| format!("not JSON: {text}"))?;
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)?;
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    ensure!(errors.is_empty(), "{text} does not validate: {errors:?}");
    Ok(value)
}

const COUNTRIES: &str = "Which countries are mentioned in the sentence 'Adamma went home to \
    Nigeria for the hols'?\nYour answer should be only JSON, according to this schema: \
    #!JSON_SCHEMA!#";

#[test]
fn greedy_output_validates_and_streams_the_same_text() -> Result<()> {
    let mut g = generator()?;
    let schema = countries();
    let mut streamed = String::new();
    let options = GenerateOptions {
        max_tokens: 80,
        ..GenerateOptions::default()
    };
    let out = g.generate(&request(&schema, COUNTRIES, options), &mut |piece| {
        streamed.push_str(piece);
        true
    })?;
    assert!(out.complete, "{out:?}");
    assert_eq!(streamed, out.text);
    validate(&schema, &out.text)?;
    assert!(out.completion_tokens <= 80);
    assert!(
        matches!(
            out.stop,
            StopReason::Complete | StopReason::Eos | StopReason::BudgetClosed
        ),
        "{:?}",
        out.stop
    );
    Ok(())
}

#[test]
fn a_seed_reproduces_its_text_and_formats_hold() -> Result<()> {
    let mut g = generator()?;
    let schema = json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "maxLength": 40},
            "date": {"type": "string", "format": "date"},
            "attendees": {"type": "integer", "minimum": 1, "maximum": 500},
            "tags": {"type": "array", "items": {"enum": ["work", "travel", "family"]},
                     "maxItems": 3, "uniqueItems": true}
        },
        "required": ["title", "date", "attendees"],
        "additionalProperties": false
    });
    let prompt = "The quarterly review is on 13 March 2026 in Lagos with 12 people. Describe \
        the event as JSON following this schema: #!JSON_SCHEMA!#";
    let sampled = |seed| GenerateOptions {
        max_tokens: 96,
        seed,
        sampler: sampler::SamplerConfig {
            temperature: 1.0,
            top_p: 0.95,
            ..sampler::SamplerConfig::default()
        },
        ..GenerateOptions::default()
    };
    let mut sink = |_: &str| true;
    let a = g.generate(&request(&schema, prompt, sampled(7)), &mut sink)?;
    let b = g.generate(&request(&schema, prompt, sampled(7)), &mut sink)?;
    assert_eq!(a.text, b.text, "the same seed gave different texts");
    assert!(a.complete, "{a:?}");
    validate(&schema, &a.text)?;
    // Other seeds: different samples, every one valid.
    for seed in [1, 2, 3] {
        let c = g.generate(&request(&schema, prompt, sampled(seed)), &mut sink)?;
        assert!(c.complete, "seed {seed}: {c:?}");
        validate(&schema, &c.text)?;
    }
    Ok(())
}

#[test]
fn a_tight_budget_still_ends_in_valid_json() -> Result<()> {
    let mut g = generator()?;
    let schema = countries();
    let options = GenerateOptions {
        max_tokens: 24,
        ..GenerateOptions::default()
    };
    let out = g.generate(&request(&schema, COUNTRIES, options), &mut |_| true)?;
    assert!(out.completion_tokens <= 24, "{out:?}");
    assert!(out.complete, "{out:?}");
    validate(&schema, &out.text)?;
    Ok(())
}

#[test]
fn schema_errors_name_the_keyword_and_pointer() -> Result<()> {
    let mut g = generator()?;
    let schema =
        json!({"type": "object", "properties": {"a": {"type": "string", "format": "idn-email"}}});
    let err = g
        .generate(
            &request(&schema, "hi", GenerateOptions::default()),
            &mut |_| true,
        )
        .expect_err("idn-email is not supported in strict mode");
    let msg = err.to_string();
    assert!(msg.contains("/properties/a"), "{msg}");
    assert!(msg.contains("format"), "{msg}");
    Ok(())
}
