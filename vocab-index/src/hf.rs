//! Loading a [`Vocabulary`] from a Hugging Face `tokenizer.json` (through the `tokenizers`
//! crate) and an optional `tokenizer_config.json`, recovering each token's exact bytes.
//!
//! A tokenizer stores tokens as strings in one of a few encodings; the decoder chain in
//! `tokenizer.json` says which. This module reads that chain and undoes it token by token:
//!
//! - `ByteLevel` (GPT-2, Llama 3, Qwen): every byte is written as one printable character of
//!   the GPT-2 byte-to-unicode map (`Ġ` is a space, `Ċ` a newline); the inverse map gives the
//!   bytes back, so a token may be a fragment of a UTF-8 character.
//! - `Replace` (`▁` → space), `ByteFallback` and `Metaspace` (SentencePiece: Llama 2, Gemma):
//!   `▁` stands for a space and `<0x0A>`-style tokens are single raw bytes.
//! - `Fuse` and `Strip` act on whole decoded sequences (joining, removing the leading space of
//!   the first word) and say nothing about a single token's bytes: ignored.
//!
//! When `tokenizer.json` has no decoder the pre-tokenizer (`ByteLevel`, `Metaspace`) and the
//! normalizer (`Replace` of a space) say the same thing. A model with `byte_fallback` gets
//! byte-fallback decoding even when the decoder does not list it.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use tokenizers::{Model, Tokenizer};

use crate::{Error, Result, TokenId, Vocabulary};

/// The file read next to `tokenizer.json` by [`Vocabulary::from_file`].
pub const TOKENIZER_CONFIG_FILE: &str = "tokenizer_config.json";

/// Contents of well-known special tokens that end a whole sequence.
const EOS_NAMES: &[&str] = &[
    "</s>",
    "<eos>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|end▁of▁sentence|>",
];

/// Contents of well-known tokens that close one message of a chat template.
const END_OF_TURN_NAMES: &[&str] = &[
    "<|eot_id|>",
    "<|eom_id|>",
    "<|im_end|>",
    "<end_of_turn>",
    "<|end|>",
    "<|endofturn|>",
];

/// Contents of well-known special tokens that start a sequence.
const BOS_NAMES: &[&str] = &["<s>", "<bos>", "<|begin_of_text|>", "<|startoftext|>"];

/// The parts of a Hugging Face `tokenizer_config.json` this crate reads: the `eos_token` and
/// `bos_token` entries, each a string, an `{"content": ...}` object, a list of those, or null.
/// Other entries are ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct TokenizerConfig {
    #[serde(default)]
    eos_token: Option<TokenSpec>,
    #[serde(default)]
    bos_token: Option<TokenSpec>,
}

/// A token named in `tokenizer_config.json`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum TokenSpec {
    Content(String),
    Object { content: String },
    List(Vec<TokenSpec>),
}

impl TokenSpec {
    fn push_contents<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            TokenSpec::Content(s) | TokenSpec::Object { content: s } => out.push(s),
            TokenSpec::List(items) => items.iter().for_each(|item| item.push_contents(out)),
        }
    }
}

impl TokenizerConfig {
    /// A config naming the given end-of-sequence and beginning-of-sequence token contents.
    pub fn new(eos_token: Option<&str>, bos_token: Option<&str>) -> TokenizerConfig {
        TokenizerConfig {
            eos_token: eos_token.map(|s| TokenSpec::Content(s.to_owned())),
            bos_token: bos_token.map(|s| TokenSpec::Content(s.to_owned())),
        }
    }

    /// Reads a `tokenizer_config.json`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the file cannot be read, [`Error::Config`] when it is not a JSON
    /// object of the expected shape.
    pub fn from_file(path: impl AsRef<Path>) -> Result<TokenizerConfig> {
        let path = path.as_ref();
        let text = read_text(path)?;
        serde_json::from_str(&text).map_err(|source| Error::Config {
            path: path.to_owned(),
            source,
        })
    }

    /// Parses the text of a `tokenizer_config.json`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] (with an empty path) when it is not a JSON object of the expected shape.
    pub fn from_json(text: &str) -> Result<TokenizerConfig> {
        serde_json::from_str(text).map_err(|source| Error::Config {
            path: PathBuf::new(),
            source,
        })
    }

    /// The contents of the configured end-of-sequence tokens.
    pub fn eos_tokens(&self) -> Vec<&str> {
        let mut out = Vec::new();
        if let Some(spec) = &self.eos_token {
            spec.push_contents(&mut out);
        }
        out
    }

    /// The content of the configured beginning-of-sequence token.
    pub fn bos_token(&self) -> Option<&str> {
        let mut out = Vec::new();
        if let Some(spec) = &self.bos_token {
            spec.push_contents(&mut out);
        }
        out.first().copied()
    }
}

/// One step of undoing a tokenizer's string encoding of a token.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// GPT-2 byte-to-unicode map.
    ByteLevel,
    /// Literal string replacement (`▁` → ` `).
    Replace { from: String, to: String },
    /// `<0xNN>` → byte `NN`.
    ByteFallback,
}

/// How a tokenizer writes its tokens as strings, read from its decoder chain.
#[derive(Debug, Clone, PartialEq)]
struct Decoding {
    steps: Vec<Step>,
}

impl Decoding {
    fn from_tokenizer(tokenizer: &Tokenizer) -> Result<Decoding> {
        let mut steps = Vec::new();
        if let Some(decoder) = tokenizer.get_decoder() {
            let value = serde_json::to_value(decoder).unwrap_or(Value::Null);
            collect_decoder_steps(&value, &mut steps)?;
        } else {
            if let Some(pre) = tokenizer.get_pre_tokenizer() {
                let value = serde_json::to_value(pre).unwrap_or(Value::Null);
                collect_pre_tokenizer_steps(&value, &mut steps);
            }
            if let Some(normalizer) = tokenizer.get_normalizer() {
                let value = serde_json::to_value(normalizer).unwrap_or(Value::Null);
                collect_normalizer_steps(&value, &mut steps);
            }
        }
        let byte_fallback = match tokenizer.get_model() {
            tokenizers::ModelWrapper::BPE(bpe) => bpe.byte_fallback,
            tokenizers::ModelWrapper::Unigram(unigram) => unigram.byte_fallback(),
            _ => false,
        };
        if byte_fallback && !steps.contains(&Step::ByteFallback) {
            steps.push(Step::ByteFallback);
        }
        Ok(Decoding { steps })
    }

    /// Appends the bytes `token` stands for to `out`.
    fn decode_into(&self, token: &str, out: &mut Vec<u8>) {
        let mut text = std::borrow::Cow::Borrowed(token);
        for step in &self.steps {
            match step {
                Step::Replace { from, to } => {
                    if text.contains(from.as_str()) {
                        text = std::borrow::Cow::Owned(text.replace(from.as_str(), to));
                    }
                }
                Step::ByteFallback => {
                    if let Some(byte) = parse_byte_fallback(&text) {
                        out.push(byte);
                        return;
                    }
                }
                Step::ByteLevel => {
                    byte_level_decode_into(&text, out);
                    return;
                }
            }
        }
        out.extend_from_slice(text.as_bytes());
    }
}

fn type_of(value: &Value) -> &str {
    value.get("type").and_then(Value::as_str).unwrap_or("")
}

fn collect_decoder_steps(value: &Value, steps: &mut Vec<Step>) -> Result<()> {
    match type_of(value) {
        "Sequence" => {
            for decoder in value
                .get("decoders")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                collect_decoder_steps(decoder, steps)?;
            }
        }
        "ByteLevel" => steps.push(Step::ByteLevel),
        "ByteFallback" => steps.push(Step::ByteFallback),
        "Replace" => match value.pointer("/pattern/String").and_then(Value::as_str) {
            Some(from) => steps.push(Step::Replace {
                from: from.to_owned(),
                to: value
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            }),
            None => {
                return Err(Error::UnsupportedDecoder {
                    kind: "Replace (regex)".to_owned(),
                });
            }
        },
        "Metaspace" => {
            let from = value
                .get("replacement")
                .and_then(Value::as_str)
                .unwrap_or("▁");
            steps.push(Step::Replace {
                from: from.to_owned(),
                to: " ".to_owned(),
            });
        }
        // Sequence-level only: joining tokens, trimming the first token's leading space.
        "Fuse" | "Strip" => {}
        other => {
            return Err(Error::UnsupportedDecoder {
                kind: other.to_owned(),
            });
        }
    }
    Ok(())
}

fn collect_pre_tokenizer_steps(value: &Value, steps: &mut Vec<Step>) {
    match type_of(value) {
        "Sequence" => {
            for pre in value
                .get("pretokenizers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                collect_pre_tokenizer_steps(pre, steps);
            }
        }
        "ByteLevel" if !steps.contains(&Step::ByteLevel) => steps.push(Step::ByteLevel),
        "Metaspace" => {
            let from = value
                .get("replacement")
                .and_then(Value::as_str)
                .unwrap_or("▁");
            steps.push(Step::Replace {
                from: from.to_owned(),
                to: " ".to_owned(),
            });
        }
        _ => {}
    }
}

fn collect_normalizer_steps(value: &Value, steps: &mut Vec<Step>) {
    match type_of(value) {
        "Sequence" => {
            for n in value
                .get("normalizers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                collect_normalizer_steps(n, steps);
            }
        }
        "Replace" => {
            let pattern = value.pointer("/pattern/String").and_then(Value::as_str);
            let content = value.get("content").and_then(Value::as_str);
            // Undo a normalizer that writes spaces as some marker.
            if let (Some(" "), Some(marker)) = (pattern, content) {
                let step = Step::Replace {
                    from: marker.to_owned(),
                    to: " ".to_owned(),
                };
                if !steps.contains(&step) {
                    steps.push(step);
                }
            }
        }
        _ => {}
    }
}

/// `<0xNN>` (two hex digits, either case) → `NN`, as the ByteFallback decoder reads it.
pub(crate) fn parse_byte_fallback(token: &str) -> Option<u8> {
    let b = token.as_bytes();
    if b.len() == 6 && b.starts_with(b"<0x") && b[5] == b'>' {
        let hex = std::str::from_utf8(&b[3..5]).ok()?;
        u8::from_str_radix(hex, 16).ok()
    } else {
        None
    }
}

/// Whether byte `b` is printable Latin-1 (`!`..=`~`, `¡`..=`¬`, `®`..=`ÿ`): those stand for
/// themselves in the GPT-2 byte-to-unicode map.
const fn byte_level_printable(b: u32) -> bool {
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
}

/// The 68 non-printable bytes in increasing order: the n-th is written as U+0100 + n.
const BYTE_LEVEL_SHIFTED: [u8; 68] = {
    let mut table = [0u8; 68];
    let mut n = 0;
    let mut b = 0;
    while b < 256 {
        if !byte_level_printable(b) {
            table[n] = b as u8;
            n += 1;
        }
        b += 1;
    }
    table
};

/// Appends the bytes a GPT-2 byte-level token stands for; like the ByteLevel decoder, a token
/// with any character outside the map is taken as plain text.
pub(crate) fn byte_level_decode_into(token: &str, out: &mut Vec<u8>) {
    let start = out.len();
    for c in token.chars() {
        match byte_level_byte(c) {
            Some(b) => out.push(b),
            None => {
                out.truncate(start);
                out.extend_from_slice(token.as_bytes());
                return;
            }
        }
    }
}

/// The GPT-2 byte-to-unicode map, inverted: the byte a character stands for.
fn byte_level_byte(c: char) -> Option<u8> {
    let c = c as u32;
    if c < 0x100 {
        byte_level_printable(c).then_some(c as u8)
    } else {
        BYTE_LEVEL_SHIFTED.get((c - 0x100) as usize).copied()
    }
}

/// The text of the file at `path`.
fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}

/// The tokenizer at `path` as it tokenizes text in the middle of a generation: without the
/// step that puts `▁` before a whole text (a `Prepend` normalizer, or a `Metaspace`
/// pre-tokenizer's `prepend_scheme`, as in Llama 2). Text tokenized as a whole would start
/// with a space that a model writing a document after its prompt does not write.
///
/// # Errors
///
/// [`Error::Io`] for an unreadable file, [`Error::Tokenizer`] when `tokenizers` cannot load it.
pub fn mid_text_tokenizer(path: impl AsRef<Path>) -> Result<Tokenizer> {
    let path = path.as_ref();
    let text = read_text(path)?;
    let tokenizer_error = |source| Error::Tokenizer {
        path: path.to_owned(),
        source,
    };
    let mut json: Value =
        serde_json::from_str(&text).map_err(|e| tokenizer_error(Box::new(e) as _))?;
    if json.pointer("/normalizer/type").and_then(Value::as_str) == Some("Prepend") {
        json["normalizer"] = Value::Null;
    }
    if let Some(steps) = json
        .pointer_mut("/normalizer/normalizers")
        .and_then(Value::as_array_mut)
    {
        steps.retain(|s| s["type"] != "Prepend");
    }
    let sequence = json.pointer("/pre_tokenizer/type").and_then(Value::as_str) == Some("Sequence");
    let metaspaces: Vec<&mut Value> = if sequence {
        json.pointer_mut("/pre_tokenizer/pretokenizers")
            .and_then(Value::as_array_mut)
            .map(|steps| steps.iter_mut().collect())
            .unwrap_or_default()
    } else {
        json.get_mut("pre_tokenizer").into_iter().collect()
    };
    for p in metaspaces {
        if p.get("type").and_then(Value::as_str) == Some("Metaspace") {
            p["prepend_scheme"] = Value::from("never");
        }
    }
    Tokenizer::from_bytes(json.to_string().as_bytes()).map_err(tokenizer_error)
}

/// What [`Vocabulary::from_file`] reads: the `tokenizer.json` at `path`, and the text of the
/// `tokenizer_config.json` beside it if there is one (for [`Vocabulary::from_file_contents`]).
///
/// # Errors
///
/// [`Error::Tokenizer`] when `path` cannot be read, [`Error::Io`] when the config is there
/// but cannot be read as text.
pub fn read_tokenizer_files(path: &Path) -> Result<(Vec<u8>, Option<String>)> {
    let tokenizer = std::fs::read(path).map_err(|source| Error::Tokenizer {
        path: path.to_owned(),
        source: source.into(),
    })?;
    let config_path = path.with_file_name(TOKENIZER_CONFIG_FILE);
    let config = if config_path.is_file() {
        Some(read_text(&config_path)?)
    } else {
        None
    };
    Ok((tokenizer, config))
}

impl Vocabulary {
    /// Loads `tokenizer.json` at `path` and, if present, `tokenizer_config.json` in the same
    /// directory.
    ///
    /// # Errors
    ///
    /// [`Error::Tokenizer`] when `tokenizers` cannot load the file, [`Error::Io`] or
    /// [`Error::Config`] for an unreadable or malformed config, and the errors of
    /// [`Vocabulary::from_tokenizer`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Vocabulary> {
        let path = path.as_ref();
        let _span = tracing::debug_span!("vocabulary_from_file", path = %path.display()).entered();
        let (tokenizer, config) = read_tokenizer_files(path)?;
        Vocabulary::from_file_contents(path, &tokenizer, config.as_deref())
    }

    /// [`Vocabulary::from_file`] on contents already read: `tokenizer` is the `tokenizer.json`
    /// at `path`, `config` the text of the `tokenizer_config.json` beside it, if there is one.
    ///
    /// # Errors
    ///
    /// As [`Vocabulary::from_file`].
    pub fn from_file_contents(
        path: &Path,
        tokenizer: &[u8],
        config: Option<&str>,
    ) -> Result<Vocabulary> {
        let tokenizer = Tokenizer::from_bytes(tokenizer).map_err(|source| Error::Tokenizer {
            path: path.to_owned(),
            source,
        })?;
        let config = config
            .map(|text| {
                serde_json::from_str(text).map_err(|source| Error::Config {
                    path: path.with_file_name(TOKENIZER_CONFIG_FILE),
                    source,
                })
            })
            .transpose()?;
        Vocabulary::from_tokenizer(&tokenizer, config.as_ref())
    }

    /// Builds the vocabulary of a loaded tokenizer.
    ///
    /// - Ids: every id of the model's vocabulary and of the added tokens; `len()` is the largest
    ///   + 1 (ids in between that neither defines get empty bytes).
    /// - Bytes: each token's string with the tokenizer's encoding undone (see the module docs):
    ///   exactly the bytes the token contributes to decoded text. Added tokens go through the
    ///   same decoding (as `tokenizers` decodes them), which leaves `<|im_end|>`-style contents
    ///   unchanged.
    /// - Special: the added tokens marked `special`.
    /// - End-of-sequence: the config's `eos_token`, the special tokens appended by the
    ///   post-processor's template, and the special tokens named `</s>`, `<eos>`,
    ///   `<|endoftext|>`, `<|end_of_text|>` or `<|end▁of▁sentence|>`.
    /// - End-of-turn: the tokens named `<|eot_id|>`, `<|eom_id|>`, `<|im_end|>`,
    ///   `<end_of_turn>`, `<|end|>` or `<|endofturn|>`.
    /// - Beginning-of-sequence: the config's `bos_token`, else the first special token of the
    ///   post-processor's template, else a special token named `<s>`, `<bos>`,
    ///   `<|begin_of_text|>` or `<|startoftext|>`.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedDecoder`] for decoders whose per-token bytes cannot be recovered
    /// (WordPiece, CTC, BPE suffix decoders, regex replacements), [`Error::TokenIdTooLarge`]
    /// and [`Error::VocabularyTooLarge`] past the limits.
    pub fn from_tokenizer(
        tokenizer: &Tokenizer,
        config: Option<&TokenizerConfig>,
    ) -> Result<Vocabulary> {
        let _span = tracing::debug_span!("vocabulary_from_tokenizer").entered();
        let decoding = Decoding::from_tokenizer(tokenizer)?;

        let mut pieces: Vec<Option<String>> = Vec::new();
        let put = |pieces: &mut Vec<Option<String>>, id: u32, content: String| -> Result<()> {
            let id = TokenId::try_from(id)?.as_usize();
            if id >= pieces.len() {
                pieces.resize(id + 1, None);
            }
            pieces[id] = Some(content);
            Ok(())
        };
        for (content, id) in tokenizer.get_model().get_vocab() {
            put(&mut pieces, id, content)?;
        }
        let added = tokenizer.get_added_tokens_decoder();
        let mut special = Vec::new();
        // Added tokens override the model's entry for the same id, as in `id_to_token`.
        for (&id, token) in &added {
            put(&mut pieces, id, token.content.clone())?;
            if token.special {
                special.push(TokenId::new_unchecked(id));
            }
        }

        let mut arena = Vec::new();
        let mut offsets = Vec::with_capacity(pieces.len() + 1);
        offsets.push(0u32);
        for piece in &pieces {
            if let Some(piece) = piece {
                decoding.decode_into(piece, &mut arena);
            }
            offsets.push(
                u32::try_from(arena.len()).map_err(|_| Error::VocabularyTooLarge {
                    bytes: arena.len(),
                    limit: u32::MAX as usize,
                })?,
            );
        }
        let vocab = Vocabulary::from_parts(arena, offsets, special.iter().copied())?;

        // Names of tokens → ids, through the tokenizer (contents are pre-decoding strings).
        let lookup = |content: &str| -> Option<TokenId> {
            tokenizer
                .token_to_id(content)
                .and_then(TokenId::new)
                .filter(|id| id.as_usize() < vocab.len())
        };
        let is_special = |id: &TokenId| vocab.is_special(*id);
        let template = serde_json::to_value(tokenizer.get_post_processor()).unwrap_or(Value::Null);
        let (template_bos, template_eos) = template_special_tokens(&template);

        let mut eos: Vec<TokenId> = Vec::new();
        if let Some(config) = config {
            eos.extend(config.eos_tokens().into_iter().filter_map(lookup));
        }
        eos.extend(
            template_eos
                .into_iter()
                .filter(|id| id.as_usize() < vocab.len()),
        );
        eos.extend(
            EOS_NAMES
                .iter()
                .filter_map(|name| lookup(name))
                .filter(is_special),
        );

        let end_of_turn: Vec<TokenId> = END_OF_TURN_NAMES
            .iter()
            .filter_map(|name| lookup(name))
            .collect();

        let bos = config
            .and_then(TokenizerConfig::bos_token)
            .and_then(lookup)
            .or_else(|| template_bos.filter(|id| id.as_usize() < vocab.len()))
            .or_else(|| {
                BOS_NAMES
                    .iter()
                    .filter_map(|name| lookup(name))
                    .find(is_special)
            });

        let vocab = vocab
            .with_eos_ids(eos)?
            .with_end_of_turn_ids(end_of_turn)?
            .with_bos_id(bos)?;
        tracing::debug!(?vocab, "loaded vocabulary");
        Ok(vocab)
    }
}

/// The special tokens a `TemplateProcessing` post-processor puts before the first sequence
/// (the first one: BOS) and after the last one (EOS), in its single-sequence template.
fn template_special_tokens(value: &Value) -> (Option<TokenId>, Vec<TokenId>) {
    let mut bos = None;
    let mut eos = Vec::new();
    match type_of(value) {
        "Sequence" => {
            for p in value
                .get("processors")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (b, e) = template_special_tokens(p);
                bos = bos.or(b);
                eos.extend(e);
            }
        }
        "TemplateProcessing" => {
            let ids_of = |name: &str| -> Vec<TokenId> {
                value
                    .pointer(&format!(
                        "/special_tokens/{}/ids",
                        name.replace('~', "~0").replace('/', "~1")
                    ))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|v| {
                        v.as_u64()
                            .and_then(|id| u32::try_from(id).ok())
                            .and_then(TokenId::new)
                    })
                    .collect()
            };
            let pieces = value
                .get("single")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let special_name = |piece: &Value| {
                piece
                    .pointer("/SpecialToken/id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let first_seq = pieces.iter().position(|p| p.get("Sequence").is_some());
            let last_seq = pieces.iter().rposition(|p| p.get("Sequence").is_some());
            if let (Some(first), Some(last)) = (first_seq, last_seq) {
                bos = pieces[..first]
                    .iter()
                    .filter_map(special_name)
                    .flat_map(|n| ids_of(&n))
                    .next();
                eos = pieces[last + 1..]
                    .iter()
                    .filter_map(special_name)
                    .flat_map(|n| ids_of(&n))
                    .collect();
            }
        }
        _ => {}
    }
    (bos, eos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_level_map_is_a_bijection() {
        let mut seen = [false; 256];
        for c in (0u32..0x200).filter_map(char::from_u32) {
            if let Some(b) = byte_level_byte(c) {
                assert!(!seen[b as usize], "byte {b} mapped twice");
                seen[b as usize] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(byte_level_byte('Ġ'), Some(b' '));
        assert_eq!(byte_level_byte('Ċ'), Some(b'\n'));
        assert_eq!(byte_level_byte('a'), Some(b'a'));
        assert_eq!(byte_level_byte('ĉ'), Some(b'\t'));
        assert_eq!(byte_level_byte('Ń'), Some(0xad));
        assert_eq!(byte_level_byte('ń'), None);
    }

    #[test]
    fn byte_fallback_tokens() {
        assert_eq!(parse_byte_fallback("<0x0A>"), Some(0x0a));
        assert_eq!(parse_byte_fallback("<0xff>"), Some(0xff));
        assert_eq!(parse_byte_fallback("<0xZZ>"), None);
        assert_eq!(parse_byte_fallback("<0x0A"), None);
    }

    #[test]
    fn decoding_steps() {
        let sp = Decoding {
            steps: vec![
                Step::Replace {
                    from: "▁".into(),
                    to: " ".into(),
                },
                Step::ByteFallback,
            ],
        };
        let decode = |d: &Decoding, s: &str| {
            let mut out = Vec::new();
            d.decode_into(s, &mut out);
            out
        };
        assert_eq!(decode(&sp, "▁hello▁"), b" hello ");
        assert_eq!(decode(&sp, "<0xE2>"), [0xe2]);
        let bl = Decoding {
            steps: vec![Step::ByteLevel],
        };
        assert_eq!(decode(&bl, "Ġhello"), b" hello");
        assert_eq!(decode(&bl, "âĢ"), [0xe2, 0x80]);
        assert_eq!(decode(&bl, "<|im end|>"), b"<|im end|>");
    }

    #[test]
    fn config_token_forms() {
        let c = TokenizerConfig::from_json(r#"{"eos_token": "</s>", "bos_token": null}"#).unwrap();
        assert_eq!(c.eos_tokens(), vec!["</s>"]);
        assert_eq!(c.bos_token(), None);
        let c = TokenizerConfig::from_json(
            r#"{"eos_token": {"__type": "AddedToken", "content": "<eos>"}, "bos_token": ["<s>"], "x": 1}"#,
        )
        .unwrap();
        assert_eq!(c.eos_tokens(), vec!["<eos>"]);
        assert_eq!(c.bos_token(), Some("<s>"));
        assert!(TokenizerConfig::from_json(r#"{"eos_token": 3}"#).is_err());
        assert!(TokenizerConfig::from_json("3").is_err());
    }
}
