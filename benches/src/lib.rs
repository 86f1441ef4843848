//! Benchmarks of the fencing core and its faces beside their baselines.
//!
//! The benches live in `benches/benches/` (`memory_put`, `sqlite`,
//! `postgres`, `stale_record`, and `scale`: cost against the number of
//! scopes, entries and value size); the C ABI, Python and Node benches live
//! with their faces. `scripts/bench` runs them all in release mode and
//! collects their results into one table and its charts
//! (`docs/performance.md`, `docs/performance*.svg`).
//!
//! - [`report`]: the machine-readable line every bench appends (JSON Lines,
//!   to the file `FENCING_BENCH_OUT` names).
//! - [`render`]: the table and the chart made from those lines (the
//!   `bench-report` binary).
//! - [`run`]: the depth and filter a bench was started with, and the raw
//!   SQLite connection every SQLite baseline opens.
//! - [`etcd`]: etcd's v3 JSON gateway through a plain HTTP client, for the
//!   classic etcd baselines (no gRPC, no protoc).
//!
//! ```text
//! scripts/bench            # everything, a full run (~10-15 minutes)
//! scripts/bench --quick    # everything, fewer and shorter rounds
//! scripts/bench --smoke    # every path once, results to target/bench/smoke/
//! cargo bench -p fencing-benches --bench memory_put [-- --quick]
//! cargo bench -p fencing-benches --bench sqlite [-- --quick] [FILTER]
//! cargo test -p fencing-benches --benches          # one iteration each
//! ```

pub mod etcd;
pub mod render;
pub mod report;
pub mod run;
