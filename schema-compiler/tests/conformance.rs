//! The conformance ratchet: runs every suite of `support/suite.rs` (the JSON-Schema-Test-Suite
//! in drafts 2020-12 and 7, the JSONSchemaBench sample) and compares each case's outcome with
//! the checked-in `baselines/<suite>.json`.
//!
//! The test fails on any regression (a passing case that no longer passes, a new false accept
//! or false reject, a case that disappeared) and also when a case improved or appeared, so the
//! baseline always says exactly where the compiler stands. To record a new state, run
//! `cargo xtask conformance --update-baselines` or set `STENCIL_UPDATE_BASELINES=1` for this
//! test, then review the diff of `baselines/`.
//!
//! The JSONSchemaBench sample lives beside the repository; without it that suite is skipped
//! with a printed reason. The Test-Suite comes with `cargo xtask fetch-assets`; without it the
//! test fails.

mod support;

use anyhow::{Result, bail};
use support::suite::{self, Outcome, Skip};

/// How many lines of each kind a failure message shows.
const SHOWN: usize = 40;

fn check(def: &suite::SuiteDef) -> Result<()> {
    let run = match suite::run_suite(def)? {
        Ok(run) => run,
        Err(Skip::Missing(why)) => {
            println!("{}: skipped: {why}", def.name);
            return Ok(());
        }
    };
    print!("{}", suite::table(&run));
    if std::env::var_os(suite::UPDATE_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        let path = suite::write_baseline(&run)?;
        println!("{}: baseline written to {}", def.name, path.display());
        return Ok(());
    }
    let baseline = suite::load_baseline(&suite::baseline_path(def.name))?;
    let diff = suite::compare(&run, &baseline);
    if diff.reasons_changed > 0 {
        println!(
            "{}: {} unchanged outcomes have a new reason; {}",
            def.name,
            diff.reasons_changed,
            suite::UPDATE_HINT
        );
    }
    let list = |lines: &[String]| {
        let mut s: String = lines
            .iter()
            .take(SHOWN)
            .map(|l| format!("\n  {l}"))
            .collect();
        if lines.len() > SHOWN {
            s.push_str(&format!("\n  … and {} more", lines.len() - SHOWN));
        }
        s
    };
    if !diff.regressions.is_empty() {
        bail!(
            "{}: {} regressions against {}:{}{}",
            def.name,
            diff.regressions.len(),
            suite::baseline_path(def.name).display(),
            list(&diff.regressions),
            if diff.improvements.is_empty() {
                String::new()
            } else {
                format!(
                    "\n{} improvements as well:{}",
                    diff.improvements.len(),
                    list(&diff.improvements)
                )
            }
        );
    }
    if !diff.improvements.is_empty() {
        bail!(
            "{}: {} cases improved or are new; {}:{}",
            def.name,
            diff.improvements.len(),
            suite::UPDATE_HINT,
            list(&diff.improvements)
        );
    }
    Ok(())
}

#[test]
fn draft2020_12_matches_baseline() -> Result<()> {
    check(&suite::SUITES[0])
}

#[test]
fn draft7_matches_baseline() -> Result<()> {
    check(&suite::SUITES[1])
}

#[test]
fn jsonschemabench_matches_baseline() -> Result<()> {
    check(&suite::SUITES[2])
}

#[test]
fn suites_are_listed_in_order() {
    let names: Vec<_> = suite::SUITES.iter().map(|s| s.name).collect();
    assert_eq!(names, ["draft2020-12", "draft7", "jsonschemabench"]);
}

/// The bar: no suite has a false verdict. Kept apart from the ratchet, which records the
/// known ones, so that it names them.
#[test]
fn baselines_have_no_false_verdicts() -> Result<()> {
    let mut bad = Vec::new();
    for def in suite::SUITES {
        let path = suite::baseline_path(def.name);
        if !path.exists() {
            continue;
        }
        for (id, (o, _)) in suite::load_baseline(&path)? {
            if o.is_false() {
                bad.push(format!("{}: {id}: {}", def.name, o.name()));
            }
        }
    }
    if !bad.is_empty() {
        bail!("{} false verdicts:\n  {}", bad.len(), bad.join("\n  "));
    }
    Ok(())
}

/// Every suite again with members held to the schema's order (`PropertyOrder::Schema`):
/// every outcome is the one of any order. No invalid instance is accepted, and a valid
/// instance whose members are out of the schema's order is accepted once they are reordered
/// (the runner searches the orders of each object's members; see `suite::REORDERED`).
#[test]
fn schema_order_keeps_every_outcome() -> Result<()> {
    use schema_compiler::PropertyOrder;
    let mut problems = Vec::new();
    for def in suite::SUITES {
        let (Ok(any), Ok(ordered)) = (
            suite::run_suite_in(def, PropertyOrder::Any)?,
            suite::run_suite_in(def, PropertyOrder::Schema)?,
        ) else {
            println!("{}: skipped: its data is missing", def.name);
            continue;
        };
        let before: std::collections::HashMap<&str, Outcome> = any
            .records
            .iter()
            .map(|r| (r.id.as_str(), r.outcome))
            .collect();
        let mut reordered = 0;
        for r in &ordered.records {
            let was = before.get(r.id.as_str()).copied();
            if was != Some(r.outcome) {
                problems.push(format!(
                    "{}: {}: {} in any order, {} in the schema's: {}",
                    def.name,
                    r.id,
                    was.map_or("missing", Outcome::name),
                    r.outcome.name(),
                    r.detail
                ));
            }
            reordered += usize::from(r.detail == suite::REORDERED);
        }
        let false_verdicts = ordered
            .records
            .iter()
            .filter(|r| r.outcome.is_false())
            .count();
        println!(
            "{}: {} instances, {} false verdicts, {} valid ones accepted once reordered",
            def.name,
            ordered.records.len(),
            false_verdicts,
            reordered
        );
    }
    if !problems.is_empty() {
        bail!(
            "{} outcomes changed:\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    Ok(())
}

/// The ratchet itself: a worse outcome, a new false verdict and a vanished case are
/// regressions; a better outcome is an improvement that asks for a new baseline.
#[test]
fn compare_tells_regressions_from_improvements() {
    let rec = |id: &str, outcome| suite::Record {
        id: id.into(),
        section: "main".into(),
        outcome,
        detail: String::new(),
        unsupported: None,
        first_of_schema: true,
        schema_secs: 0.0,
    };
    let run = suite::SuiteRun {
        name: "t".into(),
        records: vec![
            rec("same", Outcome::Pass),
            rec("worse", Outcome::Unsupported),
            rec("better", Outcome::Pass),
            rec("new false", Outcome::FalseAccept),
            rec("new ok", Outcome::Pass),
            rec("sideways", Outcome::CompileError),
        ],
    };
    let base: suite::Baseline = [
        ("same", Outcome::Pass),
        ("worse", Outcome::Pass),
        ("better", Outcome::FalseReject),
        ("sideways", Outcome::Unsupported),
        ("gone", Outcome::Unsupported),
    ]
    .into_iter()
    .map(|(k, o)| (k.to_string(), (o, String::new())))
    .collect();
    let d = suite::compare(&run, &base);
    let ids = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|l| l.split(':').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&d.regressions), ["worse", "new false", "gone"]);
    assert_eq!(ids(&d.improvements), ["better", "new ok", "sideways"]);
    // The baseline text round-trips.
    let dir = std::env::temp_dir().join(format!("stencil-baseline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("t.json");
    std::fs::write(&p, suite::baseline_text(&run)).unwrap();
    let back = suite::load_baseline(&p).unwrap();
    assert!(suite::compare(&run, &back).is_clean());
    std::fs::remove_dir_all(&dir).unwrap();
}
