//! The decode loop: prompt, constraint, mask, sample, commit, stream.

use std::io::Write;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lru::LruCache;
use mask_kernel::{FixedBitSet, Kernel, Recognizer, Session, SharedMaskCache};
use sampler::SamplerConfig;
use schema_compiler::json_text::RoundedNumbers;
use schema_compiler::{Compiler, Grammar, Matcher, Options, PropertyOrder, Whitespace};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use vocab_index::{TokenId, TrieKind, Vocabulary};

use self::decode::Decoder;
use crate::error::GenerateError;
use crate::model::Model;
use crate::template::{Message, SchemaInPrompt, inject_schema};
use crate::tokenizer::Tokenizer;

mod decode;

/// How many tokens before `max_tokens` the budget is watched, so the document can still be
/// closed.
const CLOSING_WINDOW: usize = 64;

/// Knobs of one generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GenerateOptions {
    /// Most tokens to generate (forced tokens included).
    pub max_tokens: usize,
    /// Sampling.
    pub sampler: SamplerConfig,
    /// Seed of the sampler: the same seed, model and prompt give the same text.
    pub seed: u64,
    /// Stop when the text contains one of these (unconstrained generation).
    pub stop: Vec<String>,
    /// Feed bytes the constraint forces (like `{"name":"`) to the model without sampling.
    pub fast_forward: bool,
    /// Near `max_tokens`, end with the shortest valid completion instead of cutting the
    /// document off.
    pub close_at_budget: bool,
    /// Unconstrained generation only: never choose end of sequence or end of turn, so exactly
    /// `max_tokens` tokens are generated (for benchmarks at a fixed length).
    pub ignore_eos: bool,
    /// Record the log probability of each generated token and of this many alternatives (at
    /// most [`MAX_TOP_LOGPROBS`]) in [`Output::logprobs`]; `None`: record nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<usize>,
    /// A thinking section before the answer (reasoning models): generated unconstrained up to
    /// its end marker, within its own budget, then the constraint applies. `None`: the answer
    /// starts at the first token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
}

/// The thinking section of a reasoning model (`<think>…</think>` before the answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The text that ends it (`</think>`); the answer, and the constraint, start after it.
    pub end: String,
    /// Most tokens of thinking (within [`GenerateOptions::max_tokens`], which counts both
    /// parts); when they run out, the end marker is written and the answer starts.
    pub budget: usize,
}

/// A generated thinking section, and where the answer starts.
pub(crate) struct Thought {
    /// The prompt, the thinking and its end marker.
    pub prompt: Vec<TokenId>,
    /// Tokens of thinking, the end marker included.
    pub tokens: usize,
    /// The thinking, without its markers.
    pub text: String,
    /// The caller cancelled while it was generated.
    pub cancelled: bool,
    /// The decode loop's output for it.
    pub output: Output,
}

impl Thought {
    /// What a request cancelled while thinking returns: the thinking so far.
    pub fn into_cancelled(self) -> Output {
        let mut out = self.output;
        out.reasoning = Some(self.text);
        out
    }

    /// The answer's token budget: what the thinking left of `max_tokens` (at least one).
    pub fn tokens_left(&self, max_tokens: usize) -> usize {
        max_tokens.saturating_sub(self.tokens).max(1)
    }

    /// Counts the thinking into the answer's output, whose prompt was `prompt_len` tokens
    /// before the thinking was appended to it.
    pub fn add_to(self, out: &mut Output, prompt_len: usize) {
        out.prompt_tokens = prompt_len;
        out.completion_tokens += self.tokens;
        out.reasoning_tokens = self.tokens;
        out.reasoning = Some(self.text);
        out.timing.decode_ms += self.output.timing.decode_ms;
    }
}

/// The tag that opens the usual thinking section.
const THINK_OPEN: &str = "<think>";
/// The tag that ends it.
const THINK_END: &str = "</think>";

/// The end marker of a thinking section, when a chat template writes or expects one.
pub fn reasoning_end_in(template: &str) -> Option<&'static str> {
    template.contains(THINK_END).then_some(THINK_END)
}

/// The most alternatives [`GenerateOptions::logprobs`] may ask for.
pub const MAX_TOP_LOGPROBS: usize = 20;

/// The log probability of a generated token, and of the likeliest tokens at its step.
///
/// They are taken from the model's logits after the constraint's mask (and, unconstrained,
/// after the tokens outside the vocabulary are masked), before temperature and the other
/// sampling knobs: so the token and every alternative are tokens the constraint allowed,
/// and the probabilities sum to 1 over the allowed tokens. A token the constraint forced (fed
/// without sampling, or closing the document at the budget) has log probability 0 and itself
/// as its only alternative.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token.
    pub token: u32,
    /// Its bytes (a token may hold part of a UTF-8 character).
    pub bytes: Vec<u8>,
    /// Its natural log probability (at most 0).
    pub logprob: f32,
    /// The likeliest allowed tokens at this step, likeliest first, as `(token, bytes,
    /// logprob)`.
    pub top: Vec<(u32, Vec<u8>, f32)>,
}

/// Where [`Generator::set_logprob_sink`] sends each [`TokenLogprob`] as it is generated (the
/// receiver drains it, for example from the text callback).
pub type LogprobSink = Arc<Mutex<Vec<TokenLogprob>>>;

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: 512,
            sampler: SamplerConfig {
                temperature: 0.0,
                ..SamplerConfig::default()
            },
            seed: 0,
            stop: Vec::new(),
            fast_forward: true,
            close_at_budget: true,
            ignore_eos: false,
            logprobs: None,
            reasoning: None,
        }
    }
}

/// What to generate from.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Raw text for plain completion (the tokenizer adds its prefix, e.g. BOS).
    Text(String),
    /// Chat messages, rendered with the tokenizer's chat template (or joined as plain text when
    /// it has none).
    Chat(Vec<Message>),
}

/// Why generation stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model chose end of sequence (or end of turn).
    Eos,
    /// The constrained document was complete and nothing but end of sequence could follow.
    Complete,
    /// The token budget was nearly spent: the shortest valid completion was appended.
    BudgetClosed,
    /// The token budget ran out before the document could be completed: the text is
    /// truncated and is not a valid document.
    MaxTokens,
    /// A stop string was produced (it is not included in the text).
    Stop,
    /// The caller asked to stop (the text callback returned `false`).
    Cancelled,
}

/// Timings of one generation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Compiling the schema (0 when it came from the cache).
    pub compile_ms: f64,
    /// Evaluating the prompt.
    pub prompt_ms: f64,
    /// Generating (model, masks, sampling).
    pub decode_ms: f64,
    /// Generated tokens per second of decoding.
    pub tokens_per_s: f64,
    /// Mean time to compute a mask.
    pub mask_us_mean: f64,
    /// Mean time per mask that decoding waited for it: a mask computed while the model
    /// evaluated the last token (see [`Model::forward_with`]) counts only the time it ran
    /// past the evaluation; any other mask counts in full.
    #[serde(default)]
    pub mask_exposed_us_mean: f64,
    /// Total time in masks.
    pub mask_ms_total: f64,
}

/// The result of a generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// The generated text.
    pub text: String,
    /// Tokens in the prompt.
    pub prompt_tokens: usize,
    /// Tokens generated (forced ones included).
    pub completion_tokens: usize,
    /// Of those, how many were forced by the constraint.
    pub forced_tokens: usize,
    /// Why it stopped.
    pub stop: StopReason,
    /// For constrained generation: whether the text is a complete valid document.
    pub complete: bool,
    /// Timings.
    pub timing: Timing,
    /// With [`GenerateOptions::logprobs`]: one entry per generated token (of the answer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub logprobs: Vec<TokenLogprob>,
    /// With [`GenerateOptions::reasoning`]: the thinking, without its markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Of [`Output::completion_tokens`], those of the thinking (its end marker included).
    #[serde(default)]
    pub reasoning_tokens: usize,
}

/// A generation request.
#[derive(Debug, Clone)]
pub struct Request {
    /// The prompt.
    pub prompt: Prompt,
    /// Constrain the output to this JSON Schema.
    pub schema: Option<Value>,
    /// How the schema is put into chat messages.
    pub schema_in_prompt: SchemaInPrompt,
    /// Options.
    pub options: GenerateOptions,
}

impl Request {
    /// A chat request with default options.
    pub fn chat(messages: Vec<Message>) -> Request {
        Request {
            prompt: Prompt::Chat(messages),
            schema: None,
            schema_in_prompt: SchemaInPrompt::default(),
            options: GenerateOptions::default(),
        }
    }

    /// Sets the schema.
    pub fn with_schema(mut self, schema: Value) -> Request {
        self.schema = Some(schema);
        self
    }
}

/// A compiled schema and its mask cache, kept across requests (and shared with the other
/// generators given the same, as a server's batch lanes are).
struct Compiled {
    grammar: Arc<Grammar>,
    masks: Arc<SharedMaskCache>,
}

/// Writes one JSON line per decoding step.
pub type TraceSink = Box<dyn Write + Send>;

/// Generation with one model and one tokenizer: compiled schemas and their mask caches are
/// reused across requests, and so is the model's KV cache for a shared prompt prefix.
pub struct Generator<M: Model> {
    model: M,
    tokenizer: Arc<Tokenizer>,
    kernel: Arc<Kernel>,
    options: Options,
    grammars: LruCache<String, Compiled>,
    /// Tokens whose keys and values are in the model's cache.
    in_cache: Vec<u32>,
    /// Logits buffer: the model's logits, padded with `-inf` to cover every token id.
    logits: Vec<f32>,
    /// Tokens made only of whitespace.
    whitespace: FixedBitSet,
    /// Where the per-step trace goes, if anywhere.
    trace: Option<TraceSink>,
    /// The last prompt evaluated in full and the logits after it. A request with the same
    /// prompt starts from these instead of re-evaluating its last token alone, whose logits
    /// differ in the last bits from a whole-batch evaluation: so the same seed gives the same
    /// text again.
    prompt_logits: (Vec<u32>, Vec<f32>),
    /// Where log probabilities go as they are generated, if anywhere.
    logprob_sink: Option<LogprobSink>,
    /// More variables for the chat template (see [`Generator::set_template_kwargs`]).
    template_kwargs: Option<Value>,
    /// The end marker of a thinking section, when set (see [`Generator::set_reasoning_end`]).
    reasoning_end: Option<String>,
    /// Values that number literals of the schemas' texts were rounded to when read (see
    /// [`Generator::numbers_as_written`]).
    rounded: RoundedNumbers,
}

impl<M: Model> std::fmt::Debug for Generator<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generator")
            .field("model", &self.model.describe())
            .field("vocab", &self.tokenizer.vocab().len())
            .field("grammars", &self.grammars.len())
            .finish()
    }
}

const MASK_CACHE_BYTES: usize = 64 << 20;

/// An empty mask cache for one grammar, of at most 64 MiB, for every generator and request
/// that uses the grammar (the sets of tokens inside strings stay with each request).
pub fn new_mask_cache() -> Arc<SharedMaskCache> {
    Arc::new(SharedMaskCache::new(MASK_CACHE_BYTES))
}

/// The most logits a model may have past its tokenizer's ids (embedding padding) before they
/// are taken to belong to different models; a sixty-fourth of the logits if that is more.
const MAX_PADDING: usize = 1024;

impl<M: Model> Generator<M> {
    /// Pairs `model` with `tokenizer`, checking that their vocabularies agree.
    pub fn new(model: M, tokenizer: Arc<Tokenizer>) -> Result<Generator<M>, GenerateError> {
        let kernel = kernel_for(&tokenizer)?;
        Generator::with_kernel(model, tokenizer, kernel)
    }

    /// [`Generator::new`] with a mask kernel built before for the same tokenizer
    /// ([`kernel_for`]): generators of the same model share one (see [`crate::batch`]).
    pub fn with_kernel(
        model: M,
        tokenizer: Arc<Tokenizer>,
        kernel: Arc<Kernel>,
    ) -> Result<Generator<M>, GenerateError> {
        let vocab = tokenizer.vocab().clone();
        if kernel.vocab().len() != vocab.len() {
            return Err(GenerateError::VocabMismatch {
                model: kernel.vocab().len(),
                tokenizer: vocab.len(),
                detail: "the mask kernel was built for another tokenizer".into(),
            });
        }
        let n_logits = model.vocab_size();
        // A model may pad its embedding past the tokenizer's last id, by a little: a
        // vocabulary far smaller than the logits belongs to another model.
        let padding = n_logits.saturating_sub(vocab.len());
        if padding > MAX_PADDING.max(n_logits / 64) {
            return Err(GenerateError::VocabMismatch {
                model: n_logits,
                tokenizer: vocab.len(),
                detail: format!(
                    "the model has {padding} more logits than the tokenizer has tokens: they \
                     belong to different models"
                ),
            });
        }
        if n_logits < vocab.len() {
            // Tolerate only special tokens past the model's embedding (e.g. multimodal
            // placeholders a text model does not have).
            let extra: Vec<u32> = (n_logits..vocab.len())
                .filter(|&i| TokenId::new(i as u32).is_some_and(|t| !vocab.is_special(t)))
                .map(|i| i as u32)
                .collect();
            if !extra.is_empty() || vocab.len() - n_logits > 1024 {
                return Err(GenerateError::VocabMismatch {
                    model: n_logits,
                    tokenizer: vocab.len(),
                    detail: format!(
                        "{} ordinary token ids past the model's logits, e.g. {:?}",
                        extra.len(),
                        &extra[..extra.len().min(5)]
                    ),
                });
            }
        }
        let mut whitespace = FixedBitSet::with_capacity(vocab.len());
        for (id, bytes) in vocab.iter() {
            if !bytes.is_empty()
                && !vocab.is_special(id)
                && bytes
                    .iter()
                    .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            {
                whitespace.insert(id.as_usize());
            }
        }
        let len = n_logits.max(vocab.len());
        Ok(Generator {
            model,
            tokenizer,
            kernel,
            options: Options::generation(),
            grammars: LruCache::new(NonZeroUsize::new(32).expect("non-zero")),
            in_cache: Vec::new(),
            prompt_logits: (Vec::new(), Vec::new()),
            logits: vec![f32::NEG_INFINITY; len],
            logprob_sink: None,
            template_kwargs: None,
            reasoning_end: None,
            rounded: RoundedNumbers::default(),
            whitespace,
            trace: None,
        })
    }

    /// Compile options used for schemas (default: [`Options::generation`]).
    pub fn set_compile_options(&mut self, options: Options) {
        self.options = options;
        self.grammars.clear();
    }

    /// How JSON generated under a schema is laid out, for the schemas compiled from now on
    /// (default: [`Whitespace::Compact`], no whitespace outside strings;
    /// [`Whitespace::Pretty`] for a fixed indented layout). Tool calls stay compact.
    pub fn set_whitespace(&mut self, whitespace: Whitespace) {
        if self.options.whitespace != whitespace {
            self.set_compile_options(self.options.clone().whitespace(whitespace));
        }
    }

    /// More variables for the chat template from now on (a JSON object, as
    /// `chat_template_kwargs`: `{"enable_thinking": false}` for Qwen 3); `None` for none.
    pub fn set_template_kwargs(&mut self, kwargs: Option<Value>) {
        self.template_kwargs = kwargs;
    }

    /// The end marker of a thinking section for models whose chat template has none in a
    /// form [`reasoning_end_in`] finds (`None`: take it from the template).
    pub fn set_reasoning_end(&mut self, end: Option<String>) {
        self.reasoning_end = end;
    }

    /// The end marker of the model's thinking section: the one set with
    /// [`Generator::set_reasoning_end`], else the chat template's (`</think>`), if any.
    pub fn reasoning_end(&self) -> Option<String> {
        self.reasoning_end.clone().or_else(|| {
            self.tokenizer
                .chat_template()
                .and_then(|t| reasoning_end_in(t.source()))
                .map(str::to_string)
        })
    }

    /// The order in which object members are generated, for the schemas compiled from now on
    /// (default: [`PropertyOrder::Any`]; [`PropertyOrder::Schema`] is the order of each
    /// schema's `properties`, as OpenAI's strict structured outputs promise). Grammars of both
    /// orders stay in the cache side by side, so switching per request costs nothing.
    pub fn set_property_order(&mut self, order: PropertyOrder) {
        self.options.property_order = order;
    }

    /// The cache key of `schema` compiled with the current options.
    pub(crate) fn schema_key(&self, schema: &Value) -> String {
        let key = match self.options.property_order {
            PropertyOrder::Any => schema.to_string(),
            PropertyOrder::Schema => format!("in schema order\0{schema}"),
        };
        if self.rounded.is_empty() {
            key
        } else {
            format!("{:?}\0{key}", self.rounded)
        }
    }

    /// Tells the generator the JSON text that schemas given to it were read from (a schema
    /// file, a tools file), so that a number whose literal was rounded when read is refused
    /// where the schema compares values with it, instead of standing for the short decimal it
    /// rounded to (see [`schema_compiler::Compiler::numbers_as_written`]).
    pub fn numbers_as_written(&mut self, text: &str) {
        self.rounded.extend(&RoundedNumbers::in_text(text));
    }

    /// Compiles `schema` with `options`, refusing the rounded numbers it was told of.
    pub(crate) fn compile_with(
        &self,
        schema: &Value,
        options: &Options,
    ) -> Result<Grammar, schema_compiler::CompileError> {
        Compiler::new(options.clone())
            .rounded_numbers(&self.rounded)
            .compile(schema)
    }

    /// Writes a JSON line per decoding step to `sink` (allowed-token count, forced or sampled,
    /// cache hit, mask time).
    pub fn set_trace(&mut self, sink: Option<TraceSink>) {
        self.trace = sink;
    }

    /// Sends each generated token's [`TokenLogprob`] to `sink` as it is generated, before the
    /// text callback sees its text (when [`GenerateOptions::logprobs`] asks for them).
    pub fn set_logprob_sink(&mut self, sink: Option<LogprobSink>) {
        self.logprob_sink = sink;
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Arc<Tokenizer> {
        &self.tokenizer
    }

    /// The mask kernel.
    pub fn kernel(&self) -> &Arc<Kernel> {
        &self.kernel
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Compiles `schema` (or takes it from the cache); returns the compile time in ms.
    pub fn compile(&mut self, schema: &Value) -> Result<(Arc<Grammar>, f64), GenerateError> {
        let (key, compiled, ms) = self.check_out(schema)?;
        let grammar = compiled.grammar.clone();
        self.grammars.put(key, compiled);
        Ok((grammar, ms))
    }

    /// Takes the grammar of `schema` and its mask cache out of the cache, compiling it when
    /// it is not there (with the compile time in ms, else 0); give them back under the key
    /// returned.
    fn check_out(&mut self, schema: &Value) -> Result<(String, Compiled, f64), GenerateError> {
        let key = self.schema_key(schema);
        if let Some(c) = self.grammars.pop(&key) {
            return Ok((key, c, 0.0));
        }
        let t = Instant::now();
        let grammar = Arc::new(self.compile_with(schema, &self.options)?);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let masks = new_mask_cache();
        Ok((key, Compiled { grammar, masks }, ms))
    }

    /// Takes the grammar and mask cache kept under `key` (for constraints built by this crate
    /// other than a plain schema); give them back with [`Generator::put_compiled`].
    pub(crate) fn take_compiled(
        &mut self,
        key: &str,
    ) -> Option<(Arc<Grammar>, Arc<SharedMaskCache>)> {
        self.grammars.pop(key).map(|c| (c.grammar, c.masks))
    }

    /// Keeps a grammar and its mask cache under `key` for later requests (a new cache when
    /// `cache` is `None`).
    pub(crate) fn put_compiled(
        &mut self,
        key: String,
        grammar: Arc<Grammar>,
        masks: Option<Arc<SharedMaskCache>>,
    ) {
        let masks = masks.unwrap_or_else(new_mask_cache);
        self.grammars.put(key, Compiled { grammar, masks });
    }

    /// The options schemas are compiled with (see [`Generator::set_compile_options`]).
    pub fn compile_options(&self) -> &Options {
        &self.options
    }

    /// Keeps `grammar`, compiled elsewhere from `schema`, for the requests that use `schema`
    /// (so [`Generator::compile`] and [`Generator::generate`] find it without compiling).
    /// Returns `false`, and keeps nothing, when the grammar was compiled with other options
    /// than [`Generator::compile_options`] (the time a compile may take aside: it decides
    /// whether a grammar is built, not which); a grammar already kept for `schema` stays, with
    /// its mask cache.
    pub fn add_compiled(&mut self, schema: &Value, grammar: Arc<Grammar>) -> bool {
        self.add_shared(schema, grammar, new_mask_cache())
    }

    /// [`Generator::add_compiled`], with `masks` as the grammar's mask cache: give every
    /// generator the same (a server's batch lanes), and a state one of them met costs the
    /// others a copy (see [`new_mask_cache`]).
    pub fn add_shared(
        &mut self,
        schema: &Value,
        grammar: Arc<Grammar>,
        masks: Arc<SharedMaskCache>,
    ) -> bool {
        let mut theirs = grammar.options().clone();
        theirs.limits.max_compile_time = self.options.limits.max_compile_time;
        if theirs != self.options {
            return false;
        }
        let key = self.schema_key(schema);
        if self.grammars.get(&key).is_none() {
            self.put_compiled(key, grammar, Some(masks));
        }
        true
    }

    /// Renders and tokenizes a prompt.
    pub fn prompt_tokens(
        &self,
        prompt: &Prompt,
        schema: Option<&Value>,
        schema_in_prompt: &SchemaInPrompt,
        tools: Option<&Value>,
    ) -> Result<Vec<TokenId>, GenerateError> {
        match prompt {
            Prompt::Text(text) => self.tokenizer.encode(text, true),
            Prompt::Chat(messages) => {
                let mut messages = messages.clone();
                if let Some(schema) = schema {
                    inject_schema(&mut messages, schema, schema_in_prompt);
                }
                match self.tokenizer.chat_template() {
                    Some(t) => {
                        let text =
                            t.render_with(&messages, true, tools, self.template_kwargs.as_ref())?;
                        self.tokenizer.encode(&text, false)
                    }
                    None => {
                        let text = messages
                            .iter()
                            .map(|m| m.content.as_str())
                            .collect::<Vec<_>>()
                            .join("\n\n");
                        self.tokenizer.encode(&format!("{text}\n"), true)
                    }
                }
            }
        }
    }

    /// Runs a request, calling `on_text` with each new piece of text; `on_text` returns
    /// `false` to cancel (for example when a client disconnects). A thinking section
    /// ([`GenerateOptions::reasoning`]) is returned in [`Output::reasoning`].
    pub fn generate(
        &mut self,
        request: &Request,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Output, GenerateError> {
        self.generate_thinking(request, &mut |_| true, on_text)
    }

    /// [`Generator::generate`], with the thinking streamed to `on_reasoning` as it is
    /// generated (which returns `false` to cancel).
    pub fn generate_thinking(
        &mut self,
        request: &Request,
        on_reasoning: &mut dyn FnMut(&str) -> bool,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Output, GenerateError> {
        let prompt = self.prompt_tokens(
            &request.prompt,
            request.schema.as_ref(),
            &request.schema_in_prompt,
            None,
        )?;
        let Some(reasoning) = &request.options.reasoning else {
            return self.answer(request, &prompt, &request.options, on_text);
        };
        let mut thought = self.think(&prompt, reasoning, &request.options, on_reasoning)?;
        if thought.cancelled {
            return Ok(thought.into_cancelled());
        }
        let options = GenerateOptions {
            max_tokens: thought.tokens_left(request.options.max_tokens),
            ..request.options.clone()
        };
        let after = std::mem::take(&mut thought.prompt);
        let mut out = self.answer(request, &after, &options, on_text)?;
        thought.add_to(&mut out, prompt.len());
        Ok(out)
    }

    /// Generates the thinking section after `prompt`, unconstrained, up to `r.end` or the
    /// budget (then the end marker is written as if generated). The text streamed to
    /// `on_reasoning` never includes the marker, nor a leading `<think>` tag.
    pub(crate) fn think(
        &mut self,
        prompt: &[TokenId],
        r: &Reasoning,
        opts: &GenerateOptions,
        on_reasoning: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Thought, GenerateError> {
        let budget = r.budget.min(opts.max_tokens.saturating_sub(1)).max(1);
        let thinking = GenerateOptions {
            max_tokens: budget,
            stop: vec![r.end.clone()],
            logprobs: None,
            ignore_eos: false,
            reasoning: None,
            ..opts.clone()
        };
        // Text is held back while it may still be the start of the marker (or of the opening
        // tag), so that neither reaches the stream.
        let mut held = String::new();
        let mut started = false;
        let mut ended = false;
        let output = {
            let mut on_piece = |piece: &str| {
                if ended {
                    return true;
                }
                held.push_str(piece);
                if !started {
                    let trimmed = held.trim_start();
                    if trimmed.is_empty() || THINK_OPEN.starts_with(trimmed) {
                        return true;
                    }
                    held = trimmed
                        .strip_prefix(THINK_OPEN)
                        .unwrap_or(trimmed)
                        .to_string();
                    started = true;
                }
                let out = if let Some(at) = held.find(&r.end) {
                    ended = true;
                    let out = held[..at].to_string();
                    held.clear();
                    out
                } else {
                    let keep = (1..r.end.len().min(held.len() + 1))
                        .rev()
                        .find(|&n| {
                            held.is_char_boundary(held.len() - n)
                                && r.end.starts_with(&held[held.len() - n..])
                        })
                        .unwrap_or(0);
                    let cut = held.len() - keep;
                    let out = held[..cut].to_string();
                    held.drain(..cut);
                    out
                };
                out.is_empty() || on_reasoning(&out)
            };
            self.run::<Matcher>(prompt, None, &thinking, &mut on_piece)?
        };
        let cancelled = output.stop == StopReason::Cancelled;
        if !cancelled && !ended && started && !held.is_empty() {
            // No marker came: what was held back was thinking after all.
            on_reasoning(&held);
        }
        let text = output.text.trim_start();
        let text = if THINK_OPEN.starts_with(text) {
            // Nothing but (part of) the opening tag: the budget ran out on it.
            ""
        } else {
            text.strip_prefix(THINK_OPEN).unwrap_or(text)
        };
        let text = text.trim().to_string();
        // The thought, then the marker (written here when the budget ran out or the model
        // ended its turn first), re-encoded: the prefix the model evaluated stays cached.
        let mut thought = prompt.to_vec();
        thought.extend(
            self.tokenizer
                .encode(&format!("{}{}", output.text, r.end), false)?,
        );
        let tokens = if output.stop == StopReason::Stop {
            output.completion_tokens
        } else {
            output.completion_tokens + self.tokenizer.encode(&r.end, false)?.len()
        };
        Ok(Thought {
            prompt: thought,
            tokens,
            text,
            cancelled,
            output,
        })
    }

    /// The answer after `prompt`: constrained by the request's schema, if any.
    fn answer(
        &mut self,
        request: &Request,
        prompt: &[TokenId],
        options: &GenerateOptions,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Output, GenerateError> {
        match &request.schema {
            Some(schema) => {
                let (key, compiled, compile_ms) = self.check_out(schema)?;
                let recognizer = Matcher::new(compiled.grammar.clone());
                let session = Session::new(self.kernel.clone(), recognizer);
                let r = self.run(prompt, Some((session, &compiled.masks)), options, on_text);
                self.grammars.put(key, compiled);
                let mut out = r?;
                out.timing.compile_ms = compile_ms;
                Ok(out)
            }
            None => self.run::<Matcher>(prompt, None, options, on_text),
        }
    }

    /// Evaluates `prompt`, reusing the longest prefix already in the model's cache.
    fn prefill(&mut self, prompt: &[TokenId]) -> Result<(), GenerateError> {
        let ids: Vec<u32> = prompt.iter().map(|t| t.as_u32()).collect();
        if ids.len() >= self.model.context_size() {
            return Err(GenerateError::PromptTooLong {
                prompt: ids.len(),
                context: self.model.context_size(),
            });
        }
        let common = self
            .in_cache
            .iter()
            .zip(&ids)
            .take_while(|(a, b)| a == b)
            .count();
        if common == ids.len()
            && self.prompt_logits.0 == ids
            && self.model.logits_depend_only_on_tokens()
        {
            self.model.truncate(common)?;
            self.in_cache.truncate(common);
            let saved = &self.prompt_logits.1;
            self.logits[..saved.len()].copy_from_slice(saved);
            return Ok(());
        }
        // At least the last prompt token is evaluated, for its logits.
        let keep = common.min(ids.len().saturating_sub(1));
        self.model.truncate(keep)?;
        self.in_cache.truncate(keep);
        let logits = self.model.forward(&ids[keep..])?;
        self.logits[..logits.len()].copy_from_slice(logits);
        let (prompt, saved) = &mut self.prompt_logits;
        saved.clear();
        saved.extend_from_slice(logits);
        self.in_cache.extend_from_slice(&ids[keep..]);
        *prompt = ids;
        Ok(())
    }

    fn feed(&mut self, tokens: &[TokenId]) -> Result<(), GenerateError> {
        self.feed_with(tokens, &mut || {})
    }

    /// [`Generator::feed`], running `meanwhile` while the model evaluates the tokens.
    fn feed_with(
        &mut self,
        tokens: &[TokenId],
        meanwhile: &mut dyn FnMut(),
    ) -> Result<(), GenerateError> {
        let needed = self.in_cache.len() + tokens.len();
        if needed > self.model.context_size() {
            return Err(GenerateError::Model(
                crate::model::ModelError::ContextOverflow {
                    needed,
                    capacity: self.model.context_size(),
                },
            ));
        }
        // The cache of evaluated ids grows by these ids, which the model reads from its end.
        let start = self.in_cache.len();
        self.in_cache.extend(tokens.iter().map(|t| t.as_u32()));
        match self.model.forward_with(&self.in_cache[start..], meanwhile) {
            Ok(logits) => {
                self.logits[..logits.len()].copy_from_slice(logits);
                Ok(())
            }
            Err(e) => {
                self.in_cache.truncate(start);
                Err(e.into())
            }
        }
    }

    /// The tokens of the shortest valid completion of the constrained text so far.
    fn closing_tokens<R: Recognizer>(&self, session: &mut Session<R>) -> Option<Vec<TokenId>> {
        let bytes = session.recognizer_mut().completion(1024)?;
        self.kernel.longest_tokens(&bytes)
    }

    /// Writes the line `line` builds to the trace, if one is set (else builds nothing).
    fn trace_with(&mut self, line: impl FnOnce() -> Value) {
        if let Some(t) = &mut self.trace {
            let _ = writeln!(t, "{}", line());
        }
    }

    /// The decode loop over a prompt, with an optional constraint: a session, and the mask
    /// cache of its grammar (see [`new_mask_cache`]).
    pub fn run<R: Recognizer>(
        &mut self,
        prompt: &[TokenId],
        constraint: Option<(Session<R>, &SharedMaskCache)>,
        opts: &GenerateOptions,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Output, GenerateError> {
        let t0 = Instant::now();
        self.prefill(prompt)?;
        let prompt_ms = t0.elapsed().as_secs_f64() * 1e3;
        let t1 = Instant::now();
        let mut decoder = Decoder::new(self, opts, on_text)?;
        let (stop, complete) = decoder.run(self, constraint)?;
        let decode_ms = t1.elapsed().as_secs_f64() * 1e3;
        Ok(decoder.output(stop, complete, prompt.len(), prompt_ms, decode_ms))
    }
}

/// The mask kernel of `tokenizer`'s vocabulary, for [`Generator::with_kernel`].
pub fn kernel_for(tokenizer: &Tokenizer) -> Result<Arc<Kernel>, GenerateError> {
    Kernel::new(tokenizer.vocab().clone(), TrieKind::Flat)
        .map(Arc::new)
        .map_err(|e| GenerateError::Tokenizer(e.to_string()))
}

/// [`kernel_for`], with the tables kept in `dir` between processes: read from there when a
/// file for this vocabulary is there and good, else built and written there (see
/// [`Kernel::cached`]; a file that cannot be read or written is logged and built around).
pub fn kernel_cached(
    tokenizer: &Tokenizer,
    dir: &std::path::Path,
) -> Result<Arc<Kernel>, GenerateError> {
    Kernel::cached(tokenizer.vocab().clone(), TrieKind::Flat, dir)
        .map(|(kernel, _)| Arc::new(kernel))
        .map_err(|e| GenerateError::Tokenizer(e.to_string()))
}

/// Copies `logits` into `raw`, puts the `n` likeliest tokens (with their logits) into `top`,
/// likeliest first, and returns the log of the sum of the exponentials of the finite logits
/// (`-inf` when there are none).
fn snapshot(logits: &[f32], n: usize, raw: &mut Vec<f32>, top: &mut Vec<(u32, f32)>) -> f32 {
    raw.clear();
    raw.extend_from_slice(logits);
    top.clear();
    let max = logits
        .iter()
        .copied()
        .filter(|l| l.is_finite())
        .fold(f32::NEG_INFINITY, f32::max);
    if max == f32::NEG_INFINITY {
        return max;
    }
    let mut sum = 0.0f64;
    for (i, &l) in logits.iter().enumerate() {
        if !l.is_finite() {
            continue;
        }
        sum += f64::from(l - max).exp();
        if n > 0 && (top.len() < n || l > top[top.len() - 1].1) {
            let at = top.partition_point(|&(_, v)| v >= l);
            top.insert(at, (i as u32, l));
            top.truncate(n);
        }
    }
    max + sum.ln() as f32
}

/// The bytes of token `id` (empty past the vocabulary).
fn token_bytes(vocab: &Vocabulary, id: u32) -> Vec<u8> {
    TokenId::new(id)
        .and_then(|t| vocab.get(t))
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

/// The entry of a sampled token, from the [`snapshot`] of its step.
fn sampled_logprob(
    vocab: &Vocabulary,
    token: TokenId,
    raw: &[f32],
    top: &[(u32, f32)],
    lse: f32,
) -> TokenLogprob {
    let lp = |l: f32| (l - lse).min(0.0);
    let logit = raw
        .get(token.as_usize())
        .copied()
        .unwrap_or(f32::NEG_INFINITY);
    TokenLogprob {
        token: token.as_u32(),
        bytes: vocab.bytes(token).to_vec(),
        logprob: lp(logit),
        top: top
            .iter()
            .map(|&(t, l)| (t, token_bytes(vocab, t), lp(l)))
            .collect(),
    }
}

/// The entry of a token the constraint forced: probability 1.
fn forced_logprob(vocab: &Vocabulary, token: TokenId) -> TokenLogprob {
    let bytes = vocab.bytes(token).to_vec();
    TokenLogprob {
        token: token.as_u32(),
        bytes: bytes.clone(),
        logprob: 0.0,
        top: vec![(token.as_u32(), bytes, 0.0)],
    }
}
