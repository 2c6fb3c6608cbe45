//! `stencil.Vocab`: a tokenizer's exact token bytes, and the mask kernel built over them once.

use std::path::PathBuf;
use std::sync::Arc;

use mask_kernel::Kernel;
use pyo3::exceptions::{PyFileNotFoundError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use vocab_index::tokenizers::Tokenizer;
use vocab_index::{TokenId, TokenizerConfig, TrieKind, Vocabulary, read_tokenizer_files};

use crate::errors::{vocab_error, with_sources};

/// The size from which a vocabulary and its kernel tables are kept on disk
/// ([`Vocabulary::derive_kept`], [`Kernel::cached`]):
/// every real tokenizer's (32k tokens and more), where building them takes tens to hundreds
/// of milliseconds and reading them a tenth of that. Smaller vocabularies, as tests make them
/// by the thousand, build in a few milliseconds and leave nothing behind.
const KEPT_FROM: usize = 16_384;

/// A vocabulary: the exact bytes of every token id, the special and end-of-sequence ids, and
/// the tables the mask kernel builds once per vocabulary. Immutable; share one between
/// grammars and threads.
#[pyclass(module = "stencil", frozen)]
pub struct Vocab {
    pub(crate) kernel: Arc<Kernel>,
}

impl Vocab {
    /// Pads or trims `vocab` to `size` ids, then builds the kernel, its tables kept in the
    /// download cache between processes when the vocabulary is a real tokenizer's size.
    fn build(vocab: Vocabulary, size: Option<usize>) -> PyResult<Vocab> {
        let vocab = Arc::new(match size {
            Some(n) => resized(vocab, n)?,
            None => vocab,
        });
        let kernel = match mask_kernel::default_tables_dir() {
            Some(dir) if vocab.len() >= KEPT_FROM => Kernel::cached(vocab, TrieKind::Flat, &dir)
                .map(|(kernel, _)| kernel)
                .map_err(|e| match e {
                    mask_kernel::TablesError::Build(e) => vocab_error(e),
                    other => PyValueError::new_err(with_sources(&other)),
                })?,
            _ => Kernel::new(vocab, TrieKind::Flat).map_err(vocab_error)?,
        };
        Ok(Vocab {
            kernel: Arc::new(kernel),
        })
    }

    /// The number of token ids.
    pub(crate) fn len(&self) -> usize {
        self.kernel.vocab().len()
    }
}

/// The vocabulary `derive` makes from `inputs` (every byte it depends on), kept in the
/// download cache when it is a real tokenizer's size, so that the next process reads it
/// instead of parsing the tokenizer again (see [`Vocabulary::derive_kept`]).
fn kept_or_derived(
    inputs: &[&[u8]],
    derive: impl FnOnce() -> PyResult<Vocabulary>,
) -> PyResult<Vocabulary> {
    match mask_kernel::default_tables_dir() {
        Some(dir) => Vocabulary::derive_kept(&dir, inputs, KEPT_FROM, derive).map(|(v, _)| v),
        None => derive(),
    }
}

/// `vocab` with exactly `n` ids: ids past the tokenizer's are special tokens without bytes
/// (never allowed), as a model's padded embedding has them; ids past `n` may be dropped only
/// when they are special (a model cannot produce them anyway).
fn resized(vocab: Vocabulary, n: usize) -> PyResult<Vocabulary> {
    let len = vocab.len();
    if n == len {
        return Ok(vocab);
    }
    if n == 0 || n > TokenId::LIMIT {
        return Err(PyValueError::new_err(format!(
            "vocab_size must be between 1 and {}, got {n}",
            TokenId::LIMIT
        )));
    }
    let id = |i: usize| TokenId::new(i as u32).expect("below TokenId::LIMIT");
    if let Some(i) = (n..len).find(|&i| !vocab.is_special(id(i))) {
        return Err(PyValueError::new_err(format!(
            "vocab_size {n} is smaller than the tokenizer's {len} ids, and id {i} past it is an \
             ordinary token: the tokenizer belongs to another model"
        )));
    }
    let tokens = (0..n).map(|i| if i < len { vocab.bytes(id(i)) } else { &[][..] });
    let special = (0..n)
        .filter(|&i| i >= len || vocab.is_special(id(i)))
        .map(id);
    let keep = |ids: &[TokenId]| -> Vec<TokenId> {
        ids.iter().copied().filter(|t| t.as_usize() < n).collect()
    };
    Vocabulary::new(tokens, special)
        .and_then(|v| v.with_eos_ids(keep(vocab.eos_ids())))
        .and_then(|v| v.with_end_of_turn_ids(keep(vocab.end_of_turn_ids())))
        .and_then(|v| v.with_bos_id(vocab.bos_id().filter(|t| t.as_usize() < n)))
        .map_err(vocab_error)
}

/// Token ids from Python integers, each checked against `len`.
fn token_ids(ids: &[i64], len: usize, what: &str) -> PyResult<Vec<TokenId>> {
    ids.iter()
        .map(|&i| {
            usize::try_from(i)
                .ok()
                .filter(|&u| u < len)
                .and_then(|u| TokenId::new(u as u32))
                .ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "{what} {i} is out of range: the vocabulary has {len} ids (0 to {})",
                        len.saturating_sub(1)
                    ))
                })
        })
        .collect()
}

/// Adds `extra` end-of-sequence ids to those the tokenizer names.
fn with_extra_eos(vocab: Vocabulary, extra: &[i64]) -> PyResult<Vocabulary> {
    if extra.is_empty() {
        return Ok(vocab);
    }
    let mut eos = vocab.eos_ids().to_vec();
    eos.extend(token_ids(extra, vocab.len(), "end-of-sequence id")?);
    vocab.with_eos_ids(eos).map_err(vocab_error)
}

#[pymethods]
impl Vocab {
    /// Loads a Hugging Face `tokenizer.json`: a path (str or os.PathLike; the
    /// `tokenizer_config.json` beside it, if any, names the end-of-sequence and
    /// beginning-of-sequence tokens), or the JSON text itself (a str starting with `{`).
    ///
    /// `vocab_size` pads the vocabulary with ids that are never allowed, up to the model's
    /// logits width (or drops special ids past it). `eos_token` and `bos_token` (token
    /// contents, such as `"</s>"`) replace the config's; `eos_token_ids` adds end-of-sequence
    /// ids.
    #[staticmethod]
    #[pyo3(signature = (source, *, vocab_size=None, eos_token=None, bos_token=None, eos_token_ids=Vec::new()))]
    fn from_tokenizer_json(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
        eos_token: Option<String>,
        bos_token: Option<String>,
        eos_token_ids: Vec<i64>,
    ) -> PyResult<Vocab> {
        let text = match source.cast::<PyString>() {
            Ok(s) => Some(s.extract::<String>()?).filter(|t| t.trim_start().starts_with('{')),
            Err(_) => None,
        };
        let given = (eos_token.is_some() || bos_token.is_some())
            .then(|| TokenizerConfig::new(eos_token.as_deref(), bos_token.as_deref()));
        // What the vocabulary is derived from besides the tokenizer file: the tokens given.
        let given_key = format!("{eos_token:?} {bos_token:?}");
        let vocab = match text {
            Some(text) => py.detach(|| {
                kept_or_derived(&[b"text", text.as_bytes(), given_key.as_bytes()], || {
                    let tokenizer = text.parse::<Tokenizer>().map_err(|e| {
                        PyValueError::new_err(format!(
                            "not a tokenizer.json: {}",
                            with_sources(&*e)
                        ))
                    })?;
                    Vocabulary::from_tokenizer(&tokenizer, given.as_ref()).map_err(vocab_error)
                })
            })?,
            None => {
                let path: PathBuf = source.extract().map_err(|_| {
                    PyTypeError::new_err(format!(
                        "expected a path to a tokenizer.json (str or os.PathLike) or its JSON \
                         text, got {}",
                        source
                            .get_type()
                            .name()
                            .map_or_else(|_| "?".into(), |n| n.to_string())
                    ))
                })?;
                if !path.is_file() {
                    return Err(PyFileNotFoundError::new_err(format!(
                        "no tokenizer.json at {}",
                        path.display()
                    )));
                }
                py.detach(|| match &given {
                    // The config beside the file names the end of sequence.
                    None => {
                        let (bytes, config) = read_tokenizer_files(&path).map_err(vocab_error)?;
                        let inputs: [&[u8]; 4] = [
                            b"file",
                            &bytes,
                            if config.is_some() {
                                b"config"
                            } else {
                                b"no config"
                            },
                            config.as_deref().unwrap_or_default().as_bytes(),
                        ];
                        kept_or_derived(&inputs, || {
                            Vocabulary::from_file_contents(&path, &bytes, config.as_deref())
                                .map_err(vocab_error)
                        })
                    }
                    Some(config) => {
                        let cannot_load = |e: &dyn std::error::Error| {
                            PyValueError::new_err(format!(
                                "cannot load tokenizer {}: {}",
                                path.display(),
                                with_sources(e)
                            ))
                        };
                        let bytes = std::fs::read(&path).map_err(|e| cannot_load(&e))?;
                        kept_or_derived(&[b"file", &bytes, given_key.as_bytes()], || {
                            let tokenizer =
                                Tokenizer::from_bytes(&bytes).map_err(|e| cannot_load(&*e))?;
                            Vocabulary::from_tokenizer(&tokenizer, Some(config))
                                .map_err(vocab_error)
                        })
                    }
                })?
            }
        };
        let vocab = with_extra_eos(vocab, &eos_token_ids)?;
        py.detach(|| Vocab::build(vocab, vocab_size))
    }

    /// A vocabulary from each id's exact bytes (`tokens[i]` is id `i`): for tokenizers this
    /// package cannot read, and for tests. Special ids are never allowed; end-of-sequence ids
    /// are allowed exactly when the document is complete (they are special too).
    #[staticmethod]
    #[pyo3(signature = (tokens, *, eos_token_ids=Vec::new(), special_token_ids=Vec::new(), vocab_size=None))]
    fn from_token_bytes(
        py: Python<'_>,
        tokens: Vec<Vec<u8>>,
        eos_token_ids: Vec<i64>,
        special_token_ids: Vec<i64>,
        vocab_size: Option<usize>,
    ) -> PyResult<Vocab> {
        let n = tokens.len();
        let eos = token_ids(&eos_token_ids, n, "end-of-sequence id")?;
        let mut special = token_ids(&special_token_ids, n, "special token id")?;
        special.extend(&eos);
        let vocab = Vocabulary::new(&tokens, special)
            .and_then(|v| v.with_eos_ids(eos))
            .map_err(vocab_error)?;
        py.detach(|| Vocab::build(vocab, vocab_size))
    }

    /// The vocabulary a GGUF model file carries in its metadata (`tokenizer.ggml.*`; byte-level
    /// `gpt2` and SentencePiece-style `llama` families), each token's bytes as llama.cpp writes
    /// them, with its special and end-of-generation ids. Only the header is read, never the
    /// weights. `vocab_size` pads the vocabulary to the model's logits width.
    #[staticmethod]
    #[pyo3(signature = (path, *, vocab_size=None))]
    fn from_gguf(py: Python<'_>, path: PathBuf, vocab_size: Option<usize>) -> PyResult<Vocab> {
        if !path.is_file() {
            return Err(PyFileNotFoundError::new_err(format!(
                "no GGUF file at {}",
                path.display()
            )));
        }
        py.detach(|| {
            let vocab = Vocabulary::from_gguf(&path).map_err(vocab_error)?;
            Vocab::build(vocab, vocab_size)
        })
    }

    /// The vocabulary of a Hugging Face tokenizer object (`PreTrainedTokenizerFast`, a slow
    /// tokenizer that transformers can convert, a `tokenizers.Tokenizer`, or mlx-lm's
    /// `TokenizerWrapper`), cached per tokenizer object and `vocab_size`. `vocab_size` pads
    /// the vocabulary to the model's logits width.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, *, vocab_size=None))]
    fn from_transformers(
        py: Python<'_>,
        tokenizer: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
    ) -> PyResult<Py<Vocab>> {
        py.import("stencil._transformers")?
            .call_method1("vocab_from_transformers", (tokenizer, vocab_size))?
            .extract()
            .map_err(Into::into)
    }

    /// The number of token ids (the width of a mask).
    #[getter]
    fn size(&self) -> usize {
        self.len()
    }

    fn __len__(&self) -> usize {
        self.len()
    }

    /// The end-of-sequence ids: allowed exactly when the document is complete.
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        let vocab = self.kernel.vocab();
        vocab.eos_ids().iter().map(|t| t.as_u32()).collect()
    }

    /// The special ids (end of sequence included), never allowed inside a document.
    #[getter]
    fn special_token_ids(&self) -> Vec<usize> {
        self.kernel.vocab().special().ones().collect()
    }

    /// The exact bytes token `id` adds to the text.
    fn token_bytes<'py>(&self, py: Python<'py>, id: i64) -> PyResult<Bound<'py, PyBytes>> {
        let vocab = self.kernel.vocab();
        let t = token_ids(&[id], vocab.len(), "token id")?[0];
        Ok(PyBytes::new(py, vocab.bytes(t)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Vocab(size={}, eos_token_ids={:?})",
            self.len(),
            self.eos_token_ids()
        )
    }
}

/// Checks Python token ids against a vocabulary of `len` ids (shared with the matcher).
pub(crate) fn checked_ids(ids: &[i64], len: usize) -> PyResult<Vec<TokenId>> {
    token_ids(ids, len, "token id")
}
