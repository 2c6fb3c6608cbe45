//! Continuous batching: generators on lanes of one batched model give, concurrently, exactly
//! the texts they give one at a time on a model of their own; prompts are evaluated in chunks
//! within the step budget; masks are computed while a step is evaluated; a model that panics
//! is loaded again and the other sequences go on unharmed.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use generate::{
    BatchModel, BatchOptions, Batcher, GenerateOptions, Generator, Message, Model, ModelError,
    Request, SeqStep, Tokenizer, kernel_for, new_mask_cache,
};
use mask_kernel::{Kernel, SharedMaskCache};
use sampler::SamplerConfig;
use schema_compiler::Grammar;
use serde_json::json;

fn tokenizer() -> Arc<Tokenizer> {
    static TOK: OnceLock<Arc<Tokenizer>> = OnceLock::new();
    TOK.get_or_init(load_tokenizer).clone()
}

/// The mask kernel of [`tokenizer`], built once.
fn kernel() -> Arc<Kernel> {
    static KERNEL: OnceLock<Arc<Kernel>> = OnceLock::new();
    KERNEL
        .get_or_init(|| kernel_for(&tokenizer()).unwrap())
        .clone()
}

fn load_tokenizer() -> Arc<Tokenizer> {
    let assets = std::env::var_os("STENCIL_ASSETS")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../assets").into());
    let path = assets.join("tokenizers/gemma3/tokenizer.json");
    assert!(
        path.is_file(),
        "{} not found: run `cargo xtask fetch-assets`",
        path.display()
    );
    Arc::new(Tokenizer::from_file(&path).expect("the tokenizer loads"))
}

/// Logits that depend on every token of the sequence: a pseudo-random value per token id,
/// seeded by a hash of the sequence. A sequence mixed up with another's, or missing a token,
/// soon writes something else.
fn logits_after(tokens: &[u32], out: &mut Vec<f32>, n: usize) {
    let mut h = DefaultHasher::new();
    tokens.hash(&mut h);
    let mut x = h.finish() | 1;
    out.clear();
    out.extend((0..n).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 1000) as f32 / 100.0
    }));
}

/// One sequence, as a plain model: the reference.
struct Single {
    tokens: Vec<u32>,
    logits: Vec<f32>,
    n: usize,
}

impl Model for Single {
    fn vocab_size(&self) -> usize {
        self.n
    }
    fn context_size(&self) -> usize {
        4096
    }
    fn n_past(&self) -> usize {
        self.tokens.len()
    }
    fn forward(&mut self, tokens: &[u32]) -> Result<&[f32], ModelError> {
        self.tokens.extend_from_slice(tokens);
        logits_after(&self.tokens, &mut self.logits, self.n);
        Ok(&self.logits)
    }
    fn truncate(&mut self, n_past: usize) -> Result<(), ModelError> {
        self.tokens.truncate(n_past);
        Ok(())
    }
}

/// The same logits for several sequences, evaluated in batched steps; it checks the
/// batcher's side of the contract and records the steps.
#[derive(Clone)]
struct Pool {
    seqs: Vec<Vec<u32>>,
    n: usize,
    max_tokens: usize,
    /// (sequences, tokens) of each step.
    steps: Arc<Mutex<Vec<(usize, usize)>>>,
    /// Panics in the step with this number (counting from 1), if any.
    panic_at: Option<usize>,
    /// Waits in each step until this is set (then clears it), if given.
    wait_for: Option<Arc<AtomicBool>>,
}

impl BatchModel for Pool {
    fn vocab_size(&self) -> usize {
        self.n
    }
    fn context_size(&self) -> usize {
        4096
    }
    fn max_sequences(&self) -> usize {
        self.seqs.len()
    }
    fn max_batch_tokens(&self) -> usize {
        self.max_tokens
    }
    fn decode(&mut self, steps: &[SeqStep<'_>], logits: &mut [Vec<f32>]) -> Result<(), ModelError> {
        let mut record = self.steps.lock().unwrap();
        record.push((steps.len(), steps.iter().map(|s| s.tokens.len()).sum()));
        if self.panic_at == Some(record.len()) {
            panic!("the pool was told to panic");
        }
        drop(record);
        if let Some(flag) = &self.wait_for {
            let t = Instant::now();
            while !flag.swap(false, Ordering::SeqCst) {
                assert!(
                    t.elapsed() < Duration::from_secs(10),
                    "nothing ran meanwhile"
                );
                std::thread::yield_now();
            }
        }
        let total: usize = steps.iter().map(|s| s.tokens.len()).sum();
        assert!(total <= self.max_tokens, "{total} tokens in one step");
        for (i, s) in steps.iter().enumerate() {
            assert!(
                steps[..i].iter().all(|o| o.seq != s.seq),
                "a sequence twice"
            );
            assert!(!s.tokens.is_empty());
            let seq = &mut self.seqs[s.seq];
            assert!(s.keep <= seq.len(), "keep {} of {}", s.keep, seq.len());
            seq.truncate(s.keep);
            seq.extend_from_slice(s.tokens);
            if s.logits {
                logits_after(seq, &mut logits[i], self.n);
            }
        }
        Ok(())
    }
}

fn pool(tok: &Tokenizer, lanes: usize, max_tokens: usize) -> Pool {
    Pool {
        seqs: vec![Vec::new(); lanes],
        n: tok.vocab().len(),
        max_tokens,
        steps: Arc::default(),
        panic_at: None,
        wait_for: None,
    }
}

/// Six different requests: schemas, prompts (one long enough to be chunked), seeds.
fn requests() -> Vec<Request> {
    let schemas = [
        json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
            "age": {"type": "integer"}}, "required": ["name", "age"]}),
        json!({"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 4}),
        json!({"type": "string", "pattern": "^[a-z]{3,8}$"}),
    ];
    (0..6)
        .map(|i| {
            let long = "Tell me more about it. ".repeat(if i == 2 { 40 } else { 1 });
            let mut r = Request::chat(vec![Message::new(
                "user",
                format!("Request {i}. {long}Answer in JSON."),
            )])
            .with_schema(schemas[i % 3].clone());
            r.options = GenerateOptions {
                max_tokens: 40,
                sampler: SamplerConfig {
                    temperature: if i % 2 == 0 { 0.0 } else { 0.8 },
                    ..SamplerConfig::default()
                },
                seed: i as u64,
                ..GenerateOptions::default()
            };
            if i == 5 {
                r.schema = None;
                r.options.max_tokens = 12;
            }
            r
        })
        .collect()
}

/// Each request alone, on a model of its own.
fn one_at_a_time(tok: &Arc<Tokenizer>, requests: &[Request]) -> Vec<String> {
    let n = tok.vocab().len();
    requests
        .iter()
        .map(|r| {
            let model = Single {
                tokens: Vec::new(),
                logits: Vec::new(),
                n,
            };
            let mut g = Generator::with_kernel(model, tok.clone(), kernel()).unwrap();
            g.generate(r, &mut |_| true).unwrap().text
        })
        .collect()
}

/// The requests spread over `lanes` threads (request i on lane i % lanes, in order), each a
/// generator on a lane of `batcher`; returns each request's text or error.
fn concurrently(
    tok: &Arc<Tokenizer>,
    batcher: &Batcher,
    lanes: usize,
    requests: &[Request],
) -> Vec<Result<String, String>> {
    sharing(tok, batcher, lanes, requests, &[])
}

/// A schema's grammar and mask cache, handed to every lane.
type Shared = (serde_json::Value, Arc<Grammar>, Arc<SharedMaskCache>);

/// [`concurrently`], each lane's generator given `shared` first (as a server's compile pool
/// hands its grammars over).
fn sharing(
    tok: &Arc<Tokenizer>,
    batcher: &Batcher,
    lanes: usize,
    requests: &[Request],
    shared: &[Shared],
) -> Vec<Result<String, String>> {
    let kernel = kernel();
    let results: Vec<Mutex<Option<Result<String, String>>>> =
        requests.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for lane_index in 0..lanes {
            let lane = batcher.lane(lane_index).expect("a free lane");
            let mut g = Generator::with_kernel(lane, tok.clone(), kernel.clone()).unwrap();
            for (schema, grammar, masks) in shared {
                assert!(g.add_shared(schema, grammar.clone(), masks.clone()));
            }
            let results = &results;
            scope.spawn(move || {
                for (i, r) in requests.iter().enumerate() {
                    if i % lanes != lane_index {
                        continue;
                    }
                    let _busy = g.model().busy();
                    let out = g.generate(r, &mut |_| true);
                    *results[i].lock().unwrap() =
                        Some(out.map(|o| o.text).map_err(|e| e.to_string()));
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().unwrap().expect("every request ran"))
        .collect()
}

fn options(gather_ms: u64) -> BatchOptions {
    BatchOptions {
        gather: Duration::from_millis(gather_ms),
        ..BatchOptions::default()
    }
}

#[test]
fn lanes_give_the_texts_each_request_gives_alone() {
    let tok = tokenizer();
    let requests = requests();
    let expected = one_at_a_time(&tok, &requests);
    let model = pool(&tok, 3, 32);
    let steps = model.steps.clone();
    let batcher = Batcher::spawn(move || Ok::<_, String>(model.clone()), options(200)).unwrap();
    assert_eq!(batcher.sequences(), 3);
    let got = concurrently(&tok, &batcher, 3, &requests);
    for (i, (got, want)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(got.as_deref(), Ok(want.as_str()), "request {i}");
    }
    let steps = steps.lock().unwrap();
    let stats = batcher.stats();
    assert_eq!(stats.steps as usize, steps.len());
    // Sequences share steps: every lane in some, and fewer steps than sequences evaluated.
    assert_eq!(steps.iter().map(|&(seqs, _)| seqs).max(), Some(3));
    assert!(
        stats.sequences as f64 / stats.steps as f64 > 1.2,
        "mean batch {} over {} steps",
        stats.sequences as f64 / stats.steps as f64,
        stats.steps
    );
    // The long prompt was cut into chunks of the step budget.
    assert!(steps.iter().all(|&(_, tokens)| tokens <= 32));
    assert!(steps.iter().filter(|&&(_, tokens)| tokens == 32).count() >= 3);
}

/// Lanes given one grammar and mask cache per schema give the same texts, and find the masks
/// other lanes put.
#[test]
fn lanes_sharing_grammars_and_masks_give_the_texts_each_request_gives_alone() {
    let tok = tokenizer();
    let requests = requests();
    let expected = one_at_a_time(&tok, &requests);
    let probe = Generator::with_kernel(
        Single {
            tokens: Vec::new(),
            logits: Vec::new(),
            n: tok.vocab().len(),
        },
        tok.clone(),
        kernel(),
    )
    .unwrap();
    // Requests 0, 1 and 2 hold the three schemas.
    let shared: Vec<Shared> = requests[..3]
        .iter()
        .filter_map(|r| r.schema.clone())
        .map(|schema| {
            let g = Grammar::compile(&schema, probe.compile_options()).unwrap();
            (schema, Arc::new(g), new_mask_cache())
        })
        .collect();
    let model = pool(&tok, 2, 32);
    let batcher = Batcher::spawn(move || Ok::<_, String>(model.clone()), options(200)).unwrap();
    // Two lanes: each schema is used on both.
    let got = sharing(&tok, &batcher, 2, &requests, &shared);
    for (i, (got, want)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(got.as_deref(), Ok(want.as_str()), "request {i}");
    }
    // Two requests of each schema, one per lane: the second finds what the first put.
    let hits: u64 = shared.iter().map(|(_, _, m)| m.stats().hits).sum();
    assert!(hits >= 3, "masks found in the shared caches: {hits}");
}

#[test]
fn more_requests_than_lanes_reuse_them_and_one_lane_generates_alone() {
    let tok = tokenizer();
    let requests = requests();
    let expected = one_at_a_time(&tok, &requests);
    let model = pool(&tok, 2, 512);
    let batcher = Batcher::spawn(move || Ok::<_, String>(model.clone()), options(5)).unwrap();
    let got = concurrently(&tok, &batcher, 1, &requests);
    assert_eq!(
        got,
        expected.iter().cloned().map(Ok).collect::<Vec<_>>(),
        "one lane"
    );
    let got = concurrently(&tok, &batcher, 2, &requests);
    assert_eq!(
        got,
        expected.into_iter().map(Ok).collect::<Vec<_>>(),
        "two lanes"
    );
}

#[test]
fn the_next_mask_is_computed_while_the_step_runs() {
    let tok = tokenizer();
    let flag = Arc::new(AtomicBool::new(false));
    let mut model = pool(&tok, 1, 512);
    model.wait_for = Some(flag.clone());
    let started = model.steps.clone();
    let batcher = Batcher::spawn(move || Ok::<_, String>(model.clone()), options(1)).unwrap();
    let mut lane = batcher.lane(0).unwrap();
    // The step starts, then waits for `meanwhile`, which waits for the step to start: so
    // `meanwhile` runs during the step.
    let ran = AtomicUsize::new(0);
    let logits = lane
        .forward_with(&[1, 2, 3], &mut || {
            let t = Instant::now();
            while started.lock().unwrap().is_empty() {
                assert!(
                    t.elapsed() < Duration::from_secs(10),
                    "the step never started"
                );
                std::thread::yield_now();
            }
            ran.fetch_add(1, Ordering::SeqCst);
            flag.store(true, Ordering::SeqCst);
        })
        .unwrap()
        .to_vec();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let mut want = Vec::new();
    logits_after(&[1, 2, 3], &mut want, tok.vocab().len());
    assert_eq!(logits, want);
}

#[test]
fn without_overlap_the_mask_comes_before_the_step() {
    let tok = tokenizer();
    let flag = Arc::new(AtomicBool::new(false));
    let mut model = pool(&tok, 1, 512);
    // The step finds the flag set at once (it waits at most ten seconds).
    model.wait_for = Some(flag.clone());
    let options = BatchOptions {
        overlap_masks: false,
        ..options(1)
    };
    let started = model.steps.clone();
    let batcher = Batcher::spawn(move || Ok::<_, String>(model.clone()), options).unwrap();
    let mut lane = batcher.lane(0).unwrap();
    lane.forward_with(&[1, 2, 3], &mut || {
        // Had the lane asked for its step, the batcher would have started it by now.
        std::thread::sleep(Duration::from_millis(50));
        assert!(started.lock().unwrap().is_empty(), "the step started first");
        flag.store(true, Ordering::SeqCst);
    })
    .unwrap();
    assert_eq!(started.lock().unwrap().len(), 1);
}

#[test]
fn a_panicking_model_is_loaded_again_and_the_other_sequences_go_on() {
    let tok = tokenizer();
    let requests = requests();
    let expected = one_at_a_time(&tok, &requests);
    let loads = Arc::new(AtomicUsize::new(0));
    let (tok2, loads2) = (tok.clone(), loads.clone());
    let restarts = Arc::new(AtomicUsize::new(0));
    let restarts2 = restarts.clone();
    let batcher = Batcher::spawn(
        move || {
            let mut model = pool(&tok2, 3, 32);
            // The first model panics in its tenth step, when every lane is generating.
            if loads2.fetch_add(1, Ordering::SeqCst) == 0 {
                model.panic_at = Some(10);
            }
            Ok::<_, String>(model)
        },
        BatchOptions {
            gather: Duration::from_millis(200),
            on_restart: Some(Arc::new(move || {
                restarts2.fetch_add(1, Ordering::SeqCst);
            })),
            ..BatchOptions::default()
        },
    )
    .unwrap();
    let got = concurrently(&tok, &batcher, 3, &requests);
    assert_eq!(loads.load(Ordering::SeqCst), 2);
    assert_eq!(restarts.load(Ordering::SeqCst), 1);
    assert_eq!(batcher.stats().restarts, 1);
    let failed: Vec<usize> = (0..got.len()).filter(|&i| got[i].is_err()).collect();
    assert!(!failed.is_empty(), "some request saw the panic");
    for (i, (got, want)) in got.iter().zip(&expected).enumerate() {
        match got {
            Ok(text) => assert_eq!(text, want, "request {i}"),
            Err(e) => assert!(e.contains("panicked"), "request {i}: {e}"),
        }
    }
    // Requests after the panic, on lanes whose sequences were replayed, are unharmed.
    let again = concurrently(&tok, &batcher, 3, &requests);
    assert_eq!(again, expected.into_iter().map(Ok).collect::<Vec<_>>());
}

#[test]
fn a_lane_is_handed_out_once_at_a_time() {
    let tok = tokenizer();
    let model = pool(&tok, 2, 64);
    let batcher = Batcher::spawn(move || Ok::<_, String>(model.clone()), options(1)).unwrap();
    let a = batcher.lane(0).unwrap();
    assert!(batcher.lane(0).is_none());
    assert!(batcher.lane(2).is_none());
    drop(a);
    assert!(batcher.lane(0).is_some());
    let mut lane = batcher.lane(1).unwrap();
    match lane.forward(&[u32::MAX]) {
        Err(ModelError::BadToken { .. }) => {}
        other => panic!("{:?}", other.map(|l| l.len())),
    }
    let failed = Batcher::spawn(|| Err::<Pool, _>("no such file"), options(1));
    assert_eq!(failed.unwrap_err(), "no such file");
}
