//! The kernel's fast paths never change a mask, on real tokenizers and the real schema compiler.
//!
//! For hand-written schemas covering each kind of lexeme and frame, at every prefix of a valid
//! instance's text (compact, or pretty-printed under `Whitespace::Pretty`, where the whitespace
//! allowed depends on the nesting depth) and along seeded random walks of allowed tokens, the mask computed
//! with every fast path on (cached in a cache shared by all sessions of the grammar, in a tiny
//! cache that evicts, uncached; flat and double-array tries) equals the mask with every fast
//! path off and, at a chosen subset of states, the brute force (each token fed byte by byte to
//! its own clone of a matcher fed the prefix).
//!
//! Llama 3 and Gemma 3 run everything; Qwen 3 and Llama 2 run a subset of the schemas. Set
//! `STENCIL_KERNEL_BRUTE_ALL=1` to brute-force every state (slow: minutes).

mod kernel_support;

use std::sync::Arc;

use kernel_support::cases::{Case, cases};
use kernel_support::{
    Plain, Rng, Tok, brute_mask, diff, grammar, grammar_with_options, recognizer_at, spelled, tok,
};
use mask_kernel::{FixedBitSet, MaskCache, MaskError, MaskStats, Session};
use schema_compiler::{Grammar, Matcher, Options, PropertyOrder, Whitespace};
use vocab_index::TokenId;

/// Per grammar and tokenizer: caches shared by every session, one per trie backend.
struct Ctx {
    tok: Arc<Tok>,
    g: Arc<Grammar>,
    what: String,
    shared: [MaskCache; 2],
    tiny: [MaskCache; 2],
    states: usize,
    brute: usize,
}

impl Ctx {
    fn new(tok: Arc<Tok>, case: &Case, options: &Options) -> Ctx {
        let tiny = tok.vocab.len().div_ceil(8) + 256;
        let (ws, order) = (options.whitespace, options.property_order);
        Ctx {
            what: format!("{} / {} / {ws:?} / {order:?}", tok.name, case.name),
            g: grammar_with_options(&case.schema, options),
            tok,
            shared: [MaskCache::default(), MaskCache::default()],
            tiny: [MaskCache::new(tiny), MaskCache::new(tiny)],
            states: 0,
            brute: 0,
        }
    }

    /// Checks every path at the state after `prefix`; `live` is a session that reached it by
    /// committing tokens (its mask is checked too). Returns the expected mask.
    fn check(
        &mut self,
        prefix: &[u8],
        brute: bool,
        live: Option<&mut Session<Matcher>>,
    ) -> FixedBitSet {
        self.states += 1;
        let vocab = self.tok.vocab.clone();
        let at = || format!("{} after {:?}", self.what, String::from_utf8_lossy(prefix));
        let mut want = FixedBitSet::new();
        let mut slow = Session::new(self.tok.flat.clone(), Plain(recognizer_at(&self.g, prefix)));
        let slow_r = slow.mask_uncached(&mut want);
        if brute {
            self.brute += 1;
            let b = brute_mask(&self.g, &vocab, prefix);
            assert!(
                want == b,
                "{}: slow path vs brute force: {}",
                at(),
                diff(&vocab, &want, &b)
            );
        }
        if let Err(e) = &slow_r {
            assert!(matches!(e, MaskError::EmptyMask { .. }), "{}: {e}", at());
        }
        let mut got = FixedBitSet::new();
        let expect = |how: &str, r: Result<MaskStats, MaskError>, got: &FixedBitSet| match r {
            Ok(_) => assert!(
                *got == want,
                "{}: {how}: {}",
                at(),
                diff(&vocab, got, &want)
            ),
            Err(MaskError::EmptyMask { .. }) => {
                assert!(want.is_clear(), "{}: {how}: unexpected empty mask", at())
            }
            Err(e) => panic!("{}: {how}: {e}", at()),
        };
        let mut plain_da = Session::new(
            self.tok.double_array.clone(),
            Plain(recognizer_at(&self.g, prefix)),
        );
        let r = plain_da.mask_uncached(&mut got);
        expect("slow path, double array", r, &got);
        for (k, kernel) in self.tok.kernels().into_iter().enumerate() {
            let kind = kernel.kind().name();
            let mut s = Session::new(kernel.clone(), recognizer_at(&self.g, prefix));
            let r = s.mask(&mut self.shared[k], &mut got);
            expect(&format!("{kind}, shared cache"), r, &got);
            let r = s.mask(&mut self.shared[k], &mut got);
            assert!(
                r.as_ref().map_or(true, |st| st.cache_hit),
                "{}: the second mask of a state is a cache hit",
                at()
            );
            expect(&format!("{kind}, shared cache, again"), r, &got);
            let r = s.mask(&mut self.tiny[k], &mut got);
            expect(&format!("{kind}, tiny cache"), r, &got);
            let r = s.mask_uncached(&mut got);
            expect(&format!("{kind}, uncached"), r, &got);
            assert_eq!(s.recognizer().len(), prefix.len(), "{}: restored", at());
        }
        if let Some(live) = live {
            let k = (live.kernel().kind() != self.tok.flat.kind()) as usize;
            let r = live.mask(&mut self.shared[k], &mut got);
            expect("the walking session, shared cache", r, &got);
            let r = live.mask_uncached(&mut got);
            expect("the walking session, uncached", r, &got);
        }
        want
    }
}

fn brute_all() -> bool {
    std::env::var_os("STENCIL_KERNEL_BRUTE_ALL").is_some_and(|v| v != "0" && !v.is_empty())
}

/// Every prefix of every valid instance (brute force at every `stride`-th), then `walks`
/// seeded walks of `steps` random allowed tokens from random prefixes (brute force at the
/// last state of each).
fn run_case(
    tok: &Arc<Tok>,
    case: &Case,
    options: &Options,
    stride: usize,
    walks: u64,
    steps: usize,
) -> (usize, usize) {
    let mut ctx = Ctx::new(tok.clone(), case, options);
    let ws = options.whitespace;
    let stride = if brute_all() { 1 } else { stride };
    // Under `PropertyOrder::Schema`, the instances whose members are in the schema's order.
    let valid: Vec<String> = case
        .valid
        .iter()
        .map(|t| spelled(t, ws))
        .filter(|t| Matcher::new(ctx.g.clone()).push_bytes(t.as_bytes()).is_ok())
        .collect();
    if valid.is_empty() {
        assert_eq!(
            options.property_order,
            PropertyOrder::Schema,
            "{}",
            ctx.what
        );
        return (0, 0);
    }
    for text in &valid {
        let text = text.as_bytes();
        for i in 0..=text.len() {
            let brute = i % stride == 0 || i == text.len();
            ctx.check(&text[..i], brute, None);
        }
        let mut m = FixedBitSet::new();
        let mut s = Session::new(tok.flat.clone(), recognizer_at(&ctx.g, text));
        s.mask_uncached(&mut m).unwrap();
        assert!(
            tok.vocab.eos_ids().iter().all(|e| m.contains(e.as_usize())),
            "{}: end of sequence after a valid instance",
            ctx.what
        );
    }
    let vocab = tok.vocab.clone();
    for seed in 0..walks {
        let mut rng = Rng(seed ^ 0x5eed);
        let text = valid[rng.below(valid.len())].as_bytes();
        let mut prefix = text[..rng.below(text.len())].to_vec();
        let kernel = tok.kernels()[rng.below(2)].clone();
        let mut live = Session::new(kernel, recognizer_at(&ctx.g, &prefix));
        for step in 0..=steps {
            let brute = step == steps || brute_all();
            let mask = ctx.check(&prefix, brute, Some(&mut live));
            if step == steps {
                break;
            }
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
                .filter(|&t| vocab.bytes(t).iter().any(|b| b"\",:}]".contains(b)))
                .collect();
            let pool = if !quoted.is_empty() && rng.below(2) == 0 {
                &quoted
            } else {
                &all
            };
            let t = pool[rng.below(pool.len())];
            live.commit(t).unwrap();
            prefix.extend_from_slice(vocab.bytes(t));
        }
    }
    eprintln!(
        "{}: {} states, {} brute-forced",
        ctx.what, ctx.states, ctx.brute
    );
    (ctx.states, ctx.brute)
}

fn run(name: &'static str, only: Option<&[&str]>, stride: usize, walks: u64, steps: usize) {
    run_with(
        Options::generation().whitespace,
        name,
        only,
        stride,
        walks,
        steps,
    );
}

fn run_with(
    ws: Whitespace,
    name: &'static str,
    only: Option<&[&str]>,
    stride: usize,
    walks: u64,
    steps: usize,
) {
    let options = Options::generation().whitespace(ws);
    run_options(&options, name, only, stride, walks, steps);
}

fn run_options(
    options: &Options,
    name: &'static str,
    only: Option<&[&str]>,
    stride: usize,
    walks: u64,
    steps: usize,
) -> usize {
    let tok = tok(name);
    let mut states = 0;
    for case in cases() {
        if only.is_some_and(|o| !o.contains(&case.name)) {
            continue;
        }
        states += run_case(&tok, &case, options, stride, walks, steps).0;
    }
    states
}

/// Members held to the schema's order: the key masks (and the kernel's cache keys and splits
/// inside keys) follow the order, the required keys and `minProperties`.
#[test]
fn llama3_schema_order_masks_equal_the_brute_force() {
    let options = Options::generation().property_order(PropertyOrder::Schema);
    let states = run_options(&options, "llama3", None, 4, 3, 8);
    assert!(states > 1000, "only {states} states checked");
}

#[test]
fn gemma3_schema_order_masks_equal_the_brute_force() {
    let options = Options::generation().property_order(PropertyOrder::Schema);
    run_options(&options, "gemma3", Some(ORDERED), 6, 2, 8);
}

/// The cases with objects of several listed members.
const ORDERED: &[&str] = &[
    "nested objects with defaults",
    "oneOf and anyOf of objects",
    "many literal keys",
    "bounded names",
];

#[test]
fn llama3_masks_equal_the_brute_force() {
    run("llama3", None, 4, 3, 8);
}

#[test]
fn gemma3_masks_equal_the_brute_force() {
    run("gemma3", None, 6, 2, 8);
}

const SUBSET: &[&str] = &[
    "free string",
    "alternatives whose strings share a prefix",
    "bounded strings",
    "many literal keys",
    "unique items",
];

#[test]
fn qwen3_masks_equal_the_brute_force() {
    run("qwen3", Some(SUBSET), 8, 1, 6);
}

#[test]
fn llama2_masks_equal_the_brute_force() {
    run("llama2", Some(SUBSET), 8, 1, 6);
}

/// Pretty-printed documents: the whitespace allowed after `{`, `[`, `,` and before `}`, `]`
/// depends on the depth, and the masks (cached across states of every depth) must follow it.
#[test]
fn llama3_pretty_masks_equal_the_brute_force() {
    run_with(Whitespace::Pretty, "llama3", None, 4, 3, 8);
}

#[test]
fn gemma3_pretty_masks_equal_the_brute_force() {
    run_with(Whitespace::Pretty, "gemma3", Some(SUBSET), 6, 2, 8);
}

/// The policy that lets a model choose its layout (bounded runs of spaces and line breaks).
#[test]
fn llama3_flexible_masks_equal_the_brute_force() {
    let ws = Whitespace::Flexible {
        max_newlines: 1,
        max_spaces: 16,
    };
    run_with(ws, "llama3", Some(SUBSET), 6, 2, 8);
}

/// The schemas of issue 20, section 1, replayed token by token under each tokenizer's own
/// tokenization: before each token the mask allows it, and end of sequence is allowed at the
/// end. `{"t":"abXYZ"}` was refused after `"ab`, where the first alternative's value ends
/// and the second's goes on.
#[test]
fn prefix_sharing_alternatives_are_accepted_token_by_token() {
    // (property, keyword, the shorter value, the longer value)
    let pairs = [
        ("t", "const", "ab", "abXYZ"),
        ("t", "enum", "ab", "abXYZ"),
        ("type", "enum", "Feature", "FeatureCollection"),
    ];
    let mut checked = 0;
    for name in ["llama3", "gemma3", "qwen3", "llama2"] {
        let t = tok(name);
        for comb in ["anyOf", "oneOf"] {
            for (key, keyword, short, long) in pairs {
                let value = |v: &str| {
                    if keyword == "enum" {
                        serde_json::json!({"enum": [v]})
                    } else {
                        serde_json::json!({"const": v})
                    }
                };
                let alt = |v: &str| serde_json::json!({"type": "object", "required": [key], "properties": {key: value(v)}});
                let schema = serde_json::json!({ comb: [alt(short), alt(long)] });
                let g = grammar(&schema);
                for v in [long, short] {
                    let text = serde_json::json!({ key: v }).to_string();
                    let mut s = Session::new(t.flat.clone(), Matcher::new(g.clone()));
                    let mut cache = MaskCache::default();
                    let mut mask = FixedBitSet::new();
                    let mut ids = t.encode(&text);
                    ids.push(t.vocab.eos_ids()[0]);
                    for (i, &id) in ids.iter().enumerate() {
                        s.mask(&mut cache, &mut mask).unwrap();
                        assert!(
                            mask.contains(id.as_usize()),
                            "{name}: {text} under {schema}: token {i} ({:?}) is not allowed",
                            String::from_utf8_lossy(t.vocab.bytes(id))
                        );
                        s.commit(id).unwrap();
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 0);
}
