//! Constrained decoding wired behind model, tokenizer, constraint and sampler traits.
