//! Tool-call formats: how calls are written in the model's output, how tools and results get
//! into the prompt, and how the output is read back.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::recognizer::CallLayout;
use super::{Tool, ToolChoice};
use crate::error::GenerateError;
use crate::template::{ChatTemplate, Message};

/// A JSON object read with each member's value kept as the text it was written in.
type RawObject = BTreeMap<String, Box<RawValue>>;

/// The arguments of a call that gives none: `{}`.
fn empty_arguments() -> Box<RawValue> {
    RawValue::from_string("{}".to_string()).expect("`{}` is JSON")
}

/// How tool calls are written in a model's output.
///
/// [`ToolFormat::detect`] picks the model's own format when its chat template defines one,
/// and the documented JSON envelope otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolFormat {
    /// One JSON object for the whole turn, for templates without a tool format (Gemma 3,
    /// the original Llama 3 template, plain completion):
    ///
    /// ```text
    /// {"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}, ...]}
    /// ```
    ///
    /// Tools and the envelope are described in a system message; results come back as a user
    /// message (`Tool results:` and one line per call).
    JsonEnvelope,
    /// Hermes-style tags, as in the Qwen 2.5 and Qwen 3 templates: one block per call,
    /// blocks separated by a newline; tools are rendered by the template.
    ///
    /// ```text
    /// <tool_call>
    /// {"name": "get_weather", "arguments": {"city": "Paris"}}
    /// </tool_call>
    /// ```
    Hermes,
    /// The Llama 3.1+ JSON format: a single call per turn, arguments under `parameters`;
    /// tools are rendered by the template.
    ///
    /// ```text
    /// {"name": "get_weather", "parameters": {"city": "Paris"}}
    /// ```
    Llama3Json,
}

impl ToolFormat {
    /// The format a chat template defines, or [`ToolFormat::JsonEnvelope`].
    pub fn detect(template: Option<&ChatTemplate>) -> ToolFormat {
        let Some(t) = template else {
            return ToolFormat::JsonEnvelope;
        };
        let src = t.source();
        if src.contains("<tool_call>") && src.contains("tools") {
            ToolFormat::Hermes
        } else if src.contains("\"parameters\": dictionary of argument name")
            || (src.contains("<|python_tag|>") && src.contains("custom_tools"))
        {
            ToolFormat::Llama3Json
        } else {
            ToolFormat::JsonEnvelope
        }
    }

    /// A short name (`json-envelope`, `hermes`, `llama3-json`).
    pub fn name(&self) -> &'static str {
        match self {
            ToolFormat::JsonEnvelope => "json-envelope",
            ToolFormat::Hermes => "hermes",
            ToolFormat::Llama3Json => "llama3-json",
        }
    }

    /// Whether the chat template renders the tools, the calls and the results itself.
    pub fn native(&self) -> bool {
        !matches!(self, ToolFormat::JsonEnvelope)
    }

    /// The bytes a call starts with. In `auto` mode a text answer may not start with them
    /// (after whitespace).
    pub fn opening(&self) -> &'static str {
        match self {
            ToolFormat::JsonEnvelope | ToolFormat::Llama3Json => "{",
            ToolFormat::Hermes => "<tool_call>",
        }
    }

    /// Text a text answer may not contain anywhere (empty: no such rule).
    pub fn marker(&self) -> &'static str {
        match self {
            ToolFormat::Hermes => "<tool_call>",
            _ => "",
        }
    }

    /// The key holding the arguments in a call object.
    pub fn arguments_key(&self) -> &'static str {
        match self {
            ToolFormat::Llama3Json => "parameters",
            _ => "arguments",
        }
    }

    /// Most calls in one turn.
    pub fn max_calls(&self) -> usize {
        match self {
            ToolFormat::Llama3Json => 1,
            _ => usize::MAX,
        }
    }

    /// How calls are laid out around their JSON objects, with at most `max_calls` calls per
    /// turn (at least 1; capped by [`ToolFormat::max_calls`]).
    pub fn layout(&self, max_calls: usize) -> CallLayout {
        match self {
            // One JSON object per turn (the envelope holds the array of calls).
            ToolFormat::JsonEnvelope | ToolFormat::Llama3Json => CallLayout {
                prefix: Vec::new(),
                suffix: Vec::new(),
                separator: Vec::new(),
                separator_optional: false,
                max_calls: 1,
            },
            ToolFormat::Hermes => CallLayout {
                prefix: b"<tool_call>\n".to_vec(),
                suffix: b"\n</tool_call>".to_vec(),
                separator: b"\n".to_vec(),
                separator_optional: true,
                max_calls: max_calls.max(1),
            },
        }
    }

    /// The JSON Schema of one JSON object of the layout, for calls to `tools`: the name as a
    /// `const`, the arguments under the tool's parameters schema; several tools are
    /// alternatives (`anyOf`, decided by the name). For the JSON envelope, the object is the
    /// envelope with an array of at least one and at most `max_calls` calls (`usize::MAX`: no
    /// limit).
    pub fn call_schema(&self, tools: &[&Tool], max_calls: usize) -> Value {
        let args_key = self.arguments_key();
        let one = |i: usize, t: &Tool| {
            let mut props = Map::new();
            props.insert("name".into(), json!({"const": t.name}));
            let parameters = embed_parameters(&t.parameters, i);
            let parameters = if t.any_order {
                schema_compiler::any_order(&parameters)
            } else {
                parameters
            };
            props.insert(args_key.into(), parameters);
            json!({
                "type": "object",
                "properties": props,
                "required": ["name", args_key],
                "additionalProperties": false
            })
        };
        let item = if tools.len() == 1 {
            one(0, tools[0])
        } else {
            let alts: Vec<Value> = tools.iter().enumerate().map(|(i, t)| one(i, t)).collect();
            json!({"anyOf": alts})
        };
        match self {
            ToolFormat::JsonEnvelope => {
                let mut array = json!({"type": "array", "minItems": 1, "items": item});
                if max_calls < usize::MAX {
                    array["maxItems"] = json!(max_calls.max(1));
                }
                json!({
                    "type": "object",
                    "properties": {"tool_calls": array},
                    "required": ["tool_calls"],
                    "additionalProperties": false
                })
            }
            _ => item,
        }
    }

    /// Writes calls the way this format does (for assistant messages rendered without the
    /// template's help).
    pub fn write_calls(&self, calls: &[(String, Value)]) -> String {
        let args_key = self.arguments_key();
        // Written by hand so that the name comes first whatever the map order of serde_json.
        let obj = |name: &str, args: &Value| {
            format!(
                "{{\"name\":{},\"{args_key}\":{args}}}",
                Value::String(name.into())
            )
        };
        match self {
            ToolFormat::JsonEnvelope => {
                let calls: Vec<String> = calls.iter().map(|(n, a)| obj(n, a)).collect();
                format!("{{\"tool_calls\":[{}]}}", calls.join(","))
            }
            ToolFormat::Llama3Json => calls
                .iter()
                .map(|(n, a)| obj(n, a))
                .collect::<Vec<_>>()
                .join("\n"),
            ToolFormat::Hermes => calls
                .iter()
                .map(|(n, a)| format!("<tool_call>\n{}\n</tool_call>", obj(n, a)))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// Whether `text` is a tool-call turn in this format (rather than a text answer).
    pub fn is_call(&self, text: &str) -> bool {
        text.trim_start().starts_with(self.opening())
    }

    /// Reads the calls in `text` as `(name, arguments)` pairs, each call's arguments as the
    /// JSON text the model wrote (arguments written as a JSON string are that string's
    /// content). The text is kept, not parsed into a [`Value`]: a number the schema allows
    /// may be beyond what an `f64` holds (`1e400`), and the caller gets it as written.
    ///
    /// # Errors
    ///
    /// [`GenerateError::ToolCallParse`] when the text is not a complete turn of calls.
    pub fn parse_calls(&self, text: &str) -> Result<Vec<(String, Box<RawValue>)>, GenerateError> {
        let fail = |reason: String| GenerateError::ToolCallParse {
            reason,
            text: text.to_string(),
        };
        let args_key = self.arguments_key();
        let read_call = |call: &RawObject| -> Result<(String, Box<RawValue>), GenerateError> {
            let name = call
                .get("name")
                .and_then(|n| serde_json::from_str::<String>(n.get()).ok())
                .ok_or_else(|| fail("a call has no `name` string".into()))?;
            let args = match call.get(args_key) {
                None => empty_arguments(),
                Some(a) if a.get() == "null" => empty_arguments(),
                // Some models write the arguments as a JSON string.
                Some(a) if a.get().starts_with('"') => serde_json::from_str::<String>(a.get())
                    .and_then(RawValue::from_string)
                    .map_err(|e| fail(format!("the arguments of `{name}`: {e}")))?,
                Some(a) => a.clone(),
            };
            Ok((name, args))
        };
        let object = |t: &str| {
            serde_json::from_str::<RawObject>(t)
                .map_err(|e| fail(format!("not a JSON object: {e}")))
        };
        match self {
            ToolFormat::JsonEnvelope => {
                let calls = object(text.trim())?
                    .get("tool_calls")
                    .and_then(|c| serde_json::from_str::<Vec<RawObject>>(c.get()).ok())
                    .ok_or_else(|| fail("no `tool_calls` array of objects".into()))?;
                if calls.is_empty() {
                    return Err(fail("the `tool_calls` array is empty".into()));
                }
                calls.iter().map(read_call).collect()
            }
            ToolFormat::Llama3Json => Ok(vec![read_call(&object(text.trim())?)?]),
            ToolFormat::Hermes => {
                let mut out = Vec::new();
                let mut rest = text.trim_start();
                while !rest.is_empty() {
                    rest = rest
                        .strip_prefix("<tool_call>")
                        .ok_or_else(|| fail("expected `<tool_call>`".into()))?;
                    let mut values =
                        serde_json::Deserializer::from_str(rest).into_iter::<RawObject>();
                    let call = match values.next() {
                        Some(Ok(v)) => v,
                        Some(Err(e)) => {
                            return Err(fail(format!("a call is not a JSON object: {e}")));
                        }
                        None => return Err(fail("a `<tool_call>` block is empty".into())),
                    };
                    rest = rest[values.byte_offset()..].trim_start();
                    rest = rest
                        .strip_prefix("</tool_call>")
                        .ok_or_else(|| fail("expected `</tool_call>`".into()))?
                        .trim_start();
                    out.push(read_call(&call)?);
                }
                if out.is_empty() {
                    return Err(fail("no call".into()));
                }
                Ok(out)
            }
        }
    }

    /// The complete calls at the start of a turn that was cut off inside a later call (the
    /// token budget ran out): `None` when there is no complete call.
    pub fn salvage_calls(&self, text: &str) -> Option<Vec<(String, Box<RawValue>)>> {
        match self {
            ToolFormat::JsonEnvelope => text
                .char_indices()
                .rev()
                .filter(|&(_, c)| c == '}')
                .take(256)
                .find_map(|(i, _)| self.parse_calls(&format!("{}]}}", &text[..=i])).ok()),
            ToolFormat::Hermes => {
                let mut end = 0;
                let mut found = None;
                while let Some(at) = text[end..].find("</tool_call>") {
                    end += at + "</tool_call>".len();
                    match self.parse_calls(&text[..end]) {
                        Ok(calls) => found = Some(calls),
                        Err(_) => break,
                    }
                }
                found
            }
            ToolFormat::Llama3Json => None,
        }
    }

    /// The instruction describing `tools` and the envelope, for formats the template does not
    /// render itself.
    pub fn instruction(&self, tools: &[&Tool], choice: &ToolChoice) -> String {
        let mut s = String::from("You can call these tools:\n");
        for t in tools {
            s.push_str(&format!("{{\"name\":{}", Value::String(t.name.clone())));
            if let Some(d) = &t.description {
                s.push_str(&format!(",\"description\":{}", Value::String(d.clone())));
            }
            s.push_str(&format!(",\"parameters\":{}}}\n", t.parameters));
        }
        let example = self.write_calls(&[("<tool name>".into(), json!({"<argument>": "<value>"}))]);
        match choice {
            ToolChoice::Required => {
                s.push_str("\nYou must call a tool. Reply with only this JSON:\n");
                s.push_str(&example);
            }
            ToolChoice::Named(name) => {
                s.push_str(&format!(
                    "\nYou must call the tool `{name}`. Reply with only this JSON:\n"
                ));
                s.push_str(&example);
            }
            _ => {
                s.push_str("\nTo call tools, reply with only this JSON:\n");
                s.push_str(&example);
                s.push_str(
                    "\nWhen you have what you need, answer in plain text instead, without JSON.",
                );
            }
        }
        s
    }
}

/// A tool's parameters schema placed inside a larger schema: references within it (such as
/// `#/$defs/...`) keep resolving inside it because it becomes its own resource (an `$id`).
fn embed_parameters(parameters: &Value, index: usize) -> Value {
    match parameters {
        Value::Object(o) => {
            let mut o = o.clone();
            if !o.contains_key("$id") && !o.contains_key("id") {
                o.insert(
                    "$id".into(),
                    Value::String(format!("https://stencil.invalid/tools/{index}.json")),
                );
            }
            Value::Object(o)
        }
        other => other.clone(),
    }
}

/// Messages ready for a chat template that does not know tools: assistant calls written in
/// the envelope, tool results as one user message per run of results.
pub(crate) fn plain_messages(format: ToolFormat, messages: &[Message]) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::new();
    let mut results: Vec<String> = Vec::new();
    let flush = |out: &mut Vec<Message>, results: &mut Vec<String>| {
        if results.is_empty() {
            return;
        }
        let text = format!(
            "Tool results:\n{}\nUse these results to answer.",
            results.join("\n")
        );
        results.clear();
        match out.last_mut() {
            Some(m) if m.role == "user" => {
                m.content.push_str("\n\n");
                m.content.push_str(&text);
            }
            _ => out.push(Message::new("user", text)),
        }
    };
    for m in messages {
        if m.role == "tool" {
            let name = m.name.clone().unwrap_or_else(|| "tool".into());
            results.push(format!("{name}: {}", m.content.trim()));
            continue;
        }
        flush(&mut out, &mut results);
        let mut m = m.clone();
        if let Some(calls) = m.tool_calls.take() {
            let calls = openai_calls(&calls);
            if !calls.is_empty() {
                let written = format.write_calls(&calls);
                if m.content.trim().is_empty() {
                    m.content = written;
                } else {
                    m.content = format!("{}\n{written}", m.content);
                }
            }
        }
        m.tool_call_id = None;
        match out.last_mut() {
            // Templates such as Gemma's insist that roles alternate.
            Some(prev) if prev.role == m.role && m.role == "user" => {
                prev.content.push_str("\n\n");
                prev.content.push_str(&m.content);
            }
            _ => out.push(m),
        }
    }
    flush(&mut out, &mut results);
    out
}

/// Messages for a template with its own tool format: OpenAI-shaped `tool_calls` kept, with
/// arguments as objects where the template expects them.
pub(crate) fn native_messages(format: ToolFormat, messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| {
            let mut m = m.clone();
            if let Some(calls) = &m.tool_calls {
                let calls: Vec<Value> = openai_calls(calls)
                    .into_iter()
                    .map(|(name, args)| {
                        let args = match format {
                            // The Hermes templates print a string as is and an object with
                            // `tojson`; a compact string keeps what the model wrote.
                            ToolFormat::Hermes => Value::String(args.to_string()),
                            _ => args,
                        };
                        json!({"type": "function", "function": {"name": name, "arguments": args}})
                    })
                    .collect();
                m.tool_calls = Some(Value::Array(calls));
            }
            m
        })
        .collect()
}

/// `(name, arguments)` of OpenAI-shaped tool calls (arguments as an object or a JSON string;
/// entries without a name are skipped).
pub(crate) fn openai_calls(calls: &Value) -> Vec<(String, Value)> {
    let Some(list) = calls.as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|c| {
            let f = c.get("function").unwrap_or(c);
            let name = f.get("name")?.as_str()?.to_string();
            let args = match f.get("arguments") {
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(v) => v.clone(),
                None => json!({}),
            };
            Some((name, args))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use schema_compiler::{Grammar, Matcher, Options};

    use super::*;

    /// The chat template of a tokenizer under `assets/tokenizers` (fetched by
    /// `cargo xtask fetch-assets`).
    fn template(name: &str) -> Option<ChatTemplate> {
        let path = format!(
            "{}/../assets/tokenizers/{name}/tokenizer_config.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{path}: {e} (run `cargo xtask fetch-assets`)"));
        let v: Value = serde_json::from_str(&text).unwrap();
        let src = v.get("chat_template")?.as_str()?;
        let content = |k: &str| match v.get(k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(o) => o.get("content").and_then(Value::as_str).map(str::to_string),
            None => None,
        };
        Some(ChatTemplate::new(src, content("bos_token"), content("eos_token")).unwrap())
    }

    fn calc() -> Tool {
        Tool::new(
            "calculator",
            "Arithmetic.",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
        )
    }

    fn transcript() -> Vec<Message> {
        let mut call = Message::new("assistant", "");
        call.tool_calls = Some(json!([{"id": "call_1", "type": "function",
            "function": {"name": "calculator", "arguments": "{\"expression\":\"6*7\"}"}}]));
        let mut result = Message::new("tool", "42");
        result.tool_call_id = Some("call_1".into());
        result.name = Some("calculator".into());
        vec![Message::new("user", "What is 6*7?"), call, result]
    }

    #[test]
    fn detects_the_templates_formats() {
        assert_eq!(ToolFormat::detect(None), ToolFormat::JsonEnvelope);
        let qwen = template("qwen3");
        assert_eq!(ToolFormat::detect(qwen.as_ref()), ToolFormat::Hermes);
        assert_eq!(
            ToolFormat::detect(template("gemma3").as_ref()),
            ToolFormat::JsonEnvelope
        );
        assert_eq!(
            ToolFormat::detect(template("llama3").as_ref()),
            ToolFormat::JsonEnvelope
        );
        assert_eq!(
            ToolFormat::detect(template("llama2").as_ref()),
            ToolFormat::JsonEnvelope
        );
        // The tool section of the Llama 3.1 template.
        let llama31 = ChatTemplate::new(
            r#"{%- if tools %}Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.{% endif %}{% for m in messages %}{{ m.content }}{% endfor %}"#,
            None,
            None,
        )
        .unwrap();
        assert_eq!(ToolFormat::detect(Some(&llama31)), ToolFormat::Llama3Json);
    }

    #[test]
    fn qwen3_renders_tools_calls_and_results() {
        let t = template("qwen3").unwrap();
        let f = ToolFormat::Hermes;
        let tools = Value::Array(vec![calc().to_openai()]);
        let text = t
            .render(&native_messages(f, &transcript()), true, Some(&tools))
            .unwrap();
        assert!(text.contains("<tools>\n{"), "{text}");
        assert!(
            text.contains("\"name\": \"calculator\"") || text.contains("\"name\":\"calculator\"")
        );
        assert!(
            text.contains("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\":\"6*7\"}}\n</tool_call>"),
            "{text}"
        );
        assert!(
            text.contains("<tool_response>\n42\n</tool_response>"),
            "{text}"
        );
        assert!(text.ends_with("<|im_start|>assistant\n"), "{text}");
    }

    #[test]
    fn gemma3_renders_the_plain_fallback() {
        let t = template("gemma3").unwrap();
        let f = ToolFormat::JsonEnvelope;
        // Gemma's template refuses a `tool` role...
        assert!(t.render(&transcript(), true, None).is_err());
        // ...and the plain rendering alternates user and model turns.
        let msgs = plain_messages(f, &transcript());
        let roles: Vec<&str> = msgs.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            msgs[1].content,
            r#"{"tool_calls":[{"name":"calculator","arguments":{"expression":"6*7"}}]}"#
        );
        assert_eq!(
            msgs[2].content,
            "Tool results:\ncalculator: 42\nUse these results to answer."
        );
        let text = t.render(&msgs, true, None).unwrap();
        assert!(text.ends_with("<start_of_turn>model\n"), "{text}");
    }

    /// Calls with their arguments read into values, to compare.
    fn read(calls: Vec<(String, Box<RawValue>)>) -> Vec<(String, Value)> {
        calls
            .into_iter()
            .map(|(n, a)| (n, serde_json::from_str(a.get()).unwrap()))
            .collect()
    }

    #[test]
    fn arguments_are_kept_as_written() {
        // 1e400 is beyond an f64: kept as text, not refused.
        let args = r#"{"x":1e400,"y":[-2.50E+3]}"#;
        let texts = [
            (
                ToolFormat::JsonEnvelope,
                format!(r#"{{"tool_calls":[{{"name":"a","arguments":{args}}}]}}"#),
            ),
            (
                ToolFormat::Llama3Json,
                format!(r#"{{"name":"a","parameters":{args}}}"#),
            ),
            (
                ToolFormat::Hermes,
                format!("<tool_call>\n{{\"name\":\"a\",\"arguments\":{args}}}\n</tool_call>"),
            ),
        ];
        for (f, text) in texts {
            let calls = f.parse_calls(&text).unwrap();
            assert_eq!(calls.len(), 1, "{f:?}");
            assert_eq!(
                (calls[0].0.as_str(), calls[0].1.get()),
                ("a", args),
                "{f:?}"
            );
        }
    }

    #[test]
    fn parses_each_format() {
        let f = ToolFormat::JsonEnvelope;
        let calls = f
            .parse_calls(r#" {"tool_calls":[{"name":"a","arguments":{"x":1}},{"arguments":"{\"y\":2}","name":"b"}]}"#)
            .unwrap();
        assert_eq!(
            read(calls),
            vec![("a".into(), json!({"x": 1})), ("b".into(), json!({"y": 2}))]
        );
        assert!(f.is_call("\n{\"tool_calls\""));
        assert!(!f.is_call("The answer"));
        for bad in [
            r#"{"tool_calls":[]}"#,
            "{",
            r#"{"calls":[]}"#,
            r#"{"tool_calls":[{"arguments":{}}]}"#,
        ] {
            assert!(
                matches!(f.parse_calls(bad), Err(GenerateError::ToolCallParse { .. })),
                "{bad}"
            );
        }

        let f = ToolFormat::Hermes;
        let text = "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"s\": \"</tool_call>\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>";
        assert_eq!(
            read(f.parse_calls(text).unwrap()),
            vec![
                ("a".into(), json!({"s": "</tool_call>"})),
                ("b".into(), json!({}))
            ]
        );
        assert!(f.parse_calls("<tool_call>\n{\"name\": \"a\"").is_err());
        assert!(f.parse_calls("<tool_call>\n{\"name\": \"a\"}\n").is_err());
        assert!(f.parse_calls("text").is_err());

        let f = ToolFormat::Llama3Json;
        assert_eq!(
            read(
                f.parse_calls(r#"{"name": "a", "parameters": {"x": true}}"#)
                    .unwrap()
            ),
            vec![("a".into(), json!({"x": true}))]
        );
    }

    #[test]
    fn written_calls_parse_back() {
        let calls = vec![
            ("a".to_string(), json!({"x": [1, "</tool_call>"]})),
            ("b".to_string(), json!({})),
        ];
        for f in [ToolFormat::JsonEnvelope, ToolFormat::Hermes] {
            assert_eq!(
                read(f.parse_calls(&f.write_calls(&calls)).unwrap()),
                calls,
                "{f:?}"
            );
        }
        let one = &calls[..1];
        assert_eq!(
            read(
                ToolFormat::Llama3Json
                    .parse_calls(&ToolFormat::Llama3Json.write_calls(one))
                    .unwrap()
            ),
            one
        );
    }

    /// Tool parameters with local references compile inside the combined schema, and the
    /// references still point into the tool's own schema.
    #[test]
    fn local_references_survive_embedding() {
        let a = Tool::new(
            "a",
            "",
            json!({
                "type": "object",
                "properties": {"p": {"$ref": "#/$defs/point"}},
                "required": ["p"],
                "$defs": {"point": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}}
            }),
        );
        let b = Tool::new(
            "b",
            "",
            json!({
                "type": "object",
                "properties": {"p": {"$ref": "#/definitions/point"}},
                "required": ["p"],
                "definitions": {"point": {"type": "string"}}
            }),
        );
        let schema = ToolFormat::JsonEnvelope.call_schema(&[&a, &b], usize::MAX);
        let g = Arc::new(Grammar::compile(&schema, &Options::generation()).unwrap());
        let ok = |s: &str| {
            let mut m = Matcher::new(g.clone());
            m.push_bytes(s.as_bytes()).is_ok() && m.is_accepting()
        };
        assert!(ok(
            r#"{"tool_calls":[{"name":"a","arguments":{"p":[1,2]}},{"name":"b","arguments":{"p":"x"}}]}"#
        ));
        assert!(!ok(
            r#"{"tool_calls":[{"name":"a","arguments":{"p":"x"}}]}"#
        ));
        assert!(!ok(
            r#"{"tool_calls":[{"name":"b","arguments":{"p":[1,2]}}]}"#
        ));
    }

    #[test]
    fn instruction_lists_tools_and_the_envelope() {
        let t = calc();
        let s = ToolFormat::JsonEnvelope.instruction(&[&t], &ToolChoice::Auto);
        assert!(s.contains(r#""name":"calculator""#), "{s}");
        assert!(s.contains(r#"{"tool_calls":[{"#), "{s}");
        assert!(s.contains("plain text"), "{s}");
        let s =
            ToolFormat::JsonEnvelope.instruction(&[&t], &ToolChoice::Named("calculator".into()));
        assert!(s.contains("You must call the tool `calculator`"), "{s}");
    }
}
