//! Tool calling: tools described the OpenAI way, calls constrained by the tools' schemas, and a
//! loop that runs the tools and feeds their results back.
//!
//! # One turn
//!
//! [`Generator::generate_with_tools`] renders the conversation with the tools, generates one
//! assistant turn under a constraint built from the tools and the [`ToolChoice`], and returns a
//! [`Reply`]: text, or calls with their arguments as the JSON the model wrote.
//!
//! - The constraint for a call is compiled from the tools' schemas: each call is an object with
//!   the tool's name as a `const` and its arguments under the tool's `parameters` schema
//!   (several tools are `anyOf` alternatives, decided by the name). Several calls in one turn
//!   are allowed (an array of at least one call, or repeated blocks, as the format says).
//! - [`ToolChoice::Required`] allows calls only, [`ToolChoice::Named`] only calls to that tool,
//!   [`ToolChoice::None`] only text (and the tools are left out of the prompt).
//! - [`ToolChoice::Auto`] lets the model choose, and the choice is constrained too: the
//!   constraint is the union of a call and of text that does not start with the call opening
//!   (see [`ToolRecognizer`]). Once the opening is written the turn can only end as a complete,
//!   valid call, so there are no half-formed calls. In the JSON formats a text answer may
//!   therefore not start with `{`; with Hermes tags it may not contain `<tool_call>`. The same
//!   text rule applies with `none`, so a text answer never looks like a call (with no tools at
//!   all, `auto` is plain text without the rule).
//! - Calls are compact JSON (no whitespace between tokens, so the bytes the schema forces are
//!   fed to the model without sampling) and use no `\u` escapes (see [`CallSequence`]).
//! - [`Generator::generate_tool_turn`] adds a limit on the calls per turn, a prefill for
//!   text answers, and a JSON Schema text answers follow instead of the text rule (OpenAI's
//!   `response_format` together with tools; see [`TurnOptions`]).
//!
//! # Formats
//!
//! [`ToolFormat::detect`] uses the model's own format when its chat template defines one:
//!
//! | template | format | calls look like |
//! | --- | --- | --- |
//! | Qwen 2.5 / Qwen 3, Hermes | [`ToolFormat::Hermes`] | `<tool_call>\n{"name": .., "arguments": {..}}\n</tool_call>`, one block per call |
//! | Llama 3.1+ with tools | [`ToolFormat::Llama3Json`] | `{"name": .., "parameters": {..}}`, one call per turn |
//! | anything else (Gemma 3, the original Llama 3 template, no template) | [`ToolFormat::JsonEnvelope`] | `{"tool_calls":[{"name":..,"arguments":{..}}]}` |
//!
//! With a template's own format the tools are passed to the template (`tools`), assistant calls
//! as OpenAI `tool_calls` and results as `tool` messages. Otherwise a system message lists the
//! tools and shows the envelope, assistant calls are written in the envelope, and results go
//! back as a user message (`Tool results:` then `name: result` per call): templates such as
//! Gemma's reject a `tool` role. A template with its own format that fails to render falls back
//! to the same plain rendering.
//!
//! # The loop
//!
//! [`ToolLoop`] runs several trips: generate, run the called tools (Rust closures registered
//! as [`ToolHandler`]s), append the results as `tool` messages, and repeat until the model
//! answers in text or `max_trips` is reached. See [`ToolLoop`] for the choice policy per trip
//! and the timeout. [`builtin::calculator`] is a safe arithmetic tool for demos and tests.
//!
//! # Example
//!
//! ```no_run
//! # fn demo<M: generate::Model>(generator: &mut generate::Generator<M>) -> Result<(), generate::GenerateError> {
//! use generate::Message;
//! use generate::tools::{ToolChoice, ToolLoop, builtin};
//!
//! let (tool, handler) = builtin::calculator();
//! let result = ToolLoop::new()
//!     .tool(tool, handler)
//!     .choice(ToolChoice::Required) // the first trip must call a tool
//!     .run(generator, vec![Message::new("user", "What is 1234 * 5678?")])?;
//! println!("{}", result.answer.unwrap_or_default());
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mask_kernel::{Recognizer, Session};
use schema_compiler::{Matcher, Whitespace};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::engine::{GenerateOptions, Generator, Output, StopReason};
use crate::error::GenerateError;
use crate::model::Model;
use crate::template::Message;
use vocab_index::TokenId;

pub mod builtin;
mod format;
mod recognizer;
mod tool_loop;

pub use format::ToolFormat;
pub use recognizer::{Branches, CallLayout, CallSequence, TextGuard, ToolRecognizer};
pub use tool_loop::{
    LoopEvent, LoopResult, LoopStop, ToolHandler, ToolLoop, ToolOutcome, TripStats,
};

/// A function the model may call, described the OpenAI way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The name (`[A-Za-z0-9_-]`, 1 to 64 characters).
    pub name: String,
    /// What it does, for the model.
    pub description: Option<String>,
    /// A JSON Schema for the arguments (an object schema, usually).
    pub parameters: Value,
    /// The arguments may be written in any order even when the generator writes members in
    /// the schema's order ([`schema_compiler::PropertyOrder::Schema`]): for a tool that is not
    /// `strict` among strict ones. Default `false`.
    pub any_order: bool,
}

impl Tool {
    /// A tool with a name, a description and a parameters schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Tool {
        Tool {
            name: name.into(),
            description: Some(description.into()),
            parameters,
            any_order: false,
        }
    }

    /// Reads an OpenAI tool: `{"type": "function", "function": {"name", "description",
    /// "parameters"}}` (a bare `{"name", ...}` is accepted too). Missing parameters mean no
    /// arguments (`{"type": "object", "properties": {}}`).
    ///
    /// # Errors
    ///
    /// [`GenerateError::InvalidTool`] for another tool type, a missing or malformed name, a
    /// description that is not a string, or parameters that are not a schema.
    pub fn from_openai(v: &Value) -> Result<Tool, GenerateError> {
        let invalid = |s: String| GenerateError::InvalidTool(s);
        let obj = v
            .as_object()
            .ok_or_else(|| invalid(format!("a tool must be a JSON object, not {}", kind(v))))?;
        let f = match obj.get("type") {
            Some(Value::String(t)) if t == "function" => obj
                .get("function")
                .ok_or_else(|| invalid("a function tool needs a `function` object".into()))?,
            Some(Value::String(t)) => {
                return Err(invalid(format!(
                    "unsupported tool type `{t}` (only `function` is supported)"
                )));
            }
            Some(other) => {
                return Err(invalid(format!(
                    "`type` must be a string, not {}",
                    kind(other)
                )));
            }
            None => obj.get("function").unwrap_or(v),
        };
        let f = f
            .as_object()
            .ok_or_else(|| invalid(format!("`function` must be an object, not {}", kind(f))))?;
        let name = match f.get("name") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(invalid(format!(
                    "`name` must be a string, not {}",
                    kind(other)
                )));
            }
            None => return Err(invalid("a function needs a `name`".into())),
        };
        check_name(&name)?;
        let description = match f.get("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(invalid(format!(
                    "tool `{name}`: `description` must be a string, not {}",
                    kind(other)
                )));
            }
        };
        let parameters = match f.get("parameters") {
            None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
            Some(p @ (Value::Object(_) | Value::Bool(_))) => p.clone(),
            Some(other) => {
                return Err(invalid(format!(
                    "tool `{name}`: `parameters` must be a JSON Schema object, not {}",
                    kind(other)
                )));
            }
        };
        Ok(Tool {
            name,
            description,
            parameters,
            any_order: false,
        })
    }

    /// The OpenAI shape: `{"type": "function", "function": {"name", "description"?,
    /// "parameters"}}`.
    pub fn to_openai(&self) -> Value {
        let mut f = json!({"name": self.name, "parameters": self.parameters});
        if let Some(d) = &self.description {
            f["description"] = Value::String(d.clone());
        }
        json!({"type": "function", "function": f})
    }

    /// Reads a list of OpenAI tools (for example the `tools` of a request, or a file).
    ///
    /// # Errors
    ///
    /// As [`Tool::from_openai`], naming the index; [`GenerateError::InvalidTool`] as well when
    /// `v` is not an array or two tools share a name.
    pub fn list_from_openai(v: &Value) -> Result<Vec<Tool>, GenerateError> {
        let list = v.as_array().ok_or_else(|| {
            GenerateError::InvalidTool(format!("tools must be an array, not {}", kind(v)))
        })?;
        let mut tools = Vec::with_capacity(list.len());
        for (i, t) in list.iter().enumerate() {
            let tool = Tool::from_openai(t).map_err(|e| match e {
                GenerateError::InvalidTool(m) => {
                    GenerateError::InvalidTool(format!("tools[{i}]: {m}"))
                }
                e => e,
            })?;
            tools.push(tool);
        }
        check_unique(&tools)?;
        Ok(tools)
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_name(name: &str) -> Result<(), GenerateError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(GenerateError::InvalidTool(format!(
            "tool name {name:?} must be 1 to 64 characters from a-z, A-Z, 0-9, `_` and `-`"
        )))
    }
}

fn check_unique(tools: &[Tool]) -> Result<(), GenerateError> {
    for (i, t) in tools.iter().enumerate() {
        if tools[..i].iter().any(|u| u.name == t.name) {
            return Err(GenerateError::InvalidTool(format!(
                "two tools are named `{}`",
                t.name
            )));
        }
    }
    Ok(())
}

/// Whether and which tools the model may or must call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// Text or calls, as the model chooses (constrained either way).
    #[default]
    Auto,
    /// At least one call.
    Required,
    /// Text only; the tools are left out of the prompt.
    None,
    /// Calls to this tool only.
    Named(String),
}

impl ToolChoice {
    /// Reads an OpenAI `tool_choice`: `"auto"`, `"required"`, `"none"` or
    /// `{"type": "function", "function": {"name": ...}}` (`{"type": "function", "name": ...}`
    /// too). `null` is `auto`.
    ///
    /// # Errors
    ///
    /// [`GenerateError::InvalidTool`] for anything else.
    pub fn from_openai(v: &Value) -> Result<ToolChoice, GenerateError> {
        let invalid = |s: String| GenerateError::InvalidTool(format!("tool_choice: {s}"));
        match v {
            Value::Null => Ok(ToolChoice::Auto),
            Value::String(s) => match s.as_str() {
                "auto" => Ok(ToolChoice::Auto),
                "required" => Ok(ToolChoice::Required),
                "none" => Ok(ToolChoice::None),
                other => Err(invalid(format!(
                    "unknown value {other:?} (expected \"auto\", \"required\", \"none\" or a function)"
                ))),
            },
            Value::Object(o) => {
                match o.get("type").and_then(Value::as_str) {
                    Some("function") => {}
                    Some(t) => {
                        return Err(invalid(format!(
                            "unsupported type {t:?} (expected \"function\")"
                        )));
                    }
                    None => return Err(invalid("an object needs `\"type\": \"function\"`".into())),
                }
                let name = o
                    .get("function")
                    .and_then(|f| f.get("name"))
                    .or_else(|| o.get("name"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("a function choice needs `function.name`".into()))?;
                Ok(ToolChoice::Named(name.to_string()))
            }
            other => Err(invalid(format!(
                "expected a string or an object, not {}",
                kind(other)
            ))),
        }
    }

    /// The OpenAI shape.
    pub fn to_openai(&self) -> Value {
        match self {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::Required => json!("required"),
            ToolChoice::None => json!("none"),
            ToolChoice::Named(n) => json!({"type": "function", "function": {"name": n}}),
        }
    }
}

impl std::str::FromStr for ToolChoice {
    type Err = GenerateError;

    /// `auto`, `required`, `none`, or a tool name.
    fn from_str(s: &str) -> Result<ToolChoice, GenerateError> {
        match s {
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            "none" => Ok(ToolChoice::None),
            name => {
                check_name(name)?;
                Ok(ToolChoice::Named(name.to_string()))
            }
        }
    }
}

impl std::fmt::Display for ToolChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ToolChoice::Auto => f.write_str("auto"),
            ToolChoice::Required => f.write_str("required"),
            ToolChoice::None => f.write_str("none"),
            ToolChoice::Named(n) => f.write_str(n),
        }
    }
}

/// One call the model made.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCall {
    /// A process-wide unique id, `call_<n>`.
    pub id: String,
    /// The tool.
    pub name: String,
    /// The arguments as the model wrote them: JSON, valid under the tool's parameters schema.
    /// They are kept as text because a number the schema allows may be beyond what a
    /// [`Value`] holds (`1e400`); [`ToolCall::arguments_value`] reads them.
    pub arguments: Box<RawValue>,
}

impl PartialEq for ToolCall {
    fn eq(&self, other: &ToolCall) -> bool {
        self.id == other.id
            && self.name == other.name
            && self.arguments.get() == other.arguments.get()
    }
}

impl ToolCall {
    /// A call with a fresh id.
    pub fn new(name: impl Into<String>, arguments: Value) -> ToolCall {
        let arguments =
            serde_json::value::to_raw_value(&arguments).expect("a JSON value serializes");
        ToolCall::with_text(name, arguments)
    }

    /// A call with a fresh id, its arguments given as JSON text.
    pub fn with_text(name: impl Into<String>, arguments: Box<RawValue>) -> ToolCall {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        ToolCall {
            id: format!("call_{}", NEXT.fetch_add(1, Ordering::Relaxed)),
            name: name.into(),
            arguments,
        }
    }

    /// The arguments read into a [`Value`].
    ///
    /// # Errors
    ///
    /// When they hold a number beyond the range of an `f64`.
    pub fn arguments_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(self.arguments.get())
    }

    /// The OpenAI shape: `{"id", "type": "function", "function": {"name", "arguments": <JSON
    /// text>}}`.
    pub fn to_openai(&self) -> Value {
        json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments.get()}
        })
    }

    /// The assistant message that made `calls` (OpenAI `tool_calls`), for a transcript.
    pub fn assistant_message(calls: &[ToolCall]) -> Message {
        let mut m = Message::new("assistant", "");
        m.tool_calls = Some(Value::Array(
            calls.iter().map(ToolCall::to_openai).collect(),
        ));
        m
    }

    /// The `tool` message answering this call.
    pub fn result_message(&self, content: impl Into<String>) -> Message {
        let mut m = Message::new("tool", content);
        m.tool_call_id = Some(self.id.clone());
        m.name = Some(self.name.clone());
        m
    }
}

/// What the model answered in a tool-calling turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A text answer (surrounding whitespace removed).
    Text(String),
    /// One or more calls, in order.
    Calls(Vec<ToolCall>),
}

/// Knobs of one tool-calling turn beyond the tool choice (see
/// [`Generator::generate_tool_turn`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnOptions {
    /// Most calls in the turn: `None` for as many as the format allows, `Some(1)` for OpenAI's
    /// `parallel_tool_calls: false`. Small models tend to repeat a call until the token budget
    /// runs out; a limit stops that.
    pub max_calls: Option<usize>,
    /// Text a text-only turn (`tool_choice: none`) starts with, written after the template's
    /// assistant header (an assistant prefill). Base models answer much better when the
    /// answer is started for them (for example `The answer is`). The reply's text includes
    /// it; `on_text` receives it first. Ignored in turns that may call tools.
    pub prefill: Option<String>,
    /// A JSON Schema a text answer follows (OpenAI's `response_format` together with tools):
    /// the turn is then calls or a JSON document of this schema. In `auto` the two may share
    /// their first bytes; the reply is calls when the text parses as calls of the format.
    pub text_schema: Option<Value>,
}

/// The constraint and prompt decisions for one turn.
struct Plan<'a> {
    /// Tools described in the prompt.
    described: Vec<&'a Tool>,
    /// Tools the constraint allows calls to.
    callable: Vec<&'a Tool>,
    branches: Branches,
    /// Whether text must not look like a call (false only without any tool).
    guard: bool,
}

fn plan<'a>(tools: &'a [Tool], choice: &ToolChoice) -> Result<Plan<'a>, GenerateError> {
    check_unique(tools)?;
    for t in tools {
        check_name(&t.name)?;
    }
    let all: Vec<&Tool> = tools.iter().collect();
    Ok(match choice {
        ToolChoice::None => Plan {
            described: Vec::new(),
            callable: Vec::new(),
            branches: Branches::Text,
            guard: !tools.is_empty(),
        },
        ToolChoice::Auto if tools.is_empty() => Plan {
            described: Vec::new(),
            callable: Vec::new(),
            branches: Branches::Text,
            guard: !tools.is_empty(),
        },
        ToolChoice::Auto => Plan {
            described: all.clone(),
            callable: all,
            branches: Branches::Either,
            guard: true,
        },
        ToolChoice::Required if tools.is_empty() => {
            return Err(GenerateError::InvalidTool(
                "tool_choice `required` needs at least one tool".into(),
            ));
        }
        ToolChoice::Required => Plan {
            described: all.clone(),
            callable: all,
            branches: Branches::Calls,
            guard: true,
        },
        ToolChoice::Named(name) => {
            let Some(t) = tools.iter().find(|t| &t.name == name) else {
                let available = if tools.is_empty() {
                    "none".to_string()
                } else {
                    tools
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return Err(GenerateError::UnknownTool {
                    name: name.clone(),
                    available,
                });
            };
            Plan {
                described: all,
                callable: vec![t],
                branches: Branches::Calls,
                guard: true,
            }
        }
    })
}

impl GenerateError {
    /// [`GenerateError::ToolSchema`] for `tool`'s parameters schema, which failed to compile
    /// with `e` (the keyword and pointer are taken from `e`).
    pub fn tool_schema(tool: &str, e: schema_compiler::CompileError) -> GenerateError {
        schema_error(tool, e)
    }
}

fn schema_error(tool: &str, e: schema_compiler::CompileError) -> GenerateError {
    let keyword = match (&e, e.keyword()) {
        (_, Some(k)) => k.to_string(),
        (schema_compiler::CompileError::Limit { limit, .. }, None) => (*limit).to_string(),
        _ => String::new(),
    };
    GenerateError::ToolSchema {
        tool: tool.to_string(),
        keyword,
        pointer: e.pointer().to_string(),
        source: Box::new(e),
    }
}

impl<M: Model> Generator<M> {
    /// The tool-call format of this generator's chat template.
    pub fn tool_format(&self) -> ToolFormat {
        ToolFormat::detect(self.tokenizer().chat_template())
    }

    /// Checks that every tool's parameters schema compiles (the grammars are cached).
    ///
    /// # Errors
    ///
    /// [`GenerateError::ToolSchema`] with the keyword and the JSON pointer (inside the tool's
    /// `parameters`) of the first problem.
    pub fn check_tools(&mut self, tools: &[Tool]) -> Result<(), GenerateError> {
        for t in tools {
            self.compile(&t.parameters).map_err(|e| match e {
                GenerateError::Schema(e) => schema_error(&t.name, e),
                e => e,
            })?;
        }
        Ok(())
    }

    /// Renders and tokenizes a tool-calling conversation (see the [module docs](self) for how
    /// tools, calls and results are rendered per format).
    pub fn tool_prompt(
        &self,
        messages: &[Message],
        tools: &[Tool],
        choice: &ToolChoice,
    ) -> Result<Vec<TokenId>, GenerateError> {
        let plan = plan(tools, choice)?;
        self.render_tools(messages, &plan.described, choice)
    }

    fn render_tools(
        &self,
        messages: &[Message],
        described: &[&Tool],
        choice: &ToolChoice,
    ) -> Result<Vec<TokenId>, GenerateError> {
        let format = self.tool_format();
        let tokenizer = self.tokenizer().clone();
        let instruction = (!described.is_empty()).then(|| format.instruction(described, choice));
        let Some(template) = tokenizer.chat_template() else {
            let mut msgs = format::plain_messages(format, messages);
            if let Some(i) = &instruction {
                msgs.insert(0, Message::new("system", i.clone()));
            }
            let text = msgs
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n\n");
            return tokenizer.encode(&format!("{text}\n"), true);
        };
        if format.native() {
            let msgs = format::native_messages(format, messages);
            let tools: Option<Value> = (!described.is_empty())
                .then(|| Value::Array(described.iter().map(|t| t.to_openai()).collect()));
            match template.render(&msgs, true, tools.as_ref()) {
                Ok(text) => return tokenizer.encode(&text, false),
                Err(e) => tracing::debug!(
                    "the template's tool rendering failed ({e}); using the plain rendering"
                ),
            }
        }
        let msgs = format::plain_messages(format, messages);
        let Some(instruction) = instruction else {
            return tokenizer.encode(&template.render(&msgs, true, None)?, false);
        };
        // The instruction goes into the system message; templates without a system role get
        // it at the start of the first user message.
        let mut with_system = msgs.clone();
        match with_system.first_mut() {
            Some(m) if m.role == "system" => {
                m.content = format!("{}\n\n{instruction}", m.content.trim_end());
            }
            _ => with_system.insert(0, Message::new("system", instruction.clone())),
        }
        match template.render(&with_system, true, None) {
            Ok(text) => tokenizer.encode(&text, false),
            Err(first) => {
                let mut msgs = msgs;
                match msgs.iter_mut().find(|m| m.role == "user") {
                    Some(m) => m.content = format!("{instruction}\n\n{}", m.content),
                    None => return Err(first),
                }
                tokenizer.encode(&template.render(&msgs, true, None)?, false)
            }
        }
    }

    /// One model turn with tools available: renders `messages` with `tools`, generates under
    /// the constraint `choice` asks for, and reads the output as text or calls. `on_text`
    /// streams the raw generated text (a call's JSON included); it returns `false` to cancel.
    ///
    /// `options.stop` applies to text answers (the constraint does not see stop strings): the
    /// text is cut before the first one and the output's stop reason is
    /// [`StopReason::Stop`].
    ///
    /// # Errors
    ///
    /// [`GenerateError::InvalidTool`] (duplicate names, `required` without tools),
    /// [`GenerateError::UnknownTool`] (a named tool that is not there),
    /// [`GenerateError::ToolSchema`] (a parameters schema that does not compile, with keyword
    /// and pointer), [`GenerateError::ToolCallParse`] (generation stopped inside a call without
    /// being cancelled, which `close_at_budget` prevents), and the errors of
    /// [`Generator::generate`]. A call cut off by cancellation comes back as
    /// [`Reply::Text`] with [`StopReason::Cancelled`].
    pub fn generate_with_tools(
        &mut self,
        messages: Vec<Message>,
        tools: &[Tool],
        choice: &ToolChoice,
        options: GenerateOptions,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<(Reply, Output), GenerateError> {
        self.generate_tool_turn(
            messages,
            tools,
            choice,
            &TurnOptions::default(),
            options,
            on_text,
        )
    }

    /// [`Generator::generate_with_tools`] with the knobs of [`TurnOptions`]: a limit on the
    /// calls per turn and a prefill for text answers. With [`GenerateOptions::reasoning`], the
    /// model thinks first (returned in [`Output::reasoning`]) and the turn's constraint starts
    /// after the end marker.
    ///
    /// When the token budget runs out inside a later call, the complete calls before it are
    /// returned (the output's stop reason says [`StopReason::MaxTokens`]).
    ///
    /// # Errors
    ///
    /// As [`Generator::generate_with_tools`]; [`GenerateError::InvalidTool`] for
    /// `max_calls: Some(0)` or a prefill the text constraint refuses (one that starts like a
    /// call).
    pub fn generate_tool_turn(
        &mut self,
        messages: Vec<Message>,
        tools: &[Tool],
        choice: &ToolChoice,
        turn: &TurnOptions,
        options: GenerateOptions,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<(Reply, Output), GenerateError> {
        self.generate_tool_turn_thinking(
            messages,
            tools,
            choice,
            turn,
            options,
            &mut |_| true,
            on_text,
        )
    }

    /// [`Generator::generate_tool_turn`], with the thinking of a reasoning model streamed to
    /// `on_reasoning` as it is generated (which returns `false` to cancel), before the turn.
    ///
    /// # Errors
    ///
    /// As [`Generator::generate_tool_turn`].
    #[allow(clippy::too_many_arguments)]
    pub fn generate_tool_turn_thinking(
        &mut self,
        messages: Vec<Message>,
        tools: &[Tool],
        choice: &ToolChoice,
        turn: &TurnOptions,
        options: GenerateOptions,
        on_reasoning: &mut dyn FnMut(&str) -> bool,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<(Reply, Output), GenerateError> {
        if turn.max_calls == Some(0) {
            return Err(GenerateError::InvalidTool(
                "max_calls must be at least 1".into(),
            ));
        }
        let max_calls = turn.max_calls.unwrap_or(usize::MAX);
        let plan = plan(tools, choice)?;
        let branches = plan.branches;
        let format = self.tool_format();
        let mut prompt = self.render_tools(&messages, &plan.described, choice)?;
        let prompt_len = prompt.len();
        // A reasoning model thinks first; the turn's constraint starts after the end marker.
        let mut options = options;
        let thought = match options.reasoning.take() {
            Some(r) => {
                let mut t = self.think(&prompt, &r, &options, on_reasoning)?;
                if t.cancelled {
                    return Ok((Reply::Text(String::new()), t.into_cancelled()));
                }
                prompt = std::mem::take(&mut t.prompt);
                options.max_tokens = t.tokens_left(options.max_tokens);
                Some(t)
            }
            None => None,
        };

        let text = if plan.guard {
            TextGuard::new(format.opening().as_bytes(), format.marker().as_bytes())
        } else {
            TextGuard::new(b"", b"")
        };
        // A text answer under a schema: its grammar (compiled with the generator's options,
        // like any response format), and its part of the cache key.
        let text_grammar = match &turn.text_schema {
            Some(s) if branches != Branches::Calls => Some(self.compile(s)?.0),
            _ => None,
        };
        let text_key = turn
            .text_schema
            .as_ref()
            .filter(|_| text_grammar.is_some())
            .map_or(String::new(), |s| {
                format!("\0answer\0{}", self.schema_key(s))
            });
        // The constraint's grammar (compact JSON) and mask cache, kept across turns.
        let (schema, key) = if branches == Branches::Text {
            (
                Value::Bool(true),
                format!("tools\0text\0{}\0{}{text_key}", plan.guard, format.name()),
            )
        } else {
            let owned: Vec<Tool> = plan.callable.iter().map(|t| (*t).clone()).collect();
            self.check_tools(&owned)?;
            let schema = format.call_schema(&plan.callable, max_calls);
            let key = format!(
                "tools\0{branches:?}\0{}\0{}{text_key}",
                format.name(),
                self.schema_key(&schema)
            );
            (schema, key)
        };
        let mut compile_ms = 0.0;
        let (grammar, masks) = match self.take_compiled(&key) {
            Some(c) => c,
            None => {
                let t = std::time::Instant::now();
                let options = self
                    .compile_options()
                    .clone()
                    .whitespace(Whitespace::Compact);
                let grammar = self
                    .compile_with(&schema, &options)
                    .map_err(|e| schema_error("(all tools)", e))?;
                compile_ms = t.elapsed().as_secs_f64() * 1e3;
                (Arc::new(grammar), crate::engine::new_mask_cache())
            }
        };
        let calls = (branches != Branches::Text)
            .then(|| CallSequence::new(grammar.clone(), Arc::new(format.layout(max_calls))));
        let mut recognizer = match &text_grammar {
            Some(g) => ToolRecognizer::with_schema_text(branches, Matcher::new(g.clone()), calls),
            None => ToolRecognizer::new(branches, text, calls),
        };
        let prefill = match &turn.prefill {
            Some(p) if branches == Branches::Text && !p.is_empty() => {
                if let Some(i) = p.bytes().position(|b| !recognizer.try_push_byte(b)) {
                    return Err(GenerateError::InvalidTool(format!(
                        "the prefill {p:?} cannot start a text answer (refused at byte {i})"
                    )));
                }
                prompt.extend(self.tokenizer().encode(p, false)?);
                // A cancellation here takes effect at the first generated piece.
                let _ = on_text(p);
                p.clone()
            }
            _ => String::new(),
        };
        let session = Session::new(self.kernel().clone(), recognizer);

        // Stop strings apply once the text is known to be a text answer, after its leading
        // whitespace.
        let opening = format.opening();
        let decided = |s: &str| match branches {
            Branches::Text => true,
            Branches::Calls => false,
            Branches::Either => {
                let t = s.trim_start();
                !t.is_empty() && !t.starts_with(opening) && !opening.starts_with(t)
            }
        };
        let mut seen = prefill.clone();
        let mut stopped_at: Option<usize> = None;
        let stops: Vec<String> = options
            .stop
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        let longest = stops.iter().map(String::len).max().unwrap_or(0);
        let mut wrapped = |piece: &str| -> bool {
            let before = seen.len();
            seen.push_str(piece);
            if !stops.is_empty() && decided(&seen[prefill.len()..]) {
                let lead = seen.len() - seen[prefill.len()..].trim_start().len();
                let mut from = before.saturating_sub(longest).max(lead);
                while !seen.is_char_boundary(from) {
                    from -= 1;
                }
                let hit = stops
                    .iter()
                    .filter_map(|s| seen[from..].find(s.as_str()).map(|i| from + i))
                    .min();
                if let Some(at) = hit {
                    stopped_at = Some(at - prefill.len());
                    if at > before {
                        on_text(&seen[before..at]);
                    }
                    return false;
                }
            }
            on_text(piece)
        };
        let result = self.run(&prompt, Some((session, &masks)), &options, &mut wrapped);
        self.put_compiled(key, grammar, Some(masks));
        let mut out = result?;
        out.timing.compile_ms = compile_ms;
        if let Some(t) = thought {
            t.add_to(&mut out, prompt_len);
        }
        if let Some(at) = stopped_at {
            out.text.truncate(at.min(out.text.len()));
            out.stop = StopReason::Stop;
        }

        let is_call = match branches {
            Branches::Text => false,
            Branches::Calls => true,
            // A JSON answer and a call may both start with `{`.
            Branches::Either if text_grammar.is_some() => format.parse_calls(&out.text).is_ok(),
            Branches::Either => format.is_call(&out.text),
        };
        if !is_call {
            let text = format!("{prefill}{}", out.text);
            return Ok((Reply::Text(text.trim().to_string()), out));
        }
        let calls = match format.parse_calls(&out.text) {
            Ok(calls) => calls,
            Err(_) if out.stop == StopReason::Cancelled => {
                return Ok((Reply::Text(out.text.trim().to_string()), out));
            }
            Err(e) => match format.salvage_calls(&out.text) {
                Some(calls) if out.stop == StopReason::MaxTokens => calls,
                // How generation stopped says why the calls are unfinished.
                _ => {
                    return Err(match e {
                        GenerateError::ToolCallParse { reason, text } => {
                            GenerateError::ToolCallParse {
                                reason: format!(
                                    "{reason}; generation stopped ({:?}) after {} tokens",
                                    out.stop, out.completion_tokens
                                ),
                                text,
                            }
                        }
                        e => e,
                    });
                }
            },
        };
        let calls = calls
            .into_iter()
            .map(|(name, arguments)| ToolCall::with_text(name, arguments))
            .collect();
        Ok((Reply::Calls(calls), out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(r: Result<Tool, GenerateError>) -> String {
        match r {
            Err(GenerateError::InvalidTool(m)) => m,
            other => panic!("expected an invalid tool, got {other:?}"),
        }
    }

    #[test]
    fn tool_from_and_to_openai() {
        let v = json!({"type": "function", "function": {
            "name": "get_weather",
            "description": "Weather now.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            "strict": true
        }});
        let t = Tool::from_openai(&v).unwrap();
        assert_eq!(t.name, "get_weather");
        assert_eq!(t.description.as_deref(), Some("Weather now."));
        assert_eq!(t.parameters["properties"]["city"]["type"], "string");
        let back = t.to_openai();
        assert_eq!(back["type"], "function");
        assert_eq!(Tool::from_openai(&back).unwrap(), t);

        // Bare functions, missing parameters and descriptions.
        let t = Tool::from_openai(&json!({"name": "now"})).unwrap();
        assert_eq!(t.description, None);
        assert_eq!(t.parameters, json!({"type": "object", "properties": {}}));
        assert!(t.to_openai()["function"].get("description").is_none());
        let t = Tool::from_openai(&json!({"function": {"name": "a-b_9"}})).unwrap();
        assert_eq!(t.name, "a-b_9");
    }

    #[test]
    fn tool_errors() {
        assert!(invalid(Tool::from_openai(&json!([]))).contains("JSON object"));
        assert!(invalid(Tool::from_openai(&json!({"type": "retrieval"}))).contains("`retrieval`"));
        assert!(invalid(Tool::from_openai(&json!({"type": "function"}))).contains("`function`"));
        assert!(
            invalid(Tool::from_openai(
                &json!({"type": "function", "function": {}})
            ))
            .contains("`name`")
        );
        assert!(
            invalid(Tool::from_openai(&json!({"name": 3}))).contains("`name` must be a string")
        );
        for bad in ["", "has space", "dots.not.allowed", "é", &"x".repeat(65)] {
            assert!(
                invalid(Tool::from_openai(&json!({"name": bad}))).contains("1 to 64"),
                "{bad:?}"
            );
        }
        assert!(
            invalid(Tool::from_openai(&json!({"name": "f", "description": 1})))
                .contains("`description`")
        );
        assert!(
            invalid(Tool::from_openai(&json!({"name": "f", "parameters": "x"})))
                .contains("`parameters`")
        );
        match Tool::list_from_openai(&json!([{"name": "f"}, {"name": "f"}])) {
            Err(GenerateError::InvalidTool(m)) => assert!(m.contains("two tools"), "{m}"),
            other => panic!("{other:?}"),
        }
        match Tool::list_from_openai(&json!([{"name": "f"}, {"name": 1}])) {
            Err(GenerateError::InvalidTool(m)) => assert!(m.starts_with("tools[1]"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(Tool::list_from_openai(&json!({})).is_err());
    }

    #[test]
    fn tool_choice_from_openai() {
        assert_eq!(
            ToolChoice::from_openai(&json!("auto")).unwrap(),
            ToolChoice::Auto
        );
        assert_eq!(
            ToolChoice::from_openai(&json!("required")).unwrap(),
            ToolChoice::Required
        );
        assert_eq!(
            ToolChoice::from_openai(&json!("none")).unwrap(),
            ToolChoice::None
        );
        assert_eq!(
            ToolChoice::from_openai(&Value::Null).unwrap(),
            ToolChoice::Auto
        );
        let named = json!({"type": "function", "function": {"name": "get_weather"}});
        assert_eq!(
            ToolChoice::from_openai(&named).unwrap(),
            ToolChoice::Named("get_weather".into())
        );
        assert_eq!(
            ToolChoice::from_openai(&ToolChoice::Named("get_weather".into()).to_openai()).unwrap(),
            ToolChoice::Named("get_weather".into())
        );
        assert_eq!(
            ToolChoice::from_openai(&json!({"type": "function", "name": "f"})).unwrap(),
            ToolChoice::Named("f".into())
        );
        for bad in [
            json!("always"),
            json!(3),
            json!({"type": "function"}),
            json!({"type": "file_search"}),
            json!({"function": {"name": "f"}}),
        ] {
            match ToolChoice::from_openai(&bad) {
                Err(GenerateError::InvalidTool(m)) => assert!(m.starts_with("tool_choice"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert_eq!("auto".parse::<ToolChoice>().unwrap(), ToolChoice::Auto);
        assert_eq!(
            "calculator".parse::<ToolChoice>().unwrap(),
            ToolChoice::Named("calculator".into())
        );
        assert!("no such".parse::<ToolChoice>().is_err());
        assert_eq!(ToolChoice::Named("f".into()).to_string(), "f");
    }

    #[test]
    fn plans() {
        let tools = vec![
            Tool::from_openai(&json!({"name": "a"})).unwrap(),
            Tool::from_openai(&json!({"name": "b"})).unwrap(),
        ];
        let p = plan(&tools, &ToolChoice::Auto).unwrap();
        assert_eq!(
            (p.described.len(), p.callable.len(), p.branches),
            (2, 2, Branches::Either)
        );
        let p = plan(&tools, &ToolChoice::Named("b".into())).unwrap();
        assert_eq!(p.callable[0].name, "b");
        assert_eq!((p.described.len(), p.branches), (2, Branches::Calls));
        let p = plan(&tools, &ToolChoice::None).unwrap();
        assert_eq!((p.described.len(), p.branches), (0, Branches::Text));
        let p = plan(&[], &ToolChoice::Auto).unwrap();
        assert_eq!((p.branches, p.guard), (Branches::Text, false));
        assert!(plan(&tools, &ToolChoice::None).unwrap().guard);
        match plan(&tools, &ToolChoice::Named("c".into())) {
            Err(e @ GenerateError::UnknownTool { .. }) => {
                assert_eq!(
                    e.to_string(),
                    "tool_choice names `c`, which is not among the tools (a, b)"
                )
            }
            other => panic!("{:?}", other.err()),
        }
        assert!(matches!(
            plan(&[], &ToolChoice::Required),
            Err(GenerateError::InvalidTool(_))
        ));
    }

    #[test]
    fn schema_errors_name_keyword_and_pointer() {
        let e = schema_compiler::Grammar::compile(
            &json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "("}}}),
            &schema_compiler::Options::generation(),
        )
        .unwrap_err();
        let e = schema_error("f", e);
        match &e {
            GenerateError::ToolSchema {
                tool,
                keyword,
                pointer,
                ..
            } => {
                assert_eq!((tool.as_str(), keyword.as_str()), ("f", "pattern"));
                assert!(pointer.contains("/properties/x"), "{pointer}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            e.to_string()
                .starts_with("tool `f`: parameters schema: invalid `pattern` at "),
            "{e}"
        );
    }

    #[test]
    fn call_ids_are_unique() {
        let a = ToolCall::new("f", json!({}));
        let b = ToolCall::new("f", json!({}));
        assert_ne!(a.id, b.id);
        assert!(a.id.starts_with("call_"));
        let m = ToolCall::assistant_message(std::slice::from_ref(&a));
        assert_eq!(
            m.tool_calls.as_ref().unwrap()[0]["function"]["arguments"],
            "{}"
        );
        let r = a.result_message("42");
        assert_eq!(
            (r.role.as_str(), r.tool_call_id.as_deref()),
            ("tool", Some(a.id.as_str()))
        );
    }
}
