//! Runs the conformance suites (JSON-Schema-Test-Suite drafts 2020-12 and 7, the
//! JSONSchemaBench sample), prints a table per suite, the unsupported features and every false
//! verdict, and compares each suite with its baseline in `baselines/`.
//!
//! ```text
//! cargo run --release -p schema-compiler --example conformance -- \
//!     [--json FILE] [--update-baselines] [--suite NAME]… [--verbose] [--slowest N]
//! ```
//!
//! `cargo xtask conformance` runs it. `--json` writes `{"<suite>": {"pass": n, "false_accept":
//! n, "false_reject": n, "compile_error": n, "unsupported": n, "total": n}, …}` (a `panic` count
//! is added when a case panicked); `--update-baselines` rewrites the baselines; `--verbose`
//! also lists compile errors and unsupported cases; `--slowest N` shows the N slowest schemas
//! (3 by default). Exits with status 1 on a regression against
//! a baseline (unless rewriting them), 2 on bad arguments or missing data.

#[path = "../tests/support/suite.rs"]
mod suite;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use suite::{Outcome, Skip};

struct Args {
    json: Option<PathBuf>,
    update: bool,
    suites: Vec<String>,
    verbose: bool,
    slowest: usize,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        json: None,
        update: false,
        suites: Vec::new(),
        verbose: false,
        slowest: 3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = Some(it.next().context("--json needs a file")?.into()),
            "--update-baselines" => a.update = true,
            "--suite" => a.suites.push(it.next().context("--suite needs a name")?),
            "--verbose" | "-v" => a.verbose = true,
            "--slowest" => {
                a.slowest = it
                    .next()
                    .and_then(|n| n.parse().ok())
                    .context("--slowest needs a count")?
            }
            "--help" | "-h" => {
                println!(
                    "conformance [--json FILE] [--update-baselines] [--suite NAME]... [--verbose] [--slowest N]\n\
                     suites: {}",
                    suite::SUITES
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}` (try --help)"),
        }
    }
    for s in &a.suites {
        if !suite::SUITES.iter().any(|d| d.name == s) {
            bail!("unknown suite `{s}`");
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Returns whether every suite matched its baseline (or baselines were rewritten).
fn run() -> Result<bool> {
    let args = parse_args()?;
    let mut runs = Vec::new();
    let mut ok = true;
    println!("optional Test-Suite files not run:");
    for (name, why) in suite::OPTIONAL_SKIPPED {
        println!("  {name}: {why}");
    }
    println!();
    for def in suite::SUITES {
        if !args.suites.is_empty() && !args.suites.iter().any(|s| s == def.name) {
            continue;
        }
        let started = Instant::now();
        let run = match suite::run_suite(def)? {
            Ok(run) => run,
            Err(Skip::Missing(why)) => {
                println!("{}: skipped: {why}\n", def.name);
                continue;
            }
        };
        let took = started.elapsed();
        print!("{}", suite::table(&run));
        println!("  ({:.1}s)", took.as_secs_f64());
        let mut slow: Vec<&suite::Record> =
            run.records.iter().filter(|r| r.first_of_schema).collect();
        slow.sort_by(|a, b| b.schema_secs.total_cmp(&a.schema_secs));
        println!("  slowest schemas (compile and judge):");
        for r in slow.iter().take(args.slowest) {
            println!("    {:>8.1} ms  {}", r.schema_secs * 1e3, r.id);
        }
        let unsupported = suite::unsupported_counts(&run.records);
        if !unsupported.is_empty() {
            println!("  unsupported (schemas, tests):");
            for (what, (schemas, tests)) in &unsupported {
                println!("    {schemas:>4} {tests:>5}  {what}");
            }
        }
        for r in &run.records {
            let show = r.outcome.is_false()
                || (args.verbose
                    && matches!(r.outcome, Outcome::CompileError | Outcome::Unsupported));
            if show {
                println!("  {}: {}\n      {}", r.outcome.name(), r.id, r.detail);
            }
        }
        if args.update {
            let path = suite::write_baseline(&run)?;
            println!("  baseline written to {}", path.display());
        } else {
            let path = suite::baseline_path(def.name);
            if path.exists() {
                let diff = suite::compare(&run, &suite::load_baseline(&path)?);
                if diff.is_clean() {
                    println!("  same as the baseline");
                } else {
                    for l in &diff.regressions {
                        println!("  regression: {l}");
                    }
                    for l in &diff.improvements {
                        println!("  improved: {l}");
                    }
                    if !diff.regressions.is_empty() {
                        ok = false;
                    }
                    if !diff.improvements.is_empty() {
                        println!("  {}", suite::UPDATE_HINT);
                    }
                }
            } else {
                println!("  no baseline at {}", path.display());
            }
        }
        println!();
        runs.push(run);
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&suite::summary_json(&runs))?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
        println!("summary written to {}", path.display());
    }
    Ok(ok)
}
