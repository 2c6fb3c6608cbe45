//! The decode loop allocates nothing per token once its buffers have grown: generating twice
//! as many tokens makes only a few more allocations (the output's own buffers doubling), with
//! a schema and without.
//!
//! The allocations are those of the current thread (`allocation_counter`, whose counting
//! global allocator this test binary uses), so the harness's other threads do not interfere.
//! The model is a fixed table of logits that always favours the same token, so the model
//! itself allocates nothing either.

use std::sync::Arc;

use generate::{GenerateOptions, Generator, Model, ModelError, Prompt, Request, Tokenizer};
use sampler::SamplerConfig;
use serde_json::json;

/// Logits that favour one token, whatever came before.
struct Steady {
    logits: Vec<f32>,
    past: usize,
}

impl Model for Steady {
    fn vocab_size(&self) -> usize {
        self.logits.len()
    }
    fn context_size(&self) -> usize {
        1 << 16
    }
    fn n_past(&self) -> usize {
        self.past
    }
    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.past += tokens.len();
        Ok(&self.logits)
    }
    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        self.past = self.past.min(n_past);
        Ok(())
    }
}

fn generator() -> Generator<Steady> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/tokenizers/gemma3/tokenizer.json"
    );
    let tok = Arc::new(Tokenizer::from_file(path).expect("run `cargo xtask fetch-assets`"));
    let favoured = tok.encode("ab", false).unwrap();
    assert_eq!(favoured.len(), 1, "`ab` is one Gemma 3 token");
    let mut logits = vec![0.0; tok.vocab().len()];
    logits[favoured[0].as_usize()] = 30.0;
    Generator::new(Steady { logits, past: 0 }, tok).unwrap()
}

/// Allocations while generating `max_tokens` tokens after `request`'s prompt.
fn allocations_for(g: &mut Generator<Steady>, request: &Request, max_tokens: usize) -> u64 {
    let mut request = request.clone();
    request.options.max_tokens = max_tokens;
    let mut out = None;
    let made = allocation_counter::measure(|| {
        out = Some(g.generate(&request, &mut |_| true).unwrap());
    })
    .count_total;
    let out = out.unwrap();
    // A constrained document may close a token early, at the budget.
    assert!(
        out.completion_tokens + 2 >= max_tokens,
        "{} tokens: {:?}",
        out.completion_tokens,
        out.stop
    );
    made
}

/// Per extra token: the allocations of a long generation less those of a short one, over
/// the tokens between them.
fn per_extra_token(request: &Request) -> f64 {
    let mut g = generator();
    // Warm: the grammar compiled, the masks of every state cached.
    allocations_for(&mut g, request, 800);
    let short = allocations_for(&mut g, request, 400);
    let long = allocations_for(&mut g, request, 800);
    long.saturating_sub(short) as f64 / 400.0
}

fn request(schema: Option<serde_json::Value>) -> Request {
    Request {
        prompt: Prompt::Text("x".into()),
        schema,
        schema_in_prompt: Default::default(),
        options: GenerateOptions {
            sampler: SamplerConfig::greedy(),
            ignore_eos: true,
            ..GenerateOptions::default()
        },
    }
}

#[test]
fn a_constrained_step_allocates_nothing() {
    let per_token = per_extra_token(&request(Some(json!({"type": "string"}))));
    assert!(per_token < 0.1, "{per_token} allocations per token");
}

#[test]
fn an_unconstrained_step_allocates_nothing() {
    let per_token = per_extra_token(&request(None));
    assert!(per_token < 0.1, "{per_token} allocations per token");
}
