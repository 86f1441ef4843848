//! Benchmarks of the fencing core beside their baselines, in `benches/`.
//!
//! `memory_put`: a fenced put on `memory:` beside a bare
//! `Mutex<HashMap>` check-and-set, at 1 thread, 2 threads on distinct scopes
//! and 2 threads on one scope, then a summary of the ratios of the same run.
//!
//! ```text
//! cargo bench -p fencing-benches --bench memory_put              # full run
//! cargo bench -p fencing-benches --bench memory_put -- --quick   # smoke, < ~30 s
//! cargo test -p fencing-benches --benches                        # one iteration each
//! ```
