//! OpenAI's chat completion wire format: the request, its translation into a generation, and
//! the response and stream chunk bodies.
//!
//! The request is parsed leniently where OpenAI's clients differ (content as a string or as
//! text parts, `max_tokens` or `max_completion_tokens`, `stop` as a string or a list) and
//! strictly where a silent misreading would surprise (an unknown `response_format` type, `n`
//! other than 1, image parts): those are 400s naming the field.

use std::collections::{BTreeMap, HashMap};

use generate::tools::{Tool, ToolChoice};
use generate::{GenerateOptions, MAX_TOP_LOGPROBS, Message, SchemaInPrompt, TokenLogprob};
use sampler::SamplerConfig;
use schema_compiler::PropertyOrder;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;

/// The body of `POST /v1/chat/completions` (fields this server does not use are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    /// Accepted and echoed nowhere: the server has one model and answers with its id.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<ChatMessage>,
    /// `text`, `json_object` or `json_schema`.
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    /// Function tools, OpenAI's shape.
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// `"auto"`, `"required"`, `"none"` or `{"type":"function","function":{"name":…}}`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// `false`: at most one tool call per turn (default: any number).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// Sampling temperature in `[0, 2]` (default 1; 0 is greedy).
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Nucleus sampling in `(0, 1]` (default 1).
    #[serde(default)]
    pub top_p: Option<f32>,
    /// Most tokens to generate (deprecated name).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Most tokens to generate.
    #[serde(default)]
    pub max_completion_tokens: Option<u64>,
    /// Seed of the sampler (default: a fresh one per request).
    #[serde(default)]
    pub seed: Option<i64>,
    /// Stop strings (unconstrained text only).
    #[serde(default)]
    pub stop: Option<Stop>,
    /// Stream server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// `{"include_usage": true}` adds a last chunk with the usage.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Must be 1 when present.
    #[serde(default)]
    pub n: Option<u32>,
    /// OpenAI presence penalty in `[-2, 2]`.
    #[serde(default)]
    pub presence_penalty: Option<f32>,
    /// OpenAI frequency penalty in `[-2, 2]`.
    #[serde(default)]
    pub frequency_penalty: Option<f32>,
    /// Token id (as a string) to a bias in `[-100, 100]`.
    #[serde(default)]
    pub logit_bias: Option<HashMap<String, f32>>,
    /// Return the log probability of each generated token (from the distribution after the
    /// schema's mask).
    #[serde(default)]
    pub logprobs: Option<bool>,
    /// With `logprobs`: also the likeliest tokens at each step, 0 to 20.
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// Extension (as in vLLM and llama.cpp's server): keep the `top_k` best tokens.
    #[serde(default)]
    pub top_k: Option<u32>,
    /// Extension: min-p filtering.
    #[serde(default)]
    pub min_p: Option<f32>,
    /// Extension: llama.cpp-style repetition penalty.
    #[serde(default)]
    pub repetition_penalty: Option<f32>,
    /// Extension: how the `response_format` schema gets into the prompt. `auto` (default):
    /// into each `#!JSON_SCHEMA!#` placeholder, or else appended to the last user message,
    /// and summarised when it would leave too little room for the answer;
    /// `placeholder_only`: only into placeholders; `off`: not at all (the output still
    /// follows the schema).
    #[serde(default)]
    pub schema_in_prompt: Option<SchemaInPrompt>,
    /// Reasoning models: `none` turns the thinking section off; `minimal`, `low`, `medium`
    /// and `high` give it a budget of 128, 512, 2048 and 8192 tokens.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Extension (vLLM, SGLang): the thinking budget in tokens.
    #[serde(default)]
    pub reasoning_budget_tokens: Option<u32>,
    /// Extension (vLLM, SGLang, llama.cpp's server): more variables for the chat template;
    /// `enable_thinking: false` turns thinking off.
    #[serde(default)]
    pub chat_template_kwargs: Option<Value>,
}

/// What a request asks of a reasoning model's thinking section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Thinking {
    /// `false`: no thinking (`reasoning_effort: none`, `enable_thinking: false`); `true` or
    /// unset: think where the model's template has a thinking section.
    pub enabled: Option<bool>,
    /// Most tokens of thinking (`None`: the default).
    pub budget: Option<usize>,
}

/// The thinking budget when a request names none.
pub const DEFAULT_REASONING_BUDGET: usize = 2048;

/// One message of the conversation.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatMessage {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// A string, a list of parts (`{"type":"text","text":…}`), or null (assistant tool calls).
    #[serde(default)]
    pub content: Option<Value>,
    /// The name of a participant or, on `tool` messages, of the function.
    #[serde(default)]
    pub name: Option<String>,
    /// An assistant's earlier tool calls.
    #[serde(default)]
    pub tool_calls: Option<Value>,
    /// On `tool` messages: the call answered.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// `response_format`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text.
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON that follows a schema.
    JsonSchema {
        /// The schema and its name.
        json_schema: JsonSchemaFormat,
    },
}

/// `response_format.json_schema`.
#[derive(Debug, Clone, Deserialize)]
pub struct JsonSchemaFormat {
    /// The schema's name (required by OpenAI, used in messages here).
    #[serde(default)]
    pub name: Option<String>,
    /// The schema (absent: any JSON value).
    #[serde(default)]
    pub schema: Option<Value>,
    /// `true`: the members of each object come in the order of its schema's `properties`
    /// (`PropertyOrder::Schema`); otherwise in any order. The output follows the schema
    /// exactly either way.
    #[serde(default)]
    pub strict: Option<bool>,
}

/// `stop`: one string or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    /// One stop string.
    One(String),
    /// Several.
    Many(Vec<String>),
}

/// `stream_options`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` (and `"usage": null` on the others).
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// What a request asks the worker to do, validated.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The conversation, as the engine's messages.
    pub messages: Vec<Message>,
    /// The JSON Schema of the answer, if any.
    pub schema: Option<Value>,
    /// Tools.
    pub tools: Vec<Tool>,
    /// Run a tool-calling turn: there are tools, or earlier calls and results.
    pub with_tools: bool,
    /// `tool_choice` (`auto` when absent).
    pub tool_choice: ToolChoice,
    /// Most tool calls in the turn (`parallel_tool_calls: false` is 1; `None`: no limit).
    pub max_calls: Option<usize>,
    /// Generation options; `max_tokens` is later clamped to what the context has left.
    pub options: GenerateOptions,
    /// Stream server-sent events.
    pub stream: bool,
    /// Add a usage chunk at the end of the stream.
    pub include_usage: bool,
    /// How the schema gets into the prompt.
    pub schema_in_prompt: SchemaInPrompt,
    /// The order of object members: the schema's where a schema of the request is `strict`
    /// (OpenAI's contract for structured outputs), with the schemas that are not strict
    /// marked to keep any order ([`Tool::any_order`], [`Plan::loose_format`]); otherwise the
    /// server's default (`stencil serve --property-order`, any order unless set).
    pub property_order: PropertyOrder,
    /// The response format is not strict while the request's order is the schema's (a
    /// strict tool asked for it): the text answer keeps any order.
    pub loose_format: bool,
    /// The thinking section of a reasoning model.
    pub thinking: Thinking,
    /// More variables for the chat template (`chat_template_kwargs`).
    pub template_kwargs: Option<Value>,
}

impl Plan {
    /// Which kinds of reply the tool turn may give.
    pub(crate) fn tool_choice_mode(&self) -> crate::tools::Mode {
        use crate::tools::Mode;
        match &self.tool_choice {
            ToolChoice::None => Mode::Text,
            ToolChoice::Auto if self.tools.is_empty() => Mode::Text,
            ToolChoice::Auto => Mode::Either,
            ToolChoice::Required | ToolChoice::Named(_) => Mode::Calls,
        }
    }
}

impl ChatRequest {
    /// Parses a request body; the error names the offending field. Anything but whitespace
    /// after the JSON value is an error.
    pub fn from_slice(body: &[u8]) -> Result<ChatRequest, ApiError> {
        let mut de = serde_json::Deserializer::from_slice(body);
        let request = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let message = if inner.is_syntax() || inner.is_eof() {
                format!("the body is not valid JSON: {inner}")
            } else if path == "." {
                format!("invalid request: {inner}")
            } else {
                format!("invalid value for `{path}`: {inner}")
            };
            let err = ApiError::invalid(message);
            if path == "." { err } else { err.param(path) }
        })?;
        de.end()
            .map_err(|e| ApiError::invalid(format!("the body is not valid JSON: {e}")))?;
        Ok(request)
    }

    /// Checks the request against the server's limits and turns it into a [`Plan`].
    ///
    /// `max_tokens_limit` is the most tokens one request may ask for: asking for more is a
    /// 400 (`param: max_tokens`); asking for nothing gets the limit (then clamped to the
    /// context left after the prompt).
    pub fn plan(self, max_tokens_limit: usize, default_seed: u64) -> Result<Plan, ApiError> {
        if let Some(n) = self.n
            && n != 1
        {
            return Err(
                ApiError::invalid(format!("n must be 1 (got {n}): one model, one answer"))
                    .param("n"),
            );
        }
        let logprobs = match (self.logprobs.unwrap_or(false), self.top_logprobs) {
            (_, Some(n)) if n as usize > MAX_TOP_LOGPROBS => {
                return Err(ApiError::invalid(format!(
                    "top_logprobs must be in [0, {MAX_TOP_LOGPROBS}] (got {n})"
                ))
                .param("top_logprobs"));
            }
            (false, Some(_)) => {
                return Err(
                    ApiError::invalid("top_logprobs needs `logprobs: true`").param("top_logprobs")
                );
            }
            (true, n) => Some(n.unwrap_or(0) as usize),
            (false, None) => None,
        };
        if self.messages.is_empty() {
            return Err(ApiError::invalid("messages must not be empty").param("messages"));
        }
        let messages = self
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| convert_message(i, m))
            .collect::<Result<Vec<_>, _>>()?;

        let (max_tokens, param) = match (self.max_completion_tokens, self.max_tokens) {
            (Some(n), _) => (Some(n), "max_completion_tokens"),
            (None, Some(n)) => (Some(n), "max_tokens"),
            (None, None) => (None, "max_tokens"),
        };
        let max_tokens = match max_tokens {
            Some(0) => {
                return Err(ApiError::invalid(format!("{param} must be at least 1")).param(param));
            }
            Some(n) if n > max_tokens_limit as u64 => {
                return Err(ApiError::invalid(format!(
                    "{param} is too large: {n}. This server allows at most {max_tokens_limit} \
                     completion tokens per request"
                ))
                .param(param));
            }
            Some(n) => n as usize,
            None => max_tokens_limit,
        };

        let temperature = self.temperature.unwrap_or(1.0);
        if !(0.0..=2.0).contains(&temperature) {
            return Err(ApiError::invalid(format!(
                "temperature must be in [0, 2] (got {temperature})"
            ))
            .param("temperature"));
        }
        for (name, v) in [
            ("presence_penalty", self.presence_penalty),
            ("frequency_penalty", self.frequency_penalty),
        ] {
            if let Some(v) = v
                && !(-2.0..=2.0).contains(&v)
            {
                return Err(
                    ApiError::invalid(format!("{name} must be in [-2, 2] (got {v})")).param(name),
                );
            }
        }
        let mut logit_bias = BTreeMap::new();
        for (k, &v) in self.logit_bias.iter().flatten() {
            let id: u32 = k.parse().map_err(|_| {
                ApiError::invalid(format!("logit_bias keys must be token ids (got {k:?})"))
                    .param("logit_bias")
            })?;
            if !(-100.0..=100.0).contains(&v) {
                return Err(ApiError::invalid(format!(
                    "logit_bias values must be in [-100, 100] (got {v} for token {id})"
                ))
                .param("logit_bias"));
            }
            logit_bias.insert(id, v);
        }
        let defaults = SamplerConfig::default();
        let sampler = SamplerConfig {
            temperature,
            top_p: self.top_p.unwrap_or(1.0),
            top_k: self.top_k.unwrap_or(0),
            min_p: self.min_p.unwrap_or(0.0),
            repetition_penalty: self.repetition_penalty.unwrap_or(1.0),
            frequency_penalty: self.frequency_penalty.unwrap_or(0.0),
            presence_penalty: self.presence_penalty.unwrap_or(0.0),
            logit_bias,
            ..defaults
        };
        if let Err(e) = sampler.validate() {
            let mut err = ApiError::invalid(e.to_string());
            if let sampler::SampleError::InvalidConfig { field, .. } = e {
                err = err.param(field);
            }
            return Err(err);
        }

        let stop = match self.stop {
            None => Vec::new(),
            Some(Stop::One(s)) => vec![s],
            Some(Stop::Many(v)) => v,
        };
        if stop.len() > 4 || stop.iter().any(String::is_empty) {
            return Err(ApiError::invalid("stop takes at most 4 non-empty strings").param("stop"));
        }

        // Schema order as soon as one schema is `strict` (the answer's format, or a function
        // tool); the schemas that are not strict are then marked to keep any order.
        let strict_format = match &self.response_format {
            Some(ResponseFormat::JsonSchema { json_schema }) => {
                Some(json_schema.strict == Some(true))
            }
            Some(ResponseFormat::JsonObject) => Some(false),
            None | Some(ResponseFormat::Text) => None,
        };
        let strict_tools: Vec<bool> = self.tools.as_ref().map_or_else(Vec::new, |list| {
            list.iter()
                .map(|t| t.pointer("/function/strict") == Some(&Value::Bool(true)))
                .collect()
        });
        let property_order =
            if strict_format == Some(true) || strict_tools.iter().any(|&strict| strict) {
                PropertyOrder::Schema
            } else {
                PropertyOrder::Any
            };
        let loose_format = property_order == PropertyOrder::Schema && strict_format == Some(false);

        let effort_budget = match self.reasoning_effort.as_deref() {
            None => None,
            Some("none") => Some(None),
            Some("minimal") => Some(Some(128)),
            Some("low") => Some(Some(512)),
            Some("medium") => Some(Some(2048)),
            Some("high") => Some(Some(8192)),
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "reasoning_effort must be none, minimal, low, medium or high (got {other:?})"
                ))
                .param("reasoning_effort"));
            }
        };
        let template_kwargs = match &self.chat_template_kwargs {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => Some(v.clone()),
            Some(_) => {
                return Err(ApiError::invalid("chat_template_kwargs must be an object")
                    .param("chat_template_kwargs"));
            }
        };
        let enable_thinking = match template_kwargs.as_ref().map(|k| k.get("enable_thinking")) {
            None | Some(None) | Some(Some(Value::Null)) => None,
            Some(Some(Value::Bool(b))) => Some(*b),
            Some(Some(_)) => {
                return Err(ApiError::invalid(
                    "chat_template_kwargs.enable_thinking must be a boolean",
                )
                .param("chat_template_kwargs"));
            }
        };
        let thinking = Thinking {
            enabled: match (effort_budget, enable_thinking) {
                (Some(None), _) | (_, Some(false)) => Some(false),
                (Some(Some(_)), _) | (_, Some(true)) => Some(true),
                (None, None) => None,
            },
            budget: self
                .reasoning_budget_tokens
                .map(|n| n as usize)
                .or(effort_budget.flatten()),
        };

        let schema = match self.response_format {
            None | Some(ResponseFormat::Text) => None,
            Some(ResponseFormat::JsonObject) => Some(json!({"type": "object"})),
            Some(ResponseFormat::JsonSchema { json_schema }) => {
                Some(json_schema.schema.unwrap_or_else(|| json!({})))
            }
        };

        let tool_choice = match &self.tool_choice {
            None => ToolChoice::Auto,
            Some(v) => ToolChoice::from_openai(v).map_err(|e| ApiError::from_generate(&e))?,
        };
        let mut tools = match &self.tools {
            None => Vec::new(),
            Some(list) => Tool::list_from_openai(&Value::Array(list.clone()))
                .map_err(|e| ApiError::from_generate(&e))?,
        };
        if property_order == PropertyOrder::Schema {
            for (tool, &strict) in tools.iter_mut().zip(&strict_tools) {
                tool.any_order = !strict;
            }
        }
        if tools.is_empty() && !matches!(tool_choice, ToolChoice::Auto | ToolChoice::None) {
            return Err(ApiError::invalid(format!(
                "tool_choice `{tool_choice}` asks for a tool call but no tools are given"
            ))
            .param("tool_choice"));
        }
        if let ToolChoice::Named(name) = &tool_choice
            && !tools.iter().any(|t| &t.name == name)
        {
            return Err(ApiError::invalid(format!(
                "tool_choice names `{name}`, which is not among the tools"
            ))
            .param("tool_choice")
            .code("unknown_tool"));
        }
        // A conversation with tools, or with earlier calls and their results, goes through the
        // tool-calling turn, which knows how to render calls and results for the template.
        let with_tools = !tools.is_empty()
            || messages
                .iter()
                .any(|m| m.role == "tool" || m.tool_calls.is_some());

        let seed = match self.seed {
            Some(s) => s as u64,
            None => default_seed,
        };
        let options = GenerateOptions {
            max_tokens,
            sampler,
            seed,
            stop,
            logprobs,
            ..GenerateOptions::default()
        };
        Ok(Plan {
            messages,
            schema,
            tools,
            with_tools,
            tool_choice,
            max_calls: (self.parallel_tool_calls == Some(false)).then_some(1),
            options,
            stream: self.stream.unwrap_or(false),
            include_usage: self
                .stream_options
                .and_then(|o| o.include_usage)
                .unwrap_or(false),
            schema_in_prompt: self.schema_in_prompt.unwrap_or_default(),
            property_order,
            loose_format,
            thinking,
            template_kwargs,
        })
    }
}

fn convert_message(i: usize, m: &ChatMessage) -> Result<Message, ApiError> {
    let param = || format!("messages[{i}]");
    let role = match m.role.as_str() {
        "developer" => "system",
        r @ ("system" | "user" | "assistant" | "tool") => r,
        other => {
            return Err(ApiError::invalid(format!(
                "messages[{i}].role must be system, developer, user, assistant or tool (got \
                 {other:?})"
            ))
            .param(format!("{}.role", param())));
        }
    };
    let content = match &m.content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for (j, p) in parts.iter().enumerate() {
                match (p.get("type").and_then(Value::as_str), p.get("text")) {
                    (Some("text"), Some(Value::String(t))) => text.push_str(t),
                    (kind, _) => {
                        return Err(ApiError::invalid(format!(
                            "messages[{i}].content[{j}]: only text parts are supported (got \
                             type {})",
                            kind.unwrap_or("none")
                        ))
                        .param(format!("{}.content", param())));
                    }
                }
            }
            text
        }
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "messages[{i}].content must be a string or a list of text parts (got {other})"
            ))
            .param(format!("{}.content", param())));
        }
    };
    if m.content.as_ref().is_none_or(Value::is_null)
        && !(role == "assistant" && m.tool_calls.is_some())
    {
        return Err(
            ApiError::invalid(format!("messages[{i}].content is missing"))
                .param(format!("{}.content", param())),
        );
    }
    Ok(Message {
        role: role.to_string(),
        content,
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        name: m.name.clone(),
    })
}

/// A tool call in a response.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOut {
    /// `call_…`.
    pub id: String,
    /// The function's name.
    pub name: String,
    /// The arguments, as the JSON text the model wrote.
    pub arguments: String,
}

impl CallOut {
    /// `{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}`, with
    /// `index` when streaming.
    pub fn to_json(&self, index: Option<usize>) -> Value {
        let mut v = json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        });
        if let Some(i) = index {
            v["index"] = json!(i);
        }
        v
    }
}

/// OpenAI's `logprobs` object: `{"content": [{"token", "logprob", "bytes", "top_logprobs":
/// [{"token", "logprob", "bytes"}]}], "refusal": null}`. A token that is part of a UTF-8
/// character shows as U+FFFD in `token`; `bytes` has its exact bytes.
pub fn logprobs_json(entries: &[TokenLogprob]) -> Value {
    let one = |bytes: &[u8], logprob: f32| {
        json!({
            "token": String::from_utf8_lossy(bytes),
            "logprob": logprob,
            "bytes": bytes,
        })
    };
    let content: Vec<Value> = entries
        .iter()
        .map(|e| {
            let mut v = one(&e.bytes, e.logprob);
            v["top_logprobs"] = e.top.iter().map(|(_, b, lp)| one(b, *lp)).collect();
            v
        })
        .collect();
    json!({"content": content, "refusal": null})
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Text (JSON text under a schema).
    Text(String),
    /// Tool calls.
    Calls(Vec<CallOut>),
}

/// Token counts of a response.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt: usize,
    /// Generated tokens.
    pub completion: usize,
    /// Of those, the thinking's.
    pub reasoning: usize,
}

impl Usage {
    /// OpenAI's `usage` object.
    pub fn to_json(self) -> Value {
        json!({
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
            "completion_tokens_details": {"reasoning_tokens": self.reasoning},
        })
    }
}

/// Identity of one response: shared by all chunks of a stream.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// `chatcmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The model id.
    pub model: String,
}

impl Envelope {
    /// A whole `chat.completion`; `logprobs` when they were asked for.
    pub fn completion(
        &self,
        answer: &Answer,
        finish_reason: &str,
        usage: Usage,
        logprobs: Option<&[TokenLogprob]>,
        reasoning: Option<&str>,
    ) -> Value {
        let mut message = match answer {
            Answer::Text(t) => json!({"role": "assistant", "content": t, "refusal": null}),
            Answer::Calls(calls) => json!({
                "role": "assistant",
                "content": null,
                "refusal": null,
                "tool_calls": calls.iter().map(|c| c.to_json(None)).collect::<Vec<_>>(),
            }),
        };
        if let Some(r) = reasoning {
            message["reasoning_content"] = json!(r);
        }
        json!({
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": logprobs.map(logprobs_json),
                "finish_reason": finish_reason,
            }],
            "usage": usage.to_json(),
        })
    }

    /// A `chat.completion.chunk` with one choice carrying `delta`; `usage: null` when the
    /// stream will end with a usage chunk.
    pub fn chunk(&self, delta: Value, finish_reason: Option<&str>, include_usage: bool) -> Value {
        self.chunk_with(delta, finish_reason, include_usage, &[])
    }

    /// A chunk as [`Envelope::chunk`], with the log probabilities of the tokens it carries
    /// (none: `logprobs: null`).
    pub fn chunk_with(
        &self,
        delta: Value,
        finish_reason: Option<&str>,
        include_usage: bool,
        logprobs: &[TokenLogprob],
    ) -> Value {
        let mut v = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": (!logprobs.is_empty()).then(|| logprobs_json(logprobs)),
                "finish_reason": finish_reason,
            }],
        });
        if include_usage {
            v["usage"] = Value::Null;
        }
        v
    }

    /// The last chunk of a stream with `include_usage`: no choices, the usage.
    pub fn usage_chunk(&self, usage: Usage) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": null,
            "choices": [],
            "usage": usage.to_json(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(body: Value) -> Result<Plan, ApiError> {
        ChatRequest::from_slice(body.to_string().as_bytes())?.plan(256, 7)
    }

    #[test]
    fn strict_everywhere_asks_for_the_schemas_member_order() {
        let format = |strict: Value| {
            json!({"type": "json_schema",
                "json_schema": {"name": "n", "schema": {"type": "object"}, "strict": strict}})
        };
        let tool = |name: &str, strict: Value| {
            json!({"type": "function", "function": {"name": name,
                "parameters": {"type": "object"}, "strict": strict}})
        };
        let order = |extra: Value| {
            let mut body = json!({"messages": [{"role": "user", "content": "hi"}]});
            for (k, v) in extra.as_object().unwrap() {
                body[k] = v.clone();
            }
            plan(body).unwrap().property_order
        };
        assert_eq!(order(json!({})), PropertyOrder::Any);
        assert_eq!(
            order(json!({"response_format": format(json!(true))})),
            PropertyOrder::Schema
        );
        assert_eq!(
            order(json!({"response_format": format(json!(false))})),
            PropertyOrder::Any
        );
        assert_eq!(
            order(json!({"response_format": {"type": "json_object"}})),
            PropertyOrder::Any
        );
        assert_eq!(
            order(json!({"tools": [tool("a", json!(true)), tool("b", json!(true))]})),
            PropertyOrder::Schema
        );
        // One strict tool among others: schema order, and the others keep any order.
        let mixed = json!({"tools": [tool("a", json!(true)), tool("b", Value::Null)],
            "response_format": format(json!(false))});
        let mut body = json!({"messages": [{"role": "user", "content": "hi"}]});
        for (k, v) in mixed.as_object().unwrap() {
            body[k] = v.clone();
        }
        let p = plan(body).unwrap();
        assert_eq!(p.property_order, PropertyOrder::Schema);
        assert_eq!(
            p.tools.iter().map(|t| t.any_order).collect::<Vec<_>>(),
            [false, true]
        );
        assert!(p.loose_format);
        assert_eq!(
            order(json!({"tools": [tool("a", Value::Null), tool("b", json!(false))]})),
            PropertyOrder::Any
        );
        assert_eq!(
            order(json!({"tools": [tool("a", json!(true))],
                "response_format": format(json!(true))})),
            PropertyOrder::Schema
        );
    }

    #[test]
    fn reads_the_common_shapes() {
        let p = plan(json!({
            "model": "x",
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            ],
            "response_format": {"type": "json_schema",
                "json_schema": {"name": "n", "schema": {"type": "integer"}, "strict": true}},
            "max_completion_tokens": 9,
            "temperature": 0,
            "stop": "x",
            "stream": true,
            "stream_options": {"include_usage": true},
        }))
        .unwrap();
        assert_eq!(p.messages[0].role, "system");
        assert_eq!(p.messages[1].content, "hi");
        assert_eq!(p.schema, Some(json!({"type": "integer"})));
        assert_eq!(p.options.max_tokens, 9);
        assert_eq!(p.options.seed, 7);
        assert_eq!(p.options.stop, vec!["x".to_string()]);
        assert!(p.stream && p.include_usage);
        let p = plan(json!({"messages": [{"role": "user", "content": "hi"}],
            "response_format": {"type": "json_object"}}))
        .unwrap();
        assert_eq!(p.schema, Some(json!({"type": "object"})));
        assert_eq!(p.options.max_tokens, 256);
        assert_eq!(p.options.sampler.temperature, 1.0);
    }

    #[test]
    fn rejections_name_the_field() {
        let cases = [
            (json!({"messages": []}), "messages"),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": 257}),
                "max_tokens",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "temperature": 3}),
                "temperature",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "top_p": 0}),
                "top_p",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "n": 2}),
                "n",
            ),
            (
                json!({"messages": [{"role": "robot", "content": "x"}]}),
                "messages[0].role",
            ),
            (
                json!({"messages": [{"role": "user", "content": 5}]}),
                "messages[0].content",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}),
                "tool_choice",
            ),
            (
                json!({"messages": [{"role": "user", "content": "x"}],
                "response_format": {"type": "yaml"}}),
                "response_format.type",
            ),
            (json!({"messages": "x"}), "messages"),
            (
                json!({"messages": [{"role": "user", "content": "x"}],
                "schema_in_prompt": "sometimes"}),
                "schema_in_prompt",
            ),
        ];
        for (body, param) in cases {
            let e = plan(body.clone()).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{body}");
            assert_eq!(e.param.as_deref(), Some(param), "{body}: {e}");
        }
        let e = ChatRequest::from_slice(b"{not json").unwrap_err();
        assert!(e.message.contains("not valid JSON"), "{e}");
        let e = ChatRequest::from_slice(br#"{"messages": []} {"x": 1}"#).unwrap_err();
        assert!(e.message.contains("trailing characters"), "{e}");
        let e = ChatRequest::from_slice(br#"{"messages": [{"role": "user", "content": "x"}]}x"#)
            .unwrap_err();
        assert!(e.message.contains("trailing characters"), "{e}");
        // Whitespace after the value is fine.
        ChatRequest::from_slice(b"{\"messages\": []}\n").unwrap();
    }
}
