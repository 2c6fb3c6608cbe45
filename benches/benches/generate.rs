//! `cargo xtask bench generate [-- --json FILE]`: tokens/s with and without the constraint on
//! the same model, prompt and length, in one run, on each runtime: llama.cpp on the default
//! GGUF (Q4_K_M) and, in a build with the `mlx` feature (what `cargo xtask bench generate`
//! does), MLX on the f16 folder `cargo xtask convert-model` writes from the same GGUF. The
//! two runtimes run the same weights at different precisions, so their figures compare the
//! runtimes as users get them, not kernels at equal precision.
//!
//! Each round runs the constrained decode (the country example of the demo, greedy) and an
//! unconstrained one that generates exactly as many tokens from the same prompt (end of
//! sequence disabled), so both decode the same length. The first round runs the constrained
//! one first, to learn the length (greedy decoding repeats it); later rounds alternate which
//! goes first, so that neither side is always the second of the pair on a busy machine.
//! Start-up (loading the model, building the token tables, compiling the schema the first
//! time) is timed separately. Reported figures are medians over the rounds; the ratio is the
//! median of each round's constrained/unconstrained ratio (the two runs of a round are
//! neighbours in time, so a slow spell of the machine weighs on both).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use generate::{
    GenerateOptions, Generator, Message, Model, Output, Prompt, Request, SchemaInPrompt,
};
use runtime_llama::{LlamaConfig, LlamaModel};
use serde_json::{Value, json};

const SCHEMA: &str = r#"{"type": "array", "items": {"type": "object",
    "properties": {"name": {"type": "string"}, "continent": {"type": "string"}},
    "required": ["name", "continent"]}}"#;
const PROMPT: &str = "Which countries are mentioned in the sentence 'Adamma went home to Nigeria \
    for the hols'?\nYour answer should be only JSON, according to this schema: #!JSON_SCHEMA!#";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Runtime {
    Llama,
    Mlx,
}

impl Runtime {
    fn name(self) -> &'static str {
        match self {
            Runtime::Llama => "llama",
            Runtime::Mlx => "mlx",
        }
    }
}

struct Args {
    json: Option<PathBuf>,
    runtimes: Vec<Runtime>,
    rounds: usize,
    max_tokens: usize,
    threads: Option<u32>,
    overlap: bool,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        json: None,
        runtimes: if cfg!(feature = "mlx") {
            vec![Runtime::Llama, Runtime::Mlx]
        } else {
            vec![Runtime::Llama]
        },
        rounds: 7,
        max_tokens: 96,
        threads: None,
        overlap: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match a.as_str() {
            // Passed by `cargo bench`.
            "--bench" => {}
            "--json" => args.json = Some(PathBuf::from(value("--json")?)),
            "--rounds" => args.rounds = value("--rounds")?.parse()?,
            "--max-tokens" => args.max_tokens = value("--max-tokens")?.parse()?,
            "--threads" => args.threads = Some(value("--threads")?.parse()?),
            "--no-overlap" => args.overlap = false,
            "--runtime" => {
                args.runtimes = match value("--runtime")?.as_str() {
                    "llama" => vec![Runtime::Llama],
                    "mlx" => vec![Runtime::Mlx],
                    "both" => vec![Runtime::Llama, Runtime::Mlx],
                    other => bail!("--runtime is llama, mlx or both, not {other:?}"),
                }
            }
            "--help" | "-h" => {
                println!(
                    "generate bench: [--runtime llama|mlx|both] [--json FILE] [--rounds N (7)] \
                     [--max-tokens N (96)] [--threads N (llama.cpp)] [--no-overlap (llama.cpp: \
                     the next mask before the forward pass, not during it)]"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    if args.rounds == 0 || args.max_tokens == 0 {
        bail!("--rounds and --max-tokens must be positive");
    }
    if args.runtimes.contains(&Runtime::Mlx) && !cfg!(feature = "mlx") {
        bail!(
            "this build has no MLX runtime: `cargo xtask bench generate` builds it with \
             `--features mlx` after `cargo xtask mlx-setup`"
        );
    }
    Ok(args)
}

fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn request(schema: Option<Value>, max_tokens: usize) -> Request {
    let mut prompt = PROMPT.to_string();
    if schema.is_none() {
        prompt = prompt.replace(generate::SCHEMA_PLACEHOLDER, SCHEMA);
    }
    Request {
        prompt: Prompt::Chat(vec![Message::new("user", prompt)]),
        schema,
        schema_in_prompt: SchemaInPrompt::Auto,
        options: GenerateOptions {
            max_tokens,
            // Decode the budget in full: no early close, no end of sequence.
            close_at_budget: false,
            ignore_eos: true,
            ..GenerateOptions::default()
        },
    }
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let assets = assets();
    let tok_path = assets.join("tokenizers/gemma3/tokenizer.json");
    if !tok_path.is_file() {
        bail!(
            "{} is missing: run `cargo xtask fetch-assets`",
            tok_path.display()
        );
    }
    let mut reports = serde_json::Map::new();
    for &runtime in &args.runtimes {
        println!("== {}", runtime.name());
        let report = match runtime {
            Runtime::Llama => {
                let path = assets.join("models/gemma-3-270m-q4_k_m.gguf");
                if !path.is_file() {
                    bail!(
                        "{} is missing: run `cargo xtask fetch-assets`",
                        path.display()
                    );
                }
                let template_config = assets.join("tokenizers/gemma3/tokenizer_config.json");
                let mut config = LlamaConfig::default().with_overlap(args.overlap);
                if let Some(n) = args.threads {
                    config = config.with_threads(n, n);
                }
                // Start-up as `stencil` does it, twice: cold (no kernel tables on disk: built
                // and written) and warm (read back).
                let tables = std::env::temp_dir()
                    .join(format!("stencil-bench-tables-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&tables);
                let cold = llama_start_up(&path, &config, &tables, &template_config)?;
                drop(cold.0);
                let (model, tokenizer, kernel, warm) =
                    llama_start_up(&path, &config, &tables, &template_config)?;
                let _ = std::fs::remove_dir_all(&tables);
                let startup = json!({
                    "startup_ms": cold.3.total(),
                    "startup_warm_ms": warm.total(),
                    "startup_cold": cold.3.json(),
                    "startup_warm": warm.json(),
                });
                println!("start-up, cold: {}", cold.3);
                println!("start-up, warm: {warm}");
                let generator = Generator::with_kernel(model, tokenizer, kernel)?;
                measure(&args, &path, generator, startup)?
            }
            Runtime::Mlx => mlx(&args, &assets, &tok_path)?,
        };
        reports.insert(runtime.name().to_owned(), report);
    }
    if reports.len() == 2 {
        let tps = |r: &str, k: &str| reports[r][k].as_f64().unwrap_or(f64::NAN);
        println!(
            "mlx/llama: constrained {:.2}×, unconstrained {:.2}×",
            tps("mlx", "constrained_tps") / tps("llama", "constrained_tps"),
            tps("mlx", "unconstrained_tps") / tps("llama", "unconstrained_tps"),
        );
    }
    if let Some(path) = &args.json {
        let report = json!({ "runtimes": reports });
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}

#[cfg(feature = "mlx")]
fn mlx(args: &Args, assets: &Path, tok_path: &Path) -> Result<Value> {
    use runtime_mlx::{MlxConfig, MlxModel};
    let dir = assets.join("models/gemma-3-270m-f16");
    if !dir.join("config.json").is_file() {
        bail!(
            "{} is missing: run `cargo xtask convert-model`",
            dir.display()
        );
    }
    let t = Instant::now();
    let model = MlxModel::load(&dir, MlxConfig::default())?;
    let model_ms = ms(t.elapsed());
    let t = Instant::now();
    let tokenizer = Arc::new(generate::Tokenizer::from_file(tok_path)?);
    let tokenizer_ms = ms(t.elapsed());
    let t = Instant::now();
    let kernel = generate::kernel_for(&tokenizer)?;
    let tables_ms = ms(t.elapsed());
    let start_up = StartUp {
        parts: vec![
            ("model", model_ms),
            ("tokenizer", tokenizer_ms),
            ("kernel tables", tables_ms),
        ],
    };
    println!("start-up: {start_up}");
    let generator = Generator::with_kernel(model, tokenizer, kernel)?;
    measure(
        args,
        &dir,
        generator,
        json!({"startup_ms": start_up.total(), "startup": start_up.json()}),
    )
}

#[cfg(not(feature = "mlx"))]
fn mlx(_: &Args, _: &Path, _: &Path) -> Result<Value> {
    bail!("this build has no MLX runtime (the `mlx` feature)")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The parts of a start-up, in ms: until the model, its tokenizer and the kernel's tables are
/// ready to sample.
struct StartUp {
    parts: Vec<(&'static str, f64)>,
}

impl StartUp {
    fn total(&self) -> f64 {
        self.parts.iter().map(|&(_, ms)| ms).sum()
    }

    fn json(&self) -> Value {
        let mut parts = serde_json::Map::new();
        for &(name, ms) in &self.parts {
            parts.insert(format!("{}_ms", name.replace(' ', "_")), json!(ms));
        }
        Value::Object(parts)
    }
}

impl std::fmt::Display for StartUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for &(name, ms) in &self.parts {
            write!(f, "{name} {ms:.0} ms, ")?;
        }
        write!(f, "in all {:.0} ms", self.total())
    }
}

/// Loads the GGUF model with its own tokenizer (with the chat template of `template_config`
/// when the file has none) and the kernel (tables kept in `tables`), as `stencil` does.
fn llama_start_up(
    path: &Path,
    config: &LlamaConfig,
    tables: &Path,
    template_config: &Path,
) -> Result<(
    LlamaModel,
    Arc<generate::Tokenizer>,
    Arc<mask_kernel::Kernel>,
    StartUp,
)> {
    let t = Instant::now();
    let (model, mut tokenizer, kernel) =
        LlamaModel::load_with_kernel(path, config.clone(), Some(tables))?;
    let load_ms = ms(t.elapsed());
    let t = Instant::now();
    if tokenizer.chat_template().is_none() {
        // The default GGUF carries no chat template: prompts take the one of its
        // `tokenizer_config.json`, as `stencil --tokenizer` would.
        tokenizer = tokenizer.with_template_from(template_config)?;
    }
    let template_ms = ms(t.elapsed());
    Ok((
        model,
        Arc::new(tokenizer),
        kernel,
        StartUp {
            parts: vec![
                ("model vocabulary and tables", load_ms),
                ("chat template", template_ms),
            ],
        },
    ))
}

/// The rounds on one loaded model; returns its report, with `startup` (its start-up figures,
/// an object) merged in.
fn measure<M: Model>(
    args: &Args,
    model_path: &Path,
    mut generator: Generator<M>,
    startup: Value,
) -> Result<Value> {
    let schema: Value = serde_json::from_str(SCHEMA)?;
    let (_, compile_ms) = generator.compile(&schema)?;
    println!("first compile of the schema: {compile_ms:.2} ms");

    let mut sink = |_: &str| true;
    // Warm-up: page in the weights, fill the mask cache as a serving process would have.
    generator.generate(&request(Some(schema.clone()), 16), &mut sink)?;

    let (mut c_tps, mut u_tps, mut lengths) = (vec![], vec![], vec![]);
    let (mut mask_us, mut exposed_us, mut ratios) = (vec![], vec![], vec![]);
    let mut sample: Option<Output> = None;
    for round in 0..args.rounds {
        let constrained = request(Some(schema.clone()), args.max_tokens);
        let (c, u) = match sample.as_ref().map(|s| s.completion_tokens) {
            Some(n) if round % 2 == 1 => {
                let u = generator.generate(&request(None, n), &mut sink)?;
                let c = generator.generate(&constrained, &mut sink)?;
                if c.completion_tokens != n {
                    bail!(
                        "the constrained run made {} tokens, not {n} as before",
                        c.completion_tokens
                    );
                }
                (c, u)
            }
            _ => {
                let c = generator.generate(&constrained, &mut sink)?;
                let u = generator.generate(&request(None, c.completion_tokens), &mut sink)?;
                (c, u)
            }
        };
        let n = c.completion_tokens;
        if u.completion_tokens != n {
            bail!(
                "unconstrained run made {} tokens, not {n}",
                u.completion_tokens
            );
        }
        println!(
            "round {}: {n} tokens ({} forced); constrained {:.1} tokens/s (mask {:.1} µs/token, \
             {:.1} µs of it waited for), unconstrained {:.1} tokens/s",
            round + 1,
            c.forced_tokens,
            c.timing.tokens_per_s,
            c.timing.mask_us_mean,
            c.timing.mask_exposed_us_mean,
            u.timing.tokens_per_s
        );
        c_tps.push(c.timing.tokens_per_s);
        u_tps.push(u.timing.tokens_per_s);
        ratios.push(c.timing.tokens_per_s / u.timing.tokens_per_s);
        mask_us.push(c.timing.mask_us_mean);
        exposed_us.push(c.timing.mask_exposed_us_mean);
        lengths.push(n as f64);
        sample.get_or_insert(c);
    }
    let (c, u) = (median(c_tps), median(u_tps));
    let ratio = median(ratios.clone());
    println!(
        "median: constrained {c:.1} tokens/s, unconstrained {u:.1} tokens/s, ratio {:.1}% (per \
         round: {}), mask {:.1} µs/token, exposed {:.1} µs/token",
        ratio * 100.0,
        ratios
            .iter()
            .map(|r| format!("{:.1}%", r * 100.0))
            .collect::<Vec<_>>()
            .join(" "),
        median(mask_us.clone()),
        median(exposed_us.clone())
    );
    if let Some(s) = &sample {
        println!("constrained text ({:?}): {}", s.stop, s.text);
    }
    let mut report = json!({
        "model": model_path.file_name().map(|f| f.to_string_lossy().into_owned()),
        "rounds": args.rounds,
        "tokens": median(lengths),
        "constrained_tps": c,
        "unconstrained_tps": u,
        "ratio": ratio,
        "mask_us_per_token": median(mask_us),
        "mask_exposed_us_per_token": median(exposed_us),
        "compile_ms": compile_ms,
    });
    if let (Some(report), Value::Object(startup)) = (report.as_object_mut(), startup) {
        report.extend(startup);
    }
    Ok(report)
}
