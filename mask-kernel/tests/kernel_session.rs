//! Session behaviour on real schemas and tokenizers: rollback then recommit replays the same
//! masks, and `forced_bytes` returns exactly the bytes that are the only continuation.

mod kernel_support;

use std::sync::Arc;

use kernel_support::cases::cases;
use kernel_support::{
    Rng, Tok, brute_forced, diff, grammar, grammar_with, next_bytes, recognizer_at, spelled, tok,
};
use mask_kernel::{FixedBitSet, MaskCache, MaskError, Session, SharedMaskCache};
use proptest::prelude::*;
use schema_compiler::{Grammar, KeyEscapes, Matcher, Options, Whitespace};
use serde_json::json;
use vocab_index::TokenId;

fn compact(schema: &serde_json::Value) -> Arc<Grammar> {
    let options = Options::generation().whitespace(Whitespace::Compact);
    Arc::new(Grammar::compile(schema, &options).expect("the schema compiles"))
}

#[test]
fn forced_bytes_of_a_single_required_property() {
    let g = compact(&json!({
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": false
    }));
    let t = tok("llama3");
    let mut s = Session::new(t.flat.clone(), Matcher::new(g.clone()));
    // Generated keys are spelled as themselves, so the key is forced too.
    assert_eq!(s.forced_bytes(64), br#"{"name":""#);
    assert_eq!(s.forced_bytes(3), br#"{"n"#);
    assert_eq!(s.forced_bytes(0), b"");
    assert_eq!(s.recognizer().len(), 0, "nothing was consumed");
    for id in t.encode(r#"{"name":"Ada"#) {
        s.commit(id).unwrap();
    }
    assert_eq!(s.forced_bytes(64), b"", "more content or the closing quote");
    s.commit(t.encode("\"")[0]).unwrap();
    assert_eq!(s.forced_bytes(64), b"}");
    s.commit(t.encode("}")[0]).unwrap();
    assert_eq!(s.forced_bytes(64), b"", "complete");
    s.commit(t.vocab.eos_ids()[0]).unwrap();
    assert_eq!(s.forced_bytes(64), b"", "finished");
}

#[test]
fn a_key_that_may_be_escaped_is_not_forced() {
    let options = Options::generation()
        .whitespace(Whitespace::Compact)
        .key_escapes(KeyEscapes::Any);
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}},
        "required": ["name"], "additionalProperties": false});
    let g = Arc::new(Grammar::compile(&schema, &options).expect("the schema compiles"));
    let t = tok("llama3");
    let mut s = Session::new(t.flat.clone(), Matcher::new(g));
    // `{"\u006eame":""}` is the same document.
    assert_eq!(s.forced_bytes(64), br#"{""#);
}

/// Calls `f` with the case, its grammar and each prefix of each valid instance, under each
/// whitespace policy (spelled as the policy spells it: pretty-printed under `Pretty`, where
/// indentation is forced).
fn each_prefix(mut f: impl FnMut(&str, &Arc<Grammar>, &[u8])) {
    let flexible = Whitespace::Flexible {
        max_newlines: 1,
        max_spaces: 16,
    };
    for case in cases() {
        for ws in [Whitespace::Compact, Whitespace::Pretty, flexible] {
            let g = grammar_with(&case.schema, ws);
            for text in case.valid {
                let text = spelled(text, ws);
                for i in 0..=text.len() {
                    f(case.name, &g, &text.as_bytes()[..i]);
                }
            }
        }
    }
}

/// The matcher's hint of the next bytes holds every byte it accepts, at every prefix.
#[test]
fn next_bytes_hints_hold_every_accepted_byte() {
    let (mut hinted, mut checked) = (0, 0);
    each_prefix(|name, g, prefix| {
        let m = recognizer_at(g, prefix);
        checked += 1;
        let Some(hint) = m.next_bytes_hint() else {
            return;
        };
        hinted += 1;
        for b in next_bytes(&m) {
            assert!(
                hint[(b / 64) as usize] >> (b % 64) & 1 == 1,
                "{name} after {:?}: {:?} is accepted but not in the hint",
                String::from_utf8_lossy(prefix),
                b as char
            );
        }
    });
    assert!(
        hinted * 4 > checked,
        "most structural prefixes have a hint ({hinted} of {checked})"
    );
}

/// At every prefix, forced bytes are those trying every byte finds.
#[test]
fn forced_bytes_equal_the_brute_force_at_every_prefix() {
    let t = tok("llama3");
    let mut checked = 0;
    let mut nonempty = 0;
    each_prefix(|name, g, prefix| {
        let mut s = Session::new(t.flat.clone(), recognizer_at(g, prefix));
        for max in [1, 2, 64] {
            let want = brute_forced(g, prefix, max);
            let got = s.forced_bytes(max);
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{name} after {:?}, max {max}",
                String::from_utf8_lossy(prefix)
            );
            assert_eq!(s.recognizer().len(), prefix.len());
            nonempty += !got.is_empty() as usize;
            checked += 1;
        }
    });
    eprintln!("forced bytes: {checked} checks, {nonempty} with forced bytes");
    assert!(nonempty > 100, "the cases have forced bytes ({nonempty})");
}

/// A session that commits a valid instance token by token gives, before each token, the mask
/// a session new at that prefix gives: what a recognizer learns during one mask (about a
/// string, a key, a number) does not carry over to states it does not hold for.
#[test]
fn a_walking_session_masks_as_a_new_one_does() {
    let mut checked = 0;
    for name in ["llama3", "gemma3"] {
        let t = tok(name);
        for case in cases() {
            let g = grammar(&case.schema);
            for text in case.valid {
                let mut live = Session::new(t.flat.clone(), Matcher::new(g.clone()));
                let mut prefix = Vec::new();
                for id in t.encode(text) {
                    let mut cache = MaskCache::new(0);
                    let got = mask_of(&mut live, &mut cache);
                    // The new session learns everything again; what it remembers for every
                    // session, the live one may take up at its next mask.
                    t.flat.forget_learnt();
                    let mut fresh = Session::new(t.flat.clone(), recognizer_at(&g, &prefix));
                    let want = mask_of(&mut fresh, &mut cache);
                    same(&t, &got, &want, &|| {
                        format!(
                            "{name} / {} after {:?}",
                            case.name,
                            String::from_utf8_lossy(&prefix)
                        )
                    });
                    live.commit(id).expect("a token of a valid instance");
                    prefix.extend_from_slice(t.vocab.bytes(id));
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 500, "the cases have tokens ({checked})");
}

/// A session whose recognizer is replaced masks as a new one does: what it kept for a key of
/// the old recognizer does not serve a key of the new one, although both number their keys and
/// classes alike: after `{"a`, `":"` starts the value only in the new one.
#[test]
fn a_replaced_recognizer_takes_up_nothing_kept_for_the_old_ones_keys() {
    let t = tok("llama3");
    let old = compact(&json!({"type": "object", "properties": {"a": {"type": "integer"}}}));
    let new = compact(&json!({"type": "object", "properties": {"a": {"type": "string"}}}));
    let mut cache = MaskCache::new(0);
    let mut s = Session::new(t.flat.clone(), recognizer_at(&old, br#"{"a"#));
    t.flat.forget_learnt();
    mask_of(&mut s, &mut cache).expect("a key goes on");
    *s.recognizer_mut() = recognizer_at(&new, br#"{"a"#);
    t.flat.forget_learnt();
    let got = mask_of(&mut s, &mut cache);
    t.flat.forget_learnt();
    let mut fresh = Session::new(t.flat.clone(), recognizer_at(&new, br#"{"a"#));
    let want = mask_of(&mut fresh, &mut cache);
    same(&t, &got, &want, &|| {
        "the replaced recognizer's key".to_owned()
    });
}

/// Sessions of one grammar sharing a mask cache, two passes in each of several threads, mask
/// as a session with a cache of its own does: a pass finds the masks an earlier one (of any
/// thread) put, and each session's own cache counts its masks looked up.
#[test]
fn sessions_sharing_a_mask_cache_mask_as_alone() {
    let t = tok("llama3");
    let mut hits = 0;
    for case in cases() {
        let g = grammar(&case.schema);
        let shared = SharedMaskCache::default();
        let run = |text: &str| {
            let walk = record(&t, &g, text, &mut MaskCache::new(0));
            let mut own = MaskCache::default();
            let mut asked = 0;
            for pass in 0..2 {
                let mut s = Session::new(t.flat.clone(), Matcher::new(g.clone()));
                for (i, want) in walk.masks.iter().enumerate() {
                    let mut m = FixedBitSet::new();
                    let got = s.mask_shared(&shared, &mut own, &mut m).map(|_| m);
                    same(&t, &got, want, &|| {
                        format!("{} pass {pass}, mask {i}", case.name)
                    });
                    asked += 1;
                    if let Some(&id) = walk.tokens.get(i) {
                        s.commit(id).unwrap();
                    }
                }
            }
            let stats = own.stats();
            assert!(stats.hits + stats.misses <= asked, "{}", case.name);
            assert!(
                stats.hits >= stats.misses,
                "{}: the second pass finds what the first put",
                case.name
            );
        };
        std::thread::scope(|scope| {
            for &text in case.valid {
                for _ in 0..2 {
                    scope.spawn(move || run(text));
                }
            }
        });
        hits += shared.stats().hits;
    }
    assert!(hits > 500, "sessions found masks others put ({hits})");
}

type Outcome = Result<FixedBitSet, MaskError>;

fn mask_of(s: &mut Session<Matcher>, cache: &mut MaskCache) -> Outcome {
    let mut m = FixedBitSet::new();
    s.mask(cache, &mut m).map(|_| m)
}

/// Asserts two outcomes are equal, with a readable difference.
fn same(t: &Tok, got: &Outcome, want: &Outcome, what: &dyn Fn() -> String) {
    match (got, want) {
        (Ok(a), Ok(b)) => assert!(a == b, "{}: {}", what(), diff(&t.vocab, a, b)),
        _ => assert_eq!(got, want, "{}", what()),
    }
}

/// The recorded walk: a valid instance's own tokens, then end of sequence; with the mask
/// before each token and after the last.
struct Walk {
    tokens: Vec<TokenId>,
    masks: Vec<Outcome>,
}

fn record(t: &Tok, g: &Arc<Grammar>, text: &str, cache: &mut MaskCache) -> Walk {
    let mut tokens = t.encode(text);
    tokens.push(t.vocab.eos_ids()[0]);
    let mut s = Session::new(t.flat.clone(), Matcher::new(g.clone()));
    let mut masks = Vec::new();
    for &id in &tokens {
        masks.push(mask_of(&mut s, cache));
        s.commit(id).unwrap();
    }
    masks.push(mask_of(&mut s, cache));
    Walk { tokens, masks }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random rollbacks (random points, random lengths, sometimes past end of sequence), each
    /// followed by a detour through a random allowed token and back, then the recommit of the
    /// original tokens: every mask equals the recorded one, from the shared cache, from a tiny
    /// evicting cache and uncached, on both tries.
    #[test]
    fn rollback_then_recommit_replays_the_masks(
        case in 0..cases().len(),
        which in prop::sample::select(vec!["llama3", "gemma3"]),
        double_array in any::<bool>(),
        seed in any::<u64>(),
        rounds in 1..4usize,
    ) {
        let case = &cases()[case];
        let t = tok(which);
        let g = grammar(&case.schema);
        let mut cache = MaskCache::default();
        let mut tiny = MaskCache::new(t.vocab.len().div_ceil(8) + 256);
        let mut rng = Rng(seed);
        let text = case.valid[rng.below(case.valid.len())];
        let walk = record(&t, &g, text, &mut cache);
        let kernel = t.kernels()[double_array as usize].clone();
        let mut s = Session::new(kernel, Matcher::new(g.clone()));
        for &id in &walk.tokens {
            s.commit(id).unwrap();
        }
        for round in 0..rounds {
            let k = s.len();
            let n = rng.below(k + 1);
            s.rollback(n).unwrap();
            let at = k - n;
            let what = || format!("{} / {which}: round {round}, rolled back {n} of {k}", case.name);
            prop_assert_eq!(s.len(), at);
            same(&t, &mask_of(&mut s, &mut tiny), &walk.masks[at], &what);
            same(&t, &mask_of(&mut s, &mut cache), &walk.masks[at], &what);
            // A detour: a random allowed token other than the recorded one, then back.
            if let Ok(m) = &walk.masks[at] {
                let others: Vec<usize> = m
                    .ones()
                    .filter(|&i| Some(&TokenId::new(i as u32).unwrap()) != walk.tokens.get(at))
                    .collect();
                if !others.is_empty() {
                    let id = TokenId::new(others[rng.below(others.len())] as u32).unwrap();
                    s.commit(id).unwrap();
                    let _ = mask_of(&mut s, &mut tiny);
                    s.rollback(1).unwrap();
                    same(&t, &mask_of(&mut s, &mut tiny), &walk.masks[at], &what);
                }
            }
            for i in at..k {
                s.commit(walk.tokens[i]).unwrap();
                let got = if i % 2 == 0 {
                    let mut m = FixedBitSet::new();
                    s.mask_uncached(&mut m).map(|_| m)
                } else {
                    mask_of(&mut s, &mut cache)
                };
                same(&t, &got, &walk.masks[i + 1], &|| format!("{}, recommitted {i}", what()));
            }
        }
    }
}

/// A matcher whose key classes are numbered from `offset` on (everything else forwarded).
struct Numbered {
    m: Matcher,
    offset: u32,
}

impl mask_kernel::Recognizer for Numbered {
    fn try_push_byte(&mut self, byte: u8) -> bool {
        self.m.try_push_byte(byte)
    }
    fn pop_bytes(&mut self, n: usize) {
        self.m.pop_bytes(n)
    }
    fn is_accepting(&self) -> bool {
        self.m.is_accepting()
    }
    fn state_key(&self, key: &mut Vec<u32>) -> bool {
        self.m.state_key(key);
        true
    }
    fn split(&self, key: &mut Vec<u32>) -> Option<mask_kernel::Split> {
        self.m.split(key)
    }
    fn set_lexeme_only(&mut self, on: bool) {
        self.m.set_lexeme_only(on)
    }
    fn close_class(&mut self) -> Option<u32> {
        self.m.close_class().map(|c| c.saturating_add(self.offset))
    }
}

/// Key classes are numbers a kernel indexes a table by: numbered from anywhere (huge ones
/// included, which the kernel takes as no class), the masks stay the same.
#[test]
fn key_masks_do_not_depend_on_how_classes_are_numbered() {
    let t = tok("llama3");
    for case in cases().iter().filter(|c| c.name == "open object") {
        let g = grammar(&case.schema);
        for text in case.valid {
            let walk = record(&t, &g, text, &mut MaskCache::new(0));
            for offset in [7, u32::MAX - 3] {
                let rec = Numbered {
                    m: Matcher::new(g.clone()),
                    offset,
                };
                let mut s = Session::new(t.flat.clone(), rec);
                for (i, &id) in walk.tokens.iter().enumerate() {
                    let mut m = FixedBitSet::new();
                    let got = s.mask(&mut MaskCache::new(0), &mut m).map(|_| m);
                    same(&t, &got, &walk.masks[i], &|| {
                        format!("{text}: token {i}, classes from {offset}")
                    });
                    s.commit(id).unwrap();
                }
            }
        }
    }
}

/// Tokens with escapes before a quote close a string exactly when the brute force says: the
/// closing quote found past escaped ones, the content's length counted through its escapes,
/// and tokens whose content stops inside an escape or a character refused. A hand-built
/// vocabulary, because real ones hold few such tokens.
#[test]
fn tokens_with_escapes_close_strings_as_the_brute_force_does() {
    let tokens: &[&[u8]] = &[
        b"\"",
        b"\",",
        b"\"]",
        b"\"}",
        b"\":",
        b"[",
        b"]",
        b",",
        b"{",
        b"}",
        b":",
        b"a",
        b"ab",
        b"\\",
        b"\\\"",
        b"\\\\\"",
        b"\\\\\",",
        b"\\\"\"",
        b"\\\"\"]",
        b"\\\\\\\"",
        b"\\\\\\\\\"",
        b"a\\\"b\"",
        b"a\\\\\"]",
        b"\\n\",",
        b"\\n\"}",
        b"\\/\"",
        b"\\x\"",
        b"\\u0\"",
        b"\\u00e9\"",
        b"\\u00e9\\\"\",\"",
        b"\\uD83D\"",
        b"\\uD83D\\uDE00\"]",
        b"\\uDE00\"",
        b"\xc3\\n\"",
        "é\\t\"".as_bytes(),
        b"\\t\\t\\t\\t\"",
        b"\\\"\\\"\",\"a",
        b"</s>",
    ];
    let eos = TokenId::new(tokens.len() as u32 - 1).unwrap();
    let vocab = Arc::new(
        vocab_index::Vocabulary::new(tokens.iter().copied(), [eos])
            .unwrap()
            .with_eos_ids([eos])
            .unwrap(),
    );
    let kernel =
        Arc::new(mask_kernel::Kernel::new(vocab.clone(), vocab_index::TrieKind::Flat).unwrap());
    let schemas = [
        json!({"type": "array", "items": {"type": "string"}}),
        json!({"type": "array", "items": {"type": "string", "minLength": 2, "maxLength": 3}}),
        json!({"type": "array", "items": {"type": "string", "maxLength": 1}}),
        // Every character but a line feed: content of the plain level, where an escape may
        // still be refused.
        json!({"type": "array", "items": {"type": "string", "pattern": "^[^\n]*$"}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}},
               "required": ["a"], "additionalProperties": false}),
    ];
    let prefixes: &[&[u8]] = &[
        b"[\"",
        b"[\"a",
        b"[\"\\n",
        b"[\"ab",
        b"[\"\\u00e9",
        b"[\"ab\",\"",
        b"[\"ab\",\"a",
        b"{\"a\":\"",
        b"{\"a\":\"\\\"",
    ];
    let mut checked = 0;
    for schema in &schemas {
        let g = compact(schema);
        for prefix in prefixes {
            let mut m = Matcher::new(g.clone());
            if m.push_bytes(prefix).is_err() {
                continue;
            }
            m.forget_history();
            let want = kernel_support::brute_mask(&g, &vocab, prefix);
            let mut s = Session::new(kernel.clone(), m);
            let got = mask_of(&mut s, &mut MaskCache::new(0));
            let got = got.unwrap_or_else(|_| FixedBitSet::with_capacity(vocab.len()));
            let show = |set: &FixedBitSet| {
                set.ones()
                    .map(|i| String::from_utf8_lossy(tokens[i]).into_owned())
                    .collect::<Vec<_>>()
            };
            assert!(
                got == want,
                "{schema} after {:?}: got {:?}, want {:?}",
                String::from_utf8_lossy(prefix),
                show(&got),
                show(&want)
            );
            checked += 1;
        }
    }
    assert!(
        checked >= 20,
        "the prefixes fit the schemas ({checked} checked)"
    );
}

/// The items of an array share their masks where their count cannot change what follows, and
/// only there: documents of every length up to the bounds, walked one after another through
/// one cache, get at every step the mask computed without a cache. Bounds, a prefix and
/// `contains` counts each make the count matter up to a point; past it (and in an array
/// without them, from the first item on) the items find the masks of earlier ones.
#[test]
fn array_items_share_masks_only_where_their_count_cannot_matter() {
    let t = tok("llama3");
    let int = json!({"type": "integer"});
    let schemas = [
        json!({"type": "array", "items": int}),
        json!({"type": "array", "items": int, "maxItems": 4}),
        json!({"type": "array", "items": int, "minItems": 3}),
        json!({"type": "array", "prefixItems": [{"const": 1}, {"type": "string"}], "items": int}),
        json!({"type": "array", "prefixItems": [int, int], "items": false}),
        json!({"type": "array", "items": int, "contains": {"const": 5}, "minContains": 2,
            "maxContains": 3}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": int,
            "maxItems": 3}}, "required": ["a"], "additionalProperties": false}),
    ];
    let items = |n: usize, item: &dyn Fn(usize) -> String| -> String {
        (0..n).map(item).collect::<Vec<_>>().join(",")
    };
    for schema in &schemas {
        let g = compact(schema);
        let mut texts = Vec::new();
        for n in 0..7 {
            texts.push(format!("[{}]", items(n, &|i| (i % 3 + 1).to_string())));
            texts.push(format!("[{}]", items(n, &|_| "5".into())));
            texts.push(format!(
                "[{}]",
                items(n, &|i| if i % 2 == 0 { "5" } else { "1" }.into())
            ));
            texts.push(format!("[1,\"x\"{}]", items(n, &|i| format!(",{}", i + 2))));
            texts.push(format!(
                "{{\"a\":[{}]}}",
                items(n, &|i| (i + 7).to_string())
            ));
        }
        let mut shared = MaskCache::default();
        let mut walked = 0;
        for text in &texts {
            // The documents of this schema (those of the others are refused).
            let mut m = Matcher::new(g.clone());
            if m.push_bytes(text.as_bytes()).is_err() || !m.is_accepting() {
                continue;
            }
            walked += 1;
            let want = record(&t, &g, text, &mut MaskCache::new(0));
            let got = record(&t, &g, text, &mut shared);
            for (i, (got, want)) in got.masks.iter().zip(&want.masks).enumerate() {
                same(&t, got, want, &|| format!("{schema} on {text}, mask {i}"));
            }
        }
        assert!(walked >= 4, "{schema}: {walked} documents");
        if schema == &schemas[0] {
            // Every item after the first is met again: its masks come from the cache.
            let mut own = MaskCache::default();
            record(&t, &g, "[1,2,3,4,5,6]", &mut own);
            let stats = own.stats();
            assert!(
                stats.hits >= 8,
                "items of an array without bounds share masks: {stats:?}"
            );
        }
    }
}
