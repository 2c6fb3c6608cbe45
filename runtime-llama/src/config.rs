//! Load-time settings: context size, batch size, thread counts and llama.cpp's logging.
//!
//! [`LlamaConfig`] is a plain value with builder methods; [`LlamaLog`] chooses where llama.cpp's
//! own diagnostics go. The thread defaults follow measurements on a small shared machine (see
//! the crate documentation for the numbers).

/// Environment variable that overrides [`LlamaConfig::log`]: `1`, `on`, `true` or `tracing`
/// forward llama.cpp's messages to `tracing`; `0`, `off`, `false` or `quiet` silence them.
pub const LOG_ENV: &str = "STENCIL_LLAMA_LOG";

/// Default context size in positions (capped at the model's training context).
pub const DEFAULT_N_CTX: u32 = 4096;

/// Default number of tokens handed to llama.cpp per decode call during prompt evaluation.
pub const DEFAULT_N_BATCH: u32 = 512;

/// The default thread count for both decoding and prompt evaluation: half the logical CPUs
/// (one per physical core on machines with two hardware threads per core), at least 1 and at
/// most 8.
///
/// On the 2-core machine this crate is measured on that is one thread, which beats two by a
/// wide margin whenever anything else runs (see the crate documentation): llama.cpp's worker
/// threads spin-wait at every barrier, and when the second core is taken by another process
/// each barrier waits for a scheduler time slice.
#[must_use]
pub fn default_threads() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    u32::try_from((cpus / 2).clamp(1, 8)).unwrap_or(1)
}

/// Where llama.cpp's own log messages go.
///
/// llama.cpp reports every metadata key and tensor buffer while loading. The hook is
/// process-wide: each [`crate::LlamaModel::load`] applies its setting, so the most recent load
/// decides for every model in the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LlamaLog {
    /// Drop llama.cpp's messages (the default).
    #[default]
    Quiet,
    /// Forward them to `tracing` as events with target `llama-cpp-2` at llama.cpp's own levels.
    Tracing,
}

impl LlamaLog {
    /// The setting requested by the [`LOG_ENV`] environment variable, if it is set to a known
    /// value.
    #[must_use]
    pub fn from_env() -> Option<Self> {
        let value = std::env::var(LOG_ENV).ok()?;
        match value.trim().to_ascii_lowercase().as_str() {
            "1" | "on" | "true" | "tracing" => Some(Self::Tracing),
            "0" | "off" | "false" | "quiet" => Some(Self::Quiet),
            _ => None,
        }
    }
}

/// Settings for [`crate::LlamaModel::load`].
///
/// ```
/// use runtime_llama::LlamaConfig;
///
/// let config = LlamaConfig::default().with_n_ctx(2048).with_threads(1, 2);
/// assert_eq!(config.n_ctx, 2048);
/// assert_eq!((config.n_threads, config.n_threads_batch), (1, 2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LlamaConfig {
    /// Requested context size in positions, of each sequence; capped at the model's training
    /// context. Must be positive.
    pub n_ctx: u32,
    /// Sequences evaluated together, each with its own `n_ctx` positions of KV cache (see
    /// [`generate::BatchModel`]); 1 by default. Must be positive.
    pub n_seq: u32,
    /// Largest number of tokens evaluated in one llama.cpp decode call; longer prompts are split.
    /// Capped at the context size. Must be positive.
    pub n_batch: u32,
    /// Threads for single-token decoding; [`default_threads`] by default. Must be positive.
    pub n_threads: u32,
    /// Threads for multi-token (prompt) evaluation; [`default_threads`] by default. Must be
    /// positive.
    pub n_threads_batch: u32,
    /// Where llama.cpp's log messages go; the [`LOG_ENV`] environment variable overrides it.
    pub log: LlamaLog,
    /// Whether [`generate::Model::forward_with`] evaluates on a helper thread while the caller
    /// runs its `meanwhile` work (the next token's mask), rather than after it. On by default.
    pub overlap: bool,
}

impl Default for LlamaConfig {
    fn default() -> Self {
        Self {
            n_ctx: DEFAULT_N_CTX,
            n_seq: 1,
            n_batch: DEFAULT_N_BATCH,
            n_threads: default_threads(),
            n_threads_batch: default_threads(),
            log: LlamaLog::Quiet,
            overlap: true,
        }
    }
}

impl LlamaConfig {
    /// Sets the requested context size.
    #[must_use]
    pub fn with_n_ctx(mut self, n_ctx: u32) -> Self {
        self.n_ctx = n_ctx;
        self
    }

    /// Sets the number of sequences evaluated together.
    #[must_use]
    pub fn with_sequences(mut self, n_seq: u32) -> Self {
        self.n_seq = n_seq;
        self
    }

    /// Sets the prompt batch size.
    #[must_use]
    pub fn with_n_batch(mut self, n_batch: u32) -> Self {
        self.n_batch = n_batch;
        self
    }

    /// Sets the decode and prompt thread counts.
    #[must_use]
    pub fn with_threads(mut self, n_threads: u32, n_threads_batch: u32) -> Self {
        self.n_threads = n_threads;
        self.n_threads_batch = n_threads_batch;
        self
    }

    /// Sets whether evaluation overlaps the caller's `meanwhile` work (see
    /// [`LlamaConfig::overlap`]).
    #[must_use]
    pub fn with_overlap(mut self, overlap: bool) -> Self {
        self.overlap = overlap;
        self
    }

    /// Sets where llama.cpp's log messages go.
    #[must_use]
    pub fn with_log(mut self, log: LlamaLog) -> Self {
        self.log = log;
        self
    }

    /// The log setting in force: the environment variable if set, else [`LlamaConfig::log`].
    #[must_use]
    pub fn effective_log(&self) -> LlamaLog {
        LlamaLog::from_env().unwrap_or(self.log)
    }

    /// Checks the settings, naming the first invalid one.
    pub(crate) fn validate(&self) -> Result<(), String> {
        let fields = [
            ("n_ctx", self.n_ctx),
            ("n_seq", self.n_seq),
            ("n_batch", self.n_batch),
            ("n_threads", self.n_threads),
            ("n_threads_batch", self.n_threads_batch),
        ];
        for (name, value) in fields {
            if value == 0 {
                return Err(format!("{name} must be positive"));
            }
            if i32::try_from(value).is_err() {
                return Err(format!(
                    "{name} = {value} exceeds llama.cpp's limit of {}",
                    i32::MAX
                ));
            }
        }
        if u64::from(self.n_ctx) * u64::from(self.n_seq) > i32::MAX as u64 {
            return Err(format!(
                "n_ctx × n_seq = {} × {} exceeds llama.cpp's limit of {}",
                self.n_ctx,
                self.n_seq,
                i32::MAX
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_huge_values_are_rejected() {
        assert!(LlamaConfig::default().validate().is_ok());
        let err = LlamaConfig::default().with_n_ctx(0).validate().unwrap_err();
        assert!(err.contains("n_ctx"), "{err}");
        let err = LlamaConfig::default()
            .with_threads(1, 0)
            .validate()
            .unwrap_err();
        assert!(err.contains("n_threads_batch"), "{err}");
        let err = LlamaConfig::default()
            .with_n_batch(u32::MAX)
            .validate()
            .unwrap_err();
        assert!(err.contains("n_batch"), "{err}");
    }

    #[test]
    fn default_threads_are_bounded() {
        let threads = default_threads();
        assert!((1..=8).contains(&threads), "{threads}");
        let config = LlamaConfig::default();
        assert_eq!(
            (config.n_threads, config.n_threads_batch),
            (threads, threads)
        );
    }
}
