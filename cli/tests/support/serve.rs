//! `stencil serve` as a child process, and a small blocking HTTP/1.1 client for it, shared by
//! the load tests (`tests/serve_load.rs`) and the `serve` bench (`benches/serve.rs`).
//!
//! The server is started on `--port 0` and its port read from the log line that says where it
//! listens; its log is kept (the last lines are printed when a test panics) and the process is
//! killed when the [`Server`] is dropped. The client opens one connection per request
//! (`connection: close`), reads bodies framed by a length or chunked, hands out server-sent
//! events as they arrive, and can be dropped mid-body like a client that goes away.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The most a read may wait before the exchange fails: a stuck server fails the caller
/// instead of hanging it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// How long the server may take to load the model and listen.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Log lines kept for [`Server::log_tail`].
const LOG_LINES: usize = 200;

/// The assets folder: `STENCIL_ASSETS`, else the workspace's `assets/`.
pub fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")))
}

/// A running `stencil serve`, killed on drop.
pub struct Server {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    log: Arc<Mutex<VecDeque<String>>>,
}

impl Server {
    /// Starts `exe serve --port 0 ARGS` with `STENCIL_ASSETS=assets` and waits until it
    /// listens.
    pub fn start(exe: &Path, assets: &Path, args: &[String]) -> Result<Server> {
        let mut child = Command::new(exe)
            .args(["serve", "--port", "0"])
            .args(args)
            .env("STENCIL_ASSETS", assets)
            .env("RUST_LOG", "info")
            .env_remove("RUST_BACKTRACE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {}", exe.display()))?;
        let stderr = child.stderr.take().context("the server's stderr")?;
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let (tx, rx) = mpsc::channel();
        let kept = Arc::clone(&log);
        // Reads the log to its end (a full pipe would block the server), keeping the last
        // lines and sending the address once.
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = listening_addr(&line)
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(addr);
                }
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                if kept.len() == LOG_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
        let mut server = Server {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            log,
        };
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(addr) => server.addr = addr,
            Err(_) => {
                // Give the reader a moment to keep the last lines of a server that exited.
                std::thread::sleep(Duration::from_millis(200));
                bail!(
                    "stencil serve did not listen within {START_TIMEOUT:?} (exit: {:?}); its log:\n{}",
                    server.child.try_wait().ok().flatten(),
                    server.log_tail(40)
                );
            }
        }
        Ok(server)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The resident set size in KiB (`VmRSS` in `/proc/<pid>/status`).
    pub fn rss_kib(&self) -> Result<u64> {
        let path = format!("/proc/{}/status", self.pid());
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .and_then(|v| v.trim().parse().ok())
            .with_context(|| format!("no VmRSS in {path}"))
    }

    /// `GET /health` as JSON (whatever its status).
    pub fn health(&self) -> Result<Value> {
        get(self.addr, "/health")?.json()
    }

    /// `GET /metrics` as text.
    pub fn metrics(&self) -> Result<String> {
        let reply = get(self.addr, "/metrics")?;
        if reply.status != 200 {
            bail!("GET /metrics: {}", reply.status);
        }
        reply.text()
    }

    /// `POST /v1/chat/completions`.
    pub fn chat(&self, body: &Value) -> Result<Reply> {
        post(self.addr, "/v1/chat/completions", body)
    }

    /// The last `n` lines of the server's log.
    pub fn log_tail(&self, n: usize) -> String {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let skip = log.len().saturating_sub(n);
        log.iter()
            .skip(skip)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- the last lines of stencil serve's log:\n{}",
                self.log_tail(40)
            );
        }
    }
}

/// The address in the server's `listening on http://ADDR` log line.
fn listening_addr(line: &str) -> Option<SocketAddr> {
    let (_, rest) = line.split_once("listening on http://")?;
    rest.split(|c: char| c.is_whitespace() || c == '/')
        .next()?
        .parse()
        .ok()
}

/// The value of the sample `name` (with its labels, if any, as the text format writes them:
/// `stencil_requests_total{outcome="cancelled"}`) in a Prometheus text exposition.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let value = l.strip_prefix(name)?.strip_prefix(' ')?;
        value.split_whitespace().next()?.parse().ok()
    })
}

/// `GET path`.
pub fn get(addr: SocketAddr, path: &str) -> Result<Reply> {
    send(addr, "GET", path, None)
}

/// `POST path` with a JSON body.
pub fn post(addr: SocketAddr, path: &str, body: &Value) -> Result<Reply> {
    send(addr, "POST", path, Some(body))
}

/// Sends one request on a new connection and reads the status line and the headers; the body
/// is read from the [`Reply`].
pub fn send(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Result<Reply> {
    let mut stream = TcpStream::connect(addr).with_context(|| format!("connecting to {addr}"))?;
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\
         accept: application/json, text/event-stream\r\n"
    );
    if method != "GET" {
        request.push_str(&format!(
            "content-type: application/json\r\ncontent-length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    stream
        .write_all(request.as_bytes())
        .with_context(|| format!("sending {method} {path}"))?;
    let mut reader = BufReader::new(stream);
    let status_line = read_line(&mut reader)?;
    let status = status_line
        .strip_prefix("HTTP/1.1 ")
        .and_then(|s| s.get(..3))
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("bad status line {status_line:?}"))?;
    let mut content_type = String::new();
    let mut framing = Framing::Close;
    loop {
        let line = read_line(&mut reader)?;
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            bail!("bad header line {line:?}");
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-type" => content_type = value.to_owned(),
            "content-length" => {
                framing = Framing::Length(value.parse().context("content-length")?);
            }
            "transfer-encoding" if value.eq_ignore_ascii_case("chunked") => {
                framing = Framing::Chunked {
                    left: 0,
                    done: false,
                };
            }
            _ => {}
        }
    }
    Ok(Reply {
        status,
        content_type,
        body: BufReader::new(Body { reader, framing }),
    })
}

/// A line without its line ending; an error at the end of the stream.
fn read_line(reader: &mut impl BufRead) -> Result<String> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        bail!("the connection closed mid-response");
    }
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

/// A response whose head has been read.
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The `content-type` header.
    pub content_type: String,
    body: BufReader<Body>,
}

impl Reply {
    /// The whole body as text.
    pub fn text(mut self) -> Result<String> {
        let mut text = String::new();
        self.body
            .read_to_string(&mut text)
            .context("reading the body")?;
        Ok(text)
    }

    /// The whole body as JSON.
    pub fn json(self) -> Result<Value> {
        let text = self.text()?;
        serde_json::from_str(&text).with_context(|| format!("the body is not JSON: {text}"))
    }

    /// The next `data:` payload of a server-sent event stream, as soon as it arrives; `None`
    /// at the end of the body.
    pub fn next_event(&mut self) -> Result<Option<String>> {
        loop {
            let mut line = String::new();
            if self.body.read_line(&mut line).context("reading an event")? == 0 {
                return Ok(None);
            }
            if let Some(data) = line.trim_end_matches(['\r', '\n']).strip_prefix("data:") {
                return Ok(Some(data.trim_start().to_owned()));
            }
        }
    }
}

/// How the body's end is known.
enum Framing {
    /// This many bytes are left.
    Length(u64),
    /// Chunked: `left` bytes of the current chunk are left; `done` after the last chunk.
    Chunked { left: u64, done: bool },
    /// The server closes the connection.
    Close,
}

/// A response body, unframed.
struct Body {
    reader: BufReader<TcpStream>,
    framing: Framing,
}

impl Body {
    /// Reads at most `left` bytes into `buf`, and counts them off `left`; running out of
    /// input before is an error.
    fn read_counted(&mut self, buf: &mut [u8], left: &mut u64) -> std::io::Result<usize> {
        let want = buf.len().min(usize::try_from(*left).unwrap_or(usize::MAX));
        let n = self.reader.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the body was cut short",
            ));
        }
        *left -= n as u64;
        Ok(n)
    }
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::{Error, ErrorKind};
        if buf.is_empty() {
            return Ok(0);
        }
        match self.framing {
            Framing::Close => self.reader.read(buf),
            Framing::Length(0) | Framing::Chunked { done: true, .. } => Ok(0),
            Framing::Length(mut left) => {
                let n = self.read_counted(buf, &mut left)?;
                self.framing = Framing::Length(left);
                Ok(n)
            }
            Framing::Chunked { mut left, .. } => {
                if left == 0 {
                    let line = read_line(&mut self.reader).map_err(Error::other)?;
                    let size = line.split(';').next().unwrap_or_default().trim();
                    left = u64::from_str_radix(size, 16).map_err(|_| {
                        Error::new(ErrorKind::InvalidData, format!("bad chunk size {line:?}"))
                    })?;
                    if left == 0 {
                        // Trailers, up to the empty line.
                        while !read_line(&mut self.reader)
                            .map_err(Error::other)?
                            .is_empty()
                        {}
                        self.framing = Framing::Chunked { left, done: true };
                        return Ok(0);
                    }
                }
                let n = self.read_counted(buf, &mut left)?;
                if left == 0 {
                    // The chunk's line ending.
                    read_line(&mut self.reader).map_err(Error::other)?;
                }
                self.framing = Framing::Chunked { left, done: false };
                Ok(n)
            }
        }
    }
}
