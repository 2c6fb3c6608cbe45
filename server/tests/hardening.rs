//! The server under attack and under faults, on a fake model: cross-site and DNS rebinding
//! requests, missing API keys, slow clients, bodies with trailing bytes, slow schemas, a
//! panicking model, requests past their time limit; and what `/metrics` and `/health` report.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use serde_json::{Map, Value, json};
use server::ServerConfig;
use support::*;

fn post(body: &str, headers: &[(&str, &str)]) -> Request<Body> {
    let mut req = Request::post("/v1/chat/completions");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.body(Body::from(body.to_string())).unwrap()
}

fn hello() -> String {
    json!({"messages": user("Say hello")}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_site_text_plain_post_is_refused_before_the_model_sees_it() {
    let knobs = Knobs::default();
    let forwards = knobs.forwards.clone();
    let server = start(config(), knobs);
    let r = server.router();
    // What a web page can send to any origin without a CORS preflight.
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let headers: Vec<(&str, &str)> = content_type
            .map(|c| ("content-type", c))
            .into_iter()
            .collect();
        let e = send(&r, post(&hello(), &headers)).await.error(415);
        assert_eq!(e["code"], "unsupported_media_type", "{content_type:?}");
    }
    assert_eq!(forwards.load(Ordering::SeqCst), 0, "the model ran");
    // JSON with parameters is fine.
    let ok = send(
        &r,
        post(
            &hello(),
            &[("content-type", "Application/JSON; charset=utf-8")],
        ),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_is_refused_and_loopback_names_are_served() {
    let server = start(
        ServerConfig {
            allowed_hosts: vec!["box.lan".into()],
            ..config()
        },
        Knobs::default(),
    );
    let r = server.router();
    let get = |host: &str| {
        Request::get("/v1/models")
            .header("host", host)
            .body(Body::empty())
            .unwrap()
    };
    // A DNS rebinding page reaches the server under its own name.
    for host in [
        "evil.example",
        "evil.example:8000",
        "localhost.evil.example",
        "box.lan.evil",
    ] {
        let e = send(&r, get(host)).await.error(403);
        assert_eq!(e["code"], "host_not_allowed", "{host}");
    }
    let e = send(
        &r,
        post(
            &hello(),
            &[
                ("host", "evil.example:8000"),
                ("content-type", "application/json"),
            ],
        ),
    )
    .await
    .error(403);
    assert_eq!(e["code"], "host_not_allowed");
    for host in [
        "localhost",
        "localhost:8000",
        "LOCALHOST.:8000",
        "api.localhost:8000",
        "127.0.0.1:8000",
        "[::1]:8000",
        "192.168.1.20:8000",
        "box.lan:8000",
    ] {
        let reply = send(&r, get(host)).await;
        assert_eq!(reply.status, 200, "{host}: {}", reply.text);
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_api_key_v1_routes_need_it() {
    let server = start(
        ServerConfig {
            api_key: Some("sk-local-test".into()),
            ..config()
        },
        Knobs::default(),
    );
    let r = server.router();
    let with_auth = |auth: Option<&str>, path: &str| {
        let mut req = Request::get(path);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        req.body(Body::empty()).unwrap()
    };
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("sk-local-test"),
        Some("Basic eDp5"),
    ] {
        for path in ["/v1/models", "/v1/models/fake", "/v1/nope"] {
            let reply = send(&r, with_auth(auth, path)).await;
            let e = reply.error(401);
            assert_eq!(e["type"], "invalid_request_error", "{auth:?} {path}");
            assert_eq!(e["code"], "invalid_api_key", "{auth:?} {path}");
            assert_eq!(
                reply.headers.get("www-authenticate").unwrap(),
                "Bearer",
                "{auth:?} {path}"
            );
        }
    }
    let e = send(&r, post(&hello(), &[("content-type", "application/json")]))
        .await
        .error(401);
    assert_eq!(e["code"], "invalid_api_key");
    let ok = send(&r, with_auth(Some("Bearer sk-local-test"), "/v1/models")).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    let ok = send(
        &r,
        post(
            &hello(),
            &[
                ("content-type", "application/json"),
                ("authorization", "Bearer sk-local-test"),
            ],
        ),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    // Health checks and metrics scrapers need no key.
    assert_eq!(send(&r, with_auth(None, "/health")).await.status, 200);
    assert_eq!(send(&r, with_auth(None, "/metrics")).await.status, 200);
    server.stop().await;
}

/// `stencil_<name>` (with labels as written) in a metrics text.
fn metric(text: &str, name: &str) -> f64 {
    let prefix = format!("stencil_{name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} in\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

async fn scrape(r: &axum::Router) -> String {
    let reply = call(r, "GET", "/metrics", None).await;
    assert_eq!(reply.status, 200);
    assert!(
        reply
            .content_type
            .starts_with("application/openmetrics-text"),
        "{}",
        reply.content_type
    );
    reply.text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_time_out_and_are_capped() {
    let knobs = Knobs::default();
    let forwards = knobs.forwards.clone();
    let server = start(
        ServerConfig {
            header_timeout: Duration::from_millis(300),
            body_timeout: Duration::from_millis(300),
            max_connections: 4,
            ..config()
        },
        knobs,
    );
    let r = server.router();
    let (addr, stop, task) = serve_on_loopback(server).await;
    use tokio::io::AsyncWriteExt;
    let mut conns = Vec::new();
    for i in 0..12 {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let head = if i % 3 == 0 {
            // Nothing at all.
            String::new()
        } else if i % 3 == 1 {
            // Headers that never end.
            format!("POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\n")
        } else {
            // A body that never comes.
            format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: \
                 application/json\r\ncontent-length: 1000\r\n\r\n{{\"messages\""
            )
        };
        s.write_all(head.as_bytes()).await.unwrap();
        conns.push((i, s));
    }
    // The server holds at most 4 of them at a time; each is closed after its timeout.
    let watch = tokio::spawn({
        let r = r.clone();
        async move {
            let mut most = 0.0f64;
            for _ in 0..50 {
                most = most.max(metric(&scrape(&r).await, "http_connections_open"));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            most
        }
    });
    for (i, mut s) in conns {
        let text = read_to_close(&mut s, Duration::from_secs(30)).await;
        if i % 3 == 2 {
            assert!(text.starts_with("HTTP/1.1 408"), "{text}");
            assert!(text.contains("request_timeout"), "{text}");
        } else {
            assert!(
                text.is_empty() || text.starts_with("HTTP/1.1 408"),
                "connection {i}: {text}"
            );
        }
    }
    let most = watch.await.unwrap();
    assert!(most <= 4.0, "{most} connections open at once");
    assert_eq!(forwards.load(Ordering::SeqCst), 0, "the model ran");
    // The server still answers.
    let reply = raw_exchange(
        addr,
        &format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: \
             application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
            hello().len(),
            hello()
        ),
        Duration::from_secs(30),
    )
    .await;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("Hello world"), "{reply}");
    eventually(
        Duration::from_secs(10),
        "the connections to close",
        async || metric(&scrape(&r).await, "http_connections_open") == 0.0,
    )
    .await;
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trailing_bytes_after_the_body_are_a_400() {
    let server = start(config(), Knobs::default());
    let r = server.router();
    for body in [format!("{}x", hello()), format!("{}{}", hello(), hello())] {
        let e = send(&r, post(&body, &[("content-type", "application/json")]))
            .await
            .error(400);
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("trailing characters"),
            "{e}"
        );
    }
    let ok = send(
        &r,
        post(
            &format!("{}\n", hello()),
            &[("content-type", "application/json")],
        ),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    server.stop().await;
}

/// The schema of the issue that held the model thread for 7.9 s.
fn slow_schema() -> Value {
    json!({"type": "string", "pattern": "\\p{L}{1000}"})
}

fn schema_request(schema: Value) -> Value {
    json!({"messages": user("Answer"), "max_tokens": 40,
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_schema_times_out_while_another_request_is_answered() {
    let knobs = Knobs::default();
    let forwards = knobs.forwards.clone();
    let server = start(
        ServerConfig {
            // Shorter than any compile of the slow pattern, however fast the compiler gets.
            compile_timeout: Duration::from_millis(1),
            ..config()
        },
        knobs,
    );
    let r = server.router();
    let slow = tokio::spawn({
        let r = r.clone();
        async move {
            call(
                &r,
                "POST",
                "/v1/chat/completions",
                Some(schema_request(slow_schema())),
            )
            .await
        }
    });
    say_hello(&r).await;
    let e = slow.await.unwrap().error(400);
    assert_eq!(e["code"], "schema_compile_timeout", "{e}");
    assert_eq!(e["param"], "response_format");
    let before = forwards.load(Ordering::SeqCst);
    // The compile stops at its own deadline; meanwhile the model answers again.
    say_hello(&r).await;
    assert!(forwards.load(Ordering::SeqCst) > before);
    let h = call(&r, "GET", "/health", None).await.json();
    assert_eq!(h["requests"]["schema_cache"]["compile_timeouts"], 1, "{h}");
    assert_eq!(h["requests"]["completed"], 2, "{h}");
    assert_eq!(
        h["requests"]["failed"], 0,
        "the model never saw the slow schema: {h}"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_compile_is_remembered() {
    let server = start(config(), Knobs::default());
    let r = server.router();
    let bad = json!({"type": "integer", "minimum": "zero"});
    for _ in 0..3 {
        let e = call(
            &r,
            "POST",
            "/v1/chat/completions",
            Some(schema_request(bad.clone())),
        )
        .await
        .error(400);
        assert_eq!(e["code"], "invalid_json_schema");
    }
    let cache = &call(&r, "GET", "/health", None).await.json()["requests"]["schema_cache"];
    assert_eq!(cache["misses"], 1, "{cache}");
    assert_eq!(cache["failure_hits"], 2, "{cache}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_on_the_model_thread_restarts_the_worker() {
    let knobs = Knobs::default();
    let (panic_next, loads) = (knobs.panic_next.clone(), knobs.loads.clone());
    let server = start(config(), knobs);
    let r = server.router();
    assert_eq!(loads.load(Ordering::SeqCst), 1);
    panic_next.store(true, Ordering::SeqCst);
    let body = json!({"messages": user("Say hello")});
    let e = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
        .await
        .error(500);
    assert_eq!(e["type"], "server_error");
    // The next request is served by a model loaded again.
    let reply = call(&r, "POST", "/v1/chat/completions", Some(body.clone())).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(
        reply.json()["choices"][0]["message"]["content"],
        "Hello world"
    );
    assert_eq!(loads.load(Ordering::SeqCst), 2);
    let h = call(&r, "GET", "/health", None).await.json();
    assert_eq!(h["status"], "ok");
    assert_eq!(h["requests"]["worker_restarts"], 1, "{h}");
    assert_eq!(h["requests"]["failed"], 1, "{h}");
    assert_eq!(metric(&scrape(&r).await, "worker_restarts_total"), 1.0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_its_time_limit_is_cancelled() {
    let knobs = Knobs {
        eos_after_script: false,
        delay: Duration::from_millis(20),
        ..Knobs::default()
    };
    let forwards = knobs.forwards.clone();
    let server = start(
        ServerConfig {
            request_timeout: Duration::from_millis(500),
            ..config()
        },
        knobs,
    );
    let r = server.router();
    let body = json!({"messages": user("Say hello"), "max_tokens": 2000});
    let e = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
        .await
        .error(504);
    assert_eq!(e["code"], "request_timeout");
    // A stream ends with an error event.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let reply = call(&r, "POST", "/v1/chat/completions", Some(streamed)).await;
    assert_eq!(reply.status, 200);
    let events = reply.events();
    assert_eq!(events.last().unwrap(), "[DONE]");
    let last: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(last["error"]["code"], "request_timeout", "{last}");
    eventually(Duration::from_secs(10), "both to be counted", async || {
        call(&r, "GET", "/health", None).await.json()["requests"]["timed_out"] == 2
    })
    .await;
    let h = call(&r, "GET", "/health", None).await.json();
    assert_eq!(h["requests"]["completed"], 0, "{h}");
    assert_eq!(h["requests"]["cancelled"], 0, "{h}");
    // Nothing runs any more.
    let after = forwards.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(forwards.load(Ordering::SeqCst), after);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_health_report_requests_slots_and_queue() {
    let server = start(
        config(),
        Knobs {
            script: r#"{"answer":42,"ok":true}"#.into(),
            ..Knobs::default()
        },
    );
    let r = server.router();
    let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"},
        "ok": {"type": "boolean"}}, "required": ["answer", "ok"], "additionalProperties": false});
    for _ in 0..2 {
        let reply = call(
            &r,
            "POST",
            "/v1/chat/completions",
            Some(schema_request(schema.clone())),
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": []})),
    )
    .await
    .error(400);
    let text = scrape(&r).await;
    assert!(text.ends_with("# EOF\n"), "{text}");
    let m = |name: &str| metric(&text, name);
    assert_eq!(
        m(r#"http_requests_total{route="chat_completions",status="200"}"#),
        2.0
    );
    assert_eq!(
        m(r#"http_requests_total{route="chat_completions",status="400"}"#),
        1.0
    );
    assert_eq!(m(r#"requests_total{outcome="completed"}"#), 2.0);
    assert_eq!(m(r#"requests_total{outcome="cancelled"}"#), 0.0);
    assert_eq!(m(r#"schema_cache_total{result="hit"}"#), 1.0);
    assert_eq!(m(r#"schema_cache_total{result="miss"}"#), 1.0);
    assert!(m("tokens_generated_total") >= 2.0);
    assert_eq!(m("step_seconds_count"), 2.0);
    assert_eq!(m("mask_seconds_count"), 2.0);
    assert!(m("mask_seconds_sum") > 0.0);
    assert_eq!(m("queue_depth"), 0.0);
    assert_eq!(m("queue_capacity"), 32.0);
    assert_eq!(m("slots_active"), 0.0);
    assert_eq!(m("slots_total"), 1.0);
    let h = call(&r, "GET", "/health", None).await.json();
    assert_eq!(h["slots"], json!({"total": 1, "active": 0}), "{h}");
    assert_eq!(h["queue"], json!({"capacity": 32, "waiting": 0}), "{h}");
    server.stop().await;
}

/// An object schema the fake model's script satisfies, with `extra` more optional properties
/// carrying long descriptions.
fn big_schema(extra: usize) -> Value {
    let mut props = Map::new();
    props.insert("answer".into(), json!({"type": "integer"}));
    props.insert("ok".into(), json!({"type": "boolean"}));
    for i in 0..extra {
        props.insert(
            format!("extra_field_{i:04}"),
            json!({"type": "string", "description": format!("an optional field number {i} that \
                the answer may leave out, described at length so that it takes room")}),
        );
    }
    json!({"type": "object", "properties": props, "required": ["answer", "ok"],
        "additionalProperties": false})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_too_big_for_the_prompt_is_summarised_or_left_out() {
    let server = start(
        config(),
        Knobs {
            script: r#"{"answer":42,"ok":true}"#.into(),
            context: 1024,
            ..Knobs::default()
        },
    );
    let r = server.router();
    let schema = big_schema(300);
    assert!(schema.to_string().len() > 30_000);
    let mut prompt_tokens = Vec::new();
    for mode in [None, Some("off")] {
        let mut body = schema_request(schema.clone());
        if let Some(m) = mode {
            body["schema_in_prompt"] = json!(m);
        }
        let reply = call(&r, "POST", "/v1/chat/completions", Some(body)).await;
        assert_eq!(reply.status, 200, "{mode:?}: {}", reply.text);
        let v = reply.json();
        let doc: Value =
            serde_json::from_str(v["choices"][0]["message"]["content"].as_str().unwrap()).unwrap();
        assert_eq!(doc, json!({"answer": 42, "ok": true}));
        let n = v["usage"]["prompt_tokens"].as_u64().unwrap();
        assert!(n < 1024, "{mode:?}: {n} prompt tokens");
        prompt_tokens.push(n);
    }
    assert!(
        prompt_tokens[1] < prompt_tokens[0],
        "a summary takes room, no schema takes none: {prompt_tokens:?}"
    );
    // A small schema goes in whole, unless asked otherwise.
    let small = json!({"type": "integer"});
    let tokens = async |mode: &str| {
        let mut body = schema_request(small.clone());
        body["schema_in_prompt"] = json!(mode);
        let reply = call(&r, "POST", "/v1/chat/completions", Some(body)).await;
        assert_eq!(reply.status, 200, "{mode}: {}", reply.text);
        reply.json()["usage"]["prompt_tokens"].as_u64().unwrap()
    };
    let (auto, off, placeholder_only) = (
        tokens("auto").await,
        tokens("off").await,
        tokens("placeholder_only").await,
    );
    assert!(off < auto, "{off} {auto}");
    assert_eq!(off, placeholder_only, "no placeholder, nothing placed");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_generate_at_once_up_to_parallel_and_the_rest_wait() {
    let gate = Gate::closed();
    let knobs = Knobs {
        gate: Some(gate.clone()),
        ..Knobs::default()
    };
    let server = start(
        ServerConfig {
            parallel: 3,
            queue: 4,
            ..config()
        },
        knobs,
    );
    let r = server.router();
    let body = json!({"messages": user("Say hello")});
    let send = || {
        let (r, body) = (r.clone(), body.clone());
        tokio::spawn(async move { call(&r, "POST", "/v1/chat/completions", Some(body)).await })
    };
    let until = |active: u64, waiting: u64| {
        let r = r.clone();
        async move {
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let h = call(&r, "GET", "/health", None).await.json();
                if h["slots"]["active"] == active && h["queue"]["waiting"] == waiting {
                    assert_eq!(h["slots"]["total"], 3, "{h}");
                    break;
                }
                assert!(std::time::Instant::now() < deadline, "{h}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    // Three take a slot each (the model holds them at its gate), two more wait in the queue.
    let mut calls: Vec<_> = (0..3).map(|_| send()).collect();
    until(3, 0).await;
    calls.extend((0..2).map(|_| send()));
    until(3, 2).await;
    gate.open();
    for c in calls {
        let reply = c.await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(
            reply.json()["choices"][0]["message"]["content"],
            "Hello world"
        );
    }
    let text = scrape(&r).await;
    assert_eq!(metric(&text, "slots_total"), 3.0);
    let (steps, sequences) = (
        metric(&text, "batch_steps_total"),
        metric(&text, "batch_sequences_total"),
    );
    // The slots' steps were evaluated together, some several to a step.
    assert!(
        steps > 0.0 && sequences > steps,
        "{steps} steps, {sequences} sequences"
    );
    assert!(metric(&text, "batch_tokens_total") >= sequences);
    server.stop().await;
}
