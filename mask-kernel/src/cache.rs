//! A bounded LRU cache of masks, owned by the caller.

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

/// Masks keyed by recognizer state, with a capacity in bytes and real LRU eviction.
///
/// Keys come from [`Recognizer::state_key`](crate::Recognizer::state_key) and are only
/// meaningful for one grammar and one kernel: keep one cache per (grammar, vocabulary) pair.
pub struct MaskCache {
    /// Full masks with their number of allowed tokens.
    masks: LruCache<Box<[u32]>, (FixedBitSet, usize), FxBuildHasher>,
    inside: LruCache<Box<[u32]>, FixedBitSet, FxBuildHasher>,
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

fn entry_bytes(key: &[u32], mask: &FixedBitSet) -> usize {
    key.len() * 4 + mask.len().div_ceil(8) + 96
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

    /// A cached mask and its number of allowed tokens.
    pub(crate) fn get_mask(&mut self, key: &[u32]) -> Option<(&FixedBitSet, usize)> {
        match self.masks.get(key) {
            Some((m, n)) => {
                self.stats.hits += 1;
                Some((m, *n))
            }
            None => {
                self.stats.misses += 1;
                None
            }
        }
    }

    pub(crate) fn put_mask(&mut self, key: &[u32], mask: &FixedBitSet, allowed: usize) {
        self.used += entry_bytes(key, mask);
        if let Some((old, _)) = self.masks.put(key.into(), (mask.clone(), allowed)) {
            self.used -= entry_bytes(key, &old);
        }
        self.evict();
    }

    pub(crate) fn get_inside(&mut self, key: &[u32]) -> Option<&FixedBitSet> {
        match self.inside.get(key) {
            Some(m) => {
                self.stats.inside_hits += 1;
                Some(m)
            }
            None => {
                self.stats.inside_misses += 1;
                None
            }
        }
    }

    pub(crate) fn put_inside(&mut self, key: &[u32], set: &FixedBitSet) {
        self.used += entry_bytes(key, set);
        if let Some(old) = self.inside.put(key.into(), set.clone()) {
            self.used -= entry_bytes(key, &old);
        }
        self.evict();
    }

    fn evict(&mut self) {
        while self.used > self.capacity {
            // Evict full masks first: inside sets are shared by many states.
            let popped = self
                .masks
                .pop_lru()
                .map(|(k, (m, _))| (k, m))
                .or_else(|| self.inside.pop_lru());
            match popped {
                Some((k, m)) => {
                    self.used -= entry_bytes(&k, &m);
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
