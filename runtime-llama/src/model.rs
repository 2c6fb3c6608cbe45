//! [`LlamaModel`]: a GGUF model and its llama.cpp context behind [`generate::Model`].
//!
//! The model weights (memory-mapped) and the context that holds the KV cache live together in
//! one value; the decode batch and the logits buffer are allocated once at load time and reused
//! by every [`Model::forward`] call.
//!
//! Loaded with [`LlamaConfig::n_seq`] sequences, the same value is a [`BatchModel`]: each
//! sequence has its own KV cells (`n_ctx` of them), and one `llama_decode` call evaluates the
//! tokens of every sequence in a step.

use std::fmt;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use generate::{BatchModel, Model, ModelError, SeqStep};
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel as RawModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;

use generate::Tokenizer;
use mask_kernel::Kernel;
use vocab_index::{TrieKind, Vocabulary};

use crate::config::LlamaConfig;
use crate::info::ModelInfo;
use crate::tokenizer::VocabParts;
use crate::vocab::GgufVocab;
use crate::{backend, kept, tokenizer};

/// The sequence [`Model`]'s methods use in the KV cache.
const SEQ: i32 = 0;

self_cell::self_cell!(
    /// The loaded weights and the context that borrows them.
    struct Engine {
        owner: Arc<RawModel>,
        #[covariant]
        dependent: LlamaContext,
    }
);

/// A GGUF model evaluated by llama.cpp on the CPU, with its own KV cache.
///
/// Implements [`generate::Model`]. The type is `Send` (move it to a worker thread) but not
/// `Sync`: evaluation mutates the context. Several models may be loaded in one process.
pub struct LlamaModel {
    engine: Engine,
    batch: LlamaBatch<'static>,
    logits: Vec<f32>,
    n_past: usize,
    /// Positions of each sequence.
    n_ctx: usize,
    n_seq: usize,
    n_batch: usize,
    info: ModelInfo,
    config: LlamaConfig,
    path: PathBuf,
    /// With [`LlamaConfig::overlap`]: the one thread every evaluation of [`Model`]'s methods
    /// runs on. A thread of its own lets the caller work meanwhile; always the same one,
    /// because llama.cpp's OpenMP team belongs to the thread that calls it, and a new caller
    /// would start a new team.
    eval_thread: Option<Arc<rayon::ThreadPool>>,
    /// See [`Model::last_overlap_wait`].
    overlap_wait: Option<Duration>,
}

const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<LlamaModel>();
};

impl LlamaModel {
    /// Loads a GGUF file and creates a context for it.
    ///
    /// The context size of each of the `config.n_seq` sequences is `config.n_ctx` capped at
    /// the model's training context; the batch size is capped at that.
    ///
    /// # Errors
    ///
    /// [`ModelError::Load`] when the settings are invalid, the file is missing or unreadable,
    /// llama.cpp rejects it, or the context cannot be created.
    pub fn load(path: impl AsRef<Path>, config: LlamaConfig) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let load_error = |reason: String| ModelError::Load {
            path: path.display().to_string(),
            reason,
        };
        config.validate().map_err(load_error)?;
        match std::fs::metadata(path) {
            Ok(meta) if meta.is_file() => {}
            Ok(_) => return Err(load_error("not a file".to_owned())),
            Err(err) => return Err(load_error(err.to_string())),
        }
        let _span = tracing::info_span!("llama_load", path = %path.display()).entered();

        let backend = backend::lock(config.effective_log()).map_err(load_error)?;
        let raw = RawModel::load_from_file(&backend, path, &LlamaModelParams::default()).map_err(
            |err| load_error(format!("llama.cpp cannot load it as a GGUF model: {err}")),
        )?;

        let n_vocab = usize::try_from(raw.n_vocab())
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| load_error("the model has no vocabulary".to_owned()))?;
        let n_ctx_train = raw.n_ctx_train();
        let n_ctx = if n_ctx_train == 0 {
            config.n_ctx
        } else {
            config.n_ctx.min(n_ctx_train)
        };
        let n_batch = config.n_batch.min(n_ctx);
        let info = read_info(&raw, n_vocab);
        // `validate` bounded n_ctx × n_seq by i32::MAX.
        let n_ctx_all = n_ctx.saturating_mul(config.n_seq);

        // `validate` bounded every value by i32::MAX, so these conversions cannot fail.
        let as_i32 = |value: u32| i32::try_from(value).unwrap_or(i32::MAX);
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx_all))
            // Each sequence its own cells: one cannot crowd out another.
            .with_n_seq_max(config.n_seq)
            .with_kv_unified(false)
            .with_n_batch(n_batch)
            .with_n_ubatch(n_batch)
            .with_n_threads(as_i32(config.n_threads))
            .with_n_threads_batch(as_i32(config.n_threads_batch))
            // Keep every position of sliding-window layers so `truncate` can roll back to any
            // point, not only within the window.
            .with_swa_full(true)
            .with_no_perf(true);
        let engine = Engine::try_new(Arc::new(raw), |raw| raw.new_context(&backend, params))
            .map_err(|err| load_error(format!("cannot create a llama.cpp context: {err}")))?;
        drop(backend);

        let n_seq = usize::try_from(config.n_seq)
            .map_err(|_| load_error("sequence count does not fit in memory".to_owned()))?;
        let n_ctx = usize::try_from(engine.borrow_dependent().n_ctx())
            .map_err(|_| load_error("context size does not fit in memory".to_owned()))?
            / n_seq;
        let n_batch = usize::try_from(n_batch)
            .map_err(|_| load_error("batch size does not fit in memory".to_owned()))?;
        let eval_thread = if config.overlap {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "llama-eval".to_owned())
                .build()
                .map_err(|err| load_error(format!("cannot start the evaluation thread: {err}")))?;
            Some(Arc::new(pool))
        } else {
            None
        };
        tracing::debug!(%info, n_ctx, n_seq, n_batch, "loaded model");
        Ok(Self {
            engine,
            batch: LlamaBatch::new(n_batch, 1),
            logits: vec![0.0; n_vocab],
            n_past: 0,
            n_ctx,
            n_seq,
            n_batch,
            info,
            config,
            path: path.to_path_buf(),
            eval_thread,
            overlap_wait: None,
        })
    }

    /// What the GGUF metadata says about the model.
    #[must_use]
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The model's own vocabulary (tokenizer facts from the GGUF file).
    #[must_use]
    pub fn vocab(&self) -> GgufVocab<'_> {
        GgufVocab::new(self.engine.borrow_owner().vocab(), self.info.n_vocab)
    }

    /// The tokenizer the GGUF file carries, sharing the vocabulary llama.cpp loaded with the
    /// weights (no second read of the file, unlike [`crate::load_tokenizer`]).
    ///
    /// # Errors
    ///
    /// [`ModelError::Load`] when the vocabulary or chat template is malformed.
    pub fn tokenizer(&self) -> Result<generate::Tokenizer, ModelError> {
        crate::tokenizer::tokenizer_of(self.engine.borrow_owner().clone(), &self.path)
    }

    /// Loads a GGUF file with its own tokenizer (as [`LlamaModel::tokenizer`]) and the mask
    /// kernel of that tokenizer: everything decoding under a schema needs. The kernel's tables
    /// are kept in `tables` between processes (see [`Kernel::cached`]); with `None` they are
    /// built in memory.
    ///
    /// The first start-up keeps the file's vocabulary in `tables` too. Later ones index that
    /// copy and read the kernel's tables on a second thread while llama.cpp loads the weights,
    /// then compare the copy, token by token, with the vocabulary llama.cpp loaded, and use it
    /// only when the two are the same: a changed or damaged copy costs the time it would have
    /// saved, never a wrong mask.
    ///
    /// # Errors
    ///
    /// As [`LlamaModel::load`] and [`LlamaModel::tokenizer`], and [`ModelError::Load`] when
    /// the kernel's tables cannot be built.
    pub fn load_with_kernel(
        path: impl AsRef<Path>,
        config: LlamaConfig,
        tables: Option<&Path>,
    ) -> Result<(LlamaModel, Tokenizer, Arc<Kernel>), ModelError> {
        let path = path.as_ref();
        let load_error = |reason: String| ModelError::Load {
            path: path.display().to_string(),
            reason,
        };
        let kept_at = tables.and_then(|dir| Some((dir, kept::path_for(dir, path)?)));
        let (model, early) = std::thread::scope(|s| {
            let side = kept_at.as_ref().map(|(dir, kept_at)| {
                s.spawn(move || {
                    let vocab = Arc::new(Vocabulary::read_kept(kept_at)?);
                    // Only read here: building tables for a copy that may turn out stale
                    // would hold up the start-up.
                    let kernel = Kernel::read_cached(vocab.clone(), TrieKind::Flat, dir);
                    Some((vocab, kernel))
                })
            });
            let model = LlamaModel::load(path, config);
            (model, side.and_then(|side| side.join().ok().flatten()))
        });
        let model = model?;
        let raw = model.engine.borrow_owner().clone();
        let parts = VocabParts::read(&raw.vocab()).map_err(load_error)?;
        let (vocab, kernel) = match early {
            Some((vocab, kernel)) if parts.matches(&vocab) => (vocab, kernel),
            _ => {
                let vocab = Arc::new(parts.vocabulary().map_err(load_error)?);
                if let Some((_, kept_at)) = &kept_at {
                    vocab.keep_at(kept_at);
                }
                (vocab, None)
            }
        };
        let kernel = match (kernel, tables) {
            (Some(kernel), _) => kernel,
            (None, Some(dir)) => Kernel::cached(vocab.clone(), TrieKind::Flat, dir)
                .map(|(kernel, _)| kernel)
                .map_err(|e| load_error(format!("its mask kernel: {e}")))?,
            (None, None) => Kernel::new(vocab.clone(), TrieKind::Flat)
                .map_err(|e| load_error(format!("its mask kernel: {e}")))?,
        };
        let tokenizer = tokenizer::tokenizer_with(raw, path, vocab)?;
        Ok((model, tokenizer, Arc::new(kernel)))
    }

    /// The settings the model was loaded with.
    #[must_use]
    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    /// The GGUF file the model was loaded from.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Largest number of tokens handed to llama.cpp per decode call.
    #[must_use]
    pub fn batch_size(&self) -> usize {
        self.n_batch
    }

    /// Checks a forward call before anything is evaluated.
    fn check(&self, tokens: &[u32]) -> Result<(), ModelError> {
        if tokens.is_empty() {
            return Err(ModelError::Runtime(
                "forward needs at least one token".to_owned(),
            ));
        }
        let needed = self.n_past.saturating_add(tokens.len());
        if needed > self.n_ctx {
            return Err(ModelError::ContextOverflow {
                needed,
                capacity: self.n_ctx,
            });
        }
        let n_vocab = self.info.n_vocab;
        if let Some(&id) = tokens.iter().find(|&&id| !in_vocab(id, n_vocab)) {
            return Err(ModelError::BadToken {
                id,
                vocab_size: n_vocab,
            });
        }
        Ok(())
    }
}

impl LlamaModel {
    /// Evaluates `tokens` after the cached positions into the logits buffer, on the calling
    /// thread.
    fn evaluate(&mut self, tokens: &[u32]) -> Result<(), ModelError> {
        self.check(tokens)?;
        let start = self.n_past;
        let (batch, logits, n_batch) = (&mut self.batch, &mut self.logits, self.n_batch);
        self.engine.with_dependent_mut(|_, ctx| {
            let result = evaluate(ctx, batch, tokens, start, n_batch, logits);
            if result.is_err() {
                // Drop whatever part of the call reached the cache, so that the cache still
                // holds exactly the first `start` positions. Failing to do so leaves no worse
                // state than the evaluation error already reported.
                let _ = ctx.kv_cache_seq_rm(SEQ, u32::try_from(start).ok(), None);
            }
            result
        })?;
        self.n_past = start + tokens.len();
        Ok(())
    }
}

/// Whether `id` indexes a vocabulary of `n_vocab` tokens.
pub(crate) fn in_vocab(id: u32, n_vocab: usize) -> bool {
    usize::try_from(id).is_ok_and(|id| id < n_vocab)
}

impl Model for LlamaModel {
    fn vocab_size(&self) -> usize {
        self.info.n_vocab
    }

    fn context_size(&self) -> usize {
        self.n_ctx
    }

    fn n_past(&self) -> usize {
        self.n_past
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.overlap_wait = None;
        match self.eval_thread.clone() {
            Some(thread) => thread.install(|| self.evaluate(tokens))?,
            None => self.evaluate(tokens)?,
        }
        Ok(&self.logits)
    }

    /// With [`LlamaConfig::overlap`], llama.cpp evaluates the tokens on the model's evaluation
    /// thread while this one runs `meanwhile`; the wait for `meanwhile` after the evaluation is
    /// kept for [`Model::last_overlap_wait`].
    fn forward_with(
        &mut self,
        tokens: &[u32],
        meanwhile: &mut dyn FnMut(),
    ) -> Result<&[f32], ModelError> {
        self.overlap_wait = None;
        let Some(thread) = self.eval_thread.clone() else {
            meanwhile();
            return self.forward(tokens);
        };
        let mut evaluated = None;
        let returned = thread.in_place_scope(|scope| {
            scope.spawn(|_| evaluated = Some((self.evaluate(tokens), Instant::now())));
            meanwhile();
            Instant::now()
        });
        // The scope returns once the spawned evaluation has (a panic in it resumes here).
        let (result, done) = evaluated.expect("the scope ran the evaluation");
        result?;
        self.overlap_wait = Some(returned.saturating_duration_since(done));
        Ok(&self.logits)
    }

    fn last_overlap_wait(&self) -> Option<Duration> {
        self.overlap_wait
    }

    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        if n_past >= self.n_past {
            return Ok(());
        }
        // n_past < self.n_past <= n_ctx, which llama.cpp holds in a u32.
        let from = u32::try_from(n_past)
            .map_err(|_| ModelError::Runtime(format!("position {n_past} exceeds u32")))?;
        self.engine
            .with_dependent_mut(|_, ctx| ctx.kv_cache_seq_rm(SEQ, Some(from), None))
            .map_err(|err| {
                ModelError::Runtime(format!("cannot truncate the KV cache to {n_past}: {err}"))
            })?;
        self.n_past = n_past;
        Ok(())
    }

    fn describe(&self) -> String {
        format!("{}; context {}", self.info, self.n_ctx)
    }
}

impl BatchModel for LlamaModel {
    fn vocab_size(&self) -> usize {
        self.info.n_vocab
    }

    fn context_size(&self) -> usize {
        self.n_ctx
    }

    fn max_sequences(&self) -> usize {
        self.n_seq
    }

    fn max_batch_tokens(&self) -> usize {
        self.n_batch
    }

    fn decode(&mut self, steps: &[SeqStep<'_>], logits: &mut [Vec<f32>]) -> Result<(), ModelError> {
        let runtime = ModelError::Runtime;
        let total: usize = steps.iter().map(|s| s.tokens.len()).sum();
        if total > self.n_batch {
            return Err(runtime(format!(
                "{total} tokens in one step; the batch holds {}",
                self.n_batch
            )));
        }
        for s in steps {
            if s.seq >= self.n_seq || s.tokens.is_empty() {
                return Err(runtime(format!(
                    "a step for sequence {} of {} with {} tokens",
                    s.seq,
                    self.n_seq,
                    s.tokens.len()
                )));
            }
            let needed = s.keep.saturating_add(s.tokens.len());
            if needed > self.n_ctx {
                return Err(ModelError::ContextOverflow {
                    needed,
                    capacity: self.n_ctx,
                });
            }
            if let Some(&id) = s
                .tokens
                .iter()
                .find(|&&id| !in_vocab(id, self.info.n_vocab))
            {
                return Err(ModelError::BadToken {
                    id,
                    vocab_size: self.info.n_vocab,
                });
            }
        }
        if steps.iter().any(|s| s.seq == 0) {
            // Sequence 0 is also the one `Model`'s methods track: it no longer holds what they
            // think.
            self.n_past = 0;
        }
        let batch = &mut self.batch;
        self.engine.with_dependent_mut(|_, ctx| {
            let result = evaluate_steps(ctx, batch, steps, logits);
            if result.is_err() {
                // Leave each sequence with the positions it kept, as the trait asks.
                for s in steps {
                    let _ = ctx.kv_cache_seq_rm(s.seq as i32, u32::try_from(s.keep).ok(), None);
                }
            }
            result
        })
    }

    fn describe(&self) -> String {
        format!(
            "{}; {} sequences of context {}",
            self.info, self.n_seq, self.n_ctx
        )
    }
}

/// Evaluates one batched step: drops each sequence's positions from its `keep`, appends its
/// tokens, decodes them all in one call and copies out the logits asked for.
fn evaluate_steps(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'static>,
    steps: &[SeqStep<'_>],
    logits: &mut [Vec<f32>],
) -> Result<(), ModelError> {
    let runtime = ModelError::Runtime;
    batch.clear();
    // For each step that wants logits, the index of its last token in the batch.
    let mut last = Vec::with_capacity(steps.len());
    for s in steps {
        // Sequence ids and positions were checked against n_seq and n_ctx, which llama.cpp
        // holds in an i32.
        let seq = s.seq as i32;
        let keep = u32::try_from(s.keep).map_err(|_| runtime("position exceeds u32".into()))?;
        ctx.kv_cache_seq_rm(seq, Some(keep), None)
            .map_err(|err| runtime(format!("cannot truncate sequence {seq}: {err}")))?;
        for (i, &id) in s.tokens.iter().enumerate() {
            let token =
                i32::try_from(id).map_err(|_| runtime(format!("token id {id} exceeds i32")))?;
            let pos = i32::try_from(s.keep + i)
                .map_err(|_| runtime(format!("position {} exceeds i32", s.keep + i)))?;
            let wanted = s.logits && i + 1 == s.tokens.len();
            batch
                .add(LlamaToken::new(token), pos, &[seq], wanted)
                .map_err(|err| runtime(err.to_string()))?;
        }
        last.push(s.logits.then(|| batch.n_tokens() - 1));
    }
    ctx.decode(batch)
        .map_err(|err| runtime(format!("llama.cpp decode failed: {err}")))?;
    for (index, out) in last.into_iter().zip(logits.iter_mut()) {
        if let Some(index) = index {
            out.clear();
            out.extend_from_slice(ctx.get_logits_ith(index));
        }
    }
    Ok(())
}

/// Evaluates `tokens` at positions `start..` in chunks of `n_batch`, requesting logits only
/// for the last token, and copies them into `logits`.
fn evaluate(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'static>,
    tokens: &[u32],
    start: usize,
    n_batch: usize,
    logits: &mut [f32],
) -> Result<(), ModelError> {
    let runtime = ModelError::Runtime;
    let last = tokens.len() - 1;
    for (chunk_index, chunk) in tokens.chunks(n_batch).enumerate() {
        batch.clear();
        let offset = chunk_index * n_batch;
        for (i, &id) in chunk.iter().enumerate() {
            let index = offset + i;
            // Ids were checked against the vocabulary and positions against the context size,
            // both of which llama.cpp holds in an i32.
            let token =
                i32::try_from(id).map_err(|_| runtime(format!("token id {id} exceeds i32")))?;
            let pos = i32::try_from(start + index)
                .map_err(|_| runtime(format!("position {} exceeds i32", start + index)))?;
            batch
                .add(LlamaToken::new(token), pos, &[SEQ], index == last)
                .map_err(|err| runtime(err.to_string()))?;
        }
        ctx.decode(batch)
            .map_err(|err| runtime(format!("llama.cpp decode failed: {err}")))?;
    }
    let out = ctx.get_logits_ith(batch.n_tokens() - 1);
    if out.len() != logits.len() {
        return Err(runtime(format!(
            "llama.cpp returned {} logits for a vocabulary of {}",
            out.len(),
            logits.len()
        )));
    }
    logits.copy_from_slice(out);
    Ok(())
}

/// Reads [`ModelInfo`] from the GGUF metadata and the loaded tensors.
fn read_info(raw: &RawModel, n_vocab: usize) -> ModelInfo {
    let meta = |key: &str| raw.meta_val_str(key).ok().filter(|value| !value.is_empty());
    ModelInfo {
        architecture: meta("general.architecture").unwrap_or_else(|| "unknown".to_owned()),
        name: meta("general.name"),
        n_params: raw.n_params(),
        size_bytes: raw.size(),
        file_type: meta("general.file_type").and_then(|value| value.trim().parse().ok()),
        n_vocab,
        n_ctx_train: usize::try_from(raw.n_ctx_train()).unwrap_or(usize::MAX),
        n_layer: raw.n_layer(),
        n_embd: u32::try_from(raw.n_embd()).unwrap_or(0),
    }
}

impl fmt::Debug for LlamaModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlamaModel")
            .field("path", &self.path)
            .field("info", &self.info)
            .field("n_ctx", &self.n_ctx)
            .field("n_seq", &self.n_seq)
            .field("n_batch", &self.n_batch)
            .field("n_past", &self.n_past)
            .finish_non_exhaustive()
    }
}
