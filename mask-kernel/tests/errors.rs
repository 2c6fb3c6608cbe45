//! Error behaviour: refused tokens change nothing, special tokens and early end of sequence are
//! errors, `apply` checks lengths and masks padding, and an empty mask is an error on every
//! code path.
//!
//! The vocabulary (id: bytes):
//!
//! ```text
//! 0 [     1 ["    2 "     3 ]     4 a     5 ,
//! 6 </s>  (special, end of sequence)
//! 7 ["     (special, not end of sequence: its bytes would be allowed at the start)
//! 8 (empty: an id the tokenizer does not define)
//! ```

mod common;

use std::sync::Arc;

use common::{Knobs, Lang, SplitMode, StrList, feed, kernels};
use mask_kernel::{FixedBitSet, MaskCache, MaskError, Recognizer, Session, apply};
use vocab_index::{TokenId, Vocabulary};

fn id(i: u32) -> TokenId {
    TokenId::new(i).unwrap()
}

fn vocab() -> Arc<Vocabulary> {
    let tokens: [&[u8]; 9] = [b"[", b"[\"", b"\"", b"]", b"a", b",", b"</s>", b"[\"", b""];
    Arc::new(
        Vocabulary::new(tokens, [id(6), id(7)])
            .unwrap()
            .with_eos_ids([id(6)])
            .unwrap(),
    )
}

fn fast() -> Knobs {
    Knobs {
        key: true,
        split: SplitMode::ContentClose,
    }
}

fn mask(s: &mut Session<StrList>, cache: &mut MaskCache) -> Vec<usize> {
    let mut m = FixedBitSet::new();
    s.mask(cache, &mut m).unwrap();
    m.ones().collect()
}

#[test]
fn a_refused_token_changes_nothing() {
    for kernel in kernels(&vocab()) {
        let mut cache = MaskCache::default();
        let mut s = Session::new(kernel, StrList::new(Lang::FREE, fast()));
        s.commit(id(1)).unwrap();
        s.commit(id(4)).unwrap();
        s.commit(id(2)).unwrap(); // ["a"
        let before = mask(&mut s, &mut cache);
        assert_eq!(before, [3, 5]);
        let err = s.commit(id(1)).unwrap_err();
        assert_eq!(
            err,
            MaskError::TokenNotAllowed {
                token: 1,
                bytes: "[\"".into(),
                at: 0
            }
        );
        assert_eq!(
            err.to_string(),
            "token 1 is not allowed here (its bytes \"[\\\"\" are rejected at byte 0)"
        );
        assert_eq!((s.len(), s.recognizer().len()), (3, 4));
        assert_eq!(mask(&mut s, &mut cache), before);
        assert_eq!(s.mask_uncached(&mut FixedBitSet::new()).unwrap().allowed, 2);
        // A token refused after its first byte is undone too.
        let mut s = Session::new(s.kernel().clone(), StrList::new(Lang::FREE, fast()));
        s.commit(id(0)).unwrap();
        let err = s.commit(id(1)).unwrap_err(); // `[` then `[`
        assert!(
            matches!(err, MaskError::TokenNotAllowed { at: 0, .. }),
            "{err:?}"
        );
        s.commit(id(2)).unwrap();
        s.commit(id(4)).unwrap();
        s.commit(id(2)).unwrap();
        // `["a"` then `"`: refused at byte 0; the recognizer keeps its four bytes.
        assert!(s.commit(id(2)).is_err());
        assert_eq!(s.recognizer().len(), 4);
        assert_eq!(mask(&mut s, &mut cache), [3, 5]);
    }
}

#[test]
fn a_token_refused_mid_way_leaves_the_state_as_it_was() {
    // Strings of at most one code point: `ab` passes its first byte and fails at the second.
    let tokens: [&[u8]; 4] = [b"[\"", b"ab", b"a", b"\""];
    let vocab = Arc::new(Vocabulary::new(tokens, []).unwrap());
    let lang = Lang {
        min: 0,
        max: Some(1),
        letters_only: false,
    };
    for kernel in kernels(&vocab) {
        let mut s = Session::new(kernel, StrList::new(lang, fast()));
        s.commit(id(0)).unwrap();
        let err = s.commit(id(1)).unwrap_err();
        assert_eq!(
            err,
            MaskError::TokenNotAllowed {
                token: 1,
                bytes: "ab".into(),
                at: 1
            }
        );
        assert_eq!(
            s.recognizer().len(),
            2,
            "the accepted first byte was undone"
        );
        assert_eq!(s.len(), 1);
        s.commit(id(2)).unwrap();
        s.commit(id(3)).unwrap();
    }
}

#[test]
fn special_unknown_and_early_end_of_sequence() {
    for kernel in kernels(&vocab()) {
        let mut cache = MaskCache::default();
        let mut s = Session::new(kernel, StrList::new(Lang::FREE, fast()));
        // The special `["` (7) is never allowed, though its bytes would be.
        assert_eq!(mask(&mut s, &mut cache), [0, 1]);
        assert_eq!(s.commit(id(7)), Err(MaskError::SpecialToken { token: 7 }));
        assert_eq!(
            s.commit(id(9)),
            Err(MaskError::UnknownToken {
                token: 9,
                vocab_size: 9
            })
        );
        assert_eq!(s.commit(id(6)), Err(MaskError::Incomplete));
        assert_eq!((s.len(), s.recognizer().len()), (0, 0));
        s.commit(id(0)).unwrap();
        s.commit(id(3)).unwrap();
        assert_eq!(
            mask(&mut s, &mut cache),
            [6],
            "complete: end of sequence only"
        );
        s.commit(id(6)).unwrap();
        assert!(s.is_finished());
        assert_eq!(
            s.mask(&mut cache, &mut FixedBitSet::new()),
            Err(MaskError::Finished)
        );
        assert_eq!(s.commit(id(6)), Err(MaskError::Finished));
        assert_eq!(s.commit(id(0)), Err(MaskError::Finished));
        assert_eq!(s.forced_bytes(8), b"");
        s.rollback(1).unwrap();
        assert!(!s.is_finished());
        assert_eq!(mask(&mut s, &mut cache), [6]);
    }
}

#[test]
fn an_empty_id_is_refused_like_any_token_outside_the_mask() {
    for kernel in kernels(&vocab()) {
        let mut s = Session::new(kernel, StrList::new(Lang::FREE, fast()));
        let mut m = FixedBitSet::new();
        s.mask_uncached(&mut m).unwrap();
        assert!(!m.contains(8), "the empty id is never allowed");
        assert!(s.commit(id(8)).is_err(), "so committing it is an error");
        assert_eq!(s.len(), 0, "and changes nothing");
    }
}

#[test]
fn the_empty_id_is_not_allowed_even_when_it_would_be() {
    // Every state accepts the empty byte string; the empty id must still stay out of masks.
    for kernel in kernels(&vocab()) {
        let mut s = Session::new(kernel, StrList::new(Lang::FREE, Knobs::SLOW));
        let mut m = FixedBitSet::new();
        s.mask_uncached(&mut m).unwrap();
        assert!(!m.contains(8));
    }
}

#[test]
fn apply_checks_lengths_and_masks_padding() {
    let mut m = FixedBitSet::with_capacity(9);
    m.insert(0);
    m.insert(6);
    assert_eq!(
        apply(&m, &mut [0.0; 8]),
        Err(MaskError::LogitsTooShort {
            logits: 8,
            vocab: 9
        })
    );
    let mut logits: Vec<f32> = (0..200).map(|i| i as f32).collect();
    apply(&m, &mut logits).unwrap();
    for (i, &l) in logits.iter().enumerate() {
        if i == 0 || i == 6 {
            assert_eq!(l, i as f32, "allowed logits are untouched");
        } else {
            assert_eq!(l, f32::NEG_INFINITY, "logit {i}");
        }
    }
    let mut exact = vec![1.5f32; 9];
    apply(&m, &mut exact).unwrap();
    assert_eq!(exact.iter().filter(|l| l.is_finite()).count(), 2);
    let empty = FixedBitSet::with_capacity(9);
    let mut logits = vec![0.0f32; 9];
    assert!(matches!(
        apply(&empty, &mut logits),
        Err(MaskError::EmptyMask { .. })
    ));
}

/// Accepts `a` and then only the byte 0x01, which no token holds: a dead end after `a`.
#[derive(Debug, Clone)]
struct DeadEnd {
    text: Vec<u8>,
    key: bool,
}

impl Recognizer for DeadEnd {
    fn try_push_byte(&mut self, b: u8) -> bool {
        let ok = match self.text.len() {
            0 => b == b'a',
            1 => b == 1,
            _ => false,
        };
        if ok {
            self.text.push(b);
        }
        ok
    }
    fn pop_bytes(&mut self, n: usize) {
        self.text.truncate(self.text.len() - n);
    }
    fn is_accepting(&self) -> bool {
        self.text.len() == 2
    }
    fn state_key(&self, key: &mut Vec<u32>) -> bool {
        key.push(self.text.len() as u32);
        self.key
    }
    fn describe(&self) -> String {
        format!("dead end after {:?}", String::from_utf8_lossy(&self.text))
    }
}

#[test]
fn an_empty_mask_is_an_error() {
    for kernel in kernels(&vocab()) {
        for key in [false, true] {
            let mut cache = MaskCache::default();
            let mut s = Session::new(
                kernel.clone(),
                DeadEnd {
                    text: Vec::new(),
                    key,
                },
            );
            let mut m = FixedBitSet::new();
            s.mask(&mut cache, &mut m).unwrap();
            assert_eq!(m.ones().collect::<Vec<_>>(), [4]);
            s.commit(id(4)).unwrap();
            for round in 0..2 {
                let err = s.mask(&mut cache, &mut m).unwrap_err();
                assert_eq!(
                    err,
                    MaskError::EmptyMask {
                        state: "dead end after \"a\"".into()
                    },
                    "round {round}, key {key}"
                );
                assert!(m.is_clear());
            }
            assert!(matches!(
                s.mask_uncached(&mut m),
                Err(MaskError::EmptyMask { .. })
            ));
            assert_eq!(s.forced_bytes(4), [1], "the byte no token spells");
            assert!(matches!(
                apply(&m, &mut [0.0; 9]),
                Err(MaskError::EmptyMask { .. })
            ));
        }
    }
}

#[test]
fn masks_do_not_depend_on_earlier_calls() {
    // Lexeme-only mode and rollbacks after walks leave no trace: masks at the same text agree
    // whatever was computed before.
    let vocab = vocab();
    for kernel in kernels(&vocab) {
        let mut cache = MaskCache::default();
        let mut r = StrList::new(Lang::FREE, fast());
        feed(&mut r, b"[\"");
        let mut s = Session::new(kernel, r);
        let first = mask(&mut s, &mut cache);
        assert_eq!(first, [0, 1, 2, 3, 4, 5]);
        assert!(s.commit(id(6)).is_err());
        assert_eq!(s.mask_uncached(&mut FixedBitSet::new()).unwrap().allowed, 6);
        assert_eq!(mask(&mut s, &mut cache), first);
    }
}
