//! `stencil --runtime mlx` (a build with the `mlx` feature): the demo's first example on the
//! converted default model validates against its schema. Without the converted folder
//! (`cargo xtask convert-model`) the test says so and passes.
#![cfg(feature = "mlx")]

mod support;

use std::path::PathBuf;

use support::{stencil, text};

#[test]
fn the_demo_example_validates_on_mlx() {
    let assets = std::env::var_os("STENCIL_ASSETS").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
        PathBuf::from,
    );
    let dir = assets.join("models/gemma-3-270m-f16");
    if !dir.join("config.json").is_file() {
        eprintln!(
            "skipped: {} is missing (cargo xtask convert-model)",
            dir.display()
        );
        return;
    }
    let out = stencil(&[
        "demo",
        "--runtime",
        "mlx",
        "--only",
        "countries",
        "--no-compare",
    ]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("valid JSON, validates"), "{stdout}");
    assert!(stdout.contains("stats: constrained"), "{stdout}");
}
