//! Resident memory stays bounded over many open/close cycles and many
//! operations, on every backend (docs/testing.md, "Leak tests"). One test
//! function, so that no other test shares the process's memory. No timing:
//! only memory is asserted.

use std::time::{Duration, Instant};

use fencing::{Fence, Store};

mod support;
#[cfg(feature = "etcd")]
use support::etcd_test_members;
use support::{fresh_schema, postgres_test_url, sqlite_url};

/// Growth allowed after the warm-up: a leak of 1 KiB per memory: store or
/// 100 bytes per memory:/sqlite: operation exceeds it.
const BOUND: u64 = 8 << 20;

fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Runs `step(i)` `n` times; RSS after the first tenth and at the end.
fn bounded(what: &str, n: u64, mut step: impl FnMut(u64)) {
    let warm = n / 10;
    let started = Instant::now();
    for i in 0..warm {
        step(i);
    }
    let before = rss();
    for i in warm..n {
        step(i);
    }
    let after = rss();
    eprintln!(
        "{what}: {n} in {:?}, RSS {:.1} -> {:.1} MiB",
        started.elapsed(),
        before as f64 / 1048576.0,
        after as f64 / 1048576.0
    );
    assert!(
        after.saturating_sub(before) <= BOUND,
        "{what}: RSS grew from {before} to {after} bytes"
    );
}

fn operations(what: &str, store: &Store, n: u64) {
    // A token the lease below leaves behind: every write with it is stale.
    let stale = Fence::new(store.next_token("leak").unwrap());
    let lease = store
        .acquire("leak", "h", Duration::from_secs(3600))
        .unwrap();
    let fence = Fence::from(&lease);
    bounded(what, n, |i| {
        let key = format!("k{}", i % 100);
        match i % 4 {
            0 => drop(store.put("leak", &key, b"value", &fence).unwrap()),
            1 => drop(store.get("leak", &key, None).unwrap()),
            2 => drop(store.fence_of("leak").unwrap()),
            _ => drop(store.put("leak", "k", b"v", &stale).unwrap_err()),
        }
    });
}

fn open_close(what: &str, url: &str, n: u64) {
    bounded(what, n, |_| {
        let store = Store::open(url).unwrap();
        store.fence_of("s").unwrap();
        store.close();
    });
}

#[test]
fn memory_stays_bounded_on_every_backend() {
    open_close("memory: open/close", "memory:", 10_000);
    operations(
        "memory: operations",
        &Store::open("memory:").unwrap(),
        100_000,
    );

    let dir = tempfile::tempdir().unwrap();
    // Without an fsync per commit (the same code otherwise): memory, not
    // the disk, is what this measures.
    let url = format!(
        "{}?synchronous=normal",
        sqlite_url(&dir.path().join("leak.db"))
    );
    // Each open opens the file and checks its schema in a write transaction
    // (milliseconds each in a debug build): 2,000 of them.
    open_close("sqlite: open/close", &url, 2_000);
    operations("sqlite: operations", &Store::open(&url).unwrap(), 100_000);

    let Some(base) = postgres_test_url() else {
        return;
    };
    let url = format!("{base}?schema={}", fresh_schema("leak"));
    // Each open is a new server connection (a backend process) and each
    // operation a round trip, milliseconds each on a busy machine: 200 and
    // 5,000, to keep CI time bounded.
    open_close("postgres: open/close", &url, 200);
    operations("postgres: operations", &Store::open(&url).unwrap(), 5_000);
}

/// etcd: each open a new HTTP connection and a read, each operation a round
/// trip (a write waits for the cluster's fsync): as few as PostgreSQL's.
/// The handle's memory of the scopes it wrote is bounded too (100 keys).
#[cfg(feature = "etcd")]
#[test]
fn memory_stays_bounded_on_etcd() {
    let Some(members) = etcd_test_members() else {
        return;
    };
    let url = format!("etcd://{members}/{}", fresh_schema("leak"));
    open_close("etcd: open/close", &url, 200);
    operations("etcd: operations", &Store::open(&url).unwrap(), 5_000);
}
