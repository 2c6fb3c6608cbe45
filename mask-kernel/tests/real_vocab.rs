//! The test recognizer on real vocabularies (Llama 3: 128k tokens, Gemma 3: 262k): every code
//! path of the kernel equals the brute force along seeded random walks, with walks biased
//! towards tokens that hold a quote so that strings open and close often.
//!
//! The tokenizers come from `assets/` (or `STENCIL_ASSETS`): `cargo xtask fetch-assets`.

mod common;
mod kernel_support;

use std::sync::Arc;

use common::{Checker, Lang, kernels};
use mask_kernel::Kernel;
use vocab_index::{TokenId, Vocabulary};

fn load(name: &str) -> Arc<Vocabulary> {
    let path = kernel_support::tokenizer_path(name);
    Arc::new(Vocabulary::from_file(&path).expect("the tokenizer loads"))
}

/// SplitMix64: a tiny seeded generator, enough to pick tokens.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn walks(
    vocab: &Arc<Vocabulary>,
    kernels: &[Arc<Kernel>],
    lang: Lang,
    seeds: &[u64],
    steps: usize,
) {
    let mut c = Checker::with_kernels(vocab.clone(), kernels.to_vec(), lang);
    for &seed in seeds {
        let mut rng = Rng(seed);
        let mut prefix = Vec::new();
        for _ in 0..steps {
            let mask = c.check(&prefix);
            let all: Vec<TokenId> = mask
                .ones()
                .map(|i| TokenId::new(i as u32).unwrap())
                .filter(|&t| !vocab.is_eos(t))
                .collect();
            if all.is_empty() {
                break;
            }
            let quoted: Vec<TokenId> = all
                .iter()
                .copied()
                .filter(|&t| vocab.bytes(t).contains(&b'"'))
                .collect();
            let pool = if !quoted.is_empty() && rng.below(3) == 0 {
                &quoted
            } else {
                &all
            };
            let t = pool[rng.below(pool.len())];
            prefix.extend_from_slice(vocab.bytes(t));
        }
        c.check(&prefix);
    }
}

fn run(name: &str, seeds: &[u64]) {
    let vocab = load(name);
    let kernels = kernels(&vocab);
    let langs = [
        Lang::FREE,
        Lang {
            min: 2,
            max: Some(6),
            letters_only: false,
        },
        Lang {
            min: 0,
            max: Some(12),
            letters_only: true,
        },
    ];
    for lang in langs {
        walks(&vocab, &kernels, lang, seeds, 12);
    }
}

#[test]
fn llama3() {
    run("llama3", &[1, 2]);
}

#[test]
fn gemma3() {
    // One walk per language: every check brute-forces 262k tokens.
    run("gemma3", &[3]);
}
