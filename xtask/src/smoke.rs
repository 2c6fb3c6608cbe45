//! The last step of `cargo xtask test`: every command README.md documents, run on its quickest
//! path, so a documented command that no longer works fails CI.
//!
//! Commands that are quick for real run for real (`setup --check`, `fetch-assets`, which only
//! verifies by then, `mlx-setup` and `convert-model`, done by then, `conformance` in the dev
//! profile the tests built); the others (`demo`, `test` itself, the benchmarks, the
//! `stencil` subcommands that load a model) run with `--help`, which at least proves that the
//! command and its documented name still exist. The step, and a unit test, first read README.md
//! and fail when it mentions a `cargo xtask <command>` or `stencil <command>` that has no entry
//! in [`SMOKE`].

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::Layout;
use crate::tools;

/// Which program a documented command belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// `cargo xtask <command>`: this program.
    Xtask,
    /// `stencil <command>`: the CLI, as the test step built it (`target/debug/stencil`).
    Stencil,
}

/// A documented command and how the smoke step runs it.
pub struct Smoke {
    /// The program.
    pub program: Program,
    /// The subcommand as README.md names it.
    pub command: &'static str,
    /// The arguments it is run with (the subcommand first).
    pub args: &'static [&'static str],
}

const fn xtask(command: &'static str, args: &'static [&'static str]) -> Smoke {
    Smoke {
        program: Program::Xtask,
        command,
        args,
    }
}

const fn stencil(command: &'static str, args: &'static [&'static str]) -> Smoke {
    Smoke {
        program: Program::Stencil,
        command,
        args,
    }
}

/// Every documented command, with its quickest path.
pub const SMOKE: &[Smoke] = &[
    xtask("setup", &["setup", "--check"]),
    xtask("fetch-assets", &["fetch-assets"]),
    xtask("mlx-setup", &["mlx-setup"]),
    xtask("convert-model", &["convert-model"]),
    // The suites take seconds; `--dev` reuses the test step's build instead of a release one.
    xtask("conformance", &["conformance", "--dev"]),
    // The test step built and installed the wheel: again, only the module is checked.
    xtask("python", &["python"]),
    // These build in release mode or run for minutes.
    xtask("demo", &["demo", "--help"]),
    xtask("test", &["test", "--help"]),
    xtask("lint", &["lint", "--help"]),
    xtask("ci", &["ci", "--help"]),
    xtask("bench", &["bench", "--help"]),
    // Each loads the model or serves until stopped; the OpenAI-client tests run `serve` for real.
    stencil("generate", &["generate", "--help"]),
    stencil("demo", &["demo", "--help"]),
    stencil("chat", &["chat", "--help"]),
    stencil("serve", &["serve", "--help"]),
    stencil("maskbench", &["maskbench", "--help"]),
];

/// Runs every entry of [`SMOKE`], one line each; stops at the first failure, showing what the
/// command printed.
pub fn run(layout: &Layout) -> Result<()> {
    let readme = layout.root.join("README.md");
    let text = std::fs::read_to_string(&readme)
        .with_context(|| format!("reading {}", readme.display()))?;
    let missing = uncovered(&text);
    if !missing.is_empty() {
        bail!(
            "{} documents commands without an entry in xtask/src/smoke.rs: {}",
            readme.display(),
            missing.join(", ")
        );
    }
    let xtask = std::env::current_exe().context("finding the xtask executable")?;
    let stencil = stencil_binary(layout);
    if !stencil.is_file() {
        bail!(
            "{} is missing: the test step builds it (`cargo test --workspace`)",
            stencil.display()
        );
    }
    for smoke in SMOKE {
        let (program, shown) = match smoke.program {
            Program::Xtask => (&xtask, "cargo xtask"),
            Program::Stencil => (&stencil, "stencil"),
        };
        let shown = format!("{shown} {}", smoke.args.join(" "));
        let mut cmd = Command::new(program);
        cmd.args(smoke.args)
            .current_dir(&layout.root)
            .env("STENCIL_ASSETS", &layout.assets);
        let started = Instant::now();
        tools::run_captured(cmd, &shown)?;
        println!("  ok  {shown} ({:.1}s)", started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// `target/debug/stencil`, under `$CARGO_TARGET_DIR` when that is set.
fn stencil_binary(layout: &Layout) -> PathBuf {
    layout.target_dir().join("debug/stencil")
}

/// The commands `text` mentions that have no entry in [`SMOKE`], as `cargo xtask <command>` or
/// `stencil <command>`.
pub fn uncovered(text: &str) -> Vec<String> {
    documented(text)
        .into_iter()
        .filter(|(p, w)| !SMOKE.iter().any(|s| s.program == *p && s.command == w))
        .map(|(p, w)| match p {
            Program::Xtask => format!("cargo xtask {w}"),
            Program::Stencil => format!("stencil {w}"),
        })
        .collect()
}

/// The commands `text` mentions: `cargo xtask <command>` and `stencil <command>` (after a
/// space, a backtick or a path such as `target/release/`), in order, without repeats.
pub fn documented(text: &str) -> Vec<(Program, String)> {
    let mut found: Vec<(Program, String)> = Vec::new();
    for (program, prefix) in [
        (Program::Xtask, "cargo xtask "),
        (Program::Stencil, "stencil "),
    ] {
        for (at, _) in text.match_indices(prefix) {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
                continue;
            }
            let rest = &text[at + prefix.len()..];
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                .collect();
            if word.is_empty() || !word.starts_with(|c: char| c.is_ascii_lowercase()) {
                continue;
            }
            if !found.iter().any(|(p, w)| *p == program && *w == word) {
                found.push((program, word));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every command README.md documents has a smoke entry.
    #[test]
    fn every_documented_command_is_smoke_tested() {
        let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
        let text = std::fs::read_to_string(readme).unwrap();
        let found = documented(&text);
        assert!(found.len() >= 10, "{found:?}");
        let missing = uncovered(&text);
        assert!(
            missing.is_empty(),
            "README.md documents commands without an entry in smoke::SMOKE: {missing:?}"
        );
    }

    #[test]
    fn entries_run_their_own_command() {
        for s in SMOKE {
            assert_eq!(s.args[0], s.command);
        }
    }

    #[test]
    fn mentions_are_found_after_spaces_backticks_and_paths() {
        let text = "Run `cargo xtask demo`, then cargo xtask bench <name> and\n\
                    target/release/stencil generate --schema x; `stencil serve --port 1`.\n\
                    Not cargo xtask --help, nor mystencil chat, nor stencil `x`.\n\
                    Again: cargo xtask demo.";
        assert_eq!(
            uncovered(&format!("{text} And `cargo xtask frobnicate`.")),
            ["cargo xtask frobnicate"]
        );
        let found = documented(text);
        let found: Vec<(Program, &str)> = found.iter().map(|(p, w)| (*p, w.as_str())).collect();
        assert_eq!(
            found,
            [
                (Program::Xtask, "demo"),
                (Program::Xtask, "bench"),
                (Program::Stencil, "generate"),
                (Program::Stencil, "serve"),
            ]
        );
    }
}
