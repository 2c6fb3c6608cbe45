//! 1,000 `#!JSON_SCHEMA!#` placeholders and a 20 KB schema: a 35 KB body that would expand to
//! a 20 MB prompt. It is refused before anything is expanded, and memory does not grow.
//!
//! Alone in its test binary, so that no other test's allocations move the resident set size.

mod support;

use std::sync::atomic::Ordering;

use serde_json::{Map, Value, json};
use support::*;

/// This process's resident set size in kB (Linux), or `None`.
fn rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_placeholders_are_refused_at_once() {
    let knobs = Knobs::default();
    let forwards = knobs.forwards.clone();
    let server = start(config(), knobs);
    let r = server.router();
    let mut props = Map::new();
    for i in 0..400 {
        props.insert(
            format!("property_{i:03}"),
            json!({"type": "string", "maxLength": 20}),
        );
    }
    let schema = json!({"type": "object", "properties": props});
    let schema_len = schema.to_string().len();
    assert!((19_000..24_000).contains(&schema_len), "{schema_len}");
    let content = "#!JSON_SCHEMA!# ".repeat(1000);
    let body = json!({"messages": [{"role": "user", "content": content}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}});
    assert!(body.to_string().len() < 40_000);

    // Warm up: the first request loads what every request needs.
    say_hello(&r).await;
    let before_forwards = forwards.load(Ordering::SeqCst);
    let before = rss_kb();
    for _ in 0..5 {
        let e = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
            .await
            .error(400);
        assert_eq!(e["code"], "context_length_exceeded", "{e}");
        assert_eq!(e["param"], "messages");
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("1000 #!JSON_SCHEMA!# placeholders"),
            "{message}"
        );
    }
    let after = rss_kb();
    assert_eq!(
        forwards.load(Ordering::SeqCst),
        before_forwards,
        "the model saw the request"
    );
    let h: Value = call(&r, "GET", "/health", None).await.json();
    assert_eq!(
        h["requests"]["failed"], 0,
        "the model thread saw the request: {h}"
    );
    assert_eq!(
        h["requests"]["schema_cache"]["misses"], 0,
        "the schema was compiled: {h}"
    );
    if let (Some(before), Some(after)) = (before, after) {
        // Expanded once, the prompt alone would take 20 MB; tokenized, far more.
        assert!(
            after < before + 16 * 1024,
            "RSS grew from {before} kB to {after} kB"
        );
    }
    server.stop().await;
}
