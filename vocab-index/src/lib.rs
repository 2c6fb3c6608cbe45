//! A tokenizer's vocabulary as exact token byte strings, indexed by swappable byte tries.
