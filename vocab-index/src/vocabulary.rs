//! [`Vocabulary`]: the exact byte string of every token id, with special, end-of-sequence,
//! end-of-turn and beginning-of-sequence ids, stored in one flat arena.

use std::fmt;

use fixedbitset::FixedBitSet;

use crate::{Error, Result, TokenId};

/// Every token id's exact bytes, plus which ids are special.
///
/// Ids run from 0 to `len() - 1` without gaps. An id the tokenizer does not define has empty
/// bytes (tries skip empty tokens). Several ids may share the same bytes (Gemma 3's `▁` and
/// `<0x20>` both stand for a space); all are kept, and [`Vocabulary::token_ids`] returns all of
/// them.
///
/// Storage: one byte arena, one `u32` offset per id, a bitset of special ids and the ids sorted
/// by bytes (for lookups and for building tries without sorting again): about 8 bytes per id
/// plus the token bytes.
#[derive(Clone)]
pub struct Vocabulary {
    /// All token bytes, concatenated in id order.
    arena: Vec<u8>,
    /// `offsets[i]..offsets[i + 1]` is id `i`'s range in `arena`; `len() + 1` entries.
    offsets: Vec<u32>,
    special: FixedBitSet,
    /// Every id, sorted by (bytes, id).
    sorted: Vec<TokenId>,
    eos: Vec<TokenId>,
    end_of_turn: Vec<TokenId>,
    bos: Option<TokenId>,
    max_token_len: usize,
}

impl Vocabulary {
    /// Builds a vocabulary from each id's bytes (`tokens[i]` is id `i`) and the special ids.
    ///
    /// No end-of-sequence, end-of-turn or beginning-of-sequence ids are set; add them with
    /// [`Vocabulary::with_eos_ids`], [`Vocabulary::with_end_of_turn_ids`] and
    /// [`Vocabulary::with_bos_id`].
    ///
    /// # Errors
    ///
    /// [`Error::TokenIdTooLarge`] with more than [`TokenId::LIMIT`] tokens,
    /// [`Error::VocabularyTooLarge`] when the bytes add up to 4 GiB or more,
    /// [`Error::TokenIdOutOfRange`] for a special id not below the number of tokens.
    pub fn new<I, B>(tokens: I, special: impl IntoIterator<Item = TokenId>) -> Result<Vocabulary>
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        let mut arena = Vec::new();
        let mut offsets = vec![0u32];
        for token in tokens {
            arena.extend_from_slice(token.as_ref());
            let end = u32::try_from(arena.len()).map_err(|_| Error::VocabularyTooLarge {
                bytes: arena.len(),
                limit: u32::MAX as usize,
            })?;
            offsets.push(end);
            if offsets.len() - 1 > TokenId::LIMIT {
                return Err(Error::TokenIdTooLarge {
                    id: (offsets.len() - 2) as u64,
                    max: TokenId::MAX,
                });
            }
        }
        Self::from_parts(arena, offsets, special)
    }

    /// Builds from an arena and offsets already checked against the limits.
    pub(crate) fn from_parts(
        arena: Vec<u8>,
        offsets: Vec<u32>,
        special: impl IntoIterator<Item = TokenId>,
    ) -> Result<Vocabulary> {
        let len = offsets.len() - 1;
        debug_assert!(len <= TokenId::LIMIT);
        let mut special_set = FixedBitSet::with_capacity(len);
        for id in special {
            check_id(id, len)?;
            special_set.insert(id.as_usize());
        }
        let max_token_len = offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .max()
            .unwrap_or(0);
        let mut vocab = Vocabulary {
            arena,
            offsets,
            special: special_set,
            sorted: Vec::new(),
            eos: Vec::new(),
            end_of_turn: Vec::new(),
            bos: None,
            max_token_len,
        };
        vocab.sorted = vocab.sort_ids();
        Ok(vocab)
    }

    /// Every id, sorted by (bytes, id).
    ///
    /// Sorts `(key, id)` pairs, where the key is the first 8 bytes read big-endian and padded
    /// with zeros: the key order never contradicts the byte order, so only runs of equal keys
    /// (tokens sharing their first 8 bytes, or ending in zeros) need comparing whole. That
    /// keeps the sort in one cache-friendly array instead of chasing every token's bytes.
    fn sort_ids(&self) -> Vec<TokenId> {
        let key = |bytes: &[u8]| {
            let mut k = [0u8; 8];
            let n = bytes.len().min(8);
            k[..n].copy_from_slice(&bytes[..n]);
            u64::from_be_bytes(k)
        };
        let mut keyed: Vec<(u64, TokenId)> =
            self.iter().map(|(id, bytes)| (key(bytes), id)).collect();
        keyed.sort_unstable();
        let mut sorted: Vec<TokenId> = keyed.iter().map(|&(_, id)| id).collect();
        // Ids are unique, so unstable sorts by (bytes, id) are deterministic.
        let mut start = 0;
        for run in keyed.chunk_by(|a, b| a.0 == b.0) {
            let end = start + run.len();
            if run.len() > 1 {
                sorted[start..end]
                    .sort_unstable_by(|&a, &b| self.bytes(a).cmp(self.bytes(b)).then(a.cmp(&b)));
            }
            start = end;
        }
        sorted
    }

    /// Sets the end-of-sequence ids (sorted, deduplicated).
    ///
    /// # Errors
    ///
    /// [`Error::TokenIdOutOfRange`] for an id not below [`Vocabulary::len`].
    pub fn with_eos_ids(mut self, ids: impl IntoIterator<Item = TokenId>) -> Result<Vocabulary> {
        self.eos = self.checked_set(ids)?;
        Ok(self)
    }

    /// Sets the end-of-turn ids (sorted, deduplicated).
    ///
    /// # Errors
    ///
    /// [`Error::TokenIdOutOfRange`] for an id not below [`Vocabulary::len`].
    pub fn with_end_of_turn_ids(
        mut self,
        ids: impl IntoIterator<Item = TokenId>,
    ) -> Result<Vocabulary> {
        self.end_of_turn = self.checked_set(ids)?;
        Ok(self)
    }

    /// Sets the beginning-of-sequence id.
    ///
    /// # Errors
    ///
    /// [`Error::TokenIdOutOfRange`] for an id not below [`Vocabulary::len`].
    pub fn with_bos_id(mut self, id: Option<TokenId>) -> Result<Vocabulary> {
        if let Some(id) = id {
            check_id(id, self.len())?;
        }
        self.bos = id;
        Ok(self)
    }

    fn checked_set(&self, ids: impl IntoIterator<Item = TokenId>) -> Result<Vec<TokenId>> {
        let mut out = Vec::new();
        for id in ids {
            check_id(id, self.len())?;
            out.push(id);
        }
        out.sort_unstable();
        out.dedup();
        Ok(out)
    }

    /// The number of ids: the largest id + 1, added and special tokens included.
    #[inline]
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether the vocabulary has no ids.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The exact bytes of `id`.
    ///
    /// # Panics
    ///
    /// When `id` is not below [`Vocabulary::len`], like slice indexing; use
    /// [`Vocabulary::get`] for ids from an untrusted source (a model whose embedding matrix has
    /// more rows than the tokenizer has ids, for example).
    #[inline]
    pub fn bytes(&self, id: TokenId) -> &[u8] {
        let i = id.as_usize();
        &self.arena[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    /// The exact bytes of `id`, or `None` when it is out of range.
    #[inline]
    pub fn get(&self, id: TokenId) -> Option<&[u8]> {
        (id.as_usize() < self.len()).then(|| self.bytes(id))
    }

    /// Every `(id, bytes)` pair in id order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (TokenId, &[u8])> + '_ {
        (0..self.len() as u32).map(|i| {
            let id = TokenId::new_unchecked(i);
            (id, self.bytes(id))
        })
    }

    /// The special ids (control tokens such as `<|eot_id|>`): their bytes are their content,
    /// but no grammar produces them, so default tries leave them out.
    #[inline]
    pub fn special(&self) -> &FixedBitSet {
        &self.special
    }

    /// Whether `id` is special (false for out-of-range ids).
    #[inline]
    pub fn is_special(&self, id: TokenId) -> bool {
        self.special.contains(id.as_usize())
    }

    /// The end-of-sequence ids, sorted. See [`Vocabulary::from_tokenizer`] for where they come
    /// from when loaded from a tokenizer.
    #[inline]
    pub fn eos_ids(&self) -> &[TokenId] {
        &self.eos
    }

    /// Whether `id` is an end-of-sequence id.
    #[inline]
    pub fn is_eos(&self, id: TokenId) -> bool {
        self.eos.binary_search(&id).is_ok()
    }

    /// The end-of-turn ids, sorted: markers that close a message in a chat template
    /// (`<|eot_id|>`, `<|im_end|>`, `<end_of_turn>`, ...). An id may be both end-of-turn and
    /// end-of-sequence (Qwen3's `<|im_end|>` is its configured EOS). A generation loop usually
    /// stops on either.
    #[inline]
    pub fn end_of_turn_ids(&self) -> &[TokenId] {
        &self.end_of_turn
    }

    /// The beginning-of-sequence id, if the tokenizer has one.
    #[inline]
    pub fn bos_id(&self) -> Option<TokenId> {
        self.bos
    }

    /// All ids whose bytes are exactly `bytes`, ascending (empty when none).
    pub fn token_ids(&self, bytes: &[u8]) -> &[TokenId] {
        let start = self.sorted.partition_point(|&id| self.bytes(id) < bytes);
        let len = self.sorted[start..].partition_point(|&id| self.bytes(id) == bytes);
        &self.sorted[start..start + len]
    }

    /// The lowest id whose bytes are exactly `bytes`.
    pub fn token_id(&self, bytes: &[u8]) -> Option<TokenId> {
        self.token_ids(bytes).first().copied()
    }

    /// Every id, sorted by (bytes, id): the order of a depth-first trie walk.
    #[inline]
    pub fn sorted_ids(&self) -> &[TokenId] {
        &self.sorted
    }

    /// Groups of two or more ids sharing the same bytes, each ascending, in byte order.
    pub fn duplicates(&self) -> impl Iterator<Item = &[TokenId]> + '_ {
        self.sorted
            .chunk_by(|&a, &b| self.bytes(a) == self.bytes(b))
            .filter(|group| group.len() > 1)
    }

    /// The ids a default trie indexes: not special, not empty, ascending.
    pub fn indexable_ids(&self) -> impl Iterator<Item = TokenId> + '_ {
        self.iter()
            .filter(|&(id, bytes)| !bytes.is_empty() && !self.is_special(id))
            .map(|(id, _)| id)
    }

    /// The longest token, in bytes.
    #[inline]
    pub fn max_token_len(&self) -> usize {
        self.max_token_len
    }

    /// A SHA-256 digest of everything the vocabulary holds: each id's bytes, the special ids,
    /// and the end-of-sequence, end-of-turn and beginning-of-sequence ids. Two vocabularies
    /// with the same fingerprint build the same tables, so tables kept on disk can be keyed by
    /// it (see `mask_kernel::Kernel::save`).
    #[must_use]
    pub fn fingerprint(&self) -> [u8; 32] {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        let ids = |h: &mut sha2::Sha256, label: &[u8], ids: &[TokenId]| {
            h.update(label);
            h.update((ids.len() as u64).to_le_bytes());
            for id in ids {
                h.update(id.as_u32().to_le_bytes());
            }
        };
        h.update(b"vocabulary 1");
        h.update((self.len() as u64).to_le_bytes());
        for offset in &self.offsets {
            h.update(offset.to_le_bytes());
        }
        h.update(&self.arena);
        for block in self.special.as_slice() {
            h.update(block.to_le_bytes());
        }
        ids(&mut h, b"eos", &self.eos);
        ids(&mut h, b"end of turn", &self.end_of_turn);
        ids(&mut h, b"bos", self.bos.as_slice());
        h.finalize().into()
    }

    /// Heap bytes held.
    pub fn memory_bytes(&self) -> usize {
        self.arena.capacity()
            + self.offsets.capacity() * 4
            + self.sorted.capacity() * 4
            + self.special.len().div_ceil(8)
            + (self.eos.capacity() + self.end_of_turn.capacity()) * 4
    }
}

fn check_id(id: TokenId, len: usize) -> Result<()> {
    if id.as_usize() < len {
        Ok(())
    } else {
        Err(Error::TokenIdOutOfRange {
            id: id.as_u32(),
            len,
        })
    }
}

impl fmt::Debug for Vocabulary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vocabulary")
            .field("len", &self.len())
            .field("special", &self.special.count_ones(..))
            .field("eos", &self.eos)
            .field("end_of_turn", &self.end_of_turn)
            .field("bos", &self.bos)
            .field("token_bytes", &self.arena.len())
            .field("max_token_len", &self.max_token_len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: u32) -> TokenId {
        TokenId::new(i).unwrap()
    }

    #[test]
    fn lookups_keep_all_duplicates() {
        let v = Vocabulary::new(["b", "a", "", "ab", "a", "<s>"], [id(5)]).unwrap();
        assert_eq!(v.len(), 6);
        assert_eq!(v.bytes(id(3)), b"ab");
        assert_eq!(v.get(id(6)), None);
        assert_eq!(v.token_ids(b"a"), &[id(1), id(4)]);
        assert_eq!(v.token_id(b"a"), Some(id(1)));
        assert_eq!(v.token_ids(b"c"), &[]);
        assert_eq!(v.token_ids(b""), &[id(2)]);
        assert_eq!(
            v.duplicates().collect::<Vec<_>>(),
            vec![&[id(1), id(4)][..]]
        );
        assert!(v.is_special(id(5)) && !v.is_special(id(0)) && !v.is_special(id(99)));
        assert_eq!(
            v.indexable_ids().collect::<Vec<_>>(),
            vec![id(0), id(1), id(3), id(4)]
        );
        assert_eq!(v.sorted_ids(), &[id(2), id(5), id(1), id(4), id(3), id(0)]);
        assert_eq!(v.max_token_len(), 3);
    }

    #[test]
    fn out_of_range_ids_are_errors() {
        assert!(matches!(
            Vocabulary::new(["a"], [id(1)]),
            Err(Error::TokenIdOutOfRange { id: 1, len: 1 })
        ));
        let v = Vocabulary::new(["a", "b"], []).unwrap();
        assert!(v.clone().with_eos_ids([id(2)]).is_err());
        assert!(v.clone().with_bos_id(Some(id(2))).is_err());
        let v = v.with_eos_ids([id(1), id(0), id(1)]).unwrap();
        assert_eq!(v.eos_ids(), &[id(0), id(1)]);
        assert!(v.is_eos(id(1)));
    }

    #[test]
    fn debug_is_short() {
        let v = Vocabulary::new((0..10_000u32).map(|i| i.to_string()), []).unwrap();
        let s = format!("{v:?}");
        assert!(s.len() < 200, "{s}");
        assert!(s.contains("len: 10000"));
    }
}
