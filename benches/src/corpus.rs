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

/// Loads every case from the given files and directories (recursively, `.json` files).
///
/// A file holding an object with `schema` and `tests` is one case (MaskBench form); a file
/// holding an array of such objects is a Test-Suite file with one case per element. Other
/// JSON files (for example a manifest) are skipped.
pub fn load(paths: &[PathBuf]) -> Result<Vec<Case>> {
    let mut files = Vec::new();
    for p in paths {
        collect(p, &mut files)?;
    }
    let mut cases = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
        let name = f.display().to_string();
        let trimmed = text.trim_start();
        let raw: Vec<RawCase> = if trimmed.starts_with('[') {
            match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(_) => continue,
            }
        } else {
            match serde_json::from_str::<RawCase>(&text) {
                Ok(c) => vec![c],
                Err(_) => continue,
            }
        };
        let many = raw.len() > 1 || trimmed.starts_with('[');
        for (i, c) in raw.into_iter().enumerate() {
            cases.push(Case {
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
    Ok(cases)
}
