//! The compile pool: schemas are compiled off the model thread, a few at a time, each within a
//! deadline, and both compiled grammars and failures are remembered.
//!
//! A schema can take seconds to compile (a long `\p{L}{1000}` pattern, a `oneOf` of hundreds of
//! overlapping ranges). Compiled on the model thread, such a schema held every other request
//! up; here it holds one of [`CompilePool`]'s threads (Tokio's blocking pool, at most
//! `threads` at once, bounded by a semaphore) while the model goes on generating. A request
//! waits for its compile until the deadline and is then answered 400
//! (`schema_compile_timeout`). The compile itself is given the same time
//! ([`schema_compiler::Limits::max_compile_time`]) and stops there, freeing its thread; a
//! compile that ends meanwhile is remembered all the same: a grammar goes into the cache (the
//! next request with the schema finds it), an error into the failure cache (the next request
//! gets the same 400 at once, without compiling again).
//!
//! The grammars are compiled with the model thread's generator's options and handed to it
//! with the request ([`generate::Generator::add_shared`]), where they join its own cache. Each
//! comes with its mask cache, kept here with it: every lane generating under a schema shares
//! it, so a state one request met costs the others a copy.

use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use lru::LruCache;
use mask_kernel::SharedMaskCache;
use schema_compiler::json_text::RoundedNumbers;
use schema_compiler::{CompileError, Compiler, Grammar, Options, PropertyOrder};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::metrics::Metrics;

/// Compiled grammars remembered (as many as the generator keeps).
const GRAMMARS: usize = 32;
/// Failed schemas remembered.
const FAILURES: usize = 64;

/// Why a schema has no grammar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The schema does not compile.
    Invalid(CompileError),
    /// Compiling it ran past the deadline (it may still be compiling).
    TimedOut {
        /// The deadline.
        limit: Duration,
    },
    /// Every compile thread stayed busy until the deadline.
    Busy {
        /// The number of compile threads.
        threads: usize,
    },
    /// The compiler panicked (a bug; the schema is remembered as failing).
    Crashed(String),
}

/// A grammar and its mask cache, kept for the requests with its schema.
type Kept = (Arc<Grammar>, Arc<SharedMaskCache>);

/// A grammar, its mask cache, and whether they came from the cache.
pub(crate) struct Compiled {
    pub grammar: Arc<Grammar>,
    pub masks: Arc<SharedMaskCache>,
    pub hit: bool,
}

/// Compiles schemas on Tokio's blocking threads, a few at a time, with a deadline.
pub(crate) struct CompilePool {
    options: Options,
    permits: Arc<Semaphore>,
    threads: usize,
    timeout: Duration,
    grammars: Mutex<LruCache<String, Kept>>,
    failures: Mutex<LruCache<String, Failure>>,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for CompilePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompilePool")
            .field("threads", &self.threads)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The caches stay consistent whatever panicked while one was held.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CompilePool {
    /// A pool compiling with `options`, at most `threads` schemas at once, each within
    /// `timeout`.
    pub fn new(
        options: Options,
        threads: usize,
        timeout: Duration,
        metrics: Arc<Metrics>,
    ) -> CompilePool {
        let threads = threads.max(1);
        let mut options = options;
        options.limits.max_compile_time = Some(timeout);
        CompilePool {
            options,
            permits: Arc::new(Semaphore::new(threads)),
            threads,
            timeout,
            grammars: Mutex::new(LruCache::new(
                NonZeroUsize::new(GRAMMARS).expect("non-zero"),
            )),
            failures: Mutex::new(LruCache::new(
                NonZeroUsize::new(FAILURES).expect("non-zero"),
            )),
            metrics,
        }
    }

    /// The member order of a request that asks for `requested` (the schema's where it is
    /// strict): the schema's when either the request or the server's own options ask for it.
    pub fn order_for(&self, requested: PropertyOrder) -> PropertyOrder {
        if requested == PropertyOrder::Schema {
            PropertyOrder::Schema
        } else {
            self.options.property_order
        }
    }

    /// The compile deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The grammar of `schema` with members in `order`: from the cache, or compiled now
    /// within the deadline. `rounded` holds the values that number literals of the request's
    /// text were rounded to when read, refused where the schema compares values with them.
    pub async fn grammar(
        self: &Arc<Self>,
        schema: &Value,
        order: PropertyOrder,
        rounded: &RoundedNumbers,
    ) -> Result<Compiled, Failure> {
        let key = if rounded.is_empty() {
            format!("{order:?}\0{schema}")
        } else {
            format!("{order:?}\0{rounded:?}\0{schema}")
        };
        if let Some((grammar, masks)) = lock(&self.grammars).get(&key) {
            self.metrics.schema_cache("hit");
            return Ok(Compiled {
                grammar: grammar.clone(),
                masks: masks.clone(),
                hit: true,
            });
        }
        if let Some(f) = lock(&self.failures).get(&key) {
            self.metrics.schema_cache("failure_hit");
            return Err(f.clone());
        }
        self.metrics.schema_cache("miss");
        let deadline = tokio::time::Instant::now() + self.timeout;
        let permit =
            match tokio::time::timeout_at(deadline, self.permits.clone().acquire_owned()).await {
                Ok(Ok(permit)) => permit,
                // Never closed; a timeout means every thread stayed busy.
                Ok(Err(_)) | Err(_) => {
                    return Err(Failure::Busy {
                        threads: self.threads,
                    });
                }
            };
        let pool = self.clone();
        let schema = schema.clone();
        let rounded = rounded.clone();
        let owned_key = key.clone();
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let _span = tracing::debug_span!("compile pool").entered();
            let t = Instant::now();
            let result = catch_unwind(AssertUnwindSafe(|| {
                Compiler::new(pool.options.clone().property_order(order))
                    .rounded_numbers(&rounded)
                    .compile(&schema)
            }));
            let result = match result {
                Ok(Ok(g)) => Ok((Arc::new(g), generate::new_mask_cache())),
                Ok(Err(CompileError::Limit {
                    limit: "max_compile_time",
                    ..
                })) => Err(Failure::TimedOut {
                    limit: pool.timeout,
                }),
                Ok(Err(e)) => Err(Failure::Invalid(e)),
                Err(panic) => Err(Failure::Crashed(panic_message(&*panic))),
            };
            pool.remember(owned_key, &result);
            tracing::debug!(
                ms = format_args!("{:.1}", t.elapsed().as_secs_f64() * 1e3),
                ok = result.is_ok(),
                "schema compiled"
            );
            result
        });
        match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok(r)) => {
                if matches!(r, Err(Failure::TimedOut { .. })) {
                    self.metrics.compile_timeouts.inc();
                }
                r.map(|(grammar, masks)| Compiled {
                    grammar,
                    masks,
                    hit: false,
                })
            }
            // The closure catches panics; a join error means the runtime is shutting down.
            Ok(Err(e)) => Err(Failure::Crashed(e.to_string())),
            Err(_) => {
                self.metrics.compile_timeouts.inc();
                let failure = Failure::TimedOut {
                    limit: self.timeout,
                };
                // Unless the compile ended meanwhile, later requests with this schema are
                // refused at once while it runs.
                let grammars = lock(&self.grammars);
                let mut failures = lock(&self.failures);
                if !grammars.contains(&key) && !failures.contains(&key) {
                    failures.put(key, failure.clone());
                }
                Err(failure)
            }
        }
    }

    /// Records a finished compile.
    fn remember(&self, key: String, result: &Result<Kept, Failure>) {
        let mut grammars = lock(&self.grammars);
        let mut failures = lock(&self.failures);
        match result {
            Ok(kept) => {
                failures.pop(&key);
                grammars.put(key, kept.clone());
            }
            Err(f) => {
                failures.put(key, f.clone());
            }
        }
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool(timeout: Duration) -> Arc<CompilePool> {
        Arc::new(CompilePool::new(
            Options::generation(),
            1,
            timeout,
            Arc::new(Metrics::default()),
        ))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn grammars_and_failures_are_remembered() {
        let pool = pool(Duration::from_secs(600));
        let schema = json!({"type": "integer"});
        assert!(
            !pool
                .grammar(&schema, PropertyOrder::Any, &RoundedNumbers::default())
                .await
                .unwrap()
                .hit
        );
        assert!(
            pool.grammar(&schema, PropertyOrder::Any, &RoundedNumbers::default())
                .await
                .unwrap()
                .hit
        );
        let bad = json!({"type": "integer", "minimum": "zero"});
        let first = pool
            .grammar(&bad, PropertyOrder::Any, &RoundedNumbers::default())
            .await
            .err()
            .unwrap();
        assert!(matches!(first, Failure::Invalid(_)), "{first:?}");
        assert_eq!(
            pool.grammar(&bad, PropertyOrder::Any, &RoundedNumbers::default())
                .await
                .err(),
            Some(first)
        );
        let m = &pool.metrics;
        assert_eq!(m.schema_cache_count("hit"), 1);
        assert_eq!(m.schema_cache_count("miss"), 2);
        assert_eq!(m.schema_cache_count("failure_hit"), 1);
    }
}
