//! Side-by-side runs of mask engines on the same schemas and token sequences.
//!
//! `cargo xtask bench masks` drives several engines (Stencil with and without its mask cache,
//! and peer engines) through the same corpus: each schema is compiled once per engine, then
//! every valid instance is replayed token by token, one timed mask per step plus a final mask
//! that must allow end of sequence. This module holds the engine-neutral part, so that it can be
//! tested without the peer engines:
//!
//! - [`Engine`], the few calls an engine must answer, and [`run_schema`], the timed replay of one
//!   schema with its instances, producing a [`SchemaOutcome`] (serializable, so an engine that
//!   runs in a child process can send it back);
//! - [`Report`], the outcomes of every engine over the same corpus, with [`Figures`] (counts and
//!   percentiles), over all schemas and over the schemas that every engine compiled;
//! - the printed table ([`Report::table`]), the JSON summary ([`Report::to_json`]) and an SVG
//!   chart of the mask-time distributions ([`svg::cdf_chart`]).
//!
//! Fairness rules the runner keeps: every engine gets the same schema values and the same token
//! ids; only the engine's compile call and its mask call are inside the timers (starting an
//! instance and committing a token are not timed); nobody gets a warm-up.
//!
//! # Example
//!
//! ```
//! use benches::peers::{Engine, run_schema};
//!
//! /// Accepts the token sequences that spell `[0, 1, 2, ...]` with one token per number.
//! struct Counter;
//! impl Engine for Counter {
//!     type Grammar = ();
//!     type Run = (u32, bool);
//!     fn compile(&mut self, _schema: &serde_json::Value) -> anyhow::Result<()> { Ok(()) }
//!     fn start(&mut self, _g: &mut ()) -> anyhow::Result<(u32, bool)> { Ok((0, false)) }
//!     fn mask(&mut self, _g: &mut (), _run: &mut (u32, bool)) -> anyhow::Result<()> { Ok(()) }
//!     fn allows(&self, run: &(u32, bool), token: u32) -> bool { token == run.0 }
//!     fn allows_eos(&self, run: &(u32, bool)) -> bool { run.0 > 0 }
//!     fn commit(&mut self, _g: &mut (), run: &mut (u32, bool), _t: u32) -> anyhow::Result<()> {
//!         run.0 += 1;
//!         Ok(())
//!     }
//! }
//!
//! let out = run_schema(&mut Counter, &serde_json::json!({}), &[vec![0, 1, 2], vec![0, 2]]);
//! assert!(out.compile.is_compiled());
//! assert!(out.instances[0].accepted);
//! assert_eq!(out.instances[0].mask_us.len(), 4); // three tokens and the final mask
//! assert!(!out.instances[1].accepted);
//! ```

mod report;
mod run;
pub mod svg;

pub use report::{Figures, Report};
pub use run::{Compile, Engine, EngineRun, InstanceOutcome, SchemaOutcome, run_schema};
