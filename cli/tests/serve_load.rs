//! `stencil serve` on the default model under load and faults, over loopback: 64 clients at
//! once for three rounds of mixed requests (schemas, forced tool calls, streamed schemas, plain
//! text), each answer checked against its schema by an independent validator and the server's
//! memory steady from round to round; and streaming clients that leave mid-answer, whose slots
//! come free and count as cancelled while the server goes on answering.
//!
//! `STENCIL_TEST_PARALLEL` sets the `--parallel` the server gets (8 by default; `0` leaves the
//! flag out, for a server that generates one request at a time).

#[path = "support/serve.rs"]
mod serve;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use serve::Server;

/// Clients at once in the load test.
const CLIENTS: usize = 64;
/// Rounds of the load test; every client sends one request a round.
const ROUNDS: usize = 3;
/// The completion budget of a constrained request: room for the short answers the schemas
/// below allow.
const MAX_TOKENS: u64 = 96;
/// The completion budget of a plain text request.
const TEXT_MAX_TOKENS: u64 = 32;

/// The `--parallel` argument: `STENCIL_TEST_PARALLEL`, else 8; none for `0`.
fn parallel_args() -> Vec<String> {
    let parallel = std::env::var("STENCIL_TEST_PARALLEL").unwrap_or_else(|_| "8".into());
    match parallel.trim() {
        "0" => Vec::new(),
        p => vec!["--parallel".into(), p.into()],
    }
}

/// `stencil serve` on the default model with `--queue queue` and the `--parallel` argument.
fn start(queue: usize) -> Server {
    let mut args = parallel_args();
    args.extend(["--queue".into(), queue.to_string()]);
    Server::start(
        Path::new(env!("CARGO_BIN_EXE_stencil")),
        &serve::assets(),
        &args,
    )
    .expect("stencil serve starts")
}

/// A string of at most 16 characters.
fn short_text() -> Value {
    json!({"type": "string", "maxLength": 16})
}

/// The schemas of the constrained requests. Every string is bounded by its length, every
/// number by its range and every array by `maxItems`, so answers are short (and one that would
/// run past the budget is closed within it, still following its schema).
fn schemas() -> [Value; 3] {
    [
        json!({"type": "object", "properties": {
            "name": short_text(),
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "role": {"enum": ["admin", "editor", "viewer"]}},
            "required": ["name", "age", "role"], "additionalProperties": false}),
        json!({"type": "object", "properties": {
            "title": short_text(),
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,10}$"},
                "minItems": 1, "maxItems": 3}},
            "required": ["title", "tags"], "additionalProperties": false}),
        json!({"type": "object", "properties": {
            "item": {"enum": ["apple", "bread", "cheese", "milk"]},
            "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
            "express": {"type": "boolean"}},
            "required": ["item", "quantity", "express"], "additionalProperties": false}),
    ]
}

/// The parameters of the tool the tool requests force.
fn weather_parameters() -> Value {
    json!({"type": "object", "properties": {
        "city": short_text(),
        "unit": {"enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": false})
}

const NAMES: [&str; 8] = [
    "Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken",
];
const CITIES: [&str; 6] = ["Paris", "Lagos", "Lima", "Oslo", "Osaka", "Quito"];

/// One request of the mix.
enum Kind {
    /// `response_format` `json_schema` with the `n`th schema, left out of the prompt
    /// (`schema_in_prompt: off`, which also keeps the prompts and the test short).
    Schema(usize),
    /// A forced call of `get_weather`.
    Tool,
    /// A streamed `json_schema` request with the `n`th schema, put into the prompt (the
    /// default).
    Stream(usize),
    /// Plain text.
    Text,
}

/// The mix: what client `client` sends in round `round`.
fn kind(client: usize, round: usize) -> Kind {
    match (client + 3 * round) % 8 {
        0 => Kind::Schema(0),
        1 => Kind::Schema(1),
        2 => Kind::Schema(2),
        3 | 4 => Kind::Tool,
        5 => Kind::Stream(1),
        6 => Kind::Stream(0),
        _ => Kind::Text,
    }
}

fn user(text: String) -> Value {
    json!([{"role": "user", "content": text}])
}

fn response_format(schema: &Value) -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}})
}

/// Checks `text` against `schema` with the `jsonschema` crate.
fn check(schema: &Value, text: &str) -> Result<()> {
    let instance: Value =
        serde_json::from_str(text).with_context(|| format!("not JSON: {text:?}"))?;
    let validator = jsonschema::draft202012::new(schema).context("a valid schema")?;
    if let Err(e) = validator.validate(&instance) {
        bail!("{text} does not follow the schema: {e}");
    }
    Ok(())
}

/// The JSON body of a reply that must be a 200.
fn ok_json(reply: serve::Reply) -> Result<Value> {
    let status = reply.status;
    let body = reply.text()?;
    ensure!(status == 200, "status {status}: {body}");
    serde_json::from_str(&body).with_context(|| format!("not JSON: {body}"))
}

/// Sends one request of the mix and checks its answer; returns its completion tokens.
fn one_request(server: &Server, client: usize, round: usize) -> Result<u64> {
    let name = NAMES[client % NAMES.len()];
    let city = CITIES[(client + round) % CITIES.len()];
    let schemas = schemas();
    match kind(client, round) {
        Kind::Schema(n) => {
            let prompt = [
                format!("Describe a person called {name} as JSON."),
                format!("Give a title and tags for a talk by {name}, as JSON."),
                format!("{name} orders some food. Write the order as JSON."),
            ];
            let body = json!({"messages": user(prompt[n].clone()), "max_tokens": MAX_TOKENS,
                "response_format": response_format(&schemas[n]), "schema_in_prompt": "off"});
            let reply = ok_json(server.chat(&body)?)?;
            let content = reply["choices"][0]["message"]["content"]
                .as_str()
                .with_context(|| format!("no content: {reply}"))?;
            check(&schemas[n], content)?;
            Ok(reply["usage"]["completion_tokens"].as_u64().unwrap_or(0))
        }
        Kind::Tool => {
            let parameters = weather_parameters();
            let body = json!({"messages": user(format!("What is the weather in {city}?")),
                "max_tokens": MAX_TOKENS,
                "tools": [{"type": "function", "function": {"name": "get_weather",
                    "description": "The current weather in a city", "parameters": parameters}}],
                "tool_choice": {"type": "function", "function": {"name": "get_weather"}}});
            let reply = ok_json(server.chat(&body)?)?;
            let call = &reply["choices"][0]["message"]["tool_calls"][0]["function"];
            ensure!(
                call["name"] == "get_weather",
                "no call of get_weather: {reply}"
            );
            let arguments = call["arguments"]
                .as_str()
                .with_context(|| format!("no arguments: {reply}"))?;
            check(&parameters, arguments)?;
            Ok(reply["usage"]["completion_tokens"].as_u64().unwrap_or(0))
        }
        Kind::Stream(n) => {
            let prompt = [
                format!("Describe a person called {name} as JSON."),
                format!("Give a title and tags for a talk by {name}, as JSON."),
            ];
            let body = json!({"messages": user(prompt[n].clone()), "max_tokens": MAX_TOKENS,
                "stream": true, "stream_options": {"include_usage": true},
                "response_format": response_format(&schemas[n])});
            let mut reply = server.chat(&body)?;
            if reply.status != 200 {
                let status = reply.status;
                bail!("status {status}: {}", reply.text()?);
            }
            ensure!(
                reply.content_type.starts_with("text/event-stream"),
                "{}",
                reply.content_type
            );
            let (mut content, mut finish, mut done, mut tokens) = (String::new(), None, false, 0);
            while let Some(data) = reply.next_event()? {
                if data == "[DONE]" {
                    done = true;
                    continue;
                }
                let chunk: Value = serde_json::from_str(&data)
                    .with_context(|| format!("an event is not JSON: {data}"))?;
                ensure!(chunk.get("error").is_none(), "an error event: {data}");
                if let Some(t) = chunk["usage"]["completion_tokens"].as_u64() {
                    tokens = t;
                }
                let Some(choice) = chunk["choices"].get(0) else {
                    continue;
                };
                if let Some(delta) = choice["delta"]["content"].as_str() {
                    content.push_str(delta);
                }
                if let Some(reason) = choice["finish_reason"].as_str() {
                    finish = Some(reason.to_owned());
                }
            }
            ensure!(done, "the stream ended without [DONE]: {content:?}");
            ensure!(finish.is_some(), "no finish_reason: {content:?}");
            check(&schemas[n], &content)?;
            Ok(tokens)
        }
        Kind::Text => {
            let body = json!({"messages": user(format!("Say hello to {name} in one sentence.")),
                "max_tokens": TEXT_MAX_TOKENS});
            let reply = ok_json(server.chat(&body)?)?;
            let content = reply["choices"][0]["message"]["content"]
                .as_str()
                .with_context(|| format!("no content: {reply}"))?;
            ensure!(!content.trim().is_empty(), "an empty answer: {reply}");
            Ok(reply["usage"]["completion_tokens"].as_u64().unwrap_or(0))
        }
    }
}

/// 64 clients at once, three rounds of one request each from a mix of constrained, tool,
/// streamed and plain requests: every one is answered 200 and follows its schema, and the
/// server's resident memory after the last round is within 10% of what it was after the first.
#[test]
fn sixty_four_clients_for_three_rounds() {
    let server = start(CLIENTS);
    let mut rss = Vec::new();
    for round in 0..ROUNDS {
        let started = Instant::now();
        let results: Vec<Result<u64>> = std::thread::scope(|s| {
            let server = &server;
            let handles: Vec<_> = (0..CLIENTS)
                .map(|client| {
                    s.spawn(move || {
                        one_request(server, client, round)
                            .with_context(|| format!("client {client}, round {}", round + 1))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a client thread panicked"))
                .collect()
        });
        let wall = started.elapsed();
        let failures: Vec<String> = results
            .iter()
            .filter_map(|r| r.as_ref().err().map(|e| format!("{e:#}")))
            .collect();
        assert!(
            failures.is_empty(),
            "{} of {CLIENTS} requests failed in round {}:\n{}",
            failures.len(),
            round + 1,
            failures.join("\n")
        );
        let tokens: u64 = results.iter().map(|r| *r.as_ref().unwrap()).sum();
        let kib = server.rss_kib().expect("the server's RSS");
        println!(
            "round {}: {CLIENTS} requests, {tokens} completion tokens in {:.1} s \
             ({:.0} tokens/s), RSS {:.1} MiB",
            round + 1,
            wall.as_secs_f64(),
            tokens as f64 / wall.as_secs_f64(),
            kib as f64 / 1024.0
        );
        rss.push(kib);
    }
    let health = server.health().expect("GET /health");
    assert_eq!(health["requests"]["rejected_queue_full"], 0, "{health}");
    assert_eq!(health["requests"]["failed"], 0, "{health}");
    let (first, last) = (rss[0] as f64, rss[ROUNDS - 1] as f64);
    assert!(
        (last - first).abs() <= 0.10 * first,
        "RSS went from {first} KiB after round 1 to {last} KiB after round {ROUNDS}: {rss:?}"
    );
}

/// Streaming clients that leave after the first piece of a long answer: their requests are
/// cancelled (no slot stays busy generating for nobody), and the next request is answered.
#[test]
fn clients_that_leave_mid_stream_free_their_slots() {
    const LEAVING: usize = 4;
    let server = start(16);
    let cancelled_before = server.health().expect("GET /health")["requests"]["cancelled"]
        .as_u64()
        .expect("a cancelled count");
    // At least 200 strings: far more than the clients wait for.
    let long = json!({"type": "array", "items": {"type": "string", "pattern": "^[a-z ]{8,40}$"},
        "minItems": 200, "maxItems": 400});
    let body = json!({"messages": user("List two hundred facts about the sea.".into()),
        "max_tokens": 2000, "stream": true, "response_format": response_format(&long)});
    let started = Instant::now();
    std::thread::scope(|s| {
        for client in 0..LEAVING {
            let (server, body) = (&server, &body);
            s.spawn(move || {
                let mut reply = server.chat(body).expect("the request is sent");
                assert_eq!(reply.status, 200, "client {client}");
                loop {
                    let data = reply
                        .next_event()
                        .expect("an event")
                        .unwrap_or_else(|| panic!("client {client}: the stream ended"));
                    let chunk: Value = serde_json::from_str(&data).expect("a JSON event");
                    let content = chunk["choices"][0]["delta"]["content"].as_str();
                    if content.is_some_and(|c| !c.is_empty()) {
                        break;
                    }
                }
                // Dropping the reply closes the connection.
            });
        }
    });
    println!(
        "{LEAVING} clients got their first piece and left after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let limit = Duration::from_secs(30);
    let left = Instant::now();
    loop {
        let health = server.health().expect("GET /health");
        let metrics = server.metrics().expect("GET /metrics");
        let cancelled = health["requests"]["cancelled"].as_u64().unwrap_or(0);
        let active = health["slots"]["active"].as_u64();
        let active_metric = serve::metric(&metrics, "stencil_slots_active");
        if active == Some(0)
            && active_metric == Some(0.0)
            && cancelled >= cancelled_before + LEAVING as u64
        {
            println!(
                "slots free and {} requests cancelled {:.2} s after the last client left",
                cancelled - cancelled_before,
                left.elapsed().as_secs_f64()
            );
            break;
        }
        assert!(
            left.elapsed() < limit,
            "after {limit:?}: {health}\nstencil_slots_active {active_metric:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let schema = &schemas()[0];
    let body = json!({"messages": user("Describe a person called Ada as JSON.".into()),
        "max_tokens": MAX_TOKENS, "response_format": response_format(schema)});
    let reply = ok_json(server.chat(&body).expect("the request is sent")).expect("a 200");
    let content = reply["choices"][0]["message"]["content"]
        .as_str()
        .expect("a content");
    check(schema, content).expect("the answer follows the schema");
}

/// The server reads its tokenizer with the model: a `--tokenizer` of another model is refused
/// before it listens, and the model's own `tokenizer.json` serves, on another model than the
/// default (Gemma 3, whose vocabulary is five times SmolLM2's) with several slots.
#[test]
fn a_served_models_tokenizer_is_checked_against_it() {
    let assets = serve::assets();
    let gemma = assets.join("models/gemma-3-270m-q4_k_m.gguf");
    let args = |tokenizer: &str| -> Vec<String> {
        let tokenizer = assets.join(format!("tokenizers/{tokenizer}/tokenizer.json"));
        vec![
            "--model".into(),
            gemma.display().to_string(),
            "--tokenizer".into(),
            tokenizer.display().to_string(),
            "--parallel".into(),
            "2".into(),
        ]
    };
    let exe = Path::new(env!("CARGO_BIN_EXE_stencil"));
    let refused = Server::start(exe, &assets, &args("llama3"))
        .err()
        .expect("a server with another model's tokenizer does not listen");
    let message = format!("{refused:#}");
    assert!(
        message.contains("does not belong to the model"),
        "{message}"
    );

    let server = Server::start(exe, &assets, &args("gemma3")).expect("stencil serve starts");
    let schema = json!({"type": "object", "properties": {"name": short_text()},
        "required": ["name"], "additionalProperties": false});
    let body = json!({"messages": user("Name a city.".into()), "max_tokens": MAX_TOKENS,
        "response_format": response_format(&schema)});
    let reply = ok_json(server.chat(&body).expect("the request is sent")).expect("an answer");
    let text = reply["choices"][0]["message"]["content"]
        .as_str()
        .expect("a content string");
    check(&schema, text).expect("the answer follows the schema");
}
