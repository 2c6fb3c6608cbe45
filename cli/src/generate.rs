//! `stencil generate`: constrained generation from the command line.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use generate::{
    BatchModel, GenerateOptions, Generator, Message, Prompt, Request, SchemaInPrompt, Tokenizer,
};
use runtime_llama::{LlamaConfig, LlamaModel};
use schema_compiler::{PropertyOrder, Whitespace};
use serde_json::Value;

use crate::runtime::{AnyModel, Runtime};

/// A model with its tokenizer and the mask kernel of that.
pub type WithVocabulary<M> = (M, Arc<Tokenizer>, Arc<mask_kernel::Kernel>);

/// Where assets live: `$STENCIL_ASSETS`, else `./assets`.
pub fn assets_dir() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("assets"))
}

/// The default model under the assets directory: SmolLM2-135M-Instruct, a small instruct
/// model that follows prompts (`cargo xtask fetch-assets`).
pub fn default_model() -> PathBuf {
    assets_dir().join("models/smollm2-135m-instruct-q4_1.gguf")
}

/// The default model for MLX: the f16 folder `cargo xtask convert-model` writes from the
/// default GGUF.
pub fn default_mlx_model() -> PathBuf {
    assets_dir().join("models/gemma-3-270m-f16")
}

/// The tokenizer of the MLX default model when its folder has none.
fn gemma_tokenizer() -> PathBuf {
    assets_dir().join("tokenizers/gemma3/tokenizer.json")
}

/// Model and tokenizer arguments shared by the commands that run a model.
#[derive(clap::Args, Clone)]
pub struct ModelArgs {
    /// The runtime: llama.cpp on a GGUF file, or MLX on a safetensors folder (a build with the
    /// `mlx` feature).
    #[arg(long, value_enum, default_value_t = Runtime::Llama)]
    pub runtime: Runtime,
    /// GGUF model, or with `--runtime mlx` a model folder (default: SmolLM2-135M-Instruct,
    /// fetched by `cargo xtask fetch-assets`; for MLX the Gemma 3 270M folder `cargo xtask
    /// convert-model` writes).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A `tokenizer.json` to use instead of the model's own vocabulary (a GGUF file carries
    /// its own; it is checked against the model and refused if it belongs to another). With
    /// `--runtime mlx`, default: the model folder's own, else the Gemma 3 tokenizer.
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Context size in tokens.
    #[arg(long, default_value_t = 4096)]
    pub ctx: u32,
    /// Threads for llama.cpp (default: what measures best on this machine).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Threads for llama.cpp's multi-token steps: prompts, and the batched steps of `stencil
    /// serve --parallel` (default: `--threads`, else what measures best on this machine).
    #[arg(long)]
    pub threads_batch: Option<u32>,
}

impl ModelArgs {
    /// The model file or folder: `--model`, else the runtime's default.
    pub fn model_path(&self) -> PathBuf {
        self.model.clone().unwrap_or_else(|| match self.runtime {
            Runtime::Llama => default_model(),
            Runtime::Mlx => default_mlx_model(),
        })
    }

    /// Threads llama.cpp evaluates multi-token steps with.
    pub fn threads_batch(&self) -> u32 {
        self.threads_batch
            .or(self.threads)
            .unwrap_or_else(|| LlamaConfig::default().n_threads_batch)
    }

    /// Loads the model and tokenizer into a generator.
    pub fn load(&self) -> Result<Generator<AnyModel>> {
        let (model, tokenizer, kernel) = self.load_parts(1, true)?;
        Ok(Generator::with_kernel(model, tokenizer, kernel)?)
    }

    /// Loads the model to evaluate up to `sequences` sequences together (llama.cpp gives each
    /// its own KV cells in one context; MLX evaluates one sequence, batch size 1), with its
    /// tokenizer and mask kernel, read and checked as [`ModelArgs::load`] does: a GGUF file's
    /// vocabulary is read once, beside the weights.
    pub fn load_batched(&self, sequences: usize) -> Result<WithVocabulary<Box<dyn BatchModel>>> {
        let n_seq = u32::try_from(sequences.max(1))
            .map_err(|_| anyhow!("{sequences} sequences are too many"))?;
        let (model, tokenizer, kernel) = self.load_parts(n_seq, false)?;
        let model: Box<dyn BatchModel> = match model {
            AnyModel::Llama(model) => Box::new(model),
            #[cfg(feature = "mlx")]
            model @ AnyModel::Mlx(_) => Box::new(generate::PerSequence::new(vec![model])?),
        };
        Ok((model, tokenizer, kernel))
    }

    /// The model for `sequences` sequences (with `overlap`, single-sequence evaluation runs
    /// beside the next token's mask), its tokenizer and the mask kernel of that.
    fn load_parts(&self, sequences: u32, overlap: bool) -> Result<WithVocabulary<AnyModel>> {
        let (model, tokenizer) = match self.runtime {
            Runtime::Llama if self.tokenizer.is_none() => {
                // The file's own tokenizer: its vocabulary is indexed beside the weights.
                let (model, tokenizer, kernel) = self.load_llama_with_kernel(sequences, overlap)?;
                return Ok((AnyModel::Llama(model), Arc::new(tokenizer), kernel));
            }
            Runtime::Llama => {
                let model = self.load_llama(sequences, overlap)?;
                let own = model.tokenizer().with_context(|| {
                    format!("reading the vocabulary of {}", model.path().display())
                })?;
                (AnyModel::Llama(model), self.checked_override(own)?)
            }
            Runtime::Mlx => (self.load_mlx()?, self.load_tokenizer()?),
        };
        let kernel = kernel(&tokenizer)?;
        Ok((model, Arc::new(tokenizer), kernel))
    }

    /// The model's tokenizer: for llama.cpp the GGUF file's own vocabulary (or `--tokenizer`
    /// once checked against it); for MLX `--tokenizer`, else the folder's own, else Gemma 3's.
    pub fn load_tokenizer(&self) -> Result<Tokenizer> {
        match self.runtime {
            Runtime::Llama => self.llama_tokenizer(),
            Runtime::Mlx => {
                let path = self.tokenizer.clone().unwrap_or_else(|| {
                    let own = self.model_path().join("tokenizer.json");
                    if own.is_file() {
                        own
                    } else {
                        gemma_tokenizer()
                    }
                });
                Ok(Tokenizer::from_file(&path)?)
            }
        }
    }

    /// The GGUF file's own tokenizer, or the `--tokenizer` override once it is checked against
    /// the file's vocabulary.
    fn llama_tokenizer(&self) -> Result<Tokenizer> {
        let model_path = self.model_path();
        let own = runtime_llama::load_tokenizer(&model_path)
            .with_context(|| format!("reading the vocabulary of {}", model_path.display()))?;
        self.checked_override(own)
    }

    /// `own`, the GGUF file's tokenizer, or the `--tokenizer` override once it is checked
    /// against it.
    fn checked_override(&self, own: Tokenizer) -> Result<Tokenizer> {
        let model_path = self.model_path();
        let Some(path) = &self.tokenizer else {
            return Ok(own);
        };
        let other = Tokenizer::from_file(path)?;
        runtime_llama::check_tokenizer(own.vocab(), other.vocab()).map_err(|mismatch| {
            anyhow!(
                "the tokenizer {} does not belong to the model {}: {mismatch}",
                path.display(),
                model_path.display()
            )
        })?;
        Ok(other)
    }

    #[cfg(feature = "mlx")]
    fn load_mlx(&self) -> Result<AnyModel> {
        use runtime_mlx::{MlxConfig, MlxModel};
        let dir = self.model_path();
        if !dir.join("config.json").is_file() {
            return Err(anyhow!(
                "model folder {} not found or without config.json (run `cargo xtask convert-model`, or pass --model)",
                dir.display()
            ));
        }
        let config = MlxConfig::default().with_n_ctx(self.ctx as usize);
        let model =
            MlxModel::load(&dir, config).with_context(|| format!("loading {}", dir.display()))?;
        Ok(AnyModel::Mlx(model))
    }

    #[cfg(not(feature = "mlx"))]
    fn load_mlx(&self) -> Result<AnyModel> {
        Err(anyhow!(crate::runtime::WITHOUT_MLX))
    }

    /// Loads the GGUF model for `sequences` sequences; with `overlap`, single-sequence
    /// evaluation runs beside the next token's mask (see [`LlamaConfig::overlap`]).
    fn load_llama(&self, sequences: u32, overlap: bool) -> Result<LlamaModel> {
        let (model_path, config) = self.llama_config(sequences, overlap)?;
        LlamaModel::load(&model_path, config)
            .with_context(|| format!("loading {}", model_path.display()))
    }

    /// Loads the GGUF model as [`ModelArgs::load_llama`] does, with its own tokenizer and the
    /// mask kernel of it, the kernel's tables kept in the download cache (see
    /// [`LlamaModel::load_with_kernel`]).
    fn load_llama_with_kernel(
        &self,
        sequences: u32,
        overlap: bool,
    ) -> Result<(LlamaModel, Tokenizer, Arc<mask_kernel::Kernel>)> {
        let (model_path, config) = self.llama_config(sequences, overlap)?;
        let tables = generate::default_tables_dir();
        LlamaModel::load_with_kernel(&model_path, config, tables.as_deref())
            .with_context(|| format!("loading {}", model_path.display()))
    }

    /// The GGUF file to load and the settings to load it with.
    fn llama_config(&self, sequences: u32, overlap: bool) -> Result<(PathBuf, LlamaConfig)> {
        let model_path = self.model_path();
        if !model_path.is_file() {
            return Err(anyhow!(
                "model file {} not found (run `cargo xtask fetch-assets`, or pass --model)",
                model_path.display()
            ));
        }
        let mut config = LlamaConfig::default()
            .with_n_ctx(self.ctx)
            .with_sequences(sequences)
            .with_overlap(overlap);
        let threads = self.threads.unwrap_or(config.n_threads);
        config = config.with_threads(threads, self.threads_batch());
        Ok((model_path, config))
    }
}

/// The mask kernel of `tokenizer`, its tables kept in the download cache between runs
/// ([`generate::default_tables_dir`]), or built in memory where there is no such cache.
pub fn kernel(tokenizer: &Tokenizer) -> Result<Arc<mask_kernel::Kernel>> {
    Ok(match generate::default_tables_dir() {
        Some(dir) => generate::kernel_cached(tokenizer, &dir)?,
        None => generate::kernel_for(tokenizer)?,
    })
}

/// How JSON generated under a schema is laid out (`--whitespace`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// No whitespace outside strings: `{"a":1,"b":[true]}`.
    #[default]
    Compact,
    /// Whitespace as the model likes it: at most one line break and 16 spaces between tokens.
    Flexible,
    /// Exactly the indented layout of `serde_json::to_string_pretty` (two spaces per level).
    Pretty,
}

impl Layout {
    /// The schema compiler's whitespace policy.
    pub fn whitespace(self) -> Whitespace {
        match self {
            Layout::Compact => Whitespace::Compact,
            Layout::Flexible => Whitespace::Flexible {
                max_newlines: 1,
                max_spaces: 16,
            },
            Layout::Pretty => Whitespace::Pretty,
        }
    }
}

/// Arguments shared by the commands that generate JSON under a schema.
#[derive(clap::Args, Clone)]
pub struct JsonArgs {
    /// Whitespace outside strings in JSON generated under a schema: `compact` (none),
    /// `pretty` (a fixed indented layout, two spaces per level) or `flexible` (up to the model:
    /// at most one line break and 16 spaces between tokens). Tool calls are always compact.
    #[arg(long, value_enum, default_value_t = Layout::Compact)]
    pub whitespace: Layout,
    /// The order of object members in JSON generated under a schema: `any`, or `schema` (the
    /// order of each object's `properties`, the other members after them, as OpenAI's strict
    /// structured outputs promise).
    #[arg(long, value_enum, default_value_t = MemberOrder::Any)]
    pub property_order: MemberOrder,
}

/// The order of object members (`--property-order`).
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemberOrder {
    /// Any order.
    #[default]
    Any,
    /// The order of the schema's `properties`; the other members after them.
    Schema,
}

impl JsonArgs {
    /// Sets the generator's whitespace policy and member order for the schemas it compiles.
    pub fn apply<M: generate::Model>(&self, generator: &mut Generator<M>) {
        generator.set_whitespace(self.whitespace.whitespace());
        generator.set_property_order(match self.property_order {
            MemberOrder::Any => PropertyOrder::Any,
            MemberOrder::Schema => PropertyOrder::Schema,
        });
    }
}

/// Arguments of `stencil generate`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    json_args: JsonArgs,
    /// JSON Schema: a file path or inline JSON. Without it, generation is unconstrained.
    #[arg(long)]
    schema: Option<String>,
    /// The user prompt.
    #[arg(long)]
    prompt: String,
    /// A system message.
    #[arg(long)]
    system: Option<String>,
    /// Plain completion: no chat template, the prompt as raw text.
    #[arg(long)]
    raw: bool,
    /// Do not put the schema into the prompt (unless a `#!JSON_SCHEMA!#` placeholder asks).
    #[arg(long)]
    no_schema_in_prompt: bool,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    temp: f32,
    /// Nucleus sampling.
    #[arg(long, default_value_t = 1.0)]
    top_p: f32,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Most tokens to generate.
    #[arg(long, default_value_t = 512)]
    max_tokens: usize,
    /// Write one JSON line per decoding step here.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Print the result and statistics as JSON on stdout instead of streaming text.
    #[arg(long)]
    json: bool,
}

/// Reads a schema given as a path or as inline JSON, with its text.
pub fn read_schema(s: &str) -> Result<(Value, String)> {
    let text = if s.trim_start().starts_with('{')
        || s.trim_start().starts_with('[')
        || s.trim() == "true"
        || s.trim() == "false"
    {
        s.to_string()
    } else {
        std::fs::read_to_string(s).with_context(|| format!("reading schema file {s}"))?
    };
    let schema =
        serde_json::from_str(&text).with_context(|| format!("schema is not valid JSON: {s}"))?;
    Ok((schema, text))
}

pub fn run(args: Args) -> Result<()> {
    let read = args.schema.as_deref().map(read_schema).transpose()?;
    let mut generator = args.model.load()?;
    args.json_args.apply(&mut generator);
    let schema = read.map(|(schema, text)| {
        generator.numbers_as_written(&text);
        schema
    });
    if let Some(path) = &args.trace {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        generator.set_trace(Some(Box::new(std::io::BufWriter::new(f))));
    }
    let prompt = if args.raw {
        Prompt::Text(args.prompt.clone())
    } else {
        let mut messages = Vec::new();
        if let Some(s) = &args.system {
            messages.push(Message::new("system", s.clone()));
        }
        messages.push(Message::new("user", args.prompt.clone()));
        Prompt::Chat(messages)
    };
    let mut options = GenerateOptions {
        max_tokens: args.max_tokens,
        seed: args.seed,
        ..GenerateOptions::default()
    };
    options.sampler.temperature = args.temp;
    options.sampler.top_p = args.top_p;
    let request = Request {
        prompt,
        schema,
        schema_in_prompt: if args.no_schema_in_prompt {
            SchemaInPrompt::PlaceholderOnly
        } else {
            SchemaInPrompt::Auto
        },
        options,
    };
    let mut stdout = std::io::stdout().lock();
    let json = args.json;
    let out = generator.generate(&request, &mut |piece| {
        if !json {
            let _ = stdout.write_all(piece.as_bytes());
            let _ = stdout.flush();
        }
        true
    })?;
    drop(stdout);
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!();
    }
    let t = &out.timing;
    eprintln!(
        "stop: {:?}, complete: {}, prompt {} tokens in {:.0} ms, {} tokens ({} forced) in {:.0} ms = {:.1} tokens/s, mask {:.1} µs/token, compile {:.2} ms",
        out.stop,
        out.complete,
        out.prompt_tokens,
        t.prompt_ms,
        out.completion_tokens,
        out.forced_tokens,
        t.decode_ms,
        t.tokens_per_s,
        t.mask_us_mean,
        t.compile_ms
    );
    if request.schema.is_some() && !out.complete {
        return Err(anyhow!(
            "the document is incomplete: generation stopped ({:?}) after {} tokens before the \
             schema's document could be closed (raise --max-tokens)",
            out.stop,
            out.completion_tokens
        ));
    }
    Ok(())
}
