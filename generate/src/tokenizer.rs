//! The tokenizer: a Hugging Face `tokenizer.json` with its `tokenizer_config.json`, or any
//! other source of token bytes and a text encoder (a GGUF file's own vocabulary, through a
//! runtime, see [`Tokenizer::from_parts`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use vocab_index::{TokenId, TokenizerConfig, Vocabulary};

use crate::error::GenerateError;
use crate::template::ChatTemplate;

/// Turns text into token ids: the part of a tokenizer that [`Tokenizer`] does not compute from
/// its vocabulary. Implemented by runtimes that bring their own tokenizer (llama.cpp for a GGUF
/// file).
pub trait TextEncoder: Send + Sync + std::fmt::Debug {
    /// Encodes `text`. With `add_special`, the tokenizer adds its prefix tokens (for example
    /// BOS); special tokens written in the text are recognized either way.
    ///
    /// # Errors
    ///
    /// A message saying why the text cannot be encoded.
    fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>, String>;
}

/// Where a [`Tokenizer`]'s encoder comes from.
#[derive(Debug)]
enum Encoder {
    /// A Hugging Face `tokenizer.json`.
    Hf(Box<tokenizers::Tokenizer>),
    /// A runtime's own.
    External(Box<dyn TextEncoder>),
}

/// A tokenizer and what comes with it: the exact bytes of every token (for masks), the special
/// tokens, and the chat template.
#[derive(Debug)]
pub struct Tokenizer {
    encoder: Encoder,
    vocab: Arc<Vocabulary>,
    template: Option<ChatTemplate>,
    path: PathBuf,
}

impl Tokenizer {
    /// Loads `tokenizer.json` and, when present next to it, `tokenizer_config.json`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Tokenizer, GenerateError> {
        let path = path.as_ref();
        if !path.is_file() {
            return Err(GenerateError::Io {
                path: path.display().to_string(),
                reason: "no such file (run `cargo xtask fetch-assets` for the default assets)"
                    .into(),
            });
        }
        let inner = tokenizers::Tokenizer::from_file(path)
            .map_err(|e| GenerateError::Tokenizer(format!("{}: {e}", path.display())))?;
        let config_path = path.with_file_name(vocab_index::TOKENIZER_CONFIG_FILE);
        let (config, raw_config): (Option<TokenizerConfig>, Option<Value>) = if config_path
            .is_file()
        {
            let text = std::fs::read_to_string(&config_path).map_err(|e| GenerateError::Io {
                path: config_path.display().to_string(),
                reason: e.to_string(),
            })?;
            let raw: Value = serde_json::from_str(&text)
                .map_err(|e| GenerateError::Tokenizer(format!("{}: {e}", config_path.display())))?;
            let cfg = TokenizerConfig::from_json(&text)
                .map_err(|e| GenerateError::Tokenizer(e.to_string()))?;
            (Some(cfg), Some(raw))
        } else {
            (None, None)
        };
        let vocab = Vocabulary::from_tokenizer(&inner, config.as_ref())
            .map_err(|e| GenerateError::Tokenizer(e.to_string()))?;
        let template = match &raw_config {
            Some(raw) => template_of(raw)?,
            None => None,
        };
        Ok(Tokenizer {
            encoder: Encoder::Hf(Box::new(inner)),
            vocab: Arc::new(vocab),
            template,
            path: path.to_path_buf(),
        })
    }

    /// A tokenizer from parts: every token's bytes and the special ids, an encoder for prompts,
    /// and an optional chat template; `source` names where they came from (for messages).
    pub fn from_parts(
        vocab: impl Into<Arc<Vocabulary>>,
        encoder: Box<dyn TextEncoder>,
        template: Option<ChatTemplate>,
        source: impl Into<PathBuf>,
    ) -> Tokenizer {
        Tokenizer {
            encoder: Encoder::External(encoder),
            vocab: vocab.into(),
            template,
            path: source.into(),
        }
    }

    /// This tokenizer with the chat template of a `tokenizer_config.json` (its `chat_template`,
    /// `bos_token` and `eos_token`): for a model file that carries no template of its own, such
    /// as a GGUF converted without one. The tokenizer is unchanged when the file has no
    /// template.
    ///
    /// # Errors
    ///
    /// When the file cannot be read, is not JSON, or its template does not parse.
    pub fn with_template_from(
        mut self,
        config: impl AsRef<Path>,
    ) -> Result<Tokenizer, GenerateError> {
        let path = config.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| GenerateError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        let raw: Value = serde_json::from_str(&text)
            .map_err(|e| GenerateError::Tokenizer(format!("{}: {e}", path.display())))?;
        if let Some(template) = template_of(&raw)? {
            self.template = Some(template);
        }
        Ok(self)
    }

    /// Every token's bytes and the special ids.
    pub fn vocab(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// The chat template from `tokenizer_config.json`, if any.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.template.as_ref()
    }

    /// Where the tokenizer was loaded from (a `tokenizer.json`, or the model file whose own
    /// vocabulary it is).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Encodes text. With `add_special`, the tokenizer's own template adds its prefix tokens
    /// (for example BOS); special tokens written in the text are recognized either way.
    pub fn encode(&self, text: &str, add_special: bool) -> Result<Vec<TokenId>, GenerateError> {
        let ids = match &self.encoder {
            Encoder::Hf(inner) => inner
                .encode(text, add_special)
                .map_err(|e| GenerateError::Tokenizer(e.to_string()))?
                .get_ids()
                .to_vec(),
            Encoder::External(encoder) => encoder
                .encode(text, add_special)
                .map_err(GenerateError::Tokenizer)?,
        };
        ids.iter()
            .map(|&i| {
                TokenId::new(i)
                    .ok_or_else(|| GenerateError::Tokenizer(format!("token id {i} too large")))
            })
            .collect()
    }

    /// The bytes of a token.
    pub fn token_bytes(&self, id: TokenId) -> &[u8] {
        self.vocab.get(id).unwrap_or(&[])
    }

    /// The BOS id, if the vocabulary has one.
    pub fn bos(&self) -> Option<TokenId> {
        self.vocab.bos_id()
    }
}

/// The chat template of a parsed `tokenizer_config.json`, if it has one.
fn template_of(config: &Value) -> Result<Option<ChatTemplate>, GenerateError> {
    Ok(match config.get("chat_template") {
        Some(Value::String(src)) => Some(ChatTemplate::new(
            src,
            token_content(Some(config), "bos_token"),
            token_content(Some(config), "eos_token"),
        )?),
        _ => None,
    })
}

fn token_content(config: Option<&Value>, key: &str) -> Option<String> {
    match config?.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Message;

    /// Encodes nothing: the tests only look at the template.
    #[derive(Debug)]
    struct NoEncoder;

    impl TextEncoder for NoEncoder {
        fn encode(&self, _text: &str, _add_special: bool) -> Result<Vec<u32>, String> {
            Ok(Vec::new())
        }
    }

    fn bare() -> Tokenizer {
        let eos = TokenId::new(1).unwrap();
        let vocab = Vocabulary::new([&b"a"[..], b"</s>"], [eos])
            .unwrap()
            .with_eos_ids([eos])
            .unwrap();
        Tokenizer::from_parts(vocab, Box::new(NoEncoder), None, "model.gguf")
    }

    #[test]
    fn a_template_is_taken_from_a_tokenizer_config() {
        let dir = tempfile::tempdir().unwrap();
        let with = dir.path().join("with.json");
        std::fs::write(
            &with,
            r#"{"chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}",
                "bos_token": {"content": "<s>"}, "eos_token": "</s>"}"#,
        )
        .unwrap();
        let tok = bare().with_template_from(&with).unwrap();
        let out = tok
            .chat_template()
            .expect("the file's template")
            .render(&[Message::new("user", "hi")], false, None)
            .unwrap();
        assert_eq!(out, "<s>[hi]");

        // A file without a template leaves the tokenizer as it was.
        let without = dir.path().join("without.json");
        std::fs::write(&without, r#"{"bos_token": "<s>"}"#).unwrap();
        assert!(
            bare()
                .with_template_from(&without)
                .unwrap()
                .chat_template()
                .is_none()
        );
        let kept = tok.with_template_from(&without).unwrap();
        assert!(kept.chat_template().is_some());

        // A missing or malformed file is an error naming it.
        let broken = dir.path().join("broken.json");
        std::fs::write(&broken, "{").unwrap();
        let err = bare().with_template_from(&broken).unwrap_err().to_string();
        assert!(err.contains("broken.json"), "{err}");
        let err = bare()
            .with_template_from(dir.path().join("absent.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("absent.json"), "{err}");
    }
}
