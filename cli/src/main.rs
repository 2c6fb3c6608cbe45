//! `stencil`: constrained generation, mask benchmarks, tool calling and an OpenAI-compatible
//! server, from the command line.

mod chat;
mod demo;
mod generate;
mod maskbench;
mod runtime;
mod serve;

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

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Chat(args) => chat::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Maskbench(args) => maskbench::run(args),
        Command::Serve(args) => serve::run(args),
    }
}
