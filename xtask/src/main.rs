//! `cargo xtask`: Stencil's project automation. Fetches the assets the tests and the demo
//! need (`fetch-assets`), converts the default model for runtimes that cannot read GGUF
//! (`convert-model`), and runs the tests, lints, demo and benchmarks as short lists of cargo
//! steps. Run `cargo xtask --help` for the commands.

mod assets;
mod convert;
mod fsutil;
mod mlx;
mod python;
mod smoke;
mod steps;
mod sysdeps;
mod tools;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::assets::Asset;

/// Stencil project automation.
#[derive(Parser)]
#[command(name = "xtask", bin_name = "cargo xtask", version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check the system packages the build and the tests need (compilers, cmake, libclang,
    /// {fmt}, npm, pip, the `openai` and `jsonschema` Python packages) and install what is
    /// missing: apt-get as root, else an error naming the command. Other commands check first.
    Setup {
        /// Only report; fail when something is missing.
        #[arg(long)]
        check: bool,
    },
    /// Download the tokenizers, the default model and the JSON-Schema-Test-Suite into assets/
    /// (through the cache in $STENCIL_CACHE, default ~/.cache/stencil); verify what is there.
    FetchAssets {
        /// Download again even when the cache has it.
        #[arg(long)]
        force: bool,
        /// Only these assets (comma-separated or repeated).
        #[arg(long, value_enum, value_delimiter = ',')]
        only: Vec<Asset>,
    },
    /// Convert a Gemma 3 GGUF model (default: the default model, fetched if missing) into a
    /// Hugging Face-style folder: f16 `model.safetensors`, `config.json` and the tokenizer
    /// files, for runtimes that cannot read GGUF. Skipped when the folder is up to date.
    ConvertModel {
        /// The GGUF file (default: assets/models/gemma-3-270m-q4_k_m.gguf).
        #[arg(long, value_name = "FILE")]
        gguf: Option<PathBuf>,
        /// The folder to write (default: assets/models/gemma-3-270m-f16, or `<FILE>-f16`
        /// next to a `--gguf` file).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// The folder with `tokenizer.json` (and `tokenizer_config.json`) to copy along
        /// (default: assets/tokenizers/gemma3).
        #[arg(long, value_name = "DIR")]
        tokenizer: Option<PathBuf>,
        /// Convert even when the folder is up to date.
        #[arg(long)]
        force: bool,
    },
    /// Fetch assets if missing, then run every test of the workspace.
    Test,
    /// Build the Python package (`python/`, wheel `stencil-json`) with maturin into
    /// `<target>/wheels/` and install it, with pytest, hypothesis, numpy, jsonschema, MLX and
    /// mlx-lm from PyPI, into the virtual environment `<target>/python-venv/`.
    Python {
        /// Build the release profile instead of the (optimised) dev profile the tests use.
        #[arg(long)]
        release: bool,
    },
    /// Make the MLX runtime (runtime-mlx) build on Linux: MLX from PyPI, mlx-c built against
    /// it, bindings, and `.cargo/mlx.toml` pointing mlx-sys at them (all in the download
    /// cache; nothing to do on macOS). Fast when already done.
    MlxSetup,
    /// Build and run the demo (the dev profile, optimised; fetching the model if missing).
    Demo {
        /// The runtime: `llama` (llama.cpp on the GGUF), or `mlx` (MLX on the converted
        /// model; sets up the MLX build and converts the model first).
        #[arg(long, default_value = "llama", value_parser = ["llama", "mlx"])]
        runtime: String,
    },
    /// Run a criterion benchmark by name; arguments after `--` go to criterion.
    Bench {
        /// The benchmark.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(
            steps::BENCHES.iter().map(|b| clap::builder::PossibleValue::new(b.name).help(b.about))
        ))]
        name: String,
        /// Extra arguments for the benchmark (`--json FILE` for `generate`, `masks` and
        /// `serve`; after `--` for criterion's own options).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run the conformance suites (JSON-Schema-Test-Suite, JSONSchemaBench sample) in release
    /// mode: a table per suite, unsupported keywords, false verdicts, and a comparison with the
    /// baselines in schema-compiler/baselines/.
    Conformance {
        /// Also write the totals per suite as JSON to this file.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
        /// Rewrite the baselines from this run.
        #[arg(long)]
        update_baselines: bool,
        /// Build in the dev profile (optimised in this workspace) instead of release, reusing
        /// what `cargo xtask test` built: slower suites, no second build.
        #[arg(long)]
        dev: bool,
    },
    /// Check formatting and run clippy with warnings denied.
    Lint,
    /// What CI runs: `lint`, then the steps of `test`.
    Ci,
}

/// Where things are: the repository, its assets and the download cache.
pub struct Layout {
    /// The repository root (the workspace manifest's folder).
    pub root: PathBuf,
    /// `$STENCIL_ASSETS`, else `<root>/assets`.
    pub assets: PathBuf,
    /// `$STENCIL_CACHE`, else `~/.cache/stencil`.
    pub cache: PathBuf,
}

impl Layout {
    /// Cargo's target folder: `$CARGO_TARGET_DIR` (relative to the repository root when
    /// relative), else `<root>/target`.
    pub fn target_dir(&self) -> PathBuf {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target"));
        self.root.join(target)
    }

    fn from_env() -> Result<Self> {
        // `cargo run` passes the manifest folder at run time; prefer it to the one seen at
        // build time, which is stale when checkouts share a target directory.
        let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
        let root = manifest_dir
            .parent()
            .context("xtask is not inside the workspace")?
            .to_path_buf();
        let cwd = std::env::current_dir().context("reading the current directory")?;
        let from_env = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(|v| cwd.join(PathBuf::from(v)))
        };
        let assets = from_env("STENCIL_ASSETS").unwrap_or_else(|| root.join("assets"));
        let cache = match from_env("STENCIL_CACHE") {
            Some(dir) => dir,
            None => std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".cache/stencil"))
                .context(
                    "neither STENCIL_CACHE nor HOME is set: no place for the download cache",
                )?,
        };
        Ok(Self {
            root,
            assets,
            cache,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let layout = Layout::from_env()?;
    match cli.command {
        Cmd::FetchAssets { force, only } => assets::fetch(&layout, &only, force),
        Cmd::ConvertModel {
            gguf,
            out,
            tokenizer,
            force,
        } => convert_model(&layout, gguf, out, tokenizer, force),
        Cmd::Test => steps::run(&layout, &steps::test()),
        Cmd::Python { release } => steps::run(&layout, &steps::python(release)),
        Cmd::Setup { check } => sysdeps::setup(check),
        Cmd::MlxSetup => {
            sysdeps::ensure(sysdeps::Scope::Build)?;
            mlx::setup(&layout)
        }
        Cmd::Demo { runtime } => steps::run(&layout, &steps::demo(runtime == "mlx")),
        Cmd::Bench { name, mut args } => {
            // Output files are relative to where the user stands, not to the package
            // directory cargo runs benchmarks in.
            let cwd = std::env::current_dir().context("reading the current directory")?;
            for i in 1..args.len() {
                if args[i - 1] == "--json" {
                    args[i] = cwd.join(&args[i]).to_string_lossy().into_owned();
                }
            }
            steps::run(&layout, &steps::bench(&name, &args)?)
        }
        Cmd::Conformance {
            json,
            update_baselines,
            dev,
        } => {
            // Relative to where the user stands, not to the repository root cargo runs in.
            let json = match json {
                Some(p) => Some(
                    std::env::current_dir()
                        .context("reading the current directory")?
                        .join(p),
                ),
                None => None,
            };
            steps::run(
                &layout,
                &steps::conformance(json.as_deref(), update_baselines, dev),
            )
        }
        Cmd::Lint => steps::run(&layout, &steps::lint()),
        Cmd::Ci => steps::run(&layout, &steps::ci()),
    }
}

/// `cargo xtask convert-model`: [`convert::convert_default`], or the default request with what
/// the command line changes.
fn convert_model(
    layout: &Layout,
    gguf: Option<PathBuf>,
    out: Option<PathBuf>,
    tokenizer: Option<PathBuf>,
    force: bool,
) -> Result<()> {
    if gguf.is_none() && out.is_none() && tokenizer.is_none() && !force {
        return convert::convert_default(layout);
    }
    // Relative to where the user stands, not to the repository root cargo runs in.
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let mut request = convert::default_request(layout);
    let mut fetch = Vec::new();
    match tokenizer {
        Some(dir) => request.tokenizer = Some(cwd.join(dir)),
        None => fetch.push(Asset::Tokenizers),
    }
    match gguf {
        Some(path) => {
            request.gguf = cwd.join(path);
            request.out = request.gguf.with_file_name(format!(
                "{}-f16",
                request
                    .gguf
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
            ));
        }
        None => fetch.push(Asset::Model),
    }
    if let Some(dir) = out {
        request.out = cwd.join(dir);
    }
    request.force = force;
    if !fetch.is_empty() {
        assets::fetch(layout, &fetch, false)?;
    }
    convert::run(layout, &request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    /// The smoke step runs subcommands that exist, with arguments they take.
    #[test]
    fn smoke_entries_parse() {
        for s in smoke::SMOKE
            .iter()
            .filter(|s| s.program == smoke::Program::Xtask)
        {
            let args = std::iter::once("xtask").chain(s.args.iter().copied());
            match Cli::try_parse_from(args) {
                Ok(_) => {}
                Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {}
                Err(e) => panic!("{:?}: {e}", s.args),
            }
        }
    }

    #[test]
    fn python_takes_a_release_flag() {
        let cli = Cli::try_parse_from(["xtask", "python"]).unwrap();
        assert!(matches!(cli.command, Cmd::Python { release: false }));
        let cli = Cli::try_parse_from(["xtask", "python", "--release"]).unwrap();
        assert!(matches!(cli.command, Cmd::Python { release: true }));
    }

    #[test]
    fn setup_takes_a_check_flag() {
        let cli = Cli::try_parse_from(["xtask", "setup", "--check"]).unwrap();
        assert!(matches!(cli.command, Cmd::Setup { check: true }));
    }

    #[test]
    fn only_takes_a_list() {
        let cli =
            Cli::try_parse_from(["xtask", "fetch-assets", "--only", "model,test-suite"]).unwrap();
        let Cmd::FetchAssets { only, force } = cli.command else {
            panic!("wrong command")
        };
        assert_eq!(only, [Asset::Model, Asset::TestSuite]);
        assert!(!force);
        assert!(Cli::try_parse_from(["xtask", "fetch-assets", "--only", "weights"]).is_err());
    }

    #[test]
    fn convert_model_takes_paths_and_a_force_flag() {
        let cli = Cli::try_parse_from([
            "xtask",
            "convert-model",
            "--gguf",
            "m.gguf",
            "--out",
            "o",
            "--force",
        ])
        .unwrap();
        let Cmd::ConvertModel {
            gguf,
            out,
            tokenizer,
            force,
        } = cli.command
        else {
            panic!("wrong command")
        };
        assert_eq!(
            (gguf, out, tokenizer, force),
            (Some("m.gguf".into()), Some("o".into()), None, true)
        );
    }

    #[test]
    fn conformance_takes_a_json_file_and_an_update_flag() {
        let cli = Cli::try_parse_from(["xtask", "conformance", "--json", "out.json"]).unwrap();
        let Cmd::Conformance {
            json,
            update_baselines,
            ..
        } = cli.command
        else {
            panic!("wrong command")
        };
        assert_eq!(json, Some(PathBuf::from("out.json")));
        assert!(!update_baselines);
        let cli = Cli::try_parse_from(["xtask", "conformance", "--update-baselines"]).unwrap();
        assert!(matches!(
            cli.command,
            Cmd::Conformance {
                json: None,
                update_baselines: true,
                dev: false
            }
        ));
    }

    #[test]
    fn bench_takes_known_names_and_trailing_args() {
        let cli = Cli::try_parse_from(["xtask", "bench", "vocab", "--", "--bench", "x"]).unwrap();
        let Cmd::Bench { name, args } = cli.command else {
            panic!("wrong command")
        };
        assert_eq!(
            (name.as_str(), args.as_slice()),
            ("vocab", &["--bench".to_owned(), "x".to_owned()][..])
        );
        assert!(Cli::try_parse_from(["xtask", "bench", "nope"]).is_err());
        let cli = Cli::try_parse_from(["xtask", "bench", "generate", "--json", "g.json"]).unwrap();
        let Cmd::Bench { name, args } = cli.command else {
            panic!("wrong command")
        };
        assert_eq!(name, "generate");
        assert_eq!(args, ["--json", "g.json"]);
    }
}
