//! [`GgufVocab`]: the tokenizer facts a GGUF file carries, as llama.cpp reads them.
//!
//! Constrained decoding indexes a `tokenizer.json`; this view lets a caller check that file
//! against the model it will drive: same vocabulary size, same token strings for a sample of
//! ids, same special tokens. It also tokenizes with llama.cpp's own tokenizer, which is the
//! reference for what the model saw in training.

use std::fmt;

use generate::ModelError;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::vocab::LlamaVocab;

use crate::model::in_vocab;

/// A borrowed view of a loaded model's vocabulary; see [`crate::LlamaModel::vocab`].
///
/// Every method that takes a token id checks it first: llama.cpp aborts the process on an
/// out-of-range id.
pub struct GgufVocab<'a> {
    vocab: LlamaVocab<'a>,
    n_vocab: usize,
}

impl<'a> GgufVocab<'a> {
    pub(crate) fn new(vocab: LlamaVocab<'a>, n_vocab: usize) -> Self {
        Self { vocab, n_vocab }
    }

    /// Number of tokens in the vocabulary (the logits length).
    #[must_use]
    pub fn len(&self) -> usize {
        self.n_vocab
    }

    /// Whether the vocabulary is empty (never, for a loaded model).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.n_vocab == 0
    }

    fn token(&self, id: u32) -> Result<LlamaToken, ModelError> {
        let bad = || ModelError::BadToken {
            id,
            vocab_size: self.n_vocab,
        };
        if !in_vocab(id, self.n_vocab) {
            return Err(bad());
        }
        i32::try_from(id).map(LlamaToken::new).map_err(|_| bad())
    }

    fn id(&self, token: LlamaToken) -> Option<u32> {
        u32::try_from(token.0)
            .ok()
            .filter(|&id| in_vocab(id, self.n_vocab))
    }

    /// The token's entry in the GGUF vocabulary (`tokenizer.ggml.tokens`) as written, e.g.
    /// `▁Paris` for a SentencePiece model or `ĠParis` for a byte-level BPE one: the same
    /// string a `tokenizer.json` has for that id.
    ///
    /// # Errors
    ///
    /// [`ModelError::BadToken`] for an id outside the vocabulary; [`ModelError::Runtime`] if
    /// llama.cpp has no text for it.
    pub fn token_text(&self, id: u32) -> Result<String, ModelError> {
        let token = self.token(id)?;
        self.vocab
            .text(token)
            .map(|text| text.to_string_lossy().into_owned())
            .ok_or_else(|| ModelError::Runtime(format!("llama.cpp has no text for token {id}")))
    }

    /// The bytes the token decodes to, special tokens included (`<eos>` renders as its text).
    ///
    /// # Errors
    ///
    /// [`ModelError::BadToken`] for an id outside the vocabulary.
    pub fn token_bytes(&self, id: u32) -> Result<Vec<u8>, ModelError> {
        let mut bytes = Vec::new();
        self.token_bytes_into(id, &mut bytes)?;
        Ok(bytes)
    }

    /// Appends the bytes of [`GgufVocab::token_bytes`] to `out`, reusing its allocation.
    ///
    /// # Errors
    ///
    /// [`ModelError::BadToken`] for an id outside the vocabulary.
    pub fn token_bytes_into(&self, id: u32, out: &mut Vec<u8>) -> Result<(), ModelError> {
        let token = self.token(id)?;
        self.vocab.token_to_piece_into(token, out, true, None);
        Ok(())
    }

    /// The beginning-of-sequence token, if the model has one.
    #[must_use]
    pub fn bos(&self) -> Option<u32> {
        self.id(self.vocab.bos())
    }

    /// The end-of-sequence token, if the model has one.
    #[must_use]
    pub fn eos(&self) -> Option<u32> {
        self.id(self.vocab.eos())
    }

    /// The end-of-turn token of chat models (e.g. `<end_of_turn>`), if the model has one.
    #[must_use]
    pub fn eot(&self) -> Option<u32> {
        self.id(self.vocab.eot())
    }

    /// Whether generation should stop at `id` (EOS, EOT and the like); `false` for ids outside
    /// the vocabulary.
    #[must_use]
    pub fn is_end_of_generation(&self, id: u32) -> bool {
        self.token(id).is_ok_and(|token| self.vocab.is_eog(token))
    }

    /// Whether the model expects a BOS token at the start of a prompt.
    #[must_use]
    pub fn adds_bos(&self) -> bool {
        self.vocab.should_add_bos()
    }

    /// Tokenizes `text` with llama.cpp's own tokenizer.
    ///
    /// `add_special` adds the BOS (and EOS) tokens the model is configured to add;
    /// `parse_special` turns the text of special tokens (`<start_of_turn>`) into those tokens
    /// instead of tokenizing it as plain text.
    ///
    /// # Errors
    ///
    /// [`ModelError::Runtime`] for a text longer than llama.cpp accepts (2 GiB).
    pub fn tokenize(
        &self,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<u32>, ModelError> {
        // llama.cpp takes the length as an i32 and its output count must fit one too.
        if i32::try_from(text.len().saturating_add(2)).is_err() {
            return Err(ModelError::Runtime(format!(
                "text of {} bytes is too long for llama.cpp's tokenizer",
                text.len()
            )));
        }
        self.vocab
            .tokenize(text.as_bytes(), add_special, parse_special)
            .into_iter()
            .map(|token| {
                u32::try_from(token.0)
                    .ok()
                    .filter(|&id| (id as usize) < self.n_vocab)
                    .ok_or_else(|| {
                        ModelError::Runtime(format!("llama.cpp produced token id {}", token.0))
                    })
            })
            .collect()
    }
}

impl fmt::Debug for GgufVocab<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GgufVocab")
            .field("len", &self.n_vocab)
            .field("bos", &self.bos())
            .field("eos", &self.eos())
            .finish()
    }
}
