//! Schemas with test instances, from MaskBench-form or JSON-Schema-Test-Suite files.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::value::RawValue;

/// One instance to feed: its compact JSON text (number spellings kept) and whether it is valid.
#[derive(Debug, Clone)]
pub struct Instance {
    /// Compact JSON text.
    pub text: String,
    /// Whether the schema accepts it.
    pub valid: bool,
}

/// One schema with its instances.
#[derive(Debug, Clone)]
pub struct Case {
    /// File it came from (plus `#n` for the n-th case of a Test-Suite file).
    pub file: String,
    /// The schema.
    pub schema: serde_json::Value,
    /// The instances.
    pub tests: Vec<Instance>,
}

#[derive(Deserialize)]
struct RawTest {
    data: Box<RawValue>,
    valid: bool,
}

#[derive(Deserialize)]
struct RawCase {
    schema: serde_json::Value,
    tests: Vec<RawTest>,
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for e in entries {
            if e.is_dir() || e.extension().is_some_and(|x| x == "json") {
                collect(&e, out)?;
            }
        }
    } else if path.is_file() {
        out.push(path.to_path_buf());
    } else {
        bail!("{} is neither a file nor a directory", path.display());
    }
    Ok(())
}

/// A file that held no case, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// The file.
    pub file: String,
    /// Why it was not read as cases (the parser's message).
    pub reason: String,
}

/// What [`load`] found: the cases, and the files it could not read as cases.
#[derive(Debug, Clone, Default)]
pub struct Corpus {
    /// Every case, in file order.
    pub cases: Vec<Case>,
    /// Files that are not in either form (not JSON, or JSON of another shape, such as a
    /// manifest), so a caller can report and count them.
    pub skipped: Vec<Skipped>,
}

/// Loads every case from the given files and directories (recursively, `.json` files).
///
/// A file holding an object with `schema` and `tests` is one case (MaskBench form); a file
/// holding an array of such objects is a Test-Suite file with one case per element. Any other
/// file (not JSON, or JSON of another shape, for example a manifest) is listed in
/// [`Corpus::skipped`] with the reason.
pub fn load(paths: &[PathBuf]) -> Result<Corpus> {
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files)?;
    }
    let mut corpus = Corpus::default();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let name = f.display().to_string();
        let trimmed = text.trim_start();
        let parsed = if trimmed.starts_with('[') {
            serde_json::from_str::<Vec<RawCase>>(&text)
        } else {
            serde_json::from_str::<RawCase>(&text).map(|c| vec![c])
        };
        let raw = match parsed {
            Ok(raw) => raw,
            Err(e) => {
                corpus.skipped.push(Skipped {
                    file: name,
                    reason: e.to_string(),
                });
                continue;
            }
        };
        let many = raw.len() > 1 || trimmed.starts_with('[');
        for (i, c) in raw.into_iter().enumerate() {
            corpus.cases.push(Case {
                file: if many {
                    format!("{name}#{i}")
                } else {
                    name.clone()
                },
                schema: c.schema,
                tests: c
                    .tests
                    .into_iter()
                    .map(|t| Instance {
                        text: schema_compiler::json_text::minify(t.data.get()),
                        valid: t.valid,
                    })
                    .collect(),
            });
        }
    }
    Ok(corpus)
}
