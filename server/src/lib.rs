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
//! | `GET /v1/models`, `GET /v1/models/{id}` | the one model |
//! | `GET /health` | 200 `{"status": "ok", …}` with queue and request counters; 503 while shutting down |
//!
//! Errors have OpenAI's body, `{"error": {"message", "type", "param", "code"}}`, and status: 400
//! for a bad request (a schema that does not compile names the keyword and its JSON pointer),
//! 404, 405, 413 for a body over the limit, 503 when the queue is full or the server is
//! shutting down, 500 when the model fails.
//!
//! # Architecture and cost model
//!
//! One model, one thread: the [`generate::Generator`] lives on a dedicated OS thread (model
//! calls block for the whole decode), fed by a bounded queue. At most one request generates
//! while up to [`ServerConfig::queue`] wait; the next one is answered 503 (`code:
//! "queue_full"`) at once. Compiled schemas and their mask caches stay in the generator's LRU
//! cache across requests, so a repeated schema costs nothing to compile; so does the model's
//! KV cache for a shared prompt prefix. A client that disconnects cancels its generation at
//! the next token (or skips it, if it was still queued). On SIGINT or SIGTERM the server
//! stops accepting connections, lets requests in flight finish for up to
//! [`ServerConfig::shutdown_grace`], then cancels what is left and exits.
//!
//! # Example
//!
//! ```no_run
//! use server::{ServerConfig, serve};
//! # fn load() -> Result<generate::Generator<MyModel>, String> { unimplemented!() }
//! # struct MyModel;
//! # impl generate::Model for MyModel {
//! #   fn vocab_size(&self) -> usize { 0 } fn context_size(&self) -> usize { 0 }
//! #   fn n_past(&self) -> usize { 0 }
//! #   fn forward(&mut self, _: &[u32]) -> Result<&[f32], generate::ModelError> { unimplemented!() }
//! #   fn truncate(&mut self, _: usize) -> Result<(), generate::ModelError> { Ok(()) }
//! # }
//! // `load` runs on the model thread; the call returns after SIGINT or SIGTERM.
//! serve(ServerConfig { port: 8000, ..ServerConfig::default() }, load)?;
//! # Ok::<(), server::ServerError>(())
//! ```
//!
//! For tests and embedding, [`Server::start`] loads the model and gives the [`AppState`];
//! [`router`] turns it into an [`axum::Router`] and [`Server::run`] serves it on a listener
//! until a future completes.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod error;
mod http;
pub mod openai;
mod tools;
mod worker;

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use generate::{Generator, Model};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub use error::{ApiError, ServerError};

use worker::{Job, Shared};

/// How the server listens and what it allows.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Address to listen on (default `127.0.0.1`).
    pub host: String,
    /// Port (default 8000; 0 picks a free one).
    pub port: u16,
    /// Requests that may wait for the model while one generates (default 32); one more is a
    /// 503.
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
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            host: "127.0.0.1".into(),
            port: 8000,
            queue: 32,
            max_body: 1 << 20,
            max_tokens: 2048,
            model_id: "stencil".into(),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// Limits the handlers check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub queue: usize,
    pub max_body: usize,
    pub max_tokens: usize,
}

/// What the handlers share: the queue into the model thread, limits and counters. Cheap to
/// clone.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    jobs: mpsc::Sender<Job>,
    shared: Arc<Shared>,
    limits: Limits,
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

/// The routes over `state` (see the [crate docs](crate)), with the body size limit.
pub fn router(state: AppState) -> Router {
    let max_body = state.inner.limits.max_body;
    Router::new()
        .route("/v1/chat/completions", post(http::chat_completions))
        .route("/v1/models", get(http::list_models))
        .route("/v1/models/{id}", get(http::get_model))
        .route("/health", get(http::health))
        .fallback(http::not_found)
        .method_not_allowed_fallback(http::method_not_allowed)
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(state)
}

/// A loaded model on its thread, ready to serve.
pub struct Server {
    state: AppState,
    worker: JoinHandle<()>,
    grace: Duration,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("state", &self.state)
            .finish()
    }
}

impl Server {
    /// Starts the model thread and runs `load` on it (the model need not be `Send`); returns
    /// once the model is loaded. Blocks while loading.
    ///
    /// # Errors
    ///
    /// [`ServerError::Load`] with `load`'s error, [`ServerError::Worker`] if the thread cannot
    /// start.
    pub fn start<M, F, E>(config: &ServerConfig, load: F) -> Result<Server, ServerError>
    where
        M: Model + 'static,
        F: FnOnce() -> Result<Generator<M>, E> + Send + 'static,
        E: Display,
    {
        let shared = Arc::new(Shared::default());
        let queue = config.queue.max(1);
        let (jobs, worker, loaded) = worker::spawn(load, queue, shared.clone())?;
        let state = AppState {
            inner: Arc::new(Inner {
                jobs,
                shared,
                limits: Limits {
                    queue,
                    max_body: config.max_body,
                    max_tokens: config.max_tokens.max(1),
                },
                model_id: config.model_id.clone(),
                describe: loaded.describe,
                context_size: loaded.context_size,
                created: http::now_secs(),
            }),
        };
        Ok(Server {
            state,
            worker,
            grace: config.shutdown_grace,
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
        let served = axum::serve(listener, self.router())
            .with_graceful_shutdown(signal)
            .await;
        self.stop().await;
        served?;
        tracing::info!("stopped");
        Ok(())
    }

    /// Stops the model thread (after the job it runs) and waits for it.
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
        let worker = self.worker;
        let _ = tokio::task::spawn_blocking(move || worker.join()).await;
    }
}

/// Loads the model (`load` runs on the model thread), listens on `config.host:config.port` and
/// serves until SIGINT or SIGTERM, then shuts down gracefully. Builds its own Tokio runtime:
/// call it from synchronous code.
///
/// # Errors
///
/// [`ServerError`]: the model does not load, the address cannot be bound, serving fails.
pub fn serve<M, F, E>(config: ServerConfig, load: F) -> Result<(), ServerError>
where
    M: Model + 'static,
    F: FnOnce() -> Result<Generator<M>, E> + Send + 'static,
    E: Display,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("stencil-http")
        .enable_all()
        .build()?;
    let server = Server::start(&config, load)?;
    runtime.block_on(async move {
        let addr = format!("{}:{}", config.host, config.port);
        let listener = match TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(source) => {
                server.stop().await;
                return Err(ServerError::Bind { addr, source });
            }
        };
        let local = listener.local_addr()?;
        tracing::info!(
            model = %config.model_id,
            queue = config.queue,
            max_body = config.max_body,
            max_tokens = config.max_tokens,
            "listening on http://{local}"
        );
        server.run(listener, shutdown_signal()).await
    })
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
