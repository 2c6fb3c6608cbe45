//! A thinking section before a constrained answer, with a model whose logits favour one script
//! (the real Gemma 3 tokenizer and mask kernel): the thinking is generated unconstrained up to
//! its end marker, within its budget, and the schema applies after it.

use std::sync::{Arc, OnceLock};

use generate::{
    GenerateOptions, Generator, Model, ModelError, Prompt, Reasoning, Request, SchemaInPrompt,
    StopReason, Tokenizer,
};
use script_support::{favour, plain_logits};
use serde_json::{Value, json};
use vocab_index::TokenId;

mod script_support;

/// A model that wants to write `script` after the prompt: the token that continues it from the
/// text in the cache after the prompt gets logit 30, end of turn once it is written, plain
/// printable ASCII tokens 1, everything else 0. Its logits depend on the tokens alone.
struct Thinker {
    tok: Arc<Tokenizer>,
    plain: Vec<f32>,
    script: String,
    prompt_len: Option<usize>,
    cache: Vec<u32>,
    logits: Vec<f32>,
}

impl Model for Thinker {
    fn vocab_size(&self) -> usize {
        self.plain.len()
    }
    fn context_size(&self) -> usize {
        4096
    }
    fn n_past(&self) -> usize {
        self.cache.len()
    }
    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.cache.extend_from_slice(tokens);
        let start = *self.prompt_len.get_or_insert(self.cache.len());
        let mut written = Vec::new();
        for &t in &self.cache[start..] {
            written.extend_from_slice(self.tok.token_bytes(TokenId::new(t).unwrap()));
        }
        self.logits.copy_from_slice(&self.plain);
        favour(&self.tok, &self.script, &written, &mut self.logits);
        Ok(&self.logits)
    }
    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        self.cache.truncate(n_past);
        Ok(())
    }
}

fn tokenizer() -> Arc<Tokenizer> {
    static TOKENIZER: OnceLock<Arc<Tokenizer>> = OnceLock::new();
    TOKENIZER
        .get_or_init(|| {
            let path = format!(
                "{}/../assets/tokenizers/gemma3/tokenizer.json",
                env!("CARGO_MANIFEST_DIR")
            );
            Arc::new(Tokenizer::from_file(&path).expect("run `cargo xtask fetch-assets`"))
        })
        .clone()
}

fn generator(script: &str) -> Generator<Thinker> {
    let tok = tokenizer();
    let vocab = tok.vocab().len();
    let model = Thinker {
        tok: tok.clone(),
        plain: plain_logits(&tok),
        script: script.to_string(),
        prompt_len: None,
        cache: Vec::new(),
        logits: vec![0.0; vocab],
    };
    Generator::new(model, tok).unwrap()
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"answer": {"type": "integer"}},
        "required": ["answer"], "additionalProperties": false})
}

fn request(reasoning: Option<Reasoning>, max_tokens: usize) -> Request {
    Request {
        prompt: Prompt::Text("What is 2+2?".into()),
        schema: Some(schema()),
        schema_in_prompt: SchemaInPrompt::Off,
        options: GenerateOptions {
            max_tokens,
            reasoning,
            ..GenerateOptions::default()
        },
    }
}

fn think(budget: usize) -> Option<Reasoning> {
    Some(Reasoning {
        end: "</think>".into(),
        budget,
    })
}

#[test]
fn the_thinking_comes_first_and_the_schema_after_its_end() {
    let mut g = generator("<think>Two and two make four.</think>{\"answer\":4}");
    let mut streamed = String::new();
    let mut answer = String::new();
    let out = g
        .generate_thinking(
            &request(think(64), 96),
            &mut |piece| {
                streamed.push_str(piece);
                true
            },
            &mut |piece| {
                answer.push_str(piece);
                true
            },
        )
        .unwrap();
    assert_eq!(out.reasoning.as_deref(), Some("Two and two make four."));
    // Streamed without the opening tag or the end marker.
    assert_eq!(streamed, "Two and two make four.");
    assert_eq!(out.text, r#"{"answer":4}"#);
    assert_eq!(answer, out.text);
    assert!(out.complete);
    assert!(out.reasoning_tokens > 0);
    assert!(out.completion_tokens > out.reasoning_tokens);
}

#[test]
fn a_spent_thinking_budget_writes_the_end_marker() {
    let mut g =
        generator("<think>Let me count slowly, one by one, up to four.</think>{\"answer\":4}");
    let out = g.generate(&request(think(4), 64), &mut |_| true).unwrap();
    let thought = out.reasoning.unwrap();
    assert!(
        "Let me count slowly, one by one, up to four.".starts_with(&thought) && !thought.is_empty(),
        "{thought:?}"
    );
    assert!(thought.len() < 20, "{thought:?}");
    // The marker was written, and the answer follows the schema.
    let doc: Value = serde_json::from_str(&out.text).unwrap();
    assert!(doc["answer"].is_number(), "{doc}");
    assert!(out.complete);
}

#[test]
fn without_reasoning_the_schema_starts_at_the_first_token() {
    let mut g = generator("<think>Hmm.</think>{\"answer\":4}");
    let out = g.generate(&request(None, 32), &mut |_| true).unwrap();
    assert!(out.reasoning.is_none());
    assert_eq!(out.reasoning_tokens, 0);
    assert!(out.text.starts_with('{'), "{}", out.text);
    serde_json::from_str::<Value>(&out.text).unwrap();
    assert!(matches!(
        out.stop,
        StopReason::Complete | StopReason::Eos | StopReason::BudgetClosed
    ));
}

#[test]
fn templates_with_a_thinking_section_are_recognised() {
    assert_eq!(
        generate::reasoning_end_in("{% if enable_thinking %}<think>{% endif %}…</think>"),
        Some("</think>")
    );
    assert_eq!(generate::reasoning_end_in("{{ messages }}"), None);
}

/// Qwen 3's own chat template: it has a thinking section, and `enable_thinking: false` (passed
/// as a template variable) closes it in the generation prompt, so the model answers at once.
#[test]
fn qwen3_template_thinks_unless_told_not_to() {
    let path = format!(
        "{}/../assets/tokenizers/qwen3/tokenizer.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let tok = Arc::new(Tokenizer::from_file(&path).expect("run `cargo xtask fetch-assets`"));
    let template = tok.chat_template().expect("Qwen 3 has a chat template");
    assert_eq!(
        generate::reasoning_end_in(template.source()),
        Some("</think>")
    );
    let messages = [generate::Message::new("user", "2+2?")];
    let thinking = template.render(&messages, true, None).unwrap();
    assert!(
        thinking.ends_with("<|im_start|>assistant\n"),
        "{thinking:?}"
    );
    let off = json!({"enable_thinking": false});
    let not_thinking = template
        .render_with(&messages, true, None, Some(&off))
        .unwrap();
    assert!(
        not_thinking.ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n"),
        "{not_thinking:?}"
    );
    // A generator on it finds the marker; one told another marker uses that.
    let model = Thinker {
        tok: tok.clone(),
        plain: plain_logits(&tok),
        script: String::new(),
        prompt_len: None,
        cache: Vec::new(),
        logits: vec![0.0; tok.vocab().len()],
    };
    let mut g = Generator::new(model, tok).unwrap();
    assert_eq!(g.reasoning_end().as_deref(), Some("</think>"));
    g.set_reasoning_end(Some("<|end_thinking|>".into()));
    assert_eq!(g.reasoning_end().as_deref(), Some("<|end_thinking|>"));
}
