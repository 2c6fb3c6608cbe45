//! The [`TokenId`] newtype: a token's index in the model's vocabulary, checked against the
//! limit that the tries can encode.

use std::fmt;

/// A token's id: its index in the model's vocabulary (its row in the embedding matrix).
///
/// The constructor is checked: an id is at most [`TokenId::MAX`] (2^23 − 2 = 8,388,606), the
/// largest id that fits in the 23 bits a trie node spends on it, one value of which means "no
/// token" (see the bit budget in [`crate::FlatTrie`]). The largest vocabularies in use have
/// about 262k ids, 32 times less.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct TokenId(u32);

impl TokenId {
    /// The largest valid id: 2^23 − 2.
    pub const MAX: u32 = (1 << 23) - 2;

    /// The number of distinct ids, [`TokenId::MAX`] + 1: the largest vocabulary length.
    pub const LIMIT: usize = Self::MAX as usize + 1;

    /// Returns the id `id`, or `None` when it is over [`TokenId::MAX`].
    #[inline]
    pub const fn new(id: u32) -> Option<TokenId> {
        if id <= Self::MAX {
            Some(TokenId(id))
        } else {
            None
        }
    }

    /// Builds an id known to be in range (callers check `id <= MAX` or derive `id` from a
    /// vocabulary length that was checked against [`TokenId::LIMIT`]).
    #[inline]
    pub(crate) const fn new_unchecked(id: u32) -> TokenId {
        debug_assert!(id <= Self::MAX);
        TokenId(id)
    }

    /// The id as a `u32`.
    #[inline]
    pub const fn as_u32(self) -> u32 {
        self.0
    }

    /// The id as a `usize`, to index per-token tables.
    #[inline]
    pub const fn as_usize(self) -> usize {
        self.0 as usize
    }
}

impl From<TokenId> for u32 {
    #[inline]
    fn from(id: TokenId) -> u32 {
        id.0
    }
}

impl From<TokenId> for usize {
    #[inline]
    fn from(id: TokenId) -> usize {
        id.0 as usize
    }
}

impl TryFrom<u32> for TokenId {
    type Error = crate::Error;

    fn try_from(id: u32) -> Result<TokenId, crate::Error> {
        TokenId::new(id).ok_or(crate::Error::TokenIdTooLarge {
            id: u64::from(id),
            max: Self::MAX,
        })
    }
}

impl TryFrom<usize> for TokenId {
    type Error = crate::Error;

    fn try_from(id: usize) -> Result<TokenId, crate::Error> {
        u32::try_from(id)
            .ok()
            .and_then(TokenId::new)
            .ok_or(crate::Error::TokenIdTooLarge {
                id: id as u64,
                max: Self::MAX,
            })
    }
}

impl fmt::Debug for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TokenId({})", self.0)
    }
}

impl fmt::Display for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_constructor_enforces_the_limit() {
        assert_eq!(TokenId::new(0).map(TokenId::as_u32), Some(0));
        assert_eq!(
            TokenId::new(TokenId::MAX).map(TokenId::as_u32),
            Some(TokenId::MAX)
        );
        assert_eq!(TokenId::new(TokenId::MAX + 1), None);
        assert!(TokenId::try_from(u32::MAX).is_err());
        assert!(TokenId::try_from(TokenId::LIMIT).is_err());
        assert_eq!(TokenId::try_from(7usize).map(usize::from).ok(), Some(7));
    }
}
