//! The model trait: a decoder with a KV cache that returns next-token logits.
//!
//! Runtimes (llama.cpp, MLX) implement [`Model`]; the decode loop only ever sees this trait.

/// An error from a model runtime.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The model file is missing or could not be loaded.
    #[error("cannot load model {path}: {reason}")]
    Load {
        /// Path of the model file or directory.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// The tokens do not fit in the context window.
    #[error("context overflow: {needed} tokens needed, context holds {capacity}")]
    ContextOverflow {
        /// Tokens the call would need in the context.
        needed: usize,
        /// The context size.
        capacity: usize,
    },
    /// A token id is outside the model's vocabulary.
    #[error("token id {id} is outside the model's vocabulary of {vocab_size}")]
    BadToken {
        /// The offending id.
        id: u32,
        /// The model's vocabulary size (logits length).
        vocab_size: usize,
    },
    /// The runtime failed while evaluating.
    #[error("model evaluation failed: {0}")]
    Runtime(String),
}

/// A causal language model with a KV cache.
///
/// The cache holds the first [`Model::n_past`] positions. [`Model::forward`] appends tokens and
/// returns the logits for the position after the last one; [`Model::truncate`] drops positions
/// from the end (for rollback and for reusing a shared prompt prefix).
pub trait Model {
    /// Length of the logits vector (may exceed the tokenizer's vocabulary: embedding padding).
    fn vocab_size(&self) -> usize;

    /// Maximum number of positions the context holds.
    fn context_size(&self) -> usize;

    /// Number of positions currently in the KV cache.
    fn n_past(&self) -> usize;

    /// Append `tokens` to the context and evaluate them; returns next-token logits for the last
    /// one. `tokens` must not be empty.
    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError>;

    /// [`Model::forward`], running `meanwhile` while the tokens are evaluated, where the
    /// runtime evaluates them elsewhere (a batched model on its own thread, see
    /// [`crate::batch`]); else before evaluating them. The decode loop computes the next
    /// token's mask there, which depends only on the tokens already chosen.
    fn forward_with(
        &mut self,
        tokens: &[u32],
        meanwhile: &mut dyn FnMut(),
    ) -> Result<&[f32], ModelError> {
        meanwhile();
        self.forward(tokens)
    }

    /// After a [`Model::forward_with`] call: how long the caller waited, once the tokens were
    /// evaluated, for `meanwhile` to return (zero when it returned first): the part of
    /// `meanwhile` left on the decode path. `None` (the default) where `meanwhile` does not
    /// overlap the evaluation, so that all of it is on the path.
    fn last_overlap_wait(&self) -> Option<std::time::Duration> {
        None
    }

    /// Keep only the first `n_past` positions of the KV cache.
    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError>;

    /// Clear the KV cache.
    fn reset(&mut self) -> Result<(), ModelError> {
        self.truncate(0)
    }

    /// Whether the logits after a token sequence depend on that sequence alone, as for any
    /// real model. The generator then keeps the logits after the last prompt it evaluated, so
    /// that a repeated prompt starts from exactly the same logits: evaluating only its last
    /// token again, on the cached prefix, gives logits that differ in the last bits, enough to
    /// change a sampled text. Test doubles that script a different output per request return
    /// `false`.
    fn logits_depend_only_on_tokens(&self) -> bool {
        true
    }

    /// A short human-readable description (architecture, parameters, quantization).
    fn describe(&self) -> String {
        String::new()
    }
}
