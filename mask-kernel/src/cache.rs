//! A bounded LRU cache of masks, owned by the caller, and one that the sessions of a grammar
//! share between threads.

use std::borrow::Borrow;
use std::sync::{Arc, Mutex, PoisonError};

use fixedbitset::FixedBitSet;
use lru::LruCache;
use rustc_hash::FxBuildHasher;

/// Hit and miss counters of a [`MaskCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Masks served from the cache.
    pub hits: u64,
    /// Masks computed.
    pub misses: u64,
    /// Inside-lexeme sets served from the cache.
    pub inside_hits: u64,
    /// Inside-lexeme sets computed.
    pub inside_misses: u64,
    /// Entries evicted to stay within capacity.
    pub evictions: u64,
}

/// A token set as the cache keeps it: a bitset with its number of members, the ids when they
/// are few (most masks allow a handful of tokens; a bitset over 262k tokens is 32 KiB), or one
/// of the kernel's precomputed sets plus a few ids (most masks inside a string or key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stored {
    Dense(FixedBitSet, usize),
    Sparse(Box<[u32]>),
    /// The kernel's set, the ids outside it, and the number of members.
    Based(Base, Box<[u32]>, usize),
}

/// A precomputed set of the [`Kernel`](crate::Kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Base {
    /// [`Kernel::key_content`](crate::Kernel::key_content).
    KeyContent,
    /// [`Kernel::string_content_at`](crate::Kernel::string_content_at).
    StringContent { level: u8, budget: Option<u32> },
}

impl Stored {
    /// Members.
    pub(crate) fn count(&self) -> usize {
        match self {
            Stored::Dense(_, n) | Stored::Based(_, _, n) => *n,
            Stored::Sparse(ids) => ids.len(),
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        match self {
            Stored::Dense(set, _) => set.len().div_ceil(8),
            Stored::Sparse(ids) | Stored::Based(_, ids, _) => ids.len() * 4,
        }
    }
}

/// Masks keyed by recognizer state, with a capacity in bytes and real LRU eviction.
///
/// Keys come from [`Recognizer::state_key`](crate::Recognizer::state_key) and are only
/// meaningful for one grammar and one kernel: keep one cache per (grammar, vocabulary) pair.
pub struct MaskCache {
    /// Full masks (shared with a session loading one, or with another cache).
    masks: LruCache<Box<[u32]>, Arc<Stored>, FxBuildHasher>,
    /// Sets of the tokens that stay inside a lexeme, by lexeme state.
    inside: LruCache<Box<[u32]>, Stored, FxBuildHasher>,
    capacity: usize,
    used: usize,
    stats: CacheStats,
}

impl std::fmt::Debug for MaskCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MaskCache")
            .field("masks", &self.masks.len())
            .field("inside", &self.inside.len())
            .field("used_bytes", &self.used)
            .field("capacity_bytes", &self.capacity)
            .field("stats", &self.stats)
            .finish()
    }
}

fn entry_bytes(key: &[u32], set: &Stored) -> usize {
    key.len() * 4 + set.bytes() + 96
}

fn count(hit: bool, hits: &mut u64, misses: &mut u64) {
    if hit {
        *hits += 1;
    } else {
        *misses += 1;
    }
}

/// Puts `set` under `key`; returns the bytes of the new entry and of the one it replaced.
fn replace<S: Borrow<Stored>>(
    map: &mut LruCache<Box<[u32]>, S, FxBuildHasher>,
    key: &[u32],
    set: S,
) -> (usize, usize) {
    let added = entry_bytes(key, set.borrow());
    let removed = map
        .put(key.into(), set)
        .map_or(0, |old| entry_bytes(key, old.borrow()));
    (added, removed)
}

impl MaskCache {
    /// A cache holding at most `capacity_bytes` of keys and masks.
    pub fn new(capacity_bytes: usize) -> MaskCache {
        MaskCache {
            masks: LruCache::unbounded_with_hasher(FxBuildHasher),
            inside: LruCache::unbounded_with_hasher(FxBuildHasher),
            capacity: capacity_bytes,
            used: 0,
            stats: CacheStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Bytes in use.
    pub fn used_bytes(&self) -> usize {
        self.used
    }

    /// Entries (masks plus inside sets).
    pub fn len(&self) -> usize {
        self.masks.len() + self.inside.len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every entry (counters are kept).
    pub fn clear(&mut self) {
        self.masks.clear();
        self.inside.clear();
        self.used = 0;
    }

    /// A cached mask.
    pub(crate) fn get_mask(&mut self, key: &[u32]) -> Option<&Arc<Stored>> {
        let found = self.masks.get(key);
        count(
            found.is_some(),
            &mut self.stats.hits,
            &mut self.stats.misses,
        );
        found
    }

    /// Counts a mask looked up elsewhere (in a [`SharedMaskCache`]) for this cache's caller.
    pub(crate) fn count_mask(&mut self, hit: bool) {
        count(hit, &mut self.stats.hits, &mut self.stats.misses);
    }

    pub(crate) fn put_mask(&mut self, key: &[u32], mask: Arc<Stored>) {
        let (added, removed) = replace(&mut self.masks, key, mask);
        // The replaced entry was counted in `used`.
        self.used = self.used + added - removed;
        self.evict();
    }

    /// A cached inside set.
    pub(crate) fn get_inside(&mut self, key: &[u32]) -> Option<&Stored> {
        let found = self.inside.get(key);
        let stats = &mut self.stats;
        count(
            found.is_some(),
            &mut stats.inside_hits,
            &mut stats.inside_misses,
        );
        found
    }

    pub(crate) fn put_inside(&mut self, key: &[u32], set: Stored) {
        let (added, removed) = replace(&mut self.inside, key, set);
        self.used = self.used + added - removed;
        self.evict();
    }

    fn evict(&mut self) {
        while self.used > self.capacity {
            // Evict full masks first: inside sets are shared by many states.
            let popped = match self.masks.pop_lru() {
                Some((k, m)) => Some(entry_bytes(&k, &m)),
                None => self.inside.pop_lru().map(|(k, m)| entry_bytes(&k, &m)),
            };
            match popped {
                Some(bytes) => {
                    self.used -= bytes;
                    self.stats.evictions += 1;
                }
                None => break,
            }
        }
    }
}

impl Default for MaskCache {
    /// 64 MiB.
    fn default() -> Self {
        MaskCache::new(64 << 20)
    }
}

/// A mask cache for every session of one grammar, in any threads: the matchers of a grammar in
/// a host engine, or the requests for one schema in a server. A state one session met is a hit
/// for the next. The lock is held to look a mask up or to put one, never while a mask is
/// computed; a hit shares the stored mask instead of copying it under the lock.
///
/// Keys are only meaningful for one grammar and one kernel, as in a [`MaskCache`].
#[derive(Debug)]
pub struct SharedMaskCache {
    inner: Mutex<MaskCache>,
}

impl SharedMaskCache {
    /// A cache holding at most `capacity_bytes` of keys and masks.
    pub fn new(capacity_bytes: usize) -> SharedMaskCache {
        SharedMaskCache {
            inner: Mutex::new(MaskCache::new(capacity_bytes)),
        }
    }

    /// The cache, whole even after a panic elsewhere: entries are put and dropped whole.
    fn lock(&self) -> std::sync::MutexGuard<'_, MaskCache> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counters so far, over every session (the inside-set counters stay with each session's
    /// own cache).
    pub fn stats(&self) -> CacheStats {
        self.lock().stats()
    }

    /// Bytes in use.
    pub fn used_bytes(&self) -> usize {
        self.lock().used_bytes()
    }

    /// Masks held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops every entry (counters are kept).
    pub fn clear(&self) {
        self.lock().clear();
    }

    pub(crate) fn get_mask(&self, key: &[u32]) -> Option<Arc<Stored>> {
        self.lock().get_mask(key).cloned()
    }

    pub(crate) fn put_mask(&self, key: &[u32], mask: Arc<Stored>) {
        self.lock().put_mask(key, mask);
    }
}

impl Default for SharedMaskCache {
    /// 64 MiB.
    fn default() -> Self {
        SharedMaskCache::new(64 << 20)
    }
}
