//! Seeded, allocation-free token sampling over masked logits.
