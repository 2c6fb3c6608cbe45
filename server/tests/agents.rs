//! What agent frameworks rely on, on a fake model: tool calls streamed in OpenAI's delta
//! format, `parallel_tool_calls`, log probabilities, the Responses API, and a response format
//! together with tools.

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
    let hello = json!({"messages": user("Say hello"), "tools": [weather_tool()],
        "stream": true, "max_tokens": 40, "temperature": 0});
    let reply = call(
        &server.router(),
        "POST",
        "/v1/chat/completions",
        Some(hello.clone()),
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
    // Text held back until the end (it might start the stop string) is sent once.
    let mut held = hello;
    held["stop"] = json!("Hello world!");
    let reply = call(&server.router(), "POST", "/v1/chat/completions", Some(held)).await;
    let text: String = sse_chunks(&reply)
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "Hello world");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_api_logprobs_through_include() {
    let server = start(config(), script(r#"{"answer":42,"ok":true}"#));
    let r = server.router();
    let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"},
        "ok": {"type": "boolean"}}, "required": ["answer", "ok"], "additionalProperties": false});
    let body = json!({"input": "n?", "include": ["message.output_text.logprobs"],
        "top_logprobs": 3, "max_output_tokens": 40, "temperature": 0,
        "text": {"format": {"type": "json_schema", "name": "n", "schema": schema}}});
    let v = call(&r, "POST", "/v1/responses", Some(body.clone()))
        .await
        .json();
    let part = &v["output"][0]["content"][0];
    let entries = part["logprobs"].as_array().unwrap();
    assert_eq!(logprob_text(entries, 3), part["text"].as_str().unwrap());
    assert_eq!(
        entries.len(),
        v["usage"]["output_tokens"].as_u64().unwrap() as usize
    );

    // Streamed: each text delta carries its tokens; the done events carry them all.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = typed_events(&call(&r, "POST", "/v1/responses", Some(streamed)).await);
    let mut text = String::new();
    let mut deltas = Vec::new();
    for (name, data) in &events {
        if name == "response.output_text.delta" {
            text.push_str(data["delta"].as_str().unwrap());
            deltas.extend(data["logprobs"].as_array().unwrap().iter().cloned());
        }
    }
    assert_eq!(text, r#"{"answer":42,"ok":true}"#);
    assert_eq!(logprob_text(&deltas, 3), text);
    let (_, done) = events
        .iter()
        .find(|(n, _)| n == "response.output_text.done")
        .unwrap();
    assert_eq!(done["logprobs"].as_array().unwrap().len(), deltas.len());
    let (_, completed) = events.last().unwrap();
    let part = &completed["response"]["output"][0]["content"][0];
    assert_eq!(part["logprobs"].as_array().unwrap().len(), deltas.len());

    // Without `include` (or `top_logprobs`): empty lists. A bad `include`: a 400.
    let mut plain = body.clone();
    plain.as_object_mut().unwrap().remove("include");
    plain.as_object_mut().unwrap().remove("top_logprobs");
    let v = call(&r, "POST", "/v1/responses", Some(plain)).await.json();
    assert_eq!(v["output"][0]["content"][0]["logprobs"], json!([]), "{v}");
    let mut bad = body.clone();
    bad["include"] = json!("message.output_text.logprobs");
    let e = call(&r, "POST", "/v1/responses", Some(bad))
        .await
        .error(400);
    assert_eq!(e["param"], "include", "{e}");
    server.stop().await;
}

/// The `(event, data)` pairs of a Responses API stream, checking that each event's name is
/// its `type` and that `sequence_number` counts from 0.
fn typed_events(reply: &Reply) -> Vec<(String, Value)> {
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert!(reply.content_type.starts_with("text/event-stream"));
    let mut out = Vec::new();
    for block in reply.text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut name = None;
        let mut data = None;
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                name = Some(n.to_string());
            } else if let Some(d) = line.strip_prefix("data: ") {
                data = Some(serde_json::from_str::<Value>(d).unwrap());
            }
        }
        let (name, data) = (name.expect("an event name"), data.expect("data"));
        assert_eq!(data["type"], name.as_str(), "{data}");
        assert_eq!(data["sequence_number"], out.len(), "{data}");
        out.push((name, data));
    }
    out
}

fn flat_weather_tool() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
            "required": ["city"], "additionalProperties": false}, "strict": true})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_api_text_format_and_stream() {
    let server = start(config(), script(r#"{"answer":42,"ok":true}"#));
    let r = server.router();
    let schema = json!({"type": "object", "properties": {"answer": {"type": "integer"},
        "ok": {"type": "boolean"}}, "required": ["answer", "ok"], "additionalProperties": false});
    let body = json!({"model": "any", "instructions": "Answer in JSON.",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "n?"}]}],
        "text": {"format": {"type": "json_schema", "name": "n", "schema": schema, "strict": true}},
        "max_output_tokens": 40, "temperature": 0});
    let v = call(&r, "POST", "/v1/responses", Some(body.clone()))
        .await
        .json();
    assert_eq!(v["object"], "response", "{v}");
    assert!(v["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(v["status"], "completed");
    assert_eq!(v["model"], "fake");
    assert!(v["created_at"].is_u64());
    let output = v["output"].as_array().unwrap();
    assert_eq!(output.len(), 1);
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["content"][0]["type"], "output_text");
    let text = output[0]["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({"answer": 42, "ok": true})
    );
    let u = &v["usage"];
    assert!(u["input_tokens"].as_u64().unwrap() > 0);
    assert!(u["output_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["input_tokens"].as_u64().unwrap() + u["output_tokens"].as_u64().unwrap()
    );

    // Streamed: the typed events in order, the deltas add up to the text.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = typed_events(&call(&r, "POST", "/v1/responses", Some(streamed)).await);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    let deltas = names
        .iter()
        .filter(|n| **n == "response.output_text.delta")
        .count();
    assert!(deltas >= 2, "{names:?}");
    let mut expected = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ];
    expected.extend(std::iter::repeat_n("response.output_text.delta", deltas));
    expected.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(names, expected);
    let joined: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(joined, r#"{"answer":42,"ok":true}"#);
    assert_eq!(events[0].1["response"]["status"], "in_progress");
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], joined.as_str());
    assert!(done["usage"]["output_tokens"].as_u64().unwrap() > 0);

    // json_object, and plain text from a string input.
    let v = call(
        &r,
        "POST",
        "/v1/responses",
        Some(
            json!({"input": "n?", "text": {"format": {"type": "json_object"}},
            "max_output_tokens": 40}),
        ),
    )
    .await
    .json();
    let text = v["output"][0]["content"][0]["text"].as_str().unwrap();
    assert!(serde_json::from_str::<Value>(text).unwrap().is_object());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_api_function_calls_and_round_trips() {
    let server = start(
        config(),
        script(r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#),
    );
    let r = server.router();
    let body = json!({"input": "Weather in Paris?", "tools": [flat_weather_tool()],
        "tool_choice": "required", "max_output_tokens": 60, "temperature": 0});
    let v = call(&r, "POST", "/v1/responses", Some(body.clone()))
        .await
        .json();
    let item = &v["output"][0];
    assert_eq!(item["type"], "function_call", "{v}");
    assert_eq!(item["name"], "get_weather");
    assert!(item["call_id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(
        serde_json::from_str::<Value>(item["arguments"].as_str().unwrap()).unwrap(),
        json!({"city": "Paris"})
    );
    assert_eq!(v["status"], "completed");

    // A named choice in the Responses shape, streamed.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    streamed["tool_choice"] = json!({"type": "function", "name": "get_weather"});
    let events = typed_events(&call(&r, "POST", "/v1/responses", Some(streamed)).await);
    let added = events
        .iter()
        .find(|(n, _)| n == "response.output_item.added")
        .unwrap();
    assert_eq!(added.1["item"]["type"], "function_call");
    assert_eq!(added.1["item"]["name"], "get_weather");
    let args: String = events
        .iter()
        .filter(|(n, _)| n == "response.function_call_arguments.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    let done = events
        .iter()
        .find(|(n, _)| n == "response.function_call_arguments.done")
        .unwrap();
    assert_eq!(done.1["arguments"], args.as_str());
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"city": "Paris"})
    );
    let (last, completed) = events.last().unwrap();
    assert_eq!(last, "response.completed");
    assert_eq!(
        completed["response"]["output"][0]["arguments"],
        args.as_str()
    );
    assert_eq!(
        completed["response"]["output"][0]["call_id"],
        added.1["item"]["call_id"]
    );
    server.stop().await;

    // The round trip: the call and its output go back as input items.
    let server = start(config(), Knobs::default());
    let r = server.router();
    let v = call(
        &r,
        "POST",
        "/v1/responses",
        Some(json!({"input": [
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather",
             "arguments": "{\"city\":\"Paris\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}],
            "tools": [flat_weather_tool()], "tool_choice": "none", "max_output_tokens": 20})),
    )
    .await
    .json();
    assert_eq!(v["output"][0]["content"][0]["text"], "Hello world", "{v}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_api_refusals_and_guards() {
    let server = start(
        server::ServerConfig {
            api_key: Some("k".into()),
            max_tokens: 100,
            ..config()
        },
        Knobs::default(),
    );
    let r = server.router();
    let post = |body: Value, key: Option<&str>, ct: &str| {
        let mut req = axum::http::Request::builder()
            .method("POST")
            .uri("/v1/responses")
            .header("content-type", ct);
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        req.body(axum::body::Body::from(body.to_string())).unwrap()
    };
    let ok = json!({"input": "hi", "max_output_tokens": 5});
    // The route is behind the same checks as chat completions.
    send(&r, post(ok.clone(), None, "application/json"))
        .await
        .error(401);
    send(&r, post(ok.clone(), Some("k"), "text/plain"))
        .await
        .error(415);
    let reply = send(&r, post(ok.clone(), Some("k"), "application/json")).await;
    assert_eq!(reply.json()["status"], "completed", "{}", reply.text);
    for (body, param) in [
        (
            json!({"input": "hi", "previous_response_id": "resp_1"}),
            "previous_response_id",
        ),
        (
            json!({"input": "hi", "max_output_tokens": 101}),
            "max_output_tokens",
        ),
        (
            json!({"input": "hi", "tools": [{"type": "web_search"}]}),
            "tools",
        ),
        (
            json!({"input": "hi", "text": {"format": {"type": "yaml"}}}),
            "text.format",
        ),
        (
            json!({"input": [{"type": "computer_call", "summary": []}]}),
            "input",
        ),
        (json!({"input": 3}), "input"),
        (json!({}), "input"),
        (
            json!({"input": "hi", "tool_choice": {"type": "function", "name": "nope"},
                "tools": [flat_weather_tool()]}),
            "tool_choice",
        ),
    ] {
        let e = send(&r, post(body.clone(), Some("k"), "application/json"))
            .await
            .error(400);
        assert_eq!(e["param"], param, "{body}: {e}");
    }
    server.stop().await;
}

/// Checks the `{"answer": integer, "ok": boolean}` answer of [`answer_format`].
fn check_answer(text: &str) {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    let obj = v.as_object().unwrap();
    assert_eq!(obj.len(), 2, "{v}");
    // An integer (`-0` is one, though serde_json reads it as a float).
    let answer = v["answer"].as_f64().unwrap_or(0.5);
    assert!(answer.fract() == 0.0 && v["ok"].is_boolean(), "{v}");
}

fn answer_format() -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "a", "strict": true, "schema":
        {"type": "object", "properties": {"answer": {"type": "integer"}, "ok": {"type": "boolean"}},
         "required": ["answer", "ok"], "additionalProperties": false}}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_format_together_with_tools() {
    let call_script = r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}"#;
    for (script, expect_call) in [
        (r#"{"answer":42,"ok":true}"#, false),
        (call_script, true),
        // A model that wants neither: whatever it writes follows the format or is a call.
        ("Hello world", false),
    ] {
        let server = start(config(), self::script(script));
        let r = server.router();
        for choice in ["auto", "none"] {
            let body = json!({"messages": user("Weather?"), "tools": [weather_tool()],
                "tool_choice": choice, "response_format": answer_format(),
                "max_tokens": 40, "temperature": 0});
            let v = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
                .await
                .json();
            let choice_v = &v["choices"][0];
            let calls = choice_v["message"]["tool_calls"].as_array();
            if expect_call && choice == "auto" {
                let calls = calls.unwrap_or_else(|| panic!("no call: {v}"));
                assert_eq!(calls[0]["function"]["name"], "get_weather");
                assert_eq!(
                    serde_json::from_str::<Value>(
                        calls[0]["function"]["arguments"].as_str().unwrap()
                    )
                    .unwrap(),
                    json!({"city": "Paris"})
                );
                assert_eq!(choice_v["finish_reason"], "tool_calls");
            } else {
                assert!(calls.is_none(), "{script} {choice}: {v}");
                check_answer(choice_v["message"]["content"].as_str().unwrap());
            }
            if script.starts_with(r#"{"answer""#) {
                assert_eq!(
                    choice_v["message"]["content"], script,
                    "the model's own answer"
                );
                // Streamed as it is generated, although a call could start the same way.
                let mut streamed = body.clone();
                streamed["stream"] = json!(true);
                let chunks =
                    sse_chunks(&call(&r, "POST", "/v1/chat/completions", Some(streamed)).await);
                let pieces: Vec<&str> = chunks
                    .iter()
                    .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
                    .filter(|t| !t.is_empty())
                    .collect();
                assert_eq!(pieces.concat(), script);
                assert!(pieces.len() >= 2, "{pieces:?}");
            }
        }
        // The Responses API: text.format with tools.
        let v = call(
            &r,
            "POST",
            "/v1/responses",
            Some(json!({"input": "Weather?", "tools": [flat_weather_tool()],
                "text": {"format": {"type": "json_schema", "name": "a",
                    "schema": answer_format()["json_schema"]["schema"]}},
                "max_output_tokens": 40, "temperature": 0})),
        )
        .await
        .json();
        let item = &v["output"][0];
        if expect_call {
            assert_eq!(item["type"], "function_call", "{v}");
        } else {
            check_answer(item["content"][0]["text"].as_str().unwrap());
        }
        server.stop().await;
    }
}

/// A reasoning model thinks unconstrained up to its end marker, then answers in the schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_models_think_before_the_constrained_answer() {
    let knobs = support::Knobs {
        reasoning_end: Some("</think>".into()),
        ..script(r#"<think>Two and two: 4.</think>{"answer":4}"#)
    };
    let server = start(config(), knobs);
    let r = server.router();
    let format = json!({"type": "json_schema", "json_schema": {"name": "n", "schema":
        {"type": "object", "properties": {"answer": {"type": "integer"}},
         "required": ["answer"], "additionalProperties": false}}});
    let body = json!({"messages": user("2+2?"), "response_format": format,
        "max_tokens": 60, "temperature": 0});
    let v = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
        .await
        .json();
    let message = &v["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], "Two and two: 4.", "{v}");
    assert_eq!(message["content"], r#"{"answer":4}"#, "{v}");
    let usage = &v["usage"];
    let thought = usage["completion_tokens_details"]["reasoning_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        thought > 0 && thought < usage["completion_tokens"].as_u64().unwrap(),
        "{v}"
    );

    // Streamed: the thinking as `reasoning_content` deltas, all before the content.
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let chunks = sse_chunks(&call(&r, "POST", "/v1/chat/completions", Some(streamed)).await);
    let (mut thinking, mut content) = (String::new(), String::new());
    for c in &chunks {
        let delta = &c["choices"][0]["delta"];
        if let Some(t) = delta["reasoning_content"].as_str() {
            assert!(content.is_empty(), "thinking after the answer began: {c}");
            thinking.push_str(t);
        }
        content.push_str(delta["content"].as_str().unwrap_or(""));
    }
    assert_eq!(thinking, "Two and two: 4.");
    assert_eq!(content, r#"{"answer":4}"#);

    // Turned off: no thinking, and the schema holds from the first token.
    for off in [
        json!({"reasoning_effort": "none"}),
        json!({"chat_template_kwargs": {"enable_thinking": false}}),
    ] {
        let mut b = body.clone();
        for (k, x) in off.as_object().unwrap() {
            b[k] = x.clone();
        }
        let v = call(&r, "POST", "/v1/chat/completions", Some(b))
            .await
            .json();
        let message = &v["choices"][0]["message"];
        assert!(message.get("reasoning_content").is_none(), "{v}");
        let doc: Value = serde_json::from_str(message["content"].as_str().unwrap()).unwrap();
        assert!(doc["answer"].is_number(), "{v}");
    }

    // A spent budget: the marker is written and the answer still follows the schema.
    let mut short = body.clone();
    short["reasoning_budget_tokens"] = json!(2);
    let v = call(&r, "POST", "/v1/chat/completions", Some(short))
        .await
        .json();
    let message = &v["choices"][0]["message"];
    let thought = message["reasoning_content"].as_str().unwrap();
    assert!(
        "Two and two: 4.".starts_with(thought) && thought.len() < 15,
        "{v}"
    );
    let doc: Value = serde_json::from_str(message["content"].as_str().unwrap()).unwrap();
    assert!(doc["answer"].is_number(), "{v}");

    let mut bad = body.clone();
    bad["reasoning_effort"] = json!("extreme");
    let e = call(&r, "POST", "/v1/chat/completions", Some(bad))
        .await
        .error(400);
    assert_eq!(e["param"], "reasoning_effort", "{e}");
    server.stop().await;
}

/// Tool calls the same way: think, then a constrained call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reasoning_models_think_before_a_tool_call() {
    let knobs = support::Knobs {
        reasoning_end: Some("</think>".into()),
        ..script(
            r#"<think>The clock knows.</think>{"tool_calls":[{"name":"current_time","arguments":{}}]}"#,
        )
    };
    let server = start(config(), knobs);
    let r = server.router();
    let body = json!({"messages": user("Time?"), "tools": [clock_tool()],
        "tool_choice": "required", "max_tokens": 80, "temperature": 0});
    let v = call(&r, "POST", "/v1/chat/completions", Some(body.clone()))
        .await
        .json();
    let message = &v["choices"][0]["message"];
    assert_eq!(message["reasoning_content"], "The clock knows.", "{v}");
    let calls = message["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 1, "{v}");
    assert_eq!(calls[0]["function"]["name"], "current_time");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    let thought = v["usage"]["completion_tokens_details"]["reasoning_tokens"]
        .as_u64()
        .unwrap();
    assert!(thought > 0, "{v}");

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let chunks = sse_chunks(&call(&r, "POST", "/v1/chat/completions", Some(streamed)).await);
    let thinking: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str())
        .collect();
    assert_eq!(thinking, "The clock knows.");
    assert_eq!(assemble(&chunks).len(), 1);
    // The thinking streams as it is generated: before the call starts.
    let first = |f: &dyn Fn(&Value) -> bool| chunks.iter().position(f).unwrap();
    let thought_at = first(&|c| c["choices"][0]["delta"]["reasoning_content"].is_string());
    let call_at = first(&|c| c["choices"][0]["delta"]["tool_calls"].is_array());
    assert!(thought_at < call_at, "{chunks:?}");

    // The Responses API: a reasoning item, then the call; streamed in that order.
    let body = json!({"input": "Time?", "tools": [{"type": "function", "name": "current_time",
        "parameters": {"type": "object", "properties": {}}}], "tool_choice": "required",
        "max_output_tokens": 80, "temperature": 0, "stream": true});
    let events = typed_events(&call(&r, "POST", "/v1/responses", Some(body)).await);
    let output = &events.last().unwrap().1["response"]["output"];
    assert_eq!(output[0]["type"], "reasoning", "{output}");
    assert_eq!(
        output[0]["content"][0]["text"], "The clock knows.",
        "{output}"
    );
    assert_eq!(output[1]["type"], "function_call", "{output}");
    assert_eq!(output[1]["name"], "current_time", "{output}");
    let added: Vec<(u64, String)> = events
        .iter()
        .filter(|(n, _)| n == "response.output_item.added")
        .map(|(_, d)| {
            (
                d["output_index"].as_u64().unwrap(),
                d["item"]["type"].to_string(),
            )
        })
        .collect();
    assert_eq!(
        added,
        [
            (0, "\"reasoning\"".to_string()),
            (1, "\"function_call\"".to_string())
        ]
    );
    server.stop().await;
}

/// The Responses API returns a reasoning model's thinking as a `reasoning` item before the
/// message, whole and streamed (`response.reasoning_text.delta` events before the text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_api_returns_the_thinking_as_a_reasoning_item() {
    let knobs = support::Knobs {
        reasoning_end: Some("</think>".into()),
        ..script(r#"<think>Two and two: 4.</think>{"answer":4}"#)
    };
    let server = start(config(), knobs);
    let r = server.router();
    let format = json!({"type": "json_schema", "name": "n", "schema":
        {"type": "object", "properties": {"answer": {"type": "integer"}},
         "required": ["answer"], "additionalProperties": false}});
    let body = json!({"input": "2+2?", "text": {"format": format},
        "max_output_tokens": 60, "temperature": 0});
    let v = call(&r, "POST", "/v1/responses", Some(body.clone()))
        .await
        .json();
    let output = v["output"].as_array().unwrap();
    assert_eq!(output.len(), 2, "{v}");
    assert_eq!(output[0]["type"], "reasoning", "{v}");
    assert_eq!(output[0]["summary"], json!([]), "{v}");
    assert_eq!(output[0]["content"][0]["type"], "reasoning_text", "{v}");
    assert_eq!(output[0]["content"][0]["text"], "Two and two: 4.", "{v}");
    assert_eq!(output[1]["type"], "message", "{v}");
    assert_eq!(output[1]["content"][0]["text"], r#"{"answer":4}"#, "{v}");
    assert!(
        v["usage"]["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );

    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    let events = typed_events(&call(&r, "POST", "/v1/responses", Some(streamed)).await);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    assert!(at("response.reasoning_text.delta") < at("response.reasoning_text.done"));
    assert!(at("response.reasoning_text.done") < at("response.output_text.delta"));
    let thinking: String = events
        .iter()
        .filter(|(n, _)| n == "response.reasoning_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(thinking, "Two and two: 4.");
    for (name, d) in &events {
        if name.starts_with("response.output_text") {
            assert_eq!(d["output_index"], 1, "{name}: {d}");
        }
        if name.starts_with("response.reasoning_text") {
            assert_eq!(d["output_index"], 0, "{name}: {d}");
        }
    }
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["output"][0]["content"][0]["text"], "Two and two: 4.");
    assert_eq!(done["output"][1]["content"][0]["text"], r#"{"answer":4}"#);

    // A client sends the output back as the next turn's input, reasoning item included.
    let mut input = done["output"].as_array().unwrap().clone();
    input.insert(0, json!({"role": "user", "content": "2+2?"}));
    input.push(json!({"role": "user", "content": "And 3+3?"}));
    let next = json!({"input": input, "text": {"format": format}, "max_output_tokens": 60});
    let reply = call(&r, "POST", "/v1/responses", Some(next)).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    server.stop().await;
}

/// `strict` per tool: a strict tool's arguments come in its schema's order, a tool that is
/// not strict keeps any order (here the order the model wrote), in the same request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_is_honoured_per_tool() {
    let server = start(
        config(),
        script(
            r#"{"tool_calls":[{"name":"loose","arguments":{"y":"b","x":"a"}},{"name":"tight","arguments":{"y":"b","x":"a"}}]}"#,
        ),
    );
    let r = server.router();
    let tool = |name: &str, strict: Value| {
        json!({"type": "function", "function": {"name": name, "strict": strict,
            "parameters": {"type": "object", "properties": {"x": {"type": "string"},
                "y": {"type": "string"}}, "required": ["x", "y"],
                "additionalProperties": false}}})
    };
    let arguments = |v: &Value| -> Vec<(String, String)> {
        v["choices"][0]["message"]["tool_calls"]
            .as_array()
            .unwrap_or_else(|| panic!("no calls: {v}"))
            .iter()
            .map(|c| {
                let f = &c["function"];
                (
                    f["name"].as_str().unwrap().to_string(),
                    f["arguments"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let body = |tight: Value| {
        json!({"messages": user("Go"), "tools": [tool("loose", Value::Null), tool("tight", tight)],
            "tool_choice": "required", "max_tokens": 120, "temperature": 0})
    };
    // Neither strict: both in the order the model wrote.
    let v = call(&r, "POST", "/v1/chat/completions", Some(body(json!(false))))
        .await
        .json();
    let calls = arguments(&v);
    assert_eq!(calls.len(), 2, "{v}");
    assert!(
        calls.iter().all(|(_, a)| a.starts_with(r#"{"y""#)),
        "{calls:?}"
    );
    // One strict: its arguments in schema order, the other's still as written.
    let v = call(&r, "POST", "/v1/chat/completions", Some(body(json!(true))))
        .await
        .json();
    let calls = arguments(&v);
    assert_eq!(
        calls[0],
        ("loose".into(), r#"{"y":"b","x":"a"}"#.into()),
        "{v}"
    );
    assert_eq!(calls[1].0, "tight", "{v}");
    assert!(calls[1].1.starts_with(r#"{"x""#), "{calls:?}");
    let args: Value = serde_json::from_str(&calls[1].1).unwrap();
    assert!(args["x"].is_string() && args["y"].is_string(), "{args}");
    server.stop().await;
}
