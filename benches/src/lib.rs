//! Criterion benchmarks and side-by-side runs against peer engines.
