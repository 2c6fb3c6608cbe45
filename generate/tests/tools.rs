//! Tool calling end to end with a scripted model: the real Gemma 3 tokenizer, chat template and
//! mask kernel, and a model whose logits favour a given text, so the constraint, the parsing
//! and the loop are checked without running a network.

use std::sync::{Arc, OnceLock};

use generate::tools::{
    LoopStop, Reply, Tool, ToolChoice, ToolFormat, ToolLoop, TurnOptions, builtin,
};
use generate::{GenerateError, GenerateOptions, Generator, Message, Model, ModelError, Tokenizer};
use script_support::{favour, plain_logits};
use serde_json::json;

mod script_support;

/// A model that wants to write one script per request: the token that continues the script
/// (from the text generated so far) gets logit 30, end of turn once the script is written,
/// plain printable ASCII tokens 1 (what it falls back to when the constraint refuses the
/// script, or once the text left the script), everything else 0. Each new request (the
/// generator truncates the cache before a prompt) moves to the next script.
struct Scripted {
    tok: Arc<Tokenizer>,
    plain: Vec<f32>,
    scripts: Vec<String>,
    request: usize,
    in_prompt: bool,
    generated: Vec<u8>,
    past: usize,
    logits: Vec<f32>,
}

impl Model for Scripted {
    fn vocab_size(&self) -> usize {
        self.plain.len()
    }
    fn context_size(&self) -> usize {
        8192
    }
    fn n_past(&self) -> usize {
        self.past
    }
    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.past += tokens.len();
        if self.in_prompt {
            self.in_prompt = false;
            self.generated.clear();
        } else {
            for &t in tokens {
                let id = vocab_index::TokenId::new(t).unwrap();
                self.generated.extend_from_slice(self.tok.token_bytes(id));
            }
        }
        self.logits.copy_from_slice(&self.plain);
        if let Some(script) = self.scripts.get(self.request.saturating_sub(1)) {
            favour(&self.tok, script, &self.generated, &mut self.logits);
        }
        Ok(&self.logits)
    }
    fn logits_depend_only_on_tokens(&self) -> bool {
        // The script changes with each request, whatever the prompt.
        false
    }
    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        self.past = self.past.min(n_past);
        self.request += 1;
        self.in_prompt = true;
        Ok(())
    }
}

/// The Gemma 3 tokenizer, loaded once for all tests.
fn tokenizer() -> Arc<Tokenizer> {
    static TOKENIZER: OnceLock<Arc<Tokenizer>> = OnceLock::new();
    TOKENIZER.get_or_init(|| load("gemma3")).clone()
}

fn load(name: &str) -> Arc<Tokenizer> {
    let path = format!(
        "{}/../assets/tokenizers/{name}/tokenizer.json",
        env!("CARGO_MANIFEST_DIR")
    );
    Arc::new(Tokenizer::from_file(&path).expect("run `cargo xtask fetch-assets`"))
}

/// A generator whose model writes `texts`, one per request.
fn generator(tok: &Arc<Tokenizer>, texts: &[&str]) -> Generator<Scripted> {
    let vocab = tok.vocab().len();
    let model = Scripted {
        tok: tok.clone(),
        plain: plain_logits(tok),
        scripts: texts.iter().map(|t| t.to_string()).collect(),
        request: 0,
        in_prompt: true,
        generated: Vec::new(),
        past: 0,
        logits: vec![0.0; vocab],
    };
    Generator::new(model, tok.clone()).unwrap()
}

fn weather() -> Tool {
    Tool::from_openai(&json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 40},
                "unit": {"enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city", "unit"],
            "additionalProperties": false
        }
    }}))
    .unwrap()
}

fn options() -> GenerateOptions {
    GenerateOptions {
        max_tokens: 96,
        ..GenerateOptions::default()
    }
}

#[test]
fn auto_follows_the_model_to_text_or_to_a_call() {
    let tok = tokenizer();
    let tools = [weather(), builtin::calculator().0];
    let call =
        r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}}]}"#;
    let mut g = generator(&tok, &["It is sunny.", call]);
    assert_eq!(g.tool_format(), ToolFormat::JsonEnvelope);
    let msgs = vec![Message::new("user", "Weather in Paris?")];

    let (reply, out) = g
        .generate_with_tools(
            msgs.clone(),
            &tools,
            &ToolChoice::Auto,
            options(),
            &mut |_| true,
        )
        .unwrap();
    assert_eq!(reply, Reply::Text("It is sunny.".into()), "{}", out.text);

    let mut streamed = String::new();
    let (reply, out) = g
        .generate_with_tools(msgs, &tools, &ToolChoice::Auto, options(), &mut |t| {
            streamed.push_str(t);
            true
        })
        .unwrap();
    assert_eq!(streamed, out.text);
    assert!(out.complete, "{out:?}");
    match reply {
        Reply::Calls(calls) => {
            assert_eq!(calls.len(), 1);
            assert_eq!(calls[0].name, "get_weather");
            assert_eq!(
                calls[0].arguments_value().unwrap(),
                json!({"city": "Paris", "unit": "celsius"})
            );
            assert!(calls[0].id.starts_with("call_"));
        }
        other => panic!("{other:?}"),
    }
}

/// The model's wishes outside the constraint are overruled: a text answer in `required` mode
/// becomes a call, a wrong enum value a valid one, a call in `none` mode text.
#[test]
fn the_constraint_overrules_the_model() {
    let tok = tokenizer();
    let tools = [weather()];
    let msgs = vec![Message::new("user", "Weather in Oslo?")];
    let mut g = generator(
        &tok,
        &[
            "Oslo is cold.",
            r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Oslo","unit":"kelvin"}}]}"#,
            r#"{"tool_calls":[]}"#,
        ],
    );
    for choice in [
        ToolChoice::Required,
        ToolChoice::Named("get_weather".into()),
    ] {
        let (reply, out) = g
            .generate_with_tools(msgs.clone(), &tools, &choice, options(), &mut |_| true)
            .unwrap();
        let Reply::Calls(calls) = reply else {
            panic!("{choice:?}: {}", out.text)
        };
        assert_eq!(calls[0].name, "get_weather");
        let unit = calls[0].arguments_value().unwrap()["unit"].clone();
        assert!(unit == "celsius" || unit == "fahrenheit", "{}", out.text);
    }
    let (reply, out) = g
        .generate_with_tools(msgs, &tools, &ToolChoice::None, options(), &mut |_| true)
        .unwrap();
    let Reply::Text(text) = reply else {
        panic!("{}", out.text)
    };
    assert!(!text.starts_with('{'), "{text}");
}

#[test]
fn errors_are_specific() {
    let tok = tokenizer();
    let mut g = generator(&tok, &[]);
    let msgs = vec![Message::new("user", "hi")];
    let tools = [weather()];
    match g.generate_with_tools(
        msgs.clone(),
        &tools,
        &ToolChoice::Named("nope".into()),
        options(),
        &mut |_| true,
    ) {
        Err(GenerateError::UnknownTool { name, available }) => {
            assert_eq!((name.as_str(), available.as_str()), ("nope", "get_weather"));
        }
        other => panic!("{other:?}"),
    }
    let bad = Tool::new(
        "bad",
        "",
        json!({"type": "object", "properties": {"x": {"type": "string", "pattern": "(unclosed"}}}),
    );
    match g.generate_with_tools(
        msgs.clone(),
        &[bad],
        &ToolChoice::Auto,
        options(),
        &mut |_| true,
    ) {
        Err(e @ GenerateError::ToolSchema { .. }) => {
            let GenerateError::ToolSchema {
                tool,
                keyword,
                pointer,
                ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!((tool.as_str(), keyword.as_str()), ("bad", "pattern"));
            assert!(pointer.ends_with("/properties/x"), "{pointer}");
            assert!(e.to_string().contains("`pattern`"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let turn = TurnOptions {
        max_calls: Some(0),
        ..TurnOptions::default()
    };
    assert!(matches!(
        g.generate_tool_turn(
            msgs,
            &tools,
            &ToolChoice::Auto,
            &turn,
            options(),
            &mut |_| true
        ),
        Err(GenerateError::InvalidTool(_))
    ));
}

#[test]
fn parallel_calls_and_their_limit() {
    let tok = tokenizer();
    let tools = [weather()];
    let two = r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Rome","unit":"celsius"}},{"name":"get_weather","arguments":{"city":"Oslo","unit":"celsius"}}]}"#;
    let mut g = generator(&tok, &[two, two]);
    let msgs = vec![Message::new("user", "Rome and Oslo?")];
    let (reply, _) = g
        .generate_with_tools(
            msgs.clone(),
            &tools,
            &ToolChoice::Required,
            options(),
            &mut |_| true,
        )
        .unwrap();
    let Reply::Calls(calls) = reply else { panic!() };
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].id, calls[1].id);
    assert_eq!(calls[1].arguments_value().unwrap()["city"], "Oslo");

    let turn = TurnOptions {
        max_calls: Some(1),
        ..TurnOptions::default()
    };
    let (reply, out) = g
        .generate_tool_turn(
            msgs,
            &tools,
            &ToolChoice::Required,
            &turn,
            options(),
            &mut |_| true,
        )
        .unwrap();
    let Reply::Calls(calls) = reply else { panic!() };
    assert_eq!(calls.len(), 1, "{}", out.text);
}

/// The loop: a call, its result back as a tool message, then the answer (with a prefill and a
/// stop string).
#[test]
fn two_trip_loop_with_the_calculator() {
    let tok = tokenizer();
    let mut g = generator(
        &tok,
        &[
            r#"{"tool_calls":[{"name":"calculator","arguments":{"expression":"1234 * 5678"}}]}"#,
            " 7006652.\nMore text that the stop string cuts.",
        ],
    );
    let (tool, handler) = builtin::calculator();
    let result = ToolLoop::new()
        .tool(tool, handler)
        .choice(ToolChoice::Required)
        .after_results(ToolChoice::None)
        .answer_prefix(Some("The answer is".into()))
        .options(GenerateOptions {
            max_tokens: 96,
            stop: vec!["\n".into()],
            ..GenerateOptions::default()
        })
        .run(&mut g, vec![Message::new("user", "What is 1234 * 5678?")])
        .unwrap();
    assert_eq!(result.stop, LoopStop::Answer);
    assert_eq!(result.answer.as_deref(), Some("The answer is 7006652."));
    let roles: Vec<&str> = result.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert_eq!(result.messages[2].content, "7006652");
    let id = result.trips[0].calls[0].id.clone();
    assert_eq!(
        result.messages[2].tool_call_id.as_deref(),
        Some(id.as_str())
    );
    assert_eq!(result.trips.len(), 2);
    assert_eq!(result.trips[0].outcomes[0].result, Ok(json!(7006652)));
    assert_eq!(result.trips[1].choice, ToolChoice::None);
}

/// A tool without a handler ends the loop with its calls.
#[test]
fn unhandled_calls_end_the_loop() {
    let tok = tokenizer();
    let call =
        r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Lima","unit":"celsius"}}]}"#;
    let mut g = generator(&tok, &[call]);
    let result = ToolLoop::new()
        .declare(weather())
        .choice(ToolChoice::Required)
        .run(&mut g, vec![Message::new("user", "Lima?")])
        .unwrap();
    assert_eq!(result.stop, LoopStop::UnhandledCalls);
    assert_eq!(result.pending.len(), 1);
    assert_eq!(result.pending[0].arguments_value().unwrap()["city"], "Lima");
    assert_eq!(result.answer, None);
}

/// Masks of the tool constraint (through the kernel's lexeme fast path and its cache) agree
/// with the recognizer byte by byte: a token is allowed exactly when the recognizer takes all
/// its bytes. Checked at every step of a call and of a text answer, on every token for small
/// masks and on a sample for large ones.
#[test]
fn masks_agree_with_the_recognizer() {
    use generate::tools::{Branches, CallSequence, TextGuard, ToolRecognizer};
    use mask_kernel::{Kernel, MaskCache, Recognizer, Session};
    use schema_compiler::{Grammar, Options};
    use vocab_index::{TokenId, TrieKind};

    let tok = tokenizer();
    let kernel = Arc::new(Kernel::new(tok.vocab().clone(), TrieKind::Flat).unwrap());
    let tools = [weather(), builtin::calculator().0];
    let refs: Vec<&Tool> = tools.iter().collect();
    let f = ToolFormat::JsonEnvelope;
    let grammar = Arc::new(
        Grammar::compile(&f.call_schema(&refs, usize::MAX), &Options::generation()).unwrap(),
    );
    let texts = [
        r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Zürich \"Old Town\"","unit":"celsius"}},{"name":"calculator","arguments":{"expression":"(1 + 2) * 3"}}]}"#,
        "It is 20 degrees in Zürich.",
    ];
    let mut cache = MaskCache::new(1 << 26);
    for text in texts {
        let rec = ToolRecognizer::new(
            Branches::Either,
            TextGuard::new(f.opening().as_bytes(), f.marker().as_bytes()),
            Some(CallSequence::new(
                grammar.clone(),
                Arc::new(f.layout(usize::MAX)),
            )),
        );
        let mut s = Session::new(kernel.clone(), rec);
        let mut mask = s.new_mask();
        let mut fresh = s.new_mask();
        for id in tok.encode(text, false).unwrap() {
            s.mask(&mut cache, &mut mask).unwrap();
            s.mask_uncached(&mut fresh).unwrap();
            assert_eq!(mask, fresh, "cached and fresh masks differ before {id:?}");
            let vocab = kernel.vocab();
            let mut r = s.recognizer().clone();
            let mut takes = |t: TokenId| {
                let bytes = vocab.bytes(t);
                let n = bytes.iter().take_while(|&&b| r.try_push_byte(b)).count();
                r.pop_bytes(n);
                n == bytes.len()
            };
            // Every allowed token (a sample when there are many) is taken...
            let allowed: Vec<usize> = mask.ones().collect();
            let every = allowed.len() / 3000 + 1;
            for &t in allowed.iter().step_by(every) {
                let t = TokenId::new(t as u32).unwrap();
                assert!(
                    vocab.is_eos(t) || takes(t),
                    "{t:?} {:?} allowed but refused in {text:?}",
                    String::from_utf8_lossy(vocab.bytes(t))
                );
            }
            // ...and a sample of the others is refused.
            for t in (0..vocab.len()).step_by(89).filter(|&t| !mask.contains(t)) {
                let t = TokenId::new(t as u32).unwrap();
                if vocab.is_special(t) || vocab.bytes(t).is_empty() {
                    continue;
                }
                assert!(
                    !takes(t),
                    "{t:?} {:?} refused but taken in {text:?}",
                    String::from_utf8_lossy(vocab.bytes(t))
                );
            }
            assert!(mask.contains(id.as_usize()), "{id:?} refused in {text:?}");
            s.commit(id).unwrap();
        }
        assert!(s.is_accepting(), "{text}");
    }
}

/// The Qwen 3 template's own format: tools rendered by the template, `<tool_call>` blocks
/// (`<tool_call>` is one ordinary token of that vocabulary), results as `tool` messages.
#[test]
fn hermes_format_with_the_qwen3_template() {
    let tok = load("qwen3");
    let call = "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\",\"unit\":\"celsius\"}}\n</tool_call>";
    let two = format!("{call}\n{call}");
    let mut g = generator(&tok, &[call, &two, "It is sunny in Paris.", "Sunny."]);
    assert_eq!(g.tool_format(), ToolFormat::Hermes);
    let tools = [weather()];
    let msgs = vec![Message::new("user", "Weather in Paris?")];
    let prompt = g.tool_prompt(&msgs, &tools, &ToolChoice::Auto).unwrap();
    let text: String = prompt
        .iter()
        .map(|&t| String::from_utf8_lossy(tok.token_bytes(t)).into_owned())
        .collect();
    assert!(
        text.contains("<tools>") && text.contains("get_weather"),
        "{text}"
    );

    let (reply, out) = g
        .generate_with_tools(
            msgs.clone(),
            &tools,
            &ToolChoice::Auto,
            options(),
            &mut |_| true,
        )
        .unwrap();
    let Reply::Calls(calls) = reply else {
        panic!("{}", out.text)
    };
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].arguments_value().unwrap(),
        json!({"city": "Paris", "unit": "celsius"})
    );

    let (reply, out) = g
        .generate_with_tools(
            msgs.clone(),
            &tools,
            &ToolChoice::Required,
            options(),
            &mut |_| true,
        )
        .unwrap();
    let Reply::Calls(calls) = reply else {
        panic!("{}", out.text)
    };
    assert_eq!(calls.len(), 2, "{}", out.text);

    // A loop: the call's result goes back through the template as a tool response.
    let result = ToolLoop::new()
        .declare(weather())
        .run(&mut g, msgs.clone())
        .unwrap();
    assert_eq!(result.stop, LoopStop::Answer);
    assert_eq!(result.answer.as_deref(), Some("It is sunny in Paris."));
    let mut transcript = msgs;
    let call =
        generate::tools::ToolCall::new("get_weather", json!({"city": "Paris", "unit": "celsius"}));
    transcript.push(generate::tools::ToolCall::assistant_message(
        std::slice::from_ref(&call),
    ));
    transcript.push(call.result_message("sunny, 24 °C"));
    let prompt = g
        .tool_prompt(&transcript, &tools, &ToolChoice::Auto)
        .unwrap();
    let text: String = prompt
        .iter()
        .map(|&t| String::from_utf8_lossy(tok.token_bytes(t)).into_owned())
        .collect();
    assert!(
        text.contains("<tool_response>\nsunny, 24 °C\n</tool_response>"),
        "{text}"
    );
    assert!(text.contains("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Paris\",\"unit\":\"celsius\"}}\n</tool_call>"), "{text}");
    let (reply, _) = g
        .generate_with_tools(
            transcript,
            &tools,
            &ToolChoice::Auto,
            options(),
            &mut |_| true,
        )
        .unwrap();
    assert_eq!(reply, Reply::Text("Sunny.".into()));
}

/// A model whose logits are far wider than the tokenizer's vocabulary belongs to another
/// tokenizer: refused with both sizes named, not padded over.
#[test]
fn a_model_and_a_vocabulary_of_other_sizes_are_refused() {
    let tok = load("llama2");
    let wide = 262_144;
    let model = Scripted {
        tok: tok.clone(),
        plain: vec![0.0; wide],
        scripts: Vec::new(),
        request: 0,
        in_prompt: true,
        generated: Vec::new(),
        past: 0,
        logits: vec![0.0; wide],
    };
    match Generator::new(model, tok.clone()) {
        Err(e @ GenerateError::VocabMismatch { .. }) => {
            let text = e.to_string();
            assert!(text.contains("262144") && text.contains("32000"), "{text}");
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("accepted a 32000-token vocabulary for 262144 logits"),
    }
}

/// Log probabilities come from the distribution after the mask: under `{"n": integer}` the
/// alternatives at the number are all tokens that can start an integer, although the model
/// likes every printable token as much; the forced `{"n":` has probability 1. The same
/// entries reach a sink while generating, and a tool call's tokens have them too.
#[test]
fn logprobs_come_from_the_masked_distribution() {
    let tok = tokenizer();
    let mut g = generator(&tok, &[r#"{"n":42}"#]);
    let sink = generate::LogprobSink::default();
    g.set_logprob_sink(Some(sink.clone()));
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
        "required": ["n"], "additionalProperties": false});
    let request = generate::Request {
        options: GenerateOptions {
            logprobs: Some(3),
            ..options()
        },
        ..generate::Request::chat(vec![Message::new("user", "n?")]).with_schema(schema)
    };
    let out = g.generate(&request, &mut |_| true).unwrap();
    assert_eq!(out.text, r#"{"n":42}"#);
    let bytes: Vec<u8> = out.logprobs.iter().flat_map(|e| e.bytes.clone()).collect();
    assert_eq!(bytes, out.text.as_bytes());
    assert_eq!(out.logprobs.len(), out.completion_tokens);
    assert_eq!(*sink.lock().unwrap(), out.logprobs);
    let mut sampled = 0;
    for e in &out.logprobs {
        assert!(e.logprob.is_finite() && e.logprob <= 0.0, "{e:?}");
        assert!(!e.top.is_empty() && e.top.len() <= 3, "{e:?}");
        assert!(e.top.windows(2).all(|w| w[0].2 >= w[1].2), "{e:?}");
        assert!(e.top.iter().all(|t| t.2.is_finite() && t.2 <= 0.0));
        if e.bytes.first().is_some_and(u8::is_ascii_digit) {
            sampled += 1;
            // The scripted token is by far the likeliest; the others are allowed ones.
            assert_eq!(e.top[0].0, e.token, "{e:?}");
            assert!(e.logprob > -0.01, "{e:?}");
            assert_eq!(e.top.len(), 3);
            for (_, b, _) in &e.top[1..] {
                let first = b.first().copied().unwrap_or(b' ');
                assert!(
                    first.is_ascii_digit() || first == b'-' || first == b'}',
                    "{:?} is not allowed here",
                    String::from_utf8_lossy(b)
                );
            }
        } else if e.bytes.starts_with(b"{") {
            assert_eq!(e.logprob, 0.0, "forced: {e:?}");
            assert_eq!(e.top.len(), 1);
        }
    }
    assert!(sampled >= 1);

    // Without the option: nothing recorded.
    sink.lock().unwrap().clear();
    let mut g2 = generator(&tok, &[r#"{"n":42}"#]);
    g2.set_logprob_sink(Some(sink.clone()));
    let out = g2.generate(&request_plain(), &mut |_| true).unwrap();
    assert!(out.logprobs.is_empty() && sink.lock().unwrap().is_empty());
}

fn request_plain() -> generate::Request {
    generate::Request {
        options: options(),
        ..generate::Request::chat(vec![Message::new("user", "n?")])
    }
}

/// With a text schema, an `auto` turn is a call or a JSON document of that schema, though
/// both start with `{` in the JSON envelope; `none` gives the document.
#[test]
fn a_text_schema_next_to_the_calls() {
    let tok = tokenizer();
    let tools = [weather()];
    let schema = json!({"type": "object", "properties": {"city": {"type": "string"}},
        "required": ["city"], "additionalProperties": false});
    let turn = TurnOptions {
        text_schema: Some(schema),
        ..TurnOptions::default()
    };
    let msgs = vec![Message::new("user", "Weather in Paris?")];
    let call =
        r#"{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}}]}"#;
    let mut g = generator(&tok, &[r#"{"city":"Paris"}"#, call, "plain words"]);
    let mut turn_for = |choice: ToolChoice| {
        g.generate_tool_turn(msgs.clone(), &tools, &choice, &turn, options(), &mut |_| {
            true
        })
        .unwrap()
        .0
    };
    assert_eq!(
        turn_for(ToolChoice::Auto),
        Reply::Text(r#"{"city":"Paris"}"#.into())
    );
    match turn_for(ToolChoice::Auto) {
        Reply::Calls(calls) => assert_eq!(calls[0].arguments_value().unwrap()["city"], "Paris"),
        other => panic!("{other:?}"),
    }
    // A model that wants plain words still answers in the schema.
    match turn_for(ToolChoice::None) {
        Reply::Text(t) => {
            let v: serde_json::Value = serde_json::from_str(&t).unwrap();
            assert!(v["city"].is_string(), "{t}");
        }
        other => panic!("{other:?}"),
    }
}

/// Under `PropertyOrder::Schema`, a tool marked `any_order` keeps the order the model writes
/// its arguments in, while another tool's arguments follow its schema's order.
#[test]
fn a_tool_marked_any_order_keeps_any_order_beside_an_ordered_one() {
    let tok = tokenizer();
    let params = json!({"type": "object", "properties": {"x": {"type": "string"},
        "y": {"type": "string"}}, "required": ["x", "y"], "additionalProperties": false});
    let mut loose = Tool::new("loose", "Loose.", params.clone());
    loose.any_order = true;
    let tight = Tool::new("tight", "Tight.", params);
    let script = r#"{"tool_calls":[{"name":"loose","arguments":{"y":"b","x":"a"}},{"name":"tight","arguments":{"y":"b","x":"a"}}]}"#;
    let mut g = generator(&tok, &[script]);
    g.set_property_order(schema_compiler::PropertyOrder::Schema);
    let (reply, out) = g
        .generate_with_tools(
            vec![Message::new("user", "Go")],
            &[loose, tight],
            &ToolChoice::Required,
            options(),
            &mut |_| true,
        )
        .unwrap();
    let Reply::Calls(calls) = reply else {
        panic!("no calls: {}", out.text);
    };
    assert_eq!(calls.len(), 2, "{}", out.text);
    assert!(
        out.text
            .contains(r#"{"name":"loose","arguments":{"y":"b","x":"a"}}"#),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(r#"{"name":"tight","arguments":{"x":"#),
        "{}",
        out.text
    );
}

/// A model with random logits (xorshift, seeded): it writes whatever the constraint allows,
/// keys and numbers included that no real model would.
struct Random {
    vocab: usize,
    past: usize,
    state: u64,
    logits: Vec<f32>,
}

impl Model for Random {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn context_size(&self) -> usize {
        8192
    }
    fn n_past(&self) -> usize {
        self.past
    }
    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.past += tokens.len();
        for l in &mut self.logits {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            *l = (self.state % 1000) as f32 / 100.0;
        }
        Ok(&self.logits)
    }
    fn logits_depend_only_on_tokens(&self) -> bool {
        false
    }
    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        self.past = self.past.min(n_past);
        Ok(())
    }
}

#[test]
fn every_required_turn_with_room_for_a_call_gives_calls() {
    // Whatever the model writes (long extra keys, numbers beyond an f64 such as 1e400), a
    // turn whose budget holds the shortest call ends with calls that read back: the budget
    // closes the call, and the arguments are kept as written.
    let tok = load("llama3");
    let vocab = tok.vocab().len();
    let model = Random {
        vocab,
        past: 0,
        state: 0x9E37_79B9_7F4A_7C15,
        logits: vec![0.0; vocab],
    };
    let mut g = Generator::new(model, tok).unwrap();
    let mut weather = weather().to_openai();
    // Any other property too, so that the model can write keys and values of its own.
    weather["function"]["parameters"]["additionalProperties"] = json!(true);
    let tools = [Tool::from_openai(&weather).unwrap()];
    let mut beyond_f64 = 0;
    for seed in 0..120u64 {
        let options = GenerateOptions {
            max_tokens: 30 + (seed as usize * 7) % 50,
            seed,
            ..GenerateOptions::default()
        };
        let (reply, out) = g
            .generate_with_tools(
                vec![Message::new("user", "Weather?")],
                &tools,
                &ToolChoice::Required,
                options.clone(),
                &mut |_| true,
            )
            .unwrap_or_else(|e| panic!("seed {seed}, {} tokens: {e:?}", options.max_tokens));
        let Reply::Calls(calls) = reply else {
            panic!("seed {seed}: no calls: {}", out.text);
        };
        for c in &calls {
            assert_eq!(c.name, "get_weather");
            assert!(out.text.contains(c.arguments.get()), "{}", out.text);
            match c.arguments_value() {
                Ok(v) => assert!(v.is_object(), "{v}"),
                Err(_) => beyond_f64 += 1,
            }
        }
    }
    // The model above writes such numbers: the case is met, not only allowed.
    assert!(beyond_f64 > 0, "no argument beyond an f64 was written");
}
