//! Running the `stencil` binary from tests.

use std::process::{Command, Output};

/// Runs `stencil` with `args` against the assets (`STENCIL_ASSETS`, else the workspace's
/// `assets/`), without backtraces in its errors.
pub fn stencil(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_stencil"))
        .args(args)
        .env(
            "STENCIL_ASSETS",
            std::env::var_os("STENCIL_ASSETS")
                .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../assets").into()),
        )
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("running stencil")
}

/// Bytes as text, lossily.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}
