//! Conformance suites and their baselines.
//!
//! Two kinds of third-party data are run:
//!
//! - the official JSON-Schema-Test-Suite (fetched by `cargo xtask fetch-assets` into
//!   `assets/json-schema-test-suite/`), drafts 2020-12 and 7: every file of the main folder with
//!   `format` as an annotation, every file of `optional/format/` with `format` asserted, and the
//!   `optional/` files listed in [`OPTIONAL_RUN`] (those listed in [`OPTIONAL_SKIPPED`] are not
//!   run, each for the reason given there). `$ref`s to `http://localhost:1234/…` resolve to the
//!   suite's `remotes/` folder;
//! - the JSONSchemaBench sample in MaskBench form (`<split>/<id>.json`, each a `schema` and
//!   `tests` with `data` and `valid`), found in `shared/data/jsonschemabench-sample` beside the
//!   repository (or under `$STENCIL_SHARED_DATA`). It is not part of the repository: when it is
//!   absent the suite is skipped with a printed reason.
//!
//! Every test instance is fed to a [`Matcher`] byte by byte twice, compact and pretty-printed
//! with two-space indentation (number and string text kept exactly as written in the file), and
//! the verdict is compared with the file's `valid`. A case passes when both spellings get the
//! expected verdict.
//!
//! Each suite has a checked-in baseline, `baselines/<suite>.json`: every case id and its
//! outcome, sorted, one per line. [`compare`] tells regressions (a case that got worse, a new
//! false verdict, a case that disappeared) from improvements (which call for rewriting the
//! baseline).

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};
use schema_compiler::json_text::RoundedNumbers;
use schema_compiler::{
    CompileError, Compiler, Draft, FormatMode, Grammar, Matcher, Options, PropertyOrder,
};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Environment variable that makes the ratchet test rewrite the baselines instead of checking.
pub const UPDATE_ENV: &str = "STENCIL_UPDATE_BASELINES";

/// How to rewrite the baselines, for messages.
pub const UPDATE_HINT: &str = "rewrite the baselines with `cargo xtask conformance \
     --update-baselines` (or `STENCIL_UPDATE_BASELINES=1 cargo test -p schema-compiler --test \
     conformance`) and review the diff";

/// `optional/` files of the Test-Suite that are run, with what they check that the compiler
/// claims. A file absent from both lists fails the run, so a new upstream file gets classified.
pub const OPTIONAL_RUN: &[(&str, &str)] = &[
    (
        "anchor",
        "an `$anchor` inside `enum` data is not an identifier",
    ),
    ("bignum", "numbers beyond 64 bits are compared exactly"),
    (
        "cross-draft",
        "each document is read under its own `$schema`",
    ),
    ("ecmascript-regex", "`pattern` follows ECMA-262 semantics"),
    (
        "float-overflow",
        "`multipleOf` on numbers that overflow a double",
    ),
    (
        "id",
        "an `$id` inside `enum`/`const` data is not an identifier",
    ),
    (
        "no-schema",
        "a schema without `$schema` uses the default draft",
    ),
    (
        "non-bmp-regex",
        "`pattern` counts code points beyond the BMP",
    ),
    (
        "refOfUnknownKeyword",
        "`$ref` into the value of an unknown keyword",
    ),
    (
        "unknownKeyword",
        "an `$id` inside an unknown keyword is not an identifier",
    ),
];

/// `optional/` files of the Test-Suite that are not run, and why.
pub const OPTIONAL_SKIPPED: &[(&str, &str)] = &[
    (
        "dependencies-compatibility",
        "2020-12 only: expects the draft-7 keyword `dependencies` to assert under 2020-12, \
         where the specification makes an unknown keyword an annotation (the compiler does \
         so); draft-7 `dependencies` is covered by draft7/dependencies.json",
    ),
    (
        "dynamicRef",
        "2020-12 only: `$dynamicRef` is not implemented (the main dynamicRef.json records it \
         as unsupported already)",
    ),
    (
        "format-assertion",
        "2020-12 only: custom meta-schemas with a `$vocabulary` are not implemented",
    ),
    (
        "content",
        "draft 7 only: asserting `contentEncoding`/`contentMediaType` is optional and the \
         compiler treats them as annotations, as 2019-09 and later require",
    ),
];

/// Where a suite's data comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// `tests/<dir>` of the JSON-Schema-Test-Suite.
    TestSuite {
        /// The folder under `tests/`.
        dir: &'static str,
        /// The draft assumed without `$schema`.
        draft: Draft,
    },
    /// The JSONSchemaBench sample.
    Bench,
}

/// One conformance suite.
#[derive(Debug, Clone, Copy)]
pub struct SuiteDef {
    /// The name: the baseline file's stem and the key in reports.
    pub name: &'static str,
    /// Its data.
    pub source: Source,
}

/// Every suite, in report order.
pub const SUITES: &[SuiteDef] = &[
    SuiteDef {
        name: "draft2020-12",
        source: Source::TestSuite {
            dir: "draft2020-12",
            draft: Draft::Draft2020,
        },
    },
    SuiteDef {
        name: "draft7",
        source: Source::TestSuite {
            dir: "draft7",
            draft: Draft::Draft7,
        },
    },
    SuiteDef {
        name: "jsonschemabench",
        source: Source::Bench,
    },
];

/// One schema with its tests, in Test-Suite form.
#[derive(Deserialize)]
pub struct Case {
    pub description: String,
    /// The schema's text, so that number literals rounded when read are known.
    pub schema: Box<RawValue>,
    pub tests: Vec<Test>,
}

/// One instance, its text kept as written.
#[derive(Deserialize)]
pub struct Test {
    pub description: String,
    pub data: Box<RawValue>,
    pub valid: bool,
}

/// How one test came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// The expected verdict, compact and pretty-printed.
    Pass,
    /// An invalid instance was accepted.
    FalseAccept,
    /// A valid instance was rejected.
    FalseReject,
    /// The schema did not compile (invalid, unresolved reference, limit).
    CompileError,
    /// The schema uses something the compiler does not implement.
    Unsupported,
    /// Compiling or matching panicked: always a bug.
    Panic,
}

impl Outcome {
    /// The outcomes every report lists, in order.
    pub const REPORTED: [Outcome; 5] = [
        Outcome::Pass,
        Outcome::FalseAccept,
        Outcome::FalseReject,
        Outcome::CompileError,
        Outcome::Unsupported,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::FalseAccept => "false_accept",
            Outcome::FalseReject => "false_reject",
            Outcome::CompileError => "compile_error",
            Outcome::Unsupported => "unsupported",
            Outcome::Panic => "panic",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        Some(match s {
            "pass" => Outcome::Pass,
            "false_accept" => Outcome::FalseAccept,
            "false_reject" => Outcome::FalseReject,
            "compile_error" => Outcome::CompileError,
            "unsupported" => Outcome::Unsupported,
            "panic" => Outcome::Panic,
            _ => return None,
        })
    }

    /// A wrong verdict (or a crash): never acceptable.
    pub fn is_false(self) -> bool {
        matches!(
            self,
            Outcome::FalseAccept | Outcome::FalseReject | Outcome::Panic
        )
    }
}

/// One test's result.
#[derive(Debug, Clone)]
pub struct Record {
    /// Unique within its suite: `file / case description / test description` for the
    /// Test-Suite, `split/file #index` for the bench.
    pub id: String,
    /// The part of the suite: `main`, `optional`, `optional/format`, or the bench split.
    pub section: String,
    pub outcome: Outcome,
    /// The compile error or rejection detail.
    pub detail: String,
    /// For unsupported schemas: what is unsupported (`keyword` or `format: reason`).
    pub unsupported: Option<String>,
    /// Whether this record stands for the first test of its schema (for per-schema counts).
    pub first_of_schema: bool,
    /// On the first record of a schema: seconds spent compiling it and judging its tests.
    pub schema_secs: f64,
}

/// The records of one suite.
#[derive(Debug, Default)]
pub struct SuiteRun {
    pub name: String,
    pub records: Vec<Record>,
}

/// Why a suite was not run.
#[derive(Debug)]
pub enum Skip {
    /// Its data is absent (only allowed for data that lives outside the repository).
    Missing(String),
}

pub use schema_compiler::json_text::minify;

/// Pretty-prints with two-space indentation.
pub fn pretty(text: &str) -> String {
    schema_compiler::json_text::pretty(text, 2)
}

/// Feeds `text` and reports whether it is accepted as a complete document.
pub fn accepts(m: &mut Matcher, text: &str) -> Result<(), String> {
    m.reset();
    if let Err(i) = m.push_bytes(text.as_bytes()) {
        let b = text.as_bytes();
        let lo = i.saturating_sub(20);
        return Err(format!(
            "rejected at byte {i}: …{}⟨{}⟩",
            String::from_utf8_lossy(&b[lo..i]),
            String::from_utf8_lossy(&b[i..(i + 1).min(b.len())])
        ));
    }
    if !m.is_accepting() {
        return Err("incomplete at the end".into());
    }
    Ok(())
}

/// All `.json` files directly in `dir`, sorted.
pub fn json_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json"))
        .collect();
    out.sort();
    out
}

/// All `.json` files under `dir`, recursively, sorted.
pub fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(json_files(&p));
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Loads every remote document under `remotes`, keyed by `http://localhost:1234/<path>`.
pub fn remotes(dir: &Path) -> HashMap<String, serde_json::Value> {
    let mut out = HashMap::new();
    for p in json_files(dir) {
        let rel = p
            .strip_prefix(dir)
            .expect("under dir")
            .to_string_lossy()
            .replace('\\', "/");
        if let Ok(text) = std::fs::read_to_string(&p)
            && let Ok(v) = serde_json::from_str(&text)
        {
            out.insert(format!("http://localhost:1234/{rel}"), v);
        }
    }
    out
}

/// Options for a suite file: validation preset, format asserted only in `format` folders.
pub fn options_for(file: &Path, draft: Draft) -> Options {
    let in_format_dir = file.components().any(|c| c.as_os_str() == "format");
    Options::validation()
        .default_draft(draft)
        .format(if in_format_dir {
            FormatMode::Assert
        } else {
            FormatMode::Annotate
        })
}

/// Options for the JSONSchemaBench sample: validation preset, draft 2020-12 when a schema has
/// no `$schema`, `format` asserted (the instances were labelled by validators that check
/// formats: `"date-time": "Invalid Date"` is labelled invalid).
pub fn bench_options() -> Options {
    Options::validation()
        .default_draft(Draft::Draft2020)
        .format(FormatMode::Assert)
}

/// The JSON-Schema-Test-Suite: `$STENCIL_ASSETS/json-schema-test-suite`, else the workspace's
/// `assets/json-schema-test-suite`.
pub fn test_suite_root() -> Result<PathBuf> {
    let assets = std::env::var_os("STENCIL_ASSETS")
        .filter(|v| !v.is_empty())
        .map_or_else(
            || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")),
            PathBuf::from,
        );
    let root = assets.join("json-schema-test-suite");
    if !root.join("tests").is_dir() || !root.join("remotes").is_dir() {
        bail!(
            "the JSON-Schema-Test-Suite is not at {}: run `cargo xtask fetch-assets`",
            root.display()
        );
    }
    Ok(root)
}

/// The JSONSchemaBench sample: `$STENCIL_SHARED_DATA/jsonschemabench-sample`, else
/// `shared/data/jsonschemabench-sample` beside the repository.
pub fn bench_root() -> PathBuf {
    std::env::var_os("STENCIL_SHARED_DATA")
        .filter(|v| !v.is_empty())
        .map_or_else(
            || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data")),
            PathBuf::from,
        )
        .join("jsonschemabench-sample")
}

/// `baselines/<suite>.json` in this crate.
pub fn baseline_path(suite: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("baselines")
        .join(format!("{suite}.json"))
}

fn compile_error_outcome(e: &CompileError) -> (Outcome, Option<String>) {
    match e {
        CompileError::Unsupported {
            keyword, reason, ..
        } => {
            let what = if keyword == "format" {
                format!("format: {reason}")
            } else {
                keyword.clone()
            };
            (Outcome::Unsupported, Some(what))
        }
        _ => (Outcome::CompileError, None),
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Compiles `schema`, turning a panic into an error string.
fn compile_guarded(
    compiler: &Compiler,
    schema: &serde_json::Value,
) -> Result<Result<Arc<Grammar>, CompileError>, String> {
    catch_unwind(AssertUnwindSafe(|| compiler.compile(schema).map(Arc::new)))
        .map_err(|p| panic_message(&*p))
}

/// Judges every test of one schema; `tests` are `(id, data, valid)`.
fn judge_schema(
    compiler: &Compiler,
    schema: &RawValue,
    section: &str,
    tests: Vec<(String, &str, bool)>,
) -> Vec<Record> {
    let started = std::time::Instant::now();
    let rounded = RoundedNumbers::in_text(schema.get());
    let mut with_rounded;
    let compiler = if rounded.is_empty() {
        compiler
    } else {
        with_rounded = compiler.clone();
        with_rounded.rounded_numbers(&rounded)
    };
    let grammar = serde_json::from_str(schema.get())
        .map_err(|e| format!("the schema is not JSON: {e}"))
        .and_then(|schema| compile_guarded(compiler, &schema));
    let mut out = Vec::with_capacity(tests.len());
    for (i, (id, data, valid)) in tests.into_iter().enumerate() {
        let mut r = match &grammar {
            Err(msg) => Record {
                id,
                section: String::new(),
                outcome: Outcome::Panic,
                detail: format!("compile panicked: {msg}"),
                unsupported: None,
                first_of_schema: false,
                schema_secs: 0.0,
            },
            Ok(g) => catch_unwind(AssertUnwindSafe(|| judge(g, data, valid, id.clone())))
                .unwrap_or_else(|p| Record {
                    id,
                    section: String::new(),
                    outcome: Outcome::Panic,
                    detail: format!("matcher panicked: {}", panic_message(&*p)),
                    unsupported: None,
                    first_of_schema: false,
                    schema_secs: 0.0,
                }),
        };
        r.section = section.to_string();
        r.first_of_schema = i == 0;
        out.push(r);
    }
    if let Some(first) = out.first_mut() {
        first.schema_secs = started.elapsed().as_secs_f64();
    }
    out
}

/// Judges one instance against a compiled (or failed) grammar.
pub fn judge(
    grammar: &Result<Arc<Grammar>, CompileError>,
    data: &str,
    valid: bool,
    id: String,
) -> Record {
    let g = match grammar {
        Ok(g) => g.clone(),
        // Refused because no document is valid: a verdict on every instance.
        Err(e) if e.is_unsatisfiable() => {
            let (outcome, detail) = if valid {
                (Outcome::FalseReject, e.to_string())
            } else {
                (Outcome::Pass, String::new())
            };
            return verdict(id, outcome, detail);
        }
        Err(e) => {
            let (outcome, unsupported) = compile_error_outcome(e);
            return Record {
                id,
                section: String::new(),
                outcome,
                detail: e.to_string(),
                unsupported,
                first_of_schema: false,
                schema_secs: 0.0,
            };
        }
    };
    let mut m = Matcher::new(g);
    let compact = minify(data);
    let pretty = pretty(data);
    let mut detail = String::new();
    let mut accepted_all = true;
    let mut rejected_all = true;
    for text in [&compact, &pretty] {
        match accepts(&mut m, text) {
            Ok(()) => rejected_all = false,
            Err(why) => {
                accepted_all = false;
                if detail.is_empty() {
                    detail = why;
                }
            }
        }
    }
    let mut outcome = match (valid, accepted_all, rejected_all) {
        (true, true, _) | (false, _, true) => Outcome::Pass,
        (true, false, _) => Outcome::FalseReject,
        (false, _, false) => Outcome::FalseAccept,
    };
    // Members held to the schema's order: a valid instance whose members are out of it
    // passes when some order of its objects' members is accepted.
    if outcome == Outcome::FalseReject
        && m.grammar().options().property_order == PropertyOrder::Schema
        && in_some_order(&mut m, &compact)
    {
        outcome = Outcome::Pass;
        detail = REORDERED.to_string();
    }
    if outcome == Outcome::FalseAccept {
        detail = format!("accepted: {compact}");
    } else if outcome == Outcome::FalseReject {
        detail = format!("{detail} in {compact}");
    }
    verdict(id, outcome, detail)
}

/// The detail of a valid instance accepted once its members were put in another order.
pub const REORDERED: &str = "accepted with its members in another order";

/// Whether the matcher accepts `data` (compact JSON) with the members of each of its objects
/// in some order: a search over the orders, member by member, within a budget of pushes.
fn in_some_order(m: &mut Matcher, data: &str) -> bool {
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;

    fn value(m: &mut Matcher, raw: &str, budget: &mut u32) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        let at = m.len();
        let ok = match raw.as_bytes().first() {
            Some(b'{') => {
                let Ok(entries) = serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(raw)
                else {
                    return false;
                };
                let entries: Vec<(String, Box<RawValue>)> = entries.into_iter().collect();
                let mut used = vec![false; entries.len()];
                m.push_bytes(b"{").is_ok() && members(m, &entries, &mut used, budget)
            }
            Some(b'[') => {
                let Ok(items) = serde_json::from_str::<Vec<Box<RawValue>>>(raw) else {
                    return false;
                };
                m.push_bytes(b"[").is_ok()
                    && items.iter().enumerate().all(|(i, item)| {
                        (i == 0 || m.push_bytes(b",").is_ok()) && value(m, item.get(), budget)
                    })
                    && m.push_bytes(b"]").is_ok()
            }
            _ => m.push_bytes(raw.as_bytes()).is_ok(),
        };
        if !ok {
            m.pop_bytes(m.len() - at);
        }
        ok
    }

    fn members(
        m: &mut Matcher,
        entries: &[(String, Box<RawValue>)],
        used: &mut [bool],
        budget: &mut u32,
    ) -> bool {
        let first = used.iter().all(|u| !u);
        if used.iter().all(|&u| u) {
            return m.push_bytes(b"}").is_ok();
        }
        let head = |j: usize, first: bool| {
            let key = serde_json::to_string(&entries[j].0).expect("a string");
            format!("{}{key}:", if first { "" } else { "," })
        };
        // Whether the head of member `j` is accepted here (the matcher is left as it was).
        let fits = |m: &mut Matcher, j: usize, first: bool| {
            let at = m.len();
            let ok = m.push_bytes(head(j, first).as_bytes()).is_ok();
            m.pop_bytes(m.len() - at);
            ok
        };
        let now: Vec<bool> = (0..entries.len())
            .map(|j| !used[j] && fits(m, j, first))
            .collect();
        for i in 0..entries.len() {
            if !now[i] || *budget == 0 {
                continue;
            }
            let at = m.len();
            if m.push_bytes(head(i, first).as_bytes()).is_ok()
                && value(m, entries[i].1.get(), budget)
            {
                // A member that closes off another one that could have come here instead (a
                // later key before an earlier one) is not tried further: that prunes most
                // of the orders.
                let closes_off = (0..entries.len()).any(|j| j != i && now[j] && !fits(m, j, false));
                used[i] = true;
                if !closes_off && members(m, entries, used, budget) {
                    return true;
                }
                used[i] = false;
            }
            m.pop_bytes(m.len() - at);
        }
        false
    }

    m.reset();
    let mut budget = 100_000;
    value(m, data, &mut budget) && m.is_accepting()
}

/// The record of a verdict on an instance.
fn verdict(id: String, outcome: Outcome, detail: String) -> Record {
    Record {
        id,
        section: String::new(),
        outcome,
        detail,
        unsupported: None,
        first_of_schema: false,
        schema_secs: 0.0,
    }
}

/// Runs `f` over `jobs` on all cores, keeping the jobs' order in the output.
fn parallel_map<J: Sync, R: Send>(jobs: &[J], f: impl Fn(&J) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let mut parts: Vec<Vec<(usize, R)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.push((i, f(job)));
                    }
                    done
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker threads catch panics"))
            .collect()
    });
    let mut all: Vec<(usize, R)> = parts.iter_mut().flat_map(std::mem::take).collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}

/// Makes ids unique by appending ` (2)`, ` (3)`, … to repeats, in order.
fn dedup_ids(records: &mut [Record]) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in records {
        let n = seen.entry(r.id.clone()).or_default();
        *n += 1;
        if *n > 1 {
            r.id = format!("{} ({n})", r.id);
        }
    }
}

/// The Test-Suite files of a draft folder that are run, with their section.
pub fn test_suite_files(root: &Path, dir: &str) -> Result<Vec<(PathBuf, &'static str)>> {
    let base = root.join("tests").join(dir);
    let mut files: Vec<(PathBuf, &'static str)> = json_files_in(&base)
        .into_iter()
        .map(|p| (p, "main"))
        .collect();
    if files.is_empty() {
        bail!("no test files in {}", base.display());
    }
    for p in json_files_in(&base.join("optional")) {
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if OPTIONAL_RUN.iter().any(|(n, _)| *n == stem) {
            files.push((p, "optional"));
        } else if !OPTIONAL_SKIPPED.iter().any(|(n, _)| *n == stem) {
            bail!(
                "{}: neither run nor skipped; list it in OPTIONAL_RUN or OPTIONAL_SKIPPED \
                 (tests/support/suite.rs)",
                p.display()
            );
        }
    }
    files.extend(
        json_files_in(&base.join("optional").join("format"))
            .into_iter()
            .map(|p| (p, "optional/format")),
    );
    Ok(files)
}

/// Runs one Test-Suite file (an array of cases).
pub fn run_file(
    file: &Path,
    base: &Path,
    section: &str,
    draft: Draft,
    remotes: &HashMap<String, serde_json::Value>,
    order: PropertyOrder,
) -> Result<Vec<Record>> {
    let rel = file
        .strip_prefix(base)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/");
    let rel = rel.trim_end_matches(".json").to_string();
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let cases: Vec<Case> =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    let mut compiler = Compiler::new(options_for(file, draft).property_order(order));
    for (k, v) in remotes {
        compiler.add_document(k, v.clone());
    }
    let mut out = Vec::new();
    for case in &cases {
        let tests = case
            .tests
            .iter()
            .map(|t| {
                (
                    format!("{rel} / {} / {}", case.description, t.description),
                    t.data.get(),
                    t.valid,
                )
            })
            .collect();
        out.extend(judge_schema(&compiler, &case.schema, section, tests));
    }
    Ok(out)
}

/// Runs one MaskBench-form file (one schema and its tests).
fn run_bench_file(file: &Path, root: &Path, order: PropertyOrder) -> Result<Vec<Record>> {
    let rel = file
        .strip_prefix(root)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/");
    let rel = rel.trim_end_matches(".json").to_string();
    let section = rel.split('/').next().unwrap_or_default().to_string();
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let case: Case =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    let compiler = Compiler::new(bench_options().property_order(order));
    let tests = case
        .tests
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("{rel} #{i}"), t.data.get(), t.valid))
        .collect();
    Ok(judge_schema(&compiler, &case.schema, &section, tests))
}

/// Runs one suite. `Err(Skip)` only for the bench when its data is absent; other missing data
/// is an error.
pub fn run_suite(def: &SuiteDef) -> Result<std::result::Result<SuiteRun, Skip>> {
    run_suite_in(def, PropertyOrder::Any)
}

/// [`run_suite`] with object members held to `order`.
pub fn run_suite_in(
    def: &SuiteDef,
    order: PropertyOrder,
) -> Result<std::result::Result<SuiteRun, Skip>> {
    let mut records = Vec::new();
    match def.source {
        Source::TestSuite { dir, draft } => {
            let root = test_suite_root()?;
            let remotes = remotes(&root.join("remotes"));
            let base = root.join("tests").join(dir);
            let files = test_suite_files(&root, dir)?;
            for r in parallel_map(&files, |(f, section)| {
                run_file(f, &base, section, draft, &remotes, order)
            }) {
                records.extend(r?);
            }
        }
        Source::Bench => {
            let root = bench_root();
            if !root.is_dir() {
                return Ok(Err(Skip::Missing(format!(
                    "the JSONSchemaBench sample is not at {} (it lives beside the repository, \
                     in shared/data; set STENCIL_SHARED_DATA to its parent folder)",
                    root.display()
                ))));
            }
            let mut files = Vec::new();
            for split in std::fs::read_dir(&root)
                .with_context(|| format!("reading {}", root.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
            {
                files.extend(json_files_in(&split));
            }
            files.sort();
            if files.is_empty() {
                bail!("no MaskBench files under {}", root.display());
            }
            for r in parallel_map(&files, |f| run_bench_file(f, &root, order)) {
                records.extend(r?);
            }
        }
    }
    dedup_ids(&mut records);
    Ok(Ok(SuiteRun {
        name: def.name.to_string(),
        records,
    }))
}

/// Totals per outcome; `panic` only when there is one.
pub fn totals(records: &[Record]) -> BTreeMap<&'static str, usize> {
    let mut t: BTreeMap<&'static str, usize> = BTreeMap::new();
    for o in Outcome::REPORTED {
        t.insert(o.name(), 0);
    }
    for r in records {
        *t.entry(r.outcome.name()).or_default() += 1;
    }
    t.insert("total", records.len());
    t
}

/// Per unsupported feature: (schemas, tests).
pub fn unsupported_counts(records: &[Record]) -> BTreeMap<String, (usize, usize)> {
    let mut out: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for r in records {
        if let Some(what) = &r.unsupported {
            let e = out.entry(what.clone()).or_default();
            e.1 += 1;
            if r.first_of_schema {
                e.0 += 1;
            }
        }
    }
    out
}

/// The table of one suite: one row per section and a total.
pub fn table(run: &SuiteRun) -> String {
    let mut sections: Vec<&str> = Vec::new();
    for r in &run.records {
        if !sections.contains(&r.section.as_str()) {
            sections.push(&r.section);
        }
    }
    let cols = [
        "pass",
        "false_accept",
        "false_reject",
        "compile_error",
        "unsupported",
        "total",
    ];
    let mut s = String::new();
    let _ = write!(s, "{:<20}", run.name);
    for c in cols {
        let _ = write!(s, " {c:>13}");
    }
    s.push('\n');
    let mut row = |label: &str, recs: Vec<&Record>| {
        let owned: Vec<Record> = recs.into_iter().cloned().collect();
        let t = totals(&owned);
        let _ = write!(s, "{label:<20}");
        for c in cols {
            let _ = write!(s, " {:>13}", t.get(c).copied().unwrap_or(0));
        }
        if let Some(p) = t.get("panic") {
            let _ = write!(s, "  panic: {p}");
        }
        s.push('\n');
    };
    if sections.len() > 1 {
        for sec in &sections {
            row(
                &format!("  {sec}"),
                run.records.iter().filter(|r| r.section == *sec).collect(),
            );
        }
    }
    row("  all", run.records.iter().collect());
    s
}

/// A baseline: case id to outcome (with the reason for unsupported and compile errors).
pub type Baseline = BTreeMap<String, (Outcome, String)>;

/// The baseline text of a run: a JSON object, keys sorted, one entry per line. Values are the
/// outcome name, followed by `: <reason>` for schemas that did not compile.
pub fn baseline_text(run: &SuiteRun) -> String {
    let map: BTreeMap<&str, String> = run
        .records
        .iter()
        .map(|r| {
            let v = match r.outcome {
                Outcome::CompileError | Outcome::Unsupported | Outcome::Panic => {
                    format!("{}: {}", r.outcome.name(), r.detail)
                }
                o => o.name().to_string(),
            };
            (r.id.as_str(), v)
        })
        .collect();
    let mut s = String::from("{\n");
    let n = map.len();
    for (i, (k, v)) in map.into_iter().enumerate() {
        let k = serde_json::to_string(k).expect("strings serialize");
        let v = serde_json::to_string(&v).expect("strings serialize");
        let comma = if i + 1 < n { "," } else { "" };
        let _ = writeln!(s, "  {k}: {v}{comma}");
    }
    s.push_str("}\n");
    s
}

/// Reads a baseline file.
pub fn load_baseline(path: &Path) -> Result<Baseline> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the baseline {}; {UPDATE_HINT}", path.display()))?;
    let map: BTreeMap<String, String> =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    map.into_iter()
        .map(|(k, v)| {
            let (name, reason) = v.split_once(": ").unwrap_or((v.as_str(), ""));
            let o = Outcome::parse(name)
                .with_context(|| format!("{}: unknown outcome `{v}` for {k}", path.display()))?;
            Ok((k, (o, reason.to_string())))
        })
        .collect()
}

/// Writes a run's baseline; returns the path.
pub fn write_baseline(run: &SuiteRun) -> Result<PathBuf> {
    let path = baseline_path(&run.name);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&path, baseline_text(run))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// How a run differs from its baseline.
#[derive(Debug, Default)]
pub struct Diff {
    /// Cases that got worse, appeared with a false verdict, or disappeared.
    pub regressions: Vec<String>,
    /// Cases that got better, changed between non-passing outcomes, or are new.
    pub improvements: Vec<String>,
    /// Cases whose outcome is unchanged but whose recorded reason differs.
    pub reasons_changed: usize,
}

impl Diff {
    pub fn is_clean(&self) -> bool {
        self.regressions.is_empty() && self.improvements.is_empty()
    }
}

/// Compares a run with its baseline.
pub fn compare(run: &SuiteRun, baseline: &Baseline) -> Diff {
    let mut d = Diff::default();
    let mut seen = std::collections::HashSet::new();
    for r in &run.records {
        seen.insert(r.id.as_str());
        let now = r.outcome;
        match baseline.get(&r.id) {
            Some((was, reason)) if *was == now => {
                if matches!(now, Outcome::CompileError | Outcome::Unsupported)
                    && *reason != r.detail
                {
                    d.reasons_changed += 1;
                }
            }
            Some((was, _)) => {
                let line = format!("{}: {} -> {} ({})", r.id, was.name(), now.name(), r.detail);
                if *was == Outcome::Pass || now.is_false() {
                    d.regressions.push(line);
                } else {
                    d.improvements.push(line);
                }
            }
            None => {
                let line = format!("{}: new case, {} ({})", r.id, now.name(), r.detail);
                if now.is_false() {
                    d.regressions.push(line);
                } else {
                    d.improvements.push(line);
                }
            }
        }
    }
    for (id, (was, _)) in baseline {
        if !seen.contains(id.as_str()) {
            d.regressions
                .push(format!("{id}: disappeared (was {})", was.name()));
        }
    }
    d
}

/// The JSON summary of several runs: `{"<suite>": {"pass": n, …, "total": n}, …}`.
pub fn summary_json(runs: &[SuiteRun]) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    for run in runs {
        let t = totals(&run.records);
        let obj: serde_json::Map<String, serde_json::Value> = Outcome::REPORTED
            .iter()
            .map(|o| o.name())
            .chain(t.contains_key("panic").then_some("panic"))
            .chain(["total"])
            .map(|k| (k.to_string(), serde_json::Value::from(t[k])))
            .collect();
        out.insert(run.name.clone(), serde_json::Value::Object(obj));
    }
    serde_json::Value::Object(out)
}
