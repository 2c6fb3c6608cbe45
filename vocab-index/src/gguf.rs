//! Loading a [`Vocabulary`] from a GGUF model file's own metadata (`tokenizer.ggml.*`), with
//! no model runtime: only the key-value header is read, never the tensors.
//!
//! A GGUF file stores its vocabulary as one string per id (`tokenizer.ggml.tokens`), a type per
//! id (`tokenizer.ggml.token_type`) and the tokenizer's family (`tokenizer.ggml.model`). Each
//! token's bytes are recovered as llama.cpp's detokenizer writes a token on its own, special
//! tokens rendered as their text:
//!
//! - Control, unknown and user-defined tokens: their text as written.
//! - Normal tokens of a byte-level BPE vocabulary (`gpt2`: Llama 3, Qwen, SmolLM): the GPT-2
//!   byte-to-unicode map undone, as for a `tokenizer.json` with a `ByteLevel` decoder.
//! - Normal tokens of a SentencePiece-style vocabulary (`llama`: Llama 2, Gemma): `▁` is a space;
//!   byte tokens (`<0x0A>`) are their one byte.
//! - Unused and undefined tokens, and byte tokens of a BPE vocabulary: no bytes.
//!
//! Special ids are the control, unknown, unused and undefined tokens. End-of-sequence ids are
//! the tokens llama.cpp ends generation at: the EOS, EOT and EOM ids the file names, the
//! fill-in-the-middle padding and separator tokens, and the tokens with a well-known
//! end-of-turn text (which count as control tokens whatever the file says).
//!
//! The reader is bounded: a string, an array or the number of keys past this module's limits,
//! or a file that ends early, is an [`Error::Gguf`] naming the key and the byte offset.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::hf::{byte_level_decode_into, parse_byte_fallback};
use crate::{Error, Result, TokenId, Vocabulary};

/// The file's first four bytes.
const MAGIC: &[u8; 4] = b"GGUF";
/// The longest string read (chat templates are tens of kilobytes; tokens are short).
const MAX_STRING: u64 = 16 << 20;
/// The longest array read (vocabularies and merge lists have a few hundred thousand entries).
const MAX_ARRAY: u64 = 1 << 24;
/// The most keys a header may have.
const MAX_KEYS: u64 = 1 << 16;

/// GGUF value types, as numbered by the format.
mod ty {
    pub const U8: u32 = 0;
    pub const I8: u32 = 1;
    pub const U16: u32 = 2;
    pub const I16: u32 = 3;
    pub const U32: u32 = 4;
    pub const I32: u32 = 5;
    pub const F32: u32 = 6;
    pub const BOOL: u32 = 7;
    pub const STRING: u32 = 8;
    pub const ARRAY: u32 = 9;
    pub const U64: u32 = 10;
    pub const I64: u32 = 11;
    pub const F64: u32 = 12;
}

/// llama.cpp's token types (`tokenizer.ggml.token_type`).
mod token_type {
    pub const NORMAL: i64 = 1;
    pub const UNKNOWN: i64 = 2;
    pub const CONTROL: i64 = 3;
    pub const USER_DEFINED: i64 = 4;
    // 5 is UNUSED: no bytes, special, like the undefined 0.
    pub const BYTE: i64 = 6;
}

// The token texts below follow llama.cpp's vocabulary loader, which finds these tokens by
// their text when the file does not name them, and treats them as control tokens whatever
// the file says.

/// Texts of the end-of-turn token, in order of preference, when the file names none.
const END_OF_TURN_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<｜end▁of▁sentence｜>",
    "<end_of_utterance>",
];

/// Texts of the end-of-message token.
const END_OF_MESSAGE_TEXTS: &[&str] = &["<|eom_id|>"];

/// Texts of the fill-in-the-middle tokens: prefix, suffix, middle, padding, repository and
/// file separator. The last three also end generation.
const FIM_TEXTS: [&[&str]; 6] = [
    &[
        "<|fim_prefix|>",
        "<fim-prefix>",
        "<fim_prefix>",
        "<｜fim▁begin｜>",
        "<PRE>",
        "▁<PRE>",
        "<|code_prefix|>",
        "<|prefix|>",
    ],
    &[
        "<|fim_suffix|>",
        "<fim-suffix>",
        "<fim_suffix>",
        "<｜fim▁hole｜>",
        "<SUF>",
        "▁<SUF>",
        "<|code_suffix|>",
        "<|suffix|>",
    ],
    &[
        "<|fim_middle|>",
        "<fim-middle>",
        "<fim_middle>",
        "<｜fim▁end｜>",
        "<MID>",
        "▁<MID>",
        "<|code_middle|>",
        "<|middle|>",
    ],
    &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    &[
        "<|fim_repo|>",
        "<|repo_name|>",
        "<fim-repo>",
        "<REPO>",
        "<reponame>",
    ],
    &["<|file_sep|>"],
];

/// Texts of tokens that end generation.
const END_OF_GENERATION_TEXTS: &[&str] = &[
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<｜end▁of▁sentence｜>",
    "[e~[",
];

/// Texts of tokens that are always rendered as text (message framing of harmony-style
/// templates), whatever the file says.
const ALWAYS_TEXT: &[&str] = &["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"];

/// A metadata value this module keeps.
#[derive(Debug)]
enum Value {
    Int(i128),
    Bool(bool),
    Str(Vec<u8>),
    Strings(Vec<Vec<u8>>),
    Ints(Vec<i64>),
    /// Read and dropped (floats, other arrays).
    Other,
}

/// The metadata keys a vocabulary needs.
#[derive(Debug, Default)]
struct Metadata {
    model: Option<Vec<u8>>,
    tokens: Option<Vec<Vec<u8>>>,
    token_types: Option<Vec<i64>>,
    eos: Option<i128>,
    eot: Option<i128>,
    eom: Option<i128>,
    bos: Option<i128>,
    add_bos: Option<bool>,
}

/// A GGUF header reader that knows its byte offset, for error messages.
struct Reader<R> {
    inner: R,
    offset: u64,
    path: PathBuf,
    key: String,
}

impl<R: Read> Reader<R> {
    fn error(&self, reason: impl Into<String>) -> Error {
        Error::Gguf {
            path: self.path.clone(),
            reason: if self.key.is_empty() {
                format!("{} (at byte {})", reason.into(), self.offset)
            } else {
                format!(
                    "{} (key `{}`, at byte {})",
                    reason.into(),
                    self.key,
                    self.offset
                )
            },
        }
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut buf = [0u8; N];
        self.inner.read_exact(&mut buf).map_err(|e| {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                self.error("the file ends inside its metadata")
            } else {
                Error::Io {
                    path: self.path.clone(),
                    source: e,
                }
            }
        })?;
        self.offset += N as u64;
        Ok(buf)
    }

    fn u32(&mut self) -> Result<u32> {
        self.bytes::<4>().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64> {
        self.bytes::<8>().map(u64::from_le_bytes)
    }

    /// A length-prefixed string, read as it arrives (never allocated from the claimed length).
    fn string(&mut self) -> Result<Vec<u8>> {
        let len = self.u64()?;
        if len > MAX_STRING {
            return Err(self.error(format!(
                "a string of {len} bytes, over the limit of {MAX_STRING}"
            )));
        }
        let mut buf = Vec::new();
        let read = (&mut self.inner)
            .take(len)
            .read_to_end(&mut buf)
            .map_err(|source| Error::Io {
                path: self.path.clone(),
                source,
            })?;
        self.offset += read as u64;
        if (read as u64) < len {
            return Err(self.error("the file ends inside its metadata"));
        }
        Ok(buf)
    }

    /// Reads and drops `n` bytes.
    fn skip(&mut self, n: u64) -> Result<()> {
        let copied = std::io::copy(&mut (&mut self.inner).take(n), &mut std::io::sink()).map_err(
            |source| Error::Io {
                path: self.path.clone(),
                source,
            },
        )?;
        self.offset += copied;
        if copied < n {
            return Err(self.error("the file ends inside its metadata"));
        }
        Ok(())
    }

    /// An integer of type `t`, or `None` for a non-integer type.
    fn int(&mut self, t: u32) -> Result<Option<i128>> {
        Ok(Some(match t {
            ty::U8 => i128::from(self.bytes::<1>()?[0]),
            ty::I8 => i128::from(i8::from_le_bytes(self.bytes::<1>()?)),
            ty::U16 => i128::from(u16::from_le_bytes(self.bytes::<2>()?)),
            ty::I16 => i128::from(i16::from_le_bytes(self.bytes::<2>()?)),
            ty::U32 => i128::from(self.u32()?),
            ty::I32 => i128::from(i32::from_le_bytes(self.bytes::<4>()?)),
            ty::U64 => i128::from(self.u64()?),
            ty::I64 => i128::from(i64::from_le_bytes(self.bytes::<8>()?)),
            _ => return Ok(None),
        }))
    }

    /// The size of a fixed-size value of type `t`, or `None` for strings and arrays.
    fn fixed_size(&self, t: u32) -> Result<Option<u64>> {
        Ok(Some(match t {
            ty::U8 | ty::I8 | ty::BOOL => 1,
            ty::U16 | ty::I16 => 2,
            ty::U32 | ty::I32 | ty::F32 => 4,
            ty::U64 | ty::I64 | ty::F64 => 8,
            ty::STRING | ty::ARRAY => return Ok(None),
            other => return Err(self.error(format!("unknown value type {other}"))),
        }))
    }

    /// A value of type `t`; `keep` false reads past it without keeping it.
    fn value(&mut self, t: u32, keep: bool) -> Result<Value> {
        match t {
            ty::STRING => {
                let s = self.string()?;
                Ok(if keep { Value::Str(s) } else { Value::Other })
            }
            ty::BOOL => Ok(Value::Bool(self.bytes::<1>()?[0] != 0)),
            ty::ARRAY => {
                let elem = self.u32()?;
                let n = self.u64()?;
                if n > MAX_ARRAY {
                    return Err(self.error(format!(
                        "an array of {n} values, over the limit of {MAX_ARRAY}"
                    )));
                }
                if elem == ty::ARRAY {
                    return Err(self.error("an array of arrays"));
                }
                let capacity = n.min(1 << 16) as usize;
                match (elem, keep) {
                    (ty::STRING, true) => {
                        let mut out = Vec::with_capacity(capacity);
                        for _ in 0..n {
                            out.push(self.string()?);
                        }
                        Ok(Value::Strings(out))
                    }
                    (ty::STRING, false) => {
                        for _ in 0..n {
                            let len = self.u64()?;
                            if len > MAX_STRING {
                                return Err(self.error(format!(
                                    "a string of {len} bytes, over the limit of {MAX_STRING}"
                                )));
                            }
                            self.skip(len)?;
                        }
                        Ok(Value::Other)
                    }
                    _ => {
                        let size = self.fixed_size(elem)?.unwrap_or(0);
                        let is_int = !matches!(elem, ty::F32 | ty::F64 | ty::BOOL);
                        if keep && is_int {
                            let mut out = Vec::with_capacity(capacity);
                            for _ in 0..n {
                                let v = self.int(elem)?.unwrap_or(0);
                                out.push(i64::try_from(v).unwrap_or(i64::MIN));
                            }
                            Ok(Value::Ints(out))
                        } else {
                            self.skip(n * size)?;
                            Ok(Value::Other)
                        }
                    }
                }
            }
            _ => match self.int(t)? {
                Some(v) => Ok(Value::Int(v)),
                None => {
                    let size = self.fixed_size(t)?.unwrap_or(0);
                    self.skip(size)?;
                    Ok(Value::Other)
                }
            },
        }
    }

    /// Reads the header and keeps the tokenizer's keys.
    fn metadata(&mut self) -> Result<Metadata> {
        let magic = self.bytes::<4>()?;
        if &magic != MAGIC {
            return Err(self.error("not a GGUF file (its first bytes are not `GGUF`)"));
        }
        let version = self.u32()?;
        match version {
            2 | 3 => {}
            1 => return Err(self.error("GGUF version 1 is not supported (only 2 and 3)")),
            v if v.swap_bytes() <= 3 => {
                return Err(self.error("a big-endian GGUF file is not supported"));
            }
            v => return Err(self.error(format!("unknown GGUF version {v}"))),
        }
        let _tensors = self.u64()?;
        let keys = self.u64()?;
        if keys > MAX_KEYS {
            return Err(self.error(format!(
                "{keys} metadata keys, over the limit of {MAX_KEYS}"
            )));
        }
        let mut meta = Metadata::default();
        for _ in 0..keys {
            self.key.clear();
            let key = self.string()?;
            self.key = String::from_utf8_lossy(&key).into_owned();
            let t = self.u32()?;
            let keep = matches!(
                self.key.as_str(),
                "tokenizer.ggml.model"
                    | "tokenizer.ggml.tokens"
                    | "tokenizer.ggml.token_type"
                    | "tokenizer.ggml.eos_token_id"
                    | "tokenizer.ggml.eot_token_id"
                    | "tokenizer.ggml.eom_token_id"
                    | "tokenizer.ggml.bos_token_id"
                    | "tokenizer.ggml.add_bos_token"
            );
            let value = self.value(t, keep)?;
            if !keep {
                continue;
            }
            let wrong = |r: &Self| r.error(format!("unexpected value type {t}"));
            match (self.key.as_str(), value) {
                ("tokenizer.ggml.model", Value::Str(s)) => meta.model = Some(s),
                ("tokenizer.ggml.tokens", Value::Strings(s)) => meta.tokens = Some(s),
                ("tokenizer.ggml.token_type", Value::Ints(v)) => meta.token_types = Some(v),
                ("tokenizer.ggml.eos_token_id", Value::Int(v)) => meta.eos = Some(v),
                ("tokenizer.ggml.eot_token_id", Value::Int(v)) => meta.eot = Some(v),
                ("tokenizer.ggml.eom_token_id", Value::Int(v)) => meta.eom = Some(v),
                ("tokenizer.ggml.bos_token_id", Value::Int(v)) => meta.bos = Some(v),
                ("tokenizer.ggml.add_bos_token", Value::Bool(v)) => meta.add_bos = Some(v),
                _ => return Err(wrong(self)),
            }
        }
        self.key.clear();
        Ok(meta)
    }
}

/// How a vocabulary writes its normal tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// `gpt2`: the GPT-2 byte-to-unicode map.
    ByteLevel,
    /// `llama`: `▁` for a space, `<0xNN>` byte tokens.
    SentencePiece,
}

/// The bytes llama.cpp writes for one token on its own (see the module docs).
fn token_bytes(family: Family, kind: i64, text: &[u8], out: &mut Vec<u8>) {
    match kind {
        token_type::CONTROL | token_type::UNKNOWN | token_type::USER_DEFINED => {
            out.extend_from_slice(text);
        }
        token_type::NORMAL => match family {
            Family::SentencePiece => {
                let mut rest = text;
                while let Some(i) = rest.windows(3).position(|w| w == "▁".as_bytes()) {
                    out.extend_from_slice(&rest[..i]);
                    out.push(b' ');
                    rest = &rest[i + 3..];
                }
                out.extend_from_slice(rest);
            }
            Family::ByteLevel => match std::str::from_utf8(text) {
                Ok(text) => byte_level_decode_into(text, out),
                Err(_) => out.extend_from_slice(text),
            },
        },
        token_type::BYTE if family == Family::SentencePiece => {
            if let Some(b) = std::str::from_utf8(text).ok().and_then(parse_byte_fallback) {
                out.push(b);
            }
        }
        _ => {}
    }
}

impl Vocabulary {
    /// Reads the vocabulary a GGUF model file carries in its metadata (see the module docs of
    /// `gguf`): every id's bytes as llama.cpp writes the token, the special ids, the
    /// end-of-sequence ids (every token llama.cpp ends generation at), the end-of-turn id and
    /// the beginning-of-sequence id (when the file says to add it). The tensors are not read.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when the file cannot be read; [`Error::Gguf`] when it is not a GGUF file
    /// of version 2 or 3, its metadata is damaged or over this reader's limits, it carries no
    /// vocabulary, its tokenizer family is neither `gpt2` nor `llama`, or an id it names is past
    /// its tokens; and the errors of [`Vocabulary::new`].
    pub fn from_gguf(path: impl AsRef<Path>) -> Result<Vocabulary> {
        let path = path.as_ref();
        let _span = tracing::debug_span!("vocabulary_from_gguf", path = %path.display()).entered();
        let file = File::open(path).map_err(|source| Error::Io {
            path: path.to_owned(),
            source,
        })?;
        Vocabulary::from_gguf_reader(BufReader::with_capacity(1 << 16, file), path)
    }

    /// [`Vocabulary::from_gguf`] on any reader positioned at the file's start; `path` names
    /// it in errors.
    ///
    /// # Errors
    ///
    /// As [`Vocabulary::from_gguf`].
    pub fn from_gguf_reader(reader: impl Read, path: impl AsRef<Path>) -> Result<Vocabulary> {
        let path = path.as_ref();
        let mut reader = Reader {
            inner: reader,
            offset: 0,
            path: path.to_owned(),
            key: String::new(),
        };
        let meta = reader.metadata()?;
        let error = |reason: String| Error::Gguf {
            path: path.to_owned(),
            reason,
        };
        let family = match meta.model.as_deref() {
            Some(b"gpt2") => Family::ByteLevel,
            Some(b"llama") => Family::SentencePiece,
            Some(other) => {
                return Err(error(format!(
                    "its tokenizer family `{}` is not supported (only `gpt2` and `llama`)",
                    String::from_utf8_lossy(other)
                )));
            }
            None => {
                return Err(error(
                    "it carries no tokenizer (no `tokenizer.ggml.model`)".to_owned(),
                ));
            }
        };
        let tokens = meta
            .tokens
            .filter(|t| !t.is_empty())
            .ok_or_else(|| error("it carries no `tokenizer.ggml.tokens`".to_owned()))?;
        let n = tokens.len();
        let mut kinds = match meta.token_types {
            Some(types) if types.len() != n => {
                return Err(error(format!(
                    "`tokenizer.ggml.token_type` has {} entries for {n} tokens",
                    types.len()
                )));
            }
            Some(types) => types,
            None => vec![token_type::NORMAL; n],
        };
        let id_of = |key: &str, v: Option<i128>| -> Result<Option<TokenId>> {
            match v {
                None | Some(-1) => Ok(None),
                Some(v) => usize::try_from(v)
                    .ok()
                    .filter(|&i| i < n)
                    .map(|i| Some(TokenId::new_unchecked(i as u32)))
                    .ok_or_else(|| error(format!("`{key}` is {v}, not one of its {n} token ids"))),
            }
        };
        let eos = id_of("tokenizer.ggml.eos_token_id", meta.eos)?;
        let eot = id_of("tokenizer.ggml.eot_token_id", meta.eot)?;
        let eom = id_of("tokenizer.ggml.eom_token_id", meta.eom)?;
        let bos = id_of("tokenizer.ggml.bos_token_id", meta.bos)?;
        if n > TokenId::LIMIT {
            return Err(Error::TokenIdTooLarge {
                id: n as u64 - 1,
                max: TokenId::MAX,
            });
        }
        let find = |texts: &[&str]| -> Option<TokenId> {
            texts.iter().find_map(|x| {
                tokens
                    .iter()
                    .position(|t| x.as_bytes() == t.as_slice())
                    .map(|i| TokenId::new_unchecked(i as u32))
            })
        };
        let text_of = |id: TokenId| tokens[id.as_usize()].as_slice();
        let control = |id: TokenId, kinds: &mut [i64]| kinds[id.as_usize()] = token_type::CONTROL;

        // Found by their text, unless named: the end of turn and of message, and the
        // fill-in-the-middle tokens; all control tokens.
        let eot = eot.or_else(|| find(END_OF_TURN_TEXTS));
        let eom = eom.or_else(|| find(END_OF_MESSAGE_TEXTS));
        let fim: Vec<Option<TokenId>> = FIM_TEXTS.iter().map(|texts| find(texts)).collect();
        for id in [eot, eom].into_iter().chain(fim.iter().copied()).flatten() {
            control(id, &mut kinds);
        }

        // Tokens that end generation: the fill-in-the-middle padding, repository and
        // separator tokens, the tokens with an end-of-generation text, and the named ones.
        let mut end: Vec<TokenId> = fim[3..].iter().copied().flatten().collect();
        for (i, t) in tokens.iter().enumerate() {
            if END_OF_GENERATION_TEXTS
                .iter()
                .any(|x| x.as_bytes() == t.as_slice())
            {
                let id = TokenId::new_unchecked(i as u32);
                control(id, &mut kinds);
                end.push(id);
            }
        }
        end.extend([eos, eot, eom].into_iter().flatten());
        for (i, t) in tokens.iter().enumerate() {
            if ALWAYS_TEXT.iter().any(|x| x.as_bytes() == t.as_slice()) {
                kinds[i] = token_type::USER_DEFINED;
            }
        }
        // Harmony-style vocabularies end with `<|return|>` and `<|call|>`: their `<|end|>`
        // ends a message, not the generation, and is plain text.
        let ends_with =
            |end: &[TokenId], text: &str| end.iter().any(|&id| text_of(id) == text.as_bytes());
        let harmony = (ends_with(&end, "<|return|>") || ends_with(&end, "<|flush|>"))
            && (ends_with(&end, "<|call|>") || ends_with(&end, "<|calls|>"));
        if let Some(pos) = end
            .iter()
            .position(|&id| harmony && text_of(id) == b"<|end|>")
        {
            kinds[end.remove(pos).as_usize()] = token_type::USER_DEFINED;
        }
        // Where `<|tool_response>` or `<|plamo:eos|>` also ends generation, `</s>` is an
        // ordinary token.
        if ends_with(&end, "<|tool_response>") || ends_with(&end, "<|plamo:eos|>") {
            while let Some(pos) = end.iter().position(|&id| text_of(id) == b"</s>") {
                kinds[end.remove(pos).as_usize()] = token_type::NORMAL;
            }
        }

        let mut pieces = Vec::new();
        let mut bounds = Vec::with_capacity(n);
        let mut special = Vec::new();
        for (i, (text, &kind)) in tokens.iter().zip(&kinds).enumerate() {
            let start = pieces.len();
            token_bytes(family, kind, text, &mut pieces);
            bounds.push(start..pieces.len());
            if !matches!(
                kind,
                token_type::NORMAL | token_type::USER_DEFINED | token_type::BYTE
            ) {
                special.push(TokenId::new_unchecked(i as u32));
            }
        }
        let end_of_turn = eot;
        let adds_bos = meta.add_bos.unwrap_or(family == Family::SentencePiece);
        let vocab = Vocabulary::new(bounds.into_iter().map(|r| &pieces[r]), special)?
            .with_eos_ids(end)?
            .with_end_of_turn_ids(end_of_turn)?
            .with_bos_id(bos.filter(|_| adds_bos))?;
        tracing::debug!(?vocab, "loaded vocabulary");
        Ok(vocab)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF header with the given keys (each a name, a type and the value's encoding).
    pub(crate) fn header(keys: &[(&str, u32, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(0u64.to_le_bytes());
        out.extend((keys.len() as u64).to_le_bytes());
        for (name, t, value) in keys {
            out.extend(string(name.as_bytes()));
            out.extend(t.to_le_bytes());
            out.extend(value);
        }
        out
    }

    fn string(s: &[u8]) -> Vec<u8> {
        let mut out = (s.len() as u64).to_le_bytes().to_vec();
        out.extend(s);
        out
    }

    fn strings(items: &[&str]) -> Vec<u8> {
        let mut out = ty::STRING.to_le_bytes().to_vec();
        out.extend((items.len() as u64).to_le_bytes());
        for s in items {
            out.extend(string(s.as_bytes()));
        }
        out
    }

    fn ints(items: &[i32]) -> Vec<u8> {
        let mut out = ty::I32.to_le_bytes().to_vec();
        out.extend((items.len() as u64).to_le_bytes());
        for v in items {
            out.extend(v.to_le_bytes());
        }
        out
    }

    fn floats(n: usize) -> Vec<u8> {
        let mut out = ty::F32.to_le_bytes().to_vec();
        out.extend((n as u64).to_le_bytes());
        out.extend(std::iter::repeat_n(0u8, 4 * n));
        out
    }

    fn load(bytes: &[u8]) -> Result<Vocabulary> {
        Vocabulary::from_gguf_reader(bytes, "test.gguf")
    }

    fn reason(bytes: &[u8]) -> String {
        match load(bytes) {
            Err(Error::Gguf { reason, .. }) => reason,
            other => panic!("expected a GGUF error, got {other:?}"),
        }
    }

    #[test]
    fn a_sentencepiece_vocabulary_is_undone_as_llama_cpp_writes_it() {
        let tokens = [
            "<unk>",
            "<s>",
            "</s>",
            "▁the",
            "<0x0A>",
            "<end_of_turn>",
            "<mask>",
            "a▁b",
            "<unused0>",
        ];
        let types = [2, 3, 3, 1, 6, 4, 4, 1, 5];
        let file = header(&[
            ("general.architecture", ty::STRING, string(b"gemma3")),
            ("tokenizer.ggml.model", ty::STRING, string(b"llama")),
            ("tokenizer.ggml.tokens", ty::ARRAY, strings(&tokens)),
            ("tokenizer.ggml.scores", ty::ARRAY, floats(tokens.len())),
            ("tokenizer.ggml.token_type", ty::ARRAY, ints(&types)),
            (
                "tokenizer.ggml.bos_token_id",
                ty::U32,
                1u32.to_le_bytes().to_vec(),
            ),
            (
                "tokenizer.ggml.eos_token_id",
                ty::U32,
                2u32.to_le_bytes().to_vec(),
            ),
        ]);
        let vocab = load(&file).unwrap();
        let bytes: Vec<&[u8]> = vocab.iter().map(|(_, b)| b).collect();
        assert_eq!(
            bytes,
            [
                &b"<unk>"[..],
                b"<s>",
                b"</s>",
                b" the",
                b"\n",
                b"<end_of_turn>",
                b"<mask>",
                b"a b",
                b"",
            ]
        );
        let ids = |v: &[TokenId]| v.iter().map(|t| t.as_u32()).collect::<Vec<_>>();
        // `<end_of_turn>` ends generation, so it counts as a control token.
        assert_eq!(ids(vocab.eos_ids()), [2, 5]);
        assert_eq!(ids(vocab.end_of_turn_ids()), [5]);
        assert_eq!(vocab.special().ones().collect::<Vec<_>>(), [0, 1, 2, 5, 8]);
        assert_eq!(vocab.bos_id().map(TokenId::as_u32), Some(1));
    }

    #[test]
    fn a_byte_level_vocabulary_is_undone_as_llama_cpp_writes_it() {
        let tokens = [
            "Ġthe",
            "Ċ",
            "<|im_end|>",
            "<|endoftext|>",
            "ðŁĺ",
            "<tool>",
            "x☃",
        ];
        let types = [1, 1, 3, 3, 1, 4, 1];
        let file = header(&[
            ("tokenizer.ggml.model", ty::STRING, string(b"gpt2")),
            ("tokenizer.ggml.tokens", ty::ARRAY, strings(&tokens)),
            ("tokenizer.ggml.token_type", ty::ARRAY, ints(&types)),
            ("tokenizer.ggml.merges", ty::ARRAY, strings(&["Ġ t", "h e"])),
            (
                "tokenizer.ggml.eos_token_id",
                ty::I32,
                3i32.to_le_bytes().to_vec(),
            ),
            (
                "tokenizer.ggml.bos_token_id",
                ty::U32,
                3u32.to_le_bytes().to_vec(),
            ),
            ("tokenizer.ggml.add_bos_token", ty::BOOL, vec![0]),
            (
                "tokenizer.chat_template",
                ty::STRING,
                string(b"{{ messages }}"),
            ),
        ]);
        let vocab = load(&file).unwrap();
        let bytes: Vec<&[u8]> = vocab.iter().map(|(_, b)| b).collect();
        assert_eq!(
            bytes,
            [
                &b" the"[..],
                b"\n",
                b"<|im_end|>",
                b"<|endoftext|>",
                &"😀".as_bytes()[..3],
                b"<tool>",
                "x☃".as_bytes(),
            ]
        );
        let ids = |v: &[TokenId]| v.iter().map(|t| t.as_u32()).collect::<Vec<_>>();
        assert_eq!(ids(vocab.eos_ids()), [2, 3]);
        assert_eq!(ids(vocab.end_of_turn_ids()), [2]);
        assert_eq!(vocab.special().ones().collect::<Vec<_>>(), [2, 3]);
        assert_eq!(vocab.bos_id(), None, "add_bos_token is false");
    }

    #[test]
    fn damaged_and_foreign_files_are_named_errors() {
        let tokens = ("tokenizer.ggml.tokens", ty::ARRAY, strings(&["a", "b"]));
        let gpt2 = ("tokenizer.ggml.model", ty::STRING, string(b"gpt2"));
        assert!(reason(b"PK\x03\x04 not a model").contains("not a GGUF file"));
        assert!(reason(b"GG").contains("ends inside"));
        let mut v1 = header(&[]);
        v1[4..8].copy_from_slice(&1u32.to_le_bytes());
        assert!(reason(&v1).contains("version 1"));
        let mut big_endian = header(&[]);
        big_endian[4..8].copy_from_slice(&3u32.to_be_bytes());
        assert!(reason(&big_endian).contains("big-endian"));
        assert!(reason(&header(std::slice::from_ref(&tokens))).contains("no tokenizer"));
        assert!(
            reason(&header(std::slice::from_ref(&gpt2))).contains("no `tokenizer.ggml.tokens`")
        );
        let bert = ("tokenizer.ggml.model", ty::STRING, string(b"bert"));
        assert!(reason(&header(&[bert, tokens.clone()])).contains("`bert` is not supported"));
        let eos = (
            "tokenizer.ggml.eos_token_id",
            ty::U32,
            7u32.to_le_bytes().to_vec(),
        );
        let r = reason(&header(&[gpt2.clone(), tokens.clone(), eos]));
        assert!(r.contains("is 7, not one of its 2 token ids"), "{r}");
        let types = ("tokenizer.ggml.token_type", ty::ARRAY, ints(&[1]));
        let r = reason(&header(&[gpt2.clone(), tokens.clone(), types]));
        assert!(r.contains("1 entries for 2 tokens"), "{r}");

        // Claimed lengths are never allocated up front: a huge string or array is refused, a
        // short file is reported where it ends.
        let mut huge = header(std::slice::from_ref(&gpt2));
        huge.extend(string(b"tokenizer.ggml.tokens"));
        huge.extend(ty::ARRAY.to_le_bytes());
        huge.extend(ty::STRING.to_le_bytes());
        huge.extend(u64::MAX.to_le_bytes());
        huge[16..24].copy_from_slice(&2u64.to_le_bytes());
        let r = reason(&huge);
        assert!(
            r.contains("over the limit") && r.contains("tokenizer.ggml.tokens"),
            "{r}"
        );
        let full = header(&[gpt2, tokens]);
        let r = reason(&full[..full.len() - 1]);
        assert!(r.contains("ends inside"), "{r}");
    }
}
