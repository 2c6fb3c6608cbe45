//! One decode loop: mask, sample, commit and stream, token after token, from the first
//! sampled token to the stop.
//!
//! [`Decoder`] holds everything a generation keeps between steps (sampler, history, text,
//! mask, counters) in buffers allocated once, so a step allocates nothing unless the output
//! grows (the text, the history, the log probabilities asked for) or the constraint forces
//! text. [`BudgetGuard`] is the one rule that keeps a constrained document closable within
//! `max_tokens`.

use std::sync::Arc;
use std::time::Instant;

use mask_kernel::{
    FixedBitSet, MaskCache, MaskError, MaskStats, Recognizer, Session, SharedMaskCache, apply,
};
use sampler::Sampler;
use serde_json::json;
use vocab_index::{TokenId, Vocabulary};

use super::{
    CLOSING_WINDOW, GenerateOptions, Generator, LogprobSink, MAX_TOP_LOGPROBS, Output, StopReason,
    Timing, TokenLogprob, forced_logprob, sampled_logprob, snapshot,
};
use crate::error::GenerateError;
use crate::model::Model;
use crate::stream::Utf8Stream;

/// Keeps a constrained document closable within the token budget.
///
/// Within [`CLOSING_WINDOW`] tokens of the end, committed tokens after which the shortest
/// completion no longer fits in what is left are taken back, and the next step writes that
/// completion instead (then nothing is taken back again, so a document that cannot be closed
/// in time still ends, as truncated).
struct BudgetGuard {
    on: bool,
    /// Set when tokens were taken back: the next step closes the document.
    must_close: bool,
}

impl BudgetGuard {
    /// With `remaining` tokens left before this step: the tokens that close the document now,
    /// when it is time (they just fit, or tokens were taken back).
    fn closing<M: Model, R: Recognizer>(
        &self,
        g: &Generator<M>,
        session: &mut Session<R>,
        remaining: usize,
    ) -> Option<Vec<TokenId>> {
        if !self.on || remaining > CLOSING_WINDOW {
            return None;
        }
        let tokens = g.closing_tokens(session)?;
        ((self.must_close || tokens.len() + 1 >= remaining) && tokens.len() <= remaining)
            .then_some(tokens)
    }

    /// After `n` tokens were committed with `remaining` left before them: whether they must
    /// be taken back because the document could no longer be closed in time.
    fn takes_back<M: Model, R: Recognizer>(
        &mut self,
        g: &Generator<M>,
        session: &mut Session<R>,
        remaining: usize,
        n: usize,
    ) -> bool {
        if !self.on || remaining > CLOSING_WINDOW || self.must_close {
            return false;
        }
        self.must_close = g
            .closing_tokens(session)
            .is_some_and(|c| c.len() > remaining - n);
        self.must_close
    }
}

/// Log probabilities, when they were asked for.
struct Logprobs {
    /// How many alternatives per token; `None`: nothing is recorded.
    top_n: Option<usize>,
    entries: Vec<TokenLogprob>,
    sink: Option<LogprobSink>,
    /// The masked logits before sampling changes them, and the likeliest tokens among them.
    raw: Vec<f32>,
    top: Vec<(u32, f32)>,
}

impl Logprobs {
    fn record(&mut self, entry: TokenLogprob) {
        if let Some(sink) = &self.sink
            && let Ok(mut s) = sink.lock()
        {
            s.push(entry.clone());
        }
        self.entries.push(entry);
    }

    /// Snapshots `logits` before sampling: the log of their sum of exponentials, when asked.
    fn before_sampling(&mut self, logits: &[f32]) -> Option<f32> {
        let n = self.top_n?;
        Some(snapshot(logits, n, &mut self.raw, &mut self.top))
    }

    fn sampled(&mut self, vocab: &Vocabulary, token: TokenId, lse: Option<f32>) {
        if let Some(lse) = lse {
            let entry = sampled_logprob(vocab, token, &self.raw, &self.top, lse);
            self.record(entry);
        }
    }

    fn forced(&mut self, vocab: &Vocabulary, tokens: &[TokenId]) {
        if self.top_n.is_some() {
            for &t in tokens {
                self.record(forced_logprob(vocab, t));
            }
        }
    }
}

/// The next mask, computed while the model evaluated the last tokens: its result, the time it
/// took and the part of that time decoding waited for it, in µs.
type Prepared = Option<(Result<MaskStats, MaskError>, f64, f64)>;

/// Most bytes of the sets inside strings a request keeps beside its grammar's masks.
const INSIDE_BYTES: usize = 16 << 20;

/// The state of one generation between its steps.
pub(super) struct Decoder<'a> {
    opts: &'a GenerateOptions,
    on_text: &'a mut dyn FnMut(&str) -> bool,
    vocab: Arc<Vocabulary>,
    sampler: Sampler,
    history: Vec<u32>,
    stream: Utf8Stream,
    text: String,
    /// The piece of text a step adds.
    piece: String,
    cancelled: bool,
    mask: FixedBitSet,
    /// The request's own cache beside its grammar's masks: the sets of tokens inside strings.
    inside: MaskCache,
    /// The mask less whitespace and end of sequence, to tell whether a document is over.
    rest: FixedBitSet,
    /// Bytes the constraint forces.
    forced_bytes: Vec<u8>,
    prepared: Prepared,
    guard: BudgetGuard,
    logprobs: Logprobs,
    mask_ms: f64,
    /// The part of `mask_ms` decoding waited for.
    exposed_ms: f64,
    masks: usize,
    forced: usize,
    step: usize,
}

impl<'a> Decoder<'a> {
    pub(super) fn new<M: Model>(
        g: &Generator<M>,
        opts: &'a GenerateOptions,
        on_text: &'a mut dyn FnMut(&str) -> bool,
    ) -> Result<Decoder<'a>, GenerateError> {
        let vocab = g.tokenizer.vocab().clone();
        let mut sampler = Sampler::new(opts.sampler.clone(), opts.seed)?;
        sampler.reserve(g.logits.len());
        Ok(Decoder {
            opts,
            on_text,
            sampler,
            history: Vec::with_capacity(opts.max_tokens.min(1 << 16)),
            stream: Utf8Stream::default(),
            text: String::new(),
            piece: String::new(),
            cancelled: false,
            mask: FixedBitSet::with_capacity(vocab.len()),
            inside: MaskCache::new(INSIDE_BYTES),
            rest: FixedBitSet::with_capacity(vocab.len()),
            forced_bytes: Vec::with_capacity(256),
            prepared: None,
            guard: BudgetGuard {
                on: opts.close_at_budget,
                must_close: false,
            },
            logprobs: Logprobs {
                top_n: opts.logprobs.map(|n| n.min(MAX_TOP_LOGPROBS)),
                entries: Vec::new(),
                sink: g.logprob_sink.clone(),
                raw: Vec::new(),
                top: Vec::new(),
            },
            vocab,
            mask_ms: 0.0,
            exposed_ms: 0.0,
            masks: 0,
            forced: 0,
            step: 0,
        })
    }

    /// Runs steps until one stops the generation.
    pub(super) fn run<M: Model, R: Recognizer>(
        &mut self,
        g: &mut Generator<M>,
        mut constraint: Option<(Session<R>, &SharedMaskCache)>,
    ) -> Result<(StopReason, bool), GenerateError> {
        let stop = loop {
            if self.cancelled {
                break StopReason::Cancelled;
            }
            let remaining = self.opts.max_tokens.saturating_sub(self.history.len());
            if remaining == 0 {
                break StopReason::MaxTokens;
            }
            let stop = match constraint.as_mut() {
                Some((session, masks)) => self.constrained_step(g, session, masks, remaining)?,
                None => self.free_step(g)?,
            };
            if let Some(stop) = stop {
                break stop;
            }
        };
        self.piece.clear();
        self.stream.finish_into(&mut self.piece);
        if !self.piece.is_empty() {
            (self.on_text)(&self.piece);
            self.text.push_str(&self.piece);
        }
        let complete = match &constraint {
            Some((session, _)) => session.is_accepting(),
            None => stop != StopReason::MaxTokens,
        };
        Ok((stop, complete))
    }

    /// The output, once [`Decoder::run`] stopped with `stop`.
    pub(super) fn output(
        self,
        stop: StopReason,
        complete: bool,
        prompt_tokens: usize,
        prompt_ms: f64,
        decode_ms: f64,
    ) -> Output {
        let completion_tokens = self.history.len();
        // A total over the masks, as a mean per mask in µs.
        let masks = self.masks;
        let per_mask_us = |ms: f64| {
            if masks > 0 {
                ms * 1e3 / masks as f64
            } else {
                0.0
            }
        };
        Output {
            text: self.text,
            prompt_tokens,
            completion_tokens,
            forced_tokens: self.forced,
            stop,
            complete,
            timing: Timing {
                compile_ms: 0.0,
                prompt_ms,
                decode_ms,
                tokens_per_s: if decode_ms > 0.0 {
                    completion_tokens as f64 / (decode_ms / 1e3)
                } else {
                    0.0
                },
                mask_us_mean: per_mask_us(self.mask_ms),
                mask_ms_total: self.mask_ms,
                mask_exposed_us_mean: per_mask_us(self.exposed_ms),
            },
            logprobs: self.logprobs.entries,
            reasoning: None,
            reasoning_tokens: 0,
        }
    }

    /// Streams the text of `tokens` (whole characters only) and counts them as generated.
    fn emit(&mut self, tokens: &[TokenId]) {
        for &t in tokens {
            self.piece.clear();
            self.stream.push_into(self.vocab.bytes(t), &mut self.piece);
            if !self.piece.is_empty() {
                self.cancelled |= !(self.on_text)(&self.piece);
                self.text.push_str(&self.piece);
            }
        }
        self.history.extend(tokens.iter().map(|t| t.as_u32()));
    }

    /// One step under a constraint: close at the budget, feed forced text, or mask and sample.
    fn constrained_step<M: Model, R: Recognizer>(
        &mut self,
        g: &mut Generator<M>,
        session: &mut Session<R>,
        masks: &SharedMaskCache,
        remaining: usize,
    ) -> Result<Option<StopReason>, GenerateError> {
        if let Some(tokens) = self.guard.closing(g, session, remaining) {
            for &t in &tokens {
                session.commit(t)?;
            }
            self.logprobs.forced(&self.vocab, &tokens);
            self.emit(&tokens);
            self.forced += tokens.len();
            let step = self.step;
            g.trace_with(|| json!({"step": step, "closing": tokens.len()}));
            return Ok(Some(if self.cancelled {
                StopReason::Cancelled
            } else {
                StopReason::BudgetClosed
            }));
        }
        if self.opts.fast_forward {
            session.forced_bytes_into(256, &mut self.forced_bytes);
            if !self.forced_bytes.is_empty()
                && let Some(mut tokens) = g.kernel.longest_tokens(&self.forced_bytes)
            {
                tokens.truncate(remaining);
                for &t in &tokens {
                    session.commit(t)?;
                }
                // Forced text (a long key) after which the shortest completion no longer
                // fits is taken back, and the document closed from before it.
                if self.guard.takes_back(g, session, remaining, tokens.len()) {
                    session.rollback(tokens.len())?;
                    self.prepared = None;
                    let step = self.step;
                    g.trace_with(|| json!({"step": step, "taken_back": tokens.len()}));
                    return Ok(None);
                }
                self.logprobs.forced(&self.vocab, &tokens);
                self.emit(&tokens);
                self.forced += tokens.len();
                let (step, bytes) = (self.step, &self.forced_bytes);
                g.trace_with(|| {
                    json!({"step": step, "forced": tokens.len(),
                        "text": String::from_utf8_lossy(bytes)})
                });
                self.step += 1;
                self.feed(g, session, masks, &tokens)?;
                return Ok(None);
            }
        }
        let (stats, us, exposed) = match self.prepared.take() {
            Some((stats, us, exposed)) => (stats?, us, exposed),
            None => {
                let t = Instant::now();
                let stats = session.mask_shared(masks, &mut self.inside, &mut self.mask)?;
                let us = t.elapsed().as_secs_f64() * 1e6;
                (stats, us, us)
            }
        };
        self.mask_ms += us / 1e3;
        self.exposed_ms += exposed / 1e3;
        self.masks += 1;
        // Complete document, and nothing but whitespace or end of sequence can follow.
        if session.is_accepting() {
            self.rest.clone_from(&self.mask);
            self.rest.difference_with(&g.whitespace);
            for e in g.kernel.eos() {
                self.rest.set(e.as_usize(), false);
            }
            if self.rest.is_clear() {
                return Ok(Some(StopReason::Complete));
            }
        }
        apply(&self.mask, &mut g.logits)?;
        let lse = self.logprobs.before_sampling(&g.logits);
        let token = self.sampler.sample(&mut g.logits, &self.history)?;
        let token = TokenId::new(token).expect("sampled inside the vocabulary");
        session.commit(token)?;
        // A token after which the shortest completion no longer fits (say a `,` that opens
        // one more item) is taken back, and the document is closed instead.
        if self.guard.takes_back(g, session, remaining, 1) {
            session.rollback(1)?;
            self.prepared = None;
            let step = self.step;
            g.trace_with(|| json!({"step": step, "taken_back": token.as_u32()}));
            return Ok(None);
        }
        let (step, vocab) = (self.step, &self.vocab);
        g.trace_with(|| {
            json!({"step": step, "token": token.as_u32(),
                "text": String::from_utf8_lossy(vocab.bytes(token)),
                "allowed": stats.allowed, "cache_hit": stats.cache_hit, "mask_us": us})
        });
        self.step += 1;
        if session.is_finished() {
            return Ok(Some(StopReason::Eos));
        }
        self.logprobs.sampled(&self.vocab, token, lse);
        self.emit(&[token]);
        self.feed(g, session, masks, &[token])?;
        Ok(None)
    }

    /// Feeds `tokens` to the model, preparing the next mask while it evaluates them (it
    /// depends only on them), unless the constraint forces the next bytes.
    fn feed<M: Model, R: Recognizer>(
        &mut self,
        g: &mut Generator<M>,
        session: &mut Session<R>,
        masks: &SharedMaskCache,
        tokens: &[TokenId],
    ) -> Result<(), GenerateError> {
        let (prepared, mask, forced) = (&mut self.prepared, &mut self.mask, &mut self.forced_bytes);
        let inside = &mut self.inside;
        let fast_forward = self.opts.fast_forward;
        g.feed_with(tokens, &mut || {
            if fast_forward {
                session.forced_bytes_into(256, forced);
                if !forced.is_empty() {
                    *prepared = None;
                    return;
                }
            }
            let t = Instant::now();
            let stats = session.mask_shared(masks, inside, mask);
            let us = t.elapsed().as_secs_f64() * 1e6;
            *prepared = Some((stats, us, us));
        })?;
        if let (Some((_, _, exposed)), Some(wait)) =
            (&mut self.prepared, g.model.last_overlap_wait())
        {
            *exposed = wait.as_secs_f64() * 1e6;
        }
        Ok(())
    }

    /// One unconstrained step: only ids the tokenizer knows, up to a stop string.
    fn free_step<M: Model>(
        &mut self,
        g: &mut Generator<M>,
    ) -> Result<Option<StopReason>, GenerateError> {
        let n_logits = g.model.vocab_size();
        for l in &mut g.logits[self.vocab.len().min(n_logits)..] {
            *l = f32::NEG_INFINITY;
        }
        if self.opts.ignore_eos {
            let vocab = &self.vocab;
            for &e in vocab.eos_ids().iter().chain(vocab.end_of_turn_ids()) {
                if let Some(l) = g.logits.get_mut(e.as_usize()) {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
        let lse = self.logprobs.before_sampling(&g.logits);
        let token = self.sampler.sample(&mut g.logits, &self.history)?;
        let token = TokenId::new(token).expect("sampled inside the vocabulary");
        let (step, vocab) = (self.step, &self.vocab);
        g.trace_with(|| {
            json!({"step": step, "token": token.as_u32(),
                "text": String::from_utf8_lossy(vocab.bytes(token))})
        });
        self.step += 1;
        if self.vocab.is_eos(token) || self.vocab.end_of_turn_ids().contains(&token) {
            return Ok(Some(StopReason::Eos));
        }
        if self.vocab.is_special(token) {
            self.history.push(token.as_u32());
        } else {
            self.logprobs.sampled(&self.vocab, token, lse);
            self.emit(&[token]);
        }
        if let Some(at) = self
            .opts
            .stop
            .iter()
            .find_map(|s| self.text.find(s.as_str()))
        {
            self.text.truncate(at);
            return Ok(Some(StopReason::Stop));
        }
        g.feed(&[token])?;
        Ok(None)
    }
}
