//! `stencil`: constrained generation, mask benchmarks, tool calling and an OpenAI-compatible
//! server, from the command line.

mod chat;
mod demo;
mod generate;
mod maskbench;
mod runtime;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Structured generation that follows a JSON Schema exactly.
#[derive(Parser)]
#[command(name = "stencil", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Chats with tools: calls, runs built-in tools, and answers (`--tools FILE`, `--builtin`).
    Chat(chat::Args),
    /// Runs the built-in examples on the default model and checks every output validates.
    Demo(demo::Args),
    /// Generates text that follows a JSON Schema.
    Generate(generate::Args),
    /// Replays test instances token by token and times every mask.
    Maskbench(maskbench::Args),
    /// Serves an OpenAI-compatible API (chat completions, JSON schemas, tools).
    Serve(serve::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Chat(args) => chat::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Maskbench(args) => maskbench::run(args),
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, `: `-separated, leaving out a cause whose text the
/// message before it already contains (many errors repeat their source in their message).
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_repeated_in_its_message_is_printed_once() {
        #[derive(Debug)]
        struct Inner;
        impl std::fmt::Display for Inner {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("no such file")
            }
        }
        impl std::error::Error for Inner {}
        let e = anyhow::Error::new(Inner).context("loading m.gguf: no such file");
        assert_eq!(error_chain(&e), "loading m.gguf: no such file");
        let e = anyhow::Error::new(Inner).context("loading m.gguf");
        assert_eq!(error_chain(&e), "loading m.gguf: no such file");
    }
}
