//! Ending a guard ends its two threads before it returns, unless one is
//! inside a call that may block: nothing the guard started (a thread, its
//! clone of the store) outlives the guard into the caller's exit, where a
//! leak checker reports it. One test function, so that no other test's
//! guards share the process. Linux only: the threads are counted in
//! /proc (macOS has none, and under Wine it does not show the threads).
#![cfg(target_os = "linux")]

use std::sync::{mpsc, Mutex};
use std::time::Duration;

use fencing::{Store, WorkOutcome};

/// The threads alive in this process (a thread names itself only once it
/// runs, so they are counted, not named). A thread already exiting is not
/// counted: the kernel wakes its joiner from inside the exit, so a joined
/// thread can stay listed for a moment after `join` returns, flagged
/// PF_EXITING (set before that wake-up) in its `stat`; a thread not joined
/// and still running never has it.
fn threads() -> usize {
    const PF_EXITING: u64 = 0x4;
    let exiting = |stat: &str| {
        // After the command's closing parenthesis: state, ppid, pgrp,
        // session, tty_nr, tpgid, flags.
        let fields = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let flags = fields
            .split_whitespace()
            .nth(6)
            .and_then(|f| f.parse::<u64>().ok());
        flags.is_none_or(|f| f & PF_EXITING != 0)
    };
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("stat")).ok())
        .filter(|stat| !exiting(stat))
        .count()
}

#[test]
fn every_way_of_ending_a_guard_ends_its_threads_before_returning() {
    let store = Store::open("memory:").unwrap();
    let clock = Store::open("memory:?clock=manual").unwrap();
    let ttl = Duration::from_secs(30);
    let before = threads();
    let keepalive_threads = move || threads() - before;

    let guard = store.lease("dropped", "a", ttl).unwrap();
    assert_eq!(
        keepalive_threads(),
        2,
        "a guard runs a renewer and a watchdog"
    );
    drop(guard);
    assert_eq!(keepalive_threads(), 0, "drop");

    let guard = store.lease("released", "a", ttl).unwrap();
    assert!(guard.release().unwrap());
    assert_eq!(keepalive_threads(), 0, "release");

    let guard = store.lease("finished", "a", ttl).unwrap();
    assert!(guard.finish(WorkOutcome::Ok).is_released());
    assert_eq!(keepalive_threads(), 0, "finish");

    // Ended from inside its own loss callback, on the watchdog's thread:
    // the watchdog cannot wait for itself, the renewer is still ended.
    let lease = clock
        .acquire("lost", "a", Duration::from_millis(300))
        .unwrap();
    let (tx, rx) = mpsc::channel::<fencing::LeaseGuard>();
    let (done_tx, done) = mpsc::channel();
    let (rx, done_tx) = (Mutex::new(rx), Mutex::new(done_tx));
    let guard = clock.keep_alive_with(lease, move |_| {
        // The guard arrives once it exists; dropping it here ends it.
        if let Ok(guard) = rx.lock().unwrap().recv() {
            drop(guard);
        }
        let _ = done_tx.lock().unwrap().send(keepalive_threads());
    });
    tx.send(guard).unwrap();
    clock.advance_clock(Duration::from_secs(1)).unwrap();
    let during = done.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(during, 1, "only the watchdog, inside the callback, is left");
}
