//! `stencil`: constrained generation, mask benchmarks, tool calling and an OpenAI-compatible
//! server, from the command line.

mod generate;
mod maskbench;

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
    /// Generates text that follows a JSON Schema.
    Generate(generate::Args),
    /// Replays test instances token by token and times every mask.
    Maskbench(maskbench::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Generate(args) => generate::run(args),
        Command::Maskbench(args) => maskbench::run(args),
    }
}
