//! `stencil chat`: tool calling from the command line.
//!
//! Tools come from an OpenAI-style JSON file (`--tools`) and from the built-in set
//! (`--builtin calculator`). Built-in tools run in a multi-trip loop until the model answers
//! in text; tools from the file have no handler, so a call to one is printed (as OpenAI
//! `tool_calls` JSON on stdout) and the command stops. The final answer goes to stdout; the
//! calls, results and statistics go to stderr.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::ValueEnum;
use generate::tools::{LoopEvent, LoopStop, Tool, ToolCall, ToolChoice, ToolLoop, builtin};
use generate::{GenerateOptions, Message};
use serde_json::Value;

use crate::generate::{JsonArgs, ModelArgs};

/// Built-in tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Builtin {
    /// Arithmetic: `{"expression": "1234 * 5678"}`.
    Calculator,
}

/// Arguments of `stencil chat`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    json_args: JsonArgs,
    /// Tools: a JSON file with an array of OpenAI tools (or an object with a `tools` array).
    /// These tools have no handler: calls to them are printed and the command stops.
    #[arg(long)]
    tools: Option<PathBuf>,
    /// Built-in tools, run by the loop (repeat the flag for several).
    #[arg(long, value_enum)]
    builtin: Vec<Builtin>,
    /// Tool choice of the first trip: auto, required, none, or a tool name. Default: auto, or
    /// required when only built-in tools are given (a small model then reliably calls).
    #[arg(long)]
    tool_choice: Option<String>,
    /// Tool choice of the trips after tool results: auto, required, none, or a tool name.
    /// The default, none, makes the trip after the results the answer.
    #[arg(long, default_value = "none")]
    then: String,
    /// Text the final answer starts with (an assistant prefill, used on text-only trips). Base
    /// models such as the default one answer instead of echoing the prompt when the answer is
    /// started for them; pass '' to turn it off.
    #[arg(long, default_value = "The answer is")]
    answer_prefix: String,
    /// Stop a text answer at this string (repeatable; the default ends it at the first line
    /// break; pass '' to turn it off).
    #[arg(long, default_values_t = vec!["\n".to_string()])]
    stop: Vec<String>,
    /// Most calls per trip (0: no limit). Small models tend to repeat a call; one call per
    /// trip keeps them on track.
    #[arg(long, default_value_t = 1)]
    max_calls: usize,
    /// Most trips (model turns); the last one answers in text.
    #[arg(long, default_value_t = 3)]
    max_trips: usize,
    /// Time limit per trip, in seconds.
    #[arg(long)]
    trip_timeout: Option<f64>,
    /// The user prompt.
    #[arg(long)]
    prompt: String,
    /// A system message.
    #[arg(long)]
    system: Option<String>,
    /// Most tokens per trip.
    #[arg(long, default_value_t = 256)]
    max_tokens: usize,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    temp: f32,
    /// Seed of the sampler.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print the transcript and per-trip statistics as JSON on stdout instead of the answer.
    #[arg(long)]
    json: bool,
    /// Write one JSON line per decoding step here.
    #[arg(long)]
    trace: Option<PathBuf>,
}

/// Reads tools from a file: an array, or an object with a `tools` array; with the file's text.
fn read_tools(path: &PathBuf) -> Result<(Vec<Tool>, String)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let list = match v.get("tools") {
        Some(list) => list,
        None => &v,
    };
    let tools =
        Tool::list_from_openai(list).with_context(|| format!("tools in {}", path.display()))?;
    Ok((tools, text))
}

pub fn run(args: Args) -> Result<()> {
    let (declared, tools_text) = match &args.tools {
        Some(p) => read_tools(p)?,
        None => (Vec::new(), String::new()),
    };
    if declared.is_empty() && args.builtin.is_empty() {
        bail!("no tools: pass --tools FILE and/or --builtin calculator");
    }
    let default_choice = if declared.is_empty() {
        "required"
    } else {
        "auto"
    };
    let choice: ToolChoice = args
        .tool_choice
        .as_deref()
        .unwrap_or(default_choice)
        .parse()
        .context("--tool-choice")?;
    let then: ToolChoice = args.then.parse().context("--then")?;
    let names: Vec<&str> = declared
        .iter()
        .map(|t| t.name.as_str())
        .chain(args.builtin.iter().map(|b| match b {
            Builtin::Calculator => "calculator",
        }))
        .collect();
    for c in [&choice, &then] {
        if let ToolChoice::Named(name) = c
            && !names.contains(&name.as_str())
        {
            bail!(
                "tool choice `{name}` is not among the tools ({})",
                names.join(", ")
            );
        }
    }

    let mut options = GenerateOptions {
        max_tokens: args.max_tokens,
        seed: args.seed,
        stop: args
            .stop
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect(),
        ..GenerateOptions::default()
    };
    options.sampler.temperature = args.temp;
    let mut tool_loop = ToolLoop::new()
        .max_trips(args.max_trips)
        .max_calls((args.max_calls > 0).then_some(args.max_calls))
        .choice(choice)
        .after_results(then)
        .answer_prefix(Some(args.answer_prefix.clone()))
        .options(options)
        .trip_timeout(args.trip_timeout.map(Duration::from_secs_f64));
    for b in &args.builtin {
        let (tool, handler) = match b {
            Builtin::Calculator => builtin::calculator(),
        };
        tool_loop = tool_loop.tool(tool, handler);
    }
    for t in declared {
        tool_loop = tool_loop.declare(t);
    }

    let mut generator = args.model.load()?;
    args.json_args.apply(&mut generator);
    generator.numbers_as_written(&tools_text);
    if let Some(path) = &args.trace {
        let f =
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
        generator.set_trace(Some(Box::new(std::io::BufWriter::new(f))));
    }
    eprintln!(
        "tool format: {} ({} tools: {})",
        generator.tool_format().name(),
        tool_loop.tools().len(),
        tool_loop
            .tools()
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut messages = Vec::new();
    if let Some(s) = &args.system {
        messages.push(Message::new("system", s.clone()));
    }
    messages.push(Message::new("user", args.prompt.clone()));

    let result = tool_loop.run_with(&mut generator, messages, &mut |event| {
        match event {
            LoopEvent::Trip { trip, choice } => {
                eprintln!("[trip {trip}] tool_choice: {choice}");
            }
            LoopEvent::Calls { trip, calls } => {
                for c in calls {
                    eprintln!("[trip {trip}] call {} {}({})", c.id, c.name, c.arguments);
                }
            }
            LoopEvent::Result { trip, outcome } => {
                eprintln!(
                    "[trip {trip}] result {} -> {} ({:.2} ms)",
                    outcome.call.id, outcome.content, outcome.ms
                );
            }
            _ => {}
        }
        true
    })?;

    for t in &result.trips {
        let o = &t.output;
        eprintln!(
            "[trip {}] {} prompt tokens in {:.0} ms, {} tokens ({} forced) in {:.0} ms = {:.1} tokens/s, stop: {:?}, {} call(s)",
            t.trip,
            o.prompt_tokens,
            o.timing.prompt_ms,
            o.completion_tokens,
            o.forced_tokens,
            o.timing.decode_ms,
            o.timing.tokens_per_s,
            o.stop,
            t.calls.len()
        );
    }
    eprintln!(
        "stop: {:?} after {} trip(s)",
        result.stop,
        result.trips.len()
    );

    if args.json {
        let trips: Vec<Value> = result
            .trips
            .iter()
            .map(|t| {
                serde_json::json!({
                    "trip": t.trip,
                    "tool_choice": t.choice.to_openai(),
                    "calls": t.calls.iter().map(ToolCall::to_openai).collect::<Vec<_>>(),
                    "results": t.outcomes.iter().map(|o| o.content.clone()).collect::<Vec<_>>(),
                    "output": t.output,
                    "ms": t.ms,
                })
            })
            .collect();
        let v = serde_json::json!({
            "answer": result.answer,
            "stop": format!("{:?}", result.stop),
            "pending_calls": result.pending.iter().map(ToolCall::to_openai).collect::<Vec<_>>(),
            "messages": result.messages,
            "trips": trips,
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    match result.stop {
        LoopStop::Answer => {
            println!("{}", result.answer.unwrap_or_default());
        }
        LoopStop::UnhandledCalls => {
            eprintln!("no handler for these calls; printing them");
            let calls: Vec<Value> = result.pending.iter().map(ToolCall::to_openai).collect();
            println!("{}", serde_json::to_string_pretty(&calls)?);
        }
        LoopStop::MaxTrips => bail!(
            "no text answer after {} trips (raise --max-trips)",
            result.trips.len()
        ),
        LoopStop::Cancelled => bail!("cancelled"),
    }
    Ok(())
}
