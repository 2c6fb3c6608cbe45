//! [`MlxModel`]: a model directory loaded into MLX, behind [`generate::Model`].

use std::path::{Path, PathBuf};

use generate::{Model, ModelError};

use crate::config::{MlxConfig, ModelConfig};
use crate::error::Error;
use crate::transformer::{LayerCache, Transformer};
use crate::weights::Weights;

/// The configuration file of a model directory.
pub const CONFIG_FILE: &str = "config.json";

/// Tokens evaluated per MLX graph while a prompt is evaluated (bounds the attention scores'
/// memory; only the last chunk's logits are computed).
const PROMPT_CHUNK: usize = 512;

/// A model directory loaded into MLX: the decoder and its KV cache.
///
/// `Send`, not `Sync`.
pub struct MlxModel {
    net: Transformer,
    cache: Vec<LayerCache>,
    n_past: usize,
    n_ctx: usize,
    logits: Vec<f32>,
    dir: PathBuf,
}

impl std::fmt::Debug for MlxModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MlxModel")
            .field("dir", &self.dir)
            .field("arch", &self.net.config().arch)
            .field("n_past", &self.n_past)
            .field("n_ctx", &self.n_ctx)
            .finish_non_exhaustive()
    }
}

impl MlxModel {
    /// Loads the model in `dir`: `config.json` and the safetensors weights.
    pub fn load(dir: impl AsRef<Path>, settings: MlxConfig) -> Result<MlxModel, Error> {
        let dir = dir.as_ref();
        let _span = tracing::info_span!("mlx_load", dir = %dir.display()).entered();
        let config_path = dir.join(CONFIG_FILE);
        let display = config_path.display().to_string();
        if !config_path.is_file() {
            return Err(Error::MissingFile { path: display });
        }
        let text = std::fs::read_to_string(&config_path).map_err(|e| Error::Io {
            path: display.clone(),
            reason: e.to_string(),
        })?;
        let config = ModelConfig::parse(&text, &display)?;
        if settings.n_ctx == 0 {
            return Err(Error::Setting("the context size must be positive".into()));
        }
        let n_ctx = config
            .max_position_embeddings
            .map_or(settings.n_ctx, |max| settings.n_ctx.min(max));
        let dtype = settings.compute.dtype();
        let weights = Weights::load(dir, dtype)?;
        let net = Transformer::build(config, weights, dtype)?;
        let cache = net.new_cache();
        let vocab = net.config().vocab_size;
        tracing::info!(
            model_type = %net.config().model_type,
            layers = net.config().num_layers,
            n_ctx,
            "loaded"
        );
        Ok(MlxModel {
            net,
            cache,
            n_past: 0,
            n_ctx,
            logits: vec![0.0; vocab],
            dir: dir.to_path_buf(),
        })
    }

    /// The model's configuration.
    pub fn config(&self) -> &ModelConfig {
        self.net.config()
    }

    /// The directory it was loaded from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn check(&self, tokens: &[u32]) -> Result<(), ModelError> {
        if tokens.is_empty() {
            return Err(ModelError::Runtime(
                "forward needs at least one token".into(),
            ));
        }
        let needed = self.n_past + tokens.len();
        if needed > self.n_ctx {
            return Err(ModelError::ContextOverflow {
                needed,
                capacity: self.n_ctx,
            });
        }
        let vocab_size = self.logits.len();
        if let Some(&id) = tokens.iter().find(|&&t| t as usize >= vocab_size) {
            return Err(ModelError::BadToken { id, vocab_size });
        }
        Ok(())
    }

    fn run(&mut self, tokens: &[u32]) -> Result<(), Error> {
        let mut offset = self.n_past;
        let chunks = tokens.len().div_ceil(PROMPT_CHUNK);
        for (i, chunk) in tokens.chunks(PROMPT_CHUNK).enumerate() {
            let logits = self
                .net
                .forward(chunk, offset, &mut self.cache, self.n_ctx)?;
            let mut outputs: Vec<&mlx_rs::Array> =
                self.cache.iter().flat_map(LayerCache::arrays).collect();
            let last = i + 1 == chunks;
            if last {
                outputs.push(&logits);
            }
            mlx_rs::transforms::eval(outputs)?;
            if last {
                let values = logits
                    .try_as_slice::<f32>()
                    .map_err(|e| Error::Mlx(format!("reading the logits: {e}")))?;
                if values.len() != self.logits.len() {
                    return Err(Error::Mlx(format!(
                        "{} logits for a vocabulary of {}",
                        values.len(),
                        self.logits.len()
                    )));
                }
                self.logits.copy_from_slice(values);
            }
            offset += chunk.len();
        }
        Ok(())
    }
}

impl Model for MlxModel {
    fn vocab_size(&self) -> usize {
        self.logits.len()
    }

    fn context_size(&self) -> usize {
        self.n_ctx
    }

    fn n_past(&self) -> usize {
        self.n_past
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.check(tokens)?;
        // On failure `n_past` stays: positions past it are ignored, so the cache is as before.
        self.run(tokens)?;
        self.n_past += tokens.len();
        Ok(&self.logits)
    }

    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        self.n_past = self.n_past.min(n_past);
        Ok(())
    }

    fn describe(&self) -> String {
        let c = self.net.config();
        let weights = match self.net.quantization() {
            Some(q) => format!("{}-bit (group {})", q.bits, q.group_size),
            None => "unquantized".to_owned(),
        };
        format!(
            "{} ({} layers, hidden {}, {} heads / {} kv), {weights}, MLX on {}",
            c.model_type,
            c.num_layers,
            c.hidden_size,
            c.num_heads,
            c.num_kv_heads,
            if cfg!(target_os = "macos") {
                "the default device"
            } else {
                "CPU"
            }
        )
    }
}
