//! The engine trait and the timed replay of one schema's instances.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an engine must answer to be replayed.
///
/// Token ids are plain `u32`s from the shared tokenizer. The runner times [`Engine::compile`]
/// and [`Engine::mask`] only; the mask is kept by the engine (in its `Run`) and queried with
/// [`Engine::allows`] and [`Engine::allows_eos`] outside the timer.
pub trait Engine {
    /// A compiled schema, plus whatever per-schema state its instances share (a mask cache).
    type Grammar;
    /// One instance being replayed, holding the last mask.
    type Run;

    /// Compiles a schema (timed).
    fn compile(&mut self, schema: &Value) -> Result<Self::Grammar>;
    /// Starts an instance (not timed).
    fn start(&mut self, grammar: &mut Self::Grammar) -> Result<Self::Run>;
    /// Computes the mask of allowed tokens for the current state into `run` (timed).
    fn mask(&mut self, grammar: &mut Self::Grammar, run: &mut Self::Run) -> Result<()>;
    /// Whether the last mask allows `token`.
    fn allows(&self, run: &Self::Run, token: u32) -> bool;
    /// Whether the last mask allows end of sequence.
    fn allows_eos(&self, run: &Self::Run) -> bool;
    /// Consumes `token` (not timed).
    fn commit(
        &mut self,
        grammar: &mut Self::Grammar,
        run: &mut Self::Run,
        token: u32,
    ) -> Result<()>;
}

/// How compiling a schema went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compile {
    /// Compiled in this many milliseconds.
    Compiled {
        /// Milliseconds.
        ms: f64,
    },
    /// The engine refused the schema (or panicked on it).
    Error {
        /// The engine's message.
        message: String,
    },
    /// Compiling did not finish within the time limit (or ran out of memory): a compile error
    /// for the counts.
    Timeout {
        /// What happened.
        message: String,
    },
}

impl Compile {
    /// Whether the schema compiled.
    pub fn is_compiled(&self) -> bool {
        matches!(self, Compile::Compiled { .. })
    }

    /// The compile time, when it compiled.
    pub fn ms(&self) -> Option<f64> {
        match self {
            Compile::Compiled { ms } => Some(*ms),
            _ => None,
        }
    }
}

/// The replay of one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstanceOutcome {
    /// Every token was in its mask, and the final mask allowed end of sequence.
    pub accepted: bool,
    /// Why it was rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Each mask's time in microseconds, in order (the final mask included).
    pub mask_us: Vec<f64>,
}

/// One schema's compile and the replay of its instances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaOutcome {
    /// How compiling went.
    pub compile: Compile,
    /// One per instance, in order; empty when the schema did not compile.
    pub instances: Vec<InstanceOutcome>,
}

impl SchemaOutcome {
    /// An outcome for a schema that did not compile.
    pub fn failed(compile: Compile) -> SchemaOutcome {
        SchemaOutcome {
            compile,
            instances: Vec::new(),
        }
    }
}

/// One engine's outcomes over a corpus, one per schema in corpus order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineRun {
    /// The engine's name (`stencil`, `llguidance`, ...).
    pub name: String,
    /// One per schema.
    pub schemas: Vec<SchemaOutcome>,
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = p.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_owned()
    }
}

/// Keeps a message short enough for one line of a report.
fn short(mut s: String) -> String {
    const MAX: usize = 300;
    if s.len() > MAX {
        let mut end = MAX;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s.replace('\n', " ")
}

/// Compiles `schema` with `engine` (timed), then replays each token sequence of `instances`:
/// a timed mask before every token, a check that the token is allowed, a commit, and a final
/// timed mask that must allow end of sequence. A failing mask or commit rejects the instance;
/// a panic in the engine is caught and reported as an error.
pub fn run_schema<E: Engine>(
    engine: &mut E,
    schema: &Value,
    instances: &[Vec<u32>],
) -> SchemaOutcome {
    let start = Instant::now();
    let compiled = catch_unwind(AssertUnwindSafe(|| engine.compile(schema)));
    let ms = start.elapsed().as_secs_f64() * 1e3;
    let mut grammar = match compiled {
        Ok(Ok(g)) => g,
        Ok(Err(e)) => {
            return SchemaOutcome::failed(Compile::Error {
                message: short(format!("{e:#}")),
            });
        }
        Err(p) => {
            return SchemaOutcome::failed(Compile::Error {
                message: short(panic_message(&*p)),
            });
        }
    };
    let instances = instances
        .iter()
        .map(|tokens| {
            let mut mask_us = Vec::with_capacity(tokens.len() + 1);
            let replayed = catch_unwind(AssertUnwindSafe(|| {
                replay(engine, &mut grammar, tokens, &mut mask_us)
            }));
            let reason = match replayed {
                Ok(r) => r,
                Err(p) => Some(panic_message(&*p)),
            };
            InstanceOutcome {
                accepted: reason.is_none(),
                reason: reason.map(short),
                mask_us,
            }
        })
        .collect();
    SchemaOutcome {
        compile: Compile::Compiled { ms },
        instances,
    }
}

/// Replays one instance; `None` when accepted, else the reason.
fn replay<E: Engine>(
    engine: &mut E,
    grammar: &mut E::Grammar,
    tokens: &[u32],
    mask_us: &mut Vec<f64>,
) -> Option<String> {
    let mut run = match engine.start(grammar) {
        Ok(r) => r,
        Err(e) => return Some(format!("cannot start: {e:#}")),
    };
    for (i, &t) in tokens.iter().enumerate() {
        let start = Instant::now();
        let r = engine.mask(grammar, &mut run);
        mask_us.push(start.elapsed().as_secs_f64() * 1e6);
        if let Err(e) = r {
            return Some(format!(
                "mask failed before token {i} of {} (id {t}): {e:#}",
                tokens.len()
            ));
        }
        if !engine.allows(&run, t) {
            return Some(format!(
                "token {i} of {} (id {t}) not in the mask",
                tokens.len()
            ));
        }
        if let Err(e) = engine.commit(grammar, &mut run, t) {
            return Some(format!("commit of token {i} (id {t}) failed: {e:#}"));
        }
    }
    let start = Instant::now();
    let r = engine.mask(grammar, &mut run);
    mask_us.push(start.elapsed().as_secs_f64() * 1e6);
    match r {
        Err(e) => Some(format!("final mask failed: {e:#}")),
        Ok(()) if !engine.allows_eos(&run) => {
            Some("end of sequence not allowed at the end".to_owned())
        }
        Ok(()) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::bail;

    /// Accepts `[0, 1, ..., n-1]` for the `n` given as the schema; knobs force each failure.
    struct Fake {
        fail_compile: bool,
        panic_mask_at: Option<u32>,
        fail_commit_at: Option<u32>,
    }

    impl Engine for Fake {
        type Grammar = u32;
        type Run = u32;
        fn compile(&mut self, schema: &Value) -> Result<u32> {
            if self.fail_compile {
                bail!("nope\nsecond line");
            }
            Ok(schema.as_u64().unwrap_or(0) as u32)
        }
        fn start(&mut self, _g: &mut u32) -> Result<u32> {
            Ok(0)
        }
        fn mask(&mut self, _g: &mut u32, run: &mut u32) -> Result<()> {
            if Some(*run) == self.panic_mask_at {
                panic!("boom");
            }
            Ok(())
        }
        fn allows(&self, run: &u32, token: u32) -> bool {
            token == *run
        }
        fn allows_eos(&self, _run: &u32) -> bool {
            true
        }
        fn commit(&mut self, g: &mut u32, run: &mut u32, _t: u32) -> Result<()> {
            if Some(*run) == self.fail_commit_at || *run >= *g {
                bail!("cannot");
            }
            *run += 1;
            Ok(())
        }
    }

    fn fake() -> Fake {
        Fake {
            fail_compile: false,
            panic_mask_at: None,
            fail_commit_at: None,
        }
    }

    #[test]
    fn accepted_and_rejected_instances_are_told_apart() {
        let out = run_schema(
            &mut fake(),
            &serde_json::json!(3),
            &[vec![0, 1, 2], vec![0, 2], vec![]],
        );
        assert!(out.compile.ms().is_some());
        let acc: Vec<bool> = out.instances.iter().map(|i| i.accepted).collect();
        assert_eq!(acc, [true, false, true]);
        assert_eq!(out.instances[0].mask_us.len(), 4);
        assert_eq!(out.instances[1].mask_us.len(), 2);
        assert_eq!(out.instances[2].mask_us.len(), 1);
        assert!(
            out.instances[1]
                .reason
                .as_deref()
                .unwrap()
                .contains("token 1 of 2 (id 2)")
        );
    }

    #[test]
    fn failures_and_panics_are_reported_not_propagated() {
        let e = Fake {
            fail_compile: true,
            ..fake()
        };
        let out = run_schema(&mut { e }, &serde_json::json!(3), &[vec![0]]);
        assert_eq!(
            out.compile,
            Compile::Error {
                message: "nope second line".into()
            }
        );
        assert!(out.instances.is_empty());

        let mut e = Fake {
            panic_mask_at: Some(1),
            ..fake()
        };
        let out = run_schema(&mut e, &serde_json::json!(3), &[vec![0, 1], vec![0]]);
        assert_eq!(out.instances[0].reason.as_deref(), Some("panicked: boom"));
        assert!(
            out.instances[1]
                .reason
                .as_deref()
                .unwrap()
                .starts_with("panicked")
        );

        let mut e = Fake {
            fail_commit_at: Some(0),
            ..fake()
        };
        let out = run_schema(&mut e, &serde_json::json!(3), &[vec![0]]);
        assert!(
            out.instances[0]
                .reason
                .as_deref()
                .unwrap()
                .starts_with("commit of token 0")
        );
    }

    #[test]
    fn outcomes_round_trip_through_json() {
        let mut out = run_schema(&mut fake(), &serde_json::json!(2), &[vec![0, 1], vec![1]]);
        // Timings of a few binary digits, which survive the decimal text exactly.
        out.compile = Compile::Compiled { ms: 1.5 };
        for inst in &mut out.instances {
            inst.mask_us.iter_mut().for_each(|t| *t = 0.25);
        }
        let back: SchemaOutcome =
            serde_json::from_str(&serde_json::to_string(&out).unwrap()).unwrap();
        assert_eq!(back, out);
        assert!(back.instances[1].reason.is_some());
        let t = SchemaOutcome::failed(Compile::Timeout {
            message: "20 s".into(),
        });
        let back: SchemaOutcome =
            serde_json::from_str(&serde_json::to_string(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let s = short("é".repeat(400));
        assert!(s.len() <= 304 && s.ends_with('…'));
    }
}
