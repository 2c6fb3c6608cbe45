//! `stencil demo`: the examples of `cli/demo/examples.json` on the default model, each run
//! constrained (its output checked again, as text, by the schema compiler in validation mode:
//! any whitespace, escapes and number spellings; and its content against what the answer must
//! contain) and then unconstrained with the same prompt and
//! budget, for a side-by-side tokens/s figure.
//!
//! Each example is a chat: a system message, a worked example (one user turn and the answer
//! it should get), then the question. The schema stays out of the prompt: the grammar enforces
//! it, and a small model shown a schema tends to echo it instead of answering.

use std::io::Write;
use std::time::Instant;

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use generate::{GenerateOptions, Message, Output, Prompt, Request, SchemaInPrompt};
use schema_compiler::{Grammar, Matcher, Options};
use serde::Deserialize;
use serde_json::Value;

use crate::generate::{JsonArgs, ModelArgs};

/// The built-in examples.
const EXAMPLES: &str = include_str!("../demo/examples.json");

#[derive(Deserialize)]
struct Example {
    name: String,
    about: String,
    system: String,
    /// A worked example: a question and the answer it should get.
    shot: Shot,
    prompt: String,
    schema: Value,
    /// What a right answer contains (see [`contains`]).
    expect: Value,
    max_tokens: usize,
}

#[derive(Deserialize)]
struct Shot {
    user: String,
    assistant: Value,
}

impl Example {
    /// The chat sent to the model.
    fn messages(&self) -> Vec<Message> {
        vec![
            Message::new("system", self.system.clone()),
            Message::new("user", self.shot.user.clone()),
            Message::new("assistant", self.shot.assistant.to_string()),
            Message::new("user", self.prompt.clone()),
        ]
    }
}

/// Whether `answer` contains `expected`: an object every key of `expected` with a value that
/// contains the expected one, an array an element containing each expected element, and any
/// other value the same value.
fn contains(answer: &Value, expected: &Value) -> bool {
    match (answer, expected) {
        (Value::Object(a), Value::Object(e)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|got| contains(got, v))),
        (Value::Array(a), Value::Array(e)) => {
            e.iter().all(|v| a.iter().any(|got| contains(got, v)))
        }
        _ => answer == expected,
    }
}

/// Arguments of `stencil demo`.
#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    json_args: JsonArgs,
    /// Run only the example with this name.
    #[arg(long)]
    only: Option<String>,
    /// Skip the unconstrained comparison runs.
    #[arg(long)]
    no_compare: bool,
    /// Seed of the sampler (the demo samples greedily, so it only matters with --temp).
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Sampling temperature (0: greedy).
    #[arg(long, default_value_t = 0.0)]
    temp: f32,
}

fn request(example: &Example, constrained: bool, args: &Args) -> Request {
    let mut options = GenerateOptions {
        max_tokens: example.max_tokens,
        seed: args.seed,
        ..GenerateOptions::default()
    };
    options.sampler.temperature = args.temp;
    Request {
        prompt: Prompt::Chat(example.messages()),
        schema: constrained.then(|| example.schema.clone()),
        schema_in_prompt: SchemaInPrompt::Off,
        options,
    }
}

/// Where a grammar compiled for validation rejects `text` (the byte offset, or the length when
/// the text is an incomplete document), or `None` when it accepts it.
fn rejected_at(grammar: &Arc<Grammar>, text: &str) -> Option<usize> {
    let mut matcher = Matcher::new(Arc::clone(grammar));
    match matcher.push_bytes(text.as_bytes()) {
        Err(at) => Some(at),
        Ok(()) if matcher.is_accepting() => None,
        Ok(()) => Some(text.len()),
    }
}

/// Runs the demo; fails when any constrained output does not validate.
pub fn run(args: Args) -> Result<()> {
    let examples: Vec<Example> =
        serde_json::from_str(EXAMPLES).context("parsing the built-in examples")?;
    let examples: Vec<&Example> = examples
        .iter()
        .filter(|e| args.only.as_ref().is_none_or(|o| *o == e.name))
        .collect();
    if examples.is_empty() {
        bail!("no example named {:?}", args.only.as_deref().unwrap_or(""));
    }
    let t0 = Instant::now();
    let mut generator = args.model.load()?;
    args.json_args.apply(&mut generator);
    eprintln!(
        "loaded the model and built the token tables in {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    let mut failures = Vec::new();
    let mut content_passed = 0usize;
    let n_examples = examples.len();
    let (mut c_tokens, mut c_ms, mut u_tokens, mut u_ms) = (0usize, 0f64, 0usize, 0f64);
    for example in examples {
        println!("\n== {}: {}", example.name, example.about);
        println!("schema: {}", example.schema);
        println!("question: {}", example.prompt);
        let validator = Grammar::compile(&example.schema, &Options::validation())
            .map(Arc::new)
            .with_context(|| format!("compiling the schema of example {}", example.name))?;
        print!("answer: ");
        let out = run_one(&mut generator, &request(example, true, &args))?;
        let (verdict, content) = match serde_json::from_str::<Value>(&out.text) {
            Ok(v) if out.complete && rejected_at(&validator, &out.text).is_none() => {
                ("valid JSON, validates", contains(&v, &example.expect))
            }
            Ok(_) if !out.complete => {
                failures.push(format!(
                    "{}: the document is incomplete ({:?})",
                    example.name, out.stop
                ));
                ("INCOMPLETE", false)
            }
            Ok(_) => {
                let at = rejected_at(&validator, &out.text).unwrap_or(out.text.len());
                failures.push(format!(
                    "{}: the schema rejects the answer at byte {at}",
                    example.name
                ));
                ("INVALID", false)
            }
            Err(e) => {
                failures.push(format!("{}: not JSON: {e}", example.name));
                ("NOT JSON", false)
            }
        };
        content_passed += usize::from(content);
        println!("schema: {verdict}");
        println!(
            "content: {} (a right answer contains {})",
            if content { "passed" } else { "FAILED" },
            example.expect
        );
        println!("{}", stats(&out));
        c_tokens += out.completion_tokens;
        c_ms += out.timing.decode_ms;
        if !args.no_compare {
            let free = request(example, false, &args);
            let mut sink = |_: &str| true;
            let u = generator.generate(&free, &mut sink)?;
            let parses = serde_json::from_str::<Value>(u.text.trim()).is_ok();
            let first_line = u.text.trim().lines().next().unwrap_or("");
            println!(
                "unconstrained, same prompt: {} ({}); starts {:?}",
                stats(&u),
                if parses {
                    "parses as JSON"
                } else {
                    "does not parse as JSON"
                },
                truncate(first_line, 60)
            );
            u_tokens += u.completion_tokens;
            u_ms += u.timing.decode_ms;
        }
    }
    let tps = |n: usize, ms: f64| if ms > 0.0 { n as f64 / ms * 1e3 } else { 0.0 };
    print!(
        "\nstats: constrained {:.1} tokens/s ({c_tokens} tokens)",
        tps(c_tokens, c_ms)
    );
    if !args.no_compare {
        print!(
            ", unconstrained {:.1} tokens/s ({u_tokens} tokens)",
            tps(u_tokens, u_ms)
        );
    }
    println!();
    println!(
        "content checks: {content_passed} of {n_examples} passed; schema checks: {} of \
         {n_examples} passed",
        n_examples - failures.len()
    );
    if !failures.is_empty() {
        bail!(
            "{} example(s) failed:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }
    Ok(())
}

fn run_one<M: generate::Model>(
    generator: &mut generate::Generator<M>,
    request: &Request,
) -> Result<Output> {
    let mut stdout = std::io::stdout().lock();
    let out = generator.generate(request, &mut |piece| {
        let _ = stdout.write_all(piece.as_bytes());
        let _ = stdout.flush();
        true
    })?;
    writeln!(stdout)?;
    Ok(out)
}

fn stats(out: &Output) -> String {
    let t = &out.timing;
    format!(
        "{} tokens ({} forced) at {:.1} tokens/s, mask {:.1} µs/token, prompt {} tokens in {:.0} ms, compile {:.2} ms, stop: {:?}",
        out.completion_tokens,
        out.forced_tokens,
        t.tokens_per_s,
        t.mask_us_mean,
        out.prompt_tokens,
        t.prompt_ms,
        t.compile_ms,
        out.stop
    )
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(n).collect::<String>())
    }
}
