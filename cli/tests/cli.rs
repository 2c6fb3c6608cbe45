//! The `stencil` binary from the outside: clear errors for bad input, and the demo's first
//! example, the whitespace policies and the member order on the real default model.

mod support;

use support::{stencil, text};

#[test]
fn help_lists_the_commands() {
    let out = stencil(&["--help"]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for cmd in ["generate", "demo", "maskbench"] {
        assert!(help.contains(cmd), "{cmd} missing from:\n{help}");
    }
}

#[test]
fn the_commands_that_generate_json_take_a_whitespace_policy() {
    for cmd in ["generate", "demo", "chat", "serve"] {
        let out = stencil(&[cmd, "--help"]);
        assert!(out.status.success());
        let help = text(&out.stdout);
        for word in [
            "--whitespace",
            "compact",
            "flexible",
            "pretty",
            "--property-order",
        ] {
            assert!(
                help.contains(word),
                "{word} missing from {cmd} --help:\n{help}"
            );
        }
    }
}

/// The generated text of `stencil generate --json` with `extra` arguments, on the default
/// model.
fn generated(extra: &[&str]) -> String {
    let schema = r#"{"type":"object","properties":{"name":{"type":"string","maxLength":20},
        "tags":{"type":"array","items":{"type":"string","maxLength":12},"maxItems":2},
        "address":{"type":"object","properties":{"city":{"type":"string","maxLength":20}},
        "required":["city"]}},"required":["name","tags","address"]}"#;
    let mut args = vec![
        "generate",
        "--schema",
        schema,
        "--prompt",
        "Describe a person called Ada as JSON.",
        "--max-tokens",
        "80",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = stencil(&args);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    let output: serde_json::Value = serde_json::from_str(&stdout).expect("--json prints JSON");
    assert_eq!(output["complete"], true, "{stdout}");
    let generated = output["text"].as_str().expect("a text").to_string();
    serde_json::from_str::<serde_json::Value>(&generated).expect("the text is JSON");
    generated
}

#[test]
fn generated_json_is_compact_unless_asked_otherwise() {
    use schema_compiler::json_text::{minify, pretty};
    let compact = generated(&[]);
    assert_eq!(compact, minify(&compact), "whitespace outside strings");
    let laid_out = generated(&["--whitespace", "pretty"]);
    assert_eq!(laid_out, pretty(&laid_out, 2), "not the pretty layout");
    assert!(laid_out.contains("\n  \""), "{laid_out}");
}

#[test]
fn property_order_schema_keeps_the_schemas_order() {
    let written = generated(&["--property-order", "schema"]);
    let doc: serde_json::Value = serde_json::from_str(&written).unwrap();
    let keys: Vec<&str> = doc
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // The schema lists them so; sorted they would be address, name, tags.
    assert_eq!(keys, ["name", "tags", "address"], "{written}");
    let out = stencil(&["generate", "--property-order", "sorted", "--prompt", "hi"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--property-order"));
}

#[test]
fn a_missing_model_is_a_clear_error() {
    let out = stencil(&[
        "generate",
        "--model",
        "/nonexistent/m.gguf",
        "--prompt",
        "hi",
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("/nonexistent/m.gguf"), "{err}");
    assert!(err.contains("fetch-assets"), "{err}");
    // Printed once: no cause repeating the message.
    assert!(!err.contains("Caused by"), "{err}");
    assert_eq!(err.matches("/nonexistent/m.gguf").count(), 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_schema_that_is_not_json_is_a_clear_error() {
    let out = stencil(&["generate", "--schema", "{\"type\": ", "--prompt", "hi"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("not valid JSON"), "{err}");
}

#[test]
fn an_unsupported_keyword_names_its_pointer() {
    let schema =
        r#"{"type":"object","properties":{"mail":{"type":"string","format":"idn-email"}}}"#;
    let out = stencil(&["generate", "--schema", schema, "--prompt", "hi"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("/properties/mail"), "{err}");
    assert!(err.contains("idn-email"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A number in `enum` written with more digits than a float keeps is refused from the schema's
/// text (read as a `Value` alone it would stand for `1e29`).
#[test]
fn a_number_rounded_when_read_is_refused() {
    let schema =
        r#"{"type":"object","properties":{"n":{"enum":[100000000000000000000000000001]}}}"#;
    let out = stencil(&["generate", "--schema", schema, "--prompt", "hi"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("/properties/n"), "{err}");
    assert!(err.contains("enum/0"), "{err}");
    assert!(
        err.contains("more significant digits than such a float keeps"),
        "{err}"
    );
}

#[test]
fn the_demo_example_validates_on_the_default_model() {
    let out = stencil(&["demo", "--only", "countries", "--no-compare"]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("valid JSON, validates"), "{stdout}");
    assert!(stdout.contains("stats: constrained"), "{stdout}");
    // The content check: greedy decoding finds Nigeria in Africa.
    assert!(stdout.contains("content: passed"), "{stdout}");
    let answer = stdout
        .lines()
        .find_map(|l| l.strip_prefix("answer: "))
        .unwrap_or_else(|| panic!("no answer line in:\n{stdout}"));
    let answer: serde_json::Value = serde_json::from_str(answer).expect("the answer is JSON");
    // The demo checks with the schema compiler; check again with an independent validator.
    let examples: serde_json::Value =
        serde_json::from_str(include_str!("../demo/examples.json")).expect("examples.json");
    let schema = examples
        .as_array()
        .and_then(|all| all.iter().find(|e| e["name"] == "countries"))
        .map(|e| &e["schema"])
        .expect("the countries example");
    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(schema)
        .expect("the example schema is a valid schema");
    assert!(validator.is_valid(&answer), "{answer}");
    let expected = serde_json::json!({"name": "Nigeria", "continent": "Africa"});
    assert!(
        answer
            .as_array()
            .is_some_and(|items| items.contains(&expected)),
        "{answer}"
    );
}

const CITY_SCHEMA: &str = r#"{"type":"object","properties":{"city":{"type":"string"},"population":{"type":"integer","minimum":0}},"required":["city","population"]}"#;

/// `stencil generate` on a GGUF file with no `--tokenizer`: the file's own vocabulary.
fn generate_on(model: Option<&str>, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "generate",
        "--schema",
        CITY_SCHEMA,
        "--prompt",
        "Lagos has about 15 million people. Give the city and its population as JSON.",
    ];
    if !extra.contains(&"--max-tokens") {
        args.extend(["--max-tokens", "48"]);
    }
    if let Some(m) = model {
        args.extend(["--model", m]);
    }
    args.extend_from_slice(extra);
    stencil(&args)
}

#[test]
fn both_default_models_generate_without_a_tokenizer_file() {
    let gemma = format!("{}/models/gemma-3-270m-q4_k_m.gguf", support::assets());
    for model in [None, Some(gemma.as_str())] {
        let out = generate_on(model, &[]);
        let stdout = text(&out.stdout);
        assert!(
            out.status.success(),
            "{model:?}\nstdout:\n{stdout}\nstderr:\n{}",
            text(&out.stderr)
        );
        let doc: serde_json::Value =
            serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        assert!(
            doc["city"].is_string() && doc["population"].is_u64(),
            "{doc}"
        );
    }
}

#[test]
fn a_tokenizer_of_another_model_is_refused() {
    for name in ["llama3", "qwen3", "llama2"] {
        let tok = format!("{}/tokenizers/{name}/tokenizer.json", support::assets());
        let gemma = format!("{}/models/gemma-3-270m-q4_k_m.gguf", support::assets());
        let out = generate_on(Some(&gemma), &["--tokenizer", &tok]);
        assert!(!out.status.success(), "{name} was accepted");
        let err = text(&out.stderr);
        assert!(
            err.contains("does not belong to the model"),
            "{name}: {err}"
        );
        assert!(err.contains(&tok), "{name}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // The model's own tokenizer.json passes the check.
    let tok = format!("{}/tokenizers/gemma3/tokenizer.json", support::assets());
    let gemma = format!("{}/models/gemma-3-270m-q4_k_m.gguf", support::assets());
    let out = generate_on(Some(&gemma), &["--tokenizer", &tok]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn an_incomplete_document_is_a_failure() {
    let out = generate_on(None, &["--max-tokens", "1"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("incomplete"), "{err}");
    assert!(err.contains("--max-tokens"), "{err}");
}

/// `stencil maskbench` with the tokenizer `name` over a new directory holding `files`
/// (name, text); the directory is removed afterwards.
fn maskbench(name: &str, files: &[(&str, &str)]) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!(
        "stencil-maskbench-{}-{}",
        std::process::id(),
        NEXT_DIR.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    let tok = format!("{}/tokenizers/{name}/tokenizer.json", support::assets());
    let out = stencil(&["maskbench", "--tokenizer", &tok, dir.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    out
}

/// Tells apart the directories of [`maskbench`] calls in one test process.
static NEXT_DIR: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

#[test]
fn maskbench_reports_a_file_it_cannot_read() {
    let out = maskbench(
        "llama3",
        &[
            (
                "a.json",
                r#"{"schema": {"type": "integer"}, "tests": [{"data": 3, "valid": true}]}"#,
            ),
            ("b.json", "{ not json"),
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("skipped") && err.contains("b.json"), "{err}");
    assert!(err.contains("files skipped 1"), "{err}");
}

/// Instances are tokenized as a model writes them mid-text: Llama 2's tokenizer puts `▁` before
/// a whole text, which compact generation never writes, so every valid instance was rejected.
#[test]
fn maskbench_tokenizes_instances_as_generated_text() {
    let case = r#"{"schema": {"anyOf": [{"properties": {"t": {"const": "ab"}}, "required": ["t"]},
        {"properties": {"t": {"const": "abXYZ"}}, "required": ["t"]}]},
        "tests": [{"data": {"t": "abXYZ"}, "valid": true}, {"data": {"t": "ab"}, "valid": true},
        {"data": {"t": "abX"}, "valid": false}]}"#;
    for name in ["llama2", "llama3", "gemma3", "qwen3"] {
        let out = maskbench(name, &[("a.json", case)]);
        let err = text(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        assert!(
            err.contains("valid accepted 2 rejected 0; invalid rejected 1 accepted 0"),
            "{name}: {err}"
        );
    }
}

#[cfg(not(feature = "mlx"))]
#[test]
fn mlx_without_the_feature_is_a_clear_error() {
    let out = stencil(&["generate", "--runtime", "mlx", "--prompt", "hi"]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("built without MLX"), "{err}");
    assert!(err.contains("--features mlx"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
