//! Allowed-token masks for a byte-level recognizer over a vocabulary trie.
