//! What sessions learn that holds for every session of the same grammar, kept in the
//! [`Kernel`](crate::Kernel) for all of them: how a key position classes the tokens that can
//! end the key, and the tokens that stay inside a string or key from a lexeme state. Both
//! depend on the grammar and on the names a recognizer gives (see
//! [`Recognizer::grammar_name`](crate::Recognizer::grammar_name)) alone, so the next item of an
//! array, the next request for the same schema or a host engine's next matcher takes them up
//! instead of walking again. Neither is a mask: a mask depends on the whole state, and stays in
//! the caller's [`MaskCache`](crate::MaskCache) (or the
//! [`SharedMaskCache`](crate::SharedMaskCache) of a grammar's sessions).

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use rustc_hash::FxBuildHasher;

use crate::cache::Stored;

/// Most bytes of remembered key classes (a few KiB a key position), and most positions.
pub(crate) const CLASSES_BYTES: usize = 4 << 20;
const CLASSES_ENTRIES: usize = 4096;

/// Most bytes of remembered inside sets (a list of ids, or a bitset of the vocabulary: 16 KiB
/// for 128k tokens, 32 KiB for 262k), and most sets.
pub(crate) const INSIDE_BYTES: usize = 16 << 20;
const INSIDE_ENTRIES: usize = 16384;

/// What the first pass of a classed key walk found from a position (see
/// [`Session`](crate::Session)): the contents it accepted, each with its class as a slot
/// (numbered from 0 in the order met; the position's own class is slot 0), and per slot the
/// bytes of its first content.
#[derive(Debug)]
pub(crate) struct Remembered {
    /// Per slot: where its first content is in `bytes` (start, length).
    pub(crate) rep: Vec<(u32, u32)>,
    pub(crate) bytes: Vec<u8>,
    /// (content id, slot) of every content accepted.
    pub(crate) met: Vec<(u32, u32)>,
}

impl Remembered {
    pub(crate) fn bytes(&self) -> usize {
        self.rep.len() * 8 + self.bytes.len() + self.met.len() * 8
    }
}

/// What a kernel remembers for every session, each part bounded in bytes and in entries (the
/// least recently used entries make room for a new one).
#[derive(Debug)]
pub(crate) struct Learnt {
    /// Key classes, by grammar and key position (at most [`CLASSES_BYTES`]).
    pub(crate) classes: SharedMemo<Remembered>,
    /// Inside sets, by grammar and split key (at most [`INSIDE_BYTES`]).
    pub(crate) inside: SharedMemo<Stored>,
}

impl Default for Learnt {
    fn default() -> Learnt {
        Learnt {
            classes: SharedMemo::new(CLASSES_BYTES, CLASSES_ENTRIES),
            inside: SharedMemo::new(INSIDE_BYTES, INSIDE_ENTRIES),
        }
    }
}

impl Learnt {
    pub(crate) fn clear(&self) {
        self.classes.clear();
        self.inside.clear();
    }
}

/// An LRU map from keys (words) to values, behind a lock, holding at most `limit` bytes and
/// `entries` entries. Its table is allocated whole on the first entry, so that it never grows
/// (a growing table moves every entry, at once).
pub(crate) struct SharedMemo<V> {
    inner: Mutex<Inner<V>>,
    limit: usize,
    entries: NonZeroUsize,
}

/// Each value with its size in bytes, as counted in `bytes`.
type Map<V> = LruCache<Box<[u32]>, (Arc<V>, usize), FxBuildHasher>;

struct Inner<V> {
    map: Option<Map<V>>,
    bytes: usize,
}

impl<V> std::fmt::Debug for SharedMemo<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (entries, bytes) = self.inner.lock().map_or((0, 0), |m| {
            (m.map.as_ref().map_or(0, |map| map.len()), m.bytes)
        });
        f.debug_struct("SharedMemo")
            .field("entries", &entries)
            .field("bytes", &bytes)
            .field("limit", &self.limit)
            .finish()
    }
}

impl<V> SharedMemo<V> {
    pub(crate) fn new(limit: usize, entries: usize) -> SharedMemo<V> {
        SharedMemo {
            inner: Mutex::new(Inner {
                map: None,
                bytes: 0,
            }),
            limit,
            entries: NonZeroUsize::new(entries).unwrap_or(NonZeroUsize::MIN),
        }
    }

    /// The value under `key`. (A lock poisoned by a panic elsewhere only turns the memo off:
    /// what it holds is never half written.)
    pub(crate) fn get(&self, key: &[u32]) -> Option<Arc<V>> {
        let mut m = self.inner.lock().ok()?;
        m.map.as_mut()?.get(key).map(|(v, _)| v.clone())
    }

    /// Puts `value`, of `size` bytes, under `key`, dropping the least recently used entries
    /// while there are too many or they take too many bytes; returns it (shared with the memo
    /// when kept).
    pub(crate) fn put(&self, key: &[u32], value: V, size: usize) -> Arc<V> {
        let value = Arc::new(value);
        let size = size + key.len() * 4 + 64;
        if size > self.limit {
            return value;
        }
        let Ok(mut m) = self.inner.lock() else {
            return value;
        };
        let Inner { map, bytes } = &mut *m;
        let map = map.get_or_insert_with(|| LruCache::with_hasher(self.entries, FxBuildHasher));
        // The entry replaced, or the one dropped to make room.
        if let Some((_, (_, old))) = map.push(key.into(), (value.clone(), size)) {
            *bytes -= old;
        }
        *bytes += size;
        while *bytes > self.limit {
            match map.pop_lru() {
                Some((_, (_, old))) => *bytes -= old,
                None => break,
            }
        }
        value
    }

    /// Forgets everything.
    pub(crate) fn clear(&self) {
        if let Ok(mut m) = self.inner.lock() {
            m.map = None;
            m.bytes = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SharedMemo;

    #[test]
    fn a_memo_holds_at_most_its_bounds_dropping_the_least_recently_used() {
        // Each entry below takes 400 bytes, 4 for its key and 64 beside: 468.
        let m: SharedMemo<u32> = SharedMemo::new(1000, 3);
        m.put(&[1], 1, 400);
        m.put(&[2], 2, 400);
        assert_eq!(
            m.get(&[1]).as_deref(),
            Some(&1),
            "1 is now the most recently used"
        );
        m.put(&[3], 3, 400);
        assert_eq!(m.get(&[2]), None, "dropped for room in bytes");
        assert_eq!(
            (m.get(&[1]).as_deref(), m.get(&[3]).as_deref()),
            (Some(&1), Some(&3))
        );
        m.put(&[4], 4, 3000);
        assert_eq!(m.get(&[4]), None, "larger than the bound: not kept");
        assert_eq!(
            m.get(&[1]).as_deref(),
            Some(&1),
            "and nothing dropped for it"
        );
        let small: SharedMemo<u32> = SharedMemo::new(1 << 20, 3);
        for k in 0..5 {
            small.put(&[k], k, 1);
        }
        let kept: Vec<_> = (0..5).filter(|&k| small.get(&[k]).is_some()).collect();
        assert_eq!(kept, [2, 3, 4], "at most 3 entries");
        small.clear();
        assert_eq!(small.get(&[4]), None);
    }
}
