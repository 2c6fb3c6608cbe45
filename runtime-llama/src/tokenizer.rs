//! A GGUF file's own tokenizer as a [`generate::Tokenizer`]: every token's bytes, the special
//! and end-of-generation tokens, the chat template and the text encoder all come from the file,
//! through llama.cpp, so a GGUF model needs no `tokenizer.json`.
//!
//! - Bytes: what llama.cpp's detokenizer writes for the token on its own, control tokens
//!   rendered as their text (`<eos>`), so that both byte-level BPE (`gpt2`: Llama 3, Qwen,
//!   SmolLM) and SentencePiece-style (`llama`: Gemma, Llama 2) vocabularies are undone the way
//!   the model's own runtime undoes them.
//! - Special: control, unknown and unused tokens. Masks never allow them; the end-of-generation
//!   tokens are allowed where the grammar accepts.
//! - End of generation: every token llama.cpp ends generation at (EOS, EOT, `<|im_end|>`, …).
//! - Chat template: `tokenizer.chat_template`, rendered by `generate`'s Jinja engine.
//! - Encoder: llama.cpp's tokenizer, on a vocabulary-only load of the same file (no weights:
//!   [`load_tokenizer`]), or on the vocabulary a [`crate::LlamaModel`] loaded with its weights
//!   ([`crate::LlamaModel::tokenizer`], which spares a second load: for Gemma 3's 262k tokens,
//!   llama.cpp takes most of a model's load time reading its vocabulary).
//!
//! [`check_tokenizer`] compares another vocabulary (a `--tokenizer` override) with the file's,
//! so a `tokenizer.json` that belongs to another model is refused with the mismatch named.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use generate::{ChatTemplate, ModelError, TextEncoder, Tokenizer};
use llama_cpp_2::model::LlamaModel as RawModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token_type::LlamaTokenAttr;
use llama_cpp_2::vocab::LlamaVocab;
use vocab_index::{TokenId, Vocabulary};

use crate::backend;
use crate::config::LlamaLog;
use crate::vocab::GgufVocab;

/// Loads the tokenizer a GGUF file carries (see the module docs).
///
/// # Errors
///
/// [`ModelError::Load`] when the file is missing, llama.cpp cannot read its vocabulary, or the
/// vocabulary or chat template is malformed.
pub fn load_tokenizer(path: impl AsRef<Path>) -> Result<Tokenizer, ModelError> {
    let path = path.as_ref();
    let load_error = |reason: String| ModelError::Load {
        path: path.display().to_string(),
        reason,
    };
    if !path.is_file() {
        return Err(load_error("no such file".to_owned()));
    }
    let _span = tracing::info_span!("gguf_tokenizer", path = %path.display()).entered();
    let raw = {
        let backend = backend::lock(LlamaLog::Quiet).map_err(load_error)?;
        let params = LlamaModelParams::default().with_vocab_only(true);
        RawModel::load_from_file(&backend, path, &params).map_err(|err| {
            load_error(format!(
                "llama.cpp cannot read its vocabulary as a GGUF model: {err}"
            ))
        })?
    };
    tokenizer_of(Arc::new(raw), path)
}

/// The tokenizer of a model llama.cpp loaded from `path` (the weights, or only the vocabulary).
pub(crate) fn tokenizer_of(raw: Arc<RawModel>, path: &Path) -> Result<Tokenizer, ModelError> {
    let vocab = VocabParts::read(&raw.vocab())
        .and_then(|parts| parts.vocabulary())
        .map_err(|reason| ModelError::Load {
            path: path.display().to_string(),
            reason,
        })?;
    tokenizer_with(raw, path, Arc::new(vocab))
}

/// The tokenizer of a model llama.cpp loaded from `path`, with `vocab`, its vocabulary
/// already read.
pub(crate) fn tokenizer_with(
    raw: Arc<RawModel>,
    path: &Path,
    vocab: Arc<Vocabulary>,
) -> Result<Tokenizer, ModelError> {
    let load_error = |reason: String| ModelError::Load {
        path: path.display().to_string(),
        reason,
    };
    let template = match raw.chat_template(None) {
        Ok(source) => {
            let source = source
                .to_str()
                .map_err(|_| load_error("its chat template is not UTF-8".to_owned()))?;
            let text = |id: Option<TokenId>| {
                id.map(|id| String::from_utf8_lossy(vocab.bytes(id)).into_owned())
            };
            let eos = vocab.eos_ids().first().copied();
            Some(
                ChatTemplate::new(source, text(vocab.bos_id()), text(eos))
                    .map_err(|e| load_error(format!("its chat template: {e}")))?,
            )
        }
        Err(_) => None,
    };
    let encoder = GgufEncoder {
        raw,
        n_vocab: vocab.len(),
        path: path.to_path_buf(),
    };
    Ok(Tokenizer::from_parts(
        vocab,
        Box::new(encoder),
        template,
        path,
    ))
}

/// A vocabulary as llama.cpp gives it, before it is indexed: what a [`Vocabulary`] is built
/// from, and what a copy kept on disk is compared with (see
/// [`crate::LlamaModel::load_with_kernel`]).
#[derive(Debug)]
pub(crate) struct VocabParts {
    /// Every token's bytes back to back: one allocation, not one per token.
    pub(crate) arena: Vec<u8>,
    /// Where each id's bytes end in `arena`.
    pub(crate) ends: Vec<usize>,
    /// Tokens that cannot stand for text (control, unknown, unused): never in a mask.
    pub(crate) special: Vec<TokenId>,
    /// End-of-generation ids.
    pub(crate) eog: Vec<TokenId>,
    pub(crate) end_of_turn: Option<TokenId>,
    pub(crate) bos: Option<TokenId>,
}

impl VocabParts {
    /// The parts of a loaded model's vocabulary: bytes, special ids, end-of-generation ids
    /// and BOS.
    pub(crate) fn read(vocab: &LlamaVocab<'_>) -> Result<VocabParts, String> {
        let n = usize::try_from(vocab.n_tokens())
            .ok()
            .filter(|&n| n > 0)
            .ok_or("the file has no vocabulary")?;
        let mut arena: Vec<u8> = Vec::with_capacity(n * 8);
        let mut ends: Vec<usize> = Vec::with_capacity(n);
        let mut special = Vec::new();
        let mut eog = Vec::new();
        for id in 0..n {
            let token = llama_token(id)?;
            let attrs = vocab.attr(token);
            // Room for any usual token, so that llama.cpp writes it in one call.
            arena.reserve(64);
            vocab.token_to_piece_into(token, &mut arena, true, None);
            if attrs.contains(LlamaTokenAttr::Control)
                || attrs.contains(LlamaTokenAttr::Unknown)
                || attrs.contains(LlamaTokenAttr::Unused)
                || attrs.is_empty()
            {
                special.push(token_id(id)?);
            }
            if vocab.is_eog(token) {
                eog.push(token_id(id)?);
            }
            ends.push(arena.len());
        }
        let pick = |token: LlamaToken| {
            usize::try_from(token.0)
                .ok()
                .filter(|&id| id < n)
                .and_then(|id| token_id(id).ok())
        };
        let bos = vocab.should_add_bos().then(|| pick(vocab.bos())).flatten();
        if let Some(eos) = pick(vocab.eos())
            && !eog.contains(&eos)
        {
            eog.push(eos);
        }
        Ok(VocabParts {
            arena,
            ends,
            special,
            eog,
            end_of_turn: pick(vocab.eot()),
            bos,
        })
    }

    /// Each id's bytes.
    fn pieces(&self) -> impl Iterator<Item = &[u8]> {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.arena[start..end])
    }

    /// The indexed vocabulary.
    pub(crate) fn vocabulary(&self) -> Result<Vocabulary, String> {
        Vocabulary::new(self.pieces(), self.special.iter().copied())
            .and_then(|v| v.with_eos_ids(self.eog.iter().copied()))
            .and_then(|v| v.with_end_of_turn_ids(self.end_of_turn))
            .and_then(|v| v.with_bos_id(self.bos))
            .map_err(|e| format!("its vocabulary: {e}"))
    }

    /// Whether [`VocabParts::vocabulary`] would build exactly `vocab`: the same bytes for
    /// every id, the same special, end-of-sequence, end-of-turn and BOS ids.
    pub(crate) fn matches(&self, vocab: &Vocabulary) -> bool {
        let mut eog = self.eog.clone();
        eog.sort_unstable();
        eog.dedup();
        vocab.len() == self.ends.len()
            && vocab.iter().zip(self.pieces()).all(|((_, a), b)| a == b)
            && vocab
                .special()
                .ones()
                .eq(self.special.iter().map(|id| id.as_usize()))
            && vocab.eos_ids() == eog.as_slice()
            && vocab.end_of_turn_ids() == self.end_of_turn.as_slice()
            && vocab.bos_id() == self.bos
    }
}

fn llama_token(id: usize) -> Result<LlamaToken, String> {
    i32::try_from(id)
        .map(LlamaToken::new)
        .map_err(|_| format!("token id {id} does not fit llama.cpp's ids"))
}

fn token_id(id: usize) -> Result<TokenId, String> {
    u32::try_from(id)
        .ok()
        .and_then(TokenId::new)
        .ok_or_else(|| format!("token id {id} is past the vocabulary's id limit"))
}

/// llama.cpp's tokenizer on a vocabulary-only load of a GGUF file.
struct GgufEncoder {
    raw: Arc<RawModel>,
    n_vocab: usize,
    path: PathBuf,
}

impl std::fmt::Debug for GgufEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufEncoder")
            .field("path", &self.path)
            .field("n_vocab", &self.n_vocab)
            .finish()
    }
}

impl TextEncoder for GgufEncoder {
    fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>, String> {
        // Special tokens written in the text are recognized, as `tokenizers` does.
        GgufVocab::new(self.raw.vocab(), self.n_vocab)
            .tokenize(text, add_special, true)
            .map_err(|e| e.to_string())
    }
}

/// How far a vocabulary given for a model (a `tokenizer.json`) may be from the model's own: how
/// many ids to compare byte for byte, spread over the whole vocabulary.
const SAMPLED_IDS: usize = 512;

/// Checks that `other` (a tokenizer given for the model whose own vocabulary is `own`) is the
/// same vocabulary: sizes within the model's padding, the same end-of-sequence token, the same
/// special ids where both define one, and the same bytes for a spread of ordinary tokens.
///
/// # Errors
///
/// A message naming each mismatch found.
pub fn check_tokenizer(own: &Vocabulary, other: &Vocabulary) -> Result<(), String> {
    let mut problems = Vec::new();
    let (n_own, n_other) = (own.len(), other.len());
    // A tokenizer.json may leave out the ids a model pads its embedding with, or add a few
    // special tokens past them; never more than a small number.
    let padding = (n_own.abs_diff(n_other) as f64) / (n_own.max(1) as f64);
    if padding > 0.01 && n_own.abs_diff(n_other) > 256 {
        problems.push(format!(
            "vocabulary sizes differ: the model has {n_own} tokens, the tokenizer {n_other}"
        ));
    }
    if let (Some(&eos), false) = (own.eos_ids().first(), other.eos_ids().is_empty())
        && !other.is_eos(eos)
    {
        problems.push(format!(
            "end of sequence differs: the model's is id {eos} ({:?}), the tokenizer's {:?}",
            String::from_utf8_lossy(own.bytes(eos)),
            other
                .eos_ids()
                .iter()
                .map(|&id| format!("id {id}"))
                .collect::<Vec<_>>()
        ));
    }
    let common = n_own.min(n_other);
    let step = (common / SAMPLED_IDS).max(1);
    let mut differ = Vec::new();
    let mut compared = 0usize;
    for id in (0..common).step_by(step) {
        let Some(id) = u32::try_from(id).ok().and_then(TokenId::new) else {
            break;
        };
        if own.is_special(id) || other.is_special(id) {
            continue;
        }
        compared += 1;
        if own.bytes(id) != other.bytes(id) {
            differ.push(id);
        }
    }
    if !differ.is_empty() {
        let examples: Vec<String> = differ
            .iter()
            .take(3)
            .map(|&id| {
                format!(
                    "id {id}: model {:?}, tokenizer {:?}",
                    String::from_utf8_lossy(own.bytes(id)),
                    String::from_utf8_lossy(other.bytes(id))
                )
            })
            .collect();
        problems.push(format!(
            "{} of {compared} sampled tokens have other bytes ({})",
            differ.len(),
            examples.join("; ")
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    fn id(i: u32) -> TokenId {
        TokenId::new(i).unwrap()
    }

    fn parts() -> VocabParts {
        VocabParts {
            arena: b"abcde<eos><eot>".to_vec(),
            ends: vec![1, 2, 5, 10, 15],
            special: vec![id(3), id(4)],
            eog: vec![id(4), id(3)],
            end_of_turn: Some(id(4)),
            bos: Some(id(0)),
        }
    }

    /// A kept vocabulary is used only when the parts would build exactly it: any difference
    /// in bytes, special ids, end-of-sequence, end-of-turn or BOS is seen.
    #[test]
    fn parts_match_only_the_vocabulary_they_build() {
        let vocab = parts().vocabulary().unwrap();
        assert!(parts().matches(&vocab));
        let changes: [fn(&mut VocabParts); 7] = [
            |p| p.arena[3] = b'D',
            |p| p.ends = vec![1, 3, 5, 10, 15],
            |p| p.special = vec![id(3)],
            |p| p.eog = vec![id(3)],
            |p| p.end_of_turn = None,
            |p| p.bos = None,
            |p| {
                p.arena.extend_from_slice(b"f");
                p.ends.push(16);
            },
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut other = parts();
            change(&mut other);
            assert!(!other.matches(&vocab), "change {i} unseen");
            assert!(other.matches(&other.vocabulary().unwrap()), "change {i}");
        }
    }
}
