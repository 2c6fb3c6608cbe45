//! `model-convert`: a Gemma 3 GGUF model as a Hugging Face-style folder (f16
//! `model.safetensors`, `config.json` and the tokenizer files) for runtimes that cannot read
//! GGUF, MLX among them. See [`convert`] for what it does to the weights.
//!
//! `cargo xtask convert-model` runs it with the default model's paths (and fetches the model
//! first); it is its own package so that candle, which takes minutes to build, is built only
//! when a conversion is asked for, not with every `cargo xtask`.
//!
//! ```text
//! cargo run -p model-convert -- --gguf FILE --out DIR [--tokenizer DIR] [--force]
//! ```

mod convert;

// The atomic-write and hashing helpers of xtask, compiled into this binary as well rather
// than depending on xtask (which would bring its download tooling) or on a crate of their own.
#[allow(dead_code)]
#[path = "../../xtask/src/fsutil.rs"]
mod fsutil;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Convert a Gemma 3 GGUF model into an f16 safetensors folder with `config.json` and the
/// tokenizer files. Skipped when the folder is up to date.
#[derive(Parser)]
#[command(name = "model-convert", version)]
struct Cli {
    /// The GGUF file.
    #[arg(long, value_name = "FILE")]
    gguf: PathBuf,
    /// The folder to write (replaced as a whole).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The folder with `tokenizer.json` (and `tokenizer_config.json`) to copy along; its
    /// vocabulary is checked against the model's.
    #[arg(long, value_name = "DIR")]
    tokenizer: Option<PathBuf>,
    /// Convert even when the folder is up to date.
    #[arg(long)]
    force: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let request = convert::Request {
        gguf: cli.gguf,
        tokenizer: cli.tokenizer,
        out: cli.out,
        force: cli.force,
    };
    match convert::run(&request) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod cli_tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
        assert!(Cli::try_parse_from(["model-convert", "--gguf", "m.gguf"]).is_err());
        let cli = Cli::try_parse_from(["model-convert", "--gguf", "m.gguf", "--out", "o"]).unwrap();
        assert_eq!((cli.tokenizer, cli.force), (None, false));
    }
}
