//! Vocabulary loading, trie building and trie walks on four real tokenizers, both backends
//! side by side: `cargo bench -p benches --bench vocab`.
//!
//! Groups (filter with a regex argument, e.g. `-- llama3/walk`):
//! - `load/<tokenizer>`: `Vocabulary::from_file` (tokenizer.json + tokenizer_config.json) and
//!   `from_tokenizer` alone (byte recovery from an already parsed tokenizer).
//! - `<tokenizer>/vocabulary_from_bytes`: `Vocabulary::new` from every id's decoded bytes
//!   (arena, offsets, the sort by bytes that trie builds reuse).
//! - `<tokenizer>/build/<backend>`: building the default trie from a loaded `Vocabulary`.
//! - `<tokenizer>/walk_all/<backend>`: a full walk with a visitor that accepts every byte and
//!   counts tokens (using the spare-id fast path, `TrieVisitor::spare_id`, so counting is
//!   branch-free: `count += (id != spare)`).
//! - `<tokenizer>/walk_mask/<backend>`: a full walk with a visitor that accepts every byte and
//!   sets each token's bit in a mask, with the spare id: what a mask kernel does when every
//!   byte is allowed. `walk_mask_no_spare`: the same visitor without the spare id (the walk
//!   then tests every node for a token, a branch that mispredicts about every other node).
//! - `<tokenizer>/walk_lowercase/<backend>`: a walk with a visitor that keeps a state stack and
//!   accepts only ASCII lowercase letters (pruning most subtrees at the first byte).
//!
//! Memory per backend is printed once per tokenizer. Needs the assets of
//! `cargo xtask fetch-assets` (or `STENCIL_ASSETS`).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use vocab_index::tokenizers::Tokenizer;
use vocab_index::{
    AnyIndex, TokenId, TokenizerConfig, TrieKind, TrieVisitor, VocabIndex, Vocabulary,
};

const TOKENIZERS: [&str; 4] = ["llama3", "qwen3", "gemma3", "llama2"];

fn tokenizer_path(name: &str) -> PathBuf {
    let root = std::env::var_os("STENCIL_ASSETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets")));
    let path = root.join("tokenizers").join(name).join("tokenizer.json");
    assert!(
        path.is_file(),
        "missing {}: run `cargo xtask fetch-assets`",
        path.display()
    );
    path
}

/// Accepts every byte, counts tokens (the spare id is not counted).
struct CountAll {
    count: usize,
    spare: TokenId,
}

impl TrieVisitor for CountAll {
    #[inline(always)]
    fn push_byte(&mut self, _byte: u8) -> bool {
        true
    }

    #[inline(always)]
    fn pop_bytes(&mut self, _n: usize) {}

    #[inline(always)]
    fn token(&mut self, id: TokenId) {
        self.count += usize::from(id != self.spare);
    }

    #[inline(always)]
    fn spare_id(&self) -> Option<TokenId> {
        Some(self.spare)
    }
}

/// Accepts every byte, sets a bit per token; the spare id (the vocabulary's length), if any,
/// makes the walk branch-free on "has a token".
struct MaskAll {
    words: Vec<u64>,
    spare: Option<TokenId>,
}

impl TrieVisitor for MaskAll {
    #[inline(always)]
    fn push_byte(&mut self, _byte: u8) -> bool {
        true
    }

    #[inline(always)]
    fn pop_bytes(&mut self, _n: usize) {}

    #[inline(always)]
    fn token(&mut self, id: TokenId) {
        let i = id.as_usize();
        self.words[i / 64] |= 1 << (i % 64);
    }

    #[inline(always)]
    fn spare_id(&self) -> Option<TokenId> {
        self.spare
    }
}

/// Accepts ASCII lowercase letters only, keeping a stack of states like an automaton would.
struct Lowercase {
    stack: Vec<u32>,
    count: usize,
}

impl TrieVisitor for Lowercase {
    #[inline(always)]
    fn push_byte(&mut self, byte: u8) -> bool {
        if byte.is_ascii_lowercase() {
            let state = self.stack.last().copied().unwrap_or(0);
            self.stack
                .push(state.wrapping_mul(31).wrapping_add(u32::from(byte)));
            true
        } else {
            false
        }
    }

    #[inline(always)]
    fn pop_bytes(&mut self, n: usize) {
        self.stack.truncate(self.stack.len() - n);
    }

    #[inline(always)]
    fn token(&mut self, _id: TokenId) {
        self.count += 1;
    }
}

fn load(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500));
    for name in TOKENIZERS {
        let path = tokenizer_path(name);
        group.bench_function(format!("{name}/from_file"), |b| {
            b.iter(|| Vocabulary::from_file(black_box(&path)).unwrap())
        });
        let tokenizer = Tokenizer::from_file(&path).unwrap();
        let config = TokenizerConfig::from_file(path.with_file_name("tokenizer_config.json")).ok();
        group.bench_function(format!("{name}/from_tokenizer"), |b| {
            b.iter(|| Vocabulary::from_tokenizer(black_box(&tokenizer), config.as_ref()).unwrap())
        });
    }
    group.finish();
}

fn tries(c: &mut Criterion) {
    for name in TOKENIZERS {
        let vocab = Vocabulary::from_file(tokenizer_path(name)).unwrap();
        let mut group = c.benchmark_group(name);
        let decoded: Vec<Vec<u8>> = vocab.iter().map(|(_, bytes)| bytes.to_vec()).collect();
        group.bench_function("vocabulary_from_bytes", |b| {
            b.iter(|| Vocabulary::new(black_box(&decoded), []).unwrap())
        });
        for kind in TrieKind::ALL {
            let trie = AnyIndex::new(kind, &vocab).unwrap();
            println!(
                "{name}/{kind}: {} tokens, {} nodes, {} bytes ({:.1} bytes/token)",
                trie.num_tokens(),
                trie.num_nodes(),
                trie.memory_bytes(),
                trie.memory_bytes() as f64 / trie.num_tokens() as f64
            );
            group.bench_function(format!("build/{kind}"), |b| {
                b.iter(|| AnyIndex::new(kind, black_box(&vocab)).unwrap())
            });
            let spare = TokenId::new(vocab.len() as u32).unwrap();
            group.bench_function(format!("walk_all/{kind}"), |b| {
                b.iter(|| {
                    let mut v = CountAll { count: 0, spare };
                    trie.walk(&mut v);
                    assert_eq!(v.count, trie.num_tokens());
                    black_box(v.count)
                })
            });
            for (bench, spare) in [
                ("walk_mask", TokenId::new(vocab.len() as u32)),
                ("walk_mask_no_spare", None),
            ] {
                let mut mask = MaskAll {
                    words: vec![0; vocab.len() / 64 + 1],
                    spare,
                };
                group.bench_function(format!("{bench}/{kind}"), |b| {
                    b.iter(|| {
                        mask.words.fill(0);
                        trie.walk(&mut mask);
                        black_box(&mask.words);
                    })
                });
            }
            let mut v = Lowercase {
                stack: Vec::with_capacity(1024),
                count: 0,
            };
            group.bench_function(format!("walk_lowercase/{kind}"), |b| {
                b.iter(|| {
                    v.count = 0;
                    trie.walk(&mut v);
                    black_box(v.count)
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, tries, load);
criterion_main!(benches);
