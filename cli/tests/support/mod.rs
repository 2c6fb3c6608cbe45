//! Running the `stencil` binary from tests.

use std::process::{Command, Output};

/// The assets folder the tests use: `STENCIL_ASSETS`, else the workspace's `assets/`.
pub fn assets() -> String {
    std::env::var("STENCIL_ASSETS")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../assets").to_owned())
}

/// Runs `stencil` with `args` against the assets (`STENCIL_ASSETS`, else the workspace's
/// `assets/`), without backtraces in its errors.
pub fn stencil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stencil"))
        .args(args)
        .env("STENCIL_ASSETS", assets())
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("running stencil")
}

/// Bytes as text, lossily.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
