//! Benchmarks live in `benches/`; see the README.
