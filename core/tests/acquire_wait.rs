//! `acquire_wait` really waits: it returns once the holder releases or the
//! lease expires, on both backends, and a handle is Send + Sync.

use std::sync::mpsc;
use std::time::Duration;

use fencing::{Error, ErrorCode, Store};

mod support;
use support::sqlite_url;

fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}

#[test]
fn store_is_send_sync_and_cheap_to_clone() {
    assert_send_sync_clone::<Store>();
}

/// A waiter blocked on a held lease gets it as soon as the holder releases.
fn waiter_gets_the_lease_after_release(store: &Store) {
    let ttl = Duration::from_secs(60);
    let held = store.acquire("job", "a", ttl).unwrap();
    let (started, wait_started) = mpsc::channel();
    let waiter = {
        let store = store.clone();
        std::thread::spawn(move || {
            started.send(()).unwrap();
            store.acquire_wait("job", "b", ttl, Duration::from_secs(30))
        })
    };
    wait_started.recv().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(store.release("job", held.token).unwrap());
    let lease = waiter.join().unwrap().unwrap();
    assert_eq!(lease.holder, "b");
    assert!(lease.token > held.token);
}

/// A waiter gets a lease whose holder never releases once it expires.
fn waiter_gets_the_lease_after_expiry(store: &Store) {
    let held = store
        .acquire("exp", "a", Duration::from_millis(150))
        .unwrap();
    let lease = store
        .acquire_wait("exp", "b", Duration::from_secs(60), Duration::from_secs(30))
        .unwrap();
    assert_eq!(lease.holder, "b");
    assert!(lease.token > held.token);
}

fn waiter_times_out(store: &Store) {
    store.acquire("t", "a", Duration::from_secs(60)).unwrap();
    let err = store
        .acquire_wait(
            "t",
            "b",
            Duration::from_secs(60),
            Duration::from_millis(100),
        )
        .unwrap_err();
    assert_eq!(err, Error::Timeout);
    assert_eq!(store.status("t").unwrap().lease.unwrap().holder, "a");
}

#[test]
fn memory_acquire_wait() {
    let store = Store::open("memory:").unwrap();
    waiter_gets_the_lease_after_release(&store);
    waiter_gets_the_lease_after_expiry(&store);
    waiter_times_out(&store);
}

#[test]
fn sqlite_acquire_wait() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&sqlite_url(&dir.path().join("w.db"))).unwrap();
    waiter_gets_the_lease_after_release(&store);
    waiter_gets_the_lease_after_expiry(&store);
    waiter_times_out(&store);
}

#[test]
fn manual_clock_waiter_wakes_when_the_clock_moves() {
    let store = Store::open("memory:?clock=manual").unwrap();
    store.acquire("job", "a", Duration::from_secs(10)).unwrap();
    let waiter = {
        let store = store.clone();
        std::thread::spawn(move || {
            store.acquire_wait("job", "b", Duration::from_secs(10), Duration::from_secs(30))
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    store.advance_clock(Duration::from_secs(11)).unwrap();
    assert_eq!(waiter.join().unwrap().unwrap().holder, "b");
}

#[test]
fn keep_alive_on_sqlite_outlives_the_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&sqlite_url(&dir.path().join("k.db"))).unwrap();
    // Long enough that a loaded machine's slow fsync does not miss two
    // renewals in a row; the sleep spans three TTLs.
    let ttl = Duration::from_millis(1000);
    let guard = store.lease("job", "a", ttl).unwrap();
    std::thread::sleep(ttl * 3);
    guard.check().unwrap();
    let err = store.acquire("job", "b", ttl).unwrap_err();
    assert_eq!(err.code(), ErrorCode::LeaseHeld);
    // Dropping returns at once; the release follows on a thread of its own
    // (docs/semantics.md, "Ending a held lease") and is counted when done.
    drop(guard);
    let start = std::time::Instant::now();
    while store.metrics().releases == 0 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(store.metrics().releases, 1);
    assert_eq!(store.acquire("job", "b", ttl).unwrap().holder, "b");
}
