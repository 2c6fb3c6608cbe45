//! The runtimes `--runtime` chooses between: llama.cpp on a GGUF file, always built, and MLX on
//! a safetensors folder, built with the `mlx` feature. [`AnyModel`] is the plain enum the
//! commands hold, so the rest of the tool is written once for both.

use generate::{Model, ModelError};
use runtime_llama::LlamaModel;

/// Which runtime runs the model.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Runtime {
    /// llama.cpp, on a GGUF file.
    #[default]
    Llama,
    /// MLX, on a folder of safetensors weights with `config.json` (needs the `mlx` feature).
    Mlx,
}

/// The message for `--runtime mlx` in a build without the `mlx` feature.
#[cfg(not(feature = "mlx"))]
pub const WITHOUT_MLX: &str =
    "this stencil was built without MLX: build with --features mlx after cargo xtask mlx-setup";

/// A model on one of the runtimes.
pub enum AnyModel {
    /// llama.cpp.
    Llama(LlamaModel),
    /// MLX.
    #[cfg(feature = "mlx")]
    Mlx(runtime_mlx::MlxModel),
}

/// Runs `$body` with `$m` bound to the model inside `$model`, whichever runtime it is on.
macro_rules! on_model {
    ($model:expr, $m:ident => $body:expr) => {
        match $model {
            AnyModel::Llama($m) => $body,
            #[cfg(feature = "mlx")]
            AnyModel::Mlx($m) => $body,
        }
    };
}

impl Model for AnyModel {
    fn vocab_size(&self) -> usize {
        on_model!(self, m => m.vocab_size())
    }

    fn context_size(&self) -> usize {
        on_model!(self, m => m.context_size())
    }

    fn n_past(&self) -> usize {
        on_model!(self, m => m.n_past())
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        on_model!(self, m => m.forward(tokens))
    }

    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        on_model!(self, m => m.truncate(n_past))
    }

    fn reset(&mut self) -> Result<(), ModelError> {
        on_model!(self, m => m.reset())
    }

    fn logits_depend_only_on_tokens(&self) -> bool {
        on_model!(self, m => m.logits_depend_only_on_tokens())
    }

    fn describe(&self) -> String {
        on_model!(self, m => m.describe())
    }
}
