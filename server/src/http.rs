//! The routes: `POST /v1/chat/completions`, `GET /v1/models`, `GET /v1/models/{id}`,
//! `GET /health`, `GET /metrics`, OpenAI-shaped 404 and 405 answers for everything else, and
//! the checks every request passes first ([`guard`]).

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use generate::{GenerateError, SCHEMA_PLACEHOLDER, SchemaInPrompt, TokenLogprob};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use schema_compiler::PropertyOrder;
use schema_compiler::json_text::RoundedNumbers;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use crate::AppState;
use crate::compile::Failure;
use crate::error::ApiError;
use crate::metrics::Outcome;
use crate::openai::{Answer, ChatRequest, Envelope, Plan};
use crate::worker::{Event, Finished, Job, Work, shutting_down};

/// Unix seconds.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A well-mixed 64-bit number, different for every call (ids and default seeds).
pub(crate) fn fresh_u64() -> u64 {
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

/// A fresh tool call id, `call_…`.
pub(crate) fn call_id() -> String {
    format!("call_{:016x}", fresh_u64())
}

/// The one log line of a request, written when it ends, or when it is dropped (the client
/// went away).
pub(crate) struct RequestLog {
    id: String,
    /// The route, for the log line.
    what: &'static str,
    stream: bool,
    start: Instant,
    done: bool,
}

impl RequestLog {
    pub(crate) fn ok(&mut self, f: &Finished) {
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
            schema_in_prompt = f.schema_in_prompt,
            cancelled = f.cancelled,
            "{}",
            self.what
        );
    }

    pub(crate) fn err(&mut self, e: &ApiError) {
        self.done = true;
        let latency_ms = self.start.elapsed().as_secs_f64() * 1e3;
        let status = e.status.as_u16();
        if e.status.is_server_error() {
            tracing::warn!(id = %self.id, status, stream = self.stream,
                latency_ms = format_args!("{latency_ms:.1}"), error = %e.message, "{}", self.what);
        } else {
            tracing::info!(id = %self.id, status, stream = self.stream,
                latency_ms = format_args!("{latency_ms:.1}"), error = %e.message, "{}", self.what);
        }
    }
}

impl Drop for RequestLog {
    fn drop(&mut self) {
        if !self.done {
            let latency_ms = self.start.elapsed().as_secs_f64() * 1e3;
            tracing::info!(id = %self.id, stream = self.stream,
                latency_ms = format_args!("{latency_ms:.1}"),
                "{} cancelled: the client disconnected", self.what);
        }
    }
}

/// The wall-clock limit of one chat completion.
#[derive(Clone, Copy)]
pub(crate) struct Timeout {
    pub(crate) deadline: tokio::time::Instant,
    limit: Duration,
}

impl Timeout {
    /// The next event of a stream; an error past the deadline or when the model thread is
    /// gone.
    pub(crate) async fn next(
        &self,
        events: &mut mpsc::UnboundedReceiver<Event>,
    ) -> Result<Event, ApiError> {
        match tokio::time::timeout_at(self.deadline, events.recv()).await {
            Ok(Some(event)) => Ok(event),
            Ok(None) => Err(ApiError::internal("the model stopped before answering")),
            Err(_) => Err(self.expired()),
        }
    }

    pub(crate) fn expired(&self) -> ApiError {
        ApiError::internal(format!(
            "the request took longer than this server's limit of {:.1} s",
            self.limit.as_secs_f64()
        ))
        .status(StatusCode::GATEWAY_TIMEOUT)
        .code("request_timeout")
    }
}

/// Parses a request body into a plan (the request's own format), given the server's token
/// limit and a default seed.
pub(crate) type Parse<'a> = &'a (dyn Fn(&[u8], usize, u64) -> Result<Plan, ApiError> + Sync);

/// Runs a request of any format: reads and parses its body, compiles, queues, and waits for
/// the answer or for the start of its stream, all within the request timeout. `what` names
/// the route in the log.
pub(crate) async fn run_request(
    state: &AppState,
    id: &str,
    what: &'static str,
    body: Result<Bytes, BytesRejection>,
    parse: Parse<'_>,
) -> (Result<Started, ApiError>, RequestLog, Timeout) {
    let mut log = RequestLog {
        id: id.to_string(),
        what,
        stream: false,
        start: Instant::now(),
        done: false,
    };
    let limit = state.inner.limits.request_timeout;
    let timeout = Timeout {
        deadline: tokio::time::Instant::now() + limit,
        limit,
    };
    let mut queued = false;
    let started = tokio::time::timeout_at(
        timeout.deadline,
        start(state, body, parse, &mut log, timeout, &mut queued),
    )
    .await
    .unwrap_or_else(|_| {
        // A queued job is counted by the model thread, which cancels or skips it.
        if !queued {
            state.inner.shared.metrics.outcome(Outcome::TimedOut);
        }
        Err(timeout.expired())
    });
    (started, log, timeout)
}

/// `POST /v1/chat/completions`.
pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let id = format!("chatcmpl-{:016x}", fresh_u64());
    let parse = |body: &[u8], max_tokens: usize, seed: u64| {
        ChatRequest::from_slice(body)?.plan(max_tokens, seed)
    };
    let (started, mut log, timeout) =
        run_request(&state, &id, "chat completion", body, &parse).await;
    match started {
        Ok(Started::Whole(finished)) => {
            log.ok(&finished);
            let env = state.envelope(id);
            let body = env.completion(
                &finished.answer,
                finished.finish_reason,
                finished.usage,
                finished.logprobs.as_deref(),
                finished.reasoning.as_deref(),
            );
            Json(body).into_response()
        }
        Ok(Started::Stream {
            events,
            include_usage,
        }) => {
            let env = state.envelope(id);
            stream_response(env, events, include_usage, log, timeout)
        }
        Err(e) => {
            log.err(&e);
            e.into_response()
        }
    }
}

pub(crate) enum Started {
    /// A non-streaming request, finished.
    Whole(Finished),
    /// A streaming request the model thread has started on.
    Stream {
        events: mpsc::UnboundedReceiver<Event>,
        include_usage: bool,
    },
}

/// Refuses, before anything is expanded, messages that cannot fit the context once the
/// schema is put into their `#!JSON_SCHEMA!#` placeholders: a few placeholders and a large
/// schema would otherwise make a prompt many times the body's size.
fn check_prompt_size(state: &AppState, plan: &Plan) -> Result<(), ApiError> {
    let limit = state.inner.limits.max_prompt_bytes;
    let text: usize = plan.messages.iter().map(|m| m.content.len()).sum();
    let (places, schema_len) = match &plan.schema {
        Some(s) if plan.schema_in_prompt != SchemaInPrompt::Off => (
            plan.messages
                .iter()
                .map(|m| m.content.matches(SCHEMA_PLACEHOLDER).count())
                .sum::<usize>(),
            s.to_string().len(),
        ),
        _ => (0, 0),
    };
    let expanded = (text - places * SCHEMA_PLACEHOLDER.len())
        .saturating_add(places.saturating_mul(schema_len));
    if expanded <= limit {
        return Ok(());
    }
    let how = if places > 0 {
        format!(
            " once the schema ({schema_len} bytes) is put into their {places} \
             {SCHEMA_PLACEHOLDER} placeholders"
        )
    } else {
        String::new()
    };
    Err(ApiError::invalid(format!(
        "the messages would take {expanded} bytes{how}, more than this model's context of {} \
         tokens can hold",
        state.inner.context_size
    ))
    .param("messages")
    .code("context_length_exceeded"))
}

/// The answer to a schema without a grammar; `tool` names the tool whose parameters it is.
fn compile_error(f: Failure, tool: Option<&str>) -> ApiError {
    let param = if tool.is_some() {
        "tools"
    } else {
        "response_format"
    };
    match f {
        Failure::Invalid(e) => ApiError::from_generate(&match tool {
            Some(t) => GenerateError::tool_schema(t, e),
            None => GenerateError::Schema(e),
        }),
        Failure::TimedOut { limit } => ApiError::invalid(format!(
            "the {} did not compile within this server's limit of {:.1} s: simplify it",
            tool.map_or("schema".to_string(), |t| format!(
                "parameters schema of tool `{t}`"
            )),
            limit.as_secs_f64()
        ))
        .param(param)
        .code("schema_compile_timeout"),
        Failure::Busy { threads } => ApiError::unavailable(
            format!(
                "the server is busy compiling other schemas ({threads} at a time); retry later"
            ),
            "compile_busy",
        ),
        Failure::Crashed(m) => ApiError::internal(format!("the schema compiler failed: {m}")),
    }
}

/// Parses, compiles, queues and waits: for a whole answer, or for the start of a stream (so
/// errors found before generation, like a bad schema, are plain HTTP errors).
async fn start(
    state: &AppState,
    body: Result<Bytes, BytesRejection>,
    parse: Parse<'_>,
    log: &mut RequestLog,
    timeout: Timeout,
    queued: &mut bool,
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
    let mut plan = parse(&body, state.inner.limits.max_tokens, fresh_u64())?;
    // The body parsed, so it is UTF-8. Its number literals that were rounded when read are
    // refused where a schema compares values with them (scanned only when there is a schema).
    let rounded = if plan.schema.is_some() || !plan.tools.is_empty() {
        RoundedNumbers::in_text(std::str::from_utf8(&body).unwrap_or_default())
    } else {
        RoundedNumbers::default()
    };
    log.stream = plan.stream;
    let shared = &state.inner.shared;
    if shared.draining.load(Ordering::Relaxed) {
        return Err(shutting_down());
    }
    check_prompt_size(state, &plan)?;

    // Compiled here, off the model thread, within the compile timeout.
    let compiler = &state.inner.compiler;
    plan.property_order = compiler.order_for(plan.property_order);
    if compiler.order_for(PropertyOrder::Any) == PropertyOrder::Schema {
        // The server writes every schema in its order: nothing keeps any order.
        plan.tools.iter_mut().for_each(|t| t.any_order = false);
        plan.loose_format = false;
    }
    let mut grammars = Vec::new();
    let mut schema_cache_hit = None;
    if let Some(schema) = &plan.schema {
        let c = compiler
            .grammar(schema, plan.property_order, &rounded)
            .await
            .map_err(|f| compile_error(f, None))?;
        schema_cache_hit = Some(c.hit);
        grammars.push((schema.clone(), c.grammar, c.masks));
    }
    for tool in &plan.tools {
        let c = compiler
            .grammar(&tool.parameters, plan.property_order, &rounded)
            .await
            .map_err(|f| compile_error(f, Some(&tool.name)))?;
        grammars.push((tool.parameters.clone(), c.grammar, c.masks));
    }

    let stream = plan.stream;
    let include_usage = plan.include_usage;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::Generate(Box::new(Work {
        plan,
        grammars,
        schema_cache_hit,
        events: tx,
        enqueued: Instant::now(),
        deadline: timeout.deadline.into_std(),
    }));
    match state.inner.jobs.try_send(job) {
        Ok(()) => *queued = true,
        Err(TrySendError::Full(_)) => {
            shared.metrics.outcome(Outcome::RejectedQueueFull);
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
            Some(Event::Done(r)) => return r.map(Started::Whole),
            Some(_) => {}
            None => return Err(ApiError::internal("the model stopped before answering")),
        }
    }
}

pub(crate) fn data(v: &Value) -> Result<SseEvent, Infallible> {
    Ok(SseEvent::default().data(v.to_string()))
}

/// The server-sent events of a streaming response: a role chunk, content chunks or tool-call
/// chunks (for each call its index, id and name, then fragments of its arguments), a finish
/// chunk, the usage chunk if asked, then `data: [DONE]`. An error after the
/// stream started is sent as `data: {"error": …}` (OpenAI's clients raise it).
fn stream_response(
    env: Envelope,
    mut events: mpsc::UnboundedReceiver<Event>,
    include_usage: bool,
    mut log: RequestLog,
    timeout: Timeout,
) -> Response {
    let stream = async_stream::stream! {
        yield data(&env.chunk(
            json!({"role": "assistant", "content": "", "refusal": null}),
            None,
            include_usage,
        ));
        // Log probabilities of tokens whose text has not been sent yet.
        let mut pending: Vec<TokenLogprob> = Vec::new();
        // Whether the thinking went out as it was generated (else it goes out at the end).
        let mut reasoning_streamed = false;
        loop {
            let event = match timeout.next(&mut events).await {
                Ok(event) => event,
                Err(e) => {
                    log.err(&e);
                    yield data(&e.body());
                    break;
                }
            };
            match event {
                Event::Started => {}
                Event::Logprobs(entries) => pending.extend(entries),
                Event::Reasoning(text) => {
                    reasoning_streamed = true;
                    yield data(&env.chunk(json!({"reasoning_content": text}), None, include_usage));
                }
                Event::Delta(text) => {
                    let lp = std::mem::take(&mut pending);
                    yield data(&env.chunk_with(json!({"content": text}), None, include_usage, &lp));
                }
                Event::CallStart { index, id, name } => {
                    let call = json!({"index": index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}});
                    yield data(&env.chunk(json!({"tool_calls": [call]}), None, include_usage));
                }
                Event::CallArguments { index, fragment } => {
                    let call = json!({"index": index, "function": {"arguments": fragment}});
                    yield data(&env.chunk(json!({"tool_calls": [call]}), None, include_usage));
                }
                Event::Done(Ok(f)) => {
                    if let Some(r) = f.reasoning.as_ref().filter(|_| !reasoning_streamed) {
                        yield data(&env.chunk(json!({"reasoning_content": r}), None, include_usage));
                    }
                    match &f.answer {
                        // Sent as call events while generated.
                        Answer::Calls(_) if f.text_streamed => {}
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
                    let lp = std::mem::take(&mut pending);
                    yield data(&env.chunk_with(json!({}), Some(f.finish_reason), include_usage, &lp));
                    if include_usage {
                        yield data(&env.usage_chunk(f.usage));
                    }
                    log.ok(&f);
                    break;
                }
                Event::Done(Err(e)) => {
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
    let limits = &state.inner.limits;
    let body = json!({
        "status": status,
        "model": state.inner.model_id,
        "context_size": state.inner.context_size,
        "slots": {
            "total": shared.metrics.slots_total.get(),
            "active": shared.metrics.slots_active.get(),
        },
        "queue": {
            "capacity": limits.queue,
            "waiting": queue_waiting(&state),
        },
        "limits": {
            "max_body_bytes": limits.max_body,
            "max_tokens": limits.max_tokens,
            "request_timeout_s": limits.request_timeout.as_secs_f64(),
            "compile_timeout_s": state.inner.compiler.timeout().as_secs_f64(),
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

/// The route label of a path, for the metrics.
fn route_label(path: &str) -> &'static str {
    match path {
        "/v1/chat/completions" => "chat_completions",
        "/v1/responses" => "responses",
        "/v1/models" => "models",
        p if p.starts_with("/v1/models/") => "models",
        "/health" => "health",
        "/metrics" => "metrics",
        _ => "other",
    }
}

/// Whether `host` (a `Host` header: a name or address, maybe with a port) may be served.
///
/// IP addresses and `localhost` (with its subdomains, which resolve to loopback) always may: a
/// DNS rebinding attack needs a name of its own that resolves to this machine. Other names
/// only when `allowed` lists them (or `*`).
pub(crate) fn host_allowed(host: &str, allowed: &[String]) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        // [v6] or [v6]:port
        match rest.split_once(']') {
            Some((addr, port))
                if port.is_empty() || port.strip_prefix(':').is_some_and(is_port) =>
            {
                return addr.parse::<std::net::Ipv6Addr>().is_ok();
            }
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            _ => host,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if name.is_empty() {
        return false;
    }
    name == "localhost"
        || name.ends_with(".localhost")
        || name.parse::<std::net::Ipv4Addr>().is_ok()
        || allowed
            .iter()
            .any(|a| a == "*" || a.trim_end_matches('.').eq_ignore_ascii_case(&name))
}

fn is_port(s: &str) -> bool {
    !s.is_empty() && s.len() <= 5 && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether a `Content-Type` is JSON (`application/json`, with any parameters).
fn is_json(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// Compares two keys in time that depends on their lengths only.
fn same_key(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Checks every request before its route sees it, in this order: the `Host` header (403
/// `host_not_allowed`), the API key on `/v1/*` (401 `invalid_api_key`), `Content-Type:
/// application/json` on a POST (415 `unsupported_media_type`; a browser sends a cross-site
/// POST without a preflight only as `text/plain`, a form or multipart), then reads the body
/// within the body timeout (408 `request_timeout`) and the size limit (413
/// `request_too_large`). Counts every response for `/metrics`.
pub(crate) async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let route = route_label(req.uri().path());
    let response = match check(&state, req).await {
        Ok(req) => next.run(req).await,
        Err(e) => {
            tracing::info!(status = e.status.as_u16(), route, error = %e.message, "refused");
            let mut r = e.into_response();
            if r.status() == StatusCode::REQUEST_TIMEOUT {
                // The body was not read to its end: the connection cannot carry another request.
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            r
        }
    };
    state
        .inner
        .shared
        .metrics
        .http(route, response.status().as_u16());
    response
}

async fn check(state: &AppState, req: Request) -> Result<Request, ApiError> {
    let inner = &state.inner;
    if let Some(host) = req.headers().get(header::HOST) {
        let ok = host
            .to_str()
            .is_ok_and(|h| host_allowed(h, &inner.allowed_hosts));
        if !ok {
            return Err(ApiError::invalid(format!(
                "the host {:?} is not allowed: start the server with --allowed-host to serve it",
                String::from_utf8_lossy(host.as_bytes())
            ))
            .status(StatusCode::FORBIDDEN)
            .code("host_not_allowed"));
        }
    }
    let path = req.uri().path();
    if let Some(key) = &inner.api_key
        && (path == "/v1" || path.starts_with("/v1/"))
    {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .map(str::trim);
        match given {
            None => {
                return Err(ApiError::unauthorized(
                    "you didn't provide an API key: send it as `Authorization: Bearer KEY`",
                ));
            }
            Some(k) if !same_key(k.as_bytes(), key.as_bytes()) => {
                return Err(ApiError::unauthorized("incorrect API key provided"));
            }
            Some(_) => {}
        }
    }
    if req.method() != Method::POST {
        return Ok(req);
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    if !content_type.is_some_and(is_json) {
        return Err(ApiError::invalid(format!(
            "the body must be JSON sent as `Content-Type: application/json` (got {})",
            content_type.map_or("none".to_string(), |c| format!("{c:?}"))
        ))
        .status(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        .code("unsupported_media_type"));
    }
    let limits = inner.limits;
    let too_large = || {
        ApiError::invalid(format!(
            "the request body is larger than this server's limit of {} bytes",
            limits.max_body
        ))
        .status(StatusCode::PAYLOAD_TOO_LARGE)
        .code("request_too_large")
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limits.max_body as u64) {
        return Err(too_large());
    }
    let (parts, body) = req.into_parts();
    let read = Limited::new(body, limits.max_body).collect();
    let bytes = match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.downcast_ref::<LengthLimitError>().is_some() => return Err(too_large()),
        Ok(Err(e)) => {
            return Err(ApiError::invalid(format!(
                "cannot read the request body: {e}"
            )));
        }
        Err(_) => {
            return Err(ApiError::invalid(format!(
                "the request body did not arrive within {} s",
                limits.body_timeout.as_secs_f64()
            ))
            .status(StatusCode::REQUEST_TIMEOUT)
            .code("request_timeout"));
        }
    };
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// `GET /metrics`: every metric in the Prometheus text format (OpenMetrics flavour).
pub(crate) async fn metrics(State(state): State<AppState>) -> Response {
    let m = &state.inner.shared.metrics;
    m.queue_depth.set(queue_waiting(&state) as i64);
    m.mirror_batches(state.inner.batches.get());
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        m.encode(),
    )
        .into_response()
}

/// Requests waiting in the queue.
fn queue_waiting(state: &AppState) -> usize {
    state
        .inner
        .limits
        .queue
        .saturating_sub(state.inner.jobs.capacity())
}

#[cfg(test)]
mod tests {
    use super::{host_allowed, is_json, same_key};

    #[test]
    fn hosts() {
        let none: Vec<String> = Vec::new();
        for ok in [
            "localhost",
            "localhost:8000",
            "LocalHost.",
            "a.b.localhost:1",
            "127.0.0.1",
            "127.0.0.1:8000",
            "10.0.0.7:80",
            "[::1]",
            "[::1]:8000",
        ] {
            assert!(host_allowed(ok, &none), "{ok}");
        }
        for bad in [
            "",
            ":8000",
            "evil.example",
            "evil.example:8000",
            "localhost.evil.example",
            "127.0.0.1.evil.example",
            "[::1",
            "[not-v6]:80",
            "localhost:80:80",
            "localhost:port",
        ] {
            assert!(!host_allowed(bad, &none), "{bad}");
        }
        let some = vec!["Box.Lan".to_string()];
        assert!(host_allowed("box.lan:8000", &some));
        assert!(!host_allowed("x.box.lan", &some));
        assert!(host_allowed("anything.example", &["*".to_string()]));
    }

    #[test]
    fn json_content_types() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON ; charset=utf-8"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/jsonx"));
        assert!(!is_json("application/x-www-form-urlencoded"));
    }

    #[test]
    fn keys() {
        assert!(same_key(b"abc", b"abc"));
        assert!(!same_key(b"abc", b"abd"));
        assert!(!same_key(b"abc", b"abcd"));
    }
}
