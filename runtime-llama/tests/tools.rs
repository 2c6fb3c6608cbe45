//! Tool calling end to end on the real default model (Gemma 3 270M, a small base model): a
//! forced call whose arguments validate under the tool's schema (checked with the independent
//! `jsonschema` validator), `auto` giving either text or a complete call, and the two-trip
//! calculator loop of `stencil chat`.

mod support;

use anyhow::{Result, ensure};
use generate::tools::{LoopStop, Reply, Tool, ToolChoice, ToolFormat, ToolLoop, builtin};
use generate::{GenerateOptions, Message, StopReason};
use serde_json::{Value, json};
use support::generator;

fn weather() -> Result<Tool> {
    Ok(Tool::from_openai(
        &json!({"type": "function", "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "minLength": 1, "maxLength": 40},
                    "unit": {"enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city", "unit"],
                "additionalProperties": false
            }
        }}),
    )?)
}

fn assert_valid(schema: &Value, instance: &Value) -> Result<()> {
    let validator = jsonschema::draft202012::new(schema)?;
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    ensure!(errors.is_empty(), "{instance} is not valid: {errors:?}");
    Ok(())
}

/// `required` with two tools: the model must call one, and the arguments are valid under that
/// tool's schema.
#[test]
fn required_call_parses_and_validates() -> Result<()> {
    let mut g = generator()?;
    assert_eq!(g.tool_format(), ToolFormat::JsonEnvelope);
    let (calc, _) = builtin::calculator();
    let tools = [weather()?, calc];
    let options = GenerateOptions {
        max_tokens: 80,
        ..GenerateOptions::default()
    };
    let msgs = vec![Message::new(
        "user",
        "What is the weather in Paris, in celsius?",
    )];
    let (reply, out) =
        g.generate_with_tools(msgs, &tools, &ToolChoice::Required, options, &mut |_| true)?;
    ensure!(out.complete, "incomplete: {out:?}");
    let Reply::Calls(calls) = reply else {
        anyhow::bail!("expected calls, got {reply:?}")
    };
    ensure!(!calls.is_empty());
    for c in &calls {
        let tool = tools
            .iter()
            .find(|t| t.name == c.name)
            .ok_or_else(|| anyhow::anyhow!("unknown tool {}", c.name))?;
        assert_valid(&tool.parameters, &c.arguments_value()?)?;
        assert!(c.id.starts_with("call_"), "{}", c.id);
    }
    eprintln!("{}", out.text);
    Ok(())
}

/// `auto`: whatever the model chooses is either a text answer or complete valid calls, never a
/// half-formed call.
#[test]
fn auto_gives_text_or_a_complete_call() -> Result<()> {
    let mut g = generator()?;
    let tools = [weather()?];
    let options = GenerateOptions {
        max_tokens: 48,
        ..GenerateOptions::default()
    };
    for prompt in ["Hello! Who are you?", "Weather in Rome? Call get_weather."] {
        let msgs = vec![Message::new("user", prompt)];
        let (reply, out) = g.generate_with_tools(
            msgs,
            &tools,
            &ToolChoice::Auto,
            options.clone(),
            &mut |_| true,
        )?;
        match reply {
            Reply::Text(text) => {
                ensure!(!text.starts_with('{'), "{text}");
                ensure!(out.stop != StopReason::MaxTokens || out.complete, "{out:?}");
            }
            Reply::Calls(calls) => {
                ensure!(out.complete, "{out:?}");
                for c in &calls {
                    assert_valid(&tools[0].parameters, &c.arguments_value()?)?;
                }
            }
        }
    }
    Ok(())
}

/// The loop `stencil chat --builtin calculator` runs: trip 1 must call (`required`), the
/// result goes back as a tool message, trip 2 answers in text (`none`, started with a prefill,
/// ended at the first line break).
#[test]
fn two_trip_calculator_loop() -> Result<()> {
    let mut g = generator()?;
    let (tool, handler) = builtin::calculator();
    let result = ToolLoop::new()
        .tool(tool, handler)
        .choice(ToolChoice::Required)
        .after_results(ToolChoice::None)
        .max_calls(Some(1))
        .answer_prefix(Some("The answer is".into()))
        .options(GenerateOptions {
            max_tokens: 96,
            stop: vec!["\n".into()],
            ..GenerateOptions::default()
        })
        .run(
            &mut g,
            vec![Message::new(
                "user",
                "What is 1234 * 5678? Use the calculator.",
            )],
        )?;
    ensure!(result.stop == LoopStop::Answer, "{result:?}");
    ensure!(result.trips.len() == 2, "{:?}", result.trips);
    let call = &result.trips[0].calls[0];
    assert_eq!(call.name, "calculator");
    let outcome = &result.trips[0].outcomes[0];
    ensure!(outcome.result.is_ok(), "{outcome:?}");
    let roles: Vec<&str> = result.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    let answer = result.answer.unwrap_or_default();
    eprintln!("{} -> {} -> {answer}", call.arguments, outcome.content);
    ensure!(answer.starts_with("The answer is"), "{answer}");
    // The model copies the tool's result into its answer.
    ensure!(answer.contains(&outcome.content), "{answer}");
    Ok(())
}

/// Sampled parallel calls near a small budget: a call that could not be finished in time is
/// never begun, so every run returns complete calls (what the server's load test asks).
#[test]
fn sampled_calls_close_within_a_small_budget() -> Result<()> {
    let mut g = generator()?;
    let tools = [weather()?];
    for seed in 1..=8 {
        let options = GenerateOptions {
            max_tokens: 48,
            seed,
            sampler: sampler::SamplerConfig {
                temperature: 1.0,
                ..sampler::SamplerConfig::default()
            },
            ..GenerateOptions::default()
        };
        let msgs = vec![Message::new("user", format!("Weather in city {seed}?"))];
        let (reply, out) =
            g.generate_with_tools(msgs, &tools, &ToolChoice::Required, options, &mut |_| true)?;
        ensure!(out.completion_tokens <= 48, "{out:?}");
        let Reply::Calls(calls) = reply else {
            anyhow::bail!("seed {seed}: expected calls, got {reply:?}")
        };
        for c in &calls {
            assert_valid(&tools[0].parameters, &c.arguments_value()?)?;
        }
    }
    Ok(())
}
