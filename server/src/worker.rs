//! The model thread: one [`Generator`] owned by one OS thread, fed by a bounded queue.
//!
//! Model calls block (llama.cpp runs on the CPU for the whole decode), so they never run on
//! the async runtime. Handlers `try_send` a [`Job`] into a `tokio::sync::mpsc` channel of
//! fixed capacity (a full queue is a 503 at once, never a wait); the thread takes jobs one at
//! a time and answers through the job's own unbounded channel of [`Event`]s: `Started` once
//! the prompt is rendered and the schema compiled (so a bad schema is still a plain 400 even
//! for a streaming request), `Delta`s of text for streams, then `Done`.
//!
//! Cancellation is cooperative: the text callback returns `false` when the job's event
//! receiver is gone (the client disconnected and its handler future or response stream was
//! dropped) or when the server's grace period for shutting down is over. A job whose client
//! left while it waited in the queue is skipped without touching the model.

use std::fmt::Display;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use generate::{
    GenerateError, GenerateOptions, Generator, Model, Output, Prompt, Request, SchemaInPrompt,
    StopReason, Timing,
};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::{ApiError, ServerError};
use crate::openai::{Answer, Plan, Usage};

/// A request for the model thread.
pub(crate) enum Job {
    /// Generate.
    Generate(Box<Work>),
    /// Leave the loop (sent once the HTTP server has drained).
    Stop,
}

/// One chat completion to run.
pub(crate) struct Work {
    pub plan: Plan,
    pub events: mpsc::UnboundedSender<Event>,
    pub enqueued: Instant,
}

/// What the model thread tells a handler.
#[derive(Debug)]
pub(crate) enum Event {
    /// The prompt is rendered and the schema compiled: generation starts.
    Started,
    /// Text (streaming requests without tools only).
    Delta(String),
    /// The end.
    Done(Result<Finished, ApiError>),
}

/// A finished generation.
#[derive(Debug)]
pub(crate) struct Finished {
    pub answer: Answer,
    pub finish_reason: &'static str,
    pub usage: Usage,
    pub timing: Timing,
    pub queue_ms: f64,
    pub schema_cache_hit: Option<bool>,
    /// The text was sent as `Delta`s while it was generated (false for tool requests).
    pub text_streamed: bool,
}

/// Counters shared by the model thread and the handlers (shown by `/health`).
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Set when the shutdown grace period is over: cancel what runs, refuse what waits.
    pub cancel_all: AtomicBool,
    /// Set when shutting down (new requests are refused).
    pub draining: AtomicBool,
    /// Cleared if the model thread stopped (a panic).
    pub alive: AtomicBool,
    pub completed: AtomicU64,
    pub cancelled: AtomicU64,
    pub failed: AtomicU64,
    pub rejected: AtomicU64,
    pub abandoned: AtomicU64,
    pub schema_cache_hits: AtomicU64,
    pub schema_cache_misses: AtomicU64,
}

impl Shared {
    pub fn stats(&self) -> Value {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        json!({
            "completed": g(&self.completed),
            "cancelled": g(&self.cancelled),
            "failed": g(&self.failed),
            "rejected_queue_full": g(&self.rejected),
            "abandoned_in_queue": g(&self.abandoned),
            "schema_cache": {"hits": g(&self.schema_cache_hits),
                "misses": g(&self.schema_cache_misses)},
        })
    }
}

/// What the thread reports once the model is loaded.
pub(crate) struct Loaded {
    pub context_size: usize,
    pub describe: String,
}

/// Starts the model thread: `load` runs on it (so the model need not be `Send`), and this
/// returns once the model is loaded, or with the loading error.
pub(crate) fn spawn<M, F, E>(
    load: F,
    queue: usize,
    shared: Arc<Shared>,
) -> Result<(mpsc::Sender<Job>, JoinHandle<()>, Loaded), ServerError>
where
    M: Model + 'static,
    F: FnOnce() -> Result<Generator<M>, E> + Send + 'static,
    E: Display,
{
    let (tx, rx) = mpsc::channel(queue.max(1));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("stencil-model".into())
        .spawn(move || {
            let generator = match load() {
                Ok(g) => g,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return;
                }
            };
            shared.alive.store(true, Ordering::SeqCst);
            let _ = ready_tx.send(Ok(Loaded {
                context_size: generator.model().context_size(),
                describe: generator.model().describe(),
            }));
            run(generator, rx, &shared);
            shared.alive.store(false, Ordering::SeqCst);
        })
        .map_err(|e| ServerError::Worker(e.to_string()))?;
    match ready_rx.recv() {
        Ok(Ok(loaded)) => Ok((tx, handle, loaded)),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(ServerError::Load(e))
        }
        Err(_) => {
            let _ = handle.join();
            Err(ServerError::Load(
                "the model thread stopped while loading".into(),
            ))
        }
    }
}

fn run<M: Model>(mut generator: Generator<M>, mut rx: mpsc::Receiver<Job>, shared: &Shared) {
    while let Some(job) = rx.blocking_recv() {
        let work = match job {
            Job::Stop => break,
            Job::Generate(w) => w,
        };
        if work.events.is_closed() {
            shared.abandoned.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        if shared.cancel_all.load(Ordering::Relaxed) {
            let _ = work.events.send(Event::Done(Err(shutting_down())));
            continue;
        }
        let result = catch_unwind(AssertUnwindSafe(|| process(&mut generator, &work, shared)));
        match result {
            Ok(r) => {
                match &r {
                    Ok(_) => shared.completed.fetch_add(1, Ordering::Relaxed),
                    Err(_) => shared.failed.fetch_add(1, Ordering::Relaxed),
                };
                let _ = work.events.send(Event::Done(r));
            }
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown panic");
                tracing::error!(panic = what, "the model thread panicked; it stops");
                shared.failed.fetch_add(1, Ordering::Relaxed);
                let _ = work.events.send(Event::Done(Err(ApiError::internal(
                    "the model failed while generating; the server must be restarted",
                ))));
                // The model's cache may no longer match the generator's view of it.
                break;
            }
        }
    }
}

pub(crate) fn shutting_down() -> ApiError {
    ApiError::unavailable("the server is shutting down", "shutting_down")
}

/// Holds back streamed text that may be the start of a stop string, so a stream never shows
/// text the final answer cuts off.
struct StopGuard<'a> {
    stop: &'a [String],
    text: String,
    sent: usize,
}

impl StopGuard<'_> {
    /// Adds a piece; returns what can be sent now.
    fn push(&mut self, piece: &str) -> Option<String> {
        self.text.push_str(piece);
        let mut safe = self.text.len();
        for s in self.stop {
            if let Some(at) = self.text[self.sent..].find(s.as_str()) {
                safe = safe.min(self.sent + at);
            }
            // The longest suffix that is a proper prefix of the stop string.
            for k in (1..s.len()).rev() {
                if self.text.len() >= k
                    && self.text.is_char_boundary(self.text.len() - k)
                    && s.is_char_boundary(k)
                    && self.text.ends_with(&s[..k])
                {
                    safe = safe.min(self.text.len() - k);
                    break;
                }
            }
        }
        let safe = safe.max(self.sent);
        (safe > self.sent).then(|| {
            let out = self.text[self.sent..safe].to_string();
            self.sent = safe;
            out
        })
    }
}

fn process<M: Model>(
    generator: &mut Generator<M>,
    work: &Work,
    shared: &Shared,
) -> Result<Finished, ApiError> {
    let queue_ms = work.enqueued.elapsed().as_secs_f64() * 1e3;
    let plan = &work.plan;
    if plan.with_tools {
        return crate::tools::run(generator, work, shared, queue_ms);
    }
    let prompt = Prompt::Chat(plan.messages.clone());
    let n_prompt = generator
        .prompt_tokens(&prompt, plan.schema.as_ref(), &SchemaInPrompt::Auto, None)
        .map_err(|e| ApiError::from_generate(&e))?
        .len();
    let options = fit_context(generator, &plan.options, n_prompt)?;

    let mut schema_cache_hit = None;
    if let Some(schema) = &plan.schema {
        // Compiled here (or found in the generator's LRU cache) so a bad schema is an error
        // before any byte is streamed; `generate` then finds it in the cache.
        let (_, compile_ms) = generator
            .compile(schema)
            .map_err(|e| ApiError::from_generate(&e))?;
        let hit = compile_ms == 0.0;
        schema_cache_hit = Some(hit);
        if hit {
            shared.schema_cache_hits.fetch_add(1, Ordering::Relaxed);
        } else {
            shared.schema_cache_misses.fetch_add(1, Ordering::Relaxed);
        }
    }
    let _ = work.events.send(Event::Started);

    let request = Request {
        prompt,
        schema: plan.schema.clone(),
        schema_in_prompt: SchemaInPrompt::Auto,
        options,
    };
    let mut guard = StopGuard {
        stop: &plan.options.stop,
        text: String::new(),
        sent: 0,
    };
    let stream = plan.stream;
    let events = &work.events;
    let mut on_text = |piece: &str| {
        if shared.cancel_all.load(Ordering::Relaxed) {
            return false;
        }
        if !stream {
            return !events.is_closed();
        }
        match guard.push(piece) {
            Some(text) => events.send(Event::Delta(text)).is_ok(),
            None => !events.is_closed(),
        }
    };
    let out = generator
        .generate(&request, &mut on_text)
        .map_err(|e| ApiError::from_generate(&e))?;
    if stream && out.text.len() > guard.sent {
        let _ = events.send(Event::Delta(out.text[guard.sent..].to_string()));
    }
    let mut done = finish(out, Answer::Text, shared, queue_ms, schema_cache_hit)?;
    done.text_streamed = stream;
    Ok(done)
}

/// Checks that the prompt fits the context and clamps `max_tokens` to what it leaves.
pub(crate) fn fit_context<M: Model>(
    generator: &Generator<M>,
    options: &GenerateOptions,
    n_prompt: usize,
) -> Result<GenerateOptions, ApiError> {
    let context = generator.model().context_size();
    if n_prompt >= context {
        return Err(ApiError::from_generate(&GenerateError::PromptTooLong {
            prompt: n_prompt,
            context,
        }));
    }
    let mut options = options.clone();
    options.max_tokens = options.max_tokens.min(context - n_prompt);
    Ok(options)
}

/// Maps the engine's stop reason and counts a cancellation.
pub(crate) fn finish(
    out: Output,
    answer: impl FnOnce(String) -> Answer,
    shared: &Shared,
    queue_ms: f64,
    schema_cache_hit: Option<bool>,
) -> Result<Finished, ApiError> {
    let finish_reason = match out.stop {
        StopReason::Eos | StopReason::Complete | StopReason::Stop => "stop",
        // The budget ran out: cut off (MaxTokens), or closed early with the shortest valid
        // ending (BudgetClosed, still a valid document).
        StopReason::MaxTokens | StopReason::BudgetClosed => "length",
        StopReason::Cancelled => {
            shared.cancelled.fetch_add(1, Ordering::Relaxed);
            if shared.cancel_all.load(Ordering::Relaxed) {
                return Err(shutting_down());
            }
            "stop"
        }
    };
    Ok(Finished {
        answer: answer(out.text),
        finish_reason,
        usage: Usage {
            prompt: out.prompt_tokens,
            completion: out.completion_tokens,
        },
        timing: out.timing,
        queue_ms,
        schema_cache_hit,
        text_streamed: false,
    })
}

#[cfg(test)]
mod tests {
    use super::StopGuard;

    #[test]
    fn stop_guard_holds_back_possible_stop_strings() {
        let stop = vec!["END".to_string()];
        let mut g = StopGuard {
            stop: &stop,
            text: String::new(),
            sent: 0,
        };
        assert_eq!(g.push("hello E").as_deref(), Some("hello "));
        assert_eq!(g.push("N"), None);
        assert_eq!(g.push("x").as_deref(), Some("ENx"));
        assert_eq!(g.push(" EN").as_deref(), Some(" "));
        assert_eq!(g.push("D more"), None);
        assert_eq!(&g.text[..g.sent], "hello ENx ");
    }
}
