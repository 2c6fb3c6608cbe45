//! Shared pieces of the kernel tests over the real schema compiler: assets, tokenizers,
//! kernels (built once per process), a wrapper that turns every fast path off, and the
//! brute-force mask.

#![allow(dead_code)]

pub mod cases;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use mask_kernel::{FixedBitSet, Kernel, Recognizer};
use schema_compiler::{Grammar, Matcher, Options, Whitespace};
use vocab_index::{TokenId, TrieKind, Vocabulary};

/// The tokenizers under `assets/tokenizers`.
pub const TOKENIZERS: [&str; 4] = ["llama3", "qwen3", "gemma3", "llama2"];

/// `STENCIL_ASSETS`, else the workspace's `assets/`.
pub fn assets() -> PathBuf {
    std::env::var_os("STENCIL_ASSETS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")))
}

/// `STENCIL_SHARED_DATA`, else `shared/data` next to the workspace; `None` (with the reason
/// printed, so a skipped test says why) when the JSONSchemaBench sample is not there.
pub fn shared_data() -> Option<PathBuf> {
    let dir = std::env::var_os("STENCIL_SHARED_DATA")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/data"))
        });
    if dir.join("jsonschemabench-sample").is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipped: the JSONSchemaBench sample is not at {} (set STENCIL_SHARED_DATA to the \
             shared/data directory)",
            dir.join("jsonschemabench-sample").display()
        );
        None
    }
}

/// The `tokenizer.json` of tokenizer `name` in the assets; panics, naming the command that
/// fetches it, when it is missing.
pub fn tokenizer_path(name: &str) -> PathBuf {
    let path = assets()
        .join("tokenizers")
        .join(name)
        .join("tokenizer.json");
    assert!(
        path.is_file(),
        "{} not found: run `cargo xtask fetch-assets` (or set STENCIL_ASSETS)",
        path.display()
    );
    path
}

/// One tokenizer's vocabulary, tokenizer and kernels, loaded once per process.
pub struct Tok {
    /// Its name.
    pub name: &'static str,
    /// The vocabulary.
    pub vocab: Arc<Vocabulary>,
    /// The `tokenizers` tokenizer, for encoding instances.
    pub tokenizer: tokenizers::Tokenizer,
    /// The kernel over a flat trie.
    pub flat: Arc<Kernel>,
    /// The kernel over a double-array trie.
    pub double_array: Arc<Kernel>,
}

impl Tok {
    /// Both kernels.
    pub fn kernels(&self) -> [&Arc<Kernel>; 2] {
        [&self.flat, &self.double_array]
    }

    /// The token ids of `text` under the tokenizer's own tokenization (no special tokens).
    pub fn encode(&self, text: &str) -> Vec<TokenId> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .unwrap_or_else(|e| panic!("{}: encoding {text:?}: {e}", self.name));
        enc.get_ids()
            .iter()
            .map(|&i| TokenId::new(i).expect("id in range"))
            .collect()
    }

    /// The bytes of `ids`, concatenated.
    pub fn decode(&self, ids: &[TokenId]) -> Vec<u8> {
        ids.iter()
            .flat_map(|&i| self.vocab.bytes(i).iter().copied())
            .collect()
    }
}

/// The tokenizer `name` (one of [`TOKENIZERS`]), loaded on first use.
pub fn tok(name: &'static str) -> Arc<Tok> {
    type Cells = HashMap<&'static str, Arc<OnceLock<Arc<Tok>>>>;
    static TOKS: OnceLock<Mutex<Cells>> = OnceLock::new();
    let cell = TOKS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(name)
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let path = tokenizer_path(name);
        let vocab = Arc::new(Vocabulary::from_file(&path).expect("the vocabulary loads"));
        let tokenizer = vocab_index::mid_text_tokenizer(&path).expect("the tokenizer loads");
        for &eos in vocab.eos_ids() {
            assert!(
                vocab.is_special(eos),
                "{name}: end of sequence {eos:?} is not special; the brute force assumes it"
            );
        }
        let flat = Arc::new(Kernel::new(vocab.clone(), TrieKind::Flat).unwrap());
        let double_array = Arc::new(Kernel::new(vocab.clone(), TrieKind::DoubleArray).unwrap());
        Arc::new(Tok {
            name,
            vocab,
            tokenizer,
            flat,
            double_array,
        })
    })
    .clone()
}

/// Compiles `schema` for generation.
pub fn grammar(schema: &serde_json::Value) -> Arc<Grammar> {
    grammar_with(schema, Options::generation().whitespace)
}

/// Compiles `schema` for generation under the whitespace policy `ws`.
pub fn grammar_with(schema: &serde_json::Value, ws: Whitespace) -> Arc<Grammar> {
    grammar_with_options(schema, &Options::generation().whitespace(ws))
}

/// Compiles `schema` with `options`.
pub fn grammar_with_options(schema: &serde_json::Value, options: &Options) -> Arc<Grammar> {
    Arc::new(
        Grammar::compile(schema, options)
            .unwrap_or_else(|e| panic!("schema {schema} does not compile: {e}")),
    )
}

/// A valid instance's compact text as `ws` spells it (pretty-printed under
/// [`Whitespace::Pretty`], as written otherwise), numbers kept as written.
pub fn spelled(text: &str, ws: Whitespace) -> String {
    match ws {
        Whitespace::Pretty => schema_compiler::json_text::pretty(text, 2),
        _ => text.to_string(),
    }
}

/// A recognizer at the state after `prefix`.
pub fn recognizer_at(g: &Arc<Grammar>, prefix: &[u8]) -> Matcher {
    let mut r = Matcher::new(g.clone());
    for (i, &b) in prefix.iter().enumerate() {
        assert!(
            r.try_push_byte(b),
            "byte {i} of {:?} refused",
            String::from_utf8_lossy(prefix)
        );
    }
    r
}

/// Forwards the three required methods only: no cache key, no split, so the kernel walks the
/// whole trie with the full recognizer.
#[derive(Debug, Clone)]
pub struct Plain<R>(pub R);

impl<R: Recognizer> Recognizer for Plain<R> {
    fn try_push_byte(&mut self, byte: u8) -> bool {
        self.0.try_push_byte(byte)
    }
    fn pop_bytes(&mut self, n: usize) {
        self.0.pop_bytes(n)
    }
    fn is_accepting(&self) -> bool {
        self.0.is_accepting()
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
}

/// The brute-force mask after `prefix`: a fresh matcher is fed the prefix, its undo history is
/// dropped, and each token that is neither special nor empty is fed byte by byte to its own
/// clone; end of sequence exactly when the prefix is a complete document.
pub fn brute_mask(g: &Arc<Grammar>, vocab: &Vocabulary, prefix: &[u8]) -> FixedBitSet {
    let mut base = Matcher::new(g.clone());
    base.push_bytes(prefix)
        .unwrap_or_else(|i| panic!("byte {i} of {:?} refused", String::from_utf8_lossy(prefix)));
    base.forget_history();
    let mut out = FixedBitSet::with_capacity(vocab.len());
    for (id, bytes) in vocab.iter() {
        if bytes.is_empty() || vocab.is_special(id) {
            continue;
        }
        let mut m = base.clone();
        if m.push_bytes(bytes).is_ok() {
            out.insert(id.as_usize());
        }
    }
    if base.is_accepting() {
        for &id in vocab.eos_ids() {
            out.insert(id.as_usize());
        }
    }
    out
}

/// Every byte a matcher after `prefix` accepts next (each tried on a fresh clone).
pub fn next_bytes(m: &Matcher) -> Vec<u8> {
    (0..=255u8)
        .filter(|&b| m.clone().try_push_byte(b))
        .collect()
}

/// The forced bytes after `prefix` by trying all 256 bytes at each step.
pub fn brute_forced(g: &Arc<Grammar>, prefix: &[u8], max: usize) -> Vec<u8> {
    let mut m = Matcher::new(g.clone());
    m.push_bytes(prefix).expect("a valid prefix");
    let mut out = Vec::new();
    while out.len() < max && !m.is_accepting() {
        match next_bytes(&m)[..] {
            [b] => {
                assert!(m.try_push_byte(b));
                out.push(b);
            }
            _ => break,
        }
    }
    out
}

/// A readable difference between two masks (at most 20 tokens each way).
pub fn diff(vocab: &Vocabulary, got: &FixedBitSet, want: &FixedBitSet) -> String {
    let name = |i: usize| {
        let id = TokenId::new(i as u32).unwrap();
        format!("{i}:{:?}", String::from_utf8_lossy(vocab.bytes(id)))
    };
    let extra: Vec<String> = got.difference(want).take(20).map(name).collect();
    let missing: Vec<String> = want.difference(got).take(20).map(name).collect();
    format!(
        "{} extra {extra:?}, {} missing {missing:?}",
        got.difference(want).count(),
        want.difference(got).count()
    )
}

/// SplitMix64: a tiny seeded generator.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
