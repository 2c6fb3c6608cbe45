//! What the server counts, for `GET /metrics` (the Prometheus text format, OpenMetrics flavour)
//! and `GET /health`.
//!
//! Counters and histograms are updated where things happen (the handlers, the compile pool,
//! the model thread); gauges that mirror a state held elsewhere (the queue, the slots) are set
//! when the metrics are read. Nothing here is updated per token.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The content type of [`Metrics::encode`]'s text.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Labels of `stencil_http_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct HttpLabels {
    /// `chat_completions`, `models`, `health`, `metrics` or `other`.
    pub route: &'static str,
    /// The HTTP status code.
    pub status: String,
}

/// Labels of `stencil_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    /// How a chat completion ended (see [`Outcome`]).
    pub outcome: &'static str,
}

/// How a chat completion that reached the server's queue ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Generated to its end.
    Completed,
    /// Stopped early: the client left, the request timed out, or shutdown cancelled it.
    Cancelled,
    /// The model thread answered with an error.
    Failed,
    /// Refused because the queue was full.
    RejectedQueueFull,
    /// Its client left while it waited in the queue.
    AbandonedInQueue,
    /// Ran past the server's request timeout.
    TimedOut,
}

impl Outcome {
    const ALL: [Outcome; 6] = [
        Outcome::Completed,
        Outcome::Cancelled,
        Outcome::Failed,
        Outcome::RejectedQueueFull,
        Outcome::AbandonedInQueue,
        Outcome::TimedOut,
    ];

    fn name(self) -> &'static str {
        match self {
            Outcome::Completed => "completed",
            Outcome::Cancelled => "cancelled",
            Outcome::Failed => "failed",
            Outcome::RejectedQueueFull => "rejected_queue_full",
            Outcome::AbandonedInQueue => "abandoned_in_queue",
            Outcome::TimedOut => "timed_out",
        }
    }
}

/// Labels of `stencil_schema_cache_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CacheLabels {
    /// `hit` (compiled before), `miss` (compiled now) or `failure_hit` (failed before: the
    /// same error again, without compiling).
    pub result: &'static str,
}

/// The server's metrics.
pub(crate) struct Metrics {
    registry: Registry,
    http: Family<HttpLabels, Counter>,
    outcomes: Family<OutcomeLabels, Counter>,
    /// Completion tokens generated (forced ones included).
    pub tokens_generated: Counter,
    /// Prompt tokens of finished requests.
    pub prompt_tokens: Counter,
    /// Per request: the mean time of one decoding step (model, mask, sampling).
    pub step_seconds: Histogram,
    /// Per constrained request: the mean time to compute one token mask.
    pub mask_seconds: Histogram,
    schema_cache: Family<CacheLabels, Counter>,
    /// Schema compiles that ran past the compile timeout.
    pub compile_timeouts: Counter,
    /// Times the model thread was restarted after a panic.
    pub worker_restarts: Counter,
    /// Requests waiting in the queue.
    pub queue_depth: Gauge,
    /// Requests that may wait in the queue.
    pub queue_capacity: Gauge,
    /// Requests generating now.
    pub slots_active: Gauge,
    /// Requests that may generate at once.
    pub slots_total: Gauge,
    /// HTTP connections open now.
    pub connections_open: Gauge,
    /// Batched model steps, the sequences and the tokens in them (mirrored from the batcher
    /// when the metrics are read, under `mirror`).
    batch_steps: Counter,
    batch_sequences: Counter,
    batch_tokens: Counter,
    mirror: std::sync::Mutex<()>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("stencil");
        let http = Family::<HttpLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP responses by route and status",
            http.clone(),
        );
        let outcomes = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "requests",
            "Chat completions by how they ended",
            outcomes.clone(),
        );
        for o in Outcome::ALL {
            // Every outcome shows, from zero.
            let _ = outcomes.get_or_create(&OutcomeLabels { outcome: o.name() });
        }
        let tokens_generated = Counter::default();
        registry.register(
            "tokens_generated",
            "Completion tokens generated",
            tokens_generated.clone(),
        );
        let prompt_tokens = Counter::default();
        registry.register(
            "prompt_tokens",
            "Prompt tokens of finished requests",
            prompt_tokens.clone(),
        );
        // 0.5 ms to about 16 s.
        let step_seconds = Histogram::new(exponential_buckets(0.0005, 2.0, 16));
        registry.register(
            "step_seconds",
            "Mean time of one decoding step (model, mask, sampling), per request",
            step_seconds.clone(),
        );
        // 0.25 µs to about 4 s.
        let mask_seconds = Histogram::new(exponential_buckets(2.5e-7, 4.0, 13));
        registry.register(
            "mask_seconds",
            "Mean time to compute one token mask, per constrained request",
            mask_seconds.clone(),
        );
        let schema_cache = Family::<CacheLabels, Counter>::default();
        registry.register(
            "schema_cache",
            "Schema compile cache lookups by result (hit, miss, failure_hit)",
            schema_cache.clone(),
        );
        for result in ["hit", "miss", "failure_hit"] {
            let _ = schema_cache.get_or_create(&CacheLabels { result });
        }
        let compile_timeouts = Counter::default();
        registry.register(
            "schema_compile_timeouts",
            "Schema compiles that ran past the compile timeout",
            compile_timeouts.clone(),
        );
        let worker_restarts = Counter::default();
        registry.register(
            "worker_restarts",
            "Restarts of the model thread after a panic",
            worker_restarts.clone(),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let g = Gauge::default();
            registry.register(name, help, g.clone());
            g
        };
        let queue_depth = gauge(
            &mut registry,
            "queue_depth",
            "Requests waiting in the queue",
        );
        let queue_capacity = gauge(
            &mut registry,
            "queue_capacity",
            "Requests that may wait in the queue",
        );
        let slots_active = gauge(&mut registry, "slots_active", "Requests generating now");
        let slots_total = gauge(
            &mut registry,
            "slots_total",
            "Requests that may generate at once",
        );
        let connections_open = gauge(
            &mut registry,
            "http_connections_open",
            "HTTP connections open now",
        );
        let batch_steps = Counter::default();
        registry.register(
            "batch_steps",
            "Batched model steps (one evaluation of the next tokens of every slot that asked)",
            batch_steps.clone(),
        );
        let batch_sequences = Counter::default();
        registry.register(
            "batch_sequences",
            "Sequences in those steps, all together (over the steps: the mean batch)",
            batch_sequences.clone(),
        );
        let batch_tokens = Counter::default();
        registry.register(
            "batch_tokens",
            "Tokens evaluated in those steps (prompts included)",
            batch_tokens.clone(),
        );
        Metrics {
            registry,
            http,
            outcomes,
            tokens_generated,
            prompt_tokens,
            step_seconds,
            mask_seconds,
            schema_cache,
            compile_timeouts,
            worker_restarts,
            queue_depth,
            queue_capacity,
            slots_active,
            slots_total,
            connections_open,
            batch_steps,
            batch_sequences,
            batch_tokens,
            mirror: std::sync::Mutex::new(()),
        }
    }
}

impl Metrics {
    /// Brings the batch counters up to the batcher's.
    pub fn mirror_batches(&self, stats: generate::BatchStats) {
        let _guard = self
            .mirror
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (counter, total) in [
            (&self.batch_steps, stats.steps),
            (&self.batch_sequences, stats.sequences),
            (&self.batch_tokens, stats.tokens),
        ] {
            counter.inc_by(total.saturating_sub(counter.get()));
        }
    }

    /// Counts an HTTP response.
    pub fn http(&self, route: &'static str, status: u16) {
        self.http
            .get_or_create(&HttpLabels {
                route,
                status: status.to_string(),
            })
            .inc();
    }

    /// Counts how a chat completion ended.
    pub fn outcome(&self, outcome: Outcome) {
        self.outcomes
            .get_or_create(&OutcomeLabels {
                outcome: outcome.name(),
            })
            .inc();
    }

    /// How many chat completions ended so.
    pub fn outcomes(&self, outcome: Outcome) -> u64 {
        self.outcomes
            .get_or_create(&OutcomeLabels {
                outcome: outcome.name(),
            })
            .get()
    }

    /// Counts a schema cache lookup: `hit`, `miss` or `failure_hit`.
    pub fn schema_cache(&self, result: &'static str) {
        self.schema_cache
            .get_or_create(&CacheLabels { result })
            .inc();
    }

    /// How many schema cache lookups gave `result`.
    pub fn schema_cache_count(&self, result: &'static str) -> u64 {
        self.schema_cache
            .get_or_create(&CacheLabels { result })
            .get()
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing into a String does not fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
