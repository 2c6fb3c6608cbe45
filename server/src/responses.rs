//! `POST /v1/responses`: OpenAI's Responses API over the chat completions machinery.
//!
//! A request is translated into a chat completion request (`input` items into messages,
//! `instructions` into a system message, `text.format` into `response_format`, flat function
//! tools into nested ones, `max_output_tokens` into `max_completion_tokens`) and planned,
//! queued, compiled and generated the same way, behind the same checks and limits. The answer
//! is a `response` object whose `output` holds a `message` item (with `output_text`) or
//! `function_call` items; a stream sends the typed events of the Responses API, each with its
//! `sequence_number`.
//!
//! Log probabilities come with `include: ["message.output_text.logprobs"]` (and
//! `top_logprobs`, 0 to 20): each `output_text` part, and each streamed text delta, carries
//! `logprobs` for its tokens, in the chat API's per-token shape.
//!
//! Nothing is stored: `previous_response_id` is refused (send the whole conversation in
//! `input` instead), and `store` is accepted but answered `false`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::AppState;
use crate::error::ApiError;
use crate::http::{RequestLog, Started, Timeout, fresh_u64, run_request};
use crate::openai::{Answer, ChatRequest, Plan, Usage, logprobs_json};
use crate::worker::{Event, Finished};
use generate::TokenLogprob;

/// The `include` entry that asks for the log probabilities of the output text.
const LOGPROBS_INCLUDE: &str = "message.output_text.logprobs";

/// Reads a Responses API body into a chat completion plan.
fn parse(body: &[u8], max_tokens: usize, seed: u64) -> Result<Plan, ApiError> {
    let request: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("the body is not valid JSON: {e}")))?;
    let chat = to_chat(&request)?;
    let chat = ChatRequest::from_slice(chat.to_string().as_bytes()).map_err(rename_param)?;
    chat.plan(max_tokens, seed).map_err(rename_param)
}

/// Names the Responses API's field in an error about the chat request built from it.
fn rename_param(mut e: ApiError) -> ApiError {
    if let Some(p) = &e.param {
        let renamed = if p == "max_completion_tokens" || p == "max_tokens" {
            "max_output_tokens".to_string()
        } else if let Some(rest) = p.strip_prefix("response_format") {
            format!("text.format{rest}")
        } else if p.starts_with("messages") {
            "input".to_string()
        } else {
            p.clone()
        };
        e.message = e.message.replace(p.as_str(), &renamed);
        e.param = Some(renamed);
    }
    e
}

/// The chat completion request a Responses API request asks for.
fn to_chat(r: &Value) -> Result<Value, ApiError> {
    let r = r
        .as_object()
        .ok_or_else(|| ApiError::invalid("the body must be a JSON object"))?;
    if r.get("previous_response_id").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::invalid(
            "previous_response_id is not supported: this server stores no responses; send the \
             whole conversation in `input`",
        )
        .param("previous_response_id")
        .code("unsupported_parameter"));
    }
    for unsupported in ["conversation", "background", "prompt"] {
        if r.get(unsupported)
            .is_some_and(|v| !v.is_null() && v != false)
        {
            return Err(ApiError::invalid(format!(
                "`{unsupported}` is not supported by this server"
            ))
            .param(unsupported)
            .code("unsupported_parameter"));
        }
    }
    let mut messages = Vec::new();
    match r.get("instructions") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => messages.push(json!({"role": "system", "content": s})),
        Some(_) => {
            return Err(ApiError::invalid("instructions must be a string").param("instructions"));
        }
    }
    match r.get("input") {
        Some(Value::String(s)) => messages.push(json!({"role": "user", "content": s})),
        Some(Value::Array(items)) => input_items(items, &mut messages)?,
        None => return Err(ApiError::invalid("input is missing").param("input")),
        Some(_) => {
            return Err(
                ApiError::invalid("input must be a string or a list of items").param("input"),
            );
        }
    }
    let mut chat = Map::new();
    chat.insert("messages".into(), Value::Array(messages));
    for (from, to) in [
        ("model", "model"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("max_output_tokens", "max_completion_tokens"),
        ("tool_choice", "tool_choice"),
        ("parallel_tool_calls", "parallel_tool_calls"),
        ("stream", "stream"),
    ] {
        if let Some(v) = r.get(from).filter(|v| !v.is_null()) {
            chat.insert(to.into(), v.clone());
        }
    }
    // Log probabilities: asked for through `include`, or by asking for alternatives.
    let include_logprobs = match r.get("include") {
        None | Some(Value::Null) => false,
        Some(Value::Array(items)) => {
            let mut wanted = false;
            for item in items {
                match item.as_str() {
                    Some(LOGPROBS_INCLUDE) => wanted = true,
                    // Other inclusions name data this server does not produce (encrypted
                    // reasoning, search results): there is nothing to add.
                    Some(_) => {}
                    None => {
                        return Err(
                            ApiError::invalid("include must be a list of strings").param("include")
                        );
                    }
                }
            }
            wanted
        }
        Some(_) => {
            return Err(ApiError::invalid("include must be a list of strings").param("include"));
        }
    };
    let top = r.get("top_logprobs").filter(|v| !v.is_null());
    if include_logprobs || top.is_some() {
        chat.insert("logprobs".into(), json!(true));
    }
    if let Some(top) = top {
        chat.insert("top_logprobs".into(), top.clone());
    }
    if let Some(format) = r
        .get("text")
        .filter(|t| !t.is_null())
        .map(|t| t.get("format").cloned().unwrap_or(Value::Null))
        .filter(|f| !f.is_null())
    {
        chat.insert("response_format".into(), response_format(&format)?);
    }
    if let Some(tools) = r.get("tools").filter(|t| !t.is_null()) {
        let list = tools
            .as_array()
            .ok_or_else(|| ApiError::invalid("tools must be a list").param("tools"))?;
        let tools = list
            .iter()
            .enumerate()
            .map(|(i, t)| tool(i, t))
            .collect::<Result<Vec<_>, _>>()?;
        chat.insert("tools".into(), Value::Array(tools));
    }
    Ok(Value::Object(chat))
}

/// `text.format` as a chat `response_format`.
fn response_format(format: &Value) -> Result<Value, ApiError> {
    let bad = |m: String| ApiError::invalid(m).param("text.format");
    match format.get("type").and_then(Value::as_str) {
        Some("text") => Ok(json!({"type": "text"})),
        Some("json_object") => Ok(json!({"type": "json_object"})),
        Some("json_schema") => {
            let mut inner = Map::new();
            for key in ["name", "schema", "strict"] {
                if let Some(v) = format.get(key) {
                    inner.insert(key.into(), v.clone());
                }
            }
            if !format.get("schema").is_some_and(Value::is_object) {
                return Err(bad(
                    "text.format of type json_schema needs a `schema` object".into(),
                ));
            }
            Ok(json!({"type": "json_schema", "json_schema": inner}))
        }
        Some(other) => Err(bad(format!(
            "unknown text.format type {other:?} (expected text, json_object or json_schema)"
        ))),
        None => Err(bad("text.format needs a `type`".into())),
    }
}

/// A flat Responses API function tool as a chat completions tool.
fn tool(i: usize, t: &Value) -> Result<Value, ApiError> {
    let bad = |m: String| ApiError::invalid(format!("tools[{i}]: {m}")).param("tools");
    match t.get("type").and_then(Value::as_str) {
        Some("function") => {}
        Some(other) => {
            return Err(bad(format!(
                "unsupported tool type `{other}` (only `function` is supported)"
            )));
        }
        None => return Err(bad("a tool needs `\"type\": \"function\"`".into())),
    }
    let mut function = Map::new();
    for key in ["name", "description", "parameters", "strict"] {
        if let Some(v) = t.get(key) {
            function.insert(key.into(), v.clone());
        }
    }
    Ok(json!({"type": "function", "function": function}))
}

/// Appends the messages of `input` items: messages, `function_call`s (grouped into one
/// assistant message per run of calls) and `function_call_output`s.
fn input_items(items: &[Value], messages: &mut Vec<Value>) -> Result<(), ApiError> {
    let mut names: Vec<(String, String)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let bad = |m: String| ApiError::invalid(format!("input[{i}]: {m}")).param("input");
        let obj = item
            .as_object()
            .ok_or_else(|| bad("an item must be an object".into()))?;
        let string = |key: &str| -> Result<String, ApiError> {
            match obj.get(key) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(bad(format!("`{key}` must be a string"))),
                None => Err(bad(format!("`{key}` is missing"))),
            }
        };
        let ty = obj.get("type").and_then(Value::as_str);
        match ty {
            None | Some("message") => {
                let role = string("role")?;
                if !matches!(role.as_str(), "user" | "assistant" | "system" | "developer") {
                    return Err(bad(format!(
                        "role must be user, assistant, system or developer (got {role:?})"
                    )));
                }
                let content = match obj.get("content") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Array(parts)) => {
                        let mut text = String::new();
                        for (j, p) in parts.iter().enumerate() {
                            match (p.get("type").and_then(Value::as_str), p.get("text")) {
                                (
                                    Some("input_text" | "output_text" | "text"),
                                    Some(Value::String(t)),
                                ) => text.push_str(t),
                                (kind, _) => {
                                    return Err(bad(format!(
                                        "content[{j}]: only text parts are supported (got type \
                                         {})",
                                        kind.unwrap_or("none")
                                    )));
                                }
                            }
                        }
                        text
                    }
                    Some(_) => {
                        return Err(bad(
                            "content must be a string or a list of text parts".into()
                        ));
                    }
                    None => return Err(bad("content is missing".into())),
                };
                messages.push(json!({"role": role, "content": content}));
            }
            Some("function_call") => {
                let call_id = string("call_id")?;
                let name = string("name")?;
                let arguments = string("arguments")?;
                names.push((call_id.clone(), name.clone()));
                let call = json!({"id": call_id, "type": "function",
                    "function": {"name": name, "arguments": arguments}});
                match messages.last_mut() {
                    Some(m) if m["role"] == "assistant" && m["tool_calls"].is_array() => {
                        m["tool_calls"].as_array_mut().expect("an array").push(call);
                    }
                    _ => messages
                        .push(json!({"role": "assistant", "content": null, "tool_calls": [call]})),
                }
            }
            Some("function_call_output") => {
                let call_id = string("call_id")?;
                let output = match obj.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Null) | None => return Err(bad("`output` is missing".into())),
                    Some(other) => other.to_string(),
                };
                let mut m = json!({"role": "tool", "tool_call_id": call_id, "content": output});
                if let Some((_, name)) = names.iter().find(|(id, _)| *id == call_id) {
                    m["name"] = json!(name);
                }
                messages.push(m);
            }
            // The thinking of an earlier turn, as this server returns it: chat templates
            // leave earlier thinking out of the prompt, so it is skipped.
            Some("reasoning") => {}
            Some(other) => {
                return Err(bad(format!(
                    "unsupported item type `{other}` (expected message, function_call, \
                     function_call_output or reasoning)"
                )));
            }
        }
    }
    if messages.is_empty() {
        return Err(ApiError::invalid("input must not be empty").param("input"));
    }
    Ok(())
}

/// The parts of a response object that echo the request.
struct Echo {
    id: String,
    created_at: u64,
    model: String,
    request: Value,
}

impl Echo {
    /// A `response` object with `status`, `output` and `usage`.
    fn response(&self, status: &str, output: Vec<Value>, usage: Option<Usage>) -> Value {
        let r = &self.request;
        let get = |k: &str, default: Value| {
            r.get(k)
                .filter(|v| !v.is_null())
                .cloned()
                .unwrap_or(default)
        };
        let text = get("text", json!({"format": {"type": "text"}}));
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": null,
            "incomplete_details": (status == "incomplete")
                .then(|| json!({"reason": "max_output_tokens"})),
            "instructions": get("instructions", Value::Null),
            "max_output_tokens": get("max_output_tokens", Value::Null),
            "model": self.model,
            "output": output,
            "parallel_tool_calls": get("parallel_tool_calls", json!(true)),
            "previous_response_id": null,
            "store": false,
            "temperature": get("temperature", json!(1.0)),
            "top_p": get("top_p", json!(1.0)),
            "text": text,
            "tool_choice": get("tool_choice", json!("auto")),
            "tools": get("tools", json!([])),
            "metadata": get("metadata", json!({})),
            "usage": usage.map(usage_json),
        })
    }
}

fn usage_json(u: Usage) -> Value {
    json!({
        "input_tokens": u.prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": u.completion,
        "output_tokens_details": {"reasoning_tokens": u.reasoning},
        "total_tokens": u.prompt + u.completion,
    })
}

fn status(f: &Finished) -> &'static str {
    if f.finish_reason == "length" {
        "incomplete"
    } else {
        "completed"
    }
}

/// The Responses API's `logprobs` of an `output_text` part or delta: the chat API's
/// per-token entries.
fn text_logprobs(entries: Option<&[TokenLogprob]>) -> Value {
    entries.map_or_else(|| json!([]), |e| logprobs_json(e)["content"].take())
}

fn message_item(id: &str, status: &str, text: Option<(&str, Option<&[TokenLogprob]>)>) -> Value {
    let content = match text {
        Some((t, lp)) => json!([{"type": "output_text", "text": t, "annotations": [],
            "logprobs": text_logprobs(lp)}]),
        None => json!([]),
    };
    json!({"type": "message", "id": id, "status": status, "role": "assistant",
        "content": content})
}

fn call_item(id: &str, call_id: &str, name: &str, arguments: &str, status: &str) -> Value {
    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name,
        "arguments": arguments, "status": status})
}

/// A reasoning model's thinking, as a `reasoning` item (its text as `reasoning_text`
/// content; no summary).
fn reasoning_item(id: &str, status: &str, text: Option<&str>) -> Value {
    let content = match text {
        Some(t) => json!([{"type": "reasoning_text", "text": t}]),
        None => json!([]),
    };
    json!({"type": "reasoning", "id": id, "summary": [], "content": content, "status": status})
}

/// The output items of a finished answer: the thinking first, if any.
fn output(f: &Finished) -> Vec<Value> {
    let thought = f
        .reasoning
        .as_deref()
        .filter(|r| !r.is_empty())
        .map(|r| reasoning_item(&item_id("rs"), "completed", Some(r)));
    let answer = match &f.answer {
        Answer::Text(t) => vec![message_item(
            &item_id("msg"),
            "completed",
            Some((t, f.logprobs.as_deref())),
        )],
        Answer::Calls(calls) => calls
            .iter()
            .map(|c| call_item(&item_id("fc"), &c.id, &c.name, &c.arguments, "completed"))
            .collect(),
    };
    thought.into_iter().chain(answer).collect()
}

fn item_id(prefix: &str) -> String {
    format!("{prefix}_{:016x}", fresh_u64())
}

/// `POST /v1/responses`.
pub(crate) async fn responses(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let id = format!("resp_{:016x}", fresh_u64());
    let request: Value = body
        .as_ref()
        .ok()
        .and_then(|b| serde_json::from_slice(b).ok())
        .unwrap_or(Value::Null);
    let (started, mut log, timeout) = run_request(&state, &id, "response", body, &parse).await;
    let echo = Echo {
        id,
        created_at: crate::http::now_secs(),
        model: state.inner.model_id.clone(),
        request,
    };
    match started {
        Ok(Started::Whole(f)) => {
            log.ok(&f);
            Json(echo.response(status(&f), output(&f), Some(f.usage))).into_response()
        }
        Ok(Started::Stream { events, .. }) => stream(echo, events, log, timeout),
        Err(e) => {
            log.err(&e);
            e.into_response()
        }
    }
}

/// Numbers the events of a stream.
struct Events {
    next: u64,
}

impl Events {
    fn event(&mut self, ty: &str, mut body: Value) -> Result<SseEvent, std::convert::Infallible> {
        body["type"] = json!(ty);
        body["sequence_number"] = json!(self.next);
        self.next += 1;
        Ok(SseEvent::default().event(ty).data(body.to_string()))
    }
}

/// A streamed call's state.
struct OpenCall {
    item_id: String,
    call_id: String,
    name: String,
    arguments: String,
}

/// The typed server-sent events of a streamed response.
fn stream(
    echo: Echo,
    mut events: mpsc::UnboundedReceiver<Event>,
    mut log: RequestLog,
    timeout: Timeout,
) -> Response {
    let stream = async_stream::stream! {
        let mut ev = Events { next: 0 };
        yield ev.event("response.created",
            json!({"response": echo.response("in_progress", Vec::new(), None)}));
        yield ev.event("response.in_progress",
            json!({"response": echo.response("in_progress", Vec::new(), None)}));
        let msg_id = item_id("msg");
        // The thinking streamed so far, while its item is open; its item once closed (the
        // answer's items then come after it).
        let rs_id = item_id("rs");
        let mut thinking: Option<String> = None;
        let mut thought: Option<Value> = None;
        // The text so far, once the message item is open.
        let mut text: Option<String> = None;
        let mut calls: Vec<OpenCall> = Vec::new();
        // Log probabilities of text not sent yet, and of all the text sent.
        let mut pending: Vec<TokenLogprob> = Vec::new();
        let mut sent_logprobs: Vec<TokenLogprob> = Vec::new();
        loop {
            let event = match timeout.next(&mut events).await {
                Ok(event) => event,
                Err(e) => {
                    log.err(&e);
                    yield ev.event("error", error_body(&e));
                    break;
                }
            };
            if !matches!(event, Event::Reasoning(_) | Event::Logprobs(_) | Event::Started)
                && let Some(t) = thinking.take()
            {
                for e in close_reasoning(&mut ev, &rs_id, &t) {
                    yield e;
                }
                thought = Some(reasoning_item(&rs_id, "completed", Some(&t)));
            }
            // Where the answer's items start: after the thinking's.
            let base = usize::from(thought.is_some());
            match event {
                Event::Reasoning(piece) => {
                    if thought.is_some() || text.is_some() || !calls.is_empty() {
                        // Thinking after the answer started: not part of the output.
                        continue;
                    }
                    if thinking.is_none() {
                        yield ev.event("response.output_item.added", json!({"output_index": 0,
                            "item": reasoning_item(&rs_id, "in_progress", None)}));
                        yield ev.event("response.content_part.added", json!({"item_id": rs_id,
                            "output_index": 0, "content_index": 0,
                            "part": {"type": "reasoning_text", "text": ""}}));
                    }
                    thinking.get_or_insert_with(String::new).push_str(&piece);
                    yield ev.event("response.reasoning_text.delta", json!({"item_id": rs_id,
                        "output_index": 0, "content_index": 0, "delta": piece}));
                }
                Event::Delta(piece) => {
                    if text.is_none() {
                        yield ev.event("response.output_item.added", json!({"output_index": base,
                            "item": message_item(&msg_id, "in_progress", None)}));
                        yield ev.event("response.content_part.added", json!({"item_id": msg_id,
                            "output_index": base, "content_index": 0,
                            "part": {"type": "output_text", "text": "", "annotations": []}}));
                        text = Some(String::new());
                    }
                    if let Some(t) = text.as_mut() {
                        t.push_str(&piece);
                    }
                    let lp = std::mem::take(&mut pending);
                    let logprobs = text_logprobs(Some(&lp));
                    sent_logprobs.extend(lp);
                    yield ev.event("response.output_text.delta", json!({"item_id": msg_id,
                        "output_index": base, "content_index": 0, "delta": piece,
                        "logprobs": logprobs}));
                }
                Event::CallStart { index, id, name } => {
                    if let Some(c) = calls.last() {
                        for e in close_call(&mut ev, base + calls.len() - 1, c) {
                            yield e;
                        }
                    }
                    let call = OpenCall { item_id: item_id("fc"), call_id: id, name,
                        arguments: String::new() };
                    yield ev.event("response.output_item.added", json!({
                        "output_index": base + index,
                        "item": call_item(&call.item_id, &call.call_id, &call.name, "",
                            "in_progress")}));
                    calls.push(call);
                }
                Event::CallArguments { index, fragment } => {
                    if let Some(c) = calls.get_mut(index) {
                        c.arguments.push_str(&fragment);
                        yield ev.event("response.function_call_arguments.delta",
                            json!({"item_id": c.item_id, "output_index": base + index,
                                "delta": fragment}));
                    }
                }
                Event::Logprobs(entries) => pending.extend(entries),
                Event::Started => {}
                Event::Done(Ok(f)) => {
                    let mut output: Vec<Value> = thought.take().into_iter().collect();
                    match &f.answer {
                        Answer::Calls(final_calls) => {
                            if let Some(c) = calls.last() {
                                for e in close_call(&mut ev, base + calls.len() - 1, c) {
                                    yield e;
                                }
                            }
                            for (i, c) in final_calls.iter().enumerate() {
                                let item = match calls.get(i) {
                                    Some(s) => call_item(&s.item_id, &s.call_id, &s.name,
                                        &s.arguments, "completed"),
                                    None => call_item(&item_id("fc"), &c.id, &c.name,
                                        &c.arguments, "completed"),
                                };
                                output.push(item);
                            }
                        }
                        Answer::Text(final_text) => {
                            if text.is_none() {
                                // Nothing was streamed (an empty answer): the item still opens.
                                yield ev.event("response.output_item.added", json!({
                                    "output_index": base,
                                    "item": message_item(&msg_id, "in_progress", None)}));
                                yield ev.event("response.content_part.added", json!({
                                    "item_id": msg_id, "output_index": base, "content_index": 0,
                                    "part": {"type": "output_text", "text": "",
                                        "annotations": []}}));
                                if !final_text.is_empty() {
                                    yield ev.event("response.output_text.delta", json!({
                                        "item_id": msg_id, "output_index": base,
                                        "content_index": 0, "delta": final_text,
                                        "logprobs": []}));
                                }
                            }
                            let sent = text.clone().unwrap_or_else(|| final_text.clone());
                            sent_logprobs.append(&mut pending);
                            let logprobs = text_logprobs(Some(&sent_logprobs));
                            yield ev.event("response.output_text.done", json!({"item_id": msg_id,
                                "output_index": base, "content_index": 0, "text": sent,
                                "logprobs": logprobs}));
                            let part = json!({"type": "output_text", "text": sent,
                                "annotations": [], "logprobs": logprobs});
                            yield ev.event("response.content_part.done", json!({"item_id": msg_id,
                                "output_index": base, "content_index": 0, "part": part}));
                            let item = message_item(&msg_id, "completed",
                                Some((&sent, Some(&sent_logprobs))));
                            yield ev.event("response.output_item.done",
                                json!({"output_index": base, "item": item}));
                            output.push(item);
                        }
                    }
                    let done = if status(&f) == "completed" {
                        "response.completed"
                    } else {
                        "response.incomplete"
                    };
                    yield ev.event(done, json!({"response":
                        echo.response(status(&f), output, Some(f.usage))}));
                    log.ok(&f);
                    break;
                }
                Event::Done(Err(e)) => {
                    log.err(&e);
                    yield ev.event("error", error_body(&e));
                    break;
                }
            }
        }
    };
    Sse::new(stream).into_response()
}

/// The `done` events of the streamed thinking (the first output item).
fn close_reasoning(
    ev: &mut Events,
    id: &str,
    text: &str,
) -> Vec<Result<SseEvent, std::convert::Infallible>> {
    vec![
        ev.event(
            "response.reasoning_text.done",
            json!({"item_id": id, "output_index": 0, "content_index": 0, "text": text}),
        ),
        ev.event(
            "response.content_part.done",
            json!({"item_id": id, "output_index": 0, "content_index": 0,
                "part": {"type": "reasoning_text", "text": text}}),
        ),
        ev.event(
            "response.output_item.done",
            json!({"output_index": 0, "item": reasoning_item(id, "completed", Some(text))}),
        ),
    ]
}

/// The `done` events of a streamed call.
fn close_call(
    ev: &mut Events,
    index: usize,
    c: &OpenCall,
) -> Vec<Result<SseEvent, std::convert::Infallible>> {
    vec![
        ev.event(
            "response.function_call_arguments.done",
            json!({"item_id": c.item_id, "output_index": index, "arguments": c.arguments}),
        ),
        ev.event(
            "response.output_item.done",
            json!({"output_index": index, "item": call_item(&c.item_id, &c.call_id, &c.name,
                &c.arguments, "completed")}),
        ),
    ]
}

/// An `error` event's body.
fn error_body(e: &ApiError) -> Value {
    json!({"code": e.code, "message": e.message, "param": e.param})
}
