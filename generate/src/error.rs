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
    /// A tool definition or a tool choice is malformed.
    #[error("invalid tool: {0}")]
    InvalidTool(String),
    /// The tool choice names a tool that is not among the tools.
    #[error("tool_choice names `{name}`, which is not among the tools ({available})")]
    UnknownTool {
        /// The name asked for.
        name: String,
        /// The names of the tools given, comma separated (or `none`).
        available: String,
    },
    /// A tool's parameters schema does not compile.
    #[error("tool `{tool}`: parameters schema: {source}")]
    ToolSchema {
        /// The tool.
        tool: String,
        /// The offending keyword, from the compiler's error.
        keyword: String,
        /// The JSON pointer of the schema object holding it, inside the tool's `parameters`.
        pointer: String,
        /// The compiler's error.
        source: Box<schema_compiler::CompileError>,
    },
    /// The generated text could not be read as tool calls (possible only when generation
    /// stopped inside a call, e.g. at `max_tokens` with `close_at_budget` off).
    #[error("cannot read tool calls from the output: {reason}")]
    ToolCallParse {
        /// What is wrong.
        reason: String,
        /// The generated text.
        text: String,
    },
    /// A trip of a tool loop took longer than its timeout.
    #[error("trip {trip} of the tool loop timed out after {limit_ms} ms")]
    Timeout {
        /// The trip (1-based).
        trip: usize,
        /// The limit.
        limit_ms: u64,
    },
}
