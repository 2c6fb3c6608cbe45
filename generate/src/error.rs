//! Errors of the generation layer.

use crate::model::ModelError;

/// What went wrong while preparing or running a generation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateError {
    /// A file (model, tokenizer, template) is missing or unreadable.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The tokenizer could not be loaded or used.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The schema did not compile.
    #[error("schema: {0}")]
    Schema(#[from] schema_compiler::CompileError),
    /// The chat template failed to render.
    #[error("chat template: {0}")]
    Template(String),
    /// The model failed.
    #[error("model: {0}")]
    Model(#[from] ModelError),
    /// The constraint failed (an empty mask, a token outside it).
    #[error("constraint: {0}")]
    Constraint(#[from] mask_kernel::MaskError),
    /// Sampling failed.
    #[error("sampling: {0}")]
    Sample(#[from] sampler::SampleError),
    /// The prompt does not fit in the context window.
    #[error("the prompt has {prompt} tokens but the context holds {context}")]
    PromptTooLong {
        /// Prompt tokens.
        prompt: usize,
        /// Context size.
        context: usize,
    },
    /// The model's vocabulary does not match the tokenizer's.
    #[error("the model has {model} logits but the tokenizer has {tokenizer} tokens ({detail})")]
    VocabMismatch {
        /// Logits length.
        model: usize,
        /// Tokenizer vocabulary size.
        tokenizer: usize,
        /// What differs.
        detail: String,
    },
    /// The request is not valid.
    #[error("invalid request: {0}")]
    Invalid(String),
}
