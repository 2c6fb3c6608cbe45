//! Schemas with test instances, from MaskBench-form or JSON-Schema-Test-Suite files, and
//! percentiles of what replaying them measures.
//!
//! This is tooling around the compiler rather than part of it: `stencil maskbench`, the
//! benchmarks and the mask kernel's tests replay a corpus of schemas with valid and invalid
//! instances (the JSON-Schema-Test-Suite, the JSONSchemaBench sample in MaskBench form), and
//! [`load`] reads it. The instances are kept as compact JSON text with their number spellings
//! ([`crate::json_text::minify`]), so a replay feeds exactly the bytes a model would write.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::json_text::RoundedNumbers;

/// Why [`load`] failed: a path that could not be read. (A file that is not in either form is
/// not an error; see [`Corpus::skipped`].)
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// A file or directory could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A path given to [`load`] is neither a file nor a directory.
    #[error("{} is neither a file nor a directory", path.display())]
    NotFound {
        /// The path.
        path: PathBuf,
    },
}

type Result<T> = std::result::Result<T, CorpusError>;

fn read_error(path: &Path) -> impl FnOnce(std::io::Error) -> CorpusError + '_ {
    |source| CorpusError::Read {
        path: path.to_path_buf(),
        source,
    }
}

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
    /// The values its number literals were rounded to when read (give them to
    /// [`crate::Compiler::rounded_numbers`]).
    pub rounded: RoundedNumbers,
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
    schema: Box<RawValue>,
    tests: Vec<RawTest>,
}

fn collect(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if path.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_error(path))?
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
        return Err(CorpusError::NotFound {
            path: path.to_path_buf(),
        });
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
/// # Errors
///
/// When a path cannot be read, or is neither a file nor a directory.
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
        let text = std::fs::read_to_string(&f).map_err(read_error(&f))?;
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
            let schema = match serde_json::from_str(c.schema.get()) {
                Ok(schema) => schema,
                Err(e) => {
                    corpus.skipped.push(Skipped {
                        file: name.clone(),
                        reason: e.to_string(),
                    });
                    continue;
                }
            };
            corpus.cases.push(Case {
                file: if many {
                    format!("{name}#{i}")
                } else {
                    name.clone()
                },
                schema,
                rounded: RoundedNumbers::in_text(c.schema.get()),
                tests: c
                    .tests
                    .into_iter()
                    .map(|t| Instance {
                        text: crate::json_text::minify(t.data.get()),
                        valid: t.valid,
                    })
                    .collect(),
            });
        }
    }
    Ok(corpus)
}

/// Summary of a sample of durations (in whatever unit they were recorded).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Summary {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sample size.
    pub count: usize,
}

impl Summary {
    /// Summarizes `values` (sorted in place). Nearest-rank percentiles; all zero when empty.
    pub fn of(values: &mut [f64]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let q = |p: f64| {
            let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
            values[rank - 1]
        };
        Summary {
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: values[n - 1],
            mean: values.iter().sum::<f64>() / n as f64,
            count: n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Summary;

    #[test]
    fn nearest_rank() {
        let mut v: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        let s = Summary::of(&mut v);
        assert_eq!(
            (s.p50, s.p90, s.p99, s.p999, s.max),
            (500.0, 900.0, 990.0, 999.0, 1000.0)
        );
        assert_eq!(s.mean, 500.5);
        assert_eq!(Summary::of(&mut []), Summary::default());
    }
}
