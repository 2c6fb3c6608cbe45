//! The server's HTTP surface on a fake model: routes, response and error shapes, server-sent
//! events, limits, the bounded queue, cancellation on disconnect and graceful shutdown.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Value, json};
use server::ServerConfig;
use support::*;

const SCHEMA: &str = r#"{"type": "object", "properties": {"answer": {"type": "integer"},
    "ok": {"type": "boolean"}}, "required": ["answer", "ok"], "additionalProperties": false}"#;

fn schema() -> Value {
    serde_json::from_str(SCHEMA).unwrap()
}

fn json_schema_format(schema: Value) -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": true}})
}

async fn health(router: &axum::Router) -> Value {
    call(router, "GET", "/health", None).await.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_and_error_shapes() {
    let server = start(config(), Knobs::default());
    let r = server.router();

    let h = call(&r, "GET", "/health", None).await;
    assert_eq!(h.status, 200);
    assert_eq!(h.json()["status"], "ok");
    assert_eq!(h.json()["model"], "fake");

    let m = call(&r, "GET", "/v1/models", None).await.json();
    assert_eq!(m["object"], "list");
    assert_eq!(m["data"][0]["id"], "fake");
    assert_eq!(m["data"][0]["object"], "model");
    assert_eq!(
        call(&r, "GET", "/v1/models/fake", None).await.json()["id"],
        "fake"
    );
    let e = call(&r, "GET", "/v1/models/gpt-4o", None).await.error(404);
    assert_eq!(e["code"], "model_not_found");

    let e = call(&r, "GET", "/v1/nope", None).await.error(404);
    assert_eq!(e["type"], "invalid_request_error");
    call(&r, "GET", "/v1/chat/completions", None)
        .await
        .error(405);

    // Not JSON, a missing field, a wrong type.
    let req = Request::post("/v1/chat/completions")
        .header("content-type", "application/json")
        .body(Body::from("{oops"))
        .unwrap();
    let e = send(&r, req).await.error(400);
    assert!(
        e["message"].as_str().unwrap().contains("not valid JSON"),
        "{e}"
    );
    let e = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"model": "x"})),
    )
    .await
    .error(400);
    assert!(e["message"].as_str().unwrap().contains("messages"), "{e}");
    let e = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("hi"), "temperature": "hot"})),
    )
    .await
    .error(400);
    assert_eq!(e["param"], "temperature");

    // max_tokens over the limit is a 400 naming the parameter.
    let e = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("hi"), "max_tokens": 100_000})),
    )
    .await
    .error(400);
    assert_eq!(e["param"], "max_tokens");
    assert!(e["message"].as_str().unwrap().contains("2048"), "{e}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_completion_and_usage() {
    let server = start(config(), Knobs::default());
    let r = server.router();
    let reply = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"model": "anything", "messages": user("Say hello"), "temperature": 0})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let v = reply.json();
    assert_eq!(v["object"], "chat.completion");
    assert!(v["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(v["model"], "fake");
    assert!(v["created"].is_u64());
    let choice = &v["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Hello world");
    assert_eq!(choice["finish_reason"], "stop");
    let u = &v["usage"];
    assert!(u["prompt_tokens"].as_u64().unwrap() > 3);
    assert_eq!(u["completion_tokens"], 2);
    assert_eq!(
        u["total_tokens"].as_u64(),
        Some(u["prompt_tokens"].as_u64().unwrap() + 2)
    );

    // The budget cuts the text: finish_reason "length".
    let v = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("Say hello"), "max_completion_tokens": 1})),
    )
    .await
    .json();
    assert_eq!(v["choices"][0]["message"]["content"], "Hello");
    assert_eq!(v["choices"][0]["finish_reason"], "length");

    // A stop string ends the text before it.
    let v = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("Say hello"), "stop": [" wor"]})),
    )
    .await
    .json();
    assert_eq!(v["choices"][0]["message"]["content"], "Hello");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_schema_output_is_valid_and_the_schema_is_cached() {
    let server = start(config(), json_knobs());
    let r = server.router();
    for format in [json_schema_format(schema()), json!({"type": "json_object"})] {
        for _ in 0..2 {
            let reply = call(
                &r,
                "POST",
                "/v1/chat/completions",
                Some(
                    json!({"messages": user("Answer"), "response_format": format,
                    "max_tokens": 40}),
                ),
            )
            .await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            let v = reply.json();
            let content = v["choices"][0]["message"]["content"].as_str().unwrap();
            let doc: Value = serde_json::from_str(content)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {content}"));
            assert_eq!(doc, json!({"answer": 42, "ok": true}));
        }
    }
    let cache = &health(&r).await["requests"]["schema_cache"];
    assert_eq!(cache["misses"], 2, "{cache}");
    assert_eq!(cache["hits"], 2, "{cache}");

    // A streamed JSON document reassembles.
    let reply = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(
            json!({"messages": user("Answer"), "stream": true, "max_tokens": 40,
            "response_format": json_schema_format(schema())}),
        ),
    )
    .await;
    let events = reply.events();
    let text: String = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str::<Value>(e).unwrap())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_string)
        })
        .collect();
    let doc: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(doc, json!({"answer": 42, "ok": true}));
    server.stop().await;
}

/// The model writes this JSON wherever the constraint lets it.
fn json_knobs() -> Knobs {
    Knobs {
        // Compact, as generation writes it by default.
        script: r#"{"answer":42,"ok":true}"#.into(),
        ..Knobs::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_that_does_not_compile_is_a_400_even_when_streaming() {
    let server = start(config(), Knobs::default());
    let r = server.router();
    let bad =
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}});
    for stream in [false, true] {
        let reply = call(
            &r,
            "POST",
            "/v1/chat/completions",
            Some(
                json!({"messages": user("x"), "response_format": json_schema_format(bad.clone()),
                "stream": stream}),
            ),
        )
        .await;
        let e = reply.error(400);
        assert_eq!(e["type"], "invalid_request_error");
        assert_eq!(e["param"], "response_format");
        assert_eq!(e["code"], "invalid_json_schema");
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains("minimum"), "keyword missing: {msg}");
        assert!(msg.contains("#/properties/n"), "pointer missing: {msg}");
    }
    server.stop().await;
}

/// A schema no document satisfies is refused before anything is generated (it used to end in
/// a 500 once whitespace padding ran out of room).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsatisfiable_schema_is_a_400() {
    let server = start(config(), Knobs::default());
    let r = server.router();
    for schema in [
        json!({"not": {}}),
        json!({"type": "integer", "minimum": 5, "maximum": 4}),
    ] {
        let reply = call(
            &r,
            "POST",
            "/v1/chat/completions",
            Some(json!({"messages": user("x"), "response_format": json_schema_format(schema)})),
        )
        .await;
        let e = reply.error(400);
        assert_eq!(e["code"], "invalid_json_schema");
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains("unsatisfiable schema at #"), "{msg}");
    }
    server.stop().await;
}

/// A schema number written with more digits than a 64-bit float keeps is read from the
/// request's text: in `enum` it is refused (it would otherwise stand for the float it rounds
/// to, `1e29`), in a tool's bound it is taken as written; the same schema written with the
/// short value compiles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_numbers_are_read_as_written() {
    let server = start(config(), json_knobs());
    let r = server.router();
    let post = |body: String| {
        Request::post("/v1/chat/completions")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let format = |n: &str| {
        format!(
            r#"{{"messages": [{{"role": "user", "content": "x"}}], "response_format":
            {{"type": "json_schema", "json_schema": {{"name": "n", "schema":
            {{"type": "object", "properties": {{"answer": {{"enum": [42, {n}]}}}}}}}}}}}}"#
        )
    };
    let e = send(&r, post(format("100000000000000000000000000001")))
        .await
        .error(400);
    assert_eq!(e["code"], "invalid_json_schema");
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("enum/1"), "{msg}");
    assert!(
        msg.contains("more significant digits than such a float keeps"),
        "{msg}"
    );
    // The same schema with the value it rounds to is another schema, and compiles.
    let reply = send(&r, post(format("1e29"))).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    // A bound keeps its digits: `answer` may be 42, below the bound as written.
    let bounded = r#"{"messages": [{"role": "user", "content": "x"}], "response_format":
        {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object",
        "properties": {"answer": {"type": "integer",
        "exclusiveMaximum": 42.0000000000000000000001}}}}}}"#;
    let reply = send(&r, post(bounded.to_string())).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let content = reply.json()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let doc: Value = serde_json::from_str(&content).unwrap();
    assert_eq!(doc["answer"], 42, "{content}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_sent_events_in_openai_chunk_format() {
    let server = start(config(), Knobs::default());
    let r = server.router();
    let reply = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("Say hello"), "stream": true,
            "stream_options": {"include_usage": true}})),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let events = reply.events();
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let id = chunks[0]["id"].clone();
    let mut text = String::new();
    let mut finish = Vec::new();
    for c in &chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["id"], id, "one id per stream");
        assert_eq!(c["model"], "fake");
        if let Some(choice) = c["choices"].get(0) {
            assert!(c["usage"].is_null());
            text.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
            if let Some(f) = choice["finish_reason"].as_str() {
                finish.push(f.to_string());
            }
        }
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(text, "Hello world");
    assert_eq!(finish, ["stop"]);
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 2);

    // Without include_usage: no usage key at all, no usage chunk.
    let reply = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("Say hello"), "stream": true, "stop": "world"})),
    )
    .await;
    let events = reply.events();
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello ", "the stop string never reaches the stream");

    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_in_openai_shape() {
    let server = start(
        config(),
        Knobs {
            script: r#"{"tool_calls":[{"name":"current_time","arguments":{}}]}"#.into(),
            also: vec![
                r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#.into(),
            ],
            ..Knobs::default()
        },
    );
    let r = server.router();
    let tools = json!([weather_tool(), clock_tool()]);
    // The model wants to call current_time; a named choice makes it call get_weather.
    let named = json!({"type": "function", "function": {"name": "get_weather"}});
    for (choice, expect) in [(json!("required"), "current_time"), (named, "get_weather")] {
        let v = call(
            &r,
            "POST",
            "/v1/chat/completions",
            Some(
                json!({"messages": user("Weather in Paris?"), "tools": tools,
                "tool_choice": choice, "max_tokens": 60, "temperature": 0}),
            ),
        )
        .await
        .json();
        let choice = &v["choices"][0];
        assert_eq!(choice["finish_reason"], "tool_calls", "{v}");
        assert!(choice["message"]["content"].is_null(), "{v}");
        let calls = choice["message"]["tool_calls"].as_array().unwrap();
        assert!(!calls.is_empty());
        for c in calls {
            assert_eq!(c["type"], "function");
            assert!(c["id"].as_str().unwrap().starts_with("call_"));
            let name = c["function"]["name"].as_str().unwrap();
            assert_eq!(name, expect, "{c}");
            let args: Value =
                serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
            if name == "get_weather" {
                assert_eq!(args, json!({"city": "Paris"}));
            } else {
                assert_eq!(args, json!({}));
            }
        }
    }

    // Streaming: tool-call deltas with an index, then finish_reason "tool_calls".
    let reply = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(
            json!({"messages": user("Weather?"), "tools": [weather_tool()],
            "tool_choice": "required", "stream": true, "max_tokens": 60, "temperature": 0}),
        ),
    )
    .await;
    let events = reply.events();
    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let call_chunk = chunks
        .iter()
        .find(|c| c["choices"][0]["delta"]["tool_calls"].is_array())
        .unwrap_or_else(|| panic!("no tool call chunk in {}", reply.text));
    let tc = &call_chunk["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(tc["index"], 0);
    assert_eq!(tc["function"]["name"], "get_weather");
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );

    // A budget too small for even the shortest call is the client's 400, not a 500.
    let e = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(
            json!({"messages": user("Weather?"), "tools": tools, "tool_choice": "required",
            "max_tokens": 3, "temperature": 0}),
        ),
    )
    .await
    .error(400);
    assert_eq!(e["param"], "max_tokens");
    assert_eq!(e["code"], "max_tokens_too_small");
    // The message says how generation stopped.
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("(MaxTokens) after 3 tokens"), "{message}");
    server.stop().await;

    // Auto and none, on a model that answers in text.
    let server = start(config(), Knobs::default());
    let r = server.router();
    let v = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("Say hello"), "tools": tools, "tool_choice": "none"})),
    )
    .await
    .json();
    assert_eq!(v["choices"][0]["message"]["content"], "Hello world");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    // Earlier calls and their results render even through a template without a tool role
    // (Gemma's), with or without tools in the request.
    let history = json!([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_9", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_9", "content": "sunny"},
    ]);
    for body in [
        json!({"messages": history, "tools": tools, "tool_choice": "none"}),
        json!({"messages": history}),
    ] {
        let reply = call(&r, "POST", "/v1/chat/completions", Some(body)).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(
            reply.json()["choices"][0]["message"]["content"],
            "Hello world"
        );
    }
    let v = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(
            json!({"messages": user("Say hello"), "tools": tools, "max_tokens": 60,
            "temperature": 0}),
        ),
    )
    .await
    .json();
    assert_eq!(v["choices"][0]["message"]["content"], "Hello world");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");

    // Errors in tools are 400s before anything runs.
    let bad_tool = json!({"type": "function", "function": {"name": "bad",
        "parameters": {"type": "object", "properties": {"x": {"type": "integer", "minimum": "0"}}}}});
    let e = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(
            json!({"messages": user("x"), "tools": [bad_tool], "tool_choice": "required",
            "stream": true}),
        ),
    )
    .await
    .error(400);
    assert_eq!(e["param"], "tools");
    assert!(e["message"].as_str().unwrap().contains("minimum"), "{e}");
    let e = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("x"), "tools": tools,
            "tool_choice": {"type": "function", "function": {"name": "nope"}}})),
    )
    .await
    .error(400);
    assert_eq!(e["param"], "tool_choice");
    let e = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("x"), "tools": [{"type": "retrieval"}]})),
    )
    .await
    .error(400);
    assert_eq!(e["param"], "tools");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_body_limit_is_a_413() {
    let server = start(
        ServerConfig {
            max_body: 1000,
            ..config()
        },
        Knobs::default(),
    );
    let r = server.router();
    let big = "x".repeat(2000);
    let e = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user(&big)})),
    )
    .await
    .error(413);
    assert_eq!(e["code"], "request_too_large");
    // Just under the limit is fine.
    say_hello(&r).await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_a_503_and_the_rest_complete() {
    let gate = Gate::closed();
    let knobs = Knobs {
        gate: Some(gate.clone()),
        ..Knobs::default()
    };
    let forwards = knobs.forwards.clone();
    let server = start(
        ServerConfig {
            queue: 1,
            ..config()
        },
        knobs,
    );
    let r = server.router();
    let body = json!({"messages": user("Say hello")});
    // The first request reaches the model and blocks there; the second waits in the queue.
    let first = tokio::spawn({
        let (r, b) = (r.clone(), body.clone());
        async move { call(&r, "POST", "/v1/chat/completions", Some(b)).await }
    });
    eventually(Duration::from_secs(10), "the model to start", async || {
        forwards.load(Ordering::SeqCst) > 0
    })
    .await;
    let second = tokio::spawn({
        let (r, b) = (r.clone(), body.clone());
        async move { call(&r, "POST", "/v1/chat/completions", Some(b)).await }
    });
    eventually(Duration::from_secs(10), "a queued request", async || {
        health(&r).await["queue"]["waiting"] == 1
    })
    .await;
    let e = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
        .await
        .error(503);
    assert_eq!(e["type"], "server_error");
    assert_eq!(e["code"], "queue_full");
    let full = call(&r, "POST", "/v1/chat/completions", Some(body.clone())).await;
    assert_eq!(full.status, 503);
    assert_eq!(
        full.headers.get("retry-after").map(|v| v.to_str().unwrap()),
        Some("1"),
        "a 503 says when to retry"
    );
    gate.open();
    for h in [first, second] {
        let reply = h.await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(
            reply.json()["choices"][0]["message"]["content"],
            "Hello world"
        );
    }
    let h = health(&r).await;
    assert_eq!(h["requests"]["rejected_queue_full"], 2);
    assert_eq!(h["requests"]["completed"], 2);
    server.stop().await;
}

/// A model that never ends its text, slowly: only cancellation stops it before the budget.
fn endless() -> Knobs {
    Knobs {
        eos_after_script: false,
        delay: Duration::from_millis(20),
        ..Knobs::default()
    }
}

async fn http_health(addr: std::net::SocketAddr) -> Value {
    use tokio::io::AsyncWriteExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let text = read_until(&mut s, "}\n", Duration::from_secs(5)).await;
    let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
    // The body may be chunked or not: take the JSON object.
    let start = body.find('{').unwrap();
    let end = body.rfind('}').unwrap();
    serde_json::from_str(&body[start..=end]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_cancels_its_generation() {
    let knobs = endless();
    let forwards = knobs.forwards.clone();
    let server = start(config(), knobs);
    let (addr, stop, task) = serve_on_loopback(server).await;

    for stream in [false, true] {
        let before = forwards.load(Ordering::SeqCst);
        let body = json!({"messages": user("Say hello"), "max_tokens": 1000, "stream": stream});
        let mut conn = raw_post(addr, &body).await;
        if stream {
            // Headers and the first content chunk arrive, then the client leaves.
            read_until(&mut conn, "Hello", Duration::from_secs(10)).await;
        } else {
            eventually(Duration::from_secs(10), "generation to start", async || {
                forwards.load(Ordering::SeqCst) > before + 5
            })
            .await;
        }
        drop(conn);
        let cancelled = if stream { 2 } else { 1 };
        eventually(Duration::from_secs(10), "the cancellation", async || {
            http_health(addr).await["requests"]["cancelled"] == cancelled
        })
        .await;
        let used = forwards.load(Ordering::SeqCst) - before;
        assert!(
            used < 200,
            "{used} model calls: generation went on after the disconnect"
        );
        assert_eq!(
            http_health(addr).await["requests"]["completed"],
            0,
            "a cancelled request is not counted as completed"
        );
        // The model is free again at once.
        let after = forwards.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(
            forwards.load(Ordering::SeqCst),
            after,
            "nothing runs any more"
        );
    }
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_finishes_requests_in_flight() {
    let knobs = Knobs {
        delay: Duration::from_millis(20),
        script: "one two three four five six seven eight".into(),
        ..Knobs::default()
    };
    let forwards = knobs.forwards.clone();
    let server = start(config(), knobs);
    let (addr, stop, task) = serve_on_loopback(server).await;
    let body = json!({"messages": user("Count"), "max_tokens": 100});
    let mut conn = raw_post(addr, &body).await;
    eventually(Duration::from_secs(10), "generation to start", async || {
        forwards.load(Ordering::SeqCst) > 2
    })
    .await;
    stop.send(()).unwrap();
    let text = read_until(&mut conn, "finish_reason", Duration::from_secs(10)).await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.contains("one two three four five six seven eight"),
        "{text}"
    );
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still listening"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_what_outlives_the_grace_period() {
    let server = start(
        ServerConfig {
            shutdown_grace: Duration::from_millis(300),
            ..config()
        },
        endless(),
    );
    let (addr, stop, task) = serve_on_loopback(server).await;
    let body = json!({"messages": user("Say hello"), "max_tokens": 2000});
    let mut conn = raw_post(addr, &body).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.send(()).unwrap();
    let text = read_until(&mut conn, "}", Duration::from_secs(10)).await;
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("shutting_down"), "{text}");
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("the server stops")
        .unwrap()
        .unwrap();
}
