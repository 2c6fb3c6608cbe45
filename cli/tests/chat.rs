//! `stencil chat` from the outside: the two-trip calculator loop on the default model, and
//! clear errors for bad tool input.

mod support;

use support::{stencil, text};

/// The command of the README: a call, its result, then the answer on stdout. On Gemma 3 270M
/// with its `tokenizer.json` (and the chat template that comes with it): the default model,
/// SmolLM2-135M-Instruct, calls the calculator with `1234.5678` for this question.
#[test]
fn calculator_loop_on_gemma() {
    let assets = support::assets();
    let model = format!("{assets}/models/gemma-3-270m-q4_k_m.gguf");
    let tokenizer = format!("{assets}/tokenizers/gemma3/tokenizer.json");
    let out = stencil(&[
        "chat",
        "--builtin",
        "calculator",
        "--model",
        &model,
        "--tokenizer",
        &tokenizer,
        "--prompt",
        "What is 1234 * 5678? Use the calculator.",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "The answer is 7006652.", "{stderr}");
    assert!(stderr.contains("call call_1 calculator("), "{stderr}");
    assert!(stderr.contains("-> 7006652"), "{stderr}");
    assert!(stderr.contains("stop: Answer after 2 trip(s)"), "{stderr}");
}

#[test]
fn bad_tool_input_is_a_clear_error() {
    let out = stencil(&["chat", "--prompt", "hi"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no tools"),
        "{}",
        text(&out.stderr)
    );

    let out = stencil(&[
        "chat",
        "--builtin",
        "calculator",
        "--tool-choice",
        "weather",
        "--prompt",
        "hi",
    ]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("`weather` is not among the tools (calculator)"),
        "{err}"
    );

    let dir = std::env::temp_dir().join(format!("stencil-chat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tools.json");
    std::fs::write(
        &file,
        r#"[{"type": "function", "function": {"name": "bad name"}}]"#,
    )
    .unwrap();
    let out = stencil(&["chat", "--tools", file.to_str().unwrap(), "--prompt", "hi"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("tools[0]") && err.contains("bad name"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
