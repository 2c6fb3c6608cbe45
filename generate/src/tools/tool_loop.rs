//! The multi-trip tool loop: generate, run the called tools, feed the results back, repeat.

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Reply, Tool, ToolCall, ToolChoice, TurnOptions};
use crate::engine::{GenerateOptions, Generator, Output, StopReason};
use crate::error::GenerateError;
use crate::model::Model;
use crate::template::Message;

type HandlerFn = dyn Fn(Value) -> Result<Value, String> + Send + Sync;

/// The Rust side of a tool: takes the call's arguments, returns a JSON result or an error
/// message (both are shown to the model).
///
/// Handlers are synchronous. An async function becomes a handler with
/// [`ToolHandler::from_async`], which polls the future to completion on the calling thread
/// (a blocking adapter): that suits futures that do not need a runtime's reactor. For futures
/// that do (for example tokio I/O), wrap `Handle::block_on` in [`ToolHandler::new`] instead,
/// from a thread that is not a runtime worker.
#[derive(Clone)]
pub struct ToolHandler(Arc<HandlerFn>);

impl std::fmt::Debug for ToolHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ToolHandler")
    }
}

impl ToolHandler {
    /// A handler from a closure.
    pub fn new<F>(f: F) -> ToolHandler
    where
        F: Fn(Value) -> Result<Value, String> + Send + Sync + 'static,
    {
        ToolHandler(Arc::new(f))
    }

    /// A handler from an async closure, run to completion by a minimal executor (the thread
    /// parks until the future's waker fires).
    pub fn from_async<F, Fut>(f: F) -> ToolHandler
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, String>> + Send + 'static,
    {
        ToolHandler::new(move |args| block_on(f(args)))
    }

    /// Runs the handler.
    pub fn call(&self, arguments: Value) -> Result<Value, String> {
        (self.0)(arguments)
    }
}

/// Polls `fut` on this thread until it is ready.
fn block_on<F: Future>(fut: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = pin!(fut);
    loop {
        match fut.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

/// One tool call run by the loop.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The call.
    pub call: ToolCall,
    /// What the handler returned (`Err` also for a panic or a timeout).
    pub result: Result<Value, String>,
    /// The `tool` message content given to the model: the result (a string as is, other JSON
    /// as text) or `error: <message>`.
    pub content: String,
    /// Time in the handler.
    pub ms: f64,
}

/// What happened in one trip.
#[derive(Debug, Clone, PartialEq)]
pub struct TripStats {
    /// 1-based.
    pub trip: usize,
    /// The tool choice used.
    pub choice: ToolChoice,
    /// The generation (tokens, timings, raw text).
    pub output: Output,
    /// The calls the model made (empty for a text answer).
    pub calls: Vec<ToolCall>,
    /// The calls that were run.
    pub outcomes: Vec<ToolOutcome>,
    /// Wall time of the whole trip.
    pub ms: f64,
}

/// Why the loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopStop {
    /// The model answered in text.
    Answer,
    /// The model called a tool that has no handler: the calls are in
    /// [`LoopResult::pending`].
    UnhandledCalls,
    /// `max_trips` trips ended in calls.
    MaxTrips,
    /// The event callback asked to stop.
    Cancelled,
}

/// The result of [`ToolLoop::run`].
#[derive(Debug, Clone, PartialEq)]
pub struct LoopResult {
    /// The final text answer, when the loop ended with one.
    pub answer: Option<String>,
    /// Why the loop ended.
    pub stop: LoopStop,
    /// The whole conversation: the messages given, then each trip's assistant message and
    /// `tool` results.
    pub messages: Vec<Message>,
    /// Calls left without a handler ([`LoopStop::UnhandledCalls`]).
    pub pending: Vec<ToolCall>,
    /// Per trip.
    pub trips: Vec<TripStats>,
}

/// Progress reported while the loop runs.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoopEvent<'a> {
    /// A trip starts.
    Trip {
        /// 1-based.
        trip: usize,
        /// Its tool choice.
        choice: &'a ToolChoice,
    },
    /// Generated text (raw: a call's JSON included).
    Text {
        /// The trip.
        trip: usize,
        /// The new text.
        text: &'a str,
    },
    /// The model made calls.
    Calls {
        /// The trip.
        trip: usize,
        /// The calls.
        calls: &'a [ToolCall],
    },
    /// A tool finished.
    Result {
        /// The trip.
        trip: usize,
        /// The outcome.
        outcome: &'a ToolOutcome,
    },
}

/// A multi-trip tool loop.
///
/// Each trip generates one assistant turn with [`Generator::generate_with_tools`]. A text
/// answer ends the loop. Calls are appended to the conversation as an assistant message, each
/// registered handler runs (in order), and its result is appended as a `tool` message
/// (`tool_call_id`, `name`); then the next trip starts. A call to a tool declared without a
/// handler ends the loop with the calls in [`LoopResult::pending`].
///
/// Choice policy: the first trip uses [`ToolLoop::choice`] (default `auto`); later trips, which
/// follow tool results, use [`ToolLoop::after_results`] (default `auto`); and the last trip
/// (`max_trips`, default 3) uses `none` when it follows tool results, so the loop ends with a
/// text answer ([`ToolLoop::answer_on_last_trip`], on by default). For a small model that
/// should use a tool, `choice(ToolChoice::Required)` makes trip 1 a call; `auto` afterwards
/// lets it answer (a text answer cannot start like a call, so it cannot loop on half calls).
///
/// Timeout ([`ToolLoop::trip_timeout`], default none): a trip whose generation runs past it is
/// cancelled at the next generated piece (prompt evaluation itself is not interrupted) and the
/// loop fails with [`GenerateError::Timeout`]; a tool still running at the
/// deadline is abandoned (its thread is left to finish) and the model gets
/// `error: timed out` as its result. Without a timeout handlers run on the calling thread;
/// with one, each on its own thread. A panicking handler gives an error result.
#[derive(Debug, Clone)]
pub struct ToolLoop {
    tools: Vec<Tool>,
    handlers: HashMap<String, ToolHandler>,
    max_trips: usize,
    choice: ToolChoice,
    after_results: ToolChoice,
    answer_on_last_trip: bool,
    trip_timeout: Option<Duration>,
    max_calls: Option<usize>,
    answer_prefix: Option<String>,
    options: GenerateOptions,
}

impl Default for ToolLoop {
    fn default() -> Self {
        ToolLoop::new()
    }
}

impl ToolLoop {
    /// An empty loop: no tools, 3 trips, `auto`, no timeout, default options with 256 tokens
    /// per trip.
    pub fn new() -> ToolLoop {
        ToolLoop {
            tools: Vec::new(),
            handlers: HashMap::new(),
            max_trips: 3,
            choice: ToolChoice::Auto,
            after_results: ToolChoice::Auto,
            answer_on_last_trip: true,
            trip_timeout: None,
            max_calls: None,
            answer_prefix: None,
            options: GenerateOptions {
                max_tokens: 256,
                ..GenerateOptions::default()
            },
        }
    }

    /// Adds a tool with its handler (a tool of the same name is replaced).
    pub fn tool(mut self, tool: Tool, handler: ToolHandler) -> ToolLoop {
        self.handlers.insert(tool.name.clone(), handler);
        self.declare_one(tool);
        self
    }

    /// Adds a tool without a handler: calls to it end the loop ([`LoopStop::UnhandledCalls`]).
    pub fn declare(mut self, tool: Tool) -> ToolLoop {
        self.handlers.remove(&tool.name);
        self.declare_one(tool);
        self
    }

    fn declare_one(&mut self, tool: Tool) {
        match self.tools.iter_mut().find(|t| t.name == tool.name) {
            Some(t) => *t = tool,
            None => self.tools.push(tool),
        }
    }

    /// Most trips (at least 1; default 3).
    pub fn max_trips(mut self, n: usize) -> ToolLoop {
        self.max_trips = n.max(1);
        self
    }

    /// The tool choice of the first trip (default `auto`).
    pub fn choice(mut self, choice: ToolChoice) -> ToolLoop {
        self.choice = choice;
        self
    }

    /// The tool choice of the trips after tool results (default `auto`).
    pub fn after_results(mut self, choice: ToolChoice) -> ToolLoop {
        self.after_results = choice;
        self
    }

    /// Whether the last trip, when it follows tool results, must answer in text (default on).
    pub fn answer_on_last_trip(mut self, on: bool) -> ToolLoop {
        self.answer_on_last_trip = on;
        self
    }

    /// A time limit per trip (generation and tools).
    pub fn trip_timeout(mut self, limit: Option<Duration>) -> ToolLoop {
        self.trip_timeout = limit;
        self
    }

    /// Most calls per trip (`None`, the default: as many as the format allows). See
    /// [`TurnOptions::max_calls`].
    pub fn max_calls(mut self, max_calls: Option<usize>) -> ToolLoop {
        self.max_calls = max_calls;
        self
    }

    /// Text that starts the answer of text-only trips (an assistant prefill, see
    /// [`TurnOptions::prefill`]); it is part of the final answer. Helps base models answer
    /// instead of echoing the prompt.
    pub fn answer_prefix(mut self, prefix: Option<String>) -> ToolLoop {
        self.answer_prefix = prefix.filter(|p| !p.is_empty());
        self
    }

    /// Generation options of every trip.
    pub fn options(mut self, options: GenerateOptions) -> ToolLoop {
        self.options = options;
        self
    }

    /// The tools.
    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The tool choice of trip `trip` (1-based), as the policy says.
    pub fn choice_for(&self, trip: usize) -> ToolChoice {
        if trip <= 1 {
            self.choice.clone()
        } else if trip >= self.max_trips && self.answer_on_last_trip {
            ToolChoice::None
        } else {
            self.after_results.clone()
        }
    }

    /// Runs the loop from `messages`.
    ///
    /// # Errors
    ///
    /// The errors of [`Generator::generate_with_tools`], and [`GenerateError::Timeout`].
    pub fn run<M: Model>(
        &self,
        generator: &mut Generator<M>,
        messages: Vec<Message>,
    ) -> Result<LoopResult, GenerateError> {
        self.run_with(generator, messages, &mut |_| true)
    }

    /// Runs the loop, reporting progress to `on_event`; returning `false` stops the loop
    /// ([`LoopStop::Cancelled`]).
    ///
    /// # Errors
    ///
    /// As [`ToolLoop::run`].
    pub fn run_with<M: Model>(
        &self,
        generator: &mut Generator<M>,
        messages: Vec<Message>,
        on_event: &mut dyn FnMut(LoopEvent<'_>) -> bool,
    ) -> Result<LoopResult, GenerateError> {
        let mut result = LoopResult {
            answer: None,
            stop: LoopStop::MaxTrips,
            messages,
            pending: Vec::new(),
            trips: Vec::new(),
        };
        for trip in 1..=self.max_trips {
            let choice = self.choice_for(trip);
            if !on_event(LoopEvent::Trip {
                trip,
                choice: &choice,
            }) {
                result.stop = LoopStop::Cancelled;
                return Ok(result);
            }
            let start = Instant::now();
            let deadline = self.trip_timeout.map(|d| start + d);
            let mut timed_out = false;
            let mut cancelled = false;
            let turn = TurnOptions {
                max_calls: self.max_calls,
                prefill: self.answer_prefix.clone(),
                text_schema: None,
            };
            let (reply, output) = generator.generate_tool_turn(
                result.messages.clone(),
                &self.tools,
                &choice,
                &turn,
                self.options.clone(),
                &mut |text| {
                    if deadline.is_some_and(|d| Instant::now() > d) {
                        timed_out = true;
                        return false;
                    }
                    if !on_event(LoopEvent::Text { trip, text }) {
                        cancelled = true;
                        return false;
                    }
                    true
                },
            )?;
            if timed_out {
                return Err(GenerateError::Timeout {
                    trip,
                    limit_ms: self.trip_timeout.map_or(0, |d| d.as_millis() as u64),
                });
            }
            let mut stats = TripStats {
                trip,
                choice,
                output,
                calls: Vec::new(),
                outcomes: Vec::new(),
                ms: 0.0,
            };
            if cancelled || stats.output.stop == StopReason::Cancelled {
                stats.ms = start.elapsed().as_secs_f64() * 1e3;
                result.trips.push(stats);
                result.stop = LoopStop::Cancelled;
                return Ok(result);
            }
            let calls = match reply {
                Reply::Text(text) => {
                    result
                        .messages
                        .push(Message::new("assistant", text.clone()));
                    result.answer = Some(text);
                    result.stop = LoopStop::Answer;
                    stats.ms = start.elapsed().as_secs_f64() * 1e3;
                    result.trips.push(stats);
                    return Ok(result);
                }
                Reply::Calls(calls) => calls,
            };
            result.messages.push(ToolCall::assistant_message(&calls));
            stats.calls = calls.clone();
            let go_on = on_event(LoopEvent::Calls {
                trip,
                calls: &calls,
            });
            if !go_on || calls.iter().any(|c| !self.handlers.contains_key(&c.name)) {
                stats.ms = start.elapsed().as_secs_f64() * 1e3;
                result.trips.push(stats);
                result.stop = if go_on {
                    LoopStop::UnhandledCalls
                } else {
                    LoopStop::Cancelled
                };
                result.pending = calls;
                return Ok(result);
            }
            for call in calls {
                let handler = self.handlers[&call.name].clone();
                let t = Instant::now();
                let r = match call.arguments_value() {
                    Ok(arguments) => run_handler(&handler, arguments, deadline),
                    Err(e) => Err(format!("the arguments cannot be read: {e}")),
                };
                let content = match &r {
                    Ok(Value::String(s)) => s.clone(),
                    Ok(v) => v.to_string(),
                    Err(e) => format!("error: {e}"),
                };
                let outcome = ToolOutcome {
                    result: r,
                    content,
                    ms: t.elapsed().as_secs_f64() * 1e3,
                    call,
                };
                result
                    .messages
                    .push(outcome.call.result_message(outcome.content.clone()));
                let go_on = on_event(LoopEvent::Result {
                    trip,
                    outcome: &outcome,
                });
                stats.outcomes.push(outcome);
                if !go_on {
                    stats.ms = start.elapsed().as_secs_f64() * 1e3;
                    result.trips.push(stats);
                    result.stop = LoopStop::Cancelled;
                    return Ok(result);
                }
            }
            stats.ms = start.elapsed().as_secs_f64() * 1e3;
            result.trips.push(stats);
        }
        Ok(result)
    }
}

/// Runs a handler: inline without a deadline, else on its own thread until the deadline.
fn run_handler(
    handler: &ToolHandler,
    arguments: Value,
    deadline: Option<Instant>,
) -> Result<Value, String> {
    let panicked = |_| Err("the tool panicked".to_string());
    let Some(deadline) = deadline else {
        return std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(arguments)))
            .unwrap_or_else(panicked);
    };
    let (tx, rx) = mpsc::channel();
    let handler = handler.clone();
    let spawned = std::thread::Builder::new()
        .name("stencil-tool".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(AssertUnwindSafe(|| handler.call(arguments)))
                .unwrap_or_else(panicked);
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        return Err(format!("cannot start the tool: {e}"));
    }
    let left = deadline.saturating_duration_since(Instant::now());
    match rx.recv_timeout(left) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => Err("timed out".to_string()),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("the tool panicked".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handlers_sync_async_panic_and_timeout() {
        let h = ToolHandler::new(Ok);
        assert_eq!(h.call(Value::from(3)), Ok(Value::from(3)));

        let a = ToolHandler::from_async(|v: Value| async move {
            // A future that is pending once before it is ready.
            struct Once(bool);
            impl Future for Once {
                type Output = ();
                fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
                    if self.0 {
                        Poll::Ready(())
                    } else {
                        self.0 = true;
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                }
            }
            Once(false).await;
            Ok(Value::from(v.as_i64().unwrap_or(0) + 1))
        });
        assert_eq!(a.call(Value::from(1)), Ok(Value::from(2)));

        let p = ToolHandler::new(|_| panic!("boom"));
        assert_eq!(
            run_handler(&p, Value::Null, None),
            Err("the tool panicked".into())
        );
        assert_eq!(
            run_handler(
                &p,
                Value::Null,
                Some(Instant::now() + Duration::from_secs(5))
            ),
            Err("the tool panicked".into())
        );

        let slow = ToolHandler::new(|_| {
            std::thread::sleep(Duration::from_millis(500));
            Ok(Value::Null)
        });
        let t = Instant::now();
        assert_eq!(
            run_handler(
                &slow,
                Value::Null,
                Some(Instant::now() + Duration::from_millis(50))
            ),
            Err("timed out".into())
        );
        assert!(t.elapsed() < Duration::from_millis(400));
    }

    #[test]
    fn choice_policy() {
        let l = ToolLoop::new().choice(ToolChoice::Required);
        assert_eq!(l.choice_for(1), ToolChoice::Required);
        assert_eq!(l.choice_for(2), ToolChoice::Auto);
        assert_eq!(l.choice_for(3), ToolChoice::None);
        let l = l.answer_on_last_trip(false);
        assert_eq!(l.choice_for(3), ToolChoice::Auto);
        let l = ToolLoop::new().max_trips(1).choice(ToolChoice::Required);
        assert_eq!(l.choice_for(1), ToolChoice::Required);
    }
}
