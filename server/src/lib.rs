//! An OpenAI-compatible HTTP server for constrained generation and tool calling.
//!
//! Point an OpenAI client at it and ask for JSON that follows a schema
//! (`response_format: {"type": "json_schema", …}`), any JSON object (`json_object`), plain text,
//! or tool calls (`tools`, `tool_choice`): every answer under a schema is valid by
//! construction, because the [`generate::Generator`] masks every token that could break it.
//!
//! # Routes
//!
//! | route | what |
//! | --- | --- |
//! | `POST /v1/chat/completions` | OpenAI's chat completions, streaming (server-sent events) or not |
//! | `POST /v1/responses` | OpenAI's Responses API (stateless), streaming (typed events) or not |
//! | `GET /v1/models`, `GET /v1/models/{id}` | the one model |
//! | `GET /health` | 200 `{"status": "ok", …}` with slots, queue and request counters; 503 while shutting down |
//! | `GET /metrics` | the Prometheus text format (OpenMetrics flavour) |
//!
//! Errors have OpenAI's body, `{"error": {"message", "type", "param", "code"}}`, and status: 400
//! for a bad request (a schema that does not compile names the keyword and its JSON pointer),
//! 401 without the API key, 403 for a `Host` not allowed, 404, 405, 408 for a body that
//! arrives too slowly, 413 for a body over the limit, 415 for a POST that is not JSON, 503
//! (with `Retry-After`) when the queue is full or the server is shutting down, 504 past the
//! request timeout, 500 when the model fails.
//!
//! # Security
//!
//! Every request first passes `Host` (loopback names, IP addresses and
//! [`ServerConfig::allowed_hosts`], against DNS rebinding), the API key on `/v1/*` when
//! [`ServerConfig::api_key`] is set, `Content-Type: application/json` on POST (against
//! cross-site "simple" requests), and a body read within [`ServerConfig::body_timeout`].
//! Connections are capped ([`ServerConfig::max_connections`]) and closed when their headers
//! take longer than [`ServerConfig::header_timeout`].
//!
//! # Architecture and cost model
//!
//! Schemas are compiled in the handlers, on a few blocking threads and within
//! [`ServerConfig::compile_timeout`], so a schema that takes seconds to compile holds no one
//! else up; compiled grammars and failures are remembered. Continuous batching: up to
//! [`ServerConfig::parallel`] requests generate at once, each in a slot with its own
//! [`generate::Generator`] on its own OS thread (model calls block), all on one model that
//! evaluates their next tokens together in each step ([`generate::batch`]); each slot computes
//! its next mask while the step runs. Up to [`ServerConfig::queue`] more wait; the next one is
//! answered 503 (`code: "queue_full"`) at once. A panic in a slot rebuilds its generator, a
//! panic in the model loads it again. Compiled schemas and their mask caches stay in each
//! slot's LRU cache across requests, so a repeated schema costs nothing to compile; so does a
//! slot's KV cache for a shared prompt prefix. A client that disconnects cancels its generation at
//! the next token (or skips it, if it was still queued). On SIGINT or SIGTERM the server
//! stops accepting connections, lets requests in flight finish for up to
//! [`ServerConfig::shutdown_grace`], then cancels what is left and exits.
//!
//! # Example
//!
//! ```no_run
//! use generate::{Generator, Lane, PerSequence};
//! use server::{ServerConfig, serve};
//! # fn load_model() -> Result<MyModel, String> { unimplemented!() }
//! # fn tokenizer() -> std::sync::Arc<generate::Tokenizer> { unimplemented!() }
//! # struct MyModel;
//! # impl generate::Model for MyModel {
//! #   fn vocab_size(&self) -> usize { 0 } fn context_size(&self) -> usize { 0 }
//! #   fn n_past(&self) -> usize { 0 }
//! #   fn forward(&mut self, _: &[u32]) -> Result<&[f32], generate::ModelError> { unimplemented!() }
//! #   fn truncate(&mut self, _: usize) -> Result<(), generate::ModelError> { Ok(()) }
//! # }
//! let tokenizer = tokenizer();
//! let kernel = generate::kernel_for(&tokenizer).map_err(|e| e.to_string())?;
//! // `load` runs on the batcher's thread with the number of sequences wanted (here one model
//! // per sequence; llama.cpp's `LlamaModel` evaluates them all in one context); `slot` builds
//! // each slot's generator on its lane. The call returns after SIGINT or SIGTERM.
//! serve(
//!     ServerConfig { port: 8000, ..ServerConfig::default() },
//!     |n| {
//!         let models = (0..n).map(|_| load_model()).collect::<Result<Vec<_>, _>>()?;
//!         PerSequence::new(models).map_err(|e| e.to_string())
//!     },
//!     move |lane: Lane| {
//!         Generator::with_kernel(lane, tokenizer.clone(), kernel.clone())
//!             .map_err(|e| e.to_string())
//!     },
//! )
//! .map_err(|e| e.to_string())?;
//! # Ok::<(), String>(())
//! ```
//!
//! For tests and embedding, [`Server::start`] loads the model and gives the [`AppState`];
//! [`router`] turns it into an [`axum::Router`] and [`Server::run`] serves it on a listener
//! until a future completes.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod compile;
pub mod error;
mod http;
mod metrics;
mod net;
pub mod openai;
mod responses;
mod summary;
mod tools;
mod worker;

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use generate::{BatchModel, Generator, Lane};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub use error::{ApiError, ServerError};

use compile::CompilePool;
use worker::{Job, Shared, Workers};

/// How the server listens and what it allows.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Address to listen on (default `127.0.0.1`).
    pub host: String,
    /// Port (default 8000; 0 picks a free one).
    pub port: u16,
    /// Requests generated at once (default [`DEFAULT_PARALLEL`]), each in its own sequence of
    /// the batched model: the model evaluates their next tokens together.
    pub parallel: usize,
    /// Whether each slot computes its next mask while the model evaluates a step (default),
    /// or before it asks for the step: see [`generate::BatchOptions::overlap_masks`]. Overlap
    /// when the model's threads leave a core free.
    pub overlap_masks: bool,
    /// Requests that may wait while `parallel` generate (default 32); one more is a 503.
    pub queue: usize,
    /// Largest request body in bytes (default 1 MiB); a larger one is a 413.
    pub max_body: usize,
    /// Most completion tokens a request may ask for (default 2048): asking for more is a 400;
    /// a request that does not say gets this many. Either way generation also stops where the
    /// context window ends (`finish_reason: "length"`).
    pub max_tokens: usize,
    /// The model id shown by `/v1/models` and in responses (requests may name any model).
    pub model_id: String,
    /// On shutdown, how long requests in flight may still run before they are cancelled
    /// (default 10 s).
    pub shutdown_grace: Duration,
    /// When set, every `/v1/*` route needs `Authorization: Bearer <key>` (else a 401).
    pub api_key: Option<String>,
    /// Host names allowed in the `Host` header besides `localhost`, `*.localhost` and IP
    /// addresses (which a DNS rebinding attack cannot use); `*` allows any.
    pub allowed_hosts: Vec<String>,
    /// How long a client may take to send a request's headers, and how long a connection
    /// may stay idle between requests (default 10 s).
    pub header_timeout: Duration,
    /// How long a client may take to send a request's body (default 30 s); then a 408.
    pub body_timeout: Duration,
    /// Connections served at once (default 512); more wait to be accepted.
    pub max_connections: usize,
    /// Most wall-clock time for one chat completion, queue included (default 10 minutes);
    /// then a 504 (`code: "request_timeout"`), or an error event in a stream.
    pub request_timeout: Duration,
    /// Most time to compile one schema (default 10 s); then a 400 (`code:
    /// "schema_compile_timeout"`).
    pub compile_timeout: Duration,
    /// Schemas compiled at once, off the model thread (default 2).
    pub compile_threads: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            host: "127.0.0.1".into(),
            port: 8000,
            parallel: DEFAULT_PARALLEL,
            overlap_masks: true,
            queue: 32,
            max_body: 1 << 20,
            max_tokens: 2048,
            model_id: "stencil".into(),
            shutdown_grace: Duration::from_secs(10),
            api_key: None,
            allowed_hosts: Vec::new(),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 512,
            request_timeout: Duration::from_secs(600),
            compile_timeout: Duration::from_secs(10),
            compile_threads: 2,
        }
    }
}

/// [`ServerConfig::parallel`] by default.
pub const DEFAULT_PARALLEL: usize = 4;

/// Limits the handlers check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub queue: usize,
    pub max_body: usize,
    pub max_tokens: usize,
    /// Prompt text longer than this cannot fit the context.
    pub max_prompt_bytes: usize,
    pub body_timeout: Duration,
    pub request_timeout: Duration,
}

/// What the handlers share: the queue into the model thread, the compile pool, limits and
/// metrics. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: mpsc::Sender<Job>,
    shared: Arc<Shared>,
    compiler: Arc<CompilePool>,
    /// The batcher's counters, for `/metrics`.
    batches: generate::BatchCounters,
    limits: Limits,
    api_key: Option<String>,
    allowed_hosts: Vec<String>,
    model_id: String,
    describe: String,
    context_size: usize,
    created: u64,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("model_id", &self.inner.model_id)
            .field("limits", &self.inner.limits)
            .finish()
    }
}

impl AppState {
    fn envelope(&self, id: String) -> openai::Envelope {
        openai::Envelope {
            id,
            created: http::now_secs(),
            model: self.inner.model_id.clone(),
        }
    }

    fn model_object(&self) -> Value {
        json!({
            "id": self.inner.model_id,
            "object": "model",
            "created": self.inner.created,
            "owned_by": "stencil",
            "context_length": self.inner.context_size,
            "description": self.inner.describe,
        })
    }

    /// Whether the server has started shutting down.
    pub fn is_draining(&self) -> bool {
        self.inner.shared.draining.load(Ordering::SeqCst)
    }
}

/// The routes over `state` (see the [crate docs](crate)), behind the checks every request
/// passes (`Host`, API key, `Content-Type`, body size and read timeout).
pub fn router(state: AppState) -> Router {
    let max_body = state.inner.limits.max_body;
    Router::new()
        .route("/v1/chat/completions", post(http::chat_completions))
        .route("/v1/responses", post(responses::responses))
        .route("/v1/models", get(http::list_models))
        .route("/v1/models/{id}", get(http::get_model))
        .route("/health", get(http::health))
        .route("/metrics", get(http::metrics))
        .fallback(http::not_found)
        .method_not_allowed_fallback(http::method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http::guard,
        ))
        .with_state(state)
}

/// A loaded model and its slots, ready to serve.
pub struct Server {
    state: AppState,
    workers: Workers,
    grace: Duration,
    net: net::NetConfig,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("state", &self.state)
            .finish()
    }
}

impl Server {
    /// Starts the batcher's thread and runs `load` on it with [`ServerConfig::parallel`] (the
    /// number of sequences wanted; the model need not be `Send`), then one slot per sequence
    /// the model has, each with the generator `slot` builds on its lane; returns once all are
    /// ready. Blocks while loading. If a slot panics, it builds its generator again; if the
    /// model panics, the batcher runs `load` again (`/metrics` counts both as restarts).
    ///
    /// # Errors
    ///
    /// [`ServerError::Load`] with `load`'s or `slot`'s error, [`ServerError::Worker`] if a
    /// thread cannot start.
    pub fn start<B, L, G, E>(config: &ServerConfig, load: L, slot: G) -> Result<Server, ServerError>
    where
        B: BatchModel + 'static,
        L: FnMut(usize) -> Result<B, E> + Send + 'static,
        G: Fn(Lane) -> Result<Generator<Lane>, E> + Send + Sync + 'static,
        E: Display,
    {
        let shared = Arc::new(Shared::default());
        let queue = config.queue.max(1);
        let (jobs, workers, loaded) = worker::spawn(load, slot, config, queue, shared.clone())?;
        let metrics = shared.metrics.clone();
        metrics.queue_capacity.set(queue as i64);
        metrics.slots_total.set(loaded.slots as i64);
        let compiler = Arc::new(CompilePool::new(
            loaded.compile_options,
            config.compile_threads,
            config.compile_timeout,
            metrics,
        ));
        let state = AppState {
            inner: Arc::new(Inner {
                jobs,
                shared,
                compiler,
                batches: workers.counters(),
                limits: Limits {
                    queue,
                    max_body: config.max_body,
                    max_tokens: config.max_tokens.max(1),
                    max_prompt_bytes: loaded.max_prompt_bytes,
                    body_timeout: config.body_timeout,
                    request_timeout: config.request_timeout,
                },
                api_key: config.api_key.clone().filter(|k| !k.is_empty()),
                allowed_hosts: config.allowed_hosts.clone(),
                model_id: config.model_id.clone(),
                describe: loaded.describe,
                context_size: loaded.context_size,
                created: http::now_secs(),
            }),
        };
        Ok(Server {
            state,
            workers,
            grace: config.shutdown_grace,
            net: net::NetConfig {
                header_timeout: config.header_timeout,
                max_connections: config.max_connections.max(1),
            },
        })
    }

    /// The handlers' state.
    pub fn state(&self) -> AppState {
        self.state.clone()
    }

    /// The routes.
    pub fn router(&self) -> Router {
        router(self.state())
    }

    /// Serves on `listener` until `shutdown` completes, then shuts down gracefully: no new
    /// connections, new requests on open ones get 503, requests in flight finish (or are
    /// cancelled after the grace period), and the model thread stops.
    ///
    /// Connections are HTTP/1.1: at most `max_connections` at once (more wait in the
    /// listener's backlog), each closed when its client takes longer than `header_timeout`
    /// to send a request's headers or stays idle that long between requests.
    ///
    /// # Errors
    ///
    /// [`ServerError::Io`] if serving fails.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let shared = self.state.inner.shared.clone();
        let grace = self.grace;
        let signal = async move {
            shutdown.await;
            shared.draining.store(true, Ordering::SeqCst);
            tracing::info!(
                grace_s = grace.as_secs_f64(),
                "shutting down: finishing the requests in flight"
            );
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                shared.cancel_all.store(true, Ordering::SeqCst);
                tracing::warn!("shutdown grace period over: cancelling what is left");
            });
        };
        let metrics = self.state.inner.shared.metrics.clone();
        net::serve(listener, self.router(), self.net, metrics, signal, grace).await;
        self.stop().await;
        tracing::info!("stopped");
        Ok(())
    }

    /// Stops the slots (after the jobs they run) and the batcher, and waits for them.
    pub async fn stop(self) {
        let jobs = self.state.inner.jobs.clone();
        self.state
            .inner
            .shared
            .draining
            .store(true, Ordering::SeqCst);
        drop(self.state);
        // Fails only if the thread is already gone.
        let _ = jobs.send(Job::Stop).await;
        let workers = self.workers;
        let _ = tokio::task::spawn_blocking(move || workers.join()).await;
    }
}

/// Loads the model and its slots (see [`Server::start`]), listens on
/// `config.host:config.port` and serves until SIGINT or SIGTERM, then shuts down gracefully.
/// Builds its own Tokio runtime: call it from synchronous code.
///
/// # Errors
///
/// [`ServerError`]: the model does not load, the address cannot be bound, serving fails.
pub fn serve<B, L, G, E>(config: ServerConfig, load: L, slot: G) -> Result<(), ServerError>
where
    B: BatchModel + 'static,
    L: FnMut(usize) -> Result<B, E> + Send + 'static,
    G: Fn(Lane) -> Result<Generator<Lane>, E> + Send + Sync + 'static,
    E: Display,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("stencil-http")
        .enable_all()
        .build()?;
    let server = Server::start(&config, load, slot)?;
    let served = runtime.block_on(async move {
        let addr = format!("{}:{}", config.host, config.port);
        let listener = match TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(source) => {
                server.stop().await;
                return Err(ServerError::Bind { addr, source });
            }
        };
        let local = listener.local_addr()?;
        if config.api_key.is_none() && !local.ip().is_loopback() {
            tracing::warn!(
                "listening on {local}, which is not a loopback address, without an API key: \
                 anyone who can reach it can generate; set --api-key or STENCIL_API_KEY"
            );
        }
        tracing::info!(
            model = %config.model_id,
            slots = server.state.inner.shared.metrics.slots_total.get(),
            queue = config.queue,
            max_body = config.max_body,
            max_tokens = config.max_tokens,
            api_key = config.api_key.is_some(),
            "listening on http://{local}"
        );
        server.run(listener, shutdown_signal()).await
    });
    // A schema compile that outlived its request may still run; it is not waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("SIGINT received"),
        _ = term => tracing::info!("SIGTERM received"),
    }
}
