//! What agent frameworks rely on, on a fake model: tool calls streamed in OpenAI's delta
//! format, `parallel_tool_calls` and log probabilities.

mod support;

use serde_json::{Value, json};
use support::*;

/// The JSON payloads of a chat completion stream (without `[DONE]`, which must end it).
fn sse_chunks(reply: &Reply) -> Vec<Value> {
    assert_eq!(reply.status, 200, "{}", reply.text);
    let events = reply.events();
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect()
}

/// A streamed call put back together.
#[derive(Debug, Default)]
struct Assembled {
    id: String,
    name: String,
    arguments: String,
    /// Argument fragments received.
    fragments: usize,
}

/// Reassembles the tool-call deltas of a stream the way OpenAI's clients do, checking the
/// order: each call's first delta has its index, id, type and name (and empty arguments),
/// later ones only arguments.
fn assemble(chunks: &[Value]) -> Vec<Assembled> {
    let mut calls: Vec<Assembled> = Vec::new();
    for c in chunks {
        let Some(list) = c["choices"][0]["delta"]["tool_calls"].as_array() else {
            continue;
        };
        for d in list {
            let i = d["index"].as_u64().expect("an index") as usize;
            if i == calls.len() {
                assert!(d["id"].as_str().unwrap().starts_with("call_"), "{d}");
                assert_eq!(d["type"], "function", "{d}");
                let name = d["function"]["name"].as_str().expect("the name first");
                calls.push(Assembled {
                    id: d["id"].as_str().unwrap().into(),
                    name: name.into(),
                    ..Assembled::default()
                });
                assert_eq!(d["function"]["arguments"], "", "{d}");
            } else {
                assert!(i < calls.len(), "index {i} skips ahead: {d}");
                assert!(d.get("id").is_none(), "the id comes once: {d}");
                assert!(d["function"].get("name").is_none(), "{d}");
                calls[i]
                    .arguments
                    .push_str(d["function"]["arguments"].as_str().unwrap());
                calls[i].fragments += 1;
            }
        }
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_stream_as_deltas_while_generated() {
    let server = start(
        config(),
        script(
            r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"current_time","arguments":{}}]}"#,
        ),
    );
    let r = server.router();
    let reply = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(
            json!({"messages": user("Weather?"), "tools": [weather_tool(), clock_tool()],
            "stream": true, "max_tokens": 80, "temperature": 0}),
        ),
    )
    .await;
    let chunks = sse_chunks(&reply);
    let calls = assemble(&chunks);
    assert_eq!(calls.len(), 2, "{}", reply.text);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(
        serde_json::from_str::<Value>(&calls[0].arguments).unwrap(),
        json!({"city": "Paris"})
    );
    // Sent as generated: the city's value comes in its own tokens, after the forced
    // `{"city":"`.
    assert!(calls[0].fragments >= 2, "{calls:?}");
    assert_eq!(calls[1].name, "current_time");
    assert_eq!(calls[1].arguments, "{}");
    assert_ne!(calls[0].id, calls[1].id);
    // No text, one finish reason at the very end.
    assert!(chunks.iter().all(|c| {
        c["choices"][0]["delta"]["content"]
            .as_str()
            .unwrap_or("")
            .is_empty()
    }));
    let finishes: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["finish_reason"])
        .filter(|f| !f.is_null())
        .collect();
    assert_eq!(finishes, [&json!("tool_calls")]);
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    // The deltas come before the finish chunk, each in its own chunk.
    let first_call = chunks
        .iter()
        .position(|c| c["choices"][0]["delta"]["tool_calls"].is_array())
        .unwrap();
    assert!(first_call < chunks.len() - 1);
    server.stop().await;

    // A text answer with tools streams as content.
    let server = start(config(), Knobs::default());
    let reply = call(
        &server.router(),
        "POST",
        "/v1/chat/completions",
        Some(
            json!({"messages": user("Say hello"), "tools": [weather_tool()],
            "stream": true, "max_tokens": 40, "temperature": 0}),
        ),
    )
    .await;
    let chunks = sse_chunks(&reply);
    let pieces: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|t| !t.is_empty())
        .collect();
    assert_eq!(pieces.concat(), "Hello world");
    assert!(pieces.len() >= 2, "streamed piece by piece: {pieces:?}");
    assert!(assemble(&chunks).is_empty());
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_tool_calls_false_gives_one_call() {
    let server = start(
        config(),
        script(
            r#"{"tool_calls":[{"name":"current_time","arguments":{}},{"name":"current_time","arguments":{}},{"name":"current_time","arguments":{}}]}"#,
        ),
    );
    let r = server.router();
    for (parallel, expect) in [(None, 3), (Some(true), 3), (Some(false), 1)] {
        let mut body = json!({"messages": user("Time?"), "tools": [clock_tool()],
            "tool_choice": "required", "max_tokens": 80, "temperature": 0});
        if let Some(p) = parallel {
            body["parallel_tool_calls"] = json!(p);
        }
        let v = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
            .await
            .json();
        let calls = v["choices"][0]["message"]["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), expect, "{parallel:?}: {v}");
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
        body["stream"] = json!(true);
        let streamed = assemble(&sse_chunks(
            &call(&r, "POST", "/v1/chat/completions", Some(body)).await,
        ));
        assert_eq!(streamed.len(), expect, "{parallel:?} streamed");
    }
    server.stop().await;
}

/// The text of a `logprobs.content` list, from each entry's bytes.
fn logprob_text(content: &[Value], top: usize) -> String {
    let mut bytes = Vec::new();
    for e in content {
        let lp = e["logprob"].as_f64().unwrap();
        assert!(lp.is_finite() && lp <= 0.0, "{e}");
        let b: Vec<u8> = serde_json::from_value(e["bytes"].clone()).unwrap();
        assert_eq!(String::from_utf8_lossy(&b), e["token"].as_str().unwrap());
        let alts = e["top_logprobs"].as_array().unwrap();
        assert!(alts.len() <= top, "{e}");
        for a in alts {
            let lp = a["logprob"].as_f64().unwrap();
            assert!(lp.is_finite() && lp <= 0.0, "{a}");
            assert!(a["bytes"].is_array() && a["token"].is_string(), "{a}");
        }
        // At the number, every alternative is a token the schema allows there.
        if b.first().is_some_and(u8::is_ascii_digit) {
            assert_eq!(alts.len(), top, "{e}");
            for a in alts {
                let first = a["token"].as_str().unwrap().bytes().next().unwrap();
                assert!(b"0123456789-,".contains(&first), "{a} is not allowed: {e}");
            }
        }
        bytes.extend(b);
    }
    String::from_utf8(bytes).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logprobs_come_from_the_masked_distribution() {
    let server = start(config(), script(r#"{"answer":42,"ok":true}"#));
    let r = server.router();
    let format = json!({"type": "json_schema", "json_schema": {"name": "n", "schema":
        {"type": "object", "properties": {"answer": {"type": "integer"}, "ok": {"type": "boolean"}},
         "required": ["answer", "ok"], "additionalProperties": false}}});
    let body = json!({"messages": user("n?"), "response_format": format, "logprobs": true,
        "top_logprobs": 5, "max_tokens": 40, "temperature": 0});
    let v = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
        .await
        .json();
    let choice = &v["choices"][0];
    let content = choice["logprobs"]["content"].as_array().unwrap();
    assert_eq!(
        logprob_text(content, 5),
        choice["message"]["content"].as_str().unwrap()
    );
    assert!(choice["logprobs"]["refusal"].is_null());
    assert_eq!(
        content.len(),
        v["usage"]["completion_tokens"].as_u64().unwrap() as usize
    );

    // Streamed: each content chunk carries its tokens' log probabilities.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let chunks = sse_chunks(&call(&r, "POST", "/v1/chat/completions", Some(streamed)).await);
    let mut text = String::new();
    let mut entries = Vec::new();
    for c in &chunks {
        let choice = &c["choices"][0];
        text.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
        if let Some(list) = choice["logprobs"]["content"].as_array() {
            entries.extend(list.iter().cloned());
        }
    }
    assert_eq!(text, r#"{"answer":42,"ok":true}"#);
    assert_eq!(logprob_text(&entries, 5), text);

    // Without them: null. Bad values: 400s.
    let v = call(
        &r,
        "POST",
        "/v1/chat/completions",
        Some(json!({"messages": user("hi"), "max_tokens": 5})),
    )
    .await
    .json();
    assert!(v["choices"][0]["logprobs"].is_null(), "{v}");
    for (body, param) in [
        (
            json!({"messages": user("hi"), "logprobs": true, "top_logprobs": 21}),
            "top_logprobs",
        ),
        (
            json!({"messages": user("hi"), "top_logprobs": 2}),
            "top_logprobs",
        ),
        (
            json!({"messages": user("hi"), "logprobs": "yes"}),
            "logprobs",
        ),
    ] {
        let e = call(&r, "POST", "/v1/chat/completions", Some(body))
            .await
            .error(400);
        assert_eq!(e["param"], param, "{e}");
    }
    server.stop().await;
}
