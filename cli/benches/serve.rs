//! `cargo xtask bench serve [-- --json FILE]`: `stencil serve` on the default model under 1, 2,
//! 4 and 8 concurrent clients.
//!
//! One server runs for the whole bench (`--parallel P`, passed on as is). For each concurrency
//! level in order, `c` warm-up requests at once (so each slot the level uses holds the prompt
//! in its KV cache: the level measures the steady state), then `c` clients each send `K`
//! constrained requests back to back (the same `json_schema` request for all, greedy), over
//! loopback. Per level: the
//! aggregate completion tokens per second (the sum of `usage.completion_tokens` over the
//! level's wall time), the p50 and p99 request latency, and the mean time of one token mask
//! (from `/metrics`: the level's share of `stencil_mask_seconds`, which records one mean per
//! request, so this is a mean of per-request means).

#[path = "../tests/support/serve.rs"]
mod serve;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use schema_compiler::corpus::Summary;
use serde_json::{Value, json};

use serve::Server;

/// The request every client sends: an object with five short strings, tens of tokens.
const PROMPT: &str = "Give five short facts about the Moon as JSON.";

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "topic": {"type": "string", "maxLength": 20},
        "facts": {"type": "array", "items": {"type": "string", "maxLength": 32},
            "minItems": 5, "maxItems": 5}},
        "required": ["topic", "facts"], "additionalProperties": false})
}

struct Args {
    json: Option<PathBuf>,
    concurrency: Vec<usize>,
    /// `None`: the server's default.
    parallel: Option<usize>,
    requests_per_client: usize,
    max_tokens: usize,
    /// `--threads-batch` for the server, if given.
    threads_batch: Option<u32>,
}

const HELP: &str = "serve bench: [--json FILE] [--concurrency LIST (1,2,4,8)] \
    [--parallel P (8; 0 leaves it to stencil serve)] [--requests-per-client K (4)] \
    [--max-tokens M (64)] [--threads-batch N (the server's default)]";

fn parse_args() -> Result<Args> {
    let mut args = Args {
        json: None,
        concurrency: vec![1, 2, 4, 8],
        parallel: Some(8),
        requests_per_client: 4,
        max_tokens: 64,
        threads_batch: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            // Passed by `cargo bench`.
            "--bench" => {}
            "--json" => args.json = Some(PathBuf::from(value("--json")?)),
            "--concurrency" => {
                args.concurrency = value("--concurrency")?
                    .split(',')
                    .map(|c| c.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .context("--concurrency is a list of numbers, such as 1,2,4,8")?;
            }
            "--parallel" => {
                args.parallel = match value("--parallel")?.parse()? {
                    0 => None,
                    p => Some(p),
                }
            }
            "--requests-per-client" => {
                args.requests_per_client = value("--requests-per-client")?.parse()?;
            }
            "--max-tokens" => args.max_tokens = value("--max-tokens")?.parse()?,
            "--threads-batch" => args.threads_batch = Some(value("--threads-batch")?.parse()?),
            "--help" | "-h" => {
                println!("{HELP}");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    if args.concurrency.is_empty() || args.concurrency.contains(&0) {
        bail!("--concurrency needs positive numbers");
    }
    if args.requests_per_client == 0 || args.max_tokens == 0 {
        bail!("--requests-per-client and --max-tokens must be positive");
    }
    Ok(args)
}

/// What one concurrency level measured.
struct Level {
    concurrency: usize,
    requests: usize,
    tokens: u64,
    wall_s: f64,
    tokens_per_s: f64,
    latency_ms: Summary,
    /// `None` when no constrained request finished in the level.
    mask_us_mean: Option<f64>,
}

/// Sends the bench's request; returns its completion tokens.
fn one_request(server: &Server, body: &Value) -> Result<u64> {
    let reply = server.chat(body)?;
    let status = reply.status;
    let reply = reply.json()?;
    ensure!(status == 200, "status {status}: {reply}");
    let content = reply["choices"][0]["message"]["content"]
        .as_str()
        .with_context(|| format!("no content: {reply}"))?;
    serde_json::from_str::<Value>(content)
        .with_context(|| format!("the answer is not JSON: {content:?}"))?;
    reply["usage"]["completion_tokens"]
        .as_u64()
        .with_context(|| format!("no usage: {reply}"))
}

/// `stencil_mask_seconds`' sum and count.
fn mask_seconds(server: &Server) -> Result<(f64, f64)> {
    let text = server.metrics()?;
    let get = |name| serve::metric(&text, name).with_context(|| format!("no {name} in /metrics"));
    Ok((
        get("stencil_mask_seconds_sum")?,
        get("stencil_mask_seconds_count")?,
    ))
}

fn level(server: &Server, body: &Value, concurrency: usize, per_client: usize) -> Result<Level> {
    // Warm up as many slots as the level will use, at once: each slot's KV cache then holds
    // the prompt and its mask cache the schema, so the level measures the steady state.
    std::thread::scope(|s| {
        let warm: Vec<_> = (0..concurrency)
            .map(|_| s.spawn(|| one_request(server, body)))
            .collect();
        warm.into_iter()
            .try_for_each(|h| h.join().expect("a client thread panicked").map(drop))
    })
    .context("the warm-up requests")?;
    let (sum_before, count_before) = mask_seconds(server)?;
    let started = Instant::now();
    let results: Vec<Result<Vec<(f64, u64)>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..concurrency)
            .map(|_| {
                s.spawn(|| {
                    (0..per_client)
                        .map(|_| {
                            let t = Instant::now();
                            let tokens = one_request(server, body)?;
                            Ok((t.elapsed().as_secs_f64() * 1e3, tokens))
                        })
                        .collect()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a client thread panicked"))
            .collect()
    });
    let wall_s = started.elapsed().as_secs_f64();
    let (sum_after, count_after) = mask_seconds(server)?;
    let mut latencies = Vec::new();
    let mut tokens = 0;
    for r in results {
        for (ms, t) in r? {
            latencies.push(ms);
            tokens += t;
        }
    }
    let masks = count_after - count_before;
    Ok(Level {
        concurrency,
        requests: latencies.len(),
        tokens,
        wall_s,
        tokens_per_s: tokens as f64 / wall_s,
        latency_ms: Summary::of(&mut latencies),
        mask_us_mean: (masks > 0.0).then(|| (sum_after - sum_before) / masks * 1e6),
    })
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let mut serve_args = vec![
        "--queue".to_owned(),
        (2 * args.concurrency.iter().max().copied().unwrap_or(1))
            .max(32)
            .to_string(),
        "--max-tokens-limit".to_owned(),
        args.max_tokens.max(2048).to_string(),
    ];
    if let Some(t) = args.threads_batch {
        serve_args.extend(["--threads-batch".to_owned(), t.to_string()]);
    }
    if let Some(p) = args.parallel {
        serve_args.extend(["--parallel".to_owned(), p.to_string()]);
    }
    let server = Server::start(
        Path::new(env!("CARGO_BIN_EXE_stencil")),
        &serve::assets(),
        &serve_args,
    )?;
    let health = server.health()?;
    let model = health["model"].as_str().unwrap_or_default().to_owned();
    println!(
        "stencil serve {} on {model} ({} slot(s)); {} request(s) per client, max_tokens {}",
        serve_args.join(" "),
        health["slots"]["total"],
        args.requests_per_client,
        args.max_tokens
    );
    let body = json!({"messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": args.max_tokens, "temperature": 0,
        "response_format": {"type": "json_schema",
            "json_schema": {"name": "facts", "schema": schema()}}});
    println!(
        "{:>11} {:>8} {:>7} {:>7} {:>9} {:>8} {:>8} {:>8}",
        "concurrency", "requests", "tokens", "wall_s", "tokens/s", "p50_ms", "p99_ms", "mask_us"
    );
    let mut levels = Vec::new();
    for &c in &args.concurrency {
        let l = level(&server, &body, c, args.requests_per_client)
            .with_context(|| format!("concurrency {c}"))?;
        println!(
            "{:>11} {:>8} {:>7} {:>7.2} {:>9.1} {:>8.0} {:>8.0} {:>8}",
            l.concurrency,
            l.requests,
            l.tokens,
            l.wall_s,
            l.tokens_per_s,
            l.latency_ms.p50,
            l.latency_ms.p99,
            l.mask_us_mean.map_or("-".to_owned(), |m| format!("{m:.1}"))
        );
        levels.push(l);
    }
    // The highest level against concurrency 1 (or the lowest measured).
    let base = levels
        .iter()
        .find(|l| l.concurrency == 1)
        .or_else(|| levels.iter().min_by_key(|l| l.concurrency));
    let top = levels.iter().max_by_key(|l| l.concurrency);
    if let (Some(base), Some(top)) = (base, top)
        && base.tokens_per_s > 0.0
    {
        println!(
            "tokens/s at concurrency {} over concurrency {}: {:.2}x",
            top.concurrency,
            base.concurrency,
            top.tokens_per_s / base.tokens_per_s
        );
    }
    if let Some(path) = &args.json {
        let out = json!({
            "concurrency": levels.iter().map(|l| l.concurrency).collect::<Vec<_>>(),
            "tokens_per_s": levels.iter().map(|l| l.tokens_per_s).collect::<Vec<_>>(),
            "p50_latency_ms": levels.iter().map(|l| l.latency_ms.p50).collect::<Vec<_>>(),
            "p99_latency_ms": levels.iter().map(|l| l.latency_ms.p99).collect::<Vec<_>>(),
            "mask_us_mean": levels.iter().map(|l| l.mask_us_mean).collect::<Vec<_>>(),
            "parallel": args.parallel,
            "model": model,
            "requests_per_client": args.requests_per_client,
            "max_tokens": args.max_tokens,
        });
        std::fs::write(path, serde_json::to_string_pretty(&out)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
