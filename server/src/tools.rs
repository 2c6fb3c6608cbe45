//! Chat completions with tools: one turn of [`Generator::generate_with_tools`], its reply
//! turned into OpenAI `tool_calls` or text.
//!
//! The reply is only known once the turn is generated (the first bytes decide between text
//! and a call), so nothing is streamed while it runs: a streaming request gets the calls, or
//! the text, in chunks after generation.

use std::sync::atomic::Ordering;

use generate::tools::Reply;
use generate::{GenerateError, Generator, Model};

use crate::error::ApiError;
use crate::openai::{Answer, CallOut};
use crate::worker::{Event, Finished, Shared, Work, finish, fit_context};

/// Runs a request that has tools.
pub(crate) fn run<M: Model>(
    generator: &mut Generator<M>,
    work: &Work,
    shared: &Shared,
    queue_ms: f64,
) -> Result<Finished, ApiError> {
    let plan = &work.plan;
    let err = |e: GenerateError| ApiError::from_generate(&e);
    let (tools, choice) = (&plan.tools, &plan.tool_choice);
    // Errors in the tools (a bad name, a schema that does not compile, an unknown named
    // tool) come out here, before anything is streamed.
    generator.check_tools(tools).map_err(err)?;
    let n_prompt = generator
        .tool_prompt(&plan.messages, tools, choice)
        .map_err(err)?
        .len();
    let options = fit_context(generator, &plan.options, n_prompt)?;
    let _ = work.events.send(Event::Started);

    let events = &work.events;
    let mut on_text = |_: &str| !shared.cancel_all.load(Ordering::Relaxed) && !events.is_closed();
    let (reply, out) = generator
        .generate_with_tools(plan.messages.clone(), tools, choice, options, &mut on_text)
        .map_err(err)?;
    match reply {
        Reply::Calls(calls) => {
            let calls = calls
                .into_iter()
                .map(|c| CallOut {
                    id: c.id,
                    name: c.name,
                    arguments: c.arguments,
                })
                .collect();
            let mut done = finish(out, |_| Answer::Calls(calls), shared, queue_ms, None)?;
            // A call cut off by the budget is closed by the constraint: still a call.
            done.finish_reason = "tool_calls";
            Ok(done)
        }
        Reply::Text(text) => finish(out, |_| Answer::Text(text), shared, queue_ms, None),
    }
}
