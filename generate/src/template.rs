//! Chat templates (Jinja, rendered with `minijinja`) and the schema in the prompt.

use minijinja::{Environment, ErrorKind, context};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::GenerateError;

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text.
    #[serde(default)]
    pub content: String,
    /// Tool calls made by an assistant message (OpenAI shape), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Value>,
    /// For `tool` messages: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For `tool` messages: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Message {
    /// A message with a role and text.
    pub fn new(role: &str, content: impl Into<String>) -> Message {
        Message {
            role: role.into(),
            content: content.into(),
            tool_calls: None,
            tool_call_id: None,
            name: None,
        }
    }
}

/// A Hugging Face chat template.
#[derive(Debug)]
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: Option<String>,
    eos: Option<String>,
    source: String,
}

fn raise_exception(msg: String) -> Result<String, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
}

impl ChatTemplate {
    /// Compiles `source` (the `chat_template` of `tokenizer_config.json`).
    pub fn new(
        source: &str,
        bos: Option<String>,
        eos: Option<String>,
    ) -> Result<ChatTemplate, GenerateError> {
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| GenerateError::Template(e.to_string()))?;
        Ok(ChatTemplate {
            env,
            bos,
            eos,
            source: source.to_string(),
        })
    }

    /// The template source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Renders `messages`, with the assistant prompt at the end when `add_generation_prompt`,
    /// and `tools` (OpenAI shape) when the template uses them.
    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
        tools: Option<&Value>,
    ) -> Result<String, GenerateError> {
        self.render_with(messages, add_generation_prompt, tools, None)
    }

    /// [`ChatTemplate::render`] with more variables for the template (`kwargs`, a JSON
    /// object, as `chat_template_kwargs` in OpenAI-compatible servers: `enable_thinking`).
    pub fn render_with(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
        tools: Option<&Value>,
        kwargs: Option<&Value>,
    ) -> Result<String, GenerateError> {
        let tmpl = self
            .env
            .get_template("chat")
            .map_err(|e| GenerateError::Template(e.to_string()))?;
        let extra = minijinja::Value::from_serialize(kwargs.unwrap_or(&Value::Null));
        tmpl.render(context! {
            messages => minijinja::Value::from_serialize(messages),
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos.clone().unwrap_or_default(),
            eos_token => self.eos.clone().unwrap_or_default(),
            tools => tools.map(minijinja::Value::from_serialize),
            ..extra
        })
        .map_err(|e| GenerateError::Template(format!("{e:#}")))
    }
}

/// The placeholder replaced by the schema in any message.
pub const SCHEMA_PLACEHOLDER: &str = "#!JSON_SCHEMA!#";

/// How the schema gets into the prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SchemaInPrompt {
    /// Replace [`SCHEMA_PLACEHOLDER`] where it appears; if it appears nowhere, append an
    /// instruction with the schema to the last user message.
    #[default]
    Auto,
    /// Only replace the placeholder.
    PlaceholderOnly,
    /// Leave the prompt alone.
    Off,
}

/// The instruction appended in [`SchemaInPrompt::Auto`] mode; `{schema}` is replaced.
pub const DEFAULT_SCHEMA_INSTRUCTION: &str =
    "\n\nAnswer with JSON only, following this JSON schema:\n{schema}";

/// Puts `schema` into `messages` as `mode` says. Returns whether it was placed.
pub fn inject_schema(messages: &mut [Message], schema: &Value, mode: &SchemaInPrompt) -> bool {
    if *mode == SchemaInPrompt::Off {
        return false;
    }
    let text = schema.to_string();
    let mut placed = false;
    for m in messages.iter_mut() {
        if m.content.contains(SCHEMA_PLACEHOLDER) {
            m.content = m.content.replace(SCHEMA_PLACEHOLDER, &text);
            placed = true;
        }
    }
    if placed || *mode == SchemaInPrompt::PlaceholderOnly {
        return placed;
    }
    if let Some(m) = messages.iter_mut().rev().find(|m| m.role == "user") {
        m.content
            .push_str(&DEFAULT_SCHEMA_INSTRUCTION.replace("{schema}", &text));
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholder_and_append() {
        let schema = serde_json::json!({"type": "string"});
        let mut m = vec![Message::new(
            "user",
            format!("Give me {SCHEMA_PLACEHOLDER} now"),
        )];
        assert!(inject_schema(&mut m, &schema, &SchemaInPrompt::Auto));
        assert_eq!(m[0].content, r#"Give me {"type":"string"} now"#);
        let mut m = vec![Message::new("system", "s"), Message::new("user", "hi")];
        assert!(inject_schema(&mut m, &schema, &SchemaInPrompt::Auto));
        assert!(m[1].content.ends_with(r#"{"type":"string"}"#));
        let mut m = vec![Message::new("user", "hi")];
        assert!(!inject_schema(&mut m, &schema, &SchemaInPrompt::Off));
        assert!(!inject_schema(
            &mut m,
            &schema,
            &SchemaInPrompt::PlaceholderOnly
        ));
        assert_eq!(m[0].content, "hi");
    }

    #[test]
    fn renders_a_simple_template() {
        let t = ChatTemplate::new(
            "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</s>{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}",
            Some("<s>".into()),
            None,
        )
        .unwrap();
        let out = t
            .render(&[Message::new("user", " hi ")], true, None)
            .unwrap();
        assert_eq!(out, "<s><user>hi</s><assistant>");
    }
}
