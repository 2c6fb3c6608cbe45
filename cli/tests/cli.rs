//! The `stencil` binary from the outside: clear errors for bad input, and the demo's first
//! example on the real default model.

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
