//! Runs the JSON-Schema-Test-Suite and prints failures and totals.
//!
//! `cargo run --release -p schema-compiler --example conformance -- <suite-dir> <remotes-dir> <draft7|draft2020-12> [--verbose]`

#[path = "../tests/support/suite.rs"]
mod suite;

use std::path::Path;

use schema_compiler::Draft;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = Path::new(&args[1]);
    let remotes = suite::remotes(Path::new(&args[2]));
    let draft = if args[3] == "draft7" {
        Draft::Draft7
    } else {
        Draft::Draft2020
    };
    let verbose = args.iter().any(|a| a == "--verbose");
    let mut all = Vec::new();
    for f in suite::json_files(dir) {
        all.extend(suite::run_file(&f, dir, draft, &remotes));
    }
    for r in &all {
        if verbose
            || matches!(
                r.outcome,
                suite::Outcome::FalseAccept
                    | suite::Outcome::FalseReject
                    | suite::Outcome::CompileError
            )
        {
            println!("{:?}\t{}\t{}", r.outcome, r.id, r.detail);
        }
    }
    println!("{:?}", suite::totals(&all));
}
