//! `stencil maskbench`: compile each schema, replay each instance token by token, time masks.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow};
use mask_kernel::{Kernel, MaskCache, MaskStats, Session};
use schema_compiler::corpus::{self, Summary};
use schema_compiler::{Compiler, Grammar, Matcher, Options};
use serde_json::{Value, json};
use vocab_index::{TokenId, TrieKind, Vocabulary};

/// Arguments of `stencil maskbench`.
#[derive(clap::Args)]
pub struct Args {
    /// The tokenizer (`tokenizer.json`; `tokenizer_config.json` next to it is read too).
    #[arg(long)]
    tokenizer: PathBuf,
    /// Trie backend.
    #[arg(long, default_value = "flat")]
    backend: TrieKind,
    /// Write the results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Compile with validation options (any whitespace, any number notation) instead of the
    /// generation defaults.
    #[arg(long)]
    validation: bool,
    /// Mask cache capacity per schema, in MiB (0 disables caching).
    #[arg(long, default_value_t = 64)]
    cache_mib: usize,
    /// MaskBench-form files (`{"schema", "tests"}`), Test-Suite files (arrays of them), or
    /// directories of either.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
}

/// Counters of a run.
#[derive(Default)]
struct Counts {
    compiled: usize,
    compile_errors: usize,
    unsupported: usize,
    valid_accepted: usize,
    valid_rejected: usize,
    invalid_rejected: usize,
    invalid_accepted: usize,
    masks: usize,
}

/// How a mask was obtained, for the breakdown of mask times.
const KINDS: [&str; 3] = ["cache_hit", "split", "walk"];

/// Mask times, all of them and by [`KINDS`].
#[derive(Default)]
struct Timings {
    all: Vec<f64>,
    by_kind: [Vec<f64>; 3],
}

impl Timings {
    fn push(&mut self, us: f64, stats: Option<&MaskStats>) {
        self.all.push(us);
        if let Some(s) = stats {
            let kind = if s.cache_hit {
                0
            } else if s.split {
                1
            } else {
                2
            };
            self.by_kind[kind].push(us);
        }
    }

    /// `{"cache_hit": {"masks", "p50", "p99", "max", "total_ms"}, ...}`.
    fn breakdown(&mut self) -> Value {
        let mut out = serde_json::Map::new();
        for (name, v) in KINDS.iter().zip(&mut self.by_kind) {
            let total: f64 = v.iter().sum();
            let s = Summary::of(v);
            out.insert(
                (*name).to_owned(),
                json!({"masks": s.count, "p50": s.p50, "p99": s.p99, "max": s.max, "total_ms": total / 1e3}),
            );
        }
        Value::Object(out)
    }
}

/// Replays one instance; returns Ok(true) when every token was allowed and end of sequence was
/// allowed at the end.
fn replay(
    file: &str,
    kernel: &Arc<Kernel>,
    grammar: &Arc<Grammar>,
    cache: &mut MaskCache,
    tokens: &[TokenId],
    mask_us: &mut Timings,
) -> Result<bool> {
    let mut session = Session::new(kernel.clone(), Matcher::new(grammar.clone()));
    let mut mask = session.new_mask();
    for &t in tokens {
        let start = Instant::now();
        let r = session.mask(cache, &mut mask);
        let us = start.elapsed().as_secs_f64() * 1e6;
        mask_us.push(us, r.as_ref().ok());
        if let Some(limit) = slow_limit()
            && us > limit
        {
            let st = r.as_ref().ok();
            eprintln!(
                "slow mask {us:.0} µs in {file}: {} split={:?} nodes={:?} allowed={:?}",
                session.recognizer().describe(),
                st.map(|s| s.split),
                st.map(|s| s.nodes),
                st.map(|s| s.allowed)
            );
        }
        match r {
            Ok(_) => {}
            Err(_) => return Ok(false),
        }
        if !mask.contains(t.as_usize()) {
            return Ok(false);
        }
        if let Err(e) = session.commit(t) {
            return Err(anyhow!(
                "token {} ({:?}) was in the mask but could not be committed at {}: {e}",
                t.as_u32(),
                String::from_utf8_lossy(kernel.vocab().bytes(t)),
                session.recognizer().describe()
            ));
        }
    }
    let start = Instant::now();
    let r = session.mask(cache, &mut mask);
    mask_us.push(start.elapsed().as_secs_f64() * 1e6, r.as_ref().ok());
    Ok(r.is_ok() && kernel.eos().iter().any(|e| mask.contains(e.as_usize())))
}

/// `STENCIL_SLOW_MASK_US`: print the state of every mask slower than this.
fn slow_limit() -> Option<f64> {
    std::env::var("STENCIL_SLOW_MASK_US").ok()?.parse().ok()
}

pub fn run(args: Args) -> Result<()> {
    let tokenizer = tokenizers::Tokenizer::from_file(&args.tokenizer)
        .map_err(|e| anyhow!("cannot load {}: {e}", args.tokenizer.display()))?;
    let config_path = args
        .tokenizer
        .with_file_name(vocab_index::TOKENIZER_CONFIG_FILE);
    let config = config_path
        .is_file()
        .then(|| vocab_index::TokenizerConfig::from_file(&config_path))
        .transpose()?;
    let vocab = Arc::new(Vocabulary::from_tokenizer(&tokenizer, config.as_ref())?);
    // Instances are tokenized as a model writes them after its prompt, with no `▁` before the
    // document (Llama 2's tokenizer puts one before a whole text).
    let tokenizer = vocab_index::mid_text_tokenizer(&args.tokenizer)?;
    let t0 = Instant::now();
    let kernel = Arc::new(Kernel::new(vocab.clone(), args.backend)?);
    eprintln!(
        "kernel: {} tokens, {} backend, built in {:.1} ms",
        vocab.len(),
        args.backend.name(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    let loaded = corpus::load(&args.inputs)?;
    for skipped in &loaded.skipped {
        eprintln!(
            "skipped {}: not a schema with tests: {}",
            skipped.file, skipped.reason
        );
    }
    let cases = loaded.cases;
    let options = if args.validation {
        Options::validation()
    } else {
        Options::generation()
    };
    let mut counts = Counts::default();
    let mut mask_us = Timings::default();
    let mut compile_ms = Vec::new();
    let mut per_file = Vec::new();
    let total = cases.len();
    for (i, case) in cases.iter().enumerate() {
        if (i + 1) % 50 == 0 || i + 1 == total {
            eprintln!("[{}/{}] {}", i + 1, total, case.file);
        }
        let start = Instant::now();
        let compiled = Compiler::new(options.clone())
            .rounded_numbers(&case.rounded)
            .compile(&case.schema);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let grammar = match compiled {
            Ok(g) => {
                compile_ms.push(ms);
                counts.compiled += 1;
                Arc::new(g)
            }
            Err(e) => {
                let status = if e.is_unsupported() {
                    "unsupported"
                } else {
                    "compile_error"
                };
                if e.is_unsupported() {
                    counts.unsupported += 1;
                } else {
                    counts.compile_errors += 1;
                }
                per_file.push(json!({"file": case.file, "status": status, "error": e.to_string(), "compile_ms": ms}));
                continue;
            }
        };
        let mut cache = MaskCache::new(args.cache_mib << 20);
        let mut results = Vec::new();
        let mut ok = true;
        let first_mask = mask_us.all.len();
        for inst in &case.tests {
            let enc = tokenizer
                .encode(inst.text.as_str(), false)
                .map_err(|e| anyhow!("tokenizing an instance of {}: {e}", case.file))?;
            let tokens: Vec<TokenId> = enc
                .get_ids()
                .iter()
                .map(|&i| TokenId::new(i).context("token id out of range"))
                .collect::<Result<_>>()?;
            let before = mask_us.all.len();
            let accepted = replay(
                &case.file,
                &kernel,
                &grammar,
                &mut cache,
                &tokens,
                &mut mask_us,
            )
            .with_context(|| format!("replaying a test of {}", case.file))?;
            counts.masks += mask_us.all.len() - before;
            match (inst.valid, accepted) {
                (true, true) => counts.valid_accepted += 1,
                (true, false) => {
                    counts.valid_rejected += 1;
                    ok = false;
                }
                (false, false) => counts.invalid_rejected += 1,
                (false, true) => {
                    counts.invalid_accepted += 1;
                    ok = false;
                }
            }
            results
                .push(json!({"valid": inst.valid, "accepted": accepted, "tokens": tokens.len()}));
        }
        let stats = cache.stats();
        let slowest = mask_us.all[first_mask..]
            .iter()
            .copied()
            .fold(0.0, f64::max);
        per_file.push(json!({
            "file": case.file,
            "status": if ok { "ok" } else { "mismatch" },
            "compile_ms": ms,
            "mask_us_max": slowest,
            "tests": results,
            "cache": {"hits": stats.hits, "misses": stats.misses, "inside_hits": stats.inside_hits, "inside_misses": stats.inside_misses},
        }));
    }
    let by_kind = mask_us.breakdown();
    let mask = Summary::of(&mut mask_us.all);
    let compile = Summary::of(&mut compile_ms);
    let out = json!({
        "tokenizer": args.tokenizer.display().to_string(),
        "backend": args.backend.name(),
        "files": total,
        "skipped_files": loaded.skipped.len(),
        "skipped": loaded.skipped.iter().map(|s| json!({"file": s.file, "reason": s.reason})).collect::<Vec<_>>(),
        "compiled": counts.compiled,
        "compile_errors": counts.compile_errors,
        "unsupported": counts.unsupported,
        "valid_accepted": counts.valid_accepted,
        "valid_rejected": counts.valid_rejected,
        "invalid_rejected": counts.invalid_rejected,
        "invalid_accepted": counts.invalid_accepted,
        "masks": counts.masks,
        "mask_us": {"p50": mask.p50, "p90": mask.p90, "p99": mask.p99, "p999": mask.p999, "max": mask.max, "mean": mask.mean},
        "mask_us_by_kind": by_kind,
        "compile_ms": {"p50": compile.p50, "p90": compile.p90, "p99": compile.p99, "max": compile.max, "mean": compile.mean},
        "per_file": per_file,
    });
    print_summary(&out);
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&out)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

fn print_summary(out: &Value) {
    let m = &out["mask_us"];
    let c = &out["compile_ms"];
    eprintln!(
        "schemas {} compiled {} unsupported {} compile errors {}; files skipped {}",
        out["files"],
        out["compiled"],
        out["unsupported"],
        out["compile_errors"],
        out["skipped_files"]
    );
    eprintln!(
        "valid accepted {} rejected {}; invalid rejected {} accepted {}",
        out["valid_accepted"],
        out["valid_rejected"],
        out["invalid_rejected"],
        out["invalid_accepted"]
    );
    eprintln!(
        "masks {}: p50 {:.1} µs, p90 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1}, mean {:.1}",
        out["masks"],
        f(&m["p50"]),
        f(&m["p90"]),
        f(&m["p99"]),
        f(&m["p999"]),
        f(&m["max"]),
        f(&m["mean"])
    );
    for kind in KINDS {
        let k = &out["mask_us_by_kind"][kind];
        eprintln!(
            "  {kind}: {} masks, p50 {:.1} µs, p99 {:.1}, max {:.1}, total {:.1} ms",
            k["masks"],
            f(&k["p50"]),
            f(&k["p99"]),
            f(&k["max"]),
            f(&k["total_ms"])
        );
    }
    eprintln!(
        "compile: p50 {:.2} ms, p90 {:.2}, p99 {:.2}, max {:.2}, mean {:.2}",
        f(&c["p50"]),
        f(&c["p90"]),
        f(&c["p99"]),
        f(&c["max"]),
        f(&c["mean"])
    );
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}
