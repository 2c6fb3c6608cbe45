//! The routes: `POST /v1/chat/completions`, `GET /v1/models`, `GET /v1/models/{id}`,
//! `GET /health`, and OpenAI-shaped 404 and 405 answers for everything else.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use crate::AppState;
use crate::error::ApiError;
use crate::openai::{Answer, ChatRequest, Envelope};
use crate::worker::{Event, Finished, Job, Work, shutting_down};

/// Unix seconds.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A well-mixed 64-bit number, different for every call (ids and default seeds).
fn fresh_u64() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    // splitmix64
    let mut z = nanos
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The one log line of a request, written when it ends, or when it is dropped (the client
/// went away).
struct RequestLog {
    id: String,
    stream: bool,
    start: Instant,
    done: bool,
}

impl RequestLog {
    fn ok(&mut self, f: &Finished) {
        self.done = true;
        let latency_ms = self.start.elapsed().as_secs_f64() * 1e3;
        tracing::info!(
            id = %self.id,
            status = 200,
            stream = self.stream,
            latency_ms = format_args!("{latency_ms:.1}"),
            queue_ms = format_args!("{:.1}", f.queue_ms),
            prompt_tokens = f.usage.prompt,
            completion_tokens = f.usage.completion,
            tokens_per_s = format_args!("{:.1}", f.timing.tokens_per_s),
            finish_reason = f.finish_reason,
            schema_cache = match f.schema_cache_hit {
                Some(true) => "hit",
                Some(false) => "miss",
                None => "none",
            },
            "chat completion"
        );
    }

    fn err(&mut self, e: &ApiError) {
        self.done = true;
        let latency_ms = self.start.elapsed().as_secs_f64() * 1e3;
        let status = e.status.as_u16();
        if e.status.is_server_error() {
            tracing::warn!(id = %self.id, status, stream = self.stream,
                latency_ms = format_args!("{latency_ms:.1}"), error = %e.message, "chat completion");
        } else {
            tracing::info!(id = %self.id, status, stream = self.stream,
                latency_ms = format_args!("{latency_ms:.1}"), error = %e.message, "chat completion");
        }
    }
}

impl Drop for RequestLog {
    fn drop(&mut self) {
        if !self.done {
            let latency_ms = self.start.elapsed().as_secs_f64() * 1e3;
            tracing::info!(id = %self.id, stream = self.stream,
                latency_ms = format_args!("{latency_ms:.1}"),
                "chat completion cancelled: the client disconnected");
        }
    }
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let id = format!("chatcmpl-{:016x}", fresh_u64());
    let mut log = RequestLog {
        id: id.clone(),
        stream: false,
        start: Instant::now(),
        done: false,
    };
    match start(&state, body, &mut log).await {
        Ok(Started::Whole(finished)) => {
            log.ok(&finished);
            let env = state.envelope(id);
            let body = env.completion(&finished.answer, finished.finish_reason, finished.usage);
            Json(body).into_response()
        }
        Ok(Started::Stream {
            events,
            include_usage,
        }) => {
            let env = state.envelope(id);
            stream_response(env, events, include_usage, log)
        }
        Err(e) => {
            log.err(&e);
            e.into_response()
        }
    }
}

enum Started {
    /// A non-streaming request, finished.
    Whole(Finished),
    /// A streaming request the model thread has started on.
    Stream {
        events: mpsc::UnboundedReceiver<Event>,
        include_usage: bool,
    },
}

/// Parses, queues and waits: for a whole answer, or for the start of a stream (so errors
/// found before generation, like a bad schema, are plain HTTP errors).
async fn start(
    state: &AppState,
    body: Result<Bytes, BytesRejection>,
    log: &mut RequestLog,
) -> Result<Started, ApiError> {
    let body = body.map_err(|rej| {
        if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::invalid(format!(
                "the request body is larger than this server's limit of {} bytes",
                state.inner.limits.max_body
            ))
            .status(StatusCode::PAYLOAD_TOO_LARGE)
            .code("request_too_large")
        } else {
            ApiError::invalid(format!("cannot read the request body: {}", rej.body_text()))
                .status(rej.status())
        }
    })?;
    let plan = ChatRequest::from_slice(&body)?.plan(state.inner.limits.max_tokens, fresh_u64())?;
    log.stream = plan.stream;
    let shared = &state.inner.shared;
    if shared.draining.load(Ordering::Relaxed) {
        return Err(shutting_down());
    }
    let stream = plan.stream;
    let include_usage = plan.include_usage;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::Generate(Box::new(Work {
        plan,
        events: tx,
        enqueued: Instant::now(),
    }));
    match state.inner.jobs.try_send(job) {
        Ok(()) => {}
        Err(TrySendError::Full(_)) => {
            shared.rejected.fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::unavailable(
                format!(
                    "the server is busy: {} requests are already waiting for the model; retry \
                     later",
                    state.inner.limits.queue
                ),
                "queue_full",
            ));
        }
        Err(TrySendError::Closed(_)) => {
            return Err(ApiError::unavailable(
                "the model is not running",
                "model_unavailable",
            ));
        }
    }
    loop {
        match rx.recv().await {
            Some(Event::Started) if stream => {
                return Ok(Started::Stream {
                    events: rx,
                    include_usage,
                });
            }
            Some(Event::Started | Event::Delta(_)) => {}
            Some(Event::Done(r)) => return r.map(Started::Whole),
            None => return Err(ApiError::internal("the model stopped before answering")),
        }
    }
}

fn data(v: &Value) -> Result<SseEvent, Infallible> {
    Ok(SseEvent::default().data(v.to_string()))
}

/// The server-sent events of a streaming response: a role chunk, content chunks, tool-call
/// chunks, a finish chunk, the usage chunk if asked, then `data: [DONE]`. An error after the
/// stream started is sent as `data: {"error": …}` (OpenAI's clients raise it).
fn stream_response(
    env: Envelope,
    mut events: mpsc::UnboundedReceiver<Event>,
    include_usage: bool,
    mut log: RequestLog,
) -> Response {
    let stream = async_stream::stream! {
        yield data(&env.chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
            include_usage,
        ));
        loop {
            match events.recv().await {
                Some(Event::Started) => {}
                Some(Event::Delta(text)) => {
                    yield data(&env.chunk(json!({"content": text}), None, include_usage));
                }
                Some(Event::Done(Ok(f))) => {
                    match &f.answer {
                        Answer::Calls(calls) => {
                            for (i, c) in calls.iter().enumerate() {
                                yield data(&env.chunk(
                                    json!({"tool_calls": [c.to_json(Some(i))]}),
                                    None,
                                    include_usage,
                                ));
                            }
                        }
                        // Tool requests send their text at the end; the rest streamed it.
                        Answer::Text(text) if !text.is_empty() && !f.text_streamed => {
                            yield data(&env.chunk(json!({"content": text}), None, include_usage));
                        }
                        Answer::Text(_) => {}
                    }
                    yield data(&env.chunk(json!({}), Some(f.finish_reason), include_usage));
                    if include_usage {
                        yield data(&env.usage_chunk(f.usage));
                    }
                    log.ok(&f);
                    break;
                }
                Some(Event::Done(Err(e))) => {
                    log.err(&e);
                    yield data(&e.body());
                    break;
                }
                None => {
                    let e = ApiError::internal("the model stopped before answering");
                    log.err(&e);
                    yield data(&e.body());
                    break;
                }
            }
        }
        yield Ok(SseEvent::default().data("[DONE]"));
    };
    Sse::new(stream).into_response()
}

/// `GET /v1/models`.
pub(crate) async fn list_models(State(state): State<AppState>) -> Json<Value> {
    Json(json!({"object": "list", "data": [state.model_object()]}))
}

/// `GET /v1/models/{id}`.
pub(crate) async fn get_model(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    if id == state.inner.model_id {
        Ok(Json(state.model_object()))
    } else {
        Err(ApiError::not_found(
            format!(
                "the model `{id}` does not exist (this server has `{}`)",
                state.inner.model_id
            ),
            Some("model_not_found"),
        )
        .param("model"))
    }
}

/// `GET /health`: 200 while the model thread runs and the server is not shutting down.
pub(crate) async fn health(State(state): State<AppState>) -> Response {
    let shared = &state.inner.shared;
    let alive = shared.alive.load(Ordering::SeqCst);
    let draining = shared.draining.load(Ordering::SeqCst);
    let status = match (alive, draining) {
        (true, false) => "ok",
        (_, true) => "shutting_down",
        (false, false) => "model_stopped",
    };
    let queue = &state.inner.jobs;
    let body = json!({
        "status": status,
        "model": state.inner.model_id,
        "context_size": state.inner.context_size,
        "queue": {
            "capacity": state.inner.limits.queue,
            "waiting": state.inner.limits.queue.saturating_sub(queue.capacity()),
        },
        "limits": {
            "max_body_bytes": state.inner.limits.max_body,
            "max_tokens": state.inner.limits.max_tokens,
        },
        "requests": shared.stats(),
    });
    let code = if status == "ok" {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, Json(body)).into_response()
}

/// Unknown routes.
pub(crate) async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::not_found(format!("invalid URL ({method} {})", uri.path()), None)
}

/// Known routes, wrong method.
pub(crate) async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::invalid(format!("method {method} is not allowed on {}", uri.path()))
        .status(StatusCode::METHOD_NOT_ALLOWED)
}
