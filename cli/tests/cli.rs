//! The `stencil` binary from the outside: clear errors for bad input, and the demo's first
//! example and the whitespace policies on the real default model.

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
        for word in ["--whitespace", "compact", "flexible", "pretty"] {
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
