//! A runner for the official JSON-Schema-Test-Suite and MaskBench-form files.
//!
//! Every test instance is fed to a [`Matcher`] byte by byte twice, compact and pretty-printed
//! with two-space indentation (number and string text kept exactly as written in the file), and
//! the verdict is compared with the file's `valid`.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schema_compiler::{CompileError, Compiler, Draft, FormatMode, Grammar, Matcher, Options};
use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Case {
    description: String,
    schema: serde_json::Value,
    tests: Vec<Test>,
}

#[derive(Deserialize)]
struct Test {
    description: String,
    data: Box<RawValue>,
    valid: bool,
}

/// How one test came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Pass,
    FalseAccept,
    FalseReject,
    CompileError,
    Unsupported,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::FalseAccept => "false_accept",
            Outcome::FalseReject => "false_reject",
            Outcome::CompileError => "compile_error",
            Outcome::Unsupported => "unsupported",
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        Some(match s {
            "pass" => Outcome::Pass,
            "false_accept" => Outcome::FalseAccept,
            "false_reject" => Outcome::FalseReject,
            "compile_error" => Outcome::CompileError,
            "unsupported" => Outcome::Unsupported,
            _ => return None,
        })
    }
}

/// One test's result.
#[derive(Debug, Clone)]
pub struct Record {
    /// `file / case description / test description`.
    pub id: String,
    pub outcome: Outcome,
    /// The compile error or rejection detail.
    pub detail: String,
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

/// All `.json` files under `dir`, sorted.
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

fn compile_error_outcome(e: &CompileError) -> Outcome {
    if e.is_unsupported() {
        Outcome::Unsupported
    } else {
        Outcome::CompileError
    }
}

/// Runs one Test-Suite file (an array of cases).
pub fn run_file(
    file: &Path,
    root: &Path,
    draft: Draft,
    remotes: &HashMap<String, serde_json::Value>,
) -> Vec<Record> {
    let rel = file
        .strip_prefix(root)
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/");
    let rel = rel.trim_end_matches(".json").to_string();
    let text = std::fs::read_to_string(file).expect("readable suite file");
    let cases: Vec<Case> = serde_json::from_str(&text).expect("suite file parses");
    let opts = options_for(file, draft);
    let mut out = Vec::new();
    for case in cases {
        let mut compiler = Compiler::new(opts.clone());
        for (k, v) in remotes {
            compiler.add_document(k, v.clone());
        }
        let grammar = compiler.compile(&case.schema).map(Arc::new);
        for t in &case.tests {
            let id = format!("{rel} / {} / {}", case.description, t.description);
            out.push(judge(&grammar, t.data.get(), t.valid, id));
        }
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
        Err(e) => {
            return Record {
                id,
                outcome: compile_error_outcome(e),
                detail: e.to_string(),
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
    let outcome = match (valid, accepted_all, rejected_all) {
        (true, true, _) | (false, _, true) => Outcome::Pass,
        (true, false, _) => Outcome::FalseReject,
        (false, _, false) => Outcome::FalseAccept,
    };
    if outcome == Outcome::FalseAccept {
        detail = format!("accepted: {compact}");
    }
    Record {
        id,
        outcome,
        detail,
    }
}

/// Totals per outcome.
pub fn totals(records: &[Record]) -> BTreeMap<&'static str, usize> {
    let mut t: BTreeMap<&'static str, usize> = BTreeMap::new();
    for o in [
        Outcome::Pass,
        Outcome::FalseAccept,
        Outcome::FalseReject,
        Outcome::CompileError,
        Outcome::Unsupported,
    ] {
        t.insert(o.name(), 0);
    }
    for r in records {
        *t.entry(r.outcome.name()).or_default() += 1;
    }
    t.insert("total", records.len());
    t
}
