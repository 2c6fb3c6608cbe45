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
        let template = match raw_config.as_ref().and_then(|c| c.get("chat_template")) {
            Some(Value::String(src)) => Some(ChatTemplate::new(
                src,
                token_content(raw_config.as_ref(), "bos_token"),
                token_content(raw_config.as_ref(), "eos_token"),
            )?),
            _ => None,
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
        vocab: Vocabulary,
        encoder: Box<dyn TextEncoder>,
        template: Option<ChatTemplate>,
        source: impl Into<PathBuf>,
    ) -> Tokenizer {
        Tokenizer {
            encoder: Encoder::External(encoder),
            vocab: Arc::new(vocab),
            template,
            path: source.into(),
        }
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

fn token_content(config: Option<&Value>, key: &str) -> Option<String> {
    match config?.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}
