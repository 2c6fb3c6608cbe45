//! What agent frameworks rely on, on a fake model: tool calls streamed in OpenAI's delta
//! format and `parallel_tool_calls`.

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
        Knobs {
            script: r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}},{"name":"current_time","arguments":{}}]}"#.into(),
            ..Knobs::default()
        },
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
        Knobs {
            script: r#"{"tool_calls":[{"name":"current_time","arguments":{}},{"name":"current_time","arguments":{}},{"name":"current_time","arguments":{}}]}"#.into(),
            ..Knobs::default()
        },
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
