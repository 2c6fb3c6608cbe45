//! The process-wide llama.cpp backend and its log hook.
//!
//! llama.cpp must be initialised once per process, before the first model is loaded. The
//! handle lives in a `OnceLock` behind a mutex: loads and context creation run one at a time
//! (llama.cpp's context creation writes to the model it is given), and the log hook, also
//! process-wide, is set while the lock is held.

use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::{LogOptions, send_logs_to_tracing};

use crate::config::LlamaLog;

static BACKEND: OnceLock<Result<Mutex<LlamaBackend>, String>> = OnceLock::new();

/// Locks the process-wide backend, initialising it on first use, and points llama.cpp's log
/// output where `log` says.
pub(crate) fn lock(log: LlamaLog) -> Result<MutexGuard<'static, LlamaBackend>, String> {
    let backend = BACKEND.get_or_init(|| {
        LlamaBackend::init().map(Mutex::new).map_err(|err| {
            format!(
                "cannot initialise the llama.cpp backend ({err}); was it initialised elsewhere?"
            )
        })
    });
    let mut guard = backend
        .as_ref()
        .map_err(Clone::clone)?
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    match log {
        LlamaLog::Quiet => guard.void_logs(),
        LlamaLog::Tracing => send_logs_to_tracing(LogOptions::default().with_logs_enabled(true)),
    }
    Ok(guard)
}
