//! Continuous batching: several generators, one model that evaluates their sequences together.
//!
//! A [`BatchModel`] evaluates the tokens of several sequences in one pass (llama.cpp: one
//! `decode` over a batch whose tokens carry sequence ids, each sequence with its own KV cells).
//! A [`Batcher`] owns one on its own thread and hands out a [`Lane`] per sequence: a [`Model`]
//! that an ordinary [`crate::Generator`] drives, on its own thread, with its own constraint
//! session, mask cache and sampler.
//!
//! Each step the batcher waits until every busy lane (see [`Lane::busy`]) has asked for its next
//! tokens, or until [`BatchOptions::gather`] has passed since the first asked, then evaluates
//! them all in one call and answers each lane with its logits. Tokens of sequences that are
//! generating go first; prompts fill the rest of the step's token budget
//! ([`BatchModel::max_batch_tokens`]) in chunks, so a long prompt never stalls the others for
//! more than one step. A lane computes its next mask while its step runs
//! ([`Model::forward_with`]): the masks of a step are computed in parallel, on the lanes'
//! threads, during the forward pass.
//!
//! If the model panics, every lane in that step gets an error, the model is loaded again and
//! the other lanes replay their sequences into it, unnoticed by their generators.
//!
//! [`PerSequence`] makes a [`BatchModel`] out of one [`Model`] per sequence, evaluated in turn:
//! for runtimes without batched evaluation, and for tests.

use std::fmt::Display;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::{Model, ModelError};

/// One sequence's part of a batched step.
#[derive(Debug, Clone, Copy)]
pub struct SeqStep<'a> {
    /// The sequence, below [`BatchModel::max_sequences`].
    pub seq: usize,
    /// Positions of the sequence kept: anything the model holds from this position on is
    /// dropped before `tokens` are appended at `keep..`.
    pub keep: usize,
    /// The sequence's generator truncated it to `keep` since its last step (for models that
    /// care, like test doubles; real models drop positions from `keep` whatever this says).
    pub truncated: bool,
    /// The tokens to append (never empty).
    pub tokens: &'a [u32],
    /// Whether the logits after the last of `tokens` are wanted.
    pub logits: bool,
}

/// A model that evaluates several sequences in one pass.
///
/// Each sequence has its own positions in the model's cache, up to
/// [`BatchModel::context_size`]. When [`BatchModel::decode`] fails, every sequence in the call
/// must be left with exactly its step's `keep` positions.
pub trait BatchModel {
    /// Length of each logits vector.
    fn vocab_size(&self) -> usize;

    /// Positions each sequence may hold.
    fn context_size(&self) -> usize;

    /// Sequences evaluated together, numbered from 0.
    fn max_sequences(&self) -> usize;

    /// Most tokens one [`BatchModel::decode`] call may carry, all sequences together.
    fn max_batch_tokens(&self) -> usize;

    /// Evaluates every step in one pass; for each step that wants them, writes the logits
    /// after its last token into the vector of `logits` at the same index (resized to
    /// [`BatchModel::vocab_size`]). At most one step per sequence.
    fn decode(&mut self, steps: &[SeqStep<'_>], logits: &mut [Vec<f32>]) -> Result<(), ModelError>;

    /// As [`Model::logits_depend_only_on_tokens`].
    fn logits_depend_only_on_tokens(&self) -> bool {
        true
    }

    /// A short human-readable description (architecture, parameters, quantization).
    fn describe(&self) -> String {
        String::new()
    }
}

impl<B: BatchModel + ?Sized> BatchModel for Box<B> {
    fn vocab_size(&self) -> usize {
        (**self).vocab_size()
    }

    fn context_size(&self) -> usize {
        (**self).context_size()
    }

    fn max_sequences(&self) -> usize {
        (**self).max_sequences()
    }

    fn max_batch_tokens(&self) -> usize {
        (**self).max_batch_tokens()
    }

    fn decode(&mut self, steps: &[SeqStep<'_>], logits: &mut [Vec<f32>]) -> Result<(), ModelError> {
        (**self).decode(steps, logits)
    }

    fn logits_depend_only_on_tokens(&self) -> bool {
        (**self).logits_depend_only_on_tokens()
    }

    fn describe(&self) -> String {
        (**self).describe()
    }
}

/// A [`BatchModel`] made of one [`Model`] per sequence, evaluated one after another.
///
/// For runtimes that evaluate one sequence at a time (each model its own weights and cache,
/// or batch size 1), and for test doubles.
#[derive(Debug)]
pub struct PerSequence<M> {
    models: Vec<M>,
}

impl<M: Model> PerSequence<M> {
    /// One sequence per model.
    ///
    /// # Errors
    ///
    /// [`ModelError::Load`] when there is no model or their vocabularies differ in size.
    pub fn new(models: Vec<M>) -> Result<PerSequence<M>, ModelError> {
        let load = |reason: &str| ModelError::Load {
            path: String::new(),
            reason: reason.to_string(),
        };
        let first = models.first().ok_or_else(|| load("no model"))?;
        if models.iter().any(|m| m.vocab_size() != first.vocab_size()) {
            return Err(load("the models' vocabularies differ in size"));
        }
        Ok(PerSequence { models })
    }
}

impl<M: Model> BatchModel for PerSequence<M> {
    fn vocab_size(&self) -> usize {
        self.models[0].vocab_size()
    }

    fn context_size(&self) -> usize {
        self.models
            .iter()
            .map(Model::context_size)
            .min()
            .unwrap_or(0)
    }

    fn max_sequences(&self) -> usize {
        self.models.len()
    }

    fn max_batch_tokens(&self) -> usize {
        // Each model evaluates its own tokens: nothing is gained by chunking prompts.
        usize::MAX
    }

    fn decode(&mut self, steps: &[SeqStep<'_>], logits: &mut [Vec<f32>]) -> Result<(), ModelError> {
        for (step, out) in steps.iter().zip(logits) {
            let model = self.models.get_mut(step.seq).ok_or_else(|| {
                ModelError::Runtime(format!("no sequence {} in this model", step.seq))
            })?;
            if step.truncated || step.keep < model.n_past() {
                model.truncate(step.keep)?;
            }
            let l = model.forward(step.tokens)?;
            if step.logits {
                out.clear();
                out.extend_from_slice(l);
            }
        }
        Ok(())
    }

    fn logits_depend_only_on_tokens(&self) -> bool {
        self.models[0].logits_depend_only_on_tokens()
    }

    fn describe(&self) -> String {
        self.models[0].describe()
    }
}

/// Knobs of a [`Batcher`].
#[derive(Clone)]
pub struct BatchOptions {
    /// Once a lane asks for a step, how long to wait for the other busy lanes to ask too
    /// before evaluating without them (default 3 ms: a lane samples and commits in well under
    /// a millisecond; one that takes longer, say rendering a long prompt, joins the next step).
    pub gather: Duration,
    /// Called after the model panicked and was loaded again.
    pub on_restart: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Whether a lane computes its next mask while its step is evaluated (default), or before
    /// it asks for the step. Overlapping pays where the model leaves a core idle; where its
    /// threads take every core and spin at their barriers (llama.cpp), a lane that wakes up
    /// in the middle of a step stalls all of them, and computing the mask first is faster.
    pub overlap_masks: bool,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            gather: Duration::from_millis(3),
            on_restart: None,
            overlap_masks: true,
        }
    }
}

impl std::fmt::Debug for BatchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchOptions")
            .field("gather", &self.gather)
            .field("overlap_masks", &self.overlap_masks)
            .finish_non_exhaustive()
    }
}

/// What lanes learn about the model.
#[derive(Debug)]
struct Facts {
    vocab_size: usize,
    context_size: usize,
    sequences: usize,
    describe: String,
    depends_only_on_tokens: bool,
}

/// State shared by the batcher's thread and its lanes.
#[derive(Debug, Default)]
struct Shared {
    /// Lanes in a request (see [`Lane::busy`]).
    busy: AtomicUsize,
    /// Bumped when the model is loaded again: every sequence is empty then.
    epoch: AtomicU64,
    /// Lanes handed out, by sequence.
    taken: Mutex<Vec<bool>>,
    /// Steps evaluated, and sequences and tokens in them.
    steps: AtomicU64,
    step_sequences: AtomicU64,
    step_tokens: AtomicU64,
    restarts: AtomicU64,
    /// Set once the thread has stopped.
    stopped: AtomicBool,
    /// [`BatchOptions::overlap_masks`].
    overlap: AtomicBool,
}

/// Why a lane's step was not evaluated.
#[derive(Debug)]
enum Refused {
    /// The model was loaded again: replay the sequence and ask again.
    Reset,
    /// The model failed.
    Model(ModelError),
}

type Reply = Result<Vec<f32>, Refused>;

/// A lane's request for a step.
struct Ask {
    seq: usize,
    keep: usize,
    truncated: bool,
    tokens: Vec<u32>,
    /// The lane's logits buffer, sent back filled.
    buf: Vec<f32>,
    epoch: u64,
    reply: Sender<Reply>,
}

enum Msg {
    Ask(Ask),
    Stop,
}

/// A [`BatchModel`] on its own thread, and the [`Lane`]s into it.
///
/// Dropping it stops the thread once the step in progress is done; lanes then fail.
pub struct Batcher {
    tx: Sender<Msg>,
    shared: Arc<Shared>,
    facts: Arc<Facts>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher")
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

/// Counters of a [`Batcher`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// Steps evaluated.
    pub steps: u64,
    /// Sequences in those steps, all together (over `steps`: the mean batch).
    pub sequences: u64,
    /// Tokens in those steps.
    pub tokens: u64,
    /// Times the model was loaded again after a panic.
    pub restarts: u64,
}

impl Batcher {
    /// Starts the batcher's thread and runs `load` on it (so the model need not be `Send`);
    /// returns once the model is loaded. `load` runs again if the model panics.
    ///
    /// # Errors
    ///
    /// `load`'s error, as text, or why the thread could not start.
    pub fn spawn<B, F, E>(mut load: F, options: BatchOptions) -> Result<Batcher, String>
    where
        B: BatchModel + 'static,
        F: FnMut() -> Result<B, E> + Send + 'static,
        E: Display,
    {
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        shared
            .overlap
            .store(options.overlap_masks, Ordering::Relaxed);
        let thread_shared = shared.clone();
        let thread = std::thread::Builder::new()
            .name("stencil-batch".into())
            .spawn(move || {
                let model = match load() {
                    Ok(m) => m,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.to_string()));
                        return;
                    }
                };
                let facts = Facts {
                    vocab_size: model.vocab_size(),
                    context_size: model.context_size(),
                    sequences: model.max_sequences(),
                    describe: model.describe(),
                    depends_only_on_tokens: model.logits_depend_only_on_tokens(),
                };
                *thread_shared
                    .taken
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = vec![false; facts.sequences];
                let sequences = facts.sequences;
                if ready_tx.send(Ok(facts)).is_err() {
                    return;
                }
                let mut scheduler = Scheduler {
                    model: Ok(model),
                    load: Box::new(move || load().map_err(|e| e.to_string())),
                    rx,
                    shared: thread_shared,
                    options,
                    waiting: Vec::new(),
                    positions: vec![0; sequences],
                };
                scheduler.run();
                scheduler.shared.stopped.store(true, Ordering::SeqCst);
            })
            .map_err(|e| format!("cannot start the batch thread: {e}"))?;
        match ready_rx.recv() {
            Ok(Ok(facts)) if facts.sequences > 0 => Ok(Batcher {
                tx,
                shared,
                facts: Arc::new(facts),
                thread: Some(thread),
            }),
            Ok(Ok(_)) => {
                drop(tx);
                let _ = thread.join();
                Err("the model evaluates no sequence".into())
            }
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err("the batch thread stopped while loading the model".into())
            }
        }
    }

    /// Sequences evaluated together.
    pub fn sequences(&self) -> usize {
        self.facts.sequences
    }

    /// Positions each sequence may hold.
    pub fn context_size(&self) -> usize {
        self.facts.context_size
    }

    /// The model's description.
    pub fn describe(&self) -> &str {
        &self.facts.describe
    }

    /// The lane of sequence `seq`: `None` when `seq` is out of range or its lane is out (a
    /// dropped lane can be taken again).
    pub fn lane(&self, seq: usize) -> Option<Lane> {
        {
            let mut taken = self
                .shared
                .taken
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let slot = taken.get_mut(seq)?;
            if *slot {
                return None;
            }
            *slot = true;
        }
        let (reply_tx, reply_rx) = mpsc::channel();
        Some(Lane {
            seq,
            tx: self.tx.clone(),
            shared: self.shared.clone(),
            facts: self.facts.clone(),
            reply_tx,
            reply_rx,
            n_past: 0,
            history: Vec::new(),
            truncated: true,
            epoch: self.shared.epoch.load(Ordering::SeqCst),
            logits: Vec::new(),
        })
    }

    /// Lanes in a request now.
    pub fn busy(&self) -> usize {
        self.shared.busy.load(Ordering::SeqCst)
    }

    /// Counters since the start.
    pub fn stats(&self) -> BatchStats {
        self.counters().get()
    }

    /// A handle that reads [`Batcher::stats`] without keeping the batcher alive.
    pub fn counters(&self) -> BatchCounters {
        BatchCounters {
            shared: self.shared.clone(),
        }
    }
}

/// Reads a [`Batcher`]'s counters (see [`Batcher::counters`]).
#[derive(Clone, Debug)]
pub struct BatchCounters {
    shared: Arc<Shared>,
}

impl BatchCounters {
    /// The counters now.
    pub fn get(&self) -> BatchStats {
        let s = &self.shared;
        BatchStats {
            steps: s.steps.load(Ordering::Relaxed),
            sequences: s.step_sequences.load(Ordering::Relaxed),
            tokens: s.step_tokens.load(Ordering::Relaxed),
            restarts: s.restarts.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Batcher {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A request's steps so far.
struct Waiting {
    ask: Ask,
    /// Tokens of `ask` already evaluated (a prompt is evaluated in chunks).
    done: usize,
}

/// The batcher's thread.
struct Scheduler<B> {
    /// The model, or why it could not be loaded again.
    model: Result<B, String>,
    load: Box<dyn FnMut() -> Result<B, String>>,
    rx: Receiver<Msg>,
    shared: Arc<Shared>,
    options: BatchOptions,
    waiting: Vec<Waiting>,
    /// Positions each sequence holds.
    positions: Vec<usize>,
}

impl<B: BatchModel> Scheduler<B> {
    fn run(&mut self) {
        loop {
            if self.waiting.is_empty() {
                match self.rx.recv() {
                    Ok(Msg::Ask(ask)) => self.accept(ask),
                    Ok(Msg::Stop) | Err(_) => break,
                }
            }
            if !self.gather() {
                break;
            }
            if !self.waiting.is_empty() {
                self.step();
            }
        }
        for w in self.waiting.drain(..) {
            let _ = w.ask.reply.send(Err(Refused::Model(stopped())));
        }
    }

    /// Takes what the lanes ask until every busy lane has asked or the gather time is over;
    /// `false` once the batcher is told to stop.
    fn gather(&mut self) -> bool {
        let deadline = Instant::now() + self.options.gather;
        loop {
            loop {
                match self.rx.try_recv() {
                    Ok(Msg::Ask(ask)) => self.accept(ask),
                    Ok(Msg::Stop) => return false,
                    Err(_) => break,
                }
            }
            if self.waiting.len() >= self.shared.busy.load(Ordering::SeqCst) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            match self.rx.recv_timeout(deadline - now) {
                Ok(Msg::Ask(ask)) => self.accept(ask),
                Ok(Msg::Stop) => return false,
                Err(RecvTimeoutError::Timeout) => return true,
                Err(RecvTimeoutError::Disconnected) => return !self.waiting.is_empty(),
            }
        }
    }

    /// Queues a lane's request, or answers it at once when it cannot be evaluated.
    fn accept(&mut self, ask: Ask) {
        if ask.epoch != self.shared.epoch.load(Ordering::SeqCst) {
            let _ = ask.reply.send(Err(Refused::Reset));
            return;
        }
        let refuse = |ask: Ask, e: ModelError| {
            let _ = ask.reply.send(Err(Refused::Model(e)));
        };
        if let Err(e) = &self.model {
            let e = ModelError::Runtime(format!("the model is not loaded: {e}"));
            return refuse(ask, e);
        }
        let Some(&held) = self.positions.get(ask.seq) else {
            let e = ModelError::Runtime(format!("no sequence {} in this model", ask.seq));
            return refuse(ask, e);
        };
        if ask.keep > held {
            let e = ModelError::Runtime(format!(
                "sequence {} holds {held} positions, not {}",
                ask.seq, ask.keep
            ));
            return refuse(ask, e);
        }
        if ask.tokens.is_empty() || self.waiting.iter().any(|w| w.ask.seq == ask.seq) {
            let e = ModelError::Runtime("a step needs tokens, one at a time per sequence".into());
            return refuse(ask, e);
        }
        self.waiting.push(Waiting { ask, done: 0 });
    }

    /// Evaluates one step: the generating sequences' tokens first, then chunks of prompts
    /// within the token budget.
    fn step(&mut self) {
        let Ok(model) = &mut self.model else {
            return;
        };
        let mut order: Vec<usize> = (0..self.waiting.len()).collect();
        order.sort_by_key(|&i| self.waiting[i].ask.tokens.len() - self.waiting[i].done);
        let mut budget = model.max_batch_tokens().max(1);
        // (index into waiting, tokens taken)
        let mut chosen: Vec<(usize, usize)> = Vec::new();
        for i in order {
            if budget == 0 {
                break;
            }
            let w = &self.waiting[i];
            let take = (w.ask.tokens.len() - w.done).min(budget);
            budget -= take;
            chosen.push((i, take));
        }
        let mut bufs: Vec<Vec<f32>> = chosen
            .iter()
            .map(|&(i, _)| std::mem::take(&mut self.waiting[i].ask.buf))
            .collect();
        let steps: Vec<SeqStep<'_>> = chosen
            .iter()
            .map(|&(i, take)| {
                let w = &self.waiting[i];
                SeqStep {
                    seq: w.ask.seq,
                    keep: w.ask.keep + w.done,
                    truncated: w.ask.truncated && w.done == 0,
                    tokens: &w.ask.tokens[w.done..w.done + take],
                    logits: w.done + take == w.ask.tokens.len(),
                }
            })
            .collect();
        let started = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| model.decode(&steps, &mut bufs)));
        drop(steps);
        tracing::trace!(
            sequences = chosen.len(),
            tokens = chosen.iter().map(|&(_, take)| take).sum::<usize>(),
            waiting = self.waiting.len(),
            busy = self.shared.busy.load(Ordering::Relaxed),
            ms = started.elapsed().as_secs_f64() * 1e3,
            "step"
        );
        self.shared.steps.fetch_add(1, Ordering::Relaxed);
        self.shared
            .step_sequences
            .fetch_add(chosen.len() as u64, Ordering::Relaxed);
        let tokens: usize = chosen.iter().map(|&(_, take)| take).sum();
        self.shared
            .step_tokens
            .fetch_add(tokens as u64, Ordering::Relaxed);
        match result {
            Ok(Ok(())) => {
                for (&(i, take), buf) in chosen.iter().zip(bufs) {
                    let w = &mut self.waiting[i];
                    w.done += take;
                    w.ask.buf = buf;
                    self.positions[w.ask.seq] = w.ask.keep + w.done;
                }
                let mut i = 0;
                while i < self.waiting.len() {
                    if self.waiting[i].done == self.waiting[i].ask.tokens.len() {
                        let w = self.waiting.swap_remove(i);
                        let _ = w.ask.reply.send(Ok(w.ask.buf));
                    } else {
                        i += 1;
                    }
                }
            }
            Ok(Err(e)) => {
                let message = e.to_string();
                self.fail(&chosen, |_| ModelError::Runtime(message.clone()));
            }
            Err(panic) => {
                let what = panic_text(&*panic);
                tracing::error!(panic = %what, "the model panicked; it is loaded again");
                self.fail(&chosen, |_| {
                    ModelError::Runtime(format!("the model panicked: {what}"))
                });
                self.reload();
            }
        }
    }

    /// Answers the chosen requests with an error; their sequences hold what they held before
    /// the request.
    fn fail(&mut self, chosen: &[(usize, usize)], error: impl Fn(usize) -> ModelError) {
        let mut indices: Vec<usize> = chosen.iter().map(|&(i, _)| i).collect();
        indices.sort_unstable_by(|a, b| b.cmp(a));
        for i in indices {
            let w = self.waiting.swap_remove(i);
            self.positions[w.ask.seq] = w.ask.keep + w.done;
            let _ = w.ask.reply.send(Err(Refused::Model(error(w.ask.seq))));
        }
    }

    /// Loads the model again after a panic; every sequence starts empty, and the lanes that
    /// wait replay theirs.
    fn reload(&mut self) {
        self.model = Err("it is being loaded again".into());
        self.model = (self.load)();
        if let Err(e) = &self.model {
            tracing::error!(error = %e, "cannot load the model again");
        }
        self.shared.epoch.fetch_add(1, Ordering::SeqCst);
        self.shared.restarts.fetch_add(1, Ordering::Relaxed);
        self.positions.iter_mut().for_each(|p| *p = 0);
        for w in self.waiting.drain(..) {
            let _ = w.ask.reply.send(Err(Refused::Reset));
        }
        if let Some(hook) = &self.options.on_restart {
            hook();
        }
    }
}

fn stopped() -> ModelError {
    ModelError::Runtime("the batch thread has stopped".into())
}

/// The text of a panic's payload.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// One sequence of a [`Batcher`]'s model, as a [`Model`] for one [`crate::Generator`].
///
/// Its [`Model::forward_with`] asks the batcher for a step, runs `meanwhile` while the step is
/// evaluated (or first, see [`BatchOptions::overlap_masks`]), and waits for the logits. Mark the lane busy ([`Lane::busy`]) for the length of
/// each request, so the batcher waits for it when it gathers a step.
pub struct Lane {
    seq: usize,
    tx: Sender<Msg>,
    shared: Arc<Shared>,
    facts: Arc<Facts>,
    reply_tx: Sender<Reply>,
    reply_rx: Receiver<Reply>,
    n_past: usize,
    /// The tokens of the sequence (replayed if the model is loaded again).
    history: Vec<u32>,
    /// Truncated since the last step.
    truncated: bool,
    /// The model's epoch the sequence lives in.
    epoch: u64,
    logits: Vec<f32>,
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane")
            .field("seq", &self.seq)
            .field("n_past", &self.n_past)
            .finish_non_exhaustive()
    }
}

/// A lane's request in progress (see [`Lane::busy`]); dropping it ends it.
#[derive(Debug)]
pub struct Busy {
    shared: Arc<Shared>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.shared.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Lane {
    /// The lane's sequence.
    pub fn sequence(&self) -> usize {
        self.seq
    }

    /// Marks the lane busy until the guard is dropped: the batcher then waits (up to its
    /// gather time) for this lane's next step before evaluating one. Hold it for the length
    /// of a request.
    pub fn busy(&self) -> Busy {
        self.shared.busy.fetch_add(1, Ordering::SeqCst);
        Busy {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        let mut taken = self
            .shared
            .taken
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = taken.get_mut(self.seq) {
            *slot = false;
        }
    }
}

impl Model for Lane {
    fn vocab_size(&self) -> usize {
        self.facts.vocab_size
    }

    fn context_size(&self) -> usize {
        self.facts.context_size
    }

    fn n_past(&self) -> usize {
        self.n_past
    }

    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.forward_with(tokens, &mut || {})
    }

    fn forward_with(
        &mut self,
        tokens: &[u32],
        meanwhile: &mut dyn FnMut(),
    ) -> Result<&[f32], ModelError> {
        if tokens.is_empty() {
            return Err(ModelError::Runtime(
                "forward needs at least one token".into(),
            ));
        }
        let needed = self.n_past + tokens.len();
        if needed > self.facts.context_size {
            return Err(ModelError::ContextOverflow {
                needed,
                capacity: self.facts.context_size,
            });
        }
        let vocab_size = self.facts.vocab_size;
        if let Some(&id) = tokens.iter().find(|&&id| id as usize >= vocab_size) {
            return Err(ModelError::BadToken { id, vocab_size });
        }
        let mut meanwhile = Some(meanwhile);
        if !self.shared.overlap.load(Ordering::Relaxed)
            && let Some(f) = meanwhile.take()
        {
            f();
        }
        loop {
            let epoch = self.shared.epoch.load(Ordering::SeqCst);
            let ask = if epoch == self.epoch {
                Ask {
                    seq: self.seq,
                    keep: self.n_past,
                    truncated: self.truncated,
                    tokens: tokens.to_vec(),
                    buf: std::mem::take(&mut self.logits),
                    epoch,
                    reply: self.reply_tx.clone(),
                }
            } else {
                // The model was loaded again: the sequence is replayed from its start.
                let mut all = self.history[..self.n_past].to_vec();
                all.extend_from_slice(tokens);
                Ask {
                    seq: self.seq,
                    keep: 0,
                    truncated: true,
                    tokens: all,
                    buf: std::mem::take(&mut self.logits),
                    epoch,
                    reply: self.reply_tx.clone(),
                }
            };
            if self.tx.send(Msg::Ask(ask)).is_err() {
                return Err(stopped());
            }
            if let Some(f) = meanwhile.take() {
                f();
            }
            match self.reply_rx.recv() {
                Ok(Ok(buf)) => {
                    self.epoch = epoch;
                    self.logits = buf;
                    self.history.truncate(self.n_past);
                    self.history.extend_from_slice(tokens);
                    self.n_past += tokens.len();
                    self.truncated = false;
                    return Ok(&self.logits);
                }
                Ok(Err(Refused::Reset)) => self.epoch = u64::MAX,
                Ok(Err(Refused::Model(e))) => {
                    self.truncated = true;
                    return Err(e);
                }
                Err(_) => return Err(stopped()),
            }
            if self.shared.stopped.load(Ordering::SeqCst) {
                return Err(stopped());
            }
        }
    }

    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        self.n_past = self.n_past.min(n_past);
        self.truncated = true;
        Ok(())
    }

    fn logits_depend_only_on_tokens(&self) -> bool {
        self.facts.depends_only_on_tokens
    }

    fn describe(&self) -> String {
        self.facts.describe.clone()
    }
}
