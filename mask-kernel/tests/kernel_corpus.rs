//! Every instance of the JSONSchemaBench sample, replayed token by token under each real
//! tokenizer's own tokenization (Llama 3, Qwen 3, Gemma 3, Llama 2).
//!
//! A valid instance must be accepted: before every token the mask allows it, the commit
//! succeeds, and end of sequence is allowed at the end. An invalid instance must be rejected
//! somewhere: a token outside the mask (its commit fails and the mask at that point excludes
//! it) or no end of sequence at the end. Token by token and byte by byte (the matcher fed the
//! whole text) must always agree; where the byte-level verdict itself differs from the data's
//! `valid` flag, the case must be listed in [`KNOWN_DISAGREEMENTS`] with the reason (a ratchet:
//! an unlisted disagreement fails, and so does a listed one that no longer occurs).
//!
//! Schemas that do not compile (unsupported keywords, limits) are skipped and printed with the
//! reason. Run with `--nocapture` to see them and the per-tokenizer counts.
//!
//! The masks themselves are held to a record: for Llama 3 and Gemma 3, a digest of every mask
//! computed while replaying the valid instances of each file must equal the one in
//! `tests/data/mask_digests/` (a change to how masks are computed must not change one bit of
//! them). `STENCIL_RECORD_MASK_DIGESTS=1` writes the record instead, for a deliberate change
//! of what a schema allows.

mod kernel_support;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use kernel_support::{Tok, shared_data, tok};
use mask_kernel::{FixedBitSet, MaskCache, MaskError, Session};
use schema_compiler::corpus::{self, Instance};
use schema_compiler::{Grammar, Matcher, Options};

/// Instances whose verdict under the generation grammar differs from the data's `valid` flag,
/// as (file name relative to the corpus, instance index, reason). The kernel is not involved:
/// the matcher fed the bytes gives the same verdict.
const KNOWN_DISAGREEMENTS: &[(&str, usize, &str)] = &[];

struct Compiled {
    file: String,
    grammar: Arc<Grammar>,
    tests: Vec<Instance>,
}

struct Corpus {
    compiled: Vec<Compiled>,
    /// (file, reason) of the schemas that do not compile.
    skipped: Vec<(String, String)>,
    /// (file, instance) whose byte-level verdict differs from `valid`.
    disagreements: BTreeSet<(String, usize)>,
}

fn corpus() -> Option<&'static Corpus> {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    let data = shared_data()?;
    Some(CORPUS.get_or_init(|| {
        let dir = data.join("jsonschemabench-sample");
        let loaded = corpus::load(std::slice::from_ref(&dir)).expect("the corpus loads");
        // The sample's manifest is the one file that holds no case.
        assert!(
            loaded
                .skipped
                .iter()
                .all(|s| s.file.ends_with("MANIFEST.json")),
            "{:?}",
            loaded.skipped
        );
        let cases = loaded.cases;
        assert!(
            cases.len() > 500,
            "{} cases in {}",
            cases.len(),
            dir.display()
        );
        let prefix = format!("{}/", dir.display());
        let mut compiled = Vec::new();
        let mut skipped = Vec::new();
        let mut disagreements = BTreeSet::new();
        for case in cases {
            let file = case
                .file
                .strip_prefix(&prefix)
                .unwrap_or(&case.file)
                .to_owned();
            match Grammar::compile(&case.schema, &Options::generation()) {
                Ok(g) => {
                    let g = Arc::new(g);
                    for (i, t) in case.tests.iter().enumerate() {
                        if byte_verdict(&g, &t.text) != t.valid {
                            disagreements.insert((file.clone(), i));
                        }
                    }
                    compiled.push(Compiled {
                        file,
                        grammar: g,
                        tests: case.tests,
                    });
                }
                Err(e) => skipped.push((file, e.to_string())),
            }
        }
        eprintln!(
            "corpus: {} schemas compile, {} skipped:",
            compiled.len(),
            skipped.len()
        );
        for (file, reason) in &skipped {
            eprintln!("  skipped {file}: {reason}");
        }
        Corpus {
            compiled,
            skipped,
            disagreements,
        }
    }))
}

/// Whether the matcher fed the whole text accepts it.
fn byte_verdict(g: &Arc<Grammar>, text: &str) -> bool {
    let mut m = Matcher::new(g.clone());
    m.push_bytes(text.as_bytes()).is_ok() && m.is_accepting()
}

/// How a replay ended.
#[derive(Debug, PartialEq, Eq)]
enum Replay {
    /// Every token allowed and committed, end of sequence allowed and committed.
    Accepted,
    /// Token `at` is outside the mask (and its commit failed).
    Refused { at: usize },
    /// Every token committed, but end of sequence is not allowed.
    NoEnd,
}

/// Replays `ids`, with a mask before every token when `every_mask` (else only where a commit
/// fails, and at the end). Panics when the mask and the commits disagree.
fn replay(
    tok: &Tok,
    g: &Arc<Grammar>,
    cache: &mut MaskCache,
    ids: &[vocab_index::TokenId],
    every_mask: bool,
    digest: &mut u64,
    what: &dyn Fn() -> String,
) -> Replay {
    let vocab = &tok.vocab;
    let mut s = Session::new(tok.flat.clone(), Matcher::new(g.clone()));
    let mut mask = FixedBitSet::new();
    let mut masked = |s: &mut Session<_>, mask: &mut FixedBitSet| {
        match s.mask(cache, mask) {
            Ok(_) | Err(MaskError::EmptyMask { .. }) => {}
            Err(e) => panic!("{}: mask: {e}", what()),
        }
        *digest = fold_mask(*digest, mask);
    };
    for (i, &id) in ids.iter().enumerate() {
        if every_mask {
            masked(&mut s, &mut mask);
        }
        match s.commit(id) {
            Ok(()) => {
                assert!(
                    !every_mask || mask.contains(id.as_usize()),
                    "{}: token {i} ({:?}) commits but is outside the mask",
                    what(),
                    String::from_utf8_lossy(vocab.bytes(id))
                );
            }
            Err(MaskError::TokenNotAllowed { .. }) => {
                if !every_mask {
                    masked(&mut s, &mut mask);
                }
                assert!(
                    !mask.contains(id.as_usize()),
                    "{}: token {i} ({:?}) is in the mask but its commit fails",
                    what(),
                    String::from_utf8_lossy(vocab.bytes(id))
                );
                return Replay::Refused { at: i };
            }
            Err(e) => panic!("{}: token {i}: {e}", what()),
        }
    }
    masked(&mut s, &mut mask);
    let eos = vocab.eos_ids()[0];
    let allowed = mask.contains(eos.as_usize());
    assert_eq!(
        allowed,
        s.is_accepting(),
        "{}: end of sequence in the mask iff the text is complete",
        what()
    );
    assert_eq!(
        s.commit(eos).is_ok(),
        allowed,
        "{}: committing end of sequence",
        what()
    );
    if allowed {
        Replay::Accepted
    } else {
        Replay::NoEnd
    }
}

fn run(name: &'static str) {
    let tok = tok(name);
    let Some(corpus) = corpus() else { return };
    let (mut accepted, mut refused, mut no_end) = (0, 0, 0);
    let mut tokens = 0;
    let mut failures = Vec::new();
    let mut masks = BTreeMap::new();
    for c in &corpus.compiled {
        // One cache per grammar, shared by all its instances.
        let mut cache = MaskCache::default();
        let (mut digest, mut ignored) = (FNV_OFFSET, FNV_OFFSET);
        for (i, t) in c.tests.iter().enumerate() {
            let what = || format!("{name}: {} #{i} ({})", c.file, t.text);
            let ids = tok.encode(&t.text);
            let decoded = tok.decode(&ids);
            if decoded != t.text.as_bytes() {
                failures.push(format!(
                    "{}: tokenization changes the text to {:?}",
                    what(),
                    String::from_utf8_lossy(&decoded)
                ));
                continue;
            }
            tokens += ids.len();
            let r = replay(
                &tok,
                &c.grammar,
                &mut cache,
                &ids,
                t.valid,
                if t.valid { &mut digest } else { &mut ignored },
                &what,
            );
            match r {
                Replay::Accepted => accepted += 1,
                Replay::Refused { .. } => refused += 1,
                Replay::NoEnd => no_end += 1,
            }
            let bytes = byte_verdict(&c.grammar, &t.text);
            if (r == Replay::Accepted) != bytes {
                failures.push(format!(
                    "{}: token by token {r:?}, byte by byte {}",
                    what(),
                    if bytes { "accepted" } else { "rejected" }
                ));
            }
            let known = corpus.disagreements.contains(&(c.file.clone(), i));
            if (r == Replay::Accepted) != t.valid && !known {
                failures.push(format!(
                    "{}: {} instance {r:?}",
                    what(),
                    if t.valid { "valid" } else { "invalid" }
                ));
            }
        }
        masks.insert(c.file.clone(), digest);
    }
    if matches!(name, "llama3" | "gemma3") {
        failures.extend(check_digests(name, &masks));
    }
    eprintln!(
        "{name}: {} schemas ({} skipped), {accepted} accepted, {refused} refused at a token, \
         {no_end} without end of sequence, {tokens} tokens",
        corpus.compiled.len(),
        corpus.skipped.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// Folds a mask's bits into a running FNV-1a digest.
fn fold_mask(mut h: u64, mask: &FixedBitSet) -> u64 {
    for &block in mask.as_slice() {
        for byte in (block as u64).to_le_bytes() {
            h = (h ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Compares each file's mask digest with the record for `name` (or writes the record under
/// `STENCIL_RECORD_MASK_DIGESTS=1`); one line per difference.
fn check_digests(name: &str, masks: &BTreeMap<String, u64>) -> Vec<String> {
    let path = format!(
        "{}/tests/data/mask_digests/{name}.tsv",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut text = String::new();
    for (file, digest) in masks {
        writeln!(text, "{file}\t{digest:016x}").unwrap();
    }
    if std::env::var_os("STENCIL_RECORD_MASK_DIGESTS").is_some_and(|v| v == "1") {
        std::fs::write(&path, text).expect("the record is written");
        return Vec::new();
    }
    let recorded = std::fs::read_to_string(&path).expect("the mask digests are checked in");
    let recorded: BTreeMap<&str, &str> = recorded
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .collect();
    let mut out = Vec::new();
    for (file, digest) in masks {
        let now = format!("{digest:016x}");
        match recorded.get(file.as_str()) {
            Some(&was) if was == now => {}
            Some(&was) => out.push(format!(
                "{name}: {file}: masks changed (digest {was} -> {now})"
            )),
            None => out.push(format!("{name}: {file}: no recorded digest")),
        }
    }
    for file in recorded.keys().filter(|f| !masks.contains_key(**f)) {
        out.push(format!("{name}: {file}: recorded but no longer replayed"));
    }
    out
}

#[test]
fn known_disagreements_are_current() {
    let Some(corpus) = corpus() else { return };
    let listed: BTreeSet<(String, usize)> = KNOWN_DISAGREEMENTS
        .iter()
        .map(|&(f, i, _)| (f.to_owned(), i))
        .collect();
    let new: Vec<_> = corpus.disagreements.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&corpus.disagreements).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "byte-level verdicts that differ from `valid`: new {new:?}, no longer occurring {gone:?}"
    );
}

#[test]
fn llama3_replays_the_corpus() {
    run("llama3");
}

#[test]
fn qwen3_replays_the_corpus() {
    run("qwen3");
}

#[test]
fn gemma3_replays_the_corpus() {
    run("gemma3");
}

#[test]
fn llama2_replays_the_corpus() {
    run("llama2");
}
