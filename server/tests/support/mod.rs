//! A fake model over the real Gemma 3 tokenizer, servers started on it, and small HTTP
//! helpers (in-process `oneshot` calls and a raw client over a loopback socket).
//!
//! The fake model's logits are flat except for one token: the longest one that continues a
//! script from the bytes generated so far (end of turn once the script is written). So the
//! text is the script wherever the constraint allows it, whatever tokens the constraint
//! forced on the way.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use generate::{Generator, Lane, Model, ModelError, PerSequence, Tokenizer};
use mask_kernel::Kernel;
use serde_json::Value;
use server::{Server, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tower::ServiceExt;

/// `STENCIL_ASSETS`, else the workspace's `assets/`.
pub fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")))
}

/// The Gemma 3 tokenizer, loaded once.
pub fn tokenizer() -> Arc<Tokenizer> {
    static TOK: OnceLock<Arc<Tokenizer>> = OnceLock::new();
    TOK.get_or_init(|| {
        let path = assets().join("tokenizers/gemma3/tokenizer.json");
        assert!(
            path.is_file(),
            "{} not found: run `cargo xtask fetch-assets` (or set STENCIL_ASSETS)",
            path.display()
        );
        Arc::new(Tokenizer::from_file(&path).expect("the tokenizer loads"))
    })
    .clone()
}

/// A gate the model waits at in `forward` until it is opened.
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    pub fn closed() -> Arc<Gate> {
        Arc::new(Gate::default())
    }

    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }
}

/// Knobs of the fake model.
#[derive(Clone)]
pub struct Knobs {
    /// The text the model "wants" to write.
    pub script: String,
    /// Texts it likes less, for when the constraint masks the script's next token.
    pub also: Vec<String>,
    /// End of turn after the script (else the script repeats until the budget).
    pub eos_after_script: bool,
    /// Sleep per `forward`.
    pub delay: Duration,
    /// Counts `forward` calls.
    pub forwards: Arc<AtomicUsize>,
    /// Wait here in every `forward`.
    pub gate: Option<Arc<Gate>>,
    pub context: usize,
    /// When set, the next `forward` clears it and panics.
    pub panic_next: Arc<AtomicBool>,
    /// Counts the models loaded.
    pub loads: Arc<AtomicUsize>,
    /// A reasoning model: the server is told this end marker of the thinking section, and a
    /// prompt evaluated after the request's own (the thinking and its marker, before the
    /// answer) continues the script instead of starting it again.
    pub reasoning_end: Option<String>,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            script: "Hello world".into(),
            also: Vec::new(),
            eos_after_script: true,
            delay: Duration::ZERO,
            forwards: Arc::new(AtomicUsize::new(0)),
            gate: None,
            context: 4096,
            panic_next: Arc::new(AtomicBool::new(false)),
            loads: Arc::new(AtomicUsize::new(0)),
            reasoning_end: None,
        }
    }
}

pub struct FakeModel {
    knobs: Knobs,
    vocab: Arc<vocab_index::Vocabulary>,
    eos: u32,
    logits: Vec<f32>,
    n_past: usize,
    /// The bytes generated since the last prompt evaluation.
    generated: Vec<u8>,
    /// The next `forward` evaluates a prompt (the generator truncates before every prompt).
    prefill: bool,
    /// The tokens in the cache, and where the request's own prompt ends among them.
    cache: Vec<u32>,
    prompt_len: usize,
    /// With `reasoning_end`: the prompt being evaluated extends the request's (the truncation
    /// kept all of it).
    continuing: bool,
}

impl FakeModel {
    pub fn new(knobs: Knobs, tok: &Tokenizer) -> FakeModel {
        let vocab = tok.vocab().clone();
        let eos = vocab
            .end_of_turn_ids()
            .first()
            .or(vocab.eos_ids().first())
            .expect("an end of turn")
            .as_u32();
        FakeModel {
            eos,
            logits: vec![0.0; vocab.len()],
            vocab,
            n_past: 0,
            generated: Vec::new(),
            prefill: true,
            cache: Vec::new(),
            prompt_len: 0,
            continuing: false,
            knobs,
        }
    }

    /// The tokens to favour, best first: for the script and each fallback text, the longest
    /// token that continues it from the bytes generated so far (end of turn at its end).
    fn favourites(&self) -> Vec<u32> {
        std::iter::once(&self.knobs.script)
            .chain(&self.knobs.also)
            .filter_map(|s| self.continue_script(s.as_bytes()))
            .collect()
    }

    fn continue_script(&self, script: &[u8]) -> Option<u32> {
        if script.is_empty() {
            return None;
        }
        let at = if self.knobs.eos_after_script {
            if !script.starts_with(&self.generated) {
                return None;
            }
            if self.generated.len() == script.len() {
                return Some(self.eos);
            }
            self.generated.len()
        } else {
            self.generated.len() % script.len()
        };
        let rest = &script[at..];
        (1..=rest.len().min(48))
            .rev()
            .find_map(|n| self.vocab.token_id(&rest[..n]))
            .map(|t| t.as_u32())
    }
}

impl Model for FakeModel {
    fn vocab_size(&self) -> usize {
        self.logits.len()
    }

    fn context_size(&self) -> usize {
        self.knobs.context
    }

    fn n_past(&self) -> usize {
        self.n_past
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.knobs.forwards.fetch_add(1, Ordering::SeqCst);
        if self.knobs.panic_next.swap(false, Ordering::SeqCst) {
            panic!("the fake model was told to panic");
        }
        if let Some(g) = &self.knobs.gate {
            g.wait();
        }
        if !self.knobs.delay.is_zero() {
            std::thread::sleep(self.knobs.delay);
        }
        if self.n_past + tokens.len() > self.knobs.context {
            return Err(ModelError::ContextOverflow {
                needed: self.n_past + tokens.len(),
                capacity: self.knobs.context,
            });
        }
        self.n_past += tokens.len();
        self.cache.extend_from_slice(tokens);
        if self.prefill && self.continuing {
            self.prefill = false;
            self.generated.clear();
            for &t in &self.cache[self.prompt_len..] {
                let id = vocab_index::TokenId::new(t).expect("a token id");
                self.generated.extend_from_slice(self.vocab.bytes(id));
            }
        } else if self.prefill {
            self.prefill = false;
            self.generated.clear();
            self.prompt_len = self.cache.len();
        } else {
            for &t in tokens {
                let id = vocab_index::TokenId::new(t).expect("a token id");
                self.generated.extend_from_slice(self.vocab.bytes(id));
            }
        }
        self.logits.fill(0.0);
        for (i, t) in self.favourites().into_iter().enumerate().rev() {
            self.logits[t as usize] = 30.0 - i as f32;
        }
        Ok(&self.logits)
    }

    fn logits_depend_only_on_tokens(&self) -> bool {
        // Each request starts its script afresh, whatever the prompt.
        false
    }

    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        self.n_past = n_past.min(self.n_past);
        self.cache.truncate(self.n_past);
        self.continuing = self.knobs.reasoning_end.is_some()
            && self.prompt_len > 0
            && self.n_past >= self.prompt_len;
        self.prefill = true;
        Ok(())
    }
}

/// The mask kernel of [`tokenizer`], built once.
pub fn kernel() -> Arc<Kernel> {
    static KERNEL: OnceLock<Arc<Kernel>> = OnceLock::new();
    KERNEL
        .get_or_init(|| generate::kernel_for(&tokenizer()).expect("the kernel builds"))
        .clone()
}

/// A server on fake models, one per slot (loaded again, with the same knobs, after a panic).
pub fn start(config: ServerConfig, knobs: Knobs) -> Server {
    let tok = tokenizer();
    let (load_tok, end) = (tok.clone(), knobs.reasoning_end.clone());
    Server::start(
        &config,
        move |sequences| {
            knobs.loads.fetch_add(1, Ordering::SeqCst);
            let models = (0..sequences)
                .map(|_| FakeModel::new(knobs.clone(), &load_tok))
                .collect();
            PerSequence::new(models).map_err(generate::GenerateError::from)
        },
        move |lane: Lane| {
            let mut g = Generator::with_kernel(lane, tok.clone(), kernel())?;
            g.set_reasoning_end(end.clone());
            Ok::<_, generate::GenerateError>(g)
        },
    )
    .expect("the fake model loads")
}

/// A server on one fake model: one request generates at a time, so tests can tell what runs
/// and what waits.
pub fn config() -> ServerConfig {
    ServerConfig {
        model_id: "fake".into(),
        port: 0,
        parallel: 1,
        ..ServerConfig::default()
    }
}

/// A response: status, headers, content type, body text.
pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub content_type: String,
    pub text: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    /// Checks OpenAI's error shape and returns the error object.
    pub fn error(&self, status: u16) -> Value {
        assert_eq!(self.status.as_u16(), status, "{}", self.text);
        let v = self.json();
        let e = v["error"].clone();
        assert!(e["message"].is_string(), "{v}");
        assert!(e["type"].is_string(), "{v}");
        assert!(e.get("param").is_some() && e.get("code").is_some(), "{v}");
        e
    }

    /// The `data:` payloads of a server-sent event stream.
    pub fn events(&self) -> Vec<String> {
        assert!(
            self.content_type.starts_with("text/event-stream"),
            "{}",
            self.content_type
        );
        let mut out = Vec::new();
        for block in self.text.split("\n\n").filter(|b| !b.trim().is_empty()) {
            let lines: Vec<&str> = block.lines().collect();
            assert_eq!(lines.len(), 1, "one data line per event: {block:?}");
            let data = lines[0]
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data line: {block:?}"));
            out.push(data.to_string());
        }
        out
    }
}

/// One in-process request.
pub async fn call(router: &Router, method: &str, path: &str, body: Option<Value>) -> Reply {
    let req = Request::builder().method(method).uri(path);
    let req = match body {
        Some(b) => req
            .header("content-type", "application/json")
            .body(Body::from(b.to_string())),
        None => req.body(Body::empty()),
    }
    .unwrap();
    send(router, req).await
}

pub async fn send(router: &Router, req: Request<Body>) -> Reply {
    let resp = router.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let content_type = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    Reply {
        status,
        headers,
        content_type,
        text: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

/// Opens a connection and sends a chat completion request; the caller reads or drops it.
pub async fn raw_post(addr: std::net::SocketAddr, body: &Value) -> TcpStream {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body.as_bytes()).await.unwrap();
    s
}

/// Sends `request` (raw HTTP) on a new connection and reads until the server closes it (or
/// panics after `limit`).
pub async fn raw_exchange(addr: std::net::SocketAddr, request: &str, limit: Duration) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    read_to_close(&mut s, limit).await
}

/// Reads until the server closes the connection (or panics after `limit`).
pub async fn read_to_close(s: &mut TcpStream, limit: Duration) -> String {
    read_for(s, None, limit).await
}

/// Serves `server` on a free loopback port until the sender is used or dropped.
pub async fn serve_on_loopback(
    server: Server,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<Result<(), server::ServerError>>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server.run(listener, async move {
        let _ = rx.await;
    }));
    (addr, tx, task)
}

/// Reads until `needle` shows up (or panics after `limit`).
pub async fn read_until(s: &mut TcpStream, needle: &str, limit: Duration) -> String {
    read_for(s, Some(needle), limit).await
}

/// Reads until `needle` shows up, or without one until the connection closes; panics if
/// that takes longer than `limit`.
async fn read_for(s: &mut TcpStream, needle: Option<&str>, limit: Duration) -> String {
    let mut buf = Vec::new();
    let t = Instant::now();
    let mut chunk = [0u8; 4096];
    while !needle.is_some_and(|n| String::from_utf8_lossy(&buf).contains(n)) {
        let left = limit.saturating_sub(t.elapsed());
        assert!(
            !left.is_zero(),
            "no {} in {:?}",
            needle.map_or("close".to_string(), |n| format!("{n:?}")),
            String::from_utf8_lossy(&buf)
        );
        match tokio::time::timeout(left, s.read(&mut chunk)).await {
            Ok(Ok(0)) => break,
            Ok(Err(_)) if needle.is_none() => break,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            _ => {}
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

/// Asks for "Say hello" (the fake model's default script) and checks the answer.
pub async fn say_hello(router: &Router) {
    let reply = call(
        router,
        "POST",
        "/v1/chat/completions",
        Some(serde_json::json!({"messages": user("Say hello")})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(
        reply.json()["choices"][0]["message"]["content"],
        "Hello world"
    );
}

/// Polls `f` every 10 ms until it holds (panics after `limit`).
pub async fn eventually(limit: Duration, what: &str, mut f: impl AsyncFnMut() -> bool) {
    let t = Instant::now();
    while !f().await {
        assert!(t.elapsed() < limit, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub fn user(text: &str) -> Value {
    serde_json::json!([{"role": "user", "content": text}])
}

/// A chat completions tool with one string argument, `city`.
pub fn weather_tool() -> Value {
    serde_json::json!({"type": "function", "function": {"name": "get_weather",
        "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
            "required": ["city"], "additionalProperties": false}}})
}

/// A chat completions tool without arguments.
pub fn clock_tool() -> Value {
    serde_json::json!({"type": "function", "function": {"name": "current_time",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": false}}})
}

/// Knobs for a model that writes `script`.
pub fn script(script: &str) -> Knobs {
    Knobs {
        script: script.into(),
        ..Knobs::default()
    }
}
