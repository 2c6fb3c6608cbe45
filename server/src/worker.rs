//! The slots: one [`Generator`] per sequence of a batched model, each on its own OS thread,
//! fed by one bounded queue.
//!
//! Model calls block (llama.cpp runs on the CPU for the whole decode), so they never run on
//! the async runtime. Handlers `try_send` a [`Job`] into a `tokio::sync::mpsc` channel of
//! fixed capacity (a full queue is a 503 at once, never a wait); a dispatcher hands the next
//! job to an idle slot (the one whose last request shares most with it, so its KV cache and
//! mask caches are warm), which answers through the job's own unbounded channel of
//! [`Event`]s: `Started` once the
//! prompt is rendered and the schema compiled (so a bad schema is still a plain 400 even for a
//! streaming request), `Delta`s of text for streams, then `Done`.
//!
//! The slots' generators share one model through a [`Batcher`] (continuous batching): each
//! step evaluates the next tokens of every slot that is generating in one batched call, while
//! each slot computes its next mask on its own thread; a slot that finishes takes the next job
//! at once, and its prompt joins the running steps in chunks.
//!
//! Cancellation is cooperative: the text callback returns `false` when the job's event
//! receiver is gone (the client disconnected and its handler future or response stream was
//! dropped) or when the server's grace period for shutting down is over. A job whose client
//! left while it waited in the queue is skipped without touching the model.

use std::fmt::Display;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use generate::template::inject_schema;
use generate::{
    BatchModel, BatchOptions, Batcher, GenerateError, GenerateOptions, Generator, Lane,
    LogprobSink, Message, Model, Output, Prompt, Reasoning, Request, SCHEMA_PLACEHOLDER,
    SchemaInPrompt, StopReason, Timing, TokenLogprob,
};
use mask_kernel::SharedMaskCache;
use schema_compiler::{Grammar, Options};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::compile::panic_message;
use crate::error::{ApiError, ServerError};
use crate::metrics::{Metrics, Outcome};
use crate::openai::{Answer, Plan, Usage};
use crate::summary;

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
    /// The grammars of the request's schemas (its response format, its tools' parameters),
    /// compiled by the compile pool, each with the mask cache every lane shares: the
    /// generator keeps them and compiles nothing.
    pub grammars: Vec<(Value, Arc<Grammar>, Arc<SharedMaskCache>)>,
    /// Whether the response format's grammar came from the compile cache.
    pub schema_cache_hit: Option<bool>,
    pub events: mpsc::UnboundedSender<Event>,
    pub enqueued: Instant,
    /// The request's wall-clock limit: its handler gives up then (and closes `events`).
    pub deadline: Instant,
}

/// What the model thread tells a handler.
#[derive(Debug)]
pub(crate) enum Event {
    /// The prompt is rendered and the schema compiled: generation starts.
    Started,
    /// Text (streaming requests only).
    Delta(String),
    /// A tool call starts (streaming requests only).
    CallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A piece of a tool call's arguments, JSON text (streaming requests only).
    CallArguments { index: usize, fragment: String },
    /// The log probabilities of the next tokens, sent before their text (streaming requests
    /// that ask for them).
    Logprobs(Vec<TokenLogprob>),
    /// A piece of a reasoning model's thinking (streaming requests), before the answer.
    Reasoning(String),
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
    /// The answer was sent as `Delta`s (or call events) while it was generated.
    pub text_streamed: bool,
    /// Generation was cancelled (the client left or the request timed out).
    pub cancelled: bool,
    /// How the schema was put into the prompt: `full`, `summary` or `none`.
    pub schema_in_prompt: &'static str,
    /// The log probabilities, when asked for (not streamed).
    pub logprobs: Option<Vec<TokenLogprob>>,
    /// A reasoning model's thinking, without its markers.
    pub reasoning: Option<String>,
}

/// State shared by the model thread and the handlers.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Set when the shutdown grace period is over: cancel what runs, refuse what waits.
    pub cancel_all: AtomicBool,
    /// Set when shutting down (new requests are refused).
    pub draining: AtomicBool,
    /// Set while a model is loaded and its thread takes jobs.
    pub alive: AtomicBool,
    /// Counters, histograms and gauges.
    pub metrics: Arc<Metrics>,
}

impl Shared {
    /// The request counters of `/health`.
    pub fn stats(&self) -> Value {
        let m = &self.metrics;
        json!({
            "completed": m.outcomes(Outcome::Completed),
            "cancelled": m.outcomes(Outcome::Cancelled),
            "failed": m.outcomes(Outcome::Failed),
            "rejected_queue_full": m.outcomes(Outcome::RejectedQueueFull),
            "abandoned_in_queue": m.outcomes(Outcome::AbandonedInQueue),
            "timed_out": m.outcomes(Outcome::TimedOut),
            "worker_restarts": m.worker_restarts.get(),
            "schema_cache": {"hits": m.schema_cache_count("hit"),
                "misses": m.schema_cache_count("miss"),
                "failure_hits": m.schema_cache_count("failure_hit"),
                "compile_timeouts": m.compile_timeouts.get()},
        })
    }
}

/// What the thread reports once the model is loaded.
pub(crate) struct Loaded {
    /// Slots (sequences of the model).
    pub slots: usize,
    pub context_size: usize,
    pub describe: String,
    /// The options schemas are compiled with.
    pub compile_options: Options,
    /// Prompt text longer than this cannot fit the context (its length in bytes over the
    /// longest token's).
    pub max_prompt_bytes: usize,
}

/// The most bytes of prompt text that may still fit the context: every token of the
/// generator's vocabulary spells at most the longest token's bytes.
fn max_prompt_bytes<M: Model>(generator: &Generator<M>) -> usize {
    let longest = generator
        .tokenizer()
        .vocab()
        .iter()
        .map(|(_, bytes)| bytes.len())
        .max()
        .unwrap_or(1)
        .max(1);
    generator.model().context_size().saturating_mul(longest)
}

/// The threads that generate: a [`Batcher`] that owns the model, and one slot thread per
/// sequence, each with a [`Generator`] on its lane. Dropping it after the slots have stopped
/// stops the batcher.
pub(crate) struct Workers {
    slots: Vec<JoinHandle<()>>,
    batcher: Arc<Batcher>,
}

impl Workers {
    /// The batcher's counters.
    pub(crate) fn counters(&self) -> generate::BatchCounters {
        self.batcher.counters()
    }

    /// Waits for every slot thread, then stops the batcher.
    pub(crate) fn join(self) {
        for slot in self.slots {
            let _ = slot.join();
        }
        drop(self.batcher);
    }
}

/// A slot's own queue: the dispatcher hands it one job at a time.
type SlotJobs = std::sync::mpsc::Receiver<Box<Work>>;

/// Starts the batcher, which runs `load` with the number of sequences wanted (`parallel`), and
/// one slot per sequence the model has, each building its generator with `slot`; returns once
/// all are ready, or with the first error. After a panic while generating, a slot drops its
/// generator and builds another; after a panic in the model, the batcher loads it again.
pub(crate) fn spawn<B, L, G, E>(
    mut load: L,
    slot: G,
    config: &crate::ServerConfig,
    queue: usize,
    shared: Arc<Shared>,
) -> Result<(mpsc::Sender<Job>, Workers, Loaded), ServerError>
where
    B: BatchModel + 'static,
    L: FnMut(usize) -> Result<B, E> + Send + 'static,
    G: Fn(Lane) -> Result<Generator<Lane>, E> + Send + Sync + 'static,
    E: Display,
{
    let metrics = shared.metrics.clone();
    let options = BatchOptions {
        on_restart: Some(Arc::new(move || {
            metrics.worker_restarts.inc();
        })),
        overlap_masks: config.overlap_masks,
        ..BatchOptions::default()
    };
    let parallel = config.parallel.max(1);
    let batcher =
        Arc::new(Batcher::spawn(move || load(parallel), options).map_err(ServerError::Load)?);
    let (tx, rx) = mpsc::channel(queue.max(1));
    let slot = Arc::new(slot);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (idle_tx, idle_rx) = std::sync::mpsc::channel();
    let live = Arc::new(AtomicUsize::new(0));
    let mut slots = Vec::new();
    let mut to_slots = Vec::new();
    let n = batcher.sequences();
    for seq in 0..n {
        let (batcher, slot, shared) = (batcher.clone(), slot.clone(), shared.clone());
        let (ready, live, idle) = (ready_tx.clone(), live.clone(), idle_tx.clone());
        let (job_tx, jobs) = std::sync::mpsc::channel();
        to_slots.push(job_tx);
        let handle = std::thread::Builder::new()
            .name(format!("stencil-slot-{seq}"))
            .spawn(move || {
                let idle = move || idle.send(seq).is_ok();
                run_slot(seq, &batcher, &*slot, &jobs, &idle, &shared, ready, &live);
            })
            .map_err(|e| ServerError::Worker(e.to_string()))?;
        slots.push(handle);
    }
    drop((ready_tx, idle_tx));
    let dispatcher = std::thread::Builder::new()
        .name("stencil-dispatch".into())
        .spawn(move || dispatch(rx, to_slots, idle_rx))
        .map_err(|e| ServerError::Worker(e.to_string()))?;
    slots.push(dispatcher);
    let mut loaded = None;
    let mut failure = None;
    for report in ready_rx.iter().take(n) {
        match report {
            Ok(l) => {
                loaded.get_or_insert(l);
            }
            Err(e) => {
                failure.get_or_insert(e);
            }
        }
    }
    let workers = Workers { slots, batcher };
    match (failure, loaded) {
        (None, Some(loaded)) => {
            shared.alive.store(true, Ordering::SeqCst);
            Ok((tx, workers, loaded))
        }
        (failure, _) => {
            // Closing the queue stops the dispatcher, which stops the slots.
            drop(tx);
            workers.join();
            Err(ServerError::Load(failure.unwrap_or_else(|| {
                "the slots stopped while starting".into()
            })))
        }
    }
}

/// Hands each job to an idle slot: the one whose last request shares the longest start with
/// this one's messages (its KV cache then holds most of the prompt, and its mask caches the
/// schema), the one idle most recently among equals. Takes a job only when a slot is idle, so
/// the queue's bound holds; stops when the queue closes or a `Stop` comes, and the slots stop
/// after it.
fn dispatch(
    mut rx: mpsc::Receiver<Job>,
    slots: Vec<std::sync::mpsc::Sender<Box<Work>>>,
    idle_rx: std::sync::mpsc::Receiver<usize>,
) {
    // Idle slots, the most recent last; and each slot's last request.
    let mut idle: Vec<usize> = Vec::new();
    let mut last: Vec<String> = vec![String::new(); slots.len()];
    loop {
        if idle.is_empty() {
            match idle_rx.recv() {
                Ok(seq) => idle.push(seq),
                // Every slot has stopped.
                Err(_) => return,
            }
        }
        let work = match rx.blocking_recv() {
            Some(Job::Generate(w)) => w,
            Some(Job::Stop) | None => return,
        };
        idle.extend(idle_rx.try_iter());
        let key = affinity_key(&work.plan);
        let (at, _) = idle
            .iter()
            .enumerate()
            .map(|(at, &seq)| (at, common_prefix(&last[seq], &key)))
            .fold(
                (0, 0),
                |best, (at, n)| if n >= best.1 { (at, n) } else { best },
            );
        let seq = idle.remove(at);
        last[seq] = key;
        if let Err(lost) = slots[seq].send(work) {
            // The slot has stopped: its client gets an error.
            let _ = lost.0.events.send(Event::Done(Err(ApiError::internal(
                "the slot stopped before it could take the request",
            ))));
        }
    }
}

/// What a slot's KV cache and mask caches are likely to share with a request: its schema and
/// its messages, roles included.
fn affinity_key(plan: &Plan) -> String {
    let mut key = String::new();
    if let Some(schema) = &plan.schema {
        key.push_str(&schema.to_string());
    }
    for m in &plan.messages {
        key.push('\0');
        key.push_str(&m.role);
        key.push('\0');
        key.push_str(&m.content);
    }
    key
}

/// Bytes two strings share at their start.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

/// A slot's thread: builds its generator on lane `seq`, reports it ready (once), announces
/// itself idle and takes the jobs the dispatcher hands it until the dispatcher stops; after a
/// panic it builds its generator again.
#[allow(clippy::too_many_arguments)]
fn run_slot<E: Display>(
    seq: usize,
    batcher: &Batcher,
    slot: &dyn Fn(Lane) -> Result<Generator<Lane>, E>,
    jobs: &SlotJobs,
    idle: &dyn Fn() -> bool,
    shared: &Shared,
    ready: std::sync::mpsc::Sender<Result<Loaded, String>>,
    live: &AtomicUsize,
) {
    let mut ready = Some(ready);
    live.fetch_add(1, Ordering::SeqCst);
    loop {
        let built = match batcher.lane(seq) {
            Some(lane) => slot(lane).map_err(|e| e.to_string()),
            None => Err(format!("the lane of sequence {seq} is taken")),
        };
        let generator = match built {
            Ok(g) => g,
            Err(e) => {
                match ready.take() {
                    Some(ready) => {
                        let _ = ready.send(Err(e));
                    }
                    None => tracing::error!(
                        error = %e,
                        slot = seq,
                        "cannot build the slot's generator again after a panic: the slot stops"
                    ),
                }
                break;
            }
        };
        if let Some(ready) = ready.take() {
            let _ = ready.send(Ok(Loaded {
                slots: batcher.sequences(),
                context_size: generator.model().context_size(),
                describe: generator.model().describe(),
                compile_options: generator.compile_options().clone(),
                max_prompt_bytes: max_prompt_bytes(&generator),
            }));
        }
        match run(generator, jobs, idle, shared) {
            Exit::Stopped => break,
            Exit::Panicked => {
                shared.metrics.worker_restarts.inc();
                tracing::warn!(
                    slot = seq,
                    "building the slot's generator again after a panic"
                );
            }
        }
    }
    if live.fetch_sub(1, Ordering::SeqCst) == 1 {
        shared.alive.store(false, Ordering::SeqCst);
    }
}

/// Why [`run`] returned.
enum Exit {
    /// The queue closed or a `Stop` came.
    Stopped,
    /// Generation panicked: the generator is dropped and must be built again.
    Panicked,
}

fn run(
    mut generator: Generator<Lane>,
    jobs: &SlotJobs,
    idle: &dyn Fn() -> bool,
    shared: &Shared,
) -> Exit {
    let metrics = &shared.metrics;
    let max_prompt_bytes = max_prompt_bytes(&generator);
    loop {
        if !idle() {
            break;
        }
        let Ok(work) = jobs.recv() else {
            break;
        };
        let timed_out = || Instant::now() >= work.deadline;
        if work.events.is_closed() {
            metrics.outcome(if timed_out() {
                Outcome::TimedOut
            } else {
                Outcome::AbandonedInQueue
            });
            continue;
        }
        if shared.cancel_all.load(Ordering::Relaxed) {
            let _ = work.events.send(Event::Done(Err(shutting_down())));
            continue;
        }
        metrics.slots_active.inc();
        let busy = generator.model().busy();
        let result = catch_unwind(AssertUnwindSafe(|| {
            process(&mut generator, &work, shared, max_prompt_bytes)
        }));
        drop(busy);
        metrics.slots_active.dec();
        match result {
            Ok(r) => {
                match &r {
                    Ok(f) => {
                        metrics.outcome(match (f.cancelled, timed_out()) {
                            (false, _) => Outcome::Completed,
                            (true, true) => Outcome::TimedOut,
                            (true, false) => Outcome::Cancelled,
                        });
                        observe(metrics, f);
                    }
                    Err(e) if e.code == Some(SHUTTING_DOWN) => metrics.outcome(Outcome::Cancelled),
                    Err(_) => metrics.outcome(Outcome::Failed),
                };
                let _ = work.events.send(Event::Done(r));
            }
            Err(panic) => {
                let what = panic_message(&*panic);
                tracing::error!(panic = %what, "a slot panicked; it restarts");
                metrics.outcome(Outcome::Failed);
                let _ = work.events.send(Event::Done(Err(ApiError::internal(
                    "the model failed while generating; it is being loaded again",
                ))));
                // The generator's view of its sequence may be wrong: start afresh. Dropping
                // may panic too; the thread goes on either way.
                let _ = catch_unwind(AssertUnwindSafe(move || drop(generator)));
                return Exit::Panicked;
            }
        }
    }
    Exit::Stopped
}

/// Records the token counts and timings of a finished request.
fn observe(metrics: &Metrics, f: &Finished) {
    metrics.tokens_generated.inc_by(f.usage.completion as u64);
    metrics.prompt_tokens.inc_by(f.usage.prompt as u64);
    if f.usage.completion > 0 && f.timing.decode_ms > 0.0 {
        metrics
            .step_seconds
            .observe(f.timing.decode_ms / 1e3 / f.usage.completion as f64);
    }
    if f.timing.mask_us_mean > 0.0 {
        metrics.mask_seconds.observe(f.timing.mask_us_mean / 1e6);
    }
}

const SHUTTING_DOWN: &str = "shutting_down";

pub(crate) fn shutting_down() -> ApiError {
    ApiError::unavailable("the server is shutting down", SHUTTING_DOWN)
}

/// Holds back streamed text that may be the start of a stop string, so a stream never shows
/// text the final answer cuts off.
pub(crate) struct StopGuard<'a> {
    stop: &'a [String],
    text: String,
    sent: usize,
}

impl<'a> StopGuard<'a> {
    /// A guard for these stop strings.
    pub(crate) fn new(stop: &'a [String]) -> StopGuard<'a> {
        StopGuard {
            stop,
            text: String::new(),
            sent: 0,
        }
    }

    /// How many bytes were sent.
    pub(crate) fn sent(&self) -> usize {
        self.sent
    }

    /// The text sent.
    pub(crate) fn sent_text(&self) -> &str {
        &self.text[..self.sent]
    }

    /// Adds a piece; returns what can be sent now.
    pub(crate) fn push(&mut self, piece: &str) -> Option<String> {
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
    max_prompt_bytes: usize,
) -> Result<Finished, ApiError> {
    let queue_ms = work.enqueued.elapsed().as_secs_f64() * 1e3;
    generator.set_property_order(work.plan.property_order);
    let reasoning = thinking(generator, &work.plan);
    for (schema, grammar, masks) in &work.grammars {
        if !generator.add_shared(schema, grammar.clone(), masks.clone()) {
            tracing::warn!("a grammar from the compile pool has other options; compiling here");
        }
    }
    let plan = &work.plan;
    let sink = Logprobs::new(generator, plan);
    if plan.with_tools {
        return crate::tools::run(generator, work, shared, queue_ms, &sink, reasoning);
    }
    let (messages, n_prompt, placed) = prompt_with_schema(generator, plan, max_prompt_bytes)?;
    let mut options = fit_context(generator, &plan.options, n_prompt)?;
    options.reasoning = reasoning;
    if let Some(schema) = &plan.schema {
        // Found in the generator's cache (the compile pool compiled it), so a bad schema was
        // an error before any byte was streamed.
        generator
            .compile(schema)
            .map_err(|e| ApiError::from_generate(&e))?;
    }
    let _ = work.events.send(Event::Started);

    let request = Request {
        prompt: Prompt::Chat(messages),
        schema: plan.schema.clone(),
        // Placed above.
        schema_in_prompt: SchemaInPrompt::Off,
        options,
    };
    let mut guard = StopGuard::new(&plan.options.stop);
    let stream = plan.stream;
    let events = &work.events;
    let mut on_text = |piece: &str| {
        if shared.cancel_all.load(Ordering::Relaxed) {
            return false;
        }
        if !stream {
            return !events.is_closed();
        }
        sink.drain(events);
        match guard.push(piece) {
            Some(text) => events.send(Event::Delta(text)).is_ok(),
            None => !events.is_closed(),
        }
    };
    let mut on_reasoning = |piece: &str| {
        if shared.cancel_all.load(Ordering::Relaxed) {
            return false;
        }
        if stream {
            events.send(Event::Reasoning(piece.to_string())).is_ok()
        } else {
            !events.is_closed()
        }
    };
    let out = generator
        .generate_thinking(&request, &mut on_reasoning, &mut on_text)
        .map_err(|e| ApiError::from_generate(&e))?;
    sink.drain(events);
    if stream && out.text.len() > guard.sent {
        let _ = events.send(Event::Delta(out.text[guard.sent..].to_string()));
    }
    let logprobs = sink.whole(&out);
    let mut done = finish(out, Answer::Text, shared, queue_ms, work.schema_cache_hit)?;
    done.logprobs = logprobs;
    done.text_streamed = stream;
    done.schema_in_prompt = placed;
    Ok(done)
}

/// The thinking section of this request, where the model has one: its end marker is in the
/// chat template (or set with `stencil serve --reasoning-end`) and the request does not turn
/// it off. Also hands the request's template variables to the generator, `enable_thinking`
/// among them.
fn thinking<M: Model>(generator: &mut Generator<M>, plan: &Plan) -> Option<Reasoning> {
    let mut kwargs = plan.template_kwargs.clone();
    if let Some(enabled) = plan.thinking.enabled {
        let k = kwargs.get_or_insert_with(|| Value::Object(Default::default()));
        k["enable_thinking"] = Value::Bool(enabled);
    }
    generator.set_template_kwargs(kwargs);
    if plan.thinking.enabled == Some(false) {
        return None;
    }
    let end = generator.reasoning_end()?;
    Some(Reasoning {
        end,
        budget: plan
            .thinking
            .budget
            .unwrap_or(crate::openai::DEFAULT_REASONING_BUDGET),
    })
}

/// Log probabilities for a request that asks for them: a sink on the generator for a
/// stream (drained into `Logprobs` events as the text goes out), the output's for a whole
/// answer.
pub(crate) struct Logprobs {
    asked: bool,
    sink: Option<LogprobSink>,
}

impl Logprobs {
    /// Sets (or clears) the generator's sink for this request.
    pub(crate) fn new<M: Model>(generator: &mut Generator<M>, plan: &Plan) -> Logprobs {
        let asked = plan.options.logprobs.is_some();
        let sink = (asked && plan.stream).then(LogprobSink::default);
        generator.set_logprob_sink(sink.clone());
        Logprobs { asked, sink }
    }

    /// Sends what the sink holds.
    pub(crate) fn drain(&self, events: &mpsc::UnboundedSender<Event>) {
        let Some(sink) = &self.sink else { return };
        let entries = sink
            .lock()
            .map(|mut s| std::mem::take(&mut *s))
            .unwrap_or_default();
        if !entries.is_empty() {
            let _ = events.send(Event::Logprobs(entries));
        }
    }

    /// The log probabilities of a whole answer, if asked for and not streamed.
    pub(crate) fn whole(&self, out: &Output) -> Option<Vec<TokenLogprob>> {
        (self.asked && self.sink.is_none()).then(|| out.logprobs.clone())
    }
}

/// The messages with the schema put in as the request asks, their length in tokens, and what
/// was put in (`full`, `summary` or `none`).
///
/// The schema itself goes in when the prompt then leaves room for the answer (its
/// `max_tokens`, or a quarter of the context if that is less); else the longest summary of
/// it that does ([`crate::summary`]), or, if none does, its type alone.
fn prompt_with_schema<M: Model>(
    generator: &Generator<M>,
    plan: &Plan,
    max_prompt_bytes: usize,
) -> Result<(Vec<Message>, usize, &'static str), ApiError> {
    let count = |messages: &[Message]| {
        generator
            .prompt_tokens(
                &Prompt::Chat(messages.to_vec()),
                None,
                &SchemaInPrompt::Off,
                None,
            )
            .map(|t| t.len())
            .map_err(|e| ApiError::from_generate(&e))
    };
    let schema = match &plan.schema {
        Some(s) if plan.schema_in_prompt != SchemaInPrompt::Off => s,
        _ => return Ok((plan.messages.clone(), count(&plan.messages)?, "none")),
    };
    let context = generator.model().context_size();
    let room = plan.options.max_tokens.min(context / 4).max(1);
    let text_bytes: usize = plan.messages.iter().map(|m| m.content.len()).sum();
    let places = plan
        .messages
        .iter()
        .map(|m| m.content.matches(SCHEMA_PLACEHOLDER).count())
        .sum::<usize>()
        .max(1);
    let candidates = summary::candidates(schema);
    let last = candidates.len() - 1;
    for (i, candidate) in candidates.iter().enumerate() {
        // Text longer than this cannot fit: no need to tokenize it.
        let bytes = text_bytes.saturating_add(candidate.to_string().len().saturating_mul(places));
        if i < last && bytes > max_prompt_bytes {
            continue;
        }
        let mut messages = plan.messages.clone();
        if !inject_schema(&mut messages, candidate, &plan.schema_in_prompt) {
            // Only placeholders were asked for, and there are none.
            let n = count(&messages)?;
            return Ok((messages, n, "none"));
        }
        let n = count(&messages)?;
        if n + room <= context || i == last {
            if i > 0 {
                tracing::info!(
                    schema_bytes = schema.to_string().len(),
                    summary_bytes = candidate.to_string().len(),
                    prompt_tokens = n,
                    "the schema is too long for the prompt: it is summarised"
                );
            }
            let placed = if i == 0 { "full" } else { "summary" };
            return Ok((messages, n, placed));
        }
    }
    unreachable!("the last candidate is always taken")
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

/// Maps the engine's stop reason; a cancellation by the shutdown is an error.
pub(crate) fn finish(
    out: Output,
    answer: impl FnOnce(String) -> Answer,
    shared: &Shared,
    queue_ms: f64,
    schema_cache_hit: Option<bool>,
) -> Result<Finished, ApiError> {
    let mut cancelled = false;
    let finish_reason = match out.stop {
        StopReason::Eos | StopReason::Complete | StopReason::Stop => "stop",
        // The budget ran out: cut off (MaxTokens), or closed early with the shortest valid
        // ending (BudgetClosed, still a valid document).
        StopReason::MaxTokens | StopReason::BudgetClosed => "length",
        StopReason::Cancelled => {
            if shared.cancel_all.load(Ordering::Relaxed) {
                return Err(shutting_down());
            }
            cancelled = true;
            "stop"
        }
    };
    Ok(Finished {
        answer: answer(out.text),
        finish_reason,
        usage: Usage {
            prompt: out.prompt_tokens,
            completion: out.completion_tokens,
            reasoning: out.reasoning_tokens,
        },
        timing: out.timing,
        queue_ms,
        schema_cache_hit,
        text_streamed: false,
        cancelled,
        schema_in_prompt: "none",
        logprobs: None,
        reasoning: out.reasoning,
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
