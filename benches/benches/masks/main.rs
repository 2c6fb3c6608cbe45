//! `cargo xtask bench masks`: Stencil's mask engine and peer engines side by side.
//!
//! In one process and one thread, one engine after the other, on the same tokenizer, the same
//! schemas and the same token sequences (each valid instance tokenized once, without special
//! tokens, and the same ids fed to every engine): compile each schema (timed), then replay each
//! valid instance with a timed mask before every token, a check that the token is allowed, and
//! a final mask that must allow end of sequence. No engine gets a warm-up.
//!
//! Engines: `stencil` (64 MiB mask cache per schema, shared by its instances),
//! `stencil-nocache` (every mask computed), `llguidance` (its JSON-schema front end with default
//! options and its `Matcher`), `outlines` (outlines-core's regex and `Index`, built in a worker
//! process under a time and memory limit; a schema over the limit counts as a compile error).
//!
//! With `--cold`, Stencil's mask cache is new for every instance instead of shared by the
//! instances of a schema.
//!
//! ```text
//! cargo xtask bench masks -- [--tokenizer llama3|qwen3|gemma3|PATH] [--corpus DIR]
//!     [--json FILE] [--svg FILE] [--engines stencil,stencil-nocache,llguidance,outlines]
//!     [--cold]
//! ```

mod llg;
mod outlines;
mod stencil;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use benches::peers::{Engine, EngineRun, Report, SchemaOutcome, run_schema};
use clap::{Parser, ValueEnum};
use mask_kernel::Kernel;
use schema_compiler::corpus;
use vocab_index::{TrieKind, Vocabulary};

/// An engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Which {
    /// Stencil with its mask cache (64 MiB per schema).
    Stencil,
    /// Stencil without a mask cache.
    StencilNocache,
    /// llguidance.
    Llguidance,
    /// outlines-core.
    Outlines,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Stencil => "stencil",
            Which::StencilNocache => "stencil-nocache",
            Which::Llguidance => "llguidance",
            Which::Outlines => "outlines",
        }
    }
}

/// Mask engines side by side on the same tokenizer, schemas and token sequences.
#[derive(Parser)]
#[command(name = "masks")]
struct Args {
    /// `llama3`, `qwen3`, `gemma3`, `llama2` (from the assets) or the path of a tokenizer.json.
    #[arg(long, default_value = "llama3")]
    tokenizer: String,
    /// MaskBench-form corpus (default: shared/data/jsonschemabench-sample). Valid instances only.
    #[arg(long)]
    corpus: Option<PathBuf>,
    /// Write the summary as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a chart of the mask-time distributions here.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// The engines, run in this order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "stencil,stencil-nocache,llguidance,outlines"
    )]
    engines: Vec<Which>,
    /// Seconds outlines-core may spend on one schema's index.
    #[arg(long, default_value_t = 20.0)]
    outlines_timeout: f64,
    /// Address-space limit of the outlines-core worker, in MiB.
    #[arg(long, default_value_t = 8192)]
    outlines_memory_mib: u64,
    /// Compile Stencil's schemas strictly: a keyword it cannot enforce exactly (`format:
    /// hostname`, whose IDNA A-labels are not a regular language; a regex lookahead) fails the
    /// schema. By default such keywords are relaxed as in lenient mode and the schemas that
    /// needed it are listed.
    #[arg(long)]
    strict: bool,
    /// Cold matchers: Stencil starts every instance with a new, empty mask cache (as a new
    /// request does) instead of sharing one per schema; llguidance's matcher of each instance
    /// is always a fresh clone of the compiled parser.
    #[arg(long)]
    cold: bool,
    /// Only the schemas whose file name contains this.
    #[arg(long)]
    filter: Option<String>,
    /// Only every K-th schema (after `--filter`): a subset spread over the whole corpus.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    every: u64,
    /// Only the first N schemas (after `--filter` and `--every`).
    #[arg(long)]
    limit: Option<usize>,
    /// Run as the outlines-core worker (internal).
    #[arg(long, hide = true)]
    outlines_worker: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// `STENCIL_ASSETS`, else the workspace's `assets/`.
fn assets_dir() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")))
}

/// `STENCIL_SHARED_DATA`, else `shared/data` next to the workspace.
fn shared_data_dir() -> PathBuf {
    std::env::var_os("STENCIL_SHARED_DATA")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data")))
}

/// A path from the command line: relative to `STENCIL_CALLER_DIR` when set (`cargo xtask`
/// sets it, since cargo runs benchmarks from the package folder), else to the current folder.
fn resolve(path: &Path) -> PathBuf {
    match std::env::var_os("STENCIL_CALLER_DIR").filter(|v| !v.is_empty()) {
        Some(dir) if path.is_relative() => PathBuf::from(dir).join(path),
        _ => path.to_path_buf(),
    }
}

fn tokenizer_path(name: &str) -> Result<PathBuf> {
    let path = if matches!(name, "llama3" | "qwen3" | "gemma3" | "llama2") {
        assets_dir()
            .join("tokenizers")
            .join(name)
            .join("tokenizer.json")
    } else {
        resolve(Path::new(name))
    };
    if !path.is_file() {
        bail!(
            "tokenizer not found at {}: run `cargo xtask fetch-assets`",
            path.display()
        );
    }
    Ok(path)
}

/// The shared tokenizer and Stencil's vocabulary over it (end of sequence from
/// `tokenizer_config.json` when present).
fn load_vocab(path: &Path) -> Result<(tokenizers::Tokenizer, Arc<Vocabulary>)> {
    let tokenizer = tokenizers::Tokenizer::from_file(path)
        .map_err(|e| anyhow!("cannot load {}: {e}", path.display()))?;
    let config_path = path.with_file_name(vocab_index::TOKENIZER_CONFIG_FILE);
    let config = config_path
        .is_file()
        .then(|| vocab_index::TokenizerConfig::from_file(&config_path))
        .transpose()?;
    let vocab = Arc::new(Vocabulary::from_tokenizer(&tokenizer, config.as_ref())?);
    Ok((tokenizer, vocab))
}

/// Runs every schema through an in-process engine.
fn run_engine<E: Engine>(
    name: &str,
    engine: &mut E,
    cases: &[corpus::Case],
    tokens: &[Vec<Vec<u32>>],
) -> EngineRun {
    let t0 = Instant::now();
    let schemas = cases
        .iter()
        .zip(tokens)
        .enumerate()
        .map(|(i, (case, inst))| {
            progress(name, i, cases.len(), &t0);
            let out = run_schema(engine, &case.schema, inst);
            tell_rejections(name, &case.file, &out);
            out
        })
        .collect();
    eprintln!("{name}: done in {:.1} s", t0.elapsed().as_secs_f64());
    EngineRun {
        name: name.to_owned(),
        schemas,
    }
}

fn progress(name: &str, i: usize, n: usize, t0: &Instant) {
    if (i + 1).is_multiple_of(100) || i + 1 == n {
        eprintln!(
            "{name}: [{}/{n}] {:.1} s",
            i + 1,
            t0.elapsed().as_secs_f64()
        );
    }
}

fn tell_rejections(name: &str, file: &str, out: &SchemaOutcome) {
    for (k, inst) in out.instances.iter().enumerate() {
        if !inst.accepted {
            eprintln!(
                "{name} REJECTED valid instance {k} of {file}: {}",
                inst.reason.as_deref().unwrap_or("?")
            );
        }
    }
}

fn main() -> Result<()> {
    let args = Args::parse();
    let tok_path = tokenizer_path(&args.tokenizer)?;
    if args.outlines_worker {
        let (_, vocab) = load_vocab(&tok_path)?;
        return outlines::worker(&vocab);
    }
    let (tokenizer, vocab) = load_vocab(&tok_path)?;
    let eos: Vec<u32> = vocab.eos_ids().iter().map(|t| t.as_u32()).collect();
    eprintln!(
        "tokenizer {}: {} tokens, end of sequence {:?}",
        tok_path.display(),
        vocab.len(),
        eos
    );

    let corpus_dir = match &args.corpus {
        Some(p) => resolve(p),
        None => shared_data_dir().join("jsonschemabench-sample"),
    };
    let corpus_dir = corpus_dir.canonicalize().unwrap_or(corpus_dir);
    let loaded = corpus::load(std::slice::from_ref(&corpus_dir))
        .with_context(|| format!("loading the corpus at {}", corpus_dir.display()))?;
    for skipped in &loaded.skipped {
        eprintln!("skipped {}: {}", skipped.file, skipped.reason);
    }
    let mut cases = loaded.cases;
    if let Some(f) = &args.filter {
        cases.retain(|c| c.file.contains(f.as_str()));
    }
    if args.every > 1 {
        let k = args.every as usize;
        cases = cases.into_iter().step_by(k).collect();
    }
    if let Some(n) = args.limit {
        cases.truncate(n);
    }
    // Names relative to the corpus, for the reports.
    let prefix = format!("{}/", corpus_dir.display());
    for c in &mut cases {
        if let Some(rest) = c.file.strip_prefix(&prefix) {
            c.file = rest.to_owned();
        }
    }
    // Each valid instance tokenized once; every engine gets these ids.
    let tokens: Vec<Vec<Vec<u32>>> = cases
        .iter()
        .map(|c| {
            c.tests
                .iter()
                .filter(|t| t.valid)
                .map(|t| {
                    tokenizer
                        .encode(t.text.as_str(), false)
                        .map(|e| e.get_ids().to_vec())
                        .map_err(|e| anyhow!("tokenizing an instance of {}: {e}", c.file))
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    let n_instances: usize = tokens.iter().map(Vec::len).sum();
    let n_tokens: usize = tokens.iter().flatten().map(Vec::len).sum();
    eprintln!(
        "corpus {}: {} schemas, {n_instances} valid instances, {n_tokens} tokens",
        corpus_dir.display(),
        cases.len()
    );

    let mut runs = Vec::new();
    for &which in &args.engines {
        let name = which.name();
        let t0 = Instant::now();
        let run = match which {
            Which::Stencil | Which::StencilNocache => {
                let kernel = Arc::new(Kernel::new(vocab.clone(), TrieKind::Flat)?);
                let cache = if which == Which::Stencil { 64 << 20 } else { 0 };
                eprintln!(
                    "{name}: kernel built in {:.1} ms",
                    t0.elapsed().as_secs_f64() * 1e3
                );
                let mut engine = stencil::Stencil::new(kernel, cache, args.strict, args.cold);
                let run = run_engine(name, &mut engine, &cases, &tokens);
                if !engine.relaxed().is_empty() {
                    eprintln!(
                        "{name}: {} schemas compiled with a relaxation (lenient mode; --strict \
                         fails them):",
                        engine.relaxed().len()
                    );
                    for r in engine.relaxed() {
                        eprintln!("  {r}");
                    }
                }
                run
            }
            Which::Llguidance => {
                let mut engine = llg::Llguidance::new(&tok_path, &eos)?;
                eprintln!(
                    "{name}: parser factory built in {:.1} ms",
                    t0.elapsed().as_secs_f64() * 1e3
                );
                run_engine(name, &mut engine, &cases, &tokens)
            }
            Which::Outlines => {
                let exe = std::env::current_exe().context("finding this executable")?;
                let timeout = Duration::from_secs_f64(args.outlines_timeout);
                let mut client =
                    outlines::Client::new(exe, &tok_path, timeout, args.outlines_memory_mib);
                let mut schemas = Vec::with_capacity(cases.len());
                for (i, (case, inst)) in cases.iter().zip(&tokens).enumerate() {
                    progress(name, i, cases.len(), &t0);
                    let out = client.run(&case.schema, inst)?;
                    tell_rejections(name, &case.file, &out);
                    schemas.push(out);
                }
                eprintln!(
                    "{name}: done in {:.1} s ({} worker processes)",
                    t0.elapsed().as_secs_f64(),
                    client.restarts
                );
                EngineRun {
                    name: name.to_owned(),
                    schemas,
                }
            }
        };
        runs.push(run);
    }

    let report = Report {
        tokenizer: args.tokenizer.clone(),
        corpus: corpus_dir.display().to_string(),
        files: cases.iter().map(|c| c.file.clone()).collect(),
        instances: n_instances,
        tokens: n_tokens,
        runs,
    };
    println!("{}", report.table());
    let rejections = report.rejections();
    if !rejections.is_empty() {
        println!("valid instances rejected ({}):", rejections.len());
        for (engine, file, k, reason) in &rejections {
            println!("  {engine}: {file} instance {k}: {reason}");
        }
    }
    if let Some(path) = args.json.as_deref().map(resolve) {
        std::fs::write(&path, serde_json::to_string_pretty(&report.to_json())?)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = args.svg.as_deref().map(resolve) {
        std::fs::write(&path, report.svg())
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
