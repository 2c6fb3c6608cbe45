//! Value hashing for `uniqueItems`: a 128-bit hash of each JSON value, equal for equal values.
//!
//! Strings hash their decoded content, numbers their canonical decimal, objects their members
//! in any order and arrays their items in order. Only grammars with `uniqueItems`
//! ([`Grammar::needs_hash`](crate::grammar::Grammar)) pay for it.

use crate::grammar::Grammar;
use crate::tables::LeafSpec;
use crate::text::decimal::Decimal;

use super::state::{Frame, FrameKind, LexKind, State, Undo};

/// A 128-bit hash of a JSON value: two independent 64-bit streams.
pub(super) type Hash2 = (u64, u64);

pub(super) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Finishes a value hash from a kind tag and two streams.
pub(super) fn fin(tag: u64, a: u64, b: u64) -> Hash2 {
    (
        mix64(a ^ tag.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        mix64(b.wrapping_add(tag) ^ 0x5851_f42d_4c95_7f2d),
    )
}

/// Hashes bytes into two streams.
pub(super) fn hash_bytes(bytes: &[u8]) -> Hash2 {
    let (mut a, mut b) = (FNV0, HASH2_SEED);
    for &x in bytes {
        a = fnv(a, x);
        b = hash2_step(b, x);
    }
    (a, b)
}

pub(super) const HASH2_SEED: u64 = 0x2545_f491_4f6c_dd1d;

pub(super) fn hash2_step(h: u64, b: u8) -> u64 {
    (h ^ b as u64)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15)
        .rotate_left(23)
}

pub(super) const TAG_STR: u64 = 1;

pub(super) const TAG_NUM: u64 = 2;

pub(super) const TAG_LIT: u64 = 3;

pub(super) const TAG_ARR: u64 = 4;

pub(super) const TAG_OBJ: u64 = 5;

pub(super) fn fnv(h: u64, b: u8) -> u64 {
    (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
}

pub(super) const FNV0: u64 = 0xcbf2_9ce4_8422_2325;

impl State {
    /// The value hash of the primitive just lexed: equal JSON values hash equally
    /// (`1.0` and `1e0` as `1`; strings by their decoded content).
    pub(super) fn primitive_hash(&self) -> Hash2 {
        match self.lex.kind {
            LexKind::Str => fin(TAG_STR, self.lex.hash, self.lex.hash2),
            LexKind::Num => {
                let text = std::str::from_utf8(self.lexeme_text()).unwrap_or("");
                let canon = match Decimal::from_json_text(text) {
                    Ok(d) => d.to_canonical_string(),
                    Err(_) => text.to_string(),
                };
                let (a, b) = hash_bytes(canon.as_bytes());
                fin(TAG_NUM, a, b)
            }
            _ => {
                let (a, b) = hash_bytes(self.lexeme_text());
                fin(TAG_LIT, a, b)
            }
        }
    }

    /// Folds the value hash `hash` of a finished member or item into its container `f`: an
    /// array also refuses a repeated item under `uniqueItems` and keeps the item's hash.
    pub(super) fn fold_value_hash(&mut self, g: &Grammar, f: &mut Frame, hash: Hash2) {
        match f.kind {
            FrameKind::Array => {
                let dup = self.items[f.items_start as usize..]
                    .iter()
                    .any(|&(d, h)| d == f.depth && h == hash);
                if dup {
                    for li in f.leaf_start..f.leaf_end {
                        let mut leaf = self.leaves[li as usize];
                        if let LeafSpec::Array(s) = leaf.spec
                            && leaf.alive
                            && g.arr_specs[s as usize].unique
                        {
                            leaf.alive = false;
                            self.set_leaf(li as usize, leaf);
                        }
                    }
                }
                self.journal.push(Undo::Items(self.items.len() as u32));
                self.items.push((f.depth, hash));
                f.value_hash = (
                    mix64(f.value_hash.0.wrapping_mul(0x100_0000_01b3) ^ hash.0),
                    mix64(f.value_hash.1.rotate_left(17) ^ hash.1),
                );
            }
            FrameKind::Object => {
                let (k, v) = (f.member_key, hash);
                f.value_hash.0 = f.value_hash.0.wrapping_add(mix64(k.0 ^ mix64(v.0)));
                f.value_hash.1 = f
                    .value_hash
                    .1
                    .wrapping_add(mix64(k.1.wrapping_add(mix64(v.1 ^ 0xa5))));
            }
            FrameKind::Document => {}
        }
    }
}
