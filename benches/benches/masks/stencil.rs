//! Stencil's engine: a kernel per tokenizer, a grammar and a mask cache per schema, a session
//! per instance, as `stencil maskbench` and a server drive it; with `cold`, a new mask cache
//! per instance, as a new request or a host engine's new matcher starts.

use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use benches::peers::Engine;
use mask_kernel::{FixedBitSet, Kernel, MaskCache, Session};
use schema_compiler::{Grammar, Matcher, NoteKind, Options};
use serde_json::Value;
use vocab_index::TokenId;

/// Stencil with a mask cache of `cache_bytes` per schema (0: every mask computed).
pub struct Stencil {
    kernel: Arc<Kernel>,
    cache_bytes: usize,
    /// A new, empty mask cache for every instance.
    cold: bool,
    options: Options,
    /// Per schema compiled with a relaxation: the relaxations, one line each.
    relaxed: Vec<String>,
}

impl Stencil {
    /// Stencil over `kernel`, schemas compiled with the generation options, strictly or (with
    /// `strict` false) in lenient mode, where a keyword that cannot be enforced exactly is
    /// relaxed and listed instead of failing the schema.
    pub fn new(kernel: Arc<Kernel>, cache_bytes: usize, strict: bool, cold: bool) -> Stencil {
        Stencil {
            kernel,
            cache_bytes,
            cold,
            options: Options {
                strict,
                ..Options::generation()
            },
            relaxed: Vec::new(),
        }
    }

    /// The relaxations of each schema compiled with some, in compile order.
    pub fn relaxed(&self) -> &[String] {
        &self.relaxed
    }
}

/// A session and the buffer its masks go to.
pub struct Run {
    session: Session<Matcher>,
    mask: FixedBitSet,
}

impl Engine for Stencil {
    type Grammar = (Arc<Grammar>, MaskCache);
    type Run = Run;

    fn compile(&mut self, schema: &Value) -> Result<Self::Grammar> {
        let g = Grammar::compile(schema, &self.options).map_err(|e| anyhow!("{e}"))?;
        let relaxed: Vec<String> = g
            .report()
            .of_kind(NoteKind::Relaxed)
            .map(|n| format!("{} at {}", n.detail, n.pointer))
            .collect();
        if !relaxed.is_empty() {
            self.relaxed.push(relaxed.join("; "));
        }
        Ok((Arc::new(g), MaskCache::new(self.cache_bytes)))
    }

    fn start(&mut self, grammar: &mut Self::Grammar) -> Result<Run> {
        if self.cold {
            grammar.1 = MaskCache::new(self.cache_bytes);
        }
        let session = Session::new(self.kernel.clone(), Matcher::new(grammar.0.clone()));
        let mask = session.new_mask();
        Ok(Run { session, mask })
    }

    fn mask(&mut self, grammar: &mut Self::Grammar, run: &mut Run) -> Result<()> {
        run.session.mask(&mut grammar.1, &mut run.mask)?;
        Ok(())
    }

    fn allows(&self, run: &Run, token: u32) -> bool {
        run.mask.contains(token as usize)
    }

    fn allows_eos(&self, run: &Run) -> bool {
        self.kernel
            .eos()
            .iter()
            .any(|e| run.mask.contains(e.as_usize()))
    }

    fn commit(&mut self, _grammar: &mut Self::Grammar, run: &mut Run, token: u32) -> Result<()> {
        let t = TokenId::new(token).context("token id out of range")?;
        run.session.commit(t)?;
        Ok(())
    }
}
