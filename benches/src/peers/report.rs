//! Counts and percentiles per engine, the printed table and the JSON summary.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::run::{Compile, EngineRun};
use super::svg;
use schema_compiler::corpus::Summary;

/// Counts and timing percentiles of one engine over a set of schemas.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figures {
    /// Schemas considered.
    pub schemas: usize,
    /// Schemas compiled.
    pub compiled: usize,
    /// Schemas not compiled (timeouts included).
    pub compile_errors: usize,
    /// Of the compile errors, those that hit the time or memory limit.
    pub timeouts: usize,
    /// Instances replayed to the end with every token allowed and end of sequence allowed.
    pub accepted: usize,
    /// Instances rejected (a valid instance: the engine is wrong or too strict).
    pub rejected: usize,
    /// Masks computed.
    pub masks: usize,
    /// Mask times, in microseconds.
    pub mask_us: Summary,
    /// Compile times of the compiled schemas, in milliseconds.
    pub compile_ms: Summary,
}

impl Figures {
    /// The figures of `run` over the schemas whose index `keep` accepts.
    pub fn of(run: &EngineRun, keep: impl Fn(usize) -> bool) -> Figures {
        let mut f = Figures::default();
        let mut masks = Vec::new();
        let mut compile = Vec::new();
        for (_, s) in run.schemas.iter().enumerate().filter(|(i, _)| keep(*i)) {
            f.schemas += 1;
            match &s.compile {
                Compile::Compiled { ms } => {
                    f.compiled += 1;
                    compile.push(*ms);
                }
                Compile::Error { .. } => f.compile_errors += 1,
                Compile::Timeout { .. } => {
                    f.compile_errors += 1;
                    f.timeouts += 1;
                }
            }
            for inst in &s.instances {
                if inst.accepted {
                    f.accepted += 1;
                } else {
                    f.rejected += 1;
                }
                masks.extend_from_slice(&inst.mask_us);
            }
        }
        f.masks = masks.len();
        f.mask_us = Summary::of(&mut masks);
        f.compile_ms = Summary::of(&mut compile);
        f
    }

    fn to_json(&self) -> Value {
        let m = &self.mask_us;
        let c = &self.compile_ms;
        json!({
            "schemas": self.schemas,
            "compiled": self.compiled,
            "compile_errors": self.compile_errors,
            "timeouts": self.timeouts,
            "instances_accepted": self.accepted,
            "instances_rejected": self.rejected,
            "masks": self.masks,
            "mask_us": {"p50": m.p50, "p90": m.p90, "p99": m.p99, "p999": m.p999, "max": m.max, "mean": m.mean},
            "compile_ms": {"p50": c.p50, "p99": c.p99, "max": c.max},
        })
    }

    /// The timing figures in table order: mask p50, p90, p99, p99.9, max, mean; compile p50,
    /// p99, max.
    fn timings(&self) -> [f64; 9] {
        let m = &self.mask_us;
        let c = &self.compile_ms;
        [
            m.p50, m.p90, m.p99, m.p999, m.max, m.mean, c.p50, c.p99, c.max,
        ]
    }
}

/// The runs of several engines over the same corpus and tokenizer.
#[derive(Debug, Clone)]
pub struct Report {
    /// The tokenizer (name or path).
    pub tokenizer: String,
    /// The corpus (path).
    pub corpus: String,
    /// The schema files, in corpus order (every run has one outcome per file).
    pub files: Vec<String>,
    /// Valid instances per schema.
    pub instances: usize,
    /// Tokens over all valid instances.
    pub tokens: usize,
    /// One run per engine, in the order they ran.
    pub runs: Vec<EngineRun>,
}

/// The pairs whose ratios are printed, when both engines ran.
const RATIOS: &[(&str, &str)] = &[("stencil", "llguidance"), ("stencil-nocache", "llguidance")];

impl Report {
    /// For each schema, whether every engine compiled it.
    pub fn common(&self) -> Vec<bool> {
        (0..self.files.len())
            .map(|i| {
                self.runs
                    .iter()
                    .all(|r| r.schemas.get(i).is_some_and(|s| s.compile.is_compiled()))
            })
            .collect()
    }

    /// Each engine's figures over every schema.
    pub fn figures(&self) -> Vec<(&str, Figures)> {
        self.runs
            .iter()
            .map(|r| (r.name.as_str(), Figures::of(r, |_| true)))
            .collect()
    }

    /// Each engine's figures over the schemas every engine compiled.
    pub fn common_figures(&self) -> Vec<(&str, Figures)> {
        let common = self.common();
        self.runs
            .iter()
            .map(|r| (r.name.as_str(), Figures::of(r, |i| common[i])))
            .collect()
    }

    /// Every rejected instance: (engine, schema file, instance index, reason).
    pub fn rejections(&self) -> Vec<(&str, &str, usize, &str)> {
        let mut out = Vec::new();
        for r in &self.runs {
            for (file, s) in self.files.iter().zip(&r.schemas) {
                for (k, inst) in s.instances.iter().enumerate() {
                    if !inst.accepted {
                        out.push((
                            r.name.as_str(),
                            file.as_str(),
                            k,
                            inst.reason.as_deref().unwrap_or("rejected"),
                        ));
                    }
                }
            }
        }
        out
    }

    /// The tables: all schemas, then the common subset, each with its ratio rows.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let n_common = self.common().iter().filter(|&&c| c).count();
        let _ = writeln!(
            s,
            "tokenizer {}, corpus {}: {} schemas, {} valid instances, {} tokens",
            self.tokenizer,
            self.corpus,
            self.files.len(),
            self.instances,
            self.tokens
        );
        let _ = writeln!(s, "\nall schemas");
        table_into(&mut s, &self.figures());
        let _ = writeln!(
            s,
            "\ncommon subset: the {n_common} schemas every engine above compiled (masks of those schemas only)"
        );
        table_into(&mut s, &self.common_figures());
        s
    }

    /// The JSON summary: tokenizer, corpus, and per engine its counts and percentiles (over all
    /// schemas, and under `common` over the schemas every engine compiled), plus the ratios and
    /// every rejected instance.
    pub fn to_json(&self) -> Value {
        let all = self.figures();
        let common = self.common_figures();
        let mut engines = serde_json::Map::new();
        for ((name, f), (_, c)) in all.iter().zip(&common) {
            let mut v = f.to_json();
            v["common"] = c.to_json();
            engines.insert((*name).to_owned(), v);
        }
        let mut ratios = serde_json::Map::new();
        for (label, figs) in [("all", &all), ("common", &common)] {
            for (a, b, r) in ratio_rows(figs) {
                let keys = [
                    "mask_p50",
                    "mask_p90",
                    "mask_p99",
                    "mask_p999",
                    "mask_max",
                    "mask_mean",
                    "compile_p50",
                    "compile_p99",
                    "compile_max",
                ];
                let obj: serde_json::Map<String, Value> = keys
                    .iter()
                    .zip(r)
                    .map(|(k, v)| ((*k).to_owned(), json!(v)))
                    .collect();
                ratios
                    .entry(format!("{a}/{b}"))
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
                    .map(|m| m.insert(label.to_owned(), Value::Object(obj)));
            }
        }
        let rejections: Vec<Value> = self
            .rejections()
            .into_iter()
            .map(|(e, f, k, r)| json!({"engine": e, "file": f, "instance": k, "reason": r}))
            .collect();
        json!({
            "tokenizer": self.tokenizer,
            "corpus": self.corpus,
            "schemas": self.files.len(),
            "valid_instances": self.instances,
            "tokens": self.tokens,
            "common_schemas": self.common().iter().filter(|&&c| c).count(),
            "engines": engines,
            "ratios": ratios,
            "rejections": rejections,
        })
    }

    /// An SVG chart of each engine's mask-time distribution (cumulative, log time axis).
    pub fn svg(&self) -> String {
        let series: Vec<(&str, Vec<f64>)> = self
            .runs
            .iter()
            .map(|r| {
                let v: Vec<f64> = r
                    .schemas
                    .iter()
                    .flat_map(|s| s.instances.iter().flat_map(|i| i.mask_us.iter().copied()))
                    .collect();
                (r.name.as_str(), v)
            })
            .collect();
        let title = format!(
            "Mask time per token, {} tokenizer, {} schemas ({} tokens)",
            self.tokenizer,
            self.files.len(),
            self.tokens
        );
        svg::cdf_chart(&title, &series)
    }
}

/// `(a, b, a/b for each timing figure)` for the pairs of [`RATIOS`] present in `figs`.
fn ratio_rows<'a>(figs: &[(&'a str, Figures)]) -> Vec<(&'a str, &'a str, [f64; 9])> {
    let find = |n: &str| figs.iter().find(|(m, _)| *m == n);
    RATIOS
        .iter()
        .filter_map(|(a, b)| {
            let (na, fa) = find(a)?;
            let (nb, fb) = find(b)?;
            let (ta, tb) = (fa.timings(), fb.timings());
            Some((*na, *nb, std::array::from_fn(|i| ta[i] / tb[i])))
        })
        .collect()
}

/// A number in at most 7 characters with 3 significant digits or so.
fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".to_owned()
    } else if v >= 1e5 {
        format!("{v:.2e}")
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Column headers and widths of the tables.
const COLUMNS: &[(&str, usize)] = &[
    ("engine", 34),
    ("schemas", 8),
    ("compiled", 9),
    ("errors", 7),
    ("timeouts", 9),
    ("accepted", 9),
    ("rejected", 9),
    ("masks", 9),
    ("| mask µs p50", 14),
    ("p90", 8),
    ("p99", 8),
    ("p99.9", 8),
    ("max", 8),
    ("mean", 8),
    ("| compile ms p50", 17),
    ("p99", 8),
    ("max", 8),
];

fn row_into(s: &mut String, cells: &[String]) {
    for (i, (cell, (_, w))) in cells.iter().zip(COLUMNS).enumerate() {
        if i == 0 {
            let _ = write!(s, "{cell:<w$}");
        } else {
            let _ = write!(s, "{cell:>w$}");
        }
    }
    s.push('\n');
}

fn table_into(s: &mut String, figs: &[(&str, Figures)]) {
    let header: Vec<String> = COLUMNS.iter().map(|(h, _)| (*h).to_owned()).collect();
    row_into(s, &header);
    for (name, f) in figs {
        let mut cells: Vec<String> = vec![(*name).to_owned()];
        cells.extend(
            [
                f.schemas,
                f.compiled,
                f.compile_errors,
                f.timeouts,
                f.accepted,
                f.rejected,
                f.masks,
            ]
            .map(|n| n.to_string()),
        );
        cells.extend(f.timings().map(num));
        row_into(s, &cells);
    }
    for (a, b, r) in ratio_rows(figs) {
        let mut cells: Vec<String> = vec![format!("ratio {a}/{b}")];
        cells.extend(std::iter::repeat_n(String::new(), 7));
        cells.extend(r.map(num));
        row_into(s, &cells);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::{InstanceOutcome, SchemaOutcome};

    fn inst(accepted: bool, us: &[f64]) -> InstanceOutcome {
        InstanceOutcome {
            accepted,
            reason: (!accepted).then(|| "token 1 not in the mask".to_owned()),
            mask_us: us.to_vec(),
        }
    }

    fn ok(ms: f64, instances: Vec<InstanceOutcome>) -> SchemaOutcome {
        SchemaOutcome {
            compile: Compile::Compiled { ms },
            instances,
        }
    }

    /// Two engines, three schemas: `a` fails the third, `b` times out on the second.
    fn report() -> Report {
        let a = EngineRun {
            name: "stencil".into(),
            schemas: vec![
                ok(1.0, vec![inst(true, &[1.0, 2.0])]),
                ok(2.0, vec![inst(true, &[3.0])]),
                SchemaOutcome::failed(Compile::Error {
                    message: "unsupported".into(),
                }),
            ],
        };
        let b = EngineRun {
            name: "llguidance".into(),
            schemas: vec![
                ok(10.0, vec![inst(true, &[10.0, 20.0])]),
                SchemaOutcome::failed(Compile::Timeout {
                    message: "20 s".into(),
                }),
                ok(30.0, vec![inst(false, &[40.0, 50.0])]),
            ],
        };
        Report {
            tokenizer: "t".into(),
            corpus: "c".into(),
            files: vec!["x.json".into(), "y.json".into(), "z.json".into()],
            instances: 3,
            tokens: 5,
            runs: vec![a, b],
        }
    }

    #[test]
    fn counts_and_common_subset() {
        let r = report();
        assert_eq!(r.common(), [true, false, false]);
        let all = r.figures();
        assert_eq!(
            (all[0].1.compiled, all[0].1.compile_errors, all[0].1.masks),
            (2, 1, 3)
        );
        assert_eq!(
            (
                all[1].1.compile_errors,
                all[1].1.timeouts,
                all[1].1.rejected
            ),
            (1, 1, 1)
        );
        let common = r.common_figures();
        assert_eq!(common[0].1.masks, 2);
        assert_eq!(common[1].1.mask_us.max, 20.0);
        assert_eq!(common[1].1.compile_ms.max, 10.0);
        assert_eq!(
            r.rejections(),
            [("llguidance", "z.json", 0, "token 1 not in the mask")]
        );
    }

    #[test]
    fn ratios_are_stencil_over_llguidance() {
        let r = report();
        let j = r.to_json();
        assert_eq!(
            j["ratios"]["stencil/llguidance"]["common"]["mask_max"],
            json!(0.1)
        );
        assert_eq!(j["engines"]["stencil"]["compiled"], json!(2));
        assert_eq!(j["engines"]["llguidance"]["common"]["masks"], json!(2));
        assert_eq!(j["engines"]["llguidance"]["mask_us"]["p50"], json!(20.0));
        let t = r.table();
        assert!(t.contains("ratio stencil/llguidance"), "{t}");
        assert_eq!(t.matches("ratio ").count(), 2, "{t}");
    }

    #[test]
    fn numbers_stay_short() {
        assert_eq!(num(0.01234), "0.012");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1234.5), "1234");
        assert_eq!(num(f64::NAN), "-");
        assert!(num(123456789.0).len() <= 8);
    }
}
