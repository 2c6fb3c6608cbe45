//! The 24-bit token cell both tries store per node (none, one id, or a group of duplicate
//! ids in a side table), and the selection of the ids a trie indexes.

use fixedbitset::FixedBitSet;

use crate::index::NodeTokens;
use crate::{Error, Result, TokenId, Vocabulary};

/// Bits of a token cell.
///
/// Bit budget (24 bits):
/// - bit 23 clear: one token id in bits 0..23 (up to 2^23 − 2 = [`TokenId::MAX`]), or, all 23
///   bits set, no token ([`NO_TOKEN`]);
/// - bit 23 set: a group of duplicate ids, bits 0..23 index the side table (2^23 groups).
///
/// Testing bit 23 first sends the rare duplicate groups to a cold path; the common cases (no
/// token, one token) then differ only in value, which a walk can select without a branch.
pub(crate) const CELL_BITS: u32 = 24;
/// Set in a cell that names a duplicate group.
pub(crate) const DUP_FLAG: u32 = 1 << (CELL_BITS - 1);
/// The cell of a node without tokens.
pub(crate) const NO_TOKEN: u32 = DUP_FLAG - 1;
/// The number of duplicate groups a cell can name.
pub(crate) const MAX_DUP_GROUPS: usize = DUP_FLAG as usize;

const _: () = assert!(TokenId::MAX < NO_TOKEN);

/// Groups of token ids that share the same bytes, stored back to back.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Duplicates {
    /// `starts[g]..starts[g + 1]` is group `g` in `ids`; one more entry than groups (or empty).
    starts: Vec<u32>,
    ids: Vec<TokenId>,
}

impl Duplicates {
    /// Adds `id` to the token cell `cell`, which must be the cell of the node most recently
    /// given a token (duplicates arrive consecutively in byte order, so the group to extend is
    /// always the last one). Returns the new cell.
    pub(crate) fn add(&mut self, cell: u32, id: TokenId) -> Result<u32> {
        if cell == NO_TOKEN {
            return Ok(id.as_u32());
        }
        if cell & DUP_FLAG == 0 {
            let group = self.starts.len();
            if group >= MAX_DUP_GROUPS {
                return Err(Error::TrieTooLarge {
                    what: "duplicate groups",
                    needed: group + 1,
                    limit: MAX_DUP_GROUPS,
                });
            }
            self.starts.push(self.ids.len() as u32);
            self.ids.push(TokenId::new_unchecked(cell));
            self.ids.push(id);
            return Ok(DUP_FLAG | group as u32);
        }
        debug_assert_eq!((cell & !DUP_FLAG) as usize + 1, self.starts.len());
        self.ids.push(id);
        Ok(cell)
    }

    /// Closes the last group; call once after the last [`Duplicates::add`].
    pub(crate) fn finish(&mut self) {
        if !self.starts.is_empty() {
            self.starts.push(self.ids.len() as u32);
        }
        self.starts.shrink_to_fit();
        self.ids.shrink_to_fit();
    }

    /// The ids of group `group`.
    #[inline]
    pub(crate) fn group(&self, group: u32) -> &[TokenId] {
        let g = group as usize;
        match (self.starts.get(g), self.starts.get(g + 1)) {
            (Some(&s), Some(&e)) => self.ids.get(s as usize..e as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The tokens of a cell.
    #[inline]
    pub(crate) fn tokens(&self, cell: u32) -> NodeTokens<'_> {
        if cell & DUP_FLAG != 0 {
            NodeTokens::many(self.group(cell & !DUP_FLAG))
        } else if cell == NO_TOKEN {
            NodeTokens::none()
        } else {
            NodeTokens::one(TokenId::new_unchecked(cell))
        }
    }

    /// Reports the tokens of `cell` to `visitor`; with `SPARE`, calls `token(spare)` for a cell
    /// without tokens (see [`crate::TrieVisitor::spare_id`]).
    #[inline(always)]
    pub(crate) fn report<V: crate::TrieVisitor, const SPARE: bool>(
        &self,
        cell: u32,
        spare: TokenId,
        visitor: &mut V,
    ) {
        if cell & DUP_FLAG == 0 {
            if SPARE {
                // A select, not a branch: ids and NO_TOKEN differ only in value.
                let id = if cell == NO_TOKEN {
                    spare
                } else {
                    TokenId::new_unchecked(cell)
                };
                visitor.token(id);
            } else if cell != NO_TOKEN {
                visitor.token(TokenId::new_unchecked(cell));
            }
        } else {
            self.visit_group(cell, visitor);
        }
    }

    /// Reports the ids of duplicate cell `cell` (kept out of the walk loop).
    #[cold]
    #[inline(never)]
    fn visit_group<V: crate::TrieVisitor>(&self, cell: u32, visitor: &mut V) {
        for &id in self.group(cell & !DUP_FLAG) {
            visitor.token(id);
        }
    }

    /// The number of groups.
    pub(crate) fn num_groups(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Heap bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        (self.starts.capacity() + self.ids.capacity()) * 4
    }
}

/// The ids to index, in trie (byte) order: those of `ids` that are in range and not empty,
/// each once, ordered by (bytes, id).
pub(crate) fn select_sorted(
    vocab: &Vocabulary,
    ids: impl IntoIterator<Item = TokenId>,
) -> Result<Vec<TokenId>> {
    let len = vocab.len();
    let mut wanted = FixedBitSet::with_capacity(len);
    let mut count = 0usize;
    for id in ids {
        if id.as_usize() >= len {
            return Err(Error::TokenIdOutOfRange {
                id: id.as_u32(),
                len,
            });
        }
        if !wanted.put(id.as_usize()) {
            count += 1;
        }
    }
    let mut out = Vec::with_capacity(count);
    out.extend(
        vocab
            .sorted_ids()
            .iter()
            .copied()
            .filter(|id| wanted.contains(id.as_usize()) && !vocab.bytes(*id).is_empty()),
    );
    Ok(out)
}

/// Serde for a table indexed by byte (`Box<[u32; 256]>`, which serde has no impl for): a
/// sequence of 256 values.
pub(crate) mod byte_table {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(crate) fn serialize<S: Serializer>(table: &[u32; 256], s: S) -> Result<S::Ok, S::Error> {
        table.as_slice().serialize(s)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Box<[u32; 256]>, D::Error> {
        let values = Vec::<u32>::deserialize(d)?;
        let len = values.len();
        values
            .into_boxed_slice()
            .try_into()
            .map_err(|_| serde::de::Error::invalid_length(len, &"256 values, one per byte"))
    }
}
