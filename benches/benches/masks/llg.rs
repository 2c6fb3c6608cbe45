//! llguidance driven as its authors' server-side API intends: a `ParserFactory` per tokenizer
//! (token environment read from the same `tokenizer.json`, the default slices), a
//! `TokenParser` compiled once per schema from its JSON-schema front end with default options,
//! and per instance a `Matcher` over a deep clone of it: `compute_mask_or_eos` before each
//! token, `consume_token` after.

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use benches::peers::Engine;
use llguidance::api::TopLevelGrammar;
use llguidance::toktrie::SimpleVob;
use llguidance::{Matcher, ParserFactory, TokenParser};
use serde_json::Value;
use toktrie_hf_tokenizers::ByteTokenizer;

/// llguidance over one tokenizer.
pub struct Llguidance {
    factory: ParserFactory,
    eos: Vec<u32>,
}

impl Llguidance {
    /// Reads `tokenizer.json` with llguidance's own reader; end of sequence is `eos` (the same
    /// ids the other engines use).
    pub fn new(tokenizer_json: &Path, eos: &[u32]) -> Result<Llguidance> {
        let mut bt = ByteTokenizer::from_file(tokenizer_json)
            .map_err(|e| anyhow!("llguidance cannot read {}: {e}", tokenizer_json.display()))?;
        if eos.is_empty() {
            bail!("the tokenizer has no end-of-sequence token");
        }
        bt.set_eos_tokens(eos);
        let env = bt.into_tok_env(None)?;
        let mut factory = ParserFactory::new_simple(&env)?;
        // No logging on stderr or into buffers: the other engines do not log either.
        factory.quiet();
        Ok(Llguidance {
            factory,
            eos: eos.to_vec(),
        })
    }
}

/// A matcher and its last mask.
pub struct Run {
    matcher: Matcher,
    mask: Option<SimpleVob>,
}

fn allowed(mask: &Option<SimpleVob>, token: u32) -> bool {
    mask.as_ref()
        .is_some_and(|m| (token as usize) < m.len() && m.is_allowed(token))
}

impl Engine for Llguidance {
    type Grammar = TokenParser;
    type Run = Run;

    fn compile(&mut self, schema: &Value) -> Result<TokenParser> {
        self.factory
            .create_parser(TopLevelGrammar::from_json_schema(schema.clone()))
    }

    fn start(&mut self, grammar: &mut TokenParser) -> Result<Run> {
        let matcher = Matcher::new(Ok(grammar.deep_clone()));
        if let Some(e) = matcher.get_error() {
            bail!("{e}");
        }
        Ok(Run {
            matcher,
            mask: None,
        })
    }

    fn mask(&mut self, _grammar: &mut TokenParser, run: &mut Run) -> Result<()> {
        run.mask = Some(run.matcher.compute_mask_or_eos()?);
        Ok(())
    }

    fn allows(&self, run: &Run, token: u32) -> bool {
        allowed(&run.mask, token)
    }

    fn allows_eos(&self, run: &Run) -> bool {
        self.eos.iter().any(|&e| allowed(&run.mask, e))
    }

    fn commit(&mut self, _grammar: &mut TokenParser, run: &mut Run, token: u32) -> Result<()> {
        run.matcher.consume_token(token)
    }
}
