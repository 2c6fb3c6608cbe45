//! `stencil serve`: the OpenAI-compatible server on the default (or a given) model.

use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Result, anyhow};
use generate::{Generator, Lane, Tokenizer};
use mask_kernel::Kernel;
use server::ServerConfig;
use tracing_subscriber::EnvFilter;

use crate::generate::{JsonArgs, ModelArgs};
use crate::runtime::Runtime;

/// Arguments of `stencil serve`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    json_args: JsonArgs,
    /// The text that ends a reasoning model's thinking section, where its chat template has
    /// none that the server finds (`</think>` is found): the thinking is generated freely up
    /// to it, returned as `reasoning_content`, and the schema applies after it.
    #[arg(long, value_name = "MARKER")]
    reasoning_end: Option<String>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port to listen on (0: any free port; the log says which).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Requests generated at once (continuous batching): each has its own sequence, with
    /// `--ctx` positions of KV cache, and the model evaluates their next tokens together.
    /// With `--runtime mlx`, 1 (MLX evaluates one sequence at a time).
    #[arg(long, default_value_t = server::DEFAULT_PARALLEL)]
    parallel: usize,
    /// Requests that may wait while `--parallel` generate; one more is answered 503.
    #[arg(long, default_value_t = 32)]
    queue: usize,
    /// Largest request body in bytes; a larger one is answered 413.
    #[arg(long, default_value_t = 1 << 20)]
    max_body: usize,
    /// Most completion tokens a request may ask for (more is a 400); also the budget of a
    /// request that does not say.
    #[arg(long, default_value_t = 2048)]
    max_tokens_limit: usize,
    /// The model id clients see (default: the model file's name without `.gguf`).
    #[arg(long)]
    model_id: Option<String>,
    /// On SIGINT/SIGTERM, seconds that requests in flight may still run before they are
    /// cancelled.
    #[arg(long, default_value_t = 10.0)]
    shutdown_grace: f64,
    /// Require `Authorization: Bearer KEY` on every /v1/* route (default: the
    /// STENCIL_API_KEY environment variable, if set).
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// A host name to serve besides localhost and IP addresses (repeatable; `*` for any):
    /// requests with another `Host` are refused, against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Seconds a client may take to send a request's headers (also the most idle time of a
    /// kept-alive connection).
    #[arg(long, default_value_t = 10.0)]
    header_timeout: f64,
    /// Seconds a client may take to send a request's body; then a 408.
    #[arg(long, default_value_t = 30.0)]
    body_timeout: f64,
    /// Connections served at once; more wait to be accepted.
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// Seconds one chat completion may take, queue included; then a 504.
    #[arg(long, default_value_t = 600.0)]
    request_timeout: f64,
    /// Seconds one schema may take to compile; then a 400 (`schema_compile_timeout`).
    #[arg(long, default_value_t = 10.0)]
    compile_timeout: f64,
    /// Schemas compiled at once, off the model thread.
    #[arg(long, default_value_t = 2)]
    compile_threads: usize,
}

/// Logical CPUs of this machine.
fn cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

/// Seconds as a duration (negative or not a number: zero; too large: a year).
fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s.max(0.0)).unwrap_or(Duration::from_secs(365 * 24 * 3600))
}

pub fn run(args: Args) -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let model_path = args.model.model_path();
    let model_id = args.model_id.clone().unwrap_or_else(|| {
        model_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "stencil".into())
    });
    let config = ServerConfig {
        host: args.host,
        port: args.port,
        parallel: args.parallel.max(1),
        // llama.cpp's threads spin at their barriers: a slot that wakes up to compute a mask
        // while they run on every core stalls them all.
        overlap_masks: args.model.threads_batch() < cpus(),
        queue: args.queue,
        max_body: args.max_body,
        max_tokens: args.max_tokens_limit,
        model_id,
        shutdown_grace: seconds(args.shutdown_grace),
        api_key: args
            .api_key
            .or_else(|| std::env::var("STENCIL_API_KEY").ok())
            .filter(|k| !k.is_empty()),
        allowed_hosts: args.allowed_hosts,
        header_timeout: seconds(args.header_timeout),
        body_timeout: seconds(args.body_timeout),
        max_connections: args.max_connections,
        request_timeout: seconds(args.request_timeout),
        compile_timeout: seconds(args.compile_timeout),
        compile_threads: args.compile_threads,
    };
    if args.model.runtime == Runtime::Mlx && config.parallel > 1 {
        tracing::warn!(
            parallel = config.parallel,
            "the MLX runtime evaluates one sequence at a time: serving one request at a time"
        );
    }
    tracing::info!(model = %model_path.display(), "loading the model");
    // The tokenizer and kernel come with the model (a GGUF file's vocabulary is read once,
    // beside the weights); the slots are made once it is loaded. A reload after a restart
    // reads the same files, and the first ones stay.
    let vocabulary: Arc<OnceLock<(Arc<Tokenizer>, Arc<Kernel>)>> = Arc::default();
    let loaded = vocabulary.clone();
    let (model, json_args, reasoning_end) = (args.model, args.json_args, args.reasoning_end);
    server::serve(
        config,
        move |sequences| -> Result<_> {
            let (model, tokenizer, kernel) = model.load_batched(sequences)?;
            let _ = loaded.set((tokenizer, kernel));
            Ok(model)
        },
        move |lane: Lane| -> Result<_> {
            let (tokenizer, kernel) = vocabulary
                .get()
                .ok_or_else(|| anyhow!("a slot was made before the model was loaded"))?;
            let mut generator = Generator::with_kernel(lane, tokenizer.clone(), kernel.clone())?;
            json_args.apply(&mut generator);
            generator.set_reasoning_end(reasoning_end.clone());
            Ok(generator)
        },
    )?;
    Ok(())
}
