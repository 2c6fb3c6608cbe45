//! The crate's error type. Loading reports what is wrong with a model directory precisely
//! ([`Error`]); through [`generate::Model`] every error becomes a [`ModelError`].

use generate::ModelError;

/// An error of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file of the model directory is missing.
    #[error("{path}: no such file")]
    MissingFile {
        /// The file.
        path: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A JSON file does not parse.
    #[error("{path} is not valid JSON: {reason}")]
    Json {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// `config.json` names an architecture this runtime does not implement.
    #[error(
        "unsupported architecture `{model_type}` (supported model types: llama, mistral, qwen2, \
         qwen3, gemma3_text)"
    )]
    UnsupportedArch {
        /// The `model_type` of `config.json`.
        model_type: String,
    },
    /// A field of `config.json` is missing or has a value this runtime cannot use.
    #[error("config.json: `{field}` {reason}")]
    Config {
        /// The field.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A tensor the architecture needs is not in the weights.
    #[error("tensor `{name}` is missing from the weights")]
    MissingTensor {
        /// The tensor's name.
        name: String,
    },
    /// A tensor's shape or type does not fit the configuration.
    #[error("tensor `{name}`: expected {expected}, found {found}")]
    BadTensor {
        /// The tensor's name.
        name: String,
        /// What the configuration implies.
        expected: String,
        /// What the file holds.
        found: String,
    },
    /// An invalid load setting.
    #[error("invalid setting: {0}")]
    Setting(String),
    /// MLX reported an error.
    #[error("mlx: {0}")]
    Mlx(String),
}

impl From<mlx_rs::error::Exception> for Error {
    fn from(e: mlx_rs::error::Exception) -> Self {
        Error::Mlx(e.to_string())
    }
}

impl Error {
    /// As a [`ModelError::Load`] of the model at `path`.
    pub fn into_load_error(self, path: &str) -> ModelError {
        ModelError::Load {
            path: path.to_owned(),
            reason: self.to_string(),
        }
    }
}

impl From<Error> for ModelError {
    fn from(e: Error) -> Self {
        ModelError::Runtime(e.to_string())
    }
}
