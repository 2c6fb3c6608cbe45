//! The thin subcommands (`test`, `lint`, `ci`, `demo`, `bench`, `conformance`) as lists of
//! steps: check the system packages, fetch assets, set up the MLX build, then cargo commands run
//! from the repository root. Adding a test step or a benchmark is one entry in a list here.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::Layout;
use crate::assets::{self, Asset};
use crate::sysdeps::{self, Scope};
use crate::{convert, mlx, python, smoke, tools};

/// One step of a subcommand.
pub enum Step {
    /// Check the system packages (and install what is missing, as `cargo xtask setup` does)
    /// before anything is built.
    Setup(Scope),
    /// Fetch (or just verify) these assets, as `cargo xtask fetch-assets --only …` would.
    FetchAssets(&'static [Asset]),
    /// `cargo xtask mlx-setup`: what `runtime-mlx`, a workspace member, needs to build on
    /// Linux. Steps that build the whole workspace come after it.
    MlxSetup,
    /// `cargo xtask convert-model`: the default model as the f16 safetensors folder the MLX
    /// runtime reads. Does nothing when the folder is up to date.
    ConvertModel,
    /// A cargo command, run from the repository root.
    Cargo {
        /// What the step is for, printed before it runs.
        title: &'static str,
        /// The arguments after `cargo`.
        args: Vec<OsString>,
    },
    /// `cargo xtask python`: the wheel built (the release profile with `true`) and installed
    /// into the Python environment xtask manages, with the tests' dependencies.
    Python(bool),
    /// `pytest python/tests` with that environment's Python.
    Pytest,
    /// Every command README.md documents, on its quickest path (see [`smoke`]).
    Smoke,
    /// A bash script of the repository, run from the repository root.
    Script {
        /// What the step is for, printed before it runs.
        title: &'static str,
        /// The script, relative to the repository root.
        path: &'static str,
    },
}

fn cargo<I, S>(title: &'static str, args: I) -> Step
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    Step::Cargo {
        title,
        args: args.into_iter().map(Into::into).collect(),
    }
}

/// `cargo xtask test`: every test of the workspace.
pub fn test() -> Vec<Step> {
    let mut steps = vec![Step::Setup(Scope::Test)];
    steps.extend(test_steps());
    steps
}

/// The steps of `test` after the system check.
fn test_steps() -> Vec<Step> {
    vec![
        Step::FetchAssets(Asset::ALL),
        Step::MlxSetup,
        // For runtime-mlx's comparison with llama.cpp and the CLI's `--runtime mlx` test.
        Step::ConvertModel,
        // Benchmarks are built here, not run: they take minutes and need a quiet machine
        // (`cargo xtask bench`).
        cargo(
            "tests of every crate (libraries, binaries, integration tests, examples)",
            [
                "test",
                "--workspace",
                "--lib",
                "--bins",
                "--tests",
                "--examples",
            ],
        ),
        // Selected with `--workspace`, so that the dependencies resolve to the features the
        // step above built them with and only the CLI is compiled again (with `-p cli` about a
        // hundred dependencies are built a second time on a cold run).
        cargo(
            "the CLI with MLX (`--runtime mlx`)",
            [
                "test",
                "--workspace",
                "--features",
                "cli/mlx",
                "--test",
                "mlx",
            ],
        ),
        cargo(
            "benchmarks build",
            ["test", "--workspace", "--benches", "--no-run"],
        ),
        cargo("doc tests", ["test", "--workspace", "--doc"]),
        // The wheel reuses the dependencies the tests above built (the same dev profile).
        Step::Python(false),
        Step::Pytest,
        // `stencil serve` on the default model, driven by the `openai` Python package and curl;
        // it uses the `stencil` binary the tests above built.
        Step::Script {
            title: "OpenAI-client tests against stencil serve",
            path: "server/tests/run-client-tests.sh",
        },
        // Uses the `stencil` binary built above.
        Step::Smoke,
    ]
}

/// `cargo xtask python [--release]`: the wheel, installed into xtask's Python environment.
pub fn python(release: bool) -> Vec<Step> {
    vec![Step::Setup(Scope::Build), Step::Python(release)]
}

/// `cargo xtask conformance`: the schema compiler's `conformance` example in release mode (in
/// the dev profile with `dev`), which runs every suite and compares it with
/// `schema-compiler/baselines/`. The ratchet test (`schema-compiler/tests/conformance.rs`) is
/// part of `cargo xtask test`.
pub fn conformance(json: Option<&Path>, update_baselines: bool, dev: bool) -> Vec<Step> {
    let mut args: Vec<OsString> = vec!["run".into()];
    if !dev {
        args.push("--release".into());
    }
    args.extend(["-p", "schema-compiler", "--example", "conformance", "--"].map(OsString::from));
    if let Some(file) = json {
        args.push("--json".into());
        args.push(file.as_os_str().to_owned());
    }
    if update_baselines {
        args.push("--update-baselines".into());
    }
    vec![
        Step::FetchAssets(&[Asset::TestSuite]),
        Step::Cargo {
            title: "conformance suites",
            args,
        },
    ]
}

/// `cargo xtask lint`: formatting and clippy.
pub fn lint() -> Vec<Step> {
    let mut steps = vec![Step::Setup(Scope::Build)];
    steps.extend(lint_steps());
    steps
}

/// The steps of `lint` after the system check.
fn lint_steps() -> Vec<Step> {
    vec![
        cargo("formatting", ["fmt", "--all", "--check"]),
        Step::MlxSetup,
        cargo(
            "clippy",
            [
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
        ),
        // Again with every feature: the code behind `mlx` in the CLI and the benches.
        cargo(
            "clippy with every feature",
            [
                "clippy",
                "--workspace",
                "--all-targets",
                "--all-features",
                "--",
                "-D",
                "warnings",
            ],
        ),
    ]
}

/// `cargo xtask ci`: one system check (what the tests need), then the steps of `lint`, then
/// exactly the steps of `cargo xtask test`.
pub fn ci() -> Vec<Step> {
    let mut steps = vec![Step::Setup(Scope::Test)];
    steps.extend(lint_steps());
    steps.extend(test_steps());
    steps
}

/// `cargo xtask demo [--runtime mlx]`: `stencil demo` (dev profile, optimised), the built-in extraction
/// examples on the default model, each checked against its schema, with constrained and
/// unconstrained tokens/s side by side. With `mlx`, on the MLX runtime: the build set up and the
/// model converted first, the binary built with the `mlx` feature.
pub fn demo(mlx: bool) -> Vec<Step> {
    let mut steps = vec![Step::Setup(Scope::Build)];
    // The default model carries its own tokenizer; MLX runs Gemma 3, converted with its
    // tokenizer files.
    steps.push(Step::FetchAssets(if mlx {
        &[Asset::Tokenizers, Asset::Model]
    } else {
        &[Asset::InstructModel]
    }));
    // The dev profile is optimised in this workspace, and `cargo xtask test` and the README's
    // `cargo build -p cli` build the same units: one build of llama.cpp serves them all.
    let mut args: Vec<OsString> = ["run", "-p", "cli"].map(OsString::from).into();
    if mlx {
        steps.push(Step::MlxSetup);
        steps.push(Step::ConvertModel);
        args.extend(["--features", "mlx"].map(OsString::from));
    }
    args.extend(["--bin", "stencil", "--", "demo"].map(OsString::from));
    if mlx {
        args.extend(["--runtime", "mlx"].map(OsString::from));
    }
    steps.push(Step::Cargo {
        title: "the demo: building stencil and running it (the first build compiles llama.cpp \
                and takes minutes)",
        args,
    });
    steps
}

/// A criterion benchmark that `cargo xtask bench <name>` runs.
pub struct Bench {
    /// The name on the command line.
    pub name: &'static str,
    /// One line for `--help`.
    pub about: &'static str,
    /// The package holding the bench target.
    pub package: &'static str,
    /// The `[[bench]]` target.
    pub target: &'static str,
    /// The assets it reads.
    pub assets: &'static [Asset],
    /// Whether it also measures the MLX runtime: the build set up, the default model
    /// converted, the bench built with the package's `mlx` feature.
    pub mlx: bool,
}

/// Every benchmark `cargo xtask bench` knows.
pub const BENCHES: &[Bench] = &[
    Bench {
        name: "vocab",
        about: "the vocabulary index over the real tokenizers",
        package: "benches",
        target: "vocab",
        assets: &[Asset::Tokenizers],
        mlx: false,
    },
    Bench {
        name: "sampler",
        about: "one sampling call per strategy, vocabulary size and mask density",
        package: "benches",
        target: "sampler",
        assets: &[],
        mlx: false,
    },
    Bench {
        name: "kernel",
        about: "the mask kernel: cold and warm masks, commits, applying a mask",
        package: "benches",
        target: "kernel",
        assets: &[Asset::Tokenizers],
        mlx: false,
    },
    Bench {
        name: "compile",
        about: "compile time of schemas that stress the compiler (each compiled or refused)",
        package: "benches",
        target: "compile",
        assets: &[],
        mlx: false,
    },
    Bench {
        name: "generate",
        about: "tokens/s with and without the constraint on the default model, llama.cpp and MLX \
                (args: --runtime llama|mlx|both, --json FILE)",
        package: "benches",
        target: "generate",
        assets: &[Asset::Tokenizers, Asset::Model],
        mlx: true,
    },
    Bench {
        name: "serve",
        about: "stencil serve on the default model under 1, 2, 4 and 8 concurrent clients: \
                tokens/s, p50/p99 latency, mask time (args: --json FILE, --concurrency LIST, \
                --parallel P, --requests-per-client K, --max-tokens M)",
        package: "cli",
        target: "serve",
        assets: &[Asset::Tokenizers, Asset::Model],
        mlx: false,
    },
    Bench {
        name: "masks",
        about: "stencil, llguidance and outlines-core masks side by side (args: `-- --help`)",
        package: "benches",
        target: "masks",
        assets: &[Asset::Tokenizers],
        mlx: false,
    },
];

/// `cargo xtask bench <name> [-- extra]`.
pub fn bench(name: &str, extra: &[String]) -> Result<Vec<Step>> {
    let Some(bench) = BENCHES.iter().find(|b| b.name == name) else {
        let known: Vec<_> = BENCHES.iter().map(|b| b.name).collect();
        bail!("unknown benchmark `{name}`; known: {}", known.join(", "));
    };
    let mut args: Vec<OsString> = ["bench", "-p", bench.package, "--bench", bench.target]
        .map(OsString::from)
        .into();
    if bench.mlx {
        args.extend(["--features", "mlx"].map(OsString::from));
    }
    if !extra.is_empty() {
        args.push("--".into());
        args.extend(extra.iter().map(OsString::from));
    }
    let mut steps = vec![Step::Setup(Scope::Build)];
    if !bench.assets.is_empty() {
        steps.push(Step::FetchAssets(bench.assets));
    }
    if bench.mlx {
        steps.push(Step::MlxSetup);
        steps.push(Step::ConvertModel);
    }
    steps.push(Step::Cargo {
        title: bench.name,
        args,
    });
    Ok(steps)
}

/// Runs `cmd` from the repository root with the assets' location in its environment.
fn run_command(layout: &Layout, mut cmd: Command, what: &str, shown: &str) -> Result<()> {
    cmd.current_dir(&layout.root)
        .env("STENCIL_ASSETS", &layout.assets);
    // Where the user stood, for tools that take relative paths (cargo runs bench binaries
    // from their package folder).
    if let Ok(dir) = std::env::current_dir() {
        cmd.env("STENCIL_CALLER_DIR", dir);
    }
    let status = cmd
        .status()
        .with_context(|| format!("could not start `{shown}`"))?;
    if !status.success() {
        bail!("{what} failed: `{shown}` exited with {status}");
    }
    Ok(())
}

/// Prints step `k` of `n` with its command, then runs it with [`run_command`].
fn run_numbered(
    layout: &Layout,
    (k, n): (usize, usize),
    title: &str,
    cmd: Command,
    shown: &str,
) -> Result<()> {
    println!("==> [{k}/{n}] {title}: {shown}");
    run_command(layout, cmd, &format!("step {k}/{n} ({title})"), shown)
}

/// Runs `steps` in order, printing each with its duration; stops at the first failure.
pub fn run(layout: &Layout, steps: &[Step]) -> Result<()> {
    let total = Instant::now();
    let n = steps.len();
    let mut times: Vec<(String, Duration)> = Vec::with_capacity(n);
    for (i, step) in steps.iter().enumerate() {
        let started = Instant::now();
        let title = match step {
            Step::Setup(scope) => {
                println!("==> [{}/{n}] system packages", i + 1);
                sysdeps::ensure(*scope)?;
                "system packages".to_owned()
            }
            Step::FetchAssets(only) => {
                println!("==> [{}/{n}] assets", i + 1);
                assets::fetch(layout, only, false)?;
                "assets".to_owned()
            }
            Step::MlxSetup => {
                println!("==> [{}/{n}] MLX build setup", i + 1);
                mlx::setup(layout)?;
                "mlx-setup".to_owned()
            }
            Step::ConvertModel => {
                println!("==> [{}/{n}] default model for MLX", i + 1);
                convert::convert_default(layout)?;
                "convert-model".to_owned()
            }
            Step::Python(release) => {
                println!(
                    "==> [{}/{n}] the Python package (wheel and environment)",
                    i + 1
                );
                python::build(layout, *release)?;
                "python".to_owned()
            }
            Step::Pytest => {
                let cmd = python::pytest(layout)?;
                let shown = tools::show(&cmd);
                run_numbered(
                    layout,
                    (i + 1, n),
                    "the Python package's tests",
                    cmd,
                    &shown,
                )?;
                "pytest".to_owned()
            }
            Step::Smoke => {
                println!("==> [{}/{n}] every command README.md documents", i + 1);
                smoke::run(layout)?;
                "smoke".to_owned()
            }
            Step::Cargo { title, args } => {
                let mut cmd = Command::new(tools::cargo_program());
                cmd.args(args);
                let shown = std::iter::once("cargo".into())
                    .chain(args.iter().map(|a| a.to_string_lossy()))
                    .collect::<Vec<_>>()
                    .join(" ");
                run_numbered(layout, (i + 1, n), title, cmd, &shown)?;
                (*title).to_owned()
            }
            Step::Script { title, path } => {
                let mut cmd = Command::new("bash");
                // Scripts use the binaries the test step built, not a build of their own.
                cmd.arg(path).env("STENCIL_SKIP_BUILD", "1");
                let shown = format!("bash {path}");
                run_numbered(layout, (i + 1, n), title, cmd, &shown)?;
                (*title).to_owned()
            }
        };
        let took = started.elapsed();
        println!("<== [{}/{n}] {title}: {:.1}s", i + 1, took.as_secs_f64());
        times.push((title, took));
    }
    if n > 1 {
        let parts: Vec<String> = times
            .iter()
            .map(|(t, d)| format!("{t} {:.1}s", d.as_secs_f64()))
            .collect();
        println!(
            "all {n} steps passed in {:.1}s ({})",
            total.elapsed().as_secs_f64(),
            parts.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(step: &Step) -> Vec<String> {
        match step {
            Step::Cargo { args, .. } => args.iter().map(|a| a.to_string_lossy().into()).collect(),
            Step::Setup(_) => vec!["<setup>".into()],
            Step::Smoke => vec!["<smoke>".into()],
            Step::Python(release) => vec![format!("<python release={release}>")],
            Step::Pytest => vec!["<pytest>".into()],
            Step::FetchAssets(_) => vec!["<assets>".into()],
            Step::MlxSetup => vec!["<mlx-setup>".into()],
            Step::ConvertModel => vec!["<convert-model>".into()],
            Step::Script { path, .. } => vec!["bash".into(), (*path).into()],
        }
    }

    #[test]
    fn ci_is_lint_then_test() {
        let got: Vec<_> = ci().iter().map(args).collect();
        let mut expected = vec![vec!["<setup>".to_owned()]];
        expected.extend(lint().iter().skip(1).map(args));
        expected.extend(test().iter().skip(1).map(args));
        assert_eq!(got, expected);
        assert!(matches!(ci()[0], Step::Setup(Scope::Test)));
    }

    /// Every command that builds checks the system packages first, and only there.
    #[test]
    fn the_system_check_comes_first() {
        let mut lists = vec![
            test(),
            lint(),
            ci(),
            demo(false),
            demo(true),
            python(false),
            python(true),
        ];
        lists.extend(BENCHES.iter().map(|b| bench(b.name, &[]).unwrap()));
        for steps in lists {
            assert!(matches!(steps[0], Step::Setup(_)));
            assert_eq!(
                steps.iter().filter(|s| matches!(s, Step::Setup(_))).count(),
                1
            );
        }
        assert!(matches!(test()[0], Step::Setup(Scope::Test)));
        assert!(matches!(demo(false)[0], Step::Setup(Scope::Build)));
    }

    #[test]
    fn mlx_setup_comes_before_workspace_builds() {
        for steps in [lint(), test()] {
            let setup = steps.iter().position(|s| matches!(s, Step::MlxSetup));
            let workspace = steps
                .iter()
                .position(|s| args(s).iter().any(|a| a == "--workspace"));
            assert!(
                setup.is_some() && setup < workspace,
                "{setup:?} {workspace:?}"
            );
        }
    }

    #[test]
    fn the_model_is_converted_before_the_tests_and_the_mlx_demo() {
        for steps in [test(), demo(true)] {
            let setup = steps.iter().position(|s| matches!(s, Step::MlxSetup));
            let convert = steps.iter().position(|s| matches!(s, Step::ConvertModel));
            let cargo = steps.iter().position(|s| matches!(s, Step::Cargo { .. }));
            assert!(
                setup < convert && convert < cargo,
                "{setup:?} {convert:?} {cargo:?}"
            );
        }
        let plain = demo(false);
        assert!(
            plain
                .iter()
                .all(|s| !matches!(s, Step::MlxSetup | Step::ConvertModel))
        );
        let cargo = args(plain.last().unwrap());
        assert!(!cargo.iter().any(|a| a == "mlx"), "{cargo:?}");
        let cargo = args(demo(true).last().unwrap());
        assert!(
            cargo.windows(2).any(|w| w == ["--features", "mlx"]),
            "{cargo:?}"
        );
        assert!(
            cargo.ends_with(&["demo".into(), "--runtime".into(), "mlx".into()]),
            "{cargo:?}"
        );
    }

    #[test]
    fn bench_passes_extra_arguments_after_a_separator() {
        let steps = bench("vocab", &["--save-baseline".into(), "main".into()]).unwrap();
        assert_eq!(
            args(&steps[2]),
            [
                "bench",
                "-p",
                "benches",
                "--bench",
                "vocab",
                "--",
                "--save-baseline",
                "main"
            ]
        );
        assert_eq!(args(&bench("vocab", &[]).unwrap()[2]).len(), 5);
        // A benchmark without assets does not fetch any (an empty list would mean all).
        assert_eq!(args(&bench("sampler", &[]).unwrap()[1])[0], "bench");
        let err = bench("nope", &[]).err().unwrap().to_string();
        assert!(err.contains("vocab"), "{err}");
    }

    #[test]
    fn the_generate_bench_builds_mlx_after_setting_it_up() {
        let steps = bench("generate", &["--json".into(), "g.json".into()]).unwrap();
        assert!(matches!(steps[2], Step::MlxSetup), "set up before building");
        assert!(
            matches!(steps[3], Step::ConvertModel),
            "the f16 folder MLX reads"
        );
        let cargo = args(&steps[4]);
        assert!(
            cargo.windows(2).any(|w| w == ["--features", "mlx"]),
            "{cargo:?}"
        );
        assert!(cargo.ends_with(&["--".into(), "--json".into(), "g.json".into()]));
        // The other benchmarks do not need MLX.
        for name in ["vocab", "kernel", "compile", "masks", "sampler"] {
            let steps = bench(name, &[]).unwrap();
            assert!(
                steps
                    .iter()
                    .all(|s| !matches!(s, Step::MlxSetup | Step::ConvertModel)),
                "{name}"
            );
        }
    }

    #[test]
    fn conformance_runs_the_example_in_release_mode() {
        let steps = conformance(Some(Path::new("/tmp/c.json")), true, false);
        assert_eq!(args(&steps[0]), ["<assets>"]);
        assert_eq!(
            args(&steps[1]),
            [
                "run",
                "--release",
                "-p",
                "schema-compiler",
                "--example",
                "conformance",
                "--",
                "--json",
                "/tmp/c.json",
                "--update-baselines"
            ]
        );
        assert_eq!(args(&conformance(None, false, false)[1]).len(), 7);
        assert_eq!(
            args(&conformance(None, false, true)[1]),
            [
                "run",
                "-p",
                "schema-compiler",
                "--example",
                "conformance",
                "--"
            ]
        );
    }

    /// The Python tests run after the wheel is built, which comes after the workspace's tests
    /// (whose build it reuses) and after the model the mlx-lm test runs is converted.
    #[test]
    fn the_python_tests_follow_the_wheel() {
        let steps = test();
        let at = |f: &dyn Fn(&Step) -> bool| steps.iter().position(f).unwrap();
        let workspace = at(&|s| args(s).iter().any(|a| a == "--workspace"));
        let convert = at(&|s| matches!(s, Step::ConvertModel));
        let wheel = at(&|s| matches!(s, Step::Python(false)));
        let pytest = at(&|s| matches!(s, Step::Pytest));
        assert!(workspace < wheel && convert < wheel && wheel + 1 == pytest);
        assert!(matches!(python(true)[1], Step::Python(true)));
    }

    #[test]
    fn bench_names_are_unique() {
        for (i, a) in BENCHES.iter().enumerate() {
            assert!(
                BENCHES[i + 1..].iter().all(|b| b.name != a.name),
                "{}",
                a.name
            );
        }
    }
}
